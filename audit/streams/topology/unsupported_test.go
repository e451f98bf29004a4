package topology

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnsupportedKinds: each testdata/unsupported-*.txt is the describe()
// text of a topology testbed/topodescribe builds with real kafka-streams,
// holding one kind of node the audit does not support on input topicA's
// path. Every one is refused naming the node, its kind and its line,
// unless it prints exactly like the audited family (a windowed reduce, an
// inner join): then only a declaration tells it apart, and declared it is
// refused too.
func TestUnsupportedKinds(t *testing.T) {
	ab := []InputSpec{{Name: "a", Topic: "topicA"}, {Name: "b", Topic: "topicB"}}
	a := ab[:1]
	cases := []struct {
		name   string
		file   string
		inputs []InputSpec
		nodes  []NodeDecl
		join   string
		// node, kind, origin and line of the *UnsupportedError; node ""
		// means the model is accepted.
		node   string
		kind   Kind
		origin KindOrigin
		line   int
		detail string
	}{
		{"windowed count", "unsupported-windowed-count", a, nil, "", "KSTREAM-AGGREGATE-0000000002", KindAggregate, FromName, 5, "the first node with a state store (KSTREAM-AGGREGATE-STATE-STORE-0000000001)"},
		{"count by a new key", "unsupported-count", a, nil, "", "KSTREAM-AGGREGATE-0000000003", KindAggregate, FromName, 17, "declare it in pipeline.nodes: {name: KSTREAM-AGGREGATE-0000000003, kind: count}"},
		{"count by a new key, declared count", "unsupported-count", a, []NodeDecl{{"KSTREAM-AGGREGATE-0000000003", "count"}}, "", "", "", "", 0, ""},
		{"count by a new key, declared aggregate", "unsupported-count", a, []NodeDecl{{"KSTREAM-AGGREGATE-0000000003", "aggregate"}}, "", "", "", "", 0, ""},
		{"count by a new key, declared windowed", "unsupported-count", a, []NodeDecl{{"KSTREAM-AGGREGATE-0000000003", "windowed"}}, "", "KSTREAM-AGGREGATE-0000000003", KindWindowed, FromDeclaration, 17, ""},
		{"windowed count declared count: its key-select after the table", "unsupported-windowed-count", a, []NodeDecl{{"KSTREAM-AGGREGATE-0000000002", "count"}}, "", "KSTREAM-KEY-SELECT-0000000004", KindKeySelect, FromName, 11, "it follows the input's reduce"},
		{"windowed reduce, declared plain: prints as a reduce", "unsupported-windowed-reduce", a, nil, "", "", "", "", 0, ""},
		{"windowed reduce, declared", "unsupported-windowed-reduce", a, []NodeDecl{{"KSTREAM-REDUCE-0000000003", "windowed"}}, "", "KSTREAM-REDUCE-0000000003", KindWindowed, FromDeclaration, 17, ""},
		{"suppress before toStream: a buffer stage", "unsupported-suppress", a, nil, "", "", "", "", 0, ""},
		{"named reduce and suppress, nothing declared", "unsupported-suppress-named", a, nil, "", "latest", KindUnknown, FromNowhere, 17, ""},
		{"named reduce declared, suppress not", "unsupported-suppress-named", a, []NodeDecl{{"latest", "reduce"}}, "", "hold", KindUnknown, FromNowhere, 20, ""},
		{"named suppress declared: a buffer stage", "unsupported-suppress-named", a, []NodeDecl{{"latest", "reduce"}, {"hold", "suppress"}}, "", "", "", "", 0, ""},
		{"inner join declared left: prints as a left join", "unsupported-inner-join", ab, nil, JoinLeft, "", "", "", 0, ""},
		{"inner join declared", "unsupported-inner-join", ab, nil, JoinInner, "", "", "", 0, ""},
		{"outer join declared (describe() cannot tell)", "unsupported-inner-join", ab, nil, JoinOuter, "", "", "", 0, ""},
		{"foreign-key join", "unsupported-fk-join", a, nil, "", "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000015", KindFKJoin, FromName, 28, ""},
		{"stream-stream join", "unsupported-stream-stream-join", a, nil, "", "KSTREAM-WINDOWED-0000000010", KindStreamStreamJoin, FromName, 31, ""},
		{"filter before the reduce", "unsupported-filter", a, nil, "", "KSTREAM-FILTER-0000000002", KindFilter, FromName, 8, ""},
		{"stream-table join", "unsupported-stream-table-join", a, nil, "", "KSTREAM-LEFTJOIN-0000000012", KindStreamTableJoin, FromName, 17, ""},
	}
	for _, v := range versions {
		for _, tc := range cases {
			t.Run(tc.name+"-"+v, func(t *testing.T) {
				file := filepath.Join("testdata", tc.file+"-"+v+".txt")
				spec := Spec{ApplicationID: "app", TopologyFile: file, Inputs: tc.inputs, Nodes: tc.nodes, Join: tc.join, Reduce: ReducePlain}
				m, err := Build(context.Background(), spec, nil)
				if tc.node == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					if m.Output != "joined" || len(m.Stages) != len(tc.inputs) {
						t.Fatalf("model %+v", m)
					}
					return
				}
				var ue *UnsupportedError
				if !errors.As(err, &ue) {
					t.Fatalf("error %v, want an *UnsupportedError", err)
				}
				if ue.Node != tc.node || ue.Kind != tc.kind || ue.Origin != tc.origin || ue.Line != tc.line || ue.File != file || ue.Input != "topicA" || !strings.Contains(ue.Detail, tc.detail) {
					t.Fatalf("got %+v, want node %s kind %s from %s at line %d, detail %q", ue, tc.node, tc.kind, tc.origin, tc.line, tc.detail)
				}
				msg := ue.Error()
				for _, w := range []string{file + ":", tc.node, string(tc.kind), "supported: selectKey -> groupByKey -> reduce"} {
					if !strings.Contains(msg, w) {
						t.Errorf("message %q lacks %q", msg, w)
					}
				}
			})
		}
	}
}

