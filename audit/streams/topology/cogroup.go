package topology

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// A cogroup (KGroupedStream#cogroup ... CogroupedKStream#aggregate) is one
// store fed by several grouped streams: CogroupedStreamAggregateBuilder
// gives each input its own KStreamAggregate processor, all naming the
// one store (COGROUPKSTREAM-AGGREGATE-N, or <name>-cogroup-agg-i with
// Named.as), and joins them in a KTablePassThrough that forwards every
// update unchanged (COGROUPKSTREAM-MERGE-N, or <name>-cogroup-merge), which
// is the table toStream() reads. Each aggregate writes max(record ts, old
// aggregate ts) and skips null keys and values (KStreamAggregate), so the
// reduce's rule holds per input on the shared changelog. A windowed cogroup
// (CogroupedKStream#windowedBy) prints exactly alike, so the aggregates are
// audited only when declared cogroup in pipeline.nodes.

// cogroupNamed matches the names Named.as gives a cogroup's nodes.
var (
	cogroupAggNamed   = regexp.MustCompile(`-cogroup-agg-\d+$`)
	cogroupMergeNamed = regexp.MustCompile(`-cogroup-merge$`)
)

// isCogroupAggName says whether n is named as a cogroup's aggregate.
func isCogroupAggName(n *Node) bool {
	k, ok := kindOfName(n.Name)
	return (ok && k == KindCogroup && strings.HasPrefix(n.Name, "COGROUPKSTREAM-AGGREGATE-")) || cogroupAggNamed.MatchString(n.Name)
}

// cogroupHint is the declaration a cogroup's aggregate needs.
func cogroupHint(n *Node) string {
	return "describe() prints a windowed cogroup (CogroupedKStream#windowedBy) exactly like a plain one, so declare each of the cogroup's aggregates in pipeline.nodes: " +
		"{name: " + n.Name + ", kind: cogroup} for a plain aggregate (windowed cogroups are not audited yet)"
}

// windowedCogroup is why a cogroup declared windowed is refused.
const windowedCogroup = "a windowed cogroup (CogroupedKStream#windowedBy(...).aggregate) is not audited yet: its store holds one entry per key and window"

// cogroupMerge returns the merge node the cogroup aggregate agg feeds:
// its only successor, without a store, every predecessor of which is an
// aggregate of the same store, declared cogroup. Otherwise an error says
// why the aggregate cannot be followed.
func (t *Topology) cogroupMerge(agg *Node, kinds map[string]Classified) (*Node, error) {
	if len(agg.Successors) != 1 {
		return nil, fmt.Errorf("a cogroup's aggregate feeds its merge node only (CogroupedStreamAggregateBuilder), this one feeds %d nodes (%s)", len(agg.Successors), strings.Join(agg.Successors, ", "))
	}
	m, _ := t.Node(agg.Successors[0])
	if m != nil && kinds[m.Name].Kind == KindUnknown && cogroupMergeNamed.MatchString(m.Name) {
		return nil, fmt.Errorf("it feeds %s, which is not a cogroup's merge node until declared: {name: %s, kind: cogroup} (Named.as names a cogroup's merge <name>-cogroup-merge)", m.Name, m.Name)
	}
	if m == nil || m.Kind != Processor || len(m.Stores) != 0 || kinds[m.Name].Kind != KindCogroup {
		return nil, fmt.Errorf("it feeds %s, which is not a cogroup's merge node (COGROUPKSTREAM-MERGE-, or <name>-cogroup-merge declared cogroup)", agg.Successors[0])
	}
	for _, p := range m.Predecessors {
		pn, _ := t.Node(p)
		if pn == nil || kinds[p].Kind != KindCogroup || !slices.Equal(pn.Stores, agg.Stores) {
			return nil, fmt.Errorf("its merge node %s also reads %s, which is not an aggregate of store %s declared cogroup", m.Name, p, strings.Join(agg.Stores, ", "))
		}
	}
	return m, nil
}

// isCogroupMergeOf says whether n is the merge node of the cogroup whose
// aggregate is from (terminalTopics passes it through: KTablePassThrough
// forwards every update unchanged).
func isCogroupMergeOf(n, from *Node, kinds map[string]Classified) bool {
	return kinds[from.Name].Kind == KindCogroup && kinds[n.Name].Kind == KindCogroup && len(n.Stores) == 0 &&
		len(from.Successors) == 1 && from.Successors[0] == n.Name
}

