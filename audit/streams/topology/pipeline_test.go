package topology

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func cfgWith(topologyFile, output string, inputs ...InputSpec) Spec {
	return Spec{ApplicationID: "app", TopologyFile: topologyFile, Output: output, Inputs: inputs, Join: JoinLeft, Reduce: ReducePlain}
}

func abcInputs() []InputSpec {
	return []InputSpec{{Name: "a", Topic: "topicA"}, {Name: "b", Topic: "topicB"}, {Name: "c", Topic: "topicC"}}
}

func wantConfigError(t *testing.T, err error, key, msg string) {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error %v, want *Error for %s", err, key)
	}
	if ce.Key != key || !strings.Contains(ce.Msg, msg) {
		t.Fatalf("got %q, want key %s and message containing %q", ce.Error(), key, msg)
	}
}

func TestBuildFromTopologyFile(t *testing.T) {
	for _, v := range versions {
		for _, tc := range variants {
			file := filepath.Join("testdata", tc.file+"-"+v+".txt")
			t.Run(tc.file+"-"+v, func(t *testing.T) {
				m, err := Build(context.Background(), cfgWith(file, "joined", abcInputs()...), nil)
				if err != nil {
					t.Fatal(err)
				}
				if m.Output != "joined" || m.OutputOrigin != FromConfig || len(m.Stages) != 3 || len(m.Warnings) != 0 {
					t.Fatalf("model %+v", m)
				}
				for i, w := range tc.stages {
					s := m.Stages[i]
					if s.Index != i || s.Input.Name != abcInputs()[i].Name {
						t.Errorf("stage %d is input %d %s", i, s.Index, s.Input.Name)
					}
					if s.RepartitionTopic != "app-"+w.repartition || s.Store != w.store || s.ChangelogTopic != "app-"+w.store+"-changelog" {
						t.Errorf("stage %d: %s / %s / %s, want app-%s / %s / app-%s-changelog", i, s.RepartitionTopic, s.Store, s.ChangelogTopic, w.repartition, w.store, w.store)
					}
					if s.Origins != (Origins{FromTopology, FromTopology, FromTopology}) {
						t.Errorf("stage %d origins %+v", i, s.Origins)
					}
				}
			})
		}
	}
	// pipeline.output left empty: the topology names it.
	m, err := Build(context.Background(), cfgWith("testdata/named-3.6.2.txt", "", abcInputs()...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Output != "joined" || m.OutputOrigin != FromTopology {
		t.Errorf("output %q from %q", m.Output, m.OutputOrigin)
	}
}

func TestBuildTopologyErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	raw, err := os.ReadFile("testdata/order-abc-3.6.2.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.Replace(string(raw), "Sink: KSTREAM-SINK-0000000028 (topic: joined)", "Sink: KSTREAM-SINK-0000000028 topic joined", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		cfg  Spec
		key  string
		msg  string
	}{
		{"missing file", cfgWith(filepath.Join(dir, "nope.txt"), "joined", abcInputs()...), "pipeline.topology_file", "cannot read"},
		{"malformed", cfgWith(bad, "joined", abcInputs()...), "pipeline.topology_file", "bad.txt: line 51: malformed sink"},
		{"wrong output", cfgWith("testdata/order-abc-3.6.2.txt", "other", abcInputs()...), "pipeline.output", `is "other", but in testdata/order-abc-3.6.2.txt the inputs are joined into topic "joined"`},
		{"unknown input", cfgWith("testdata/order-abc-3.6.2.txt", "joined", InputSpec{Name: "x", Topic: "topicX"}), "pipeline.topology_file", "input topic topicX is not read by any source"},
		{"shared store via pattern", cfgWith("testdata/pattern-global-3.6.2.txt", "joined", InputSpec{Name: "a", Topic: "topicA"}, InputSpec{Name: "b", Topic: "topicB"}), "pipeline.topology_file", "input topics topicA and topicB reach the same reduce KSTREAM-REDUCE-0000000003"},
		{"no app", Spec{Output: "joined", Inputs: abcInputs(), Join: JoinLeft, Reduce: ReducePlain}, "pipeline.application_id", "is empty"},
		{"no inputs", cfgWith("", "joined"), "pipeline.inputs", "no inputs"},
		{"no output", cfgWith("", "", abcInputs()...), "pipeline.output", "is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(context.Background(), tc.cfg, nil)
			wantConfigError(t, err, tc.key, tc.msg)
		})
	}
}

