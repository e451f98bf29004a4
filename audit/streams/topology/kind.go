package topology

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/lossaudit/lossaudit/config/typo"
)

// Kind is what a node of a described topology does: the DSL operator that
// created it. describe() prints no kinds; a node's kind comes from the
// prefix of its generated name (the constants *_NAME of Kafka Streams'
// kstream/internals: KStreamImpl, KTableImpl, KGroupedStreamImpl,
// KGroupedTableImpl, CogroupedKStreamImpl, KStreamImplJoin), from the
// position of the automatic repartition filter, or from pipeline.nodes
// for a node the user named.
type Kind string

// The kinds. Those marked supported may lie on an audited path; every other
// kind stops the audit (an *UnsupportedError).
const (
	// KindSource reads topics (KSTREAM-SOURCE-): supported.
	KindSource Kind = "source"
	// KindSink writes a topic (KSTREAM-SINK-): supported.
	KindSink Kind = "sink"
	// KindKeySelect is selectKey (KSTREAM-KEY-SELECT-): supported.
	KindKeySelect Kind = "key-select"
	// KindRepartitionFilter is the filter Kafka Streams puts before every
	// repartition sink (it drops null keys only): supported. It is
	// recognised by its position, never declared.
	KindRepartitionFilter Kind = "repartition-filter"
	// KindReduce is groupByKey().reduce() (KSTREAM-REDUCE-): supported.
	// A windowed reduce prints the same; declare it `windowed`.
	KindReduce Kind = "reduce"
	// KindTableJoin is one of the three nodes of a KTable-KTable join
	// (KTABLE-JOINTHIS-, KTABLE-JOINOTHER-, KTABLE-MERGE-): supported for
	// left joins (pipeline.join).
	KindTableJoin Kind = "table-join"
	// KindToStream is KTable#toStream (KTABLE-TOSTREAM-): supported.
	KindToStream Kind = "to-stream"

	// KindAggregate is count() or aggregate() of a grouped stream
	// (KSTREAM-AGGREGATE-), windowed or not: describe() prints both alike.
	// Declared in pipeline.nodes, it is a plain aggregate: supported,
	// checked like a reduce.
	KindAggregate Kind = "aggregate"
	// KindCount is count() of a grouped stream, not windowed: only a
	// declaration says so (it refines aggregate). Supported: checked like
	// a reduce, and its counts recomputed (undercount).
	KindCount Kind = "count"
	// KindCogroup is a cogrouped aggregation (COGROUPKSTREAM-AGGREGATE-,
	// COGROUPKSTREAM-MERGE-).
	KindCogroup Kind = "cogroup"
	// KindWindowed is a windowed aggregation (time, session or sliding
	// windows) declared without its window: only a declaration says so.
	// Refused: declare a tumbling one as windowed-count, windowed-reduce
	// or windowed-aggregate with its window.
	KindWindowed Kind = "windowed"
	// KindWindowedCount is windowedBy(TimeWindows).count(), declared with
	// its window (NodeDecl.Window, tumbling): supported, checked per
	// (key, window) (window.go), its counts recomputed.
	KindWindowedCount Kind = "windowed-count"
	// KindWindowedReduce is windowedBy(TimeWindows).reduce(), declared
	// with its window: supported, checked per (key, window).
	KindWindowedReduce Kind = "windowed-reduce"
	// KindWindowedAggregate is windowedBy(TimeWindows).aggregate(),
	// declared with its window: supported, checked per (key, window).
	KindWindowedAggregate Kind = "windowed-aggregate"
	// KindSuppress is KTable#suppress (KTABLE-SUPPRESS-).
	KindSuppress Kind = "suppress"
	// KindTableSource is a KTable read from a topic (KTABLE-SOURCE-).
	KindTableSource Kind = "table-source"
	// KindToTable is KStream#toTable (KSTREAM-TOTABLE-).
	KindToTable Kind = "to-table"
	// KindTableAggregate is a table groupBy's aggregate or count
	// (KTABLE-AGGREGATE-: KGroupedTableImpl names both so). Declared, it
	// is aggregate(initializer, adder, subtractor): supported after a
	// table source's groupBy (tablegroupby.go); undeclared, refused.
	KindTableAggregate Kind = "table-aggregate"
	// KindTableReduce is a table groupBy's reduce(adder, subtractor)
	// (KTABLE-REDUCE-, or declared for a Named.as name): supported after a
	// table source's groupBy (tablegroupby.go).
	KindTableReduce Kind = "table-reduce"
	// KindTableCount is count() of a grouped table (KTable#groupBy then
	// KGroupedTable#count): KTABLE-AGGREGATE- prints alike for count and
	// aggregate, so only a declaration says so (it refines
	// table-aggregate). Supported after a table source's groupBy
	// (tablegroupby.go).
	KindTableCount Kind = "table-count"
	// KindTableSelect is KTable#groupBy (KTABLE-SELECT-): supported between
	// a table source and a declared table-count.
	KindTableSelect Kind = "table-select"
	// KindTableFilter is KTable#filter (KTABLE-FILTER-).
	KindTableFilter Kind = "table-filter"
	// KindTableMapValues is KTable#mapValues (KTABLE-MAPVALUES-).
	KindTableMapValues Kind = "table-map-values"
	// KindFKJoin is a part of a foreign-key join (KTABLE-FK-JOIN-*,
	// KTABLE-SINK-).
	KindFKJoin Kind = "fk-join"
	// KindStreamStreamJoin is a part of a KStream-KStream join
	// (KSTREAM-JOINTHIS-, KSTREAM-JOINOTHER-, KSTREAM-OUTERTHIS-,
	// KSTREAM-OUTEROTHER-, KSTREAM-WINDOWED-, KSTREAM-OUTERSHARED-).
	KindStreamStreamJoin Kind = "stream-stream-join"
	// KindStreamTableJoin is a KStream-KTable or KStream-GlobalKTable join
	// (KSTREAM-JOIN-, KSTREAM-LEFTJOIN-).
	KindStreamTableJoin Kind = "stream-table-join"
	// KindGlobalLeftJoin is a KStream-GlobalKTable left join, declared:
	// KStreamImpl#globalTableJoin names inner and left joins alike
	// (KSTREAM-LEFTJOIN-, no store), so only a declaration says which.
	// Supported on a per-record stream stage, with the declared behaviour
	// of a null mapped key (NodeDecl.NullMappedKey; global.go).
	KindGlobalLeftJoin Kind = "global-left-join"
	// KindGlobalInnerJoin is a KStream-GlobalKTable inner join, declared:
	// refused (whether the global store held the key depends on its own
	// thread's timing).
	KindGlobalInnerJoin Kind = "global-inner-join"
	// KindFilter is a user's KStream#filter or filterNot (KSTREAM-FILTER-
	// anywhere but right before a repartition sink).
	KindFilter Kind = "filter"
	// KindMap is KStream#map (KSTREAM-MAP-): a new key and value.
	KindMap Kind = "map"
	// KindMapValues is KStream#mapValues (KSTREAM-MAPVALUES-).
	KindMapValues Kind = "map-values"
	// KindFlatMap is KStream#flatMap (KSTREAM-FLATMAP-).
	KindFlatMap Kind = "flat-map"
	// KindFlatMapValues is KStream#flatMapValues (KSTREAM-FLATMAPVALUES-).
	KindFlatMapValues Kind = "flat-map-values"
	// KindPeek is KStream#peek (KSTREAM-PEEK-).
	KindPeek Kind = "peek"
	// KindForeach is KStream#foreach or print (KSTREAM-FOREACH-,
	// KSTREAM-PRINTER-).
	KindForeach Kind = "foreach"
	// KindMerge is KStream#merge (KSTREAM-MERGE-).
	KindMerge Kind = "merge"
	// KindBranch is KStream#split or branch (KSTREAM-BRANCH-).
	KindBranch Kind = "branch"
	// KindProcess is the Processor API inside the DSL: process,
	// processValues, transform, transformValues (KSTREAM-PROCESSOR-,
	// KSTREAM-PROCESSVALUES-, KSTREAM-TRANSFORM-, KSTREAM-TRANSFORMVALUES-,
	// KTABLE-TRANSFORMVALUES-), or a processor added with
	// Topology#addProcessor (declare it).
	KindProcess Kind = "process"
	// KindUnknown is a node whose name matches no generated prefix and
	// that pipeline.nodes does not declare. It is never guessed.
	KindUnknown Kind = "unknown"
)

