package topology

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// abcGroup is the streams group topology of order-abc run as "app": three
// subtopologies re-key the inputs into repartition topics, the fourth
// reads them into the three reduces. rp and cl name the repartition topic
// and changelog of each input (by store).
func abcGroup(rpA, rpB, rpC, clA, clB, clC string) *GroupTopology {
	return &GroupTopology{Group: "app", Epoch: 1, Subtopologies: []GroupSubtopology{
		{ID: "0", SourceTopics: []string{"topicA"}, RepartitionSinkTopics: []string{rpA}},
		{ID: "1", RepartitionSourceTopics: []string{rpA, rpB, rpC}, ChangelogTopics: []string{clA, clB, clC}},
		{ID: "2", SourceTopics: []string{"topicB"}, RepartitionSinkTopics: []string{rpB}},
		{ID: "3", SourceTopics: []string{"topicC"}, RepartitionSinkTopics: []string{rpC}},
	}}
}

func TestBuildFromGroup(t *testing.T) {
	cl := func(s string) string { return "app-" + s + "-changelog" }
	rp := func(s string) string { return "app-" + s + "-repartition" }
	seeded := abcGroup(rp(st02), rp(st09), rp(st16), cl(st02), cl(st09), cl(st16))
	// The order-cab application: the same inputs, other numbers.
	cab := abcGroup(rp(st09), rp(st16), rp(st02), cl(st09), cl(st16), cl(st02))
	// A: Grouped.as("ga"), the store keeps its generated name; C's store
	// is logged under another name than its repartition topic.
	named := abcGroup(rp("ga"), rp(st09), rp(st16), cl(st02), cl(st09), cl("other"))
	noC := abcGroup(rp(st02), rp(st09), rp(st16), cl(st02), cl(st09), cl(st16))
	noC.Subtopologies = noC.Subtopologies[:3]
	// C read by a pattern: its subtopology lists no source topic.
	patternC := abcGroup(rp(st02), rp(st09), rp(st16), cl(st02), cl(st09), cl(st16))
	patternC.Subtopologies[3].SourceTopics = nil
	topics := []string{"topicA", "topicB", "topicC", "joined", rp(st02), cl(st02), rp(st09), cl(st09), rp(st16), cl(st16), rp("ga"), cl("other")}
	schemas := map[string][]string{"topicA": {cl(st02)}, "topicB": {cl(st09)}, "topicC": {cl(st16), cl("other")}}
	fromGroup := Origins{FromGroup, FromChangelog, FromGroup}
	fromFile := Origins{FromTopology, FromTopology, FromTopology}

	cases := []struct {
		name    string
		file    string
		group   *GroupTopology
		groupEr error
		inputs  func([]InputSpec)
		// want, per input: repartition topic, changelog and origins.
		rp, cl  [3]string
		origins [3]Origins
		// listed: discovery listed the topics.
		listed   bool
		warning  string
		key, msg string // an *Error
	}{
		{name: "names from the group", group: seeded,
			rp: [3]string{rp(st02), rp(st09), rp(st16)}, cl: [3]string{cl(st02), cl(st09), cl(st16)},
			origins: [3]Origins{fromGroup, fromGroup, fromGroup}},
		{name: "file agrees with the group", file: "testdata/order-abc-4.4.0.txt", group: seeded,
			rp: [3]string{rp(st02), rp(st09), rp(st16)}, cl: [3]string{cl(st02), cl(st09), cl(st16)},
			origins: [3]Origins{fromFile, fromFile, fromFile}},
		{name: "file of another application", file: "testdata/order-abc-4.4.0.txt", group: cab,
			key: "pipeline.topology_file", msg: `input a (topic topicA): testdata/order-abc-4.4.0.txt gives the repartition topic "app-` + st02 + `-repartition", but streams group app (topology epoch 1) gives "app-` + st09 + `-repartition"`},
		{name: "file's changelog unknown to the group", file: "testdata/order-abc-4.4.0.txt", group: abcGroup(rp(st02), rp(st09), rp(st16), cl(st02), cl(st09), cl("other")),
			key: "pipeline.topology_file", msg: `input c (topic topicC): testdata/order-abc-4.4.0.txt gives the changelog topic "app-` + st16 + `-changelog", but streams group app (topology epoch 1) has no such changelog topic`},
		{name: "input the group does not read", group: noC,
			key: "pipeline.inputs[2].topic", msg: `input c: streams group app (topology epoch 1) reads no topic "topicC" (its source topics: topicA, topicB)`},
		{name: "an input read by a pattern: by discovery", group: patternC, listed: true,
			inputs: func(in []InputSpec) { in[2].ChangelogTopic = cl(st16) },
			rp:     [3]string{rp(st02), rp(st09), rp(st16)}, cl: [3]string{cl(st02), cl(st09), cl(st16)},
			origins: [3]Origins{fromGroup, fromGroup, {FromDiscovery, FromChangelog, FromOverride}},
			warning: `input c: no subtopology of streams group app (topology epoch 1) lists topic "topicC", and one lists no source topic (subscribed by pattern?): no names taken from the group for it or checked against it`},
		{name: "Grouped.as and another store name: the rest by discovery", group: named, listed: true,
			rp: [3]string{rp("ga"), rp(st09), rp(st16)}, cl: [3]string{cl(st02), cl(st09), ""},
			key: "pipeline.inputs[2].changelog_topic", msg: "2 changelog topics match it"},
		{name: "Grouped.as: the changelog by discovery", group: named, listed: true,
			inputs: func(in []InputSpec) { in[2].ChangelogTopic = cl("other") },
			rp:     [3]string{rp("ga"), rp(st09), rp(st16)}, cl: [3]string{cl(st02), cl(st09), cl("other")},
			origins: [3]Origins{{FromGroup, FromChangelog, FromDiscovery}, fromGroup, {FromGroup, FromChangelog, FromOverride}}},
		{name: "an override differs from the group", group: seeded,
			inputs: func(in []InputSpec) { in[1].RepartitionTopic = "custom" },
			rp:     [3]string{rp(st02), "custom", rp(st16)}, cl: [3]string{cl(st02), cl(st09), cl(st16)},
			origins: [3]Origins{fromGroup, {FromOverride, FromChangelog, FromGroup}, fromGroup},
			warning: `pipeline.inputs[1].repartition_topic "custom" overrides "app-` + st09 + `-repartition" of streams group app (topology epoch 1)`},
		{name: "not a streams group: discovery", listed: true,
			rp: [3]string{rp(st02), rp(st09), rp(st16)}, cl: [3]string{cl(st02), cl(st09), cl(st16)},
			inputs:  func(in []InputSpec) { in[2].ChangelogTopic = cl(st16) },
			origins: [3]Origins{{FromDiscovery, FromChangelog, FromDiscovery}, {FromDiscovery, FromChangelog, FromDiscovery}, {FromDiscovery, FromChangelog, FromOverride}}},
		{name: "the group cannot be described: discovery, and a warning", groupEr: errors.New("GROUP_AUTHORIZATION_FAILED"), listed: true,
			rp: [3]string{rp(st02), rp(st09), rp(st16)}, cl: [3]string{cl(st02), cl(st09), cl(st16)},
			inputs:  func(in []InputSpec) { in[2].ChangelogTopic = cl(st16) },
			origins: [3]Origins{{FromDiscovery, FromChangelog, FromDiscovery}, {FromDiscovery, FromChangelog, FromDiscovery}, {FromDiscovery, FromChangelog, FromOverride}},
			warning: "the streams group app could not be described (GROUP_AUTHORIZATION_FAILED): no names were taken from it or checked against it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := abcInputs()
			if tc.inputs != nil {
				tc.inputs(in)
			}
			l := &fakeLister{topics: topics}
			asked := 0
			src := func(_ context.Context, app string) (*GroupTopology, error) {
				asked++
				if app != "app" {
					t.Errorf("group %q described, want app", app)
				}
				return tc.group, tc.groupEr
			}
			m, err := Build(context.Background(), cfgWith(tc.file, "joined", in...), l, WithMatcher(schemaMatcher(schemas)), WithGroup(src))
			if asked != 1 {
				t.Errorf("group described %d times, want once", asked)
			}
			if tc.key != "" {
				wantConfigError(t, err, tc.key, tc.msg)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range m.Stages {
				if s.RepartitionTopic != tc.rp[i] || s.ChangelogTopic != tc.cl[i] || s.Origins != tc.origins[i] {
					t.Errorf("input %s: %s (%s), %s (%s), store from %s; want %s, %s, %+v", s.Input.Name, s.RepartitionTopic, s.Origins.RepartitionTopic,
						s.ChangelogTopic, s.Origins.ChangelogTopic, s.Origins.Store, tc.rp[i], tc.cl[i], tc.origins[i])
				}
				if want := strings.TrimSuffix(strings.TrimPrefix(tc.cl[i], "app-"), "-changelog"); tc.file == "" && s.Store != want {
					t.Errorf("input %s: store %s, want %s", s.Input.Name, s.Store, want)
				}
			}
			if (l.calls > 0) != tc.listed {
				t.Errorf("topics listed %d times, want listed %v", l.calls, tc.listed)
			}
			if got := strings.Join(m.Warnings, "\n"); got != tc.warning {
				t.Errorf("warnings %q, want %q", got, tc.warning)
			}
			if (m.Group != nil) != (tc.group != nil) {
				t.Errorf("model's group %v, want %v", m.Group, tc.group)
			}
		})
	}
}