// TestDeclarationsAndChain: pipeline.nodes, pipeline.join and the input
// order are checked against the graph; mistakes name the key to fix.
func TestDeclarationsAndChain(t *testing.T) {
	abc := "testdata/order-abc-4.4.0.txt"
	named := "testdata/unsupported-suppress-named-4.4.0.txt"
	in := func(topics ...string) []InputSpec {
		var out []InputSpec
		for _, tp := range topics {
			out = append(out, InputSpec{Name: strings.ToLower(tp[len(tp)-1:]), Topic: tp})
		}
		return out
	}
	cases := []struct {
		name   string
		spec   Spec
		key    string
		msg    string
		topErr string // a plain topology error (key pipeline.topology_file)
	}{
		{"kind typo", Spec{TopologyFile: named, Inputs: in("topicA"), Nodes: []NodeDecl{{"latest", "reduce"}, {"hold", "supress"}}}, "pipeline.nodes[1].kind", `"supress" is not a node kind (did you mean suppress?)`, ""},
		{"node typo", Spec{TopologyFile: named, Inputs: in("topicA"), Nodes: []NodeDecl{{"lates", "reduce"}}}, "pipeline.nodes[0].name", `"lates" names no node of the topology file (did you mean latest?)`, ""},
		{"contradicts the generated name", Spec{TopologyFile: abc, Inputs: in("topicA"), Nodes: []NodeDecl{{"KSTREAM-REDUCE-0000000003", "suppress"}}}, "pipeline.nodes[0].kind", "node KSTREAM-REDUCE-0000000003 is declared suppress, but its generated name makes it a reduce (line 19)", ""},
		{"a generated to-stream declared suppress", Spec{TopologyFile: named, Inputs: in("topicA"), Nodes: []NodeDecl{{"latest", "reduce"}, {"KTABLE-TOSTREAM-0000000006", "suppress"}}}, "pipeline.nodes[1].kind", "node KTABLE-TOSTREAM-0000000006 is declared suppress, but its generated name makes it a to-stream", ""},
		{"nodes without topology file", Spec{Output: "joined", Inputs: in("topicA"), Nodes: []NodeDecl{{"x", "reduce"}}}, "pipeline.nodes", "pipeline.topology_file, which is not set", ""},
		{"inner join without topology file", Spec{Output: "joined", Inputs: in("topicA", "topicB"), Join: JoinInner}, "pipeline.join", "inner joins need pipeline.topology_file", ""},
		{"join typo", Spec{TopologyFile: abc, Inputs: in("topicA"), Join: "lefft"}, "pipeline.join", `"lefft" is not a join type (did you mean left?)`, ""},
		{"inner join declared, none in the file", Spec{TopologyFile: "testdata/unsupported-windowed-reduce-4.4.0.txt", Inputs: in("topicA"), Join: JoinInner}, "pipeline.join", "declares inner joins, but in testdata/unsupported-windowed-reduce-4.4.0.txt the inputs reach no KTable-KTable join", ""},
		{"join type not declared", Spec{TopologyFile: abc, Inputs: in("topicA", "topicB", "topicC")}, "pipeline.join", "is not set, but testdata/order-abc-4.4.0.txt:36: node KTABLE-MERGE-0000000021 is a KTable-KTable join, and describe() does not show whether it is inner, left or outer; declare it: left, inner or outer", ""},
		{"inner join, type not declared", Spec{TopologyFile: "testdata/unsupported-inner-join-4.4.0.txt", Inputs: in("topicA", "topicB")}, "pipeline.join", "is not set, but testdata/unsupported-inner-join-4.4.0.txt:31: node KTABLE-MERGE-0000000014 is a KTable-KTable join", ""},
		{"join type not declared, prefix of the chain", Spec{TopologyFile: abc, Inputs: in("topicA")}, "pipeline.join", "is not set, but testdata/order-abc-4.4.0.txt:36: node KTABLE-MERGE-0000000021", ""},
		{"join type not declared without topology file", Spec{Output: "joined", Inputs: in("topicA", "topicB")}, "pipeline.join", "is not set, but pipeline.inputs lists 2 inputs, which are joined by KTable-KTable joins of a type that neither the rest of the configuration nor describe() shows; declare it: left, inner or outer", ""},
		{"reduce type not declared", Spec{TopologyFile: abc, Inputs: in("topicA", "topicB", "topicC"), Join: JoinLeft, Reduce: "-"}, "pipeline.reduce", "is not set, but testdata/order-abc-4.4.0.txt:19: node KSTREAM-REDUCE-0000000003 (store KSTREAM-REDUCE-STATE-STORE-0000000002) on the path of input topic topicA is a reduce, and describe() does not show whether it is windowed; declare it: plain (audited) or windowed (not audited yet), or the node's kind in pipeline.nodes (reduce or windowed)", ""},
		{"windowed reduce, type not declared", Spec{TopologyFile: "testdata/unsupported-windowed-reduce-4.4.0.txt", Inputs: in("topicA"), Reduce: "-"}, "pipeline.reduce", "is not set, but testdata/unsupported-windowed-reduce-4.4.0.txt:17: node KSTREAM-REDUCE-0000000003", ""},
		{"reduce type not declared without topology file", Spec{Output: "joined", Inputs: in("topicA"), Reduce: "-"}, "pipeline.reduce", "is not set, and without pipeline.topology_file nothing shows whether the inputs' reduces are plain or windowed", ""},
		{"windowed reduces without topology file", Spec{Output: "joined", Inputs: in("topicA"), Reduce: ReduceWindowed}, "pipeline.reduce", "windowed reduce is audited only with pipeline.topology_file", ""},
		{"reduce typo", Spec{TopologyFile: abc, Inputs: in("topicA"), Join: JoinLeft, Reduce: "plane"}, "pipeline.reduce", `"plane" is not a reduce type (did you mean plain?)`, ""},
		{"right side first", Spec{TopologyFile: abc, Inputs: in("topicB", "topicA", "topicC"), Join: JoinLeft}, "pipeline.topology_file", "", "input topic topicB (pipeline.inputs[0]) is the right side of the table join KTABLE-JOINOTHER-0000000023, but pipeline.inputs[0] must be the left-most table of the join chain"},
		{"right sides swapped", Spec{TopologyFile: abc, Inputs: in("topicA", "topicC", "topicB"), Join: JoinLeft}, "pipeline.topology_file", "", "join 1 of the chain (KTABLE-MERGE-0000000021) takes input topic topicB (pipeline.inputs[2]) as its right side, where pipeline.inputs[1] is topicC"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.ApplicationID = "app"
			switch tc.spec.Reduce {
			case "-": // left undeclared
				tc.spec.Reduce = ""
			case "":
				tc.spec.Reduce = ReducePlain
			}
			_, err := Build(context.Background(), tc.spec, nil)
			if tc.topErr != "" {
				wantConfigError(t, err, tc.key, tc.topErr)
				return
			}
			wantConfigError(t, err, tc.key, tc.msg)
		})
	}

	// A prefix of a longer chain is audited, with a warning naming the
	// tables that are not configured.
	m, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: abc, Inputs: in("topicA"), Join: JoinLeft, Reduce: ReducePlain}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Output != "joined" || len(m.Warnings) != 2 || !strings.Contains(m.Warnings[0], "join 1 of the chain (KTABLE-MERGE-0000000021, line 36) takes KSTREAM-REDUCE-0000000010, which is not a configured input") {
		t.Fatalf("model %+v", m)
	}
}