func TestBuildOverrides(t *testing.T) {
	ins := abcInputs()
	ins[0].Store = "my-store"                // changelog follows the store
	ins[1].ChangelogTopic = "custom-b-clog"  // only the changelog
	ins[2].RepartitionTopic = "custom-c-rep" // only the repartition topic
	m, err := Build(context.Background(), cfgWith("testdata/order-abc-3.6.2.txt", "joined", ins...), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Stage{
		{RepartitionTopic: "app-" + st02 + "-repartition", Store: "my-store", ChangelogTopic: "app-my-store-changelog", Origins: Origins{FromTopology, FromOverride, FromStore}},
		{RepartitionTopic: "app-" + st09 + "-repartition", Store: st09, ChangelogTopic: "custom-b-clog", Origins: Origins{FromTopology, FromTopology, FromOverride}},
		{RepartitionTopic: "custom-c-rep", Store: st16, ChangelogTopic: "app-" + st16 + "-changelog", Origins: Origins{FromOverride, FromTopology, FromTopology}},
	}
	for i, w := range want {
		s := m.Stages[i]
		if s.RepartitionTopic != w.RepartitionTopic || s.Store != w.Store || s.ChangelogTopic != w.ChangelogTopic || s.Origins != w.Origins {
			t.Errorf("stage %d = %+v, want %+v", i, s, w)
		}
	}
	if len(m.Warnings) != 2 || !strings.Contains(m.Warnings[0], `pipeline.inputs[0].store "my-store" overrides store "`+st02+`"`) || !strings.Contains(m.Warnings[1], `pipeline.inputs[2].repartition_topic "custom-c-rep" overrides`) {
		t.Errorf("warnings %q", m.Warnings)
	}

	// Everything overridden: no topology file and no lister needed.
	full := abcInputs()
	for i := range full {
		full[i].Store = fmt.Sprintf("s%d", i)
		full[i].RepartitionTopic = fmt.Sprintf("app-r%d", i)
	}
	m, err = Build(context.Background(), cfgWith("", "joined", full...), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := m.Stages[2]; s.Store != "s2" || s.RepartitionTopic != "app-r2" || s.ChangelogTopic != "app-s2-changelog" || s.Origins != (Origins{FromOverride, FromOverride, FromStore}) {
		t.Errorf("stage 2 = %+v", s)
	}

	// Partly overridden, nothing to discover with: names the missing key.
	full[1].RepartitionTopic = ""
	_, err = Build(context.Background(), cfgWith("", "joined", full...), nil)
	wantConfigError(t, err, "pipeline.inputs[1].repartition_topic", "set pipeline.topology_file or this override")

	// Two inputs overriding the same changelog.
	dup := abcInputs()
	dup[0].ChangelogTopic, dup[2].ChangelogTopic = "same", "same"
	_, err = Build(context.Background(), cfgWith("testdata/order-abc-3.6.2.txt", "joined", dup...), nil)
	wantConfigError(t, err, "pipeline.inputs[2].changelog_topic", `"same" is also pipeline.inputs[0].changelog_topic`)

	// A derived topic equal to the output.
	out := abcInputs()
	out[1].RepartitionTopic = "joined"
	_, err = Build(context.Background(), cfgWith("testdata/order-abc-3.6.2.txt", "joined", out...), nil)
	wantConfigError(t, err, "pipeline.inputs[1].repartition_topic", `"joined" is also pipeline.output`)
}

type fakeLister struct {
	topics []string
	err    error
	calls  int
}

func (f *fakeLister) Topics(context.Context) ([]string, error) {
	f.calls++
	return f.topics, f.err
}

// schemaMatcher pretends that the values of an input topic and of the
// changelogs listed for it share an Avro schema.
func schemaMatcher(same map[string][]string) Matcher {
	return func(_ context.Context, input, changelog string) (bool, error) {
		for _, c := range same[input] {
			if c == changelog {
				return true, nil
			}
		}
		return false, nil
	}
}

func TestBuildDiscovery(t *testing.T) {
	cl := func(s string) string { return "app-" + s + "-changelog" }
	rp := func(s string) string { return "app-" + s + "-repartition" }
	// A cluster running the "named" variant (A: Grouped.as("ga"); B:
	// Materialized.as("store-b"); C: both), plus noise that must be ignored.
	cluster := []string{
		"topicA", "topicB", "topicC", "joined", "__consumer_offsets",
		rp("ga"), cl(st02), rp("store-b"), cl("store-b"), rp("gc"), cl("store-c"),
		"app-other", "appx-" + st09 + "-changelog", "other-app-s-changelog",
	}
	seeded := []string{"topicA", "topicB", "topicC", "joined", rp(st02), cl(st02), rp(st09), cl(st09), rp(st16), cl(st16), "app-KTABLE-JOINTHIS-0000000022-store-changelog"}
	seededSchemas := map[string][]string{"topicA": {cl(st02)}, "topicB": {cl(st09)}, "topicC": {cl(st16)}}

	t.Run("unambiguous", func(t *testing.T) {
		l := &fakeLister{topics: seeded}
		m, err := Build(context.Background(), cfgWith("", "joined", abcInputs()...), l, WithMatcher(schemaMatcher(seededSchemas)))
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range []string{st02, st09, st16} {
			g := m.Stages[i]
			if g.Store != s || g.ChangelogTopic != cl(s) || g.RepartitionTopic != rp(s) || g.Origins != (Origins{FromDiscovery, FromChangelog, FromDiscovery}) {
				t.Errorf("stage %d = %+v", i, g)
			}
		}
		if l.calls != 1 {
			t.Errorf("listed topics %d times", l.calls)
		}
	})
	t.Run("grouped name needs repartition override", func(t *testing.T) {
		same := map[string][]string{"topicA": {cl(st02)}, "topicB": {cl("store-b")}, "topicC": {cl("store-c")}}
		_, err := Build(context.Background(), cfgWith("", "joined", abcInputs()...), &fakeLister{topics: cluster}, WithMatcher(schemaMatcher(same)))
		wantConfigError(t, err, "pipeline.inputs[0].repartition_topic", "topic app-"+st02+"-repartition does not exist (a Grouped.as name renames it)")
		ins := abcInputs()
		ins[0].RepartitionTopic, ins[2].RepartitionTopic = rp("ga"), rp("gc")
		m, err := Build(context.Background(), cfgWith("", "joined", ins...), &fakeLister{topics: cluster}, WithMatcher(schemaMatcher(same)))
		if err != nil {
			t.Fatal(err)
		}
		got := []string{m.Stages[0].Store, m.Stages[1].RepartitionTopic, m.Stages[1].ChangelogTopic, m.Stages[2].ChangelogTopic, m.Stages[2].RepartitionTopic}
		if strings.Join(got, " ") != strings.Join([]string{st02, rp("store-b"), cl("store-b"), cl("store-c"), rp("gc")}, " ") {
			t.Errorf("got %q", got)
		}
		if m.Stages[0].Origins != (Origins{FromOverride, FromChangelog, FromDiscovery}) {
			t.Errorf("origins %+v", m.Stages[0].Origins)
		}
	})
	t.Run("ambiguous", func(t *testing.T) {
		same := map[string][]string{"topicA": {cl(st02)}, "topicB": {cl(st09), cl(st16)}, "topicC": {cl(st16)}}
		_, err := Build(context.Background(), cfgWith("", "joined", abcInputs()...), &fakeLister{topics: seeded}, WithMatcher(schemaMatcher(same)))
		wantConfigError(t, err, "pipeline.inputs[1].changelog_topic", "input b (topic topicB): 2 changelog topics match it ("+cl(st09)+", "+cl(st16)+")")
	})
	t.Run("one changelog for two inputs", func(t *testing.T) {
		same := map[string][]string{"topicA": {cl(st02)}, "topicB": {cl(st09)}, "topicC": {cl(st09)}}
		_, err := Build(context.Background(), cfgWith("", "joined", abcInputs()...), &fakeLister{topics: seeded}, WithMatcher(schemaMatcher(same)))
		wantConfigError(t, err, "pipeline.inputs[1].changelog_topic", "changelog "+cl(st09)+" matches inputs b, c alike")
	})
	t.Run("ambiguity resolved by override", func(t *testing.T) {
		same := map[string][]string{"topicA": {cl(st02)}, "topicB": {cl(st09), cl(st16)}, "topicC": {cl(st16)}}
		ins := abcInputs()
		ins[2].ChangelogTopic = cl(st16) // claimed: no longer a candidate for b
		m, err := Build(context.Background(), cfgWith("", "joined", ins...), &fakeLister{topics: seeded}, WithMatcher(schemaMatcher(same)))
		if err != nil {
			t.Fatal(err)
		}
		if m.Stages[1].ChangelogTopic != cl(st09) || m.Stages[2].Store != st16 || m.Stages[2].Origins != (Origins{FromDiscovery, FromChangelog, FromOverride}) {
			t.Errorf("stages %+v", m.Stages)
		}
	})
	t.Run("none", func(t *testing.T) {
		same := map[string][]string{"topicA": {cl(st02)}, "topicB": {cl(st09)}}
		_, err := Build(context.Background(), cfgWith("", "joined", abcInputs()...), &fakeLister{topics: seeded}, WithMatcher(schemaMatcher(same)))
		wantConfigError(t, err, "pipeline.inputs[2].changelog_topic", "input c (topic topicC): none of the changelog topics of app matches it (candidates: app-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog,")
	})
	t.Run("no matcher", func(t *testing.T) {
		_, err := Build(context.Background(), cfgWith("", "joined", abcInputs()...), &fakeLister{topics: seeded})
		wantConfigError(t, err, "pipeline.inputs[0].changelog_topic", "no evidence to pick its changelog")
	})
	t.Run("no matcher needed when changelogs are known", func(t *testing.T) {
		ins := abcInputs()
		for i, s := range []string{st02, st09, st16} {
			ins[i].ChangelogTopic = cl(s)
		}
		m, err := Build(context.Background(), cfgWith("", "joined", ins...), &fakeLister{topics: seeded})
		if err != nil {
			t.Fatal(err)
		}
		if g := m.Stages[1]; g.Store != st09 || g.RepartitionTopic != rp(st09) || g.Origins != (Origins{FromDiscovery, FromChangelog, FromOverride}) {
			t.Errorf("stage 1 = %+v", g)
		}
	})
	t.Run("lister fails", func(t *testing.T) {
		boom := errors.New("broker down")
		_, err := Build(context.Background(), cfgWith("", "joined", abcInputs()...), &fakeLister{err: boom}, WithMatcher(schemaMatcher(seededSchemas)))
		var ce *Error
		if !errors.Is(err, boom) || errors.As(err, &ce) {
			t.Fatalf("error %v: want the lister's error wrapped, not a config error", err)
		}
	})
	t.Run("matcher fails", func(t *testing.T) {
		boom := errors.New("registry down")
		_, err := Build(context.Background(), cfgWith("", "joined", abcInputs()...), &fakeLister{topics: seeded}, WithMatcher(func(context.Context, string, string) (bool, error) { return false, boom }))
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), "matching input topic topicA against changelog") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("topology file wins over discovery", func(t *testing.T) {
		l := &fakeLister{topics: seeded}
		m, err := Build(context.Background(), cfgWith("testdata/order-cab-3.6.2.txt", "joined", abcInputs()...), l, WithMatcher(schemaMatcher(seededSchemas)))
		if err != nil {
			t.Fatal(err)
		}
		if l.calls != 0 || m.Stages[0].Store != st09 {
			t.Errorf("lister called %d times; stage 0 store %s", l.calls, m.Stages[0].Store)
		}
	})
}

func TestBuildWithoutRepartition(t *testing.T) {
	// An input already keyed by the selected key: groupByKey without
	// selectKey, so no repartition topic.
	text := `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [topicA])
      --> KSTREAM-REDUCE-0000000002
    Processor: KSTREAM-REDUCE-0000000002 (stores: [KSTREAM-REDUCE-STATE-STORE-0000000001])
      --> KTABLE-TOSTREAM-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-REDUCE-0000000002
    Sink: KSTREAM-SINK-0000000004 (topic: joined)
      <-- KTABLE-TOSTREAM-0000000003
`
	file := filepath.Join(t.TempDir(), "topology.txt")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Build(context.Background(), cfgWith(file, "joined", InputSpec{Name: "a", Topic: "topicA"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Stages[0]
	if s.RepartitionTopic != "" || s.Origins.RepartitionTopic != FromTopology || s.Store != "KSTREAM-REDUCE-STATE-STORE-0000000001" || s.ChangelogTopic != "app-KSTREAM-REDUCE-STATE-STORE-0000000001-changelog" {
		t.Fatalf("stage %+v", s)
	}
	if len(m.Warnings) != 1 || !strings.Contains(m.Warnings[0], "input a (topic topicA) reaches store KSTREAM-REDUCE-STATE-STORE-0000000001 without a repartition topic") {
		t.Errorf("warnings %q", m.Warnings)
	}
}
