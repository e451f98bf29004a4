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
	// Reducer is that processor's name, Operator its kind.
	Reducer  string
	Operator Kind
	// Output is the external topic the reducer's results finally reach.
	Output string
	// Line is the line of the input's source node in the text.
	Line int
	// Suppress is the suppress node between the table and the output,
	// BufferStore its buffer store; "" for none (suppress.go).
	Suppress, BufferStore string
	// Window is the declared window of a windowed aggregation (Operator
	// windowed-*), nil otherwise.
	Window *WindowDecl
	// GroupBy is the KTABLE-SELECT- node of a table groupBy (Operator
	// table-count) and TableStore the store of the table it groups; ""
	// otherwise (tablegroupby.go).
	GroupBy, TableStore string
	// Cogroup is the merge node of the cogroup whose aggregate (Reducer,
	// Operator cogroup) the input feeds, "" for none (cogroup.go): the
	// inputs of one cogroup share Store.
	Cogroup string
}

// Declarations are what the user says about the topology that describe()
// cannot: node kinds (pipeline.nodes) and the KTable-KTable join type
// (pipeline.join).
type Declarations struct {
	// Nodes declares node kinds (DeclarableKinds), in pipeline.nodes order.
	Nodes []NodeDecl
	// Filters are the declared predicates of filter nodes, by node name.
	Filters map[string]FilterDecl
	// Branches are the declared branches of branch nodes, by node name
	// (pipeline.nodes[i].branches).
	Branches map[string]BranchDecl
	// Rekeyed are the input topics whose new key is declared
	// (pipeline.inputs[i].rekey), with their index i: a selectKey or map
	// on a per-record stream stage is audited only for them.
	Rekeyed map[string]int
	// Windows holds the windows of pipeline.nodes entries (by index):
	// required for windowed-count, windowed-reduce and windowed-aggregate,
	// refused for any other kind.
	Windows map[int]*WindowDecl
	// NullMappedKeys are the declared null_mapped_key of global-left-join
	// nodes, by node name (NullMappedKeyJoined, NullMappedKeyNever).
	NullMappedKeys map[string]string
	// Join is left, inner or outer; "" means undeclared, which stops the
	// derivation at the first KTable-KTable join (a *JoinUndeclaredError):
	// describe() prints the three types alike.
	Join string
	// Reduce is plain or windowed (pipeline.reduce): the type of every
	// reduce on the inputs' paths that Nodes does not declare; ""
	// means undeclared, which stops the derivation at the first such
	// reduce (a *ReduceUndeclaredError): describe() prints a windowed
	// reduce exactly like a plain one.
	Reduce string
}

// Reduce types of pipeline.reduce.
const (
	ReducePlain    = "plain"
	ReduceWindowed = "windowed"
)

// FromReduceDecl: pipeline.reduce.
const FromReduceDecl KindOrigin = "pipeline.reduce"

// Join types of pipeline.join.
const (
	JoinLeft  = "left"
	JoinInner = "inner"
	JoinOuter = "outer"
)

// Derivation is what a described topology says about the configured
// inputs.
type Derivation struct {
	Stages []TopoStage
	// Output is the topic all inputs reach.
	Output string
	// Joins is the number of KTable-KTable joins in the chain.
	Joins int
	// ChangelogOnly says that the one input's table ends in its changelog
	// (its node leads nowhere, `--> none`): there is no output, and the
	// table stage is the end (changelogonly.go).
	ChangelogOnly bool
	// Stream, when not nil, is a per-record stream stage (stream.go),
	// derived where the inputs reach no reduce; Stages is then empty.
	Stream *StreamPath
	// Warnings are observations that do not stop the audit.
	Warnings []string
}

// Stages is Derive with left joins and plain reduces declared and no node
// declared.
func (t *Topology) Stages(app string, inputTopics []string, output string) ([]TopoStage, string, error) {
	d, err := t.Derive(app, inputTopics, output, Declarations{Join: JoinLeft, Reduce: ReducePlain})
	if err != nil {
		return nil, "", err
	}
	return d.Stages, d.Output, nil
}

