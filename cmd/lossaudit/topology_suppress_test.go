package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/lossaudit/lossaudit/config"
)

// TestRunTopologySuppress: a reduce, suppress and toStream print the
// buffer's store and changelog among the names, and a buffer stage in the
// graph, between the table and the output.
func TestRunTopologySuppress(t *testing.T) {
	const (
		store  = "KSTREAM-REDUCE-STATE-STORE-0000000002"
		buffer = "KTABLE-SUPPRESS-STATE-STORE-0000000008"
	)
	cfg := &config.Config{Pipeline: config.Pipeline{
		ApplicationID: "app", TopologyFile: "../../audit/streams/topology/testdata/unsupported-suppress-4.4.0.txt", Reduce: "plain",
		Inputs: []config.Input{{Name: "a", Topic: "topicA"}},
	}}
	topics := []string{"topicA", "joined", "app-" + store + "-repartition", "app-" + store + "-changelog", "app-" + buffer + "-changelog"}
	var out bytes.Buffer
	_, err := runTopology(context.Background(), cfg, listerFunc(func(context.Context) ([]string, error) { return topics, nil }), nil, &out)
	if code := exitCode(err); code != exitOK {
		t.Fatalf("exit code %d (%v)\n%s", code, err, out.String())
	}
	for _, re := range []*regexp.Regexp{
		row("a", "buffer store", buffer, "topology file", "-"),
		row("a", "buffer changelog", "app-"+buffer+"-changelog", "topology file", "ok"),
		regexp.MustCompile(`(?m)^  buffer:a\s+buffer\s+app-` + buffer + `-changelog \(topology file\) store ` + buffer + ` \(topology file\) by suppress\n    rule buffer-pending: `),
		regexp.MustCompile(`(?m)^  table:a -> buffer:a via suppress \(untilTimeLimit\): `),
		regexp.MustCompile(`(?m)^  buffer:a -> output via toStream: `),
	} {
		if !re.MatchString(out.String()) {
			t.Errorf("no line matching %s in\n%s", re, out.String())
		}
	}
}