// prefixes maps the generated name prefixes of Kafka Streams to kinds.
// Longer prefixes come before the shorter ones they start with.
var prefixes = []struct {
	prefix string
	kind   Kind
}{
	{"KSTREAM-SOURCE-", KindSource},
	{"KSTREAM-SINK-", KindSink},
	{"KSTREAM-KEY-SELECT-", KindKeySelect},
	{"KSTREAM-REDUCE-", KindReduce},
	{"KSTREAM-AGGREGATE-", KindAggregate},
	{"COGROUPKSTREAM-AGGREGATE-", KindCogroup},
	{"COGROUPKSTREAM-MERGE-", KindCogroup},
	{"KTABLE-JOINTHIS-", KindTableJoin},
	{"KTABLE-JOINOTHER-", KindTableJoin},
	{"KTABLE-MERGE-", KindTableJoin},
	{"KTABLE-TOSTREAM-", KindToStream},
	{"KTABLE-SUPPRESS-", KindSuppress},
	{"KTABLE-SOURCE-", KindTableSource},
	{"KSTREAM-TOTABLE-", KindToTable},
	{"KTABLE-AGGREGATE-", KindTableAggregate},
	{"KTABLE-REDUCE-", KindTableReduce},
	{"KTABLE-SELECT-", KindTableSelect},
	{"KTABLE-FILTER-", KindTableFilter},
	{"KTABLE-MAPVALUES-", KindTableMapValues},
	{"KTABLE-TRANSFORMVALUES-", KindProcess},
	{"KTABLE-FK-JOIN-", KindFKJoin},
	{"KTABLE-SINK-", KindFKJoin},
	{"KSTREAM-JOINTHIS-", KindStreamStreamJoin},
	{"KSTREAM-JOINOTHER-", KindStreamStreamJoin},
	{"KSTREAM-OUTERTHIS-", KindStreamStreamJoin},
	{"KSTREAM-OUTEROTHER-", KindStreamStreamJoin},
	{"KSTREAM-OUTERSHARED-", KindStreamStreamJoin},
	{"KSTREAM-WINDOWED-", KindStreamStreamJoin},
	{"KSTREAM-JOIN-", KindStreamTableJoin},
	{"KSTREAM-LEFTJOIN-", KindStreamTableJoin},
	{"KSTREAM-FILTER-", KindFilter},
	{"KSTREAM-MAP-", KindMap},
	{"KSTREAM-MAPVALUES-", KindMapValues},
	{"KSTREAM-FLATMAP-", KindFlatMap},
	{"KSTREAM-FLATMAPVALUES-", KindFlatMapValues},
	{"KSTREAM-PEEK-", KindPeek},
	{"KSTREAM-FOREACH-", KindForeach},
	{"KSTREAM-PRINTER-", KindForeach},
	{"KSTREAM-MERGE-", KindMerge},
	{"KSTREAM-BRANCH-", KindBranch},
	{"KSTREAM-PROCESSOR-", KindProcess},
	{"KSTREAM-PROCESSVALUES-", KindProcess},
	{"KSTREAM-TRANSFORM-", KindProcess},
	{"KSTREAM-TRANSFORMVALUES-", KindProcess},
}

