package topology

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// cogroupVersions are the Kafka Streams versions whose describe() of the
// cogroup variants of testbed/topodescribe is in testdata (byte-identical).
var cogroupVersions = []string{"3.6.2", "4.4.0"}

// TestCogroup: a cogroup of input A (groupByKey on its own key, no
// repartition topic) and input B (selectKey, repartitioned) into one
// aggregate, toStream to the output, is one table shared by both inputs
// when each aggregate is declared cogroup; every other declaration, or
// none, is refused naming the node or the key at fault.
func TestCogroup(t *testing.T) {
	const aggA, aggB, merge = "COGROUPKSTREAM-AGGREGATE-0000000007", "COGROUPKSTREAM-AGGREGATE-0000000008", "COGROUPKSTREAM-MERGE-0000000009"
	const store = "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000003"
	a := InputSpec{Name: "a", Topic: "topicA"}
	b := InputSpec{Name: "b", Topic: "topicB", Rekey: "id"}
	declared := []NodeDecl{{aggA, "cogroup"}, {aggB, "cogroup"}}
	cases := []struct {
		name     string
		inputs   []InputSpec
		nodes    []NodeDecl
		unsup    string // the node refused (an *UnsupportedError)
		wantErr  string // a part of the error
		warnings int
	}{
		{name: "declared", inputs: []InputSpec{a, b}, nodes: declared},
		{name: "declared, one input", inputs: []InputSpec{b}, nodes: declared, warnings: 1},
		{name: "undeclared", inputs: []InputSpec{a, b}, unsup: aggA, wantErr: "{name: " + aggA + ", kind: cogroup}"},
		{name: "one undeclared", inputs: []InputSpec{a, b}, nodes: declared[:1], unsup: aggB, wantErr: "describe() prints a windowed cogroup"},
		{name: "windowed", inputs: []InputSpec{a, b}, nodes: []NodeDecl{{aggA, "windowed"}, {aggB, "windowed"}}, unsup: aggA, wantErr: "a windowed cogroup (CogroupedKStream#windowedBy(...).aggregate) is not audited yet"},
		{name: "declared aggregate", inputs: []InputSpec{a, b}, nodes: []NodeDecl{{aggA, "aggregate"}}, wantErr: "pipeline.nodes[0].kind: node " + aggA + " is declared aggregate, but its generated name makes it a cogroup"},
		{name: "rekey without repartition", inputs: []InputSpec{{Name: "a", Topic: "topicA", Rekey: "id"}, b}, nodes: declared, wantErr: "pipeline.inputs[0].rekey: is set, but input topic topicA reaches the cogroup's aggregate " + aggA + " without a selectKey"},
		{name: "store of one input overridden", inputs: []InputSpec{a, {Name: "b", Topic: "topicB", Store: "other"}}, nodes: declared, wantErr: "pipeline.inputs[1].store: is \"other\", but input a feeds the same cogroup"},
	}
	for _, v := range cogroupVersions {
		file := filepath.Join("testdata", "cogroup-"+v+".txt")
		for _, tc := range cases {
			t.Run(v+"/"+tc.name, func(t *testing.T) {
				m, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Inputs: tc.inputs, Nodes: tc.nodes}, nil)
				if tc.unsup != "" {
					var ue *UnsupportedError
					if !errors.As(err, &ue) || ue.Node != tc.unsup || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), file+":") {
						t.Fatalf("error %v, want %s refused with %q", err, tc.unsup, tc.wantErr)
					}
					return
				}
				if tc.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
						t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(m.Stages) != len(tc.inputs) || m.Output != "joined" || m.ChangelogOnly || len(m.Warnings) != tc.warnings {
					t.Fatalf("model %+v, want %d stages into joined and %d warnings", m, len(tc.inputs), tc.warnings)
				}
				for _, s := range m.Stages {
					wantRP := ""
					if s.Input.Topic == "topicB" {
						wantRP = "app-" + store + "-repartition"
					}
					if s.Operator != KindCogroup || s.Cogroup != merge || s.Store != store || s.ChangelogTopic != "app-"+store+"-changelog" || s.RepartitionTopic != wantRP {
						t.Errorf("stage %+v", s)
					}
				}
				if tc.warnings > 0 && !strings.Contains(m.Warnings[0], "also aggregates "+aggA) {
					t.Errorf("warning %q does not name the unconfigured aggregate", m.Warnings[0])
				}
				var buf bytes.Buffer
				if err := m.Graph().Write(&buf, nil); err != nil {
					t.Fatal(err)
				}
				if len(tc.inputs) == 2 {
					for _, w := range []string{"source:a -> table:a via groupByKey -> cogroup: key record key", "link:b -> table:a via cogroup", "table:a -> output via toStream", "rule output-cogroup"} {
						if !strings.Contains(buf.String(), w) {
							t.Errorf("graph lacks %q:\n%s", w, buf.String())
						}
					}
					if strings.Count(buf.String(), "table:a    table") != 1 {
						t.Errorf("graph does not hold one shared table:\n%s", buf.String())
					}
				}
			})
		}
	}
}

