package topology

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildStream checks the per-record stream stages derived from
// describe() texts, and the refusals: every node on the paths is one
// that forwards each record once with its key and timestamp, or a
// KStream-KTable left join.
func TestBuildStream(t *testing.T) {
	in := func(topics ...string) []InputSpec {
		var out []InputSpec
		for i, tp := range topics {
			out = append(out, InputSpec{Name: string(rune('a' + i)), Topic: tp})
		}
		return out
	}
	tests := []struct {
		name   string
		file   string
		inputs []InputSpec
		// want is the graph as `lossaudit topology` prints it (edges
		// only), or err a part of the error.
		want string
		warn string
		err  string
		node string
	}{
		{name: "mapValues and merge of two inputs", file: "stream-merge", inputs: in("events-a", "events-b"),
			want: "source:a -> output via mapValues -> merge -> peek: key identity, 1 per record, timestamp kept\n" +
				"source:b -> output via merge -> peek: key identity, 1 per record, timestamp kept\n"},
		{name: "repartition()", file: "stream-repartition", inputs: in("events"),
			want: "source:a -> link:a via repartition: key identity, at most 1 per record, timestamp kept\n" +
				"link:a -> output via mapValues -> repartition -> peek: key identity, at most 1 per record, timestamp kept\n"},
		{name: "KStream-KTable left join", file: "stream-leftjoin", inputs: in("orders"),
			want: "source:a -> output via leftJoin -> mapValues (table customers-STATE-STORE-0000000001 not audited): key identity, at most 1 per record, timestamp kept\n",
			warn: "input a is left-joined with the table of store customers-STATE-STORE-0000000001: the table side is not audited by this stage"},
		{name: "inner join", file: "stream-innerjoin", inputs: in("orders"), node: "KSTREAM-JOIN-0000000004", err: "only left joins are audited"},
		{name: "join with a grace period", file: "stream-grace", inputs: in("orders"), node: "KSTREAM-LEFTJOIN-0000000004", err: "grace period buffers records"},
		{name: "GlobalKTable join", file: "stream-global", inputs: in("orders"), node: "KSTREAM-LEFTJOIN-0000000004", err: "KStream-GlobalKTable join"},
		{name: "two paths to the output", file: "stream-twopaths", inputs: in("events"), err: "input topic events reaches topic out by 2 paths"},
		{name: "the table side as an input", file: "stream-leftjoin", inputs: in("orders", "customers"), node: "KTABLE-SOURCE-0000000003", err: "per-record stream stage"},
		{name: "a user filter", file: "unsupported-filter-4.4.0", inputs: in("topicA"), node: "KSTREAM-FILTER-0000000002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join("testdata", tt.file+".txt")
			m, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Inputs: tt.inputs}, nil)
			if tt.err != "" || tt.node != "" {
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
			if m.Stream == nil || len(m.Stream.Inputs) != len(tt.inputs) {
				t.Fatalf("model %+v: no stream stage", m)
			}
			var b bytes.Buffer
			if err := m.Graph().Write(&b, nil); err != nil {
				t.Fatal(err)
			}
			_, edges, _ := strings.Cut(b.String(), "edges:\n")
			edges = strings.ReplaceAll(edges, "  ", "")
			if edges != tt.want {
				t.Errorf("edges\n%s\nwant\n%s", edges, tt.want)
			}
			if !strings.Contains(b.String(), "rule output-per-record") {
				t.Errorf("graph without the per-record rule:\n%s", b.String())
			}
			if got := strings.Join(m.Warnings, "; "); got != tt.warn {
				t.Errorf("warnings %q, want %q", got, tt.warn)
			}
		})
	}
}

// TestStreamLinks checks what the audit of a repartitioned stream reads:
// the repartition topic with the application's prefix, and which records
// the path drops by design.
func TestStreamLinks(t *testing.T) {
	m, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: "testdata/stream-repartition.txt", Inputs: []InputSpec{{Name: "a", Topic: "events"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := m.Stream.Inputs[0]
	if m.Output != "out" || strings.Join(in.Links, ",") != "app-KSTREAM-REPARTITION-0000000002-repartition" || !in.DropNullKey || in.DropNullValue {
		t.Errorf("output %s, input %+v", m.Output, in)
	}
	m, err = Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: "testdata/stream-leftjoin.txt", Inputs: []InputSpec{{Name: "a", Topic: "orders", Rekey: "id"}}}, nil)
	var pe *Error
	if !errors.As(err, &pe) || pe.Key != "pipeline.inputs[0].rekey" {
		t.Errorf("rekey on a stream stage: %v (%+v)", err, m)
	}
}