// TestReduceDeclaration: a reduce on an input's path is audited only when
// its type is declared plain, by pipeline.reduce or by pipeline.nodes;
// pipeline.reduce: windowed refuses it as a windowed node, and a
// pipeline.nodes entry of the reduce wins over pipeline.reduce.
func TestReduceDeclaration(t *testing.T) {
	file := "testdata/unsupported-windowed-reduce-4.4.0.txt"
	a := []InputSpec{{Name: "a", Topic: "topicA"}}
	build := func(reduce string, nodes ...NodeDecl) (*Model, error) {
		return Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Inputs: a, Reduce: reduce, Nodes: nodes}, nil)
	}
	_, err := build(ReduceWindowed)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Node != "KSTREAM-REDUCE-0000000003" || ue.Kind != KindWindowed || ue.Origin != FromReduceDecl || ue.Line != 17 || ue.File != file {
		t.Fatalf("pipeline.reduce windowed: %v, want the reduce refused as windowed from pipeline.reduce", err)
	}
	if !strings.Contains(err.Error(), file+":17: node KSTREAM-REDUCE-0000000003 on the path of input topic topicA is of kind windowed (from its pipeline.reduce)") {
		t.Errorf("message %q", err)
	}
	if _, err := build("", NodeDecl{"KSTREAM-REDUCE-0000000003", "reduce"}); err != nil {
		t.Errorf("reduce declared in pipeline.nodes: %v", err)
	}
	if _, err := build(ReduceWindowed, NodeDecl{"KSTREAM-REDUCE-0000000003", "reduce"}); err != nil {
		t.Errorf("pipeline.nodes wins over pipeline.reduce: %v", err)
	}
	if _, err := build(ReducePlain, NodeDecl{"KSTREAM-REDUCE-0000000003", "windowed"}); !errors.As(err, &ue) || ue.Kind != KindWindowed || ue.Origin != FromDeclaration {
		t.Errorf("windowed in pipeline.nodes under pipeline.reduce plain: %v", err)
	}
	if err := Check(Spec{ApplicationID: "app", TopologyFile: file, Inputs: a}); err == nil || !strings.Contains(err.Error(), "pipeline.reduce: is not set") {
		t.Errorf("Check: %v", err)
	}
}