// TestCogroupNamedChangelogOnly: a cogroup named with Named.as and
// Materialized.as (sum-cogroup-agg-0, -1, sum-cogroup-merge, store sums)
// whose table leads nowhere is audited on its changelog alone when all
// three nodes are declared cogroup; the merge undeclared is refused.
func TestCogroupNamedChangelogOnly(t *testing.T) {
	inputs := []InputSpec{{Name: "a", Topic: "topicA"}, {Name: "b", Topic: "topicB", Rekey: "id"}}
	all := []NodeDecl{{"sum-cogroup-agg-0", "cogroup"}, {"sum-cogroup-agg-1", "cogroup"}, {"sum-cogroup-merge", "cogroup"}}
	for _, v := range cogroupVersions {
		file := filepath.Join("testdata", "cogroup-named-changelog-"+v+".txt")
		t.Run(v, func(t *testing.T) {
			m, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Inputs: inputs, Nodes: all}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !m.ChangelogOnly || m.Output != "" || m.Stages[0].ChangelogTopic != "app-sums-changelog" || m.Stages[1].ChangelogTopic != "app-sums-changelog" ||
				m.Stages[0].RepartitionTopic != "" || m.Stages[1].RepartitionTopic != "app-by-b-repartition" {
				t.Fatalf("model %+v, stages %+v", m, m.Stages)
			}
			_, err = Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Inputs: inputs, Nodes: all[:2]}, nil)
			var ue *UnsupportedError
			if !errors.As(err, &ue) || ue.Node != "sum-cogroup-agg-0" || !strings.Contains(err.Error(), "it feeds sum-cogroup-merge, which is not a cogroup's merge node until declared: {name: sum-cogroup-merge, kind: cogroup}") {
				t.Fatalf("error %v, want the aggregate refused for its undeclared merge", err)
			}
			_, err = Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Inputs: inputs, Nodes: all, Output: "out"}, nil)
			if err == nil || !strings.Contains(err.Error(), "pipeline.output: is \"out\", but in") {
				t.Fatalf("error %v, want pipeline.output refused for a table that leads nowhere", err)
			}
		})
	}
}

// TestCogroupGroupedNames: the cogroup of two repartitioned inputs with
// Grouped names (unsupported-cogroup-*.txt, named so before cogroups were
// audited) is audited when declared: two repartition topics, one store.
func TestCogroupGroupedNames(t *testing.T) {
	for _, v := range versions {
		file := filepath.Join("testdata", "unsupported-cogroup-"+v+".txt")
		spec := Spec{ApplicationID: "app", TopologyFile: file, Inputs: []InputSpec{{Name: "a", Topic: "topicA"}, {Name: "b", Topic: "topicB"}},
			Nodes: []NodeDecl{{"COGROUPKSTREAM-AGGREGATE-0000000011", "cogroup"}, {"COGROUPKSTREAM-AGGREGATE-0000000012", "cogroup"}}}
		m, err := Build(context.Background(), spec, nil)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if m.Stages[0].RepartitionTopic != "app-by-a-repartition" || m.Stages[1].RepartitionTopic != "app-by-b-repartition" ||
			m.Stages[0].Store != m.Stages[1].Store || m.Output != "joined" {
			t.Errorf("%s: stages %+v", v, m.Stages)
		}
	}
}
