package topology

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWindowedCount: a selectKey -> groupByKey -> windowedBy(TimeWindows)
// -> count -> toStream topology (generated names, written after
// KStreamImpl's numbering) is accepted when the aggregate is declared
// windowed-count with a tumbling window; the stage carries the window, and
// every malformed or missing declaration is refused naming its key.
func TestWindowedCount(t *testing.T) {
	const agg = "KSTREAM-AGGREGATE-0000000003"
	win := &WindowDecl{Size: time.Minute, Grace: 30 * time.Second, Emit: EmitEager}
	cases := []struct {
		name    string
		kind    string
		window  *WindowDecl
		wantErr string
	}{
		{"windowed-count", "windowed-count", win, ""},
		{"windowed-aggregate", "windowed-aggregate", win, ""},
		{"advance equal to size", "windowed-count", &WindowDecl{Size: time.Minute, Advance: time.Minute, Emit: EmitEager}, ""},
		{"no window", "windowed-count", nil, "pipeline.nodes[0].window: a windowed-count node needs its window"},
		{"hopping", "windowed-count", &WindowDecl{Size: time.Minute, Advance: 10 * time.Second, Emit: EmitEager}, ""},
		{"no emit", "windowed-count", &WindowDecl{Size: time.Minute}, "pipeline.nodes[0].window: emit is not set: declare emit: eager"},
		{"emit final without a suppress", "windowed-count", &WindowDecl{Size: time.Minute, Emit: EmitFinal}, "emit: final without a suppress after the aggregation is emitStrategy(onWindowClose), which is not audited yet"},
		{"emit typo", "windowed-count", &WindowDecl{Size: time.Minute, Emit: "eagre"}, `emit "eagre" is not eager or final`},
		{"advance past size", "windowed-count", &WindowDecl{Size: time.Minute, Advance: 2 * time.Minute, Emit: EmitEager}, "pipeline.nodes[0].window: advance 2m0s must be whole milliseconds, more than 0 and at most the size"},
		{"zero size", "windowed-count", &WindowDecl{Grace: time.Second}, "pipeline.nodes[0].window: size 0s must be a positive"},
		{"negative grace", "windowed-count", &WindowDecl{Size: time.Minute, Grace: -time.Second}, "grace -1s must be zero or more"},
		{"window on a plain count", "count", win, "pipeline.nodes[0].window: a window is declared for a node of kind count"},
		{"a reduce kind on an aggregate", "windowed-reduce", win, "is declared windowed-reduce, but its generated name makes it a aggregate"},
		{"undeclared window kind", "windowed", nil, "is of kind windowed (from its pipeline.nodes), which lossaudit does not audit yet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{ApplicationID: "app", TopologyFile: filepath.Join("testdata", "windowed-count-rekey.txt"), Reduce: ReducePlain,
				Nodes: []NodeDecl{{agg, tc.kind}}, Inputs: []InputSpec{{Name: "a", Topic: "topicA"}}}
			if tc.window != nil {
				spec.Windows = map[int]*WindowDecl{0: tc.window}
			}
			m, err := Build(context.Background(), spec, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := m.Stages[0]
			g := m.Graph()
			if r := g.Stage("table:a").Rule; (tc.kind == "windowed-count") != (r == RuleWindowCount) || g.Edges[1].Key != KeyWindow {
				t.Errorf("table rule %s, edge %+v", r, g.Edges[1])
			}
			if s.Operator != Kind(tc.kind) || s.Window != tc.window || m.Output != "counts" ||
				s.RepartitionTopic != "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition" ||
				s.ChangelogTopic != "app-KSTREAM-AGGREGATE-STATE-STORE-0000000002-changelog" {
				t.Fatalf("stage %+v output %q", s, m.Output)
			}
		})
	}
}

// TestWindowedRefused: a windowed aggregation joined with another input,
// or followed by a suppress (emit final), is refused.
func TestWindowedRefused(t *testing.T) {
	dir := t.TempDir()
	// Two inputs into one sub-topology: the aggregate's task reads two
	// topics, so its stream time is not one partition's.
	text := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topicA, topicB])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> KTABLE-TOSTREAM-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-AGGREGATE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: counts)
      <-- KTABLE-TOSTREAM-0000000003