// Derive follows, for each input topic (in the order given), the path
// source(input) -> ... -> sink(repartition) -> source(repartition) -> the
// reduce, and from there through the chain of KTable left joins to the
// terminal sink. Every node on these paths gets a kind (Classify); a node
// whose kind the audit does not support is an *UnsupportedError, as is a
// path that crosses more than one internal topic before its reduce. The
// chain is checked against the configured order: inputs[0]'s table is the
// left side of the first join, inputs[i]'s the right side of the i-th.
// Internal topics (sink/source topics that are neither an input nor
// output) get the "<app>-" prefix that describe() leaves out. output may be
// "" when unknown; then the terminal sink names it.
func (t *Topology) Derive(app string, inputTopics []string, output string, decl Declarations) (*Derivation, error) {
	kinds, err := t.Classify(decl.Nodes)
	if err != nil {
		return nil, err
	}
	if err := applyWindows(kinds, decl.Nodes, decl.Windows); err != nil {
		return nil, err
	}
	switch decl.Join {
	case "", JoinLeft, JoinInner, JoinOuter:
	default:
		return nil, fmt.Errorf("join type %q is not left, inner or outer", decl.Join)
	}
	external := map[string]bool{}
	for _, in := range inputTopics {
		external[in] = true
	}
	if output != "" {
		external[output] = true
	}
	readers := t.readers() // topic -> non-global sources reading it
	internal := func(topic string) string {
		if external[topic] {
			return topic
		}
		return app + "-" + topic
	}
	// isLink says whether a sink topic is read again inside the topology
	// (a repartition or through topic) rather than a terminal output.
	isLink := func(topic string) bool { return !external[topic] && len(readers[topic]) > 0 }

	d := &Derivation{}
	reducers := map[string]int{} // reduce node -> input index
	for idx, in := range inputTopics {
		src, err := t.sourceOf(in)
		if err != nil {
			return nil, err
		}
		ts := TopoStage{InputTopic: in, Line: src.Line}
		unsupported := func(n *Node, detail string) error {
			c := kinds[n.Name]
			return &UnsupportedError{Line: n.Line, Input: in, Node: n.Name, Kind: c.Kind, Origin: c.Origin, Detail: detail}
		}

		// Breadth-first to the first processors with stores, crossing link
		// topics and remembering the last one crossed. Every node on the
		// way must be a source, key-select, repartition filter or a sink
		// to a link topic.
		type item struct {
			n     *Node
			topic string
			links int
		}
		queue := []item{{src, "", 0}}
		visited := map[string]bool{src.Name: true}
		var hits []item
		for len(queue) > 0 {
			it := queue[0]
			queue = queue[1:]
			next := func(n *Node, topic string, links int) {
				if !visited[n.Name] {
					visited[n.Name] = true
					queue = append(queue, item{n, topic, links})
				}
			}
			n := it.n
			c := kinds[n.Name]
			if (n.Kind == Processor && len(n.Stores) > 0) || needsStore(c.Kind) {
				hits = append(hits, it)
				continue
			}
			switch c.Kind {
			case KindSource, KindKeySelect, KindRepartitionFilter:
			case KindTableSource, KindToTable:
				return nil, unsupported(n, tableWithoutStore)
			case KindMap:
				return nil, unsupported(n, mapBeforeAggregation)
			case KindSink:
				switch {
				case n.Extractor != "":
					return nil, unsupported(n, fmt.Sprintf("it chooses its topic dynamically (%s) before the input's reduce", n.Extractor))
				case len(n.Topics) == 1 && isLink(n.Topics[0]):
					if it.links > 0 {
						return nil, unsupported(n, fmt.Sprintf("it writes internal topic %s after internal topic %s: an input may cross one repartition topic before its reduce", n.Topics[0], it.topic))
					}
					for _, r := range readers[n.Topics[0]] {
						next(r, n.Topics[0], it.links+1)
					}
				default:
					return nil, unsupported(n, fmt.Sprintf("it writes topic %s before the input's reduce: a branch the audit does not follow", strings.Join(n.Topics, ", ")))
				}
				continue
			case KindGlobalLeftJoin, KindGlobalInnerJoin:
				return nil, unsupported(n, globalBeforeAggregation)
			default:
				return nil, unsupported(n, "")
			}
			for _, s := range n.Successors {
				if m, _ := t.Node(s); m != nil {
					next(m, it.topic, it.links)
				}
			}
		}
		for _, h := range hits {
			c := kinds[h.n.Name]
			detail := fmt.Sprintf("the first node with a state store (%s) after the input", strings.Join(h.n.Stores, ", "))
			switch {
			case c.Kind == KindAggregate && c.Origin != FromDeclaration:
				return nil, unsupported(h.n, detail+"; describe() prints a windowed count or aggregate exactly like a plain one, so declare it in pipeline.nodes: "+
					"{name: "+h.n.Name+", kind: count} for a plain count, aggregate for another plain aggregate, "+
					"or for a time window windowed-count or windowed-aggregate with window: {size: 1m, grace: 30s, emit: eager}")
			case c.Kind == KindCogroup && c.Origin != FromDeclaration:
				return nil, unsupported(h.n, detail+"; "+cogroupHint(h.n))
			case c.Kind == KindWindowed && isCogroupAggName(h.n):
				return nil, unsupported(h.n, detail+"; "+windowedCogroup)
			case c.Kind == KindWindowed:
				return nil, unsupported(h.n, detail+"; "+windowedHint)
			case !isTableOp(c.Kind):
				return nil, unsupported(h.n, detail)
			case IsTableSource(c.Kind):
				if err := t.checkTableSource(h.n, src, h.topic); err != nil {
					return nil, unsupported(h.n, err.Error())
				}
			}
		}
		switch len(hits) {
		case 0:
			return nil, &noReduceError{fmt.Sprintf("line %d: input topic %s (source %s) reaches no reduce (expected selectKey -> groupByKey -> reduce)", src.Line, in, src.Name)}
		case 1:
		default:
			var names []string
			for _, h := range hits {
				names = append(names, fmt.Sprintf("%s (stores: %s)", h.n.Name, strings.Join(h.n.Stores, ", ")))
			}
			return nil, fmt.Errorf("line %d: input topic %s reaches %d reduces, not one: %s", src.Line, in, len(hits), strings.Join(names, "; "))
		}
		h := hits[0]
		if IsTableSource(kinds[h.n.Name].Kind) {
			sel, agg, topic, err := t.tableGroupBy(h.n, kinds, readers, isLink, unsupported)
			if err != nil {
				return nil, err
			}
			if agg != nil {
				// The table is grouped: the audited table is the count's,
				// behind the groupBy's repartition topic.
				ts.GroupBy, ts.TableStore = sel.Name, h.n.Stores[0]
				h = item{agg, topic, 1}
			}
		}
		if c := kinds[h.n.Name]; c.Kind == KindReduce && c.Origin != FromDeclaration {
			switch decl.Reduce {
			case "":
				return nil, &ReduceUndeclaredError{Line: h.n.Line, Node: h.n.Name, Stores: h.n.Stores, Input: in}
			case ReduceWindowed:
				return nil, &UnsupportedError{Line: h.n.Line, Input: in, Node: h.n.Name, Kind: KindWindowed, Origin: FromReduceDecl, Detail: windowedHint}
			}
		}
		if len(h.n.Stores) != 1 {
			return nil, fmt.Errorf("line %d: reduce %s after input topic %s has %d stores (%s), expected the one reduce store", h.n.Line, h.n.Name, in, len(h.n.Stores), strings.Join(h.n.Stores, ", "))
		}
		if prev, ok := reducers[h.n.Name]; ok {
			return nil, fmt.Errorf("line %d: input topics %s and %s reach the same reduce %s (store %s): one store fed by several inputs is not audited; configure them as one input", h.n.Line, inputTopics[prev], in, h.n.Name, h.n.Stores[0])
		}
		reducers[h.n.Name] = idx
		ts.Store = h.n.Stores[0]
		ts.Reducer, ts.Operator = h.n.Name, kinds[h.n.Name].Kind
		ts.Suppress, ts.BufferStore = t.suppressAfter(h.n, kinds)
		if ts.Suppress != "" && IsTableGroupBy(ts.Operator) {
			n, _ := t.Node(ts.Suppress)
			return nil, unsupported(n, "a suppress after a grouped table's count, reduce or aggregate is not audited yet")
		}
		if ts.Operator == KindCogroup {
			m, err := t.cogroupMerge(h.n, kinds)
			if err != nil {
				return nil, unsupported(h.n, err.Error())
			}
			ts.Cogroup = m.Name
		}
		if IsWindowed(ts.Operator) {
			ts.Window = kinds[h.n.Name].Window
			if at, err := t.checkWindowed(h.n, ts); err != nil {
				return nil, unsupported(at, err.Error())
			}
		}
		if h.topic != "" {
			ts.RepartitionTopic = internal(h.topic)
		}

		follow := unsupported
		if IsTableSource(ts.Operator) {
			follow = afterTable(h.n, kinds, unsupported)
		}
		outs, err := t.terminalTopics(h.n, isLink, readers, kinds, follow)
		if err != nil {
			return nil, err
		}
		switch len(outs) {
		case 0:
			if ts.Cogroup != "" && cogroupChangelogOnly(t, ts.Cogroup) {
				d.ChangelogOnly = true
				break
			}
			if changelogOnly(inputTopics, h.n) {
				d.ChangelogOnly = true
				break
			}
			return nil, fmt.Errorf("line %d: the %s %s of input topic %s reaches no sink topic (a table audited on its changelog alone is not supported yet: an output topic is required)", h.n.Line, kinds[h.n.Name].Kind, h.n.Name, in)
		case 1:
			ts.Output = outs[0]
		default:
			return nil, fmt.Errorf("line %d: the %s %s of input topic %s reaches %d sink topics (%s), expected the one join output", h.n.Line, kinds[h.n.Name].Kind, h.n.Name, in, len(outs), strings.Join(outs, ", "))
		}
		switch {
		case d.ChangelogOnly:
		case d.Output == "":
			d.Output = ts.Output
		case ts.Output != d.Output:
			return nil, fmt.Errorf("line %d: input topic %s ends in topic %s, but input topic %s ends in %s: they are not joined into one output", src.Line, in, ts.Output, d.Stages[0].InputTopic, d.Output)
		}
		d.Stages = append(d.Stages, ts)
	}
	for _, st := range d.Stages {
		if IsTableGroupBy(st.Operator) && len(d.Stages) > 1 {
			return nil, fmt.Errorf("line %d: the grouped table's %s %s of input topic %s is one of %d inputs: a table groupBy is audited alone (one input, no join)", st.Line, st.Operator, st.Reducer, st.InputTopic, len(d.Stages))
		}
		if st.Window != nil && len(d.Stages) > 1 {
			return nil, fmt.Errorf("line %d: the windowed aggregation %s of input topic %s is one of %d inputs: a windowed aggregation is audited alone (one input, no join)", st.Line, st.Reducer, st.InputTopic, len(d.Stages))
		}
	}
	if len(d.Stages) > 0 && d.Stages[0].Cogroup != "" {
		// One table fed by every input: no chain of joins to follow
		// (terminalTopics refused a join after the cogroup).
		if err := t.checkCogroup(d, decl.Rekeyed); err != nil {
			return nil, err
		}
		return d, nil
	}
	if err := t.checkCogroup(d, decl.Rekeyed); err != nil {
		return nil, err
	}
	if err := t.checkChain(d, inputTopics, kinds, decl.Join); err != nil {
		return nil, err
	}
	return d, nil
}

