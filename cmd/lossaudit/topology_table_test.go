package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/config"
)

// TestRunTopologyTableSource: `lossaudit topology` of a table source
// left-joined with a reduce shows the table's input without a repartition
// topic and its table stage held to table-last, or table-is-input when the
// input topic is declared its changelog (topology.optimization=all).
func TestRunTopologyTableSource(t *testing.T) {
	const store, reduce = "topicA-STATE-STORE-0000000000", "KSTREAM-REDUCE-STATE-STORE-0000000005"
	cfg := func(changelog string) *config.Config {
		return &config.Config{Pipeline: config.Pipeline{
			ApplicationID: "app", TopologyFile: "../../audit/streams/topology/testdata/table-source-left-join-4.4.0.txt", Join: "left", Reduce: "plain",
			Inputs: []config.Input{{Name: "a", Topic: "topicA", ChangelogTopic: changelog}, {Name: "b", Topic: "topicB"}},
		}}
	}
	topics := []string{"topicA", "topicB", "joined", "app-" + store + "-changelog", "app-" + reduce + "-repartition", "app-" + reduce + "-changelog"}
	cases := []struct {
		name string
		cfg  *config.Config
		rows []*regexp.Regexp
	}{
		{name: "own changelog", cfg: cfg(""), rows: []*regexp.Regexp{
			row("a", "repartition", "(none: no repartitioning)", "topology file", "-"),
			row("a", "changelog", "app-"+store+"-changelog", "topology file", "ok"),
			regexp.MustCompile(`(?m)^  table:a\s+table\s+app-` + store + `-changelog \(topology file\) store ` + store + ` \(topology file\) by table-source\n    rule table-last: `),
			regexp.MustCompile(`(?m)^  source:a -> table:a via table: key record key, coalesced per key, timestamp last by offset$`),
			regexp.MustCompile(`(?m)^  table:a -> output via leftJoin \(left side\): key identity, coalesced per key, timestamp max$`),
		}},
		{name: "source-topic changelog", cfg: cfg("topicA"), rows: []*regexp.Regexp{
			row("a", "changelog", "topicA", "override", "ok"),
			regexp.MustCompile(`(?m)^  table:a\s+table\s+topicA \(override\) store ` + store + ` \(topology file\) by table-source\n    rule table-is-input: `),
		}},
	}
	t.Run("optimized, undeclared", func(t *testing.T) {
		var out bytes.Buffer
		_, err := runTopology(context.Background(), cfg(""), listerFunc(func(context.Context) ([]string, error) { return without(topics, "app-"+store+"-changelog"), nil }), nil, &out)
		if exitCode(err) != exitFindings || !strings.Contains(err.Error(), `set pipeline.inputs[0].changelog_topic to "topicA"`) {
			t.Fatalf("exit %d, error %v: want exit 1 saying how to declare the source-topic changelog", exitCode(err), err)
		}
	})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := runTopology(context.Background(), tc.cfg, listerFunc(func(context.Context) ([]string, error) { return topics, nil }), nil, &out)
			if exitCode(err) != exitOK {
				t.Fatalf("exit code %d (%v)\n%s", exitCode(err), err, out.String())
			}
			for _, re := range tc.rows {
				if !re.MatchString(out.String()) {
					t.Errorf("no row matching %s in\n%s", re, out.String())
				}
			}
		})
	}
}
