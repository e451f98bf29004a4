package topology

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTableGroupBy: a table source's groupBy and count (the text
// testbed/topodescribe prints with kafka-streams 3.6.2, 4.0.0 and 4.4.0)
// is audited once the count is declared table-count (or, for an
// aggregate, table-aggregate) and the group key's field path is declared;
// a reduce (KTABLE-REDUCE-) is audited by its name; undeclared, declared
// a kind its name contradicts, or fed by more than the groupBy, it is
// refused naming the node or the key.
func TestTableGroupBy(t *testing.T) {
	const agg = "KTABLE-AGGREGATE-0000000006"
	count := []NodeDecl{{agg, "table-count"}}
	a := InputSpec{Name: "a", Topic: "topicA", Rekey: "region"}
	cases := []struct {
		name  string
		edit  func(string) string // the text as another application would print it
		in    InputSpec
		nodes []NodeDecl
		// refused: the node and detail of an *UnsupportedError, or the key
		// of an *Error
		node, detail, key string
		// accepted: the output ("" for the changelog alone) and the
		// operator (table-count when "")
		output string
		op     Kind
	}{
		{name: "declared count", in: a, nodes: count, output: "joined"},
		{name: "declared count, changelog only", in: a, nodes: count, edit: changelogOnlyText},
		{name: "undeclared", in: a, node: agg, detail: "declare a count in pipeline.nodes, {name: " + agg + ", kind: table-count}, or an aggregate, {name: " + agg + ", kind: table-aggregate}"},
		{name: "declared aggregate", in: a, nodes: []NodeDecl{{agg, "table-aggregate"}}, output: "joined", op: KindTableAggregate},
		{name: "declared aggregate, changelog only", in: a, nodes: []NodeDecl{{agg, "table-aggregate"}}, edit: changelogOnlyText, op: KindTableAggregate},
		{name: "an aggregate cannot be declared a reduce", in: a, nodes: []NodeDecl{{agg, "table-reduce"}}, key: "pipeline.nodes[0].kind"},
		{name: "a reduce", in: a, edit: func(s string) string { return strings.ReplaceAll(s, agg, "KTABLE-REDUCE-0000000006") }, output: "joined", op: KindTableReduce},
		{name: "a reduce declared", in: a, nodes: []NodeDecl{{"KTABLE-REDUCE-0000000006", "table-reduce"}}, edit: func(s string) string { return strings.ReplaceAll(s, agg, "KTABLE-REDUCE-0000000006") }, output: "joined", op: KindTableReduce},
		{name: "a reduce cannot be declared a count", in: a, nodes: []NodeDecl{{"KTABLE-REDUCE-0000000006", "table-count"}},
			edit: func(s string) string { return strings.ReplaceAll(s, agg, "KTABLE-REDUCE-0000000006") }, key: "pipeline.nodes[0].kind"},
		{name: "a reduce cannot be declared an aggregate", in: a, nodes: []NodeDecl{{"KTABLE-REDUCE-0000000006", "table-aggregate"}},
			edit: func(s string) string { return strings.ReplaceAll(s, agg, "KTABLE-REDUCE-0000000006") }, key: "pipeline.nodes[0].kind"},
		{name: "a reduce's group key undeclared", in: InputSpec{Name: "a", Topic: "topicA"}, edit: func(s string) string { return strings.ReplaceAll(s, agg, "KTABLE-REDUCE-0000000006") }, key: "pipeline.inputs[0].rekey"},
		{name: "group key undeclared", in: InputSpec{Name: "a", Topic: "topicA"}, nodes: count, key: "pipeline.inputs[0].rekey"},
		{name: "the table feeds more than its groupBy", in: a, nodes: count, edit: func(s string) string {
			s = strings.Replace(s, "      --> KTABLE-SELECT-0000000002\n", "      --> KTABLE-SELECT-0000000002, KTABLE-TOSTREAM-0000000099\n", 1)
			return strings.Replace(s, "\n\n  Sub-topology: 1", "\n    Processor: KTABLE-TOSTREAM-0000000099 (stores: [])\n      --> none\n      <-- KTABLE-SOURCE-0000000001\n\n  Sub-topology: 1", 1)
		}, node: "KTABLE-SELECT-0000000002", detail: "a table groupBy is audited when it is the table's only successor"},
	}
	for _, v := range versions {
		for _, tc := range cases {
			t.Run(tc.name+"-"+v, func(t *testing.T) {
				file := filepath.Join("testdata", "unsupported-table-groupby-count-"+v+".txt")
				if tc.edit != nil {
					b, err := os.ReadFile(file)
					if err != nil {
						t.Fatal(err)
					}
					file = filepath.Join(t.TempDir(), "topology.txt")
					if err := os.WriteFile(file, []byte(tc.edit(string(b))), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				spec := Spec{ApplicationID: "app", TopologyFile: file, Inputs: []InputSpec{tc.in}, Nodes: tc.nodes}
				m, err := Build(context.Background(), spec, nil)
				switch {
				case tc.key != "":
					var e *Error
					if !errors.As(err, &e) || e.Key != tc.key {
						t.Fatalf("error %v, want one about %s", err, tc.key)
					}
					return
				case tc.node != "":
					var ue *UnsupportedError
					if !errors.As(err, &ue) || ue.Node != tc.node || !strings.Contains(ue.Detail, tc.detail) {
						t.Fatalf("error %v, want node %s refused: %s", err, tc.node, tc.detail)
					}
					if msg := ue.Error(); !strings.Contains(msg, file+":") || !strings.Contains(msg, "table-count") {
						t.Errorf("message %q: want the file and what is supported", msg)
					}
					return
				case err != nil:
					t.Fatalf("refused: %v", err)
				}
				s, op := m.Stages[0], tc.op
				if op == "" {
					op = KindTableCount
				}
				if s.Operator != op || s.Store != "KTABLE-AGGREGATE-STATE-STORE-0000000003" || s.TableStore != "profiles" || s.GroupBy != "KTABLE-SELECT-0000000002" ||
					s.RepartitionTopic != "app-KTABLE-AGGREGATE-STATE-STORE-0000000003-repartition" || s.ChangelogTopic != "app-KTABLE-AGGREGATE-STATE-STORE-0000000003-changelog" {
					t.Fatalf("stage %+v", s)
				}
				if m.Output != tc.output || m.ChangelogOnly != (tc.output == "") {
					t.Fatalf("output %q (changelog only %v), want %q", m.Output, m.ChangelogOnly, tc.output)
				}
				g := m.Graph()
				if st := g.Stage("table:a"); st == nil || st.Rule != RuleTableGroupMax || st.Operator != op {
					t.Fatalf("table stage %+v", st)
				}
				var b strings.Builder
				if err := g.Write(&b, nil); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(b.String(), "source:a -> link:a via table -> groupBy: key field region, coalesced per key, timestamp last by offset") {
					t.Errorf("graph:\n%s", b.String())
				}
			})
		}
	}
}

// changelogOnlyText ends the testbed's text at the count (`--> none`), as
// an application that only materializes its grouped count prints it.
func changelogOnlyText(s string) string {
	i := strings.Index(s, "    Processor: KTABLE-TOSTREAM-")
	s = strings.Replace(s[:i], "      --> KTABLE-TOSTREAM-0000000007\n", "      --> none\n", 1)
	return s
}

// TestTableGroupByVariants: the texts testbed/topodescribe prints for a
// table groupBy and reduce (generated names: audited by its name; named by
// Named.as and Materialized.as: audited once declared), a table groupBy
// and aggregate (audited once declared table-aggregate), for a toTable
// grouped and counted (audited as a table source's), and for a groupBy
// named by Grouped.as (its select node takes the name, which is then
// declared table-select) into a count kept in its changelog only.
// Printed with kafka-streams 3.6.2 and 4.4.0 (byte-identical); 4.0.0 is not
// in the local Maven repository these were generated from.
func TestTableGroupByVariants(t *testing.T) {
	a := []InputSpec{{Name: "a", Topic: "topicA", Rekey: "region"}}
	for _, v := range []string{"3.6.2", "4.4.0"} {
		for _, tc := range []struct {
			name, file string
			nodes      []NodeDecl
			// refused: the node and kind of the *UnsupportedError
			node string
			kind Kind
			// accepted: the stage's operator, store and repartition topic
			op                 Kind
			store, repartition string
		}{
			{name: "reduce", file: "table-groupby-reduce", op: KindTableReduce,
				store: "KTABLE-AGGREGATE-STATE-STORE-0000000003", repartition: "app-KTABLE-AGGREGATE-STATE-STORE-0000000003-repartition"},
			{name: "aggregate undeclared", file: "table-groupby-aggregate", node: "KTABLE-AGGREGATE-0000000006", kind: KindTableAggregate},
			{name: "aggregate", file: "table-groupby-aggregate", nodes: []NodeDecl{{"KTABLE-AGGREGATE-0000000006", "table-aggregate"}}, op: KindTableAggregate,
				store: "KTABLE-AGGREGATE-STATE-STORE-0000000003", repartition: "app-KTABLE-AGGREGATE-STATE-STORE-0000000003-repartition"},
			{name: "named reduce undeclared", file: "table-groupby-reduce-named", node: "latest-by-region", kind: KindUnknown},
			{name: "named reduce", file: "table-groupby-reduce-named", nodes: []NodeDecl{{"latest-by-region", "table-reduce"}}, op: KindTableReduce,
				store: "region-latest", repartition: "app-region-latest-repartition"},
			{name: "named reduce declared an aggregate", file: "table-groupby-reduce-named", nodes: []NodeDecl{{"latest-by-region", "table-aggregate"}}, op: KindTableAggregate,
				store: "region-latest", repartition: "app-region-latest-repartition"},
		} {
			t.Run(tc.name+"-"+v, func(t *testing.T) {
				file := filepath.Join("testdata", tc.file+"-"+v+".txt")
				m, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Inputs: a, Nodes: tc.nodes}, nil)
				if tc.node != "" {
					var ue *UnsupportedError
					if !errors.As(err, &ue) || ue.Node != tc.node || ue.Kind != tc.kind {
						t.Fatalf("error %v, want %s (%s) refused", err, tc.node, tc.kind)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				s := m.Stages[0]
				if m.Output != "joined" || s.Operator != tc.op || s.Store != tc.store || s.TableStore != "profiles" || s.GroupBy != "KTABLE-SELECT-0000000002" ||
					s.RepartitionTopic != tc.repartition || s.ChangelogTopic != "app-"+tc.store+"-changelog" {
					t.Fatalf("model %+v, stage %+v", m, s)
				}
				if st := m.Graph().Stage("table:a"); st == nil || st.Rule != RuleTableGroupMax || st.Operator != tc.op {
					t.Fatalf("table stage %+v", st)
				}
			})
		}
		t.Run("toTable grouped-"+v, func(t *testing.T) {
			file := filepath.Join("testdata", "table-groupby-totable-count-"+v+".txt")
			spec := Spec{ApplicationID: "app", TopologyFile: file, Inputs: a, Nodes: []NodeDecl{{"KTABLE-AGGREGATE-0000000007", "table-count"}}}
			m, err := Build(context.Background(), spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := m.Stages[0]
			if m.Output != "joined" || s.Operator != KindTableCount || s.GroupBy != "KTABLE-SELECT-0000000003" || s.TableStore != "KSTREAM-TOTABLE-STATE-STORE-0000000002" ||
				s.RepartitionTopic != "app-KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition" || s.ChangelogTopic != "app-KTABLE-AGGREGATE-STATE-STORE-0000000004-changelog" {
				t.Fatalf("model %+v, stage %+v", m, s)
			}
		})
		t.Run("named groupBy, changelog only-"+v, func(t *testing.T) {
			file := filepath.Join("testdata", "table-groupby-count-changelog-"+v+".txt")
			spec := Spec{ApplicationID: "app", TopologyFile: file, Inputs: a, Nodes: []NodeDecl{{"KTABLE-AGGREGATE-0000000006", "table-count"}}}
			_, err := Build(context.Background(), spec, nil)
			var ue *UnsupportedError
			if !errors.As(err, &ue) || ue.Node != "by-region" || ue.Kind != KindUnknown {
				t.Fatalf("error %v, want the named groupBy's node refused until declared", err)
			}
			spec.Nodes = append(spec.Nodes, NodeDecl{"by-region", "table-select"})
			m, err := Build(context.Background(), spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := m.Stages[0]
			if !m.ChangelogOnly || m.Output != "" || s.Operator != KindTableCount || s.GroupBy != "by-region" || s.Store != "counts" ||
				s.TableStore != "topicA-STATE-STORE-0000000000" || s.RepartitionTopic != "app-by-region-repartition" || s.ChangelogTopic != "app-counts-changelog" {
				t.Fatalf("model %+v, stage %+v", m, s)
			}
		})
	}
}