// joinRole says which node of a KTable-KTable join n is: "this" (the left
// side's), "other" (the right side's) or "merge", from the generated
// prefixes or the suffixes KTableImpl#doJoin gives a named join
// (<name>-join-this, <name>-join-other, <name>); "" when unknown.
func joinRole(n *Node) string {
	switch {
	case strings.HasPrefix(n.Name, "KTABLE-JOINTHIS-"), strings.HasSuffix(n.Name, "-join-this"):
		return "this"
	case strings.HasPrefix(n.Name, "KTABLE-JOINOTHER-"), strings.HasSuffix(n.Name, "-join-other"):
		return "other"
	case strings.HasPrefix(n.Name, "KTABLE-MERGE-"):
		return "merge"
	}
	if len(n.Predecessors) == 2 && len(n.Stores) == 0 {
		return "merge"
	}
	return ""
}

// checkChain checks the KTable-KTable joins after the reduces against the
// configured join order: inputs[0]'s reduce feeds the left side of the
// first join, inputs[i]'s reduce the right side of the i-th, each join's
// result the left side of the next. A chain that goes on with tables not
// configured as inputs is audited for the configured ones (left and
// outer joins keep every key of the configured tables) with a warning; an
// inner join with such a table is refused (that table decides which keys
// have results). The join type must be declared (describe() does not show
// it): undeclared, the first join is a *JoinUndeclaredError.
func (t *Topology) checkChain(d *Derivation, inputs []string, kinds map[string]Classified, join string) error {
	if len(d.Stages) == 0 {
		return nil
	}
	reduceOf := map[string]int{}
	for i, s := range d.Stages {
		reduceOf[s.Reducer] = i
	}
	node := func(name string) *Node { n, _ := t.Node(name); return n }
	cur := node(d.Stages[0].Reducer)
	joins := 0
	for {
		var this *Node
		for _, s := range cur.Successors {
			if m := node(s); m != nil && kinds[m.Name].Kind == KindTableJoin {
				if this != nil {
					return fmt.Errorf("line %d: %s feeds two table joins (%s, %s): not a chain of joins", cur.Line, cur.Name, this.Name, m.Name)
				}
				this = m
			}
		}
		if this == nil {
			break
		}
		in := d.Stages[0].InputTopic
		bad := func(n *Node, detail string) error {
			c := kinds[n.Name]
			return &UnsupportedError{Line: n.Line, Input: in, Node: n.Name, Kind: c.Kind, Origin: c.Origin, Detail: detail}
		}
		if joinRole(this) != "this" || len(this.Successors) != 1 {
			if joinRole(this) == "other" && joins == 0 {
				if i, ok := reduceOf[cur.Name]; ok {
					return fmt.Errorf("line %d: input topic %s (pipeline.inputs[%d]) is the right side of the table join %s, but pipeline.inputs[0] must be the left-most table of the join chain: list the inputs in join order", this.Line, inputs[i], i, this.Name)
				}
			}
			return bad(this, "it is not the left side of a KTable-KTable join that lossaudit can follow")
		}
		merge := node(this.Successors[0])
		if merge == nil || joinRole(merge) != "merge" || len(merge.Predecessors) != 2 {
			return bad(this, "its join result is not merged as a KTable-KTable join's (KTableImpl#doJoin)")
		}
		var other *Node
		for _, p := range merge.Predecessors {
			if p != this.Name {
				other = node(p)
			}
		}
		if other == nil || joinRole(other) != "other" || len(other.Predecessors) != 1 {
			return bad(merge, "the right side of this KTable-KTable join cannot be followed")
		}
		joins++
		if join == "" {
			return &JoinUndeclaredError{Line: merge.Line, Node: merge.Name}
		}

		right := other.Predecessors[0]
		i, ok := reduceOf[right]
		switch {
		case ok && i == joins:
		case ok:
			return fmt.Errorf("line %d: join %d of the chain (%s) takes input topic %s (pipeline.inputs[%d]) as its right side, where pipeline.inputs[%d] is %s: list the inputs in join order", merge.Line, joins, merge.Name, inputs[i], i, joins, inputs[min(joins, len(inputs)-1)])
		case joins < len(inputs):
			return fmt.Errorf("line %d: join %d of the chain (%s) takes %s as its right side, not the reduce of input topic %s (pipeline.inputs[%d]): list the inputs in join order", merge.Line, joins, merge.Name, right, inputs[joins], joins)
		case join == JoinInner:
			// An inner join's result exists only for keys every table
			// holds: a table the audit does not read decides it.
			return bad(merge, fmt.Sprintf("join %d of the chain is an inner join (pipeline.join) with %s, which is not a configured input: which keys the output holds depends on that table; configure its input", joins, right))
		default:
			d.Warnings = append(d.Warnings, fmt.Sprintf("join %d of the chain (%s, line %d) takes %s, which is not a configured input, as its right side: only the configured inputs are audited", joins, merge.Name, merge.Line, right))
		}
		cur = merge
	}
	if joins < len(inputs)-1 {
		return fmt.Errorf("input topic %s (pipeline.inputs[%d]) is not joined: the chain from input topic %s has %d table joins for %d inputs", inputs[joins+1], joins+1, inputs[0], joins, len(inputs))
	}
	d.Joins = joins
	return nil
}

