package topology

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FromGroup: read from the application's streams group (KIP-1071), the
// topology its members sent to the group coordinator
// (StreamsGroupDescribe).
const FromGroup Origin = "streams group"

// GroupTopology is the topology a streams group's coordinator holds: per
// subtopology, the topics it reads and writes, with full names. It gives
// names, never operator kinds: which node writes a store, and whether a
// reduce is windowed, are not in it.
type GroupTopology struct {
	// Group is the group id (the application.id).
	Group string
	// Epoch is the topology's epoch.
	Epoch int32
	// Subtopologies are the topology's connected parts.
	Subtopologies []GroupSubtopology
}

// GroupSubtopology is one subtopology of a GroupTopology.
type GroupSubtopology struct {
	ID string
	// SourceTopics are the user topics it reads.
	SourceTopics []string
	// RepartitionSourceTopics are the repartition topics it reads.
	RepartitionSourceTopics []string
	// RepartitionSinkTopics are the repartition topics it writes.
	RepartitionSinkTopics []string
	// ChangelogTopics are the changelogs of its stores.
	ChangelogTopics []string
}

// GroupSource describes the application's streams group: its topology, or
// nil when the group is no streams group or has no topology (the
// application runs the classic protocol, the brokers predate Kafka 4.x).
type GroupSource func(ctx context.Context, applicationID string) (*GroupTopology, error)

// WithGroup takes names from the application's streams group: where
// neither an override nor the topology file gives them, before discovery;
// with a topology file, the file's names are checked against it.
func WithGroup(src GroupSource) Option {
	return func(o *options) { o.group = src }
}

// groupNames is what the group decides for one input: the repartition
// topic and changelog its topology shows, "" where it does not decide.
type groupNames struct {
	readers                int
	repartition, changelog string
}

// namesFor derives an input's names from the group's topology, taking
// only what the topology shows without doubt:
//   - the repartition topic: the one repartition topic written by the one
//     subtopology that reads the input topic;
//   - the changelog: in the one subtopology that reads that repartition
//     topic, the changelog <app>-X-changelog of repartition topic
//     <app>-X-repartition (Kafka Streams names a groupByKey's repartition
//     topic after its store, unless Grouped.as names it). A subtopology's
//     only changelog is not taken for the reduce's: the reduce's store may
//     be unlogged and that changelog another store's.
func (g *GroupTopology) namesFor(app, topic string) groupNames {
	var readers []GroupSubtopology
	for _, s := range g.Subtopologies {
		if slices.Contains(s.SourceTopics, topic) {
			readers = append(readers, s)
		}
	}
	out := groupNames{readers: len(readers)}
	if len(readers) != 1 || len(readers[0].RepartitionSinkTopics) != 1 {
		return out
	}
	out.repartition = readers[0].RepartitionSinkTopics[0]
	var consumers []GroupSubtopology
	for _, s := range g.Subtopologies {
		if slices.Contains(s.RepartitionSourceTopics, out.repartition) {
			consumers = append(consumers, s)
		}
	}
	base, ok := strings.CutPrefix(out.repartition, app+"-")
	base, ok2 := strings.CutSuffix(base, "-repartition")
	if len(consumers) == 1 && ok && ok2 && base != "" {
		if c := ChangelogName(app, base); slices.Contains(consumers[0].ChangelogTopics, c) {
			out.changelog = c
		}
	}
	return out
}

// topics returns the group's repartition topics and changelog topics.
func (g *GroupTopology) topics() (repartition, changelog map[string]bool) {
	repartition, changelog = map[string]bool{}, map[string]bool{}
	for _, s := range g.Subtopologies {
		for _, t := range s.RepartitionSinkTopics {
			repartition[t] = true
		}
		for _, t := range s.RepartitionSourceTopics {
			repartition[t] = true
		}
		for _, t := range s.ChangelogTopics {
			changelog[t] = true
		}
	}
	return repartition, changelog
}

// patternSubscribed reports whether a subtopology reads no listed topic:
// one that subscribes by pattern (StreamsGroupDescribe lists no
// pattern), whose topics the group cannot tell.
func (g *GroupTopology) patternSubscribed() bool {
	for _, s := range g.Subtopologies {
		if len(s.SourceTopics) == 0 && len(s.RepartitionSourceTopics) == 0 {
			return true
		}
	}
	return false
}

