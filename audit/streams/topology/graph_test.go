package topology

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestGraph(t *testing.T) {
	abc := abcInputs()
	abc[0].Rekey = "customer.id"
	one := []InputSpec{{Name: "a", Topic: "topicA", Store: "s", RepartitionTopic: "app-s-repartition"}}
	// What the topology file gives for groupByKey().reduce() without a
	// key change: no repartition topic.
	noRepart := &Model{ApplicationID: "app", Output: "out", OutputOrigin: FromConfig, Stages: []Stage{{
		Input: InputSpec{Name: "a", Topic: "topicA"}, Store: "s", ChangelogTopic: "app-s-changelog",
		Origins: Origins{FromTopology, FromTopology, FromTopology}}}}
	cases := []struct {
		name   string
		spec   Spec
		model  *Model   // instead of spec
		stages []string // id kind rule
		edges  []string // from>to via key card ts
	}{
		{
			name: "three inputs joined left (today's family)", spec: cfgWith("testdata/order-abc-3.6.2.txt", "joined", abc...),
			stages: []string{
				"source:a source candidates", "link:a link tail-pending", "table:a table table-max",
				"source:b source candidates", "link:b link tail-pending", "table:b table table-max",
				"source:c source candidates", "link:c link tail-pending", "table:c table table-max",
				"output output output-left-join",
			},
			edges: []string{
				"source:a>link:a selectKey field at-most-1 kept", "link:a>table:a reduce identity coalesced max", "table:a>output leftJoin (left side) identity coalesced max",
				"source:b>link:b selectKey record key at-most-1 kept", "link:b>table:b reduce identity coalesced max", "table:b>output leftJoin (right side) identity coalesced max",
				"source:c>link:c selectKey record key at-most-1 kept", "link:c>table:c reduce identity coalesced max", "table:c>output leftJoin (right side) identity coalesced max",
			},
		},
		{
			name: "two inputs, inner join", spec: Spec{ApplicationID: "app", TopologyFile: "testdata/unsupported-inner-join-4.4.0.txt", Join: JoinInner, Reduce: ReducePlain,
				Inputs: []InputSpec{{Name: "a", Topic: "topicA"}, {Name: "b", Topic: "topicB"}}},
			stages: []string{"source:a source candidates", "link:a link tail-pending", "table:a table table-max",
				"source:b source candidates", "link:b link tail-pending", "table:b table table-max", "output output output-inner-join"},
			edges: []string{"source:a>link:a selectKey record key at-most-1 kept", "link:a>table:a reduce identity coalesced max", "table:a>output join (left side) identity coalesced max",
				"source:b>link:b selectKey record key at-most-1 kept", "link:b>table:b reduce identity coalesced max", "table:b>output join (right side) identity coalesced max"},
		},
		{
			name: "one input, no join", spec: Spec{ApplicationID: "app", Output: "out", Reduce: ReducePlain, Inputs: one},
			stages: []string{"source:a source candidates", "link:a link tail-pending", "table:a table table-max", "output output output-to-stream"},
			edges:  []string{"source:a>link:a selectKey record key at-most-1 kept", "link:a>table:a reduce identity coalesced max", "table:a>output toStream identity coalesced max"},
		},
		{
			name: "a count by a new key, then mapValues", spec: Spec{ApplicationID: "app", TopologyFile: "testdata/unsupported-count-4.4.0.txt", Reduce: ReducePlain,
				Inputs: []InputSpec{{Name: "a", Topic: "topicA", Rekey: "word"}}, Nodes: []NodeDecl{{"KSTREAM-AGGREGATE-0000000003", "count"}}},
			stages: []string{"source:a source candidates", "link:a link tail-pending", "table:a table table-max+count", "output output output-to-stream"},
			edges: []string{"source:a>link:a selectKey field at-most-1 kept", "link:a>table:a count identity coalesced max",
				"table:a>output toStream identity coalesced max"},
		},
		{
			name: "no repartition topic", model: noRepart,
			stages: []string{"source:a source candidates", "table:a table table-max", "output output output-to-stream"},
			edges:  []string{"source:a>table:a groupByKey -> reduce record key coalesced max", "table:a>output toStream identity coalesced max"},
		},
	}
	cards := map[Cardinality]string{One: "1", AtMostOne: "at-most-1", PerKey: "coalesced"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model
			if m == nil {
				var err error
				m, err = Build(context.Background(), tc.spec, &fakeLister{topics: []string{"app-s-changelog"}})
				if err != nil {
					t.Fatal(err)
				}
			}
			g := m.Graph()
			var stages, edges []string
			for _, s := range g.Stages {
				stages = append(stages, strings.Join([]string{s.ID, string(s.Kind), string(s.Rule)}, " "))
				if s.Rule.Describe() == "" {
					t.Errorf("stage %s: rule %s has no description", s.ID, s.Rule)
				}
			}
			for _, e := range g.Edges {
				edges = append(edges, strings.Join([]string{e.From + ">" + e.To, e.Via, string(e.Key), cards[e.Card], string(e.TS)}, " "))
			}
			if strings.Join(stages, "\n") != strings.Join(tc.stages, "\n") {
				t.Errorf("stages\n%s\nwant\n%s", strings.Join(stages, "\n"), strings.Join(tc.stages, "\n"))
			}
			if strings.Join(edges, "\n") != strings.Join(tc.edges, "\n") {
				t.Errorf("edges\n%s\nwant\n%s", strings.Join(edges, "\n"), strings.Join(tc.edges, "\n"))
			}
			var out bytes.Buffer
			if err := g.Write(&out, nil); err != nil {
				t.Fatal(err)
			}
			for _, s := range g.Stages {
				if !strings.Contains(out.String(), s.Topic) || !strings.Contains(out.String(), "rule "+string(s.Rule)+": ") {
					t.Errorf("printed graph lacks stage %s:\n%s", s.ID, out.String())
				}
			}
		})
	}
}
