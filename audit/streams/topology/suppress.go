package topology

import "fmt"

// checkSuppress checks a suppress node n found after the table op from:
// the audit models KTable#suppress(untilTimeLimit) only right after the
// input's count, reduce or aggregate and right before the table's
// toStream, with its one buffer store (KTableImpl#suppress names it
// KTABLE-SUPPRESS-STATE-STORE-N, or <name>-store); after a windowed
// aggregation it is untilWindowCloses, declared by the window's emit: final
// (checkWindowed).
func (t *Topology) checkSuppress(n, from *Node, kinds map[string]Classified, unsupported func(*Node, string) error) error {
	if len(n.Predecessors) != 1 || n.Predecessors[0] != from.Name {
		return unsupported(n, fmt.Sprintf("a suppress is audited only right after the input's %s (%s)", kinds[from.Name].Kind, from.Name))
	}
	if len(n.Stores) != 1 {
		return unsupported(n, fmt.Sprintf("a suppress has one buffer store, this one lists %d", len(n.Stores)))
	}
	if len(n.Successors) == 0 {
		return unsupported(n, "nothing reads the suppressed table: no output to audit")
	}
	for _, s := range n.Successors {
		if kinds[s].Kind != KindToStream {
			return unsupported(n, fmt.Sprintf("it feeds %s (kind %s): a suppress is audited only before the table's toStream", s, kinds[s].Kind))
		}
	}
	return nil
}

// suppressAfter returns the suppress node that follows the table op from
// and its buffer store, or "" (terminalTopics has checked it).
func (t *Topology) suppressAfter(from *Node, kinds map[string]Classified) (node, store string) {
	for _, s := range from.Successors {
		if c := kinds[s]; c.Kind == KindSuppress && len(c.Node.Stores) == 1 {
			return s, c.Node.Stores[0]
		}
	}
	return "", ""
}

// addBuffer adds s's suppress buffer stage after its table stage, if it
// has one, and returns the stage the output's edge leaves from.
func (g *Graph) addBuffer(s Stage, table string) string {
	if s.BufferStore == "" {
		return table
	}
	buf := "buffer:" + s.Input.Name
	rule, via := RuleBufferPending, "suppress (untilTimeLimit)"
	if s.Window != nil {
		rule, via = RuleWindowFinal, "suppress (untilWindowCloses)"
	}
	g.Stages = append(g.Stages, GraphStage{ID: buf, Kind: StageBuffer, Input: s.Index, Topic: s.BufferTopic, Store: s.BufferStore,
		Operator: KindSuppress, Rule: rule, TopicFrom: FromTopology, StoreFrom: FromTopology})
	g.Edges = append(g.Edges, Edge{From: table, To: buf, Key: KeyIdentity, Card: PerKey, TS: TSMax, Via: via})
	return buf
}
