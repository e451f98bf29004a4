package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/config"
)

// TestTopologyStreamStage: lossaudit topology on a per-record stream
// stage lists each input and its repartition topic (no store, no
// changelog: a MISSING one exits 1 like any derived topic) and prints the
// per-record rule.
func TestTopologyStreamStage(t *testing.T) {
	const link = "app-KSTREAM-REPARTITION-0000000002-repartition"
	cfg := &config.Config{Pipeline: config.Pipeline{ApplicationID: "app", TopologyFile: "../../audit/streams/topology/testdata/stream-repartition.txt",
		Inputs: []config.Input{{Name: "a", Topic: "events"}}}}
	for _, tc := range []struct {
		name   string
		topics []string
		code   int
		status string
	}{
		{"all there", []string{"events", "out", link}, 0, "ok"},
		{"repartition topic missing", []string{"events", "out"}, exitFindings, "MISSING"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			_, err := runTopology(context.Background(), cfg, listerFunc(func(context.Context) ([]string, error) { return tc.topics, nil }), nil, &out)
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit code %d (%v), want %d\n%s", got, err, tc.code, out.String())
			}
			s := out.String()
			if !row("a", "repartition", link, "topology file", tc.status).MatchString(s) || strings.Contains(s, "changelog") || strings.Contains(s, "store") ||
				!strings.Contains(s, "rule output-per-record") || !strings.Contains(s, "join order: a -> out") {
				t.Errorf("stage map and graph:\n%s", s)
			}
		})
	}
}
