package config

import (
	"errors"
	"strings"
	"testing"
)

// TestNodeNullMappedKey checks pipeline.nodes[i].null_mapped_key: required
// for a global-left-join node, joined or never, and refused on any other
// kind.
func TestNodeNullMappedKey(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	topo := writeFile(t, dir, "topology.txt", "Topologies:\n")
	for _, tc := range []struct {
		name, node string
		key, err   string // the error's key and a part of it; "" accepted
	}{
		{name: "joined", node: `{name: KSTREAM-LEFTJOIN-0000000004, kind: global-left-join, null_mapped_key: joined}`},
		{name: "never", node: `{name: KSTREAM-LEFTJOIN-0000000004, kind: global-left-join, null_mapped_key: Never}`},
		{name: "missing", node: `{name: KSTREAM-LEFTJOIN-0000000004, kind: global-left-join}`,
			key: "pipeline.nodes[0].null_mapped_key", err: "is required for a KStream-GlobalKTable left join (KSTREAM-LEFTJOIN-0000000004): joined (Kafka Streams 4.1 and later"},
		{name: "dropped", node: `{name: KSTREAM-LEFTJOIN-0000000004, kind: global-left-join, null_mapped_key: dropped}`,
			key: "pipeline.nodes[0].null_mapped_key", err: `"dropped" is not joined or never`},
		{name: "on another kind", node: `{name: KSTREAM-LEFTJOIN-0000000004, kind: global-inner-join, null_mapped_key: joined}`,
			key: "pipeline.nodes[0].null_mapped_key", err: "declared global-inner-join"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, dir, "audit.yaml", `
pipeline:
  application_id: app
  topology_file: `+topo+`
  inputs: [{name: a, topic: ta}]
  nodes:
    - `+tc.node+`
`)
			c, err := Load(LoadOptions{File: file})
			if err != nil {
				t.Fatal(err)
			}
			err = c.ValidatePipeline()
			if tc.key == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != tc.key || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one at %s with %q", err, tc.key, tc.err)
			}
		})
	}
}
