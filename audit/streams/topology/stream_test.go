package topology

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
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

// TestStreamBranch checks split()/branch() on per-record stream stages
// (the texts testbed/topodescribe prints): each branch that reaches the
// output is a path whose ops are the earlier predicates negated and its
// own, the others are named in a warning, and the declaration is checked
// against the children describe() prints and the order their generated
// names show.
func TestStreamBranch(t *testing.T) {
	named := BranchDecl{Branches: []BranchChild{{Name: "route-big", Predicate: "value.amount > 100"}, {Name: "route-medium", Predicate: "value.amount > 50"}, {Name: "route-rest", Default: true}}}
	gen := func(children ...string) BranchDecl {
		var d BranchDecl
		for i, c := range children {
			d.Branches = append(d.Branches, BranchChild{Name: c, Predicate: fmt.Sprintf("key == %q", string(rune('a'+i)))})
		}
		return d
	}
	g := "KSTREAM-BRANCH-0000000001"
	tests := []struct {
		name     string
		file     string
		node     string // the branch node declared, "" for none
		decl     BranchDecl
		nodes    []NodeDecl
		alts     string // each path's ops, "|" between paths
		edges    string
		warn     string
		err, key string
		unsup    string // the *UnsupportedError's node
	}{
		{name: "split, named, two branches merged", file: "stream-split-named-4.4.0", node: "route-", decl: named, nodes: []NodeDecl{{"route-", "branch"}},
			alts:  "filter(value.amount > 100)|not(value.amount > 100) filter(value.amount > 50)",
			edges: "source:a -> output via split -> mapValues -> merge: key identity, at most 1 per record, timestamp kept\n",
			warn:  "input a: the default branch of route- (route-rest) reaches topic others, which is not audited; its records count as filtered"},
		{name: "split, named, 3.6.2", file: "stream-split-named-3.6.2", node: "route-", decl: named, nodes: []NodeDecl{{"route-", "branch"}},
			alts:  "filter(value.amount > 100)|not(value.amount > 100) filter(value.amount > 50)",
			edges: "source:a -> output via split -> mapValues -> merge: key identity, at most 1 per record, timestamp kept\n",
			warn:  "input a: the default branch of route- (route-rest) reaches topic others, which is not audited; its records count as filtered"},
		{name: "split, generated names", file: "stream-split-4.4.0", node: g, decl: gen(g+"1", g+"2", g+"3"),
			alts:  `filter(key == "a")|not(key == "a") not(key == "b") filter(key == "c")`,
			edges: "source:a -> output via split -> peek -> merge: key identity, at most 1 per record, timestamp kept\n",
			warn:  "input a: branch 2 of KSTREAM-BRANCH-0000000001 (KSTREAM-BRANCH-00000000012) reaches topic others, which is not audited; its records count as filtered"},
		{name: "the deprecated branch()", file: "stream-branch-deprecated-3.6.2", node: g, decl: gen("KSTREAM-BRANCHCHILD-0000000002", "KSTREAM-BRANCHCHILD-0000000003"),
			alts:  `filter(key == "a")|not(key == "a") filter(key == "b")`,
			edges: "source:a -> output via split -> mapValues -> merge: key identity, at most 1 per record, timestamp kept\n"},
		{name: "undeclared", file: "stream-split-4.4.0", unsup: g, err: "branches: [{name: KSTREAM-BRANCH-00000000011, predicate: '<CEL>'}"},
		{name: "undeclared, named", file: "stream-split-named-4.4.0", unsup: "route-", err: "of unknown kind"},
		{name: "a child left out", file: "stream-split-4.4.0", node: g, decl: gen(g+"1", g+"2"),
			key: "pipeline.nodes[0].branches", err: "child KSTREAM-BRANCH-00000000013 of KSTREAM-BRANCH-0000000001 is not declared"},
		{name: "a child misspelt", file: "stream-split-named-4.4.0", node: "route-", nodes: []NodeDecl{{"route-", "branch"}},
			decl: BranchDecl{Branches: []BranchChild{{Name: "route-big", Predicate: "true"}, {Name: "route-medum", Predicate: "true"}, {Name: "route-rest", Default: true}}},
			key:  "pipeline.nodes[0].branches[1].name", err: `"route-medum" is no branch of route-; its children are route-big, route-medium, route-rest (did you mean route-medium?)`},
		{name: "generated names out of order", file: "stream-split-4.4.0", node: g, decl: gen(g+"2", g+"1", g+"3"),
			key: "pipeline.nodes[0].branches[0].name", err: "the name split() gives its branch 2, declared here as branch 1"},
		{name: "a generated branch declared default", file: "stream-split-4.4.0", node: g,
			decl: BranchDecl{Branches: []BranchChild{{Name: g + "1", Predicate: "true"}, {Name: g + "2", Predicate: "true"}, {Name: g + "3", Default: true}}},
			key:  "pipeline.nodes[0].branches[2].name", err: "the name split() gives branch 3, not the default branch"},
		{name: "deprecated children out of order", file: "stream-branch-deprecated-3.6.2", node: g, decl: gen("KSTREAM-BRANCHCHILD-0000000003", "KSTREAM-BRANCHCHILD-0000000002"),
			key: "pipeline.nodes[0].branches[1].name", err: "the order is not the application's"},
		{name: "a deprecated branch() has no default", file: "stream-branch-deprecated-3.6.2", node: g,
			decl: BranchDecl{Branches: []BranchChild{{Name: "KSTREAM-BRANCHCHILD-0000000002", Predicate: "true"}, {Name: "KSTREAM-BRANCHCHILD-0000000003", Default: true}}},
			key:  "pipeline.nodes[0].branches[1].name", err: "has no default branch"},
		{name: "branches on a node that is no branch", file: "stream-split-4.4.0", node: "KSTREAM-PEEK-0000000005", decl: gen("x"), nodes: []NodeDecl{{"KSTREAM-PEEK-0000000005", "peek"}},
			key: "pipeline.nodes[0].branches", err: "is a peek"},
		{name: "a child declared as a node", file: "stream-split-4.4.0", node: g, decl: gen(g+"1", g+"2", g+"3"), nodes: []NodeDecl{{g + "1", "peek"}},
			key: "pipeline.nodes[0].kind", err: "declare it among KSTREAM-BRANCH-0000000001's branches"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := Spec{ApplicationID: "app", TopologyFile: filepath.Join("testdata", tt.file+".txt"), Output: "joined",
				Inputs: []InputSpec{{Name: "a", Topic: "topicA"}}, Nodes: tt.nodes}
			if tt.node != "" {
				spec.Branches = map[string]BranchDecl{tt.node: tt.decl}
			}
			m, err := Build(context.Background(), spec, nil)
			if tt.err != "" {
				if err == nil {
					t.Fatalf("accepted: %+v", m.Stream.Inputs)
				}
				if !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %q, want one with %q", err, tt.err)
				}
				var ue *UnsupportedError
				if tt.unsup != "" && (!errors.As(err, &ue) || ue.Node != tt.unsup) {
					t.Errorf("error %v, want one naming node %s", err, tt.unsup)
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
			var alts []string
			for _, ops := range m.Stream.Inputs[0].Paths() {
				var s []string
				for _, o := range ops {
					switch {
					case o.Op != OpFilter:
						s = append(s, string(o.Op))
					case o.Negate:
						s = append(s, "not("+o.Predicate+")")
					default:
						s = append(s, "filter("+o.Predicate+")")
					}
				}
				alts = append(alts, strings.Join(s, " "))
			}
			if got := strings.Join(alts, "|"); got != tt.alts {
				t.Errorf("paths %q, want %q", got, tt.alts)
			}
			var b bytes.Buffer
			if err := m.Graph().Write(&b, nil); err != nil {
				t.Fatal(err)
			}
			_, edges, _ := strings.Cut(b.String(), "edges:\n")
			if edges = strings.ReplaceAll(edges, "  ", ""); edges != tt.edges {
				t.Errorf("edges\n%s\nwant\n%s", edges, tt.edges)
			}
			if got := strings.Join(m.Warnings, "; "); got != tt.warn {
				t.Errorf("warnings %q, want %q", got, tt.warn)
			}
		})
	}
}