// JoinUndeclaredError is a KTable-KTable join on an audited path while
// pipeline.join is not set: describe() prints inner, left and outer joins
// alike (KTableImpl#doJoin names the nodes KTABLE-JOINTHIS-,
// KTABLE-JOINOTHER- and KTABLE-MERGE- whatever the type), so the type is
// never guessed.
type JoinUndeclaredError struct {
	// File is the topology file, Line the join's merge node's line in it.
	File string
	Line int
	// Node is the join's merge node.
	Node string
}

// Error implements error.
func (e *JoinUndeclaredError) Error() string { return "pipeline.join " + e.Msg() }

// Msg is the message without the key.
func (e *JoinUndeclaredError) Msg() string {
	return fmt.Sprintf("is not set, but %s: node %s is a KTable-KTable join, and describe() does not show whether it is inner, left or outer; declare it: left, inner or outer", fileLine(e.File, e.Line), e.Node)
}

// ReduceUndeclaredError is a reduce on an input's path whose type neither
// pipeline.reduce nor pipeline.nodes declares: describe() prints
// windowedBy(...).reduce() exactly like groupByKey().reduce()
// (TimeWindowedKStreamImpl and KGroupedStreamImpl both name the node
// KSTREAM-REDUCE- and its store KSTREAM-REDUCE-STATE-STORE-), so the type
// is never guessed.
type ReduceUndeclaredError struct {
	// File is the topology file, Line the reduce's line in it.
	File string
	Line int
	// Node is the reduce, Stores its stores, Input the input topic whose
	// path reaches it.
	Node   string
	Stores []string
	Input  string
}

