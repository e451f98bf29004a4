package topology

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// TopoStage is what a described topology says about one input topic.
type TopoStage struct {
	// InputTopic is the configured input topic.
	InputTopic string
	// RepartitionTopic is the full name (with the application.id prefix)
	// of the last internal topic the input's records cross before the
	// store; "" when the input reaches its store without repartitioning.
	RepartitionTopic string
	// Store is the state store of the first processor with a store after
	// that topic (the reduce).
	Store string
	// Reducer is that processor's name.
	Reducer string
	// Output is the external topic the reducer's results finally reach.
	Output string
	// Line is the line of the input's source node in the text.
	Line int
}

// Stages follows, for each input topic (in the order given), the path
// source(input) -> ... -> sink(repartition) -> source(repartition) -> the
// first processor with a store, and from there to the terminal sink.
// Internal topics (sink/source topics that are neither an input nor
// output) get the "<app>-" prefix that describe() leaves out. output may be
// "" when unknown; then the terminal sink names it. The returned output is
// the one all inputs reach.
func (t *Topology) Stages(app string, inputTopics []string, output string) ([]TopoStage, string, error) {
	external := map[string]bool{}
	for _, in := range inputTopics {
		external[in] = true
	}
	if output != "" {
		external[output] = true
	}
	readers := map[string][]*Node{} // topic -> non-global sources reading it
	for _, st := range t.SubTopologies {
		if st.Global {
			continue
		}
		for _, n := range st.Nodes {
			if n.Kind == Source {
				for _, tp := range n.Topics {
					readers[tp] = append(readers[tp], n)
				}
			}
		}
	}
	internal := func(topic string) string {
		if external[topic] {
			return topic
		}
		return app + "-" + topic
	}
	// isLink says whether a sink topic is read again inside the topology
	// (a repartition or through topic) rather than a terminal output.
	isLink := func(topic string) bool { return !external[topic] && len(readers[topic]) > 0 }

	var stages []TopoStage
	joinedOut := ""
	for _, in := range inputTopics {
		src, err := t.sourceOf(in)
		if err != nil {
			return nil, "", err
		}
		ts := TopoStage{InputTopic: in, Line: src.Line}

		// Breadth-first to the first processors with stores, crossing link
		// topics and remembering the last one crossed.
		type item struct {
			n     *Node
			topic string
		}
		queue := []item{{src, ""}}
		visited := map[string]bool{src.Name: true}
		type hit struct {
			n     *Node
			topic string
		}
		var hits []hit
		for len(queue) > 0 {
			it := queue[0]
			queue = queue[1:]
			next := func(n *Node, topic string) {
				if !visited[n.Name] {
					visited[n.Name] = true
					queue = append(queue, item{n, topic})
				}
			}
			switch n := it.n; {
			case n.Kind == Processor && len(n.Stores) > 0:
				hits = append(hits, hit(it))
				continue
			case n.Kind == Sink:
				for _, tp := range n.Topics {
					if isLink(tp) {
						for _, r := range readers[tp] {
							next(r, tp)
						}
					}
				}
				continue
			}
			for _, s := range it.n.Successors {
				if m, _ := t.Node(s); m != nil {
					next(m, it.topic)
				}
			}
		}
		switch len(hits) {
		case 0:
			return nil, "", fmt.Errorf("line %d: input topic %s (source %s) reaches no processor with a state store (expected selectKey -> groupByKey -> reduce)", src.Line, in, src.Name)
		case 1:
		default:
			var names []string
			for _, h := range hits {
				names = append(names, fmt.Sprintf("%s (stores: %s)", h.n.Name, strings.Join(h.n.Stores, ", ")))
			}
			return nil, "", fmt.Errorf("line %d: input topic %s reaches %d processors with state stores, not one reduce: %s", src.Line, in, len(hits), strings.Join(names, "; "))
		}
		h := hits[0]
		if len(h.n.Stores) != 1 {
			return nil, "", fmt.Errorf("line %d: processor %s after input topic %s has %d stores (%s), expected the one reduce store", h.n.Line, h.n.Name, in, len(h.n.Stores), strings.Join(h.n.Stores, ", "))
		}
		ts.Store = h.n.Stores[0]
		ts.Reducer = h.n.Name
		if h.topic != "" {
			ts.RepartitionTopic = internal(h.topic)
		}

		outs, err := t.terminalTopics(h.n, isLink, readers)
		if err != nil {
			return nil, "", err
		}
		switch len(outs) {
		case 0:
			return nil, "", fmt.Errorf("line %d: the reduce %s of input topic %s reaches no sink topic", h.n.Line, h.n.Name, in)
		case 1:
			ts.Output = outs[0]
		default:
			return nil, "", fmt.Errorf("line %d: the reduce %s of input topic %s reaches %d sink topics (%s), expected the one join output", h.n.Line, h.n.Name, in, len(outs), strings.Join(outs, ", "))
		}
		if joinedOut == "" {
			joinedOut = ts.Output
		} else if ts.Output != joinedOut {
			return nil, "", fmt.Errorf("line %d: input topic %s ends in topic %s, but input topic %s ends in %s: they are not joined into one output", src.Line, in, ts.Output, stages[0].InputTopic, joinedOut)
		}
		stages = append(stages, ts)
	}
	return stages, joinedOut, nil
}

// sourceOf finds the one non-global source reading topic, by name or
// pattern.
func (t *Topology) sourceOf(topic string) (*Node, error) {
	var found []*Node
	var known []string
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			if n.Kind != Source {
				continue
			}
			match := slices.Contains(n.Topics, topic)
			if !match && n.Pattern != "" {
				// Java's Pattern.matcher(topic).matches(): a full match.
				if re, err := regexp.Compile(`^(?:` + n.Pattern + `)$`); err == nil {
					match = re.MatchString(topic)
				}
			}
			if match && st.Global {
				return nil, fmt.Errorf("line %d: topic %s is read by a global store (sub-topology %d), not by a selectKey/groupByKey/reduce path", n.Line, topic, st.ID)
			}
			if match {
				found = append(found, n)
			}
			if n.Pattern != "" {
				known = append(known, "pattern "+n.Pattern)
			} else {
				known = append(known, n.Topics...)
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("input topic %s is not read by any source of the topology (sources read: %s)", topic, strings.Join(known, ", "))
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("line %d: input topic %s is read by %d sources", found[1].Line, topic, len(found))
}

// terminalTopics returns the sorted sink topics reachable from n that are
// not read again inside the topology.
func (t *Topology) terminalTopics(from *Node, isLink func(string) bool, readers map[string][]*Node) ([]string, error) {
	visited := map[string]bool{from.Name: true}
	queue := []*Node{from}
	outs := map[string]bool{}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		var next []*Node
		if n.Kind == Sink {
			if n.Extractor != "" {
				return nil, fmt.Errorf("line %d: sink %s chooses its topic dynamically (%s); set pipeline.output", n.Line, n.Name, n.Extractor)
			}
			for _, tp := range n.Topics {
				if isLink(tp) {
					next = append(next, readers[tp]...)
				} else {
					outs[tp] = true
				}
			}
		}
		for _, s := range n.Successors {
			if m, _ := t.Node(s); m != nil {
				next = append(next, m)
			}
		}
		for _, m := range next {
			if !visited[m.Name] {
				visited[m.Name] = true
				queue = append(queue, m)
			}
		}
	}
	res := make([]string, 0, len(outs))
	for o := range outs {
		res = append(res, o)
	}
	slices.Sort(res)
	return res, nil
}