// TestStreamBranchRefusals checks what a declared branch cannot make
// sound: a split after a mapValues (its predicates read a changed value),
// and two paths to the output that part at a node other than the branch
// (a record would reach the output twice).
func TestStreamBranchRefusals(t *testing.T) {
	const head = "Topologies:\n   Sub-topology: 0\n    Source: KSTREAM-SOURCE-0000000000 (topics: [events])\n      --> %s\n"
	branch := func(pred string) string {
		return "    Processor: KSTREAM-BRANCH-0000000002 (stores: [])\n      --> KSTREAM-BRANCH-00000000021, KSTREAM-BRANCH-00000000022\n      <-- " + pred + "\n" +
			"    Processor: KSTREAM-BRANCH-00000000021 (stores: [])\n      --> KSTREAM-MERGE-0000000003\n      <-- KSTREAM-BRANCH-0000000002\n" +
			"    Processor: KSTREAM-BRANCH-00000000022 (stores: [])\n      --> KSTREAM-MERGE-0000000003\n      <-- KSTREAM-BRANCH-0000000002\n"
	}
	const tail = "    Processor: KSTREAM-MERGE-0000000003 (stores: [])\n      --> KSTREAM-SINK-0000000004\n      <-- %s\n" +
		"    Sink: KSTREAM-SINK-0000000004 (topic: out)\n      <-- KSTREAM-MERGE-0000000003\n"
	tests := []struct {
		name, text, err, node string
	}{
		{name: "split after mapValues",
			text: fmt.Sprintf(head, "KSTREAM-MAPVALUES-0000000001") +
				"    Processor: KSTREAM-MAPVALUES-0000000001 (stores: [])\n      --> KSTREAM-BRANCH-0000000002\n      <-- KSTREAM-SOURCE-0000000000\n" +
				branch("KSTREAM-MAPVALUES-0000000001") + fmt.Sprintf(tail, "KSTREAM-BRANCH-00000000021, KSTREAM-BRANCH-00000000022"),
			node: "KSTREAM-BRANCH-0000000002", err: "KSTREAM-MAPVALUES-0000000001 changed before it"},
		{name: "a fan-out beside the split",
			text: fmt.Sprintf(head, "KSTREAM-PEEK-0000000001") +
				"    Processor: KSTREAM-PEEK-0000000001 (stores: [])\n      --> KSTREAM-BRANCH-0000000002, KSTREAM-MERGE-0000000003\n      <-- KSTREAM-SOURCE-0000000000\n" +
				branch("KSTREAM-PEEK-0000000001") + fmt.Sprintf(tail, "KSTREAM-BRANCH-00000000021, KSTREAM-BRANCH-00000000022, KSTREAM-PEEK-0000000001"),
			err: "reaches topic out by 3 paths, and two of them part at node KSTREAM-PEEK-0000000001 (line 5), which forwards each record to both, not at a branch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "topology.txt")
			if err := os.WriteFile(file, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			spec := Spec{ApplicationID: "app", TopologyFile: file, Inputs: []InputSpec{{Name: "a", Topic: "events"}},
				Branches: map[string]BranchDecl{"KSTREAM-BRANCH-0000000002": {Branches: []BranchChild{
					{Name: "KSTREAM-BRANCH-00000000021", Predicate: "true"}, {Name: "KSTREAM-BRANCH-00000000022", Predicate: "true"}}}}}
			m, err := Build(context.Background(), spec, nil)
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
		})
	}
}
