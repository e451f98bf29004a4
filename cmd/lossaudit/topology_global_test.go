package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/config"
)

// TestTopologyGlobalJoin: lossaudit topology on a KStream-GlobalKTable
// left join (the text kafka-streams 4.4.0 prints) names the global store
// in the stage graph and a warning when the join is declared
// global-left-join, and exits 2 naming the node when it is undeclared or
// declared global-inner-join (inner and left joins print alike).
func TestTopologyGlobalJoin(t *testing.T) {
	const join = "KSTREAM-LEFTJOIN-0000000004"
	for _, tc := range []struct {
		name string
		node *config.Node
		code int
		want []string
	}{
		{"declared left", &config.Node{Name: join, Kind: "global-left-join", NullMappedKey: "joined"}, 0, []string{
			"source:a -> output via leftJoin(global) -> mapValues (global store customers-STATE-STORE-0000000000 not audited): key identity, at most 1 per record, timestamp kept",
			"input a is left-joined with the GlobalKTable of global store customers-STATE-STORE-0000000000: the table side is not audited by this stage",
			"rule output-per-record"}},
		{"undeclared", nil, exitUsage, []string{"node " + join, "kind: global-left-join, null_mapped_key: joined"}},
		{"declared inner", &config.Node{Name: join, Kind: "global-inner-join"}, exitUsage, []string{"node " + join, "the global store is updated by its own thread"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Pipeline: config.Pipeline{ApplicationID: "app", TopologyFile: "../../audit/streams/topology/testdata/stream-global-leftjoin-4.4.0.txt",
				Inputs: []config.Input{{Name: "a", Topic: "orders"}}}}
			if tc.node != nil {
				cfg.Pipeline.Nodes = []config.Node{*tc.node}
			}
			var out bytes.Buffer
			_, err := runTopology(context.Background(), cfg, listerFunc(func(context.Context) ([]string, error) { return []string{"orders", "customers", "joined"}, nil }), nil, &out)
			if got := exitCode(err); got != tc.code {
				t.Fatalf("exit code %d (%v), want %d\n%s", got, err, tc.code, out.String())
			}
			s := out.String()
			if err != nil {
				s = err.Error()
			}
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("output lacks %q:\n%s", w, s)
				}
			}
		})
	}
}