// generated matches a generated name: a prefix and the builder's
// ten-digit counter (InternalStreamsBuilder#newProcessorName).
var generated = regexp.MustCompile(`^([A-Z]+(?:-[A-Z]+)*-)(\d{10})$`)

// DeclarableKinds returns the kinds pipeline.nodes accepts, sorted.
func DeclarableKinds() []string {
	out := []string{}
	for _, k := range []Kind{KindSource, KindSink, KindKeySelect, KindReduce, KindTableJoin, KindToStream,
		KindAggregate, KindCount, KindCogroup, KindWindowed, KindWindowedCount, KindWindowedReduce, KindWindowedAggregate, KindSuppress, KindTableSource, KindToTable, KindTableAggregate,
		KindTableReduce, KindTableCount, KindTableSelect, KindTableFilter, KindTableMapValues, KindFKJoin, KindStreamStreamJoin, KindStreamTableJoin, KindGlobalLeftJoin, KindGlobalInnerJoin,
		KindFilter, KindMap, KindMapValues, KindFlatMap, KindFlatMapValues, KindPeek, KindForeach, KindMerge,
		KindBranch, KindProcess} {
		out = append(out, string(k))
	}
	slices.Sort(out)
	return out
}

// supportedKinds are the kinds an audited path may hold.
var supportedKinds = []Kind{KindSource, KindKeySelect, KindRepartitionFilter, KindReduce, KindCount, KindTableJoin, KindToStream, KindMapValues, KindPeek, KindSink, KindTableSource, KindToTable, KindSuppress, KindWindowedCount, KindWindowedReduce, KindWindowedAggregate, KindTableSelect, KindTableCount, KindTableReduce}