`
	file := filepath.Join(dir, "two-topics.txt")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := Spec{ApplicationID: "app", TopologyFile: file, Nodes: []NodeDecl{{"KSTREAM-AGGREGATE-0000000002", "windowed-count"}},
		Windows: map[int]*WindowDecl{0: {Size: time.Minute, Emit: EmitEager}}, Inputs: []InputSpec{{Name: "a", Topic: "topicA"}}}
	_, err := Build(context.Background(), spec, nil)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "its sub-topology reads 2 topics") {
		t.Fatalf("err %v, want an *UnsupportedError on the sub-topology's two topics", err)
	}
}

// TestWindowedNoRepartition: a windowed count of the input's own key
// (groupByKey, no repartition topic) whose table leads nowhere (corpus
// text 02) is accepted, audited on its changelog alone.
func TestWindowedNoRepartition(t *testing.T) {
	text := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])
      --> KSTREAM-AGGREGATE-0000000001
    Processor: KSTREAM-AGGREGATE-0000000001 (stores: [count-store])
      --> none
      <-- KSTREAM-SOURCE-0000000000
`
	file := filepath.Join(t.TempDir(), "02.txt")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := Spec{ApplicationID: "app", TopologyFile: file, Nodes: []NodeDecl{{"KSTREAM-AGGREGATE-0000000001", "windowed-count"}},
		Windows: map[int]*WindowDecl{0: {Size: time.Minute, Emit: EmitEager}}, Inputs: []InputSpec{{Name: "a", Topic: "input-topic"}}}
	m, err := Build(context.Background(), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Stages[0]
	if !m.ChangelogOnly || s.RepartitionTopic != "" || s.ChangelogTopic != "app-count-store-changelog" || s.Window == nil {
		t.Fatalf("model %+v stage %+v", m, s)
	}
}

// TestWindowedSuppress: a suppress after a windowed count is audited when
// the window is declared emit: final (suppress(untilWindowCloses)): the
// stage carries the buffer store and its changelog, and the graph a
// buffer stage with the window-final rule; declared emit: eager, the
// suppress is refused, naming it.
func TestWindowedSuppress(t *testing.T) {
	const agg, sup = "KSTREAM-AGGREGATE-0000000003", "KTABLE-SUPPRESS-0000000007"
	spec := func(emit string) Spec {
		return Spec{ApplicationID: "app", TopologyFile: filepath.Join("testdata", "windowed-count-suppress.txt"),
			Nodes: []NodeDecl{{agg, "windowed-count"}}, Windows: map[int]*WindowDecl{0: {Size: time.Minute, Grace: 10 * time.Second, Emit: emit}},
			Inputs: []InputSpec{{Name: "a", Topic: "topicA"}}}
	}
	m, err := Build(context.Background(), spec(EmitFinal), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Stages[0]
	if s.BufferStore != "KTABLE-SUPPRESS-STATE-STORE-0000000008" || s.BufferTopic != "app-KTABLE-SUPPRESS-STATE-STORE-0000000008-changelog" ||
		s.Window == nil || s.Window.Emit != EmitFinal || m.Output != "counts" {
		t.Fatalf("stage %+v output %q", s, m.Output)
	}
	g := m.Graph()
	if st := g.Stage("buffer:a"); st == nil || st.Rule != RuleWindowFinal {
		t.Fatalf("buffer stage %+v", st)
	}
	var via []string
	for _, e := range g.Edges {
		via = append(via, e.Via)
	}
	if got := strings.Join(via, "; "); !strings.Contains(got, "windowedBy(tumbling, size 1m0s, grace 10s, emit final) -> windowed-count; suppress (untilWindowCloses); toStream") {
		t.Fatalf("edges %s", got)
	}
	_, err = Build(context.Background(), spec(EmitEager), nil)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Node != sup || !strings.Contains(err.Error(), "declare the window emit: final when it is suppress(Suppressed.untilWindowCloses") {
		t.Fatalf("err %v, want an *UnsupportedError naming %s", err, sup)
	}
}
