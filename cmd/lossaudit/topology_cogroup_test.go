package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/lossaudit/lossaudit/config"
)

// TestRunTopologyCogroup: a cogroup of an input grouped on its own key and
// a re-keyed one prints both inputs with the one store and changelog, no
// repartition topic for the first, and one shared table stage in the graph
// with the cogroup's output rule.
func TestRunTopologyCogroup(t *testing.T) {
	const store = "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003"
	cfg := &config.Config{Pipeline: config.Pipeline{
		ApplicationID: "app", TopologyFile: "../../audit/streams/topology/testdata/cogroup-4.4.0.txt",
		Nodes:  []config.Node{{Name: "COGROUPKSTREAM-AGGREGATE-0000000007", Kind: "cogroup"}, {Name: "COGROUPKSTREAM-AGGREGATE-0000000008", Kind: "cogroup"}},
		Inputs: []config.Input{{Name: "a", Topic: "topicA"}, {Name: "b", Topic: "topicB"}},
	}}
	topics := []string{"topicA", "topicB", "joined", "app-" + store + "-repartition", "app-" + store + "-changelog"}
	var out bytes.Buffer
	_, err := runTopology(context.Background(), cfg, listerFunc(func(context.Context) ([]string, error) { return topics, nil }), nil, &out)
	if code := exitCode(err); code != exitOK {
		t.Fatalf("exit code %d (%v)\n%s", code, err, out.String())
	}
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^join order: a cogroup b -> joined$`),
		row("a", "changelog", "app-"+store+"-changelog", "topology file", "ok"),
		row("b", "changelog", "app-"+store+"-changelog", "topology file", "ok"),
		row("b", "repartition", "app-"+store+"-repartition", "topology file", "ok"),
		regexp.MustCompile(`(?m)^  table:a\s+table\s+app-` + store + `-changelog \(topology file\) store ` + store + ` \(topology file\) by cogroup\n    rule table-max: `),
		regexp.MustCompile(`(?m)^  source:a -> table:a via groupByKey -> cogroup: key record key`),
		regexp.MustCompile(`(?m)^  link:b -> table:a via cogroup: `),
		regexp.MustCompile(`(?m)^    rule output-cogroup: `),
	} {
		if !re.MatchString(out.String()) {
			t.Errorf("no line matching %s in\n%s", re, out.String())
		}
	}
}