// supported describes, for messages, what the audit supports.
func supported() string {
	ks := make([]string, len(supportedKinds))
	for i, k := range supportedKinds {
		ks[i] = string(k)
	}
	return "supported: selectKey -> groupByKey -> reduce per input (or a count or aggregate declared in pipeline.nodes, or a table or toTable with a store reading the input topic, or such a table's groupBy and a count declared table-count, a reduce, or an aggregate declared table-aggregate, " +
		"whose adder and subtractor return null only for a group left with no member), then KTable left joins, " +
		"mapValues or peek into the output (kinds " + strings.Join(ks, ", ") + ", and aggregate and table-aggregate when declared); " +
		"or a cogroup of the inputs into one aggregate, each input's aggregate declared cogroup in pipeline.nodes, into the output; " +
		"or, with no aggregation, per-record stream stages from the inputs into the output: mapValues, peek, merge, repartition(), KStream-KTable left joins, " +
		"KStream-GlobalKTable left joins declared (pipeline.nodes: {name, kind: global-left-join, null_mapped_key}), filters whose predicate is declared (pipeline.nodes: {name, kind: filter, predicate}), split()/branch() whose branches are declared (pipeline.nodes: {name, kind: branch, branches}) and selectKey/map with the new key declared (pipeline.inputs[i].rekey)"
}

// isTableOp says whether an input's path may end in a node of kind k:
// its table (an aggregate only when declared).
func isTableOp(k Kind) bool {
	return k == KindReduce || k == KindCount || k == KindAggregate || k == KindCogroup || IsTableSource(k) || IsWindowed(k)
}

// KindOrigin says how a node's kind was found.
type KindOrigin string

// The kind origins.
const (
	// FromName: the prefix of a generated name.
	FromName KindOrigin = "generated name"
	// FromPosition: the automatic filter before a repartition sink.
	FromPosition KindOrigin = "position before a repartition sink"
	// FromLine: a Source: or Sink: line of describe().
	FromLine KindOrigin = "Source:/Sink: line"
	// FromDeclaration: pipeline.nodes.
	FromDeclaration KindOrigin = "pipeline.nodes"
	// FromNowhere: no prefix matched and nothing declared it.
	FromNowhere KindOrigin = "name matches no generated prefix of Kafka Streams"
)

// kindOfName returns the kind of a generated name's prefix.
func kindOfName(name string) (Kind, bool) {
	m := generated.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	for _, p := range prefixes {
		if m[1] == p.prefix {
			return p.kind, true
		}
	}
	// The parts of a foreign-key join share one prefix
	// (KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-, ...-RESPONSE-, ...).
	if strings.HasPrefix(m[1], "KTABLE-FK-JOIN-") {
		return KindFKJoin, true
	}
	return "", false
}

// Classified is a node with its kind.
type Classified struct {
	Node   *Node
	Kind   Kind
	Origin KindOrigin
	// Window is the declared window of a windowed aggregation, nil
	// otherwise.
	Window *WindowDecl
}

// NodeDecl is one pipeline.nodes entry: a node's name and its kind. The
// window of a windowed aggregation's entry is in Declarations.Windows.
type NodeDecl struct {
	Name, Kind string
}

// FilterDecl is the declared predicate of a filter node
// (pipeline.nodes[i].predicate, a CEL expression the configuration
// compiled) and whether it is a filterNot's (negate).
type FilterDecl struct {
	Predicate string
	Negate    bool
}