// TestStreamFilterRekey checks declared filters and re-keys on per-record
// stream stages: the ops replayed in path order, the graph, and the
// refusals (an undeclared predicate or re-key, a filter after a
// mapValues, a rekey on a path without selectKey).
func TestStreamFilterRekey(t *testing.T) {
	pred := map[string]FilterDecl{"KSTREAM-FILTER-0000000001": {Predicate: "value.amount > 100"}}
	tests := []struct {
		name    string
		file    string
		rekey   string
		filters map[string]FilterDecl
		ops     string // the ops, "op node" joined by "; "
		edges   string
		err     string // part of the error
		node    string // the *UnsupportedError's node
		key     string // the *Error's key
	}{
		{name: "filter then selectKey", file: "stream-filter-rekey", rekey: "customer", filters: pred,
			ops:   "filter KSTREAM-FILTER-0000000001; rekey KSTREAM-KEY-SELECT-0000000002",
			edges: "source:a -> output via filter -> selectKey: key field customer, at most 1 per record, timestamp kept\n"},
		{name: "filterNot", file: "stream-filter-rekey", rekey: "customer", filters: map[string]FilterDecl{"KSTREAM-FILTER-0000000001": {Predicate: "value.amount > 100", Negate: true}},
			ops:   "filter KSTREAM-FILTER-0000000001; rekey KSTREAM-KEY-SELECT-0000000002",
			edges: "source:a -> output via filter -> selectKey: key field customer, at most 1 per record, timestamp kept\n"},
		{name: "undeclared predicate", file: "stream-filter-rekey", rekey: "customer", node: "KSTREAM-FILTER-0000000001", err: "predicate: '<CEL expression over value and key>'"},
		{name: "undeclared re-key", file: "stream-filter-rekey", filters: pred, node: "KSTREAM-KEY-SELECT-0000000002", err: "pipeline.inputs[i].rekey"},
		{name: "selectKey before repartition()", file: "stream-rekey-repartition", rekey: "customer",
			filters: map[string]FilterDecl{"KSTREAM-FILTER-0000000006": {Predicate: "key != ''"}},
			ops:     "rekey KSTREAM-KEY-SELECT-0000000001; drop-null-key KSTREAM-FILTER-0000000004; filter KSTREAM-FILTER-0000000006",
			edges: "source:a -> link:a via repartition: key field customer, at most 1 per record, timestamp kept\n" +
				"link:a -> output via selectKey -> repartition -> filter: key identity, at most 1 per record, timestamp kept\n"},
		{name: "the repartition filter needs no predicate", file: "stream-rekey-repartition", rekey: "customer", node: "KSTREAM-FILTER-0000000006", err: "audited when its predicate is declared"},
		{name: "filter after mapValues", file: "stream-mapvalues-filter", filters: map[string]FilterDecl{"KSTREAM-FILTER-0000000002": {Predicate: "true"}},
			node: "KSTREAM-FILTER-0000000002", err: "KSTREAM-MAPVALUES-0000000001 changed before it"},
		{name: "rekey without selectKey", file: "stream-mapvalues-filter", rekey: "customer", filters: map[string]FilterDecl{"KSTREAM-FILTER-0000000002": {Predicate: "true"}},
			node: "KSTREAM-FILTER-0000000002"},
		{name: "a declared filter before a reduce: the table family's refusal", file: "unsupported-filter-4.4.0", rekey: "customer",
			filters: map[string]FilterDecl{"KSTREAM-FILTER-0000000002": {Predicate: "true"}}, node: "KSTREAM-FILTER-0000000002", err: "which lossaudit does not audit yet"},
		{name: "map", file: "stream-map", rekey: "customer",
			ops:   "rekey KSTREAM-MAP-0000000001",
			edges: "source:a -> output via map: key field customer, 1 per record, timestamp kept\n"},
		{name: "filter after map", file: "stream-map-filter", rekey: "customer", filters: map[string]FilterDecl{"KSTREAM-FILTER-0000000002": {Predicate: "true"}},
			node: "KSTREAM-FILTER-0000000002", err: "KSTREAM-MAP-0000000001 changed before it"},
		{name: "rekey on a pass-through", file: "stream-repartition", rekey: "customer", key: "pipeline.inputs[0].rekey", err: "shows no selectKey or map"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join("testdata", tt.file+".txt")
			topic := "events"
			if strings.HasPrefix(tt.file, "unsupported-") {
				topic = "topicA"
			}
			spec := Spec{ApplicationID: "app", TopologyFile: file, Filters: tt.filters, Inputs: []InputSpec{{Name: "a", Topic: topic, Rekey: tt.rekey}}, Reduce: ReducePlain}
			m, err := Build(context.Background(), spec, nil)
			if tt.err != "" || tt.node != "" || tt.key != "" {
				if err == nil {
					t.Fatalf("accepted: %+v", m.Stream.Inputs)
				}
				if !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %q, want one with %q", err, tt.err)
				}
				var ue *UnsupportedError
				if tt.node != "" && (!errors.As(err, &ue) || ue.Node != tt.node) {
					t.Errorf("error %v, want one naming node %s", err, tt.node)
				}
				var pe *Error
				if tt.key != "" && (!errors.As(err, &pe) || pe.Key != tt.key) {
					t.Errorf("error %v, want one at %s", err, tt.key)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ops []string
			for _, o := range m.Stream.Inputs[0].Ops {
				ops = append(ops, string(o.Op)+" "+o.Node)
				if o.Op == OpFilter && tt.filters[o.Node] != (FilterDecl{Predicate: o.Predicate, Negate: o.Negate}) {
					t.Errorf("op %+v, declared %+v", o, tt.filters[o.Node])
				}
			}
			if got := strings.Join(ops, "; "); got != tt.ops {
				t.Errorf("ops %q, want %q", got, tt.ops)
			}
			var b bytes.Buffer
			if err := m.Graph().Write(&b, nil); err != nil {
				t.Fatal(err)
			}
			_, edges, _ := strings.Cut(b.String(), "edges:\n")
			if edges = strings.ReplaceAll(edges, "  ", ""); edges != tt.edges {
				t.Errorf("edges\n%s\nwant\n%s", edges, tt.edges)
			}
		})
	}
}