// sourceTopics lists the user topics the group reads.
func (g *GroupTopology) sourceTopics() []string {
	var out []string
	for _, s := range g.Subtopologies {
		for _, t := range s.SourceTopics {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out
}

// String names the group and its topology's epoch.
func (g *GroupTopology) String() string {
	return fmt.Sprintf("streams group %s (topology epoch %d)", g.Group, g.Epoch)
}

// fromGroup takes names from the streams group src describes: it fills
// what neither an override nor the topology file gave, checks the file's
// names against the group (a disagreement is an *Error naming the topic
// and both sources), and warns where an override differs from it. A group
// that cannot be described is a warning: nothing is taken from it or
// checked against it.
func (m *Model) fromGroup(ctx context.Context, p Spec, src GroupSource) error {
	g, err := src(ctx, m.ApplicationID)
	if err != nil {
		m.Warnings = append(m.Warnings, fmt.Sprintf("the streams group %s could not be described (%v): no names were taken from it or checked against it", m.ApplicationID, err))
		return nil
	}
	if g == nil {
		return nil
	}
	m.Group = g
	app := m.ApplicationID
	repartitions, changelogs := g.topics()
	fileErr := func(s *Stage, what, topic, group string) error {
		return &Error{Key: "pipeline.topology_file", Msg: fmt.Sprintf("input %s (topic %s): %s gives the %s topic %q, but %s %s: is the file the running application's topology, and pipeline.application_id its application.id?",
			s.Input.Name, s.Input.Topic, p.TopologyFile, what, topic, g, group)}
	}
	for i := range m.Stages {
		s := &m.Stages[i]
		name := fmt.Sprintf("pipeline.inputs[%d]", i)
		n := g.namesFor(app, s.Input.Topic)
		if n.readers == 0 && g.patternSubscribed() {
			m.Warnings = append(m.Warnings, fmt.Sprintf("input %s: no subtopology of %s lists topic %q, and one lists no source topic (subscribed by pattern?): no names taken from the group for it or checked against it", s.Input.Name, g, s.Input.Topic))
			continue
		}
		if n.readers == 0 {
			return &Error{Key: name + ".topic", Msg: fmt.Sprintf("input %s: %s reads no topic %q (its source topics: %s): is it the application's input, and pipeline.application_id its application.id?",
				s.Input.Name, g, s.Input.Topic, listOrNone(g.sourceTopics()))}
		}
		switch s.Origins.RepartitionTopic {
		case FromTopology:
			switch {
			case s.RepartitionTopic == "" && n.repartition != "":
				return &Error{Key: "pipeline.topology_file", Msg: fmt.Sprintf("input %s (topic %s): in %s it reaches its store without a repartition topic, but %s writes it to repartition topic %q: is the file the running application's topology?",
					s.Input.Name, s.Input.Topic, p.TopologyFile, g, n.repartition)}
			case s.RepartitionTopic != "" && !repartitions[s.RepartitionTopic]:
				return fileErr(s, "repartition", s.RepartitionTopic, "has no such repartition topic (its repartition topics: "+listOrNone(slices.Sorted(maps.Keys(repartitions)))+")")
			case n.repartition != "" && n.repartition != s.RepartitionTopic:
				return fileErr(s, "repartition", s.RepartitionTopic, fmt.Sprintf("gives %q", n.repartition))
			}
		case FromOverride:
			if n.repartition != "" && n.repartition != s.RepartitionTopic {
				m.Warnings = append(m.Warnings, fmt.Sprintf("%s.repartition_topic %q overrides %q of %s", name, s.RepartitionTopic, n.repartition, g))
			}
		case "":
			if n.repartition != "" {
				s.RepartitionTopic, s.Origins.RepartitionTopic = n.repartition, FromGroup
			}
		}
		switch s.Origins.ChangelogTopic {
		case FromTopology:
			switch {
			case !changelogs[s.ChangelogTopic]:
				return fileErr(s, "changelog", s.ChangelogTopic, "has no such changelog topic (its changelog topics: "+listOrNone(slices.Sorted(maps.Keys(changelogs)))+")")
			case n.changelog != "" && n.changelog != s.ChangelogTopic:
				return fileErr(s, "changelog", s.ChangelogTopic, fmt.Sprintf("gives %q", n.changelog))
			}
		case FromOverride, FromStore:
			if n.changelog != "" && n.changelog != s.ChangelogTopic {
				m.Warnings = append(m.Warnings, fmt.Sprintf("%s changelog topic %q (%s) differs from %q of %s", name, s.ChangelogTopic, s.Origins.ChangelogTopic, n.changelog, g))
			}
		case "":
			if n.changelog != "" {
				s.ChangelogTopic, s.Origins.ChangelogTopic = n.changelog, FromGroup
				if s.Store == "" {
					store := strings.TrimSuffix(strings.TrimPrefix(n.changelog, app+"-"), "-changelog")
					s.Store, s.Origins.Store = store, FromChangelog
				}
			}
		}
	}
	return nil
}
