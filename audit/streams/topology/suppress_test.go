package topology

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSuppressGraph: a reduce, then suppress, then toStream into the
// output (the texts testbed/topodescribe printed with kafka-streams 3.6.2,
// 4.0.0 and 4.4.0) is a graph with a buffer stage between the table and
// the output, named from the suppress's store.
func TestSuppressGraph(t *testing.T) {
	for _, v := range []string{"3.6.2", "4.0.0", "4.4.0"} {
		for _, tc := range []struct {
			file, store string
			nodes       []NodeDecl
		}{
			{"unsupported-suppress", "KTABLE-SUPPRESS-STATE-STORE-0000000008", nil},
			{"unsupported-suppress-named", "hold-store", []NodeDecl{{"latest", "reduce"}, {"hold", "suppress"}}},
		} {
			t.Run(tc.file+"-"+v, func(t *testing.T) {
				spec := Spec{ApplicationID: "app", TopologyFile: filepath.Join("testdata", tc.file+"-"+v+".txt"), Reduce: ReducePlain, Nodes: tc.nodes,
					Inputs: []InputSpec{{Name: "a", Topic: "topicA"}}}
				m, err := Build(context.Background(), spec, nil)
				if err != nil {
					t.Fatal(err)
				}
				s := m.Stages[0]
				if s.BufferStore != tc.store || s.BufferTopic != "app-"+tc.store+"-changelog" {
					t.Fatalf("buffer store %q topic %q, want %q", s.BufferStore, s.BufferTopic, tc.store)
				}
				g := m.Graph()
				var ids []string
				for _, st := range g.Stages {
					ids = append(ids, st.ID+" "+string(st.Kind)+" "+string(st.Rule))
				}
				want := "source:a source candidates|link:a link tail-pending|table:a table table-max|buffer:a buffer buffer-pending|output output output-to-stream"
				if got := strings.Join(ids, "|"); got != want {
					t.Errorf("stages %s\nwant %s", got, want)
				}
				var edges []string
				for _, e := range g.Edges {
					edges = append(edges, e.From+">"+e.To+" "+e.Via)
				}
				wantE := "source:a>link:a selectKey|link:a>table:a reduce|table:a>buffer:a suppress (untilTimeLimit)|buffer:a>output toStream"
				if got := strings.Join(edges, "|"); got != wantE {
					t.Errorf("edges %s\nwant %s", got, wantE)
				}
			})
		}
	}
}

// TestSuppressRefused: a suppress anywhere but between the input's table
// and its toStream is refused, naming the node.
func TestSuppressRefused(t *testing.T) {
	base, err := os.ReadFile("testdata/unsupported-suppress-4.4.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, from, to, detail string
	}{
		{"feeds a mapValues on the table", "      --> KTABLE-TOSTREAM-0000000009\n      <-- KSTREAM-REDUCE-0000000003", "      --> KTABLE-MAPVALUES-0000000009\n      <-- KSTREAM-REDUCE-0000000003", "a suppress is audited only before the table's toStream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.Replace(string(base), tc.from, tc.to, 1)
			text = strings.Replace(text, "Processor: KTABLE-TOSTREAM-0000000009", "Processor: KTABLE-MAPVALUES-0000000009", 1)
			text = strings.Replace(text, "<-- KTABLE-TOSTREAM-0000000009", "<-- KTABLE-MAPVALUES-0000000009", 1)
			file := filepath.Join(t.TempDir(), "t.txt")
			if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Reduce: ReducePlain, Inputs: []InputSpec{{Name: "a", Topic: "topicA"}}}, nil)
			var ue *UnsupportedError
			if !errors.As(err, &ue) || ue.Node != "KTABLE-SUPPRESS-0000000007" || !strings.Contains(ue.Detail, tc.detail) {
				t.Fatalf("error %v, want the suppress refused: %s", err, tc.detail)
			}
		})
	}
}