// checkCogroup checks the stages of d after derivation: a cogroup is
// audited alone, all configured inputs feeding the one cogroup (one
// store, no other table, no join after it), and each input that is not
// repartitioned keeps its record key (no rekey declared). Aggregates of
// the cogroup whose inputs are not configured are named in a warning:
// the configured ones are still audited soundly (each holds max).
func (t *Topology) checkCogroup(d *Derivation, rekeyed map[string]int) error {
	var first *TopoStage
	for i := range d.Stages {
		s := &d.Stages[i]
		if s.Cogroup == "" {
			continue
		}
		if first == nil {
			first = s
		}
		if s.RepartitionTopic == "" {
			if j, ok := rekeyed[s.InputTopic]; ok {
				return &Error{Key: fmt.Sprintf("pipeline.inputs[%d].rekey", j), Msg: fmt.Sprintf("is set, but input topic %s reaches the cogroup's aggregate %s without a selectKey or repartition topic (groupByKey on its own key): remove it", s.InputTopic, s.Reducer)}
			}
		}
	}
	if first == nil {
		return nil
	}
	for _, s := range d.Stages {
		if s.Cogroup != first.Cogroup {
			other := s.Reducer + " (kind " + string(s.Operator) + ")"
			if s.Cogroup != "" {
				other = "cogroup " + s.Cogroup
			}
			return fmt.Errorf("line %d: input topic %s reaches %s, but input topic %s reaches cogroup %s: a cogroup is audited alone, every configured input one of its inputs", s.Line, s.InputTopic, other, first.InputTopic, first.Cogroup)
		}
	}
	merge, _ := t.Node(first.Cogroup)
	audited := map[string]bool{}
	for _, s := range d.Stages {
		audited[s.Reducer] = true
	}
	for _, p := range merge.Predecessors {
		if !audited[p] {
			pn, _ := t.Node(p)
			d.Warnings = append(d.Warnings, fmt.Sprintf("cogroup %s (store %s) also aggregates %s (line %d), whose input is not configured: only the configured inputs are audited", merge.Name, first.Store, p, pn.Line))
		}
	}
	return nil
}

// cogroupChangelogOnly says whether the cogroup's table, read by its merge
// node, leads nowhere (describe() prints `--> none` after the merge): its
// changelog is the pipeline's last stage.
func cogroupChangelogOnly(t *Topology, merge string) bool {
	m, _ := t.Node(merge)
	return m != nil && len(m.Successors) == 0
}

// validateCogroup checks that the stages of a cogroup name one store and
// one changelog (an override on one input alone would split them).
func (m *Model) validateCogroup() error {
	var first *Stage
	for i := range m.Stages {
		s := &m.Stages[i]
		if s.Cogroup == "" {
			continue
		}
		if first == nil {
			first = s
			continue
		}
		switch {
		case s.Store != first.Store:
			return &Error{Key: fmt.Sprintf("pipeline.inputs[%d].store", s.Index), Msg: fmt.Sprintf("is %q, but input %s feeds the same cogroup (%s) with store %q: the inputs of a cogroup share one store", s.Store, first.Input.Name, s.Cogroup, first.Store)}
		case s.ChangelogTopic != first.ChangelogTopic:
			return &Error{Key: fmt.Sprintf("pipeline.inputs[%d].changelog_topic", s.Index), Msg: fmt.Sprintf("is %q, but input %s feeds the same cogroup (%s) with changelog %q: the inputs of a cogroup share one changelog", s.ChangelogTopic, first.Input.Name, s.Cogroup, first.ChangelogTopic)}
		}
	}
	return nil
}

// mapBeforeAggregation is why a map on an input's path to its
// aggregation is refused, with or without a declared rekey.
const mapBeforeAggregation = "a map before an aggregation changes the value as well as the key: its copies in the repartition topic cannot be matched to the input records (one still pending there would be reported lost), " +
	"and a null value it returns is dropped by the aggregation unseen; a selectKey or groupBy (the value kept) with the new key declared as the input's rekey is audited"

// Cogroup returns the merge node of the cogroup the model's inputs feed,
// "" when they feed none.
func (m *Model) Cogroup() string {
	if len(m.Stages) == 0 {
		return ""
	}
	return m.Stages[0].Cogroup
}