// Classify returns the kind of every node of t, by name. declared is
// pipeline.nodes. A declaration may name any node; for a node whose kind
// its generated name, position or Source:/Sink: line shows, it may only
// repeat that kind, or refine a reduce, aggregate or cogroup to windowed.
// One that contradicts the graph, names no node, names a node twice or
// uses an unknown kind is a *DeclarationError.
func (t *Topology) Classify(declared []NodeDecl) (map[string]Classified, error) {
	out := map[string]Classified{}
	var names []string
	for _, st := range t.SubTopologies {
		for _, n := range st.Nodes {
			names = append(names, n.Name)
			k, ok := kindOfName(n.Name)
			switch {
			case ok && k == KindFilter && t.isRepartitionFilter(n):
				out[n.Name] = Classified{n, KindRepartitionFilter, FromPosition, nil}
			case ok:
				out[n.Name] = Classified{n, k, FromName, nil}
			case t.isRepartitionFilter(n):
				out[n.Name] = Classified{n, KindRepartitionFilter, FromPosition, nil}
			case n.Kind == Source:
				out[n.Name] = Classified{n, KindSource, FromLine, nil}
			case n.Kind == Sink:
				out[n.Name] = Classified{n, KindSink, FromLine, nil}
			default:
				out[n.Name] = Classified{n, KindUnknown, FromNowhere, nil}
			}
		}
	}
	kinds := DeclarableKinds()
	seen := map[string]int{}
	for i, d := range declared {
		name, kind := strings.TrimSpace(d.Name), strings.ToLower(strings.TrimSpace(d.Kind))
		fail := func(field, msg string) error { return &DeclarationError{Index: i, Field: field, Node: name, Msg: msg} }
		c, ok := out[name]
		if !ok {
			msg := fmt.Sprintf("%q names no node of the topology file", name)
			if near := nearestName(name, names); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			}
			return nil, fail("name", msg)
		}
		if j, dup := seen[name]; dup {
			return nil, fail("name", fmt.Sprintf("node %s is already declared by pipeline.nodes[%d]", name, j))
		}
		seen[name] = i
		if !slices.Contains(kinds, kind) {
			msg := fmt.Sprintf("%q is not a node kind", kind)
			if near := nearestName(kind, kinds); near != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", near)
			} else {
				msg += "; the kinds are " + strings.Join(kinds, ", ")
			}
			return nil, fail("kind", msg)
		}
		k := Kind(kind)
		if c.Origin != FromNowhere {
			refines := k == c.Kind || (k == KindWindowed && (c.Kind == KindReduce || c.Kind == KindAggregate || c.Kind == KindCogroup)) ||
				(k == KindCount && c.Kind == KindAggregate) || ((k == KindWindowedCount || k == KindWindowedAggregate) && c.Kind == KindAggregate) ||
				(k == KindWindowedReduce && c.Kind == KindReduce) ||
				((k == KindGlobalLeftJoin || k == KindGlobalInnerJoin) && c.Kind == KindStreamTableJoin && strings.HasPrefix(name, "KSTREAM-LEFTJOIN-")) ||
				(k == KindTableCount && c.Kind == KindTableAggregate)
			if !refines {
				return nil, fail("kind", fmt.Sprintf("node %s is declared %s, but its %s makes it a %s (line %d)", name, k, c.Origin, c.Kind, c.Node.Line))
			}
		}
		if (k == KindGlobalLeftJoin || k == KindGlobalInnerJoin) && (c.Node.Kind != Processor || len(c.Node.Stores) > 0 || !t.hasGlobalStore()) {
			return nil, fail("kind", fmt.Sprintf("node %s is declared %s, but a KStream-GlobalKTable join is a processor with no store of its own in a topology with a global store (line %d)", name, k, c.Node.Line))
		}
		if needsStore(k) && c.Node.Kind == Processor && len(c.Node.Stores) == 0 {
			return nil, fail("kind", fmt.Sprintf("node %s is declared %s, but it has no state store (line %d)", name, k, c.Node.Line))
		}
		if (k == KindSource) != (c.Node.Kind == Source) || (k == KindSink) != (c.Node.Kind == Sink) {
			return nil, fail("kind", fmt.Sprintf("node %s is declared %s, but it is a %s (line %d)", name, k, c.Node.Kind, c.Node.Line))
		}
		out[name] = Classified{c.Node, k, FromDeclaration, nil}
	}
	return out, nil
}

