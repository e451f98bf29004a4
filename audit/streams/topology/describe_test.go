package topology

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The names below were read by hand from testdata/*.txt, which the Java
// program in testbed/topodescribe produced with real kafka-streams.
const (
	st02 = "KSTREAM-REDUCE-STATE-STORE-0000000002"
	st09 = "KSTREAM-REDUCE-STATE-STORE-0000000009"
	st16 = "KSTREAM-REDUCE-STATE-STORE-0000000016"
	st19 = "KSTREAM-REDUCE-STATE-STORE-0000000019"
)

type want struct{ repartition, store string }

var variants = []struct {
	file   string
	stages [3]want // inputs topicA, topicB, topicC
}{
	{"order-abc", [3]want{{st02 + "-repartition", st02}, {st09 + "-repartition", st09}, {st16 + "-repartition", st16}}},
	{"order-cab", [3]want{{st09 + "-repartition", st09}, {st16 + "-repartition", st16}, {st02 + "-repartition", st02}}},
	{"order-interleaved", [3]want{{st02 + "-repartition", st02}, {st09 + "-repartition", st09}, {st19 + "-repartition", st19}}},
	{"named", [3]want{{"ga-repartition", st02}, {"store-b-repartition", "store-b"}, {"gc-repartition", "store-c"}}},
	{"optimized", [3]want{{st02 + "-repartition", st02}, {st09 + "-repartition", st09}, {st16 + "-repartition", st16}}},
}

var versions = []string{"3.6.2", "4.0.0", "4.4.0"}

func parseFile(t *testing.T, name string) *Topology {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	top, err := ParseTopology(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return top
}

func TestParseGolden(t *testing.T) {
	for _, v := range versions {
		// order-abc: 4 sub-topologies; sub-topology 1 is the join with 14 nodes.
		top := parseFile(t, "order-abc-"+v+".txt")
		if got := len(top.SubTopologies); got != 4 {
			t.Fatalf("%s: %d sub-topologies, want 4", v, got)
		}
		if got := len(top.SubTopologies[1].Nodes); got != 14 {
			t.Errorf("%s: sub-topology 1 has %d nodes, want 14", v, got)
		}
		n, st := top.Node("KTABLE-JOINOTHER-0000000026")
		if n == nil || st.ID != 1 {
			t.Fatalf("%s: KTABLE-JOINOTHER-0000000026 not in sub-topology 1", v)
		}
		if strings.Join(n.Stores, ",") != st09+","+st02 || strings.Join(n.Predecessors, ",") != "KSTREAM-REDUCE-0000000017" || strings.Join(n.Successors, ",") != "KTABLE-MERGE-0000000024" {
			t.Errorf("%s: JOINOTHER-26 = %+v", v, n)
		}
		m, _ := top.Node("KTABLE-MERGE-0000000021")
		if strings.Join(m.Predecessors, ",") != "KTABLE-JOINTHIS-0000000022,KTABLE-JOINOTHER-0000000023" {
			t.Errorf("%s: MERGE-21 predecessors %v", v, m.Predecessors)
		}
		s, _ := top.Node("KSTREAM-SINK-0000000028")
		if s.Kind != Sink || strings.Join(s.Topics, ",") != "joined" || s.Line != 51 {
			t.Errorf("%s: SINK-28 = %+v", v, s)
		}
		src, _ := top.Node("KSTREAM-SOURCE-0000000000")
		if src.Kind != Source || strings.Join(src.Topics, ",") != "topicA" || src.Predecessors != nil || src.Line != 3 {
			t.Errorf("%s: SOURCE-0 = %+v", v, src)
		}

		// pattern-global: a pattern source and a global store block.
		pg := parseFile(t, "pattern-global-"+v+".txt")
		if len(pg.SubTopologies) != 3 || !pg.SubTopologies[2].Global || pg.SubTopologies[1].Global {
			t.Fatalf("%s: pattern-global sub-topologies %+v", v, pg.SubTopologies)
		}
		p, _ := pg.Node("KSTREAM-SOURCE-0000000000")
		if p.Pattern != "topic[AB]" || p.Topics != nil {
			t.Errorf("%s: pattern source = %+v", v, p)
		}
		g, _ := pg.Node("KTABLE-SOURCE-0000000011")
		if strings.Join(g.Stores, ",") != "globalTopic-STATE-STORE-0000000009" || g.Successors != nil {
			t.Errorf("%s: global processor = %+v", v, g)
		}
	}
}

func TestStagesGolden(t *testing.T) {
	for _, v := range versions {
		for _, tc := range variants {
			name := tc.file + "-" + v + ".txt"
			t.Run(name, func(t *testing.T) {
				top := parseFile(t, name)
				for _, out := range []string{"joined", ""} {
					stages, got, err := top.Stages("app", []string{"topicA", "topicB", "topicC"}, out)
					if err != nil {
						t.Fatalf("output %q: %v", out, err)
					}
					if got != "joined" {
						t.Errorf("output %q: derived output %q, want joined", out, got)
					}
					for i, w := range tc.stages {
						s := stages[i]
						if s.RepartitionTopic != "app-"+w.repartition || s.Store != w.store || s.Output != "joined" {
							t.Errorf("input %d: got repartition %q store %q output %q, want app-%s, %s, joined", i, s.RepartitionTopic, s.Store, s.Output, w.repartition, w.store)
						}
					}
				}
			})
		}
	}
}

func TestStagesErrors(t *testing.T) {
	abc := parseFile(t, "order-abc-3.6.2.txt")
	pg := parseFile(t, "pattern-global-3.6.2.txt")
	cases := []struct {
		name   string
		top    *Topology
		inputs []string
		output string
		want   string
	}{
		{"unknown input", abc, []string{"topicA", "topicX"}, "joined", "input topic topicX is not read by any source of the topology (sources read: topicA,"},
		{"global input", pg, []string{"globalTopic"}, "joined", "line 27: topic globalTopic is read by a global store"},
		// Through the pattern both inputs reach the same store; Stages
		// itself accepts that, Build rejects the shared store.
		{"output elsewhere", abc, []string{"topicA"}, "other", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := tc.top.Stages("app", tc.inputs, tc.output)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	// A pattern source is followed when the input matches it.
	st, out, err := pg.Stages("app", []string{"topicA", "topicB"}, "joined")
	if err != nil {
		t.Fatal(err)
	}
	if out != "joined" || st[0].Store != st02 || st[1].Store != st02 || st[0].RepartitionTopic != "app-"+st02+"-repartition" {
		t.Errorf("pattern stages %+v output %q", st, out)
	}
}

func TestParseRobust(t *testing.T) {
	raw, err := os.ReadFile("testdata/order-abc-3.6.2.txt")
	if err != nil {
		t.Fatal(err)
	}
	base := string(raw)
	lines := strings.Split(base, "\n")
	var flat, tabs []string
	for i, l := range lines {
		flat = append(flat, strings.TrimSpace(l))
		tabs = append(tabs, strings.Repeat("\t", i%3)+strings.TrimLeft(l, " ")+"  ")
	}
	for name, text := range map[string]string{
		"crlf":        strings.ReplaceAll(base, "\n", "\r\n"),
		"no indent":   strings.Join(flat, "\n"),
		"tabs":        strings.Join(tabs, "\n"),
		"log prefix":  "2026-11-29 10:00:00 INFO MyApp - topology:\n2026-11-29 10:00:00 INFO MyApp - Topologies:\n" + strings.SplitN(base, "\n", 2)[1],
		"no header":   strings.SplitN(base, "\n", 2)[1],
		"extra blank": strings.ReplaceAll(base, "\n", "\n\n"),
	} {
		t.Run(name, func(t *testing.T) {
			top, err := ParseTopology(strings.NewReader(text))
			if err != nil {
				t.Fatal(err)
			}
			stages, out, err := top.Stages("app", []string{"topicA", "topicB", "topicC"}, "joined")
			if err != nil {
				t.Fatal(err)
			}
			if out != "joined" || stages[0].Store != st02 || stages[1].Store != st09 || stages[2].Store != st16 {
				t.Errorf("stages %+v output %q", stages, out)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	raw, err := os.ReadFile("testdata/order-abc-3.6.2.txt")
	if err != nil {
		t.Fatal(err)
	}
	base := string(raw)
	// replaceLine swaps line n (1-based) of the golden text.
	replaceLine := func(n int, with string) string {
		ls := strings.Split(base, "\n")
		ls[n-1] = with
		return strings.Join(ls, "\n")
	}
	cases := []struct {
		name string
		text string
		line int
		msg  string
	}{
		{"empty", "", 1, "no \"Topologies:\" header"},
		{"not a topology", "hello\nworld\n", 3, "no \"Topologies:\" header"},
		{"header only", "Topologies:\n", 2, "no sub-topologies"},
		{"garbage line", replaceLine(7, "    Processr: X (stores: [])"), 7, "unrecognised line"},
		{"source without topics", replaceLine(3, "    Source: KSTREAM-SOURCE-0000000000"), 3, "malformed source"},
		{"processor without stores", replaceLine(5, "    Processor: KSTREAM-KEY-SELECT-0000000001"), 5, "malformed processor"},
		{"stores not a list", replaceLine(5, "    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: x)"), 5, "are not a [list]"},
		{"sink without topic", replaceLine(11, "    Sink: KSTREAM-SINK-0000000004 (topic: )"), 11, "empty topic"},
		{"bad sub-topology", replaceLine(2, "   Sub-topology: zero"), 2, "malformed sub-topology header"},
		{"arrow first", "Topologies:\n  Sub-topology: 0\n  --> X\n", 3, "does not follow a node"},
		{"node before block", "Topologies:\n  Source: S (topics: [t])\n", 2, "before any \"Sub-topology:\""},
		{"sink successor", strings.Replace(base, "      <-- KSTREAM-FILTER-0000000005\n\n", "      <-- KSTREAM-FILTER-0000000005\n      --> X\n\n", 1), 13, "sink KSTREAM-SINK-0000000004 cannot have successors"},
		{"unknown successor", replaceLine(4, "      --> KSTREAM-KEY-SELECT-0000000099"), 3, "successor KSTREAM-KEY-SELECT-0000000099 is not in sub-topology 0"},
		{"one-sided edge", replaceLine(7, "      <-- none"), 5, "does not list KSTREAM-SOURCE-0000000000 as a predecessor"},
		{"duplicate node", replaceLine(8, "    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])"), 8, "already defined at line 5"},
		{"trailing log line", base + "2026-11-29 INFO started\n", 78, "unrecognised line"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTopology(strings.NewReader(tc.text))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v, want a *ParseError", err)
			}
			if pe.Line != tc.line || !strings.Contains(pe.Msg, tc.msg) {
				t.Fatalf("got %q, want line %d containing %q", pe.Error(), tc.line, tc.msg)
			}
		})
	}
}

func TestParseOtherForms(t *testing.T) {
	// Older releases print pattern sources as "topicPattern"; sinks with a
	// TopicNameExtractor print "extractor class". Input a is grouped
	// without repartitioning.
	text := "Topologies:\r\n" +
		"   Sub-topology: 0\r\n" +
		"    Source: src-a (topicPattern: topic-a.*)\r\n" +
		"      --> reduce-a\r\n" +
		"    Processor: reduce-a (stores: [store-a])\r\n" +
		"      --> to-stream\r\n" +
		"      <-- src-a\r\n" +
		"    Processor: to-stream (stores: [])\r\n" +
		"      --> sink-out, sink-dyn\r\n" +
		"      <-- reduce-a\r\n" +
		"    Sink: sink-out (topic: joined)\r\n" +
		"      <-- to-stream\r\n" +
		"    Sink: sink-dyn (extractor class: com.example.Router@1b2c3d)\r\n" +
		"      <-- to-stream\r\n"
	top, err := ParseTopology(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	src, _ := top.Node("src-a")
	dyn, _ := top.Node("sink-dyn")
	if src.Pattern != "topic-a.*" || dyn.Extractor != "com.example.Router@1b2c3d" || dyn.Topics != nil {
		t.Fatalf("source %+v, sink %+v", src, dyn)
	}
	_, _, err = top.Stages("app", []string{"topic-a1"}, "joined")
	if err == nil || !strings.Contains(err.Error(), "line 13: sink sink-dyn chooses its topic dynamically") {
		t.Fatalf("error %v, want the dynamic sink named", err)
	}
	// Without the dynamic sink: no repartition topic, store-a, output joined.
	plain := strings.Replace(strings.Replace(text, "      --> sink-out, sink-dyn\r\n", "      --> sink-out\r\n", 1),
		"    Sink: sink-dyn (extractor class: com.example.Router@1b2c3d)\r\n      <-- to-stream\r\n", "", 1)
	top, err = ParseTopology(strings.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	st, out, err := top.Stages("app", []string{"topic-a1"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if out != "joined" || st[0].Store != "store-a" || st[0].RepartitionTopic != "" || st[0].Reducer != "reduce-a" {
		t.Fatalf("stages %+v output %q", st, out)
	}
	// topic-b is not matched by the pattern.
	if _, _, err := top.Stages("app", []string{"topic-b"}, "joined"); err == nil || !strings.Contains(err.Error(), "input topic topic-b is not read by any source of the topology (sources read: pattern topic-a.*)") {
		t.Fatalf("error %v", err)
	}
}