// Error implements error.
func (e *ReduceUndeclaredError) Error() string { return "pipeline.reduce " + e.Msg() }

// Msg is the message without the key.
func (e *ReduceUndeclaredError) Msg() string {
	return fmt.Sprintf("is not set, but %s: node %s (store %s) on the path of input topic %s is a reduce, and describe() does not show whether it is windowed; declare it: plain (audited) or windowed (not audited yet), or the node's kind in pipeline.nodes (reduce or windowed)", fileLine(e.File, e.Line), e.Node, strings.Join(e.Stores, ", "), e.Input)
}

// fileLine is "file:line", or "line N" without a file.
func fileLine(file string, line int) string {
	if file == "" {
		return fmt.Sprintf("line %d", line)
	}
	return fmt.Sprintf("%s:%d", file, line)
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

// terminalTopics returns the sorted sink topics reachable from the reduce
// from; every node on the way must be a table join, toStream or a sink of
// a topic not read again inside the topology.
func (t *Topology) terminalTopics(from *Node, isLink func(string) bool, readers map[string][]*Node, kinds map[string]Classified, unsupported func(*Node, string) error) ([]string, error) {
	visited := map[string]bool{from.Name: true}
	queue := []*Node{from}
	outs := map[string]bool{}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		var next []*Node
		switch c := kinds[n.Name]; {
		case n == from:
		case c.Kind == KindTableJoin && kinds[from.Name].Kind == KindCogroup:
			return nil, unsupported(n, "a cogroup's table joined with another table is not audited yet")
		case isCogroupMergeOf(n, from, kinds):
			// KTablePassThrough forwards every update of the cogroup's
			// store unchanged: the table toStream() reads.
		case c.Kind == KindTableJoin, c.Kind == KindToStream:
		case c.Kind == KindMapValues, c.Kind == KindPeek:
			// One record out per record in, with its key and timestamp
			// (KStreamMapValues, KStreamPeek): the output's rule holds.
			if !slices.ContainsFunc(n.Predecessors, func(p string) bool {
				return kinds[p].Kind == KindToStream || kinds[p].Kind == KindMapValues || kinds[p].Kind == KindPeek
			}) {
				return nil, unsupported(n, "it follows the input's reduce")
			}
		case c.Kind == KindSink:
		case c.Kind == KindSuppress:
			if err := t.checkSuppress(n, from, kinds, unsupported); err != nil {
				return nil, err
			}
		default:
			return nil, unsupported(n, "it follows the input's reduce")
		}
		if n.Kind == Sink {
			if n.Extractor != "" {
				return nil, fmt.Errorf("line %d: sink %s chooses its topic dynamically (%s); set pipeline.output", n.Line, n.Name, n.Extractor)
			}
			for _, tp := range n.Topics {
				if isLink(tp) {
					return nil, unsupported(n, fmt.Sprintf("it writes internal topic %s after the input's reduce", tp))
				}
				outs[tp] = true
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
