package topology

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlobalJoin checks KStream-GlobalKTable joins on per-record stream
// stages, on the texts testbed/topodescribe prints with kafka-streams
// 3.6.2 and 4.4.0: a left join declared with the behaviour of a null
// mapped key is audited (null values dropped by design, null keys
// expected), the global store's block is no input path, and an
// undeclared join, an inner join (which prints alike) and a declaration
// without the null mapped key's behaviour are refused, naming the node.
func TestGlobalJoin(t *testing.T) {
	const join = "KSTREAM-LEFTJOIN-0000000004"
	left := []NodeDecl{{Name: join, Kind: "global-left-join"}}
	tests := []struct {
		name   string
		file   string
		topics []string
		nodes  []NodeDecl
		nmk    string
		want   string // edges, or
		err    string // a part of the error
		node   string // the node the error names
		opNode string // the join's node, when not join
	}{
		{name: "left join, joined", file: "stream-global-leftjoin", topics: []string{"orders"}, nodes: left, nmk: "joined",
			want: "source:a -> output via leftJoin(global) -> mapValues (global store customers-STATE-STORE-0000000000 not audited): key identity, at most 1 per record, timestamp kept\n"},
		{name: "left join, never", file: "stream-global-leftjoin", topics: []string{"orders"}, nodes: left, nmk: "never",
			want: "source:a -> output via leftJoin(global) -> mapValues (global store customers-STATE-STORE-0000000000 not audited): key identity, at most 1 per record, timestamp kept\n"},
		{name: "named left join, declared", file: "stream-global-leftjoin-named", topics: []string{"orders"}, nodes: []NodeDecl{{Name: "enrich", Kind: "global-left-join"}}, nmk: "never",
			want: "source:a -> output via leftJoin(global) (global store customers-STATE-STORE-0000000000 not audited): key identity, at most 1 per record, timestamp kept\n", node: "", opNode: "enrich"},
		{name: "named left join, undeclared", file: "stream-global-leftjoin-named", topics: []string{"orders"}, node: "enrich", err: "is of unknown kind"},
		{name: "undeclared", file: "stream-global-leftjoin", topics: []string{"orders"}, node: join,
			err: "describe() prints inner and left joins alike, declare it, pipeline.nodes: [{name: KSTREAM-LEFTJOIN-0000000004, kind: global-left-join, null_mapped_key: joined}]"},
		{name: "null mapped key undeclared", file: "stream-global-leftjoin", topics: []string{"orders"}, nodes: left, node: join,
			err: "needs the behaviour of a null mapped key declared"},
		{name: "null mapped key dropped", file: "stream-global-leftjoin", topics: []string{"orders"}, nodes: left, nmk: "dropped", node: join,
			err: "needs the behaviour of a null mapped key declared"},
		{name: "inner join", file: "stream-global-innerjoin", topics: []string{"orders"}, nodes: []NodeDecl{{Name: join, Kind: "global-inner-join"}}, node: join,
			err: "the global store is updated by its own thread"},
		{name: "inner join undeclared", file: "stream-global-innerjoin", topics: []string{"orders"}, node: join, err: "kind: global-left-join"},
		{name: "the global topic as an input", file: "stream-global-leftjoin", topics: []string{"orders", "customers"}, nodes: left, nmk: "joined",
			err: "topic customers is read by a global store"},
		{name: "declared on a KTable join", file: "stream-leftjoin", topics: []string{"orders"}, nodes: []NodeDecl{{Name: join, Kind: "global-left-join"}}, nmk: "joined",
			err: "a KStream-GlobalKTable join is a processor with no store of its own in a topology with a global store"},
		{name: "declared without a global store", file: "stream-global", topics: []string{"orders"}, nodes: []NodeDecl{{Name: join, Kind: "global-left-join"}}, nmk: "joined",
			err: "a KStream-GlobalKTable join is a processor with no store of its own in a topology with a global store"},
		{name: "a mapValues declared global", file: "stream-global-leftjoin", topics: []string{"orders"}, nodes: []NodeDecl{{Name: "KSTREAM-MAPVALUES-0000000005", Kind: "global-left-join"}}, nmk: "joined",
			err: "its generated name makes it a map-values"},
	}
	// Corpus 33's shape, built here: a declared global left join before
	// an aggregation is refused with the reason.
	agg := "Topologies:\n" +
		"   Sub-topology: 0 for global store (will not generate tasks)\n" +
		"    Source: KSTREAM-SOURCE-0000000001 (topics: [customers])\n      --> KTABLE-SOURCE-0000000002\n" +
		"    Processor: KTABLE-SOURCE-0000000002 (stores: [customers-STATE-STORE-0000000000])\n      --> none\n      <-- KSTREAM-SOURCE-0000000001\n" +
		"  Sub-topology: 1\n" +
		"    Source: KSTREAM-SOURCE-0000000003 (topics: [orders])\n      --> KSTREAM-LEFTJOIN-0000000004\n" +
		"    Processor: KSTREAM-LEFTJOIN-0000000004 (stores: [])\n      --> KSTREAM-AGGREGATE-0000000005\n      <-- KSTREAM-SOURCE-0000000003\n" +
		"    Processor: KSTREAM-AGGREGATE-0000000005 (stores: [totals])\n      --> KTABLE-TOSTREAM-0000000006\n      <-- KSTREAM-LEFTJOIN-0000000004\n" +
		"    Processor: KTABLE-TOSTREAM-0000000006 (stores: [])\n      --> KSTREAM-SINK-0000000007\n      <-- KSTREAM-AGGREGATE-0000000005\n" +
		"    Sink: KSTREAM-SINK-0000000007 (topic: totals)\n      <-- KTABLE-TOSTREAM-0000000006\n"
	aggFile := filepath.Join(t.TempDir(), "agg.txt")
	if err := os.WriteFile(aggFile, []byte(agg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: aggFile, Inputs: []InputSpec{{Name: "a", Topic: "orders"}},
		Nodes: append(left, NodeDecl{Name: "KSTREAM-AGGREGATE-0000000005", Kind: "aggregate"}), NullMappedKeys: map[string]string{join: "joined"}}, nil)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Node != join || !strings.Contains(err.Error(), "one before an aggregation is not audited yet") {
		t.Errorf("a global join before an aggregation: %v", err)
	}
	for _, v := range []string{"3.6.2", "4.4.0"} {
		for _, tt := range tests {
			t.Run(v+"/"+tt.name, func(t *testing.T) {
				file := "testdata/" + tt.file + "-" + v + ".txt"
				if tt.file == "stream-leftjoin" || tt.file == "stream-global" {
					file = "testdata/" + tt.file + ".txt"
				}
				spec := Spec{ApplicationID: "app", TopologyFile: file, Nodes: tt.nodes}
				for i, tp := range tt.topics {
					spec.Inputs = append(spec.Inputs, InputSpec{Name: string(rune('a' + i)), Topic: tp})
				}
				if tt.nmk != "" {
					spec.NullMappedKeys = map[string]string{tt.nodes[0].Name: tt.nmk}
				}
				m, err := Build(context.Background(), spec, nil)
				if tt.err != "" {
					if err == nil {
						t.Fatalf("accepted: %+v", m.Stream)
					}
					if !strings.Contains(err.Error(), tt.err) {
						t.Errorf("error %q, want one with %q", err, tt.err)
					}
					var ue *UnsupportedError
					if tt.node != "" && (!errors.As(err, &ue) || ue.Node != tt.node) {
						t.Errorf("error %v, want one naming node %s", err, tt.node)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				in := m.Stream.Inputs[0]
				opNode := join
				if tt.opNode != "" {
					opNode = tt.opNode
				}
				if m.Output != "joined" || in.DropNullKey || !in.DropNullValue || len(in.Ops) != 1 || in.Ops[0].Op != OpDropNullValue || in.Ops[0].Node != opNode {
					t.Errorf("output %s, input %+v", m.Output, in)
				}
				var b bytes.Buffer
				if err := m.Graph().Write(&b, nil); err != nil {
					t.Fatal(err)
				}
				_, edges, _ := strings.Cut(b.String(), "edges:\n")
				if edges = strings.ReplaceAll(edges, "  ", ""); edges != tt.want {
					t.Errorf("edges\n%s\nwant\n%s", edges, tt.want)
				}
				want := "input a is left-joined with the GlobalKTable of global store customers-STATE-STORE-0000000000: the table side is not audited by this stage"
				if got := strings.Join(m.Warnings, "; "); got != want {
					t.Errorf("warnings %q, want %q", got, want)
				}
			})
		}
	}
}
