package topology

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestTableSources: builder.table and toTable reading the input topic
// itself are audited (their table by the table-last rule), in the texts
// testbed/topodescribe prints with kafka-streams 3.6.2, 4.0.0 and 4.4.0; a
// table source without a store and a toTable after a repartition topic
// are refused naming the node, its kind and why.
func TestTableSources(t *testing.T) {
	a := InputSpec{Name: "a", Topic: "topicA"}
	b := InputSpec{Name: "b", Topic: "topicB"}
	cases := []struct {
		name   string
		file   string
		inputs []InputSpec
		join   string
		// accepted: operator, store and changelog of input a, its rule
		op        Kind
		store     string
		changelog string
		rule      Rule
		// refused: node and detail
		node, detail string
		// key of an *Error
		key string
	}{
		{name: "table source left-joined with a reduce", file: "table-source-left-join", inputs: []InputSpec{a, b}, join: JoinLeft,
			op: KindTableSource, store: "topicA-STATE-STORE-0000000000", changelog: "app-topicA-STATE-STORE-0000000000-changelog", rule: RuleTableLast},
		{name: "named table source to the output", file: "table-source-named", inputs: []InputSpec{a},
			op: KindTableSource, store: "profiles", changelog: "app-profiles-changelog", rule: RuleTableLast},
		{name: "source-topic changelog declared", file: "table-source-named", inputs: []InputSpec{{Name: "a", Topic: "topicA", ChangelogTopic: "topicA"}},
			op: KindTableSource, store: "profiles", changelog: "topicA", rule: RuleTableIsInput},
		{name: "toTable inner join", file: "totable-inner-join", inputs: []InputSpec{a, b}, join: JoinInner,
			op: KindToTable, store: "KSTREAM-TOTABLE-STATE-STORE-0000000002", changelog: "app-KSTREAM-TOTABLE-STATE-STORE-0000000002-changelog", rule: RuleTableLast},
		{name: "toTable keeps its own changelog", file: "totable-inner-join", inputs: []InputSpec{{Name: "a", Topic: "topicA", ChangelogTopic: "topicA"}, b}, join: JoinInner,
			key: "pipeline.inputs[0].changelog_topic"},
		{name: "a table's keys are the record keys", file: "table-source-named", inputs: []InputSpec{{Name: "a", Topic: "topicA", Rekey: "id"}},
			key: "pipeline.inputs[0].rekey"},
		{name: "not materialized", file: "unsupported-table-source-unmaterialized", inputs: []InputSpec{a},
			node: "KTABLE-SOURCE-0000000002", detail: "it has no state store"},
		{name: "table groupBy and count", file: "unsupported-table-groupby-count", inputs: []InputSpec{a},
			node: "KTABLE-AGGREGATE-0000000006", detail: "declare a count in pipeline.nodes, {name: KTABLE-AGGREGATE-0000000006, kind: table-count}"},
		{name: "toTable after a repartition topic", file: "unsupported-totable-after-repartition", inputs: []InputSpec{a},
			node: "KSTREAM-TOTABLE-0000000002", detail: "it reads internal topic KSTREAM-TOTABLE-0000000002-repartition, not the input topic"},
	}
	for _, v := range versions {
		for _, tc := range cases {
			t.Run(tc.name+"-"+v, func(t *testing.T) {
				file := filepath.Join("testdata", tc.file+"-"+v+".txt")
				spec := Spec{ApplicationID: "app", TopologyFile: file, Inputs: tc.inputs, Join: tc.join, Reduce: ReducePlain}
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
					if msg := ue.Error(); !strings.Contains(msg, file+":") || !strings.Contains(msg, "a table or toTable with a store") {
						t.Errorf("message %q: want the file and what is supported", msg)
					}
					return
				case err != nil:
					t.Fatalf("refused: %v", err)
				}
				s := m.Stages[0]
				if s.Operator != tc.op || s.Store != tc.store || s.ChangelogTopic != tc.changelog || s.RepartitionTopic != "" || m.Output != "joined" {
					t.Fatalf("stage %+v, output %s; want %s, store %s, changelog %s, no repartition topic", s, m.Output, tc.op, tc.store, tc.changelog)
				}
				if len(m.Warnings) != 0 {
					t.Errorf("warnings %q", m.Warnings)
				}
				g := m.Graph()
				st := g.Stage("table:a")
				if st == nil || st.Rule != tc.rule || g.Stage("link:a") != nil {
					t.Fatalf("graph %+v: want table:a by %s and no link", g, tc.rule)
				}
				var buf bytes.Buffer
				if err := g.Write(&buf, nil); err != nil {
					t.Fatal(err)
				}
				if want := "source:a -> table:a via "; !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), "timestamp last by offset") {
					t.Errorf("graph text lacks %q and the last-by-offset edge:\n%s", want, buf.String())
				}
			})
		}
	}
}

// TestCogroupRefused: a cogroup of two inputs into one store whose
// aggregates are not declared (cogroup_test.go has the declared ones) is
// refused at its aggregate, naming the node, its kind, its store and what
// is supported, for either input alone or both (not with a message about a
// reduce or a store key the user never wrote).
func TestCogroupRefused(t *testing.T) {
	a := InputSpec{Name: "a", Topic: "topicA"}
	b := InputSpec{Name: "b", Topic: "topicB"}
	for _, v := range versions {
		for _, tc := range []struct {
			inputs []InputSpec
			node   string
		}{{[]InputSpec{a}, "COGROUPKSTREAM-AGGREGATE-0000000011"}, {[]InputSpec{b}, "COGROUPKSTREAM-AGGREGATE-0000000012"}, {[]InputSpec{a, b}, "COGROUPKSTREAM-AGGREGATE-0000000011"}} {
			t.Run(fmt.Sprintf("%s-%d", v, len(tc.inputs)), func(t *testing.T) {
				file := filepath.Join("testdata", "unsupported-cogroup-"+v+".txt")
				_, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Inputs: tc.inputs, Join: JoinLeft, Reduce: ReducePlain}, nil)
				var ue *UnsupportedError
				if !errors.As(err, &ue) || ue.Node != tc.node || ue.Kind != KindCogroup {
					t.Fatalf("error %v, want %s refused as a cogroup", err, tc.node)
				}
				msg := ue.Error()
				for _, w := range []string{file + ":", "is of kind cogroup", "COGROUPKSTREAM-AGGREGATE-STATE-STORE-0000000004", "supported: "} {
					if !strings.Contains(msg, w) {
						t.Errorf("message %q lacks %q", msg, w)
					}
				}
				if strings.Contains(msg, "the reduce") || strings.Contains(msg, ".store") {
					t.Errorf("message %q speaks of a reduce or a store key", msg)
				}
			})
		}
	}
}