// needsStore says whether a node of kind k always has a state store.
func needsStore(k Kind) bool {
	switch k {
	case KindReduce, KindAggregate, KindCount, KindWindowed, KindWindowedCount, KindWindowedReduce, KindWindowedAggregate, KindSuppress, KindTableAggregate, KindTableReduce, KindTableCount:
		return true
	}
	return false
}

// isRepartitionFilter says whether n is the filter Kafka Streams puts
// before a repartition topic (KStreamImpl#createRepartitionedSource): its
// only successor is the sink of an internal topic ending in -repartition,
// and its name is the generated KSTREAM-FILTER- one numbered right after
// the sink's, or the topic's name followed by -filter.
func (t *Topology) isRepartitionFilter(n *Node) bool {
	if n.Kind != Processor || len(n.Successors) != 1 || len(n.Stores) != 0 {
		return false
	}
	s, _ := t.Node(n.Successors[0])
	if s == nil || s.Kind != Sink || len(s.Topics) != 1 || !strings.HasSuffix(s.Topics[0], "-repartition") {
		return false
	}
	if n.Name == s.Topics[0]+"-filter" {
		return true
	}
	fm := generated.FindStringSubmatch(n.Name)
	sm := generated.FindStringSubmatch(s.Name)
	if fm == nil || sm == nil || fm[1] != "KSTREAM-FILTER-" || sm[1] != "KSTREAM-SINK-" {
		return false
	}
	f, err1 := strconv.Atoi(fm[2])
	k, err2 := strconv.Atoi(sm[2])
	return err1 == nil && err2 == nil && f == k+1
}

// nearestName returns the candidate closest to name within a small edit
// distance, or "".
func nearestName(name string, candidates []string) string {
	best, bestD := "", 4
	for _, c := range candidates {
		if d := typo.Distance(name, c); d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	if best == "" || bestD*2 >= len(name) {
		return ""
	}
	return best
}

// UnsupportedError is a node on an audited path whose kind the audit does
// not support, or whose kind is unknown. The command reports it with exit
// code 2.
type UnsupportedError struct {
	// File is the topology file, Line the node's line in it.
	File string
	Line int
	// Input is the configured input topic whose path holds the node.
	Input string
	// Node is the node's name, Kind its kind and Origin how the kind was
	// found.
	Node   string
	Kind   Kind
	Origin KindOrigin
	// Detail adds what else the user should know, "" for nothing.
	Detail string
}

// Error implements error.
func (e *UnsupportedError) Error() string {
	var b strings.Builder
	if e.File != "" {
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	} else {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	switch {
	case e.Kind == KindUnknown:
		fmt.Fprintf(&b, "node %s on the path of input topic %s is of unknown kind (its %s)", e.Node, e.Input, e.Origin)
	case slices.Contains(supportedKinds, e.Kind):
		fmt.Fprintf(&b, "node %s (kind %s, from its %s) on the path of input topic %s cannot be audited where it stands", e.Node, e.Kind, e.Origin, e.Input)
	default:
		fmt.Fprintf(&b, "node %s on the path of input topic %s is of kind %s (from its %s), which lossaudit does not audit yet", e.Node, e.Input, e.Kind, e.Origin)
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Kind == KindUnknown {
		b.WriteString("; lossaudit never guesses a kind: declare it in pipeline.nodes")
	}
	b.WriteString("; " + supported())
	return b.String()
}

// DeclarationError is a pipeline.nodes entry that cannot be right.
type DeclarationError struct {
	// Index is the entry's position in pipeline.nodes, Field the entry's
	// key at fault (name or kind), Node the name it gives.
	Index int
	Field string
	Node  string
	Msg   string
}

// Key is the configuration key at fault: pipeline.nodes[i].kind.
func (e *DeclarationError) Key() string {
	return fmt.Sprintf("pipeline.nodes[%d].%s", e.Index, e.Field)
}

// Error implements error.
func (e *DeclarationError) Error() string { return e.Key() + ": " + e.Msg }
