package topology

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// countToNone is the count of testdata/unsupported-count with nothing
// after the table (`--> none`): the changelog is the end.
func countToNone(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/unsupported-count-4.4.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	text, _, _ := strings.Cut(string(b), "    Processor: KTABLE-TOSTREAM-0000000007")
	text = strings.Replace(text, "      --> KTABLE-TOSTREAM-0000000007\n", "      --> none\n", 1)
	file := filepath.Join(t.TempDir(), "t.txt")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestChangelogOnly(t *testing.T) {
	file := countToNone(t)
	nodes := []NodeDecl{{"KSTREAM-AGGREGATE-0000000003", "count"}}
	in := []InputSpec{{Name: "a", Topic: "topicA"}}
	m, err := Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Reduce: ReducePlain, Nodes: nodes, Inputs: in}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !m.ChangelogOnly || m.Output != "" || m.Stages[0].ChangelogTopic != "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog" {
		t.Fatalf("model %+v: want the count's changelog as the end, no output", m)
	}
	g := m.Graph()
	var ids []string
	for _, s := range g.Stages {
		ids = append(ids, s.ID)
	}
	if got := strings.Join(ids, " "); got != "source:a link:a table:a" {
		t.Errorf("stages %s, want source:a link:a table:a", got)
	}
	for _, e := range g.Edges {
		if e.To == "output" {
			t.Errorf("edge %+v to an output that does not exist", e)
		}
	}
	// An output configured for a topology without one is an error.
	_, err = Build(context.Background(), Spec{ApplicationID: "app", TopologyFile: file, Output: "counts", Reduce: ReducePlain, Nodes: nodes, Inputs: in}, nil)
	if e, ok := err.(*Error); !ok || e.Key != "pipeline.output" || !strings.Contains(e.Msg, "ends in its changelog") {
		t.Errorf("error %v, want pipeline.output naming the changelog end", err)
	}
}
