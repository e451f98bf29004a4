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

// TestNodeBranches checks pipeline.nodes[i].branches: each branch names
// its child and has a predicate that compiles, the default branch has
// none and comes last, only a branch node has branches, and a misspelt
// key of a branch is named with the nearest one (from the file and from
// LOSSAUDIT_PIPELINE_NODES).
func TestNodeBranches(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	topo := writeFile(t, dir, "topology.txt", "Topologies:\n")
	for _, tc := range []struct {
		name, node string
		key, err   string // the error's key and a part of it; "" accepted
		load       bool   // the error comes from Load
	}{
		{name: "branches and a default", node: `{name: route-, kind: branch, branches: [{name: route-big, predicate: 'value.amount > 100'}, {name: route-medium, predicate: 'value.amount > 50'}, {name: route-rest, default: true}]}`},
		{name: "no default", node: `{name: KSTREAM-BRANCH-0000000001, kind: branch, branches: [{name: KSTREAM-BRANCH-00000000011, predicate: 'key == "a"'}]}`},
		{name: "a predicate missing", node: `{name: route-, kind: branch, branches: [{name: route-big}]}`,
			key: "pipeline.nodes[0].branches[0].predicate", err: "branch route-big of route- needs its predicate"},
		{name: "a predicate that does not compile", node: `{name: route-, kind: branch, branches: [{name: route-big, predicate: 'value.amount >'}]}`,
			key: "pipeline.nodes[0].branches[0].predicate", err: "does not compile as a CEL expression"},
		{name: "the default not last", node: `{name: route-, kind: branch, branches: [{name: route-rest, default: true}, {name: route-big, predicate: 'true'}]}`,
			key: "pipeline.nodes[0].branches[0].default", err: "must come last"},
		{name: "a default with a predicate", node: `{name: route-, kind: branch, branches: [{name: route-rest, default: true, predicate: 'true'}]}`,
			key: "pipeline.nodes[0].branches[0].predicate", err: "has no predicate of its own"},
		{name: "a child named twice", node: `{name: route-, kind: branch, branches: [{name: route-a, predicate: 'true'}, {name: route-a, predicate: 'false'}]}`,
			key: "pipeline.nodes[0].branches[1].name", err: "route-a is already branch 0"},
		{name: "an empty name", node: `{name: route-, kind: branch, branches: [{predicate: 'true'}]}`,
			key: "pipeline.nodes[0].branches[0].name", err: "must name the branch's child node"},
		{name: "branches on a filter", node: `{name: KSTREAM-FILTER-0000000001, kind: filter, predicate: 'true', branches: [{name: x, predicate: 'true'}]}`,
			key: "pipeline.nodes[0].branches", err: "node KSTREAM-FILTER-0000000001 is declared filter"},
		{name: "a predicate on the branch node", node: `{name: route-, kind: branch, predicate: 'true'}`,
			key: "pipeline.nodes[0].predicate", err: "is a filter's predicate"},
		{name: "a misspelt key", node: `{name: route-, kind: branch, branches: [{name: route-big, predicat: 'true'}]}`,
			key: "pipeline.nodes[0].branches[0].predicat", err: "unknown key (did you mean predicate?)", load: true},
		{name: "an unknown key", node: `{name: route-, kind: branch, branches: [{name: route-big, colour: red}]}`,
			key: "pipeline.nodes[0].branches[0].colour", err: "unknown key; a branch takes name, predicate, default", load: true},
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
			if err == nil {
				err = c.ValidatePipeline()
			} else if !tc.load {
				t.Fatal(err)
			}
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
	t.Run("from the environment", func(t *testing.T) {
		file := writeFile(t, dir, "audit.yaml", "pipeline:\n  application_id: app\n  topology_file: "+topo+"\n  inputs: [{name: a, topic: ta}]\n")
		t.Setenv("LOSSAUDIT_PIPELINE_NODES", `[{name: route-, kind: branch, branches: [{name: route-big, predicat: 'true'}]}]`)
		_, err := Load(LoadOptions{File: file})
		if err == nil || !strings.Contains(err.Error(), "pipeline.nodes[0].branches[0].predicat") || !strings.Contains(err.Error(), "did you mean predicate?") {
			t.Fatalf("error %v, want the misspelt key named", err)
		}
		t.Setenv("LOSSAUDIT_PIPELINE_NODES", `[{name: route-, kind: branch, branches: [{name: route-big, predicate: 'value.amount > 1'}, {name: route-rest, default: true}]}]`)
		c, err := Load(LoadOptions{File: file})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.ValidatePipeline(); err != nil {
			t.Fatal(err)
		}
		if b := c.Pipeline.Nodes[0].Branches; len(b) != 2 || b[0] != (NodeBranch{Name: "route-big", Predicate: "value.amount > 1"}) || !b[1].Default {
			t.Errorf("branches %+v", b)
		}
	})
}
