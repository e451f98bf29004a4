package topology

import "fmt"

// IsTableSource says whether k is a table read from a topic: builder.table
// (KTABLE-SOURCE-) or KStream#toTable (KSTREAM-TOTABLE-). Both are a
// KTableSource (kstream/internals/KTableSource.java), whose store holds
// each key's last record by offset, not its newest by timestamp, so their
// table is held to the table-last rule, not table-max.
func IsTableSource(k Kind) bool { return k == KindTableSource || k == KindToTable }

// tableWithoutStore is why a table source without a store is refused.
const tableWithoutStore = "it has no state store (describe() lists none): the table source itself is not materialized, so KTableSource keeps nothing and forwards every record as it comes; " +
	"lossaudit audits a table source with its own store (materialized, or joined)"

// checkTableSource checks that the table source n, the first node with a
// store after the input's source src, reads the input topic itself:
// directly after src, without an internal topic (link, "" for none)
// between them. A table fed through a repartition topic holds the last
// record by offset of that topic, whose order the input does not show.
func (t *Topology) checkTableSource(n, src *Node, link string) error {
	if link != "" {
		return fmt.Errorf("it reads internal topic %s, not the input topic: a table holds the last record by offset of the topic it reads, and lossaudit audits a table source only on the input topic itself", link)
	}
	if len(n.Predecessors) != 1 || n.Predecessors[0] != src.Name {
		return fmt.Errorf("it does not read the input's source %s directly: lossaudit audits a table source only on the input topic's records as they are", src.Name)
	}
	return nil
}

// checkTableSource checks what the configuration says of an input read by
// a table source; name is the input's key (pipeline.inputs[i]).
func (s *Stage) checkTableSource(name string) error {
	if !IsTableSource(s.Operator) {
		return nil
	}
	if s.Input.Rekey != "" {
		return &Error{Key: name + ".rekey", Msg: fmt.Sprintf("is %q, but input %s is read by a table source (%s), whose keys are the input's record keys: remove it", s.Input.Rekey, s.Input.Name, s.Operator)}
	}
	if s.RepartitionTopic != "" && s.Origins.RepartitionTopic == FromOverride {
		return &Error{Key: name + ".repartition_topic", Msg: fmt.Sprintf("is %q, but input %s is read by a table source (%s) without repartitioning: remove it", s.RepartitionTopic, s.Input.Name, s.Operator)}
	}
	if s.Operator == KindToTable && s.ChangelogTopic == s.Input.Topic {
		return &Error{Key: name + ".changelog_topic", Msg: fmt.Sprintf("is the input topic %q, but only builder.table's source can use it as its changelog (topology.optimization=all); toTable keeps a changelog of its own", s.Input.Topic)}
	}
	return nil
}

// SourceTopicChangelog says whether the table of s is restored from its
// input topic instead of a changelog of its own: builder.table under
// topology.optimization=all (reuse.ktable.source.topics: TableSourceNode
// connects the store to the source topic and disables its logging), which
// describe() does not show, so the user declares it by setting the input's
// changelog_topic to the input topic.
func (s *Stage) SourceTopicChangelog() bool {
	return s.Operator == KindTableSource && s.ChangelogTopic == s.Input.Topic
}

// sourceTopicChangelog says whether the value v of field may repeat the
// input topic: a table source's changelog_topic under the source-topic
// optimization.
func (s *Stage) sourceTopicChangelog(field, v string) bool {
	return field == "changelog_topic" && v == s.Input.Topic && s.SourceTopicChangelog()
}

// tableSource adds the table stage of input i, read by a table source,
// with its edges from the input's source stage src and to the output
// (join is the chain's join operator, n the number of inputs).
func (g *Graph) tableSource(s Stage, i int, src, join string, n int) {
	table := "table:" + s.Input.Name
	st := GraphStage{ID: table, Kind: StageTable, Input: i, Topic: s.ChangelogTopic, Store: s.Store, Operator: s.Operator,
		Rule: RuleTableLast, TopicFrom: s.Origins.ChangelogTopic, StoreFrom: s.Origins.Store}
	if s.SourceTopicChangelog() {
		st.Rule = RuleTableIsInput
	}
	g.Stages = append(g.Stages, st)
	via := "table"
	if s.Operator == KindToTable {
		via = "toTable"
	}
	g.Edges = append(g.Edges, Edge{From: src, To: table, Key: KeyRecord, Card: PerKey, TS: TSLast, Via: via})
	out := Edge{From: table, To: "output", Key: KeyIdentity, Card: PerKey, TS: TSMax, Via: "toStream"}
	switch {
	case n > 1 && i == 0:
		out.Via = join + " (left side)"
	case n > 1:
		out.Via = join + " (right side)"
	default:
		out.TS = TSLast // toStream forwards the table's value with its timestamp
	}
	g.Edges = append(g.Edges, out)
}

// afterTable words the refusal of a node after the table source table
// (what terminalTopics calls "the input's reduce"): it names the table,
// and for what may be a table groupBy the shape that is audited
// (tablegroupby.go).
func afterTable(table *Node, kinds map[string]Classified, unsupported func(*Node, string) error) func(*Node, string) error {
	return func(n *Node, detail string) error {
		what := fmt.Sprintf("it follows the input's table (%s %s, store %s)", kinds[table.Name].Kind, table.Name, table.Stores[0])
		switch kinds[n.Name].Kind {
		case KindTableSelect, KindTableAggregate, KindUnknown:
			what += "; a table groupBy is audited as the table's only successor (KTABLE-SELECT-, or its Grouped.as name declared table-select), its repartition topic and a count declared table-count, a reduce, or an aggregate declared table-aggregate"
		}
		if detail != "it follows the input's reduce" {
			what += "; " + detail
		}
		return unsupported(n, what)
	}
}
