package topology

import (
	"fmt"
	"strings"
)

// tableAggregateUndeclared says why an undeclared KTABLE-AGGREGATE- after
// a table groupBy is refused: count() and aggregate() print alike, and
// only a count's changelog values are counts.
func tableAggregateUndeclared(name string) string {
	return "describe() prints count() and aggregate() of a grouped table alike (KGroupedTableImpl names both KTABLE-AGGREGATE-): " +
		"declare a count in pipeline.nodes, {name: " + name + ", kind: table-count}, or an aggregate, {name: " + name + ", kind: table-aggregate}"
}

// IsTableGroupBy says whether k is an aggregation of a table groupBy that
// the audit checks (the table-group-max rule): a count (table-count), a
// reduce (table-reduce) or an aggregate declared table-aggregate.
// KTableAggregate (count, aggregate) and KTableReduce write a group at
// max(record ts, old aggregate ts) while it holds a value, and at the
// record's own timestamp when it held none (detect.GroupByLast's proof);
// a reduce's or aggregate's group restarts only after the application's
// adder or subtractor returned null, which is owed nothing when the group
// had no member left and is documented otherwise.
func IsTableGroupBy(k Kind) bool {
	return k == KindTableCount || k == KindTableReduce || k == KindTableAggregate
}

// tableGroupBy follows a table groupBy from the table source table (the
// first node with a store after the input): table -> KTABLE-SELECT- (the
// KTableRepartitionMap) -> the sink of a repartition topic -> its one
// source -> the aggregation. It returns the groupBy node, the aggregation
// node and the repartition topic as describe() prints it, or a nil
// aggregation when table feeds no groupBy. A count declared table-count,
// a reduce (KTABLE-REDUCE-, or declared table-reduce) and an aggregate
// declared table-aggregate are accepted; every other shape is an
// *UnsupportedError (unsupported) naming the node.
func (t *Topology) tableGroupBy(table *Node, kinds map[string]Classified, readers map[string][]*Node, isLink func(string) bool,
	unsupported func(*Node, string) error) (sel, agg *Node, topic string, err error) {
	for _, s := range table.Successors {
		if m, _ := t.Node(s); m != nil && kinds[m.Name].Kind == KindTableSelect {
			sel = m
		}
	}
	if sel == nil {
		return nil, nil, "", nil
	}
	if len(table.Successors) != 1 {
		return nil, nil, "", unsupported(sel, fmt.Sprintf("the table %s feeds %d nodes (%s): a table groupBy is audited when it is the table's only successor", table.Name, len(table.Successors), strings.Join(table.Successors, ", ")))
	}
	var sink *Node
	if len(sel.Successors) == 1 {
		sink, _ = t.Node(sel.Successors[0])
	}
	if sink == nil || sink.Kind != Sink || sink.Extractor != "" || len(sink.Topics) != 1 || !isLink(sink.Topics[0]) || !strings.HasSuffix(sink.Topics[0], "-repartition") {
		return nil, nil, "", unsupported(sel, "the groupBy does not write one repartition topic read again by the topology (KGroupedTableImpl: a sink to <name>-repartition)")
	}
	topic = sink.Topics[0]
	rs := readers[topic]
	if len(rs) != 1 || len(rs[0].Successors) != 1 {
		return nil, nil, "", unsupported(sink, fmt.Sprintf("repartition topic %s is not read by one source feeding one aggregation", topic))
	}
	agg, _ = t.Node(rs[0].Successors[0])
	if agg == nil {
		return nil, nil, "", unsupported(rs[0], fmt.Sprintf("the source of repartition topic %s leads to no node", topic))
	}
	c := kinds[agg.Name]
	switch {
	case c.Kind == KindTableAggregate && c.Origin == FromName:
		return nil, nil, "", unsupported(agg, tableAggregateUndeclared(agg.Name))
	case IsTableGroupBy(c.Kind):
	default:
		return nil, nil, "", unsupported(agg, fmt.Sprintf("the aggregation after table groupBy %s (repartition topic %s) is not a grouped table's count, reduce or aggregate", sel.Name, topic))
	}
	if len(agg.Stores) != 1 {
		return nil, nil, "", unsupported(agg, fmt.Sprintf("it has %d stores (%s), expected the aggregation's one store", len(agg.Stores), strings.Join(agg.Stores, ", ")))
	}
	return sel, agg, topic, nil
}

// checkTableGroupBy checks what the configuration says of an input whose
// table is grouped by a table groupBy; name is the input's key
// (pipeline.inputs[i]). The group key is the KeyValueMapper's, which
// describe() does not show: it is declared (rekey), never guessed.
func (s *Stage) checkTableGroupBy(name string) error {
	if !IsTableGroupBy(s.Operator) {
		return nil
	}
	if s.Input.Rekey == "" {
		return &Error{Key: name + ".rekey", Msg: fmt.Sprintf("is not set, but input %s is read by a table whose groupBy (%s) picks each group key with the application's KeyValueMapper, which describe() does not show: declare the field path of the value it takes the group key from", s.Input.Name, s.GroupBy)}
	}
	return nil
}
