package config

import (
	"errors"
	"strings"
	"testing"
)

// TestNodePredicates checks pipeline.nodes[i].predicate and negate: the
// predicate is compiled as CEL when the pipeline is validated, and an
// error names the key and what the compiler said.
func TestNodePredicates(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	topo := writeFile(t, dir, "topology.txt", "Topologies:\n")
	for _, tc := range []struct {
		name, node string
		key, err   string // the error's key and a part of it; "" accepted
	}{
		{name: "a filter's predicate", node: `{name: KSTREAM-FILTER-0000000001, kind: filter, predicate: 'value.amount > 100'}`},
		{name: "filterNot", node: `{name: KSTREAM-FILTER-0000000001, kind: filter, predicate: 'value.amount > 100', negate: true}`},
		{name: "the key", node: `{name: KSTREAM-FILTER-0000000001, kind: filter, predicate: 'key.startsWith("c")'}`},
		{name: "syntax error", node: `{name: KSTREAM-FILTER-0000000001, kind: filter, predicate: 'value.amount >'}`,
			key: "pipeline.nodes[0].predicate", err: "does not compile as a CEL expression"},
		{name: "type error", node: `{name: KSTREAM-FILTER-0000000001, kind: filter, predicate: 'key * 2 > 1'}`,
			key: "pipeline.nodes[0].predicate", err: "no matching overload"},
		{name: "not a bool", node: `{name: KSTREAM-FILTER-0000000001, kind: filter, predicate: 'key'}`,
			key: "pipeline.nodes[0].predicate", err: "not bool"},
		{name: "unknown variable", node: `{name: KSTREAM-FILTER-0000000001, kind: filter, predicate: 'amount > 1'}`,
			key: "pipeline.nodes[0].predicate", err: "undeclared reference to 'amount'"},
		{name: "a predicate on another kind", node: `{name: KSTREAM-REDUCE-0000000003, kind: reduce, predicate: 'true'}`,
			key: "pipeline.nodes[0].predicate", err: "declared reduce"},
		{name: "negate without a predicate", node: `{name: KSTREAM-FILTER-0000000001, kind: filter, negate: true}`,
			key: "pipeline.nodes[0].negate", err: "needs its predicate"},
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
