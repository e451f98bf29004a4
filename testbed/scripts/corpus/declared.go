package main

import (
	"time"

	"github.com/lossaudit/lossaudit/audit/streams/topology"
)

// declaration is what the user of one corpus application would write in
// pipeline: the kinds, windows, predicates and join type that describe()
// does not show, taken from the application's code as SOURCES.md (next to
// the texts) quotes it. Where the code leaves a value to the user (a
// field path, a predicate on a value lossaudit decodes), the declaration
// names a plausible one: the verdict is about the model's shape, which
// does not depend on it.
type declaration struct {
	// Inputs, if set, are the input topics in join order, each with the
	// field path its groupBy or selectKey takes the key from ("" keeps the
	// record key).
	Inputs [][2]string
	Join   string
	Nodes  []topology.NodeDecl
	// Windows by index into Nodes.
	Windows  map[int]*topology.WindowDecl
	Filters  map[string]topology.FilterDecl
	NullKeys map[string]string
}

// declared holds the declarations of the corpus files whose applications
// declare something, by the file's number. Files not listed get the
// charitable configuration alone (see judge). The file numbers and node
// names refer to ../shared/topologies; what each application does is in
// its SOURCES.md row.
var declared = map[string]declaration{
	// stream.groupByKey().count()
	"01": {Nodes: []topology.NodeDecl{{Name: "KSTREAM-AGGREGATE-0000000002", Kind: "count"}}},
	// windowedBy(TimeWindows.ofSizeWithNoGrace(1ms)).count(Materialized.as("count-store"))
	"02": {Nodes: []topology.NodeDecl{{Name: "KSTREAM-AGGREGATE-0000000001", Kind: "windowed-count"}},
		Windows: map[int]*topology.WindowDecl{0: {Size: time.Millisecond, Advance: time.Millisecond, Emit: topology.EmitEager}}},
	// table(...).groupBy(...).count(Materialized.as("count-store")); the
	// groupBy's KeyValueMapper is code: the field path is the user's.
	"03": {Inputs: [][2]string{{"input-topic", "group"}},
		Nodes: []topology.NodeDecl{{Name: "KTABLE-AGGREGATE-0000000006", Kind: "table-count"}}},
	// two streams cogrouped into one aggregate
	"09": {Nodes: []topology.NodeDecl{{Name: "COGROUPKSTREAM-AGGREGATE-0000000007", Kind: "cogroup"}, {Name: "COGROUPKSTREAM-AGGREGATE-0000000008", Kind: "cogroup"}}},
	// groupByKey().count() then suppress(untilTimeLimit(1s))
	"11": {Nodes: []topology.NodeDecl{{Name: "KSTREAM-AGGREGATE-0000000002", Kind: "count"}}},
	// table1.join(table2): an inner join
	"15": {Join: topology.JoinInner},
	// filter(...) then mapValues(...): the predicate is the user's
	"24": {Nodes: []topology.NodeDecl{{Name: "KSTREAM-FILTER-0000000001", Kind: "filter"}},
		Filters: map[string]topology.FilterDecl{"KSTREAM-FILTER-0000000001": {Predicate: "value.amount > 100"}}},
	// filter(...) then groupByKey().count(Materialized.as("Purchase_count_store"))
	"25": {Nodes: []topology.NodeDecl{{Name: "KSTREAM-FILTER-0000000001", Kind: "filter"}, {Name: "KSTREAM-AGGREGATE-0000000002", Kind: "count"}},
		Filters: map[string]topology.FilterDecl{"KSTREAM-FILTER-0000000001": {Predicate: "value.amount > 100"}}},
	// stream.leftJoin(globalTable, ...): the key mapper never returns null
	"32": {Nodes: []topology.NodeDecl{{Name: "KSTREAM-LEFTJOIN-0000000004", Kind: "global-left-join"}},
		NullKeys: map[string]string{"KSTREAM-LEFTJOIN-0000000004": "never"}},
	// stream.leftJoin(globalTable, ...) then groupByKey().aggregate(...)
	"33": {Nodes: []topology.NodeDecl{{Name: "KSTREAM-LEFTJOIN-0000000004", Kind: "global-left-join"}},
		NullKeys: map[string]string{"KSTREAM-LEFTJOIN-0000000004": "never"}},
}

// apply sets d's declarations on spec, replacing its inputs when d names
// them.
func (d declaration) apply(spec *topology.Spec) {
	if d.Join != "" {
		spec.Join = d.Join
	}
	spec.Nodes = append(spec.Nodes, d.Nodes...)
	spec.Windows = d.Windows
	spec.Filters = d.Filters
	spec.NullMappedKeys = d.NullKeys
	if d.Inputs != nil {
		spec.Inputs = nil
		for i, in := range d.Inputs {
			spec.Inputs = append(spec.Inputs, topology.InputSpec{Name: "in" + string(rune('0'+i)), Topic: in[0], Rekey: in[1]})
		}
	}
}
