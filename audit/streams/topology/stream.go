package topology

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// StreamPath is a per-record stream stage (docs/topology.md, "Per-record
// stream stages"): each configured input reaches the output through
// operators that forward every record once with its key and timestamp
// (mapValues, peek, merge, repartition(), a KStream-KTable left join),
// with no aggregation on the way. Its check is record by record: the
// (key, timestamp) of every processed input record must be in the output.
type StreamPath struct {
	// Inputs are the configured inputs' paths, in configured order.
	Inputs []StreamInput
	// Output is the one output topic.
	Output string
	// Ignored are other topics the inputs also reach, not audited
	// (pipeline.output names the audited one).
	Ignored []string
}

// StreamInput is one input's path to the output.
type StreamInput struct {
	Topic string
	// Links are the repartition topics on the path (full names).
	Links []string
	// Via are the operators on the path, in order, for the stage graph
	// (mapValues, peek, merge, repartition, leftJoin).
	Via []string
	// Tables are the stores of the KStream-KTable left joins on the path:
	// the table sides, which this stage does not audit.
	Tables []string
	// Globals are the global stores of the KStream-GlobalKTable left
	// joins on the path, as globalNames says them (the join does not
	// name its store): not audited by this stage either.
	Globals []string
	// DropNullKey and DropNullValue: the path drops such records by
	// design (a repartition topic's filter drops null keys,
	// KStreamKTableJoinProcessor#maybeDropRecord null keys and values,
	// and null values only for a declared KStream-GlobalKTable left join).
	DropNullKey, DropNullValue bool
	// Ops are the operators of the path to the output that decide what
	// the output holds of a record, in path order: declared filters,
	// re-keys and the drops of null keys and values. A path with a filter
	// or a re-key is checked by replaying them on each input record
	// (Filtered, Rekeyed); without, DropNullKey and DropNullValue say it
	// all. A branch on the path adds its predicates as filters
	// (branchOps).
	Ops []StreamOp
	// Alternatives, when branches part the input's paths to the output
	// (several branches of a split() merged back), are the ops of each
	// path, in path order; Ops is then nil. The paths are exclusive: at
	// most one carries a record, so the output holds it once when one
	// path passes it.
	Alternatives [][]StreamOp
	// Branches are the branches of the branch nodes on the input's way,
	// with the topics each reaches: those that do not reach the output
	// are not audited.
	Branches []BranchRoute
	// RekeyNode is the selectKey or map on the path, "" for none: the
	// input's pipeline.inputs[i].rekey must declare the new key.
	RekeyNode string
	// Line is the line of the input's source.
	Line int
}

// StreamOpKind is what a StreamOp does to a record.
type StreamOpKind string

// The operators a per-record stream stage replays.
const (
	// OpFilter keeps the records its declared predicate accepts.
	OpFilter StreamOpKind = "filter"
	// OpRekey replaces the key by the declared field of the value
	// (selectKey, map).
	OpRekey StreamOpKind = "rekey"
	// OpDropNullKey drops a record with a null key (the filter before a
	// repartition topic).
	OpDropNullKey StreamOpKind = "drop-null-key"
	// OpDropNull drops a record with a null key or a null value (a
	// KStream-KTable left join).
	OpDropNull StreamOpKind = "drop-null-key-or-value"
	// OpDropNullValue drops a record with a null value (a declared
	// KStream-GlobalKTable left join, global.go).
	OpDropNullValue StreamOpKind = "drop-null-value"
)

// StreamOp is one operator a per-record stream stage replays.
type StreamOp struct {
	Op StreamOpKind
	// Node is the operator's node.
	Node string
	// Predicate and Negate are an OpFilter's declaration.
	Predicate string
	Negate    bool
}

// streamKinds are the kinds a per-record stream stage's path may hold
// besides the KStream-KTable left join: each forwards every record once,
// key and timestamp kept (KStreamMapValues, KStreamPeek, the merge's pass
// through, the repartition filter dropping null keys only).
var streamKinds = []Kind{KindSource, KindSink, KindMapValues, KindPeek, KindMerge, KindRepartitionFilter, KindBranchChild}

// DeriveStream derives a per-record stream stage: every node on the
// paths from the inputs to the output is a source, sink, mapValues,
// peek, merge, the filter of a repartition topic, or a KStream-KTable
// left join (KSTREAM-LEFTJOIN- with the one store of its table; a join
// with a grace period also lists its buffer and is refused), or a
// KStream-GlobalKTable left join declared global-left-join with the
// behaviour of a null mapped key (global.go; undeclared, or declared
// global-inner-join, it is refused).
// Each input must reach the output by exactly one path (a record that
// reaches it twice is written twice). A node of another kind is an
// *UnsupportedError.
func (t *Topology) DeriveStream(app string, inputTopics []string, output string, decl Declarations) (*StreamPath, error) {
	sp, _, err := t.deriveStream(app, inputTopics, output, decl)
	return sp, err
}

// deriveStream is DeriveStream, also returning the nodes it reached
// (the node it stopped at among them).
func (t *Topology) deriveStream(app string, inputTopics []string, output string, decl Declarations) (*StreamPath, map[string]bool, error) {
	reached := map[string]bool{}
	kinds, err := t.Classify(decl.Nodes)
	if err != nil {
		return nil, reached, err
	}
	if err := t.checkBranches(kinds, decl); err != nil {
		return nil, reached, err
	}
	external := map[string]bool{}
	for _, in := range inputTopics {
		external[in] = true
	}
	readers := t.readers()
	sp := &StreamPath{Output: output}
	outs := map[string]bool{}
	type inputPaths struct {
		si     StreamInput
		paths  map[string]int          // output topic -> paths reaching it
		ops    map[string][][]StreamOp // output topic -> the ops of each path
		trails map[string][][]string   // output topic -> the nodes of each path
	}
	var all []inputPaths
	for _, in := range inputTopics {
		src, err := t.sourceOf(in)
		if err != nil {
			return nil, reached, err
		}
		unsupported := func(n *Node, detail string) error {
			c := kinds[n.Name]
			return &UnsupportedError{Line: n.Line, Input: in, Node: n.Name, Kind: c.Kind, Origin: c.Origin, Detail: detail}
		}
		ip := inputPaths{si: StreamInput{Topic: in, Line: src.Line}, paths: map[string]int{}}
		ops := map[string][][]StreamOp{} // output topic -> the ops of each path reaching it
		trails := map[string][][]string{}
		var branchNodes []*Node
		// Depth-first over the DAG, counting paths to each sink topic;
		// path holds the ops met on the way to n, trail the nodes,
		// changed the node that changed the value ("" for none).
		var walk func(n *Node, depth int, path []StreamOp, trail []string, changed string) error
		walk = func(n *Node, depth int, path []StreamOp, trail []string, changed string) error {
			if depth > 1000 {
				return fmt.Errorf("line %d: the path of input topic %s does not end", n.Line, in)
			}
			reached[n.Name] = true
			trail = append(slices.Clip(trail), n.Name)
			c := kinds[n.Name]
			var next []*Node
			switch {
			case c.Kind == KindBranch && n.Kind == Processor && len(n.Stores) == 0:
				if changed != "" {
					return unsupported(n, fmt.Sprintf("its predicates are computed from a value that %s changed before it, which lossaudit cannot recompute", changed))
				}
				d, ok := decl.Branches[n.Name]
				if !ok {
					return unsupported(n, "split() sends each record to the first branch whose predicate accepts it (else to the default branch, else nowhere); on a per-record stream stage it is audited when its branches are declared, "+branchTemplate(n))
				}
				if !slices.Contains(branchNodes, n) {
					branchNodes = append(branchNodes, n)
				}
				ip.si.Via = appendNew(ip.si.Via, "split")
				for j, b := range d.Branches {
					m, _ := t.Node(b.Name)
					if m == nil {
						continue
					}
					if err := walk(m, depth+1, append(slices.Clip(path), branchOps(n.Name, d, j)...), trail, changed); err != nil {
						return err
					}
				}
				return nil
			case c.Kind == KindGlobalLeftJoin || c.Kind == KindGlobalInnerJoin:
				stores, err := t.globalJoin(n, c, decl, unsupported)
				if err != nil {
					return err
				}
				ip.si.DropNullValue = true
				if g := globalNames(stores); !slices.Contains(ip.si.Globals, g) {
					ip.si.Globals = append(ip.si.Globals, g)
				}
				ip.si.Via = appendNew(ip.si.Via, "leftJoin(global)")
				path = append(slices.Clip(path), StreamOp{Op: OpDropNullValue, Node: n.Name})
				changed = n.Name
			case c.Kind == KindStreamTableJoin:
				if err := t.streamTableJoin(n, c, unsupported); err != nil {
					return err
				}
				ip.si.DropNullKey, ip.si.DropNullValue = true, true
				if !slices.Contains(ip.si.Tables, n.Stores[0]) {
					ip.si.Tables = append(ip.si.Tables, n.Stores[0])
				}
				ip.si.Via = appendNew(ip.si.Via, "leftJoin")
				path = append(slices.Clip(path), StreamOp{Op: OpDropNull, Node: n.Name})
				changed = n.Name
			case (c.Kind == KindFilter || c.Kind == KindKeySelect || c.Kind == KindMap) && n.Kind == Processor && len(n.Stores) == 0:
				what := "predicate"
				if c.Kind != KindFilter {
					what = "new key"
				}
				if changed != "" {
					return unsupported(n, fmt.Sprintf("its %s is computed from a value that %s changed before it, which lossaudit cannot recompute", what, changed))
				}
				if c.Kind == KindFilter {
					d := decl.Filters[n.Name]
					if d.Predicate == "" {
						return unsupported(n, fmt.Sprintf("a filter drops the records its predicate rejects; on a per-record stream stage (no aggregation after it) it is audited when its predicate is declared, pipeline.nodes: [{name: %s, kind: filter, predicate: '<CEL expression over value and key>'}] (negate: true for filterNot)", n.Name))
					}
					path = append(slices.Clip(path), StreamOp{Op: OpFilter, Node: n.Name, Predicate: d.Predicate, Negate: d.Negate})
					ip.si.Via = appendNew(ip.si.Via, "filter")
					break
				}
				if _, ok := decl.Rekeyed[in]; !ok {
					return unsupported(n, "a selectKey or map on a per-record stream stage is audited when the new key is a field of the value, declared as the input's rekey (pipeline.inputs[i].rekey: <field path>)")
				}
				if ip.si.RekeyNode != "" && ip.si.RekeyNode != n.Name {
					return unsupported(n, fmt.Sprintf("a second re-key after %s: one declared field path (pipeline.inputs[i].rekey) describes one", ip.si.RekeyNode))
				}
				ip.si.RekeyNode = n.Name
				path = append(slices.Clip(path), StreamOp{Op: OpRekey, Node: n.Name})
				if c.Kind == KindMap {
					ip.si.Via = appendNew(ip.si.Via, "map")
					changed = n.Name
				} else {
					ip.si.Via = appendNew(ip.si.Via, "selectKey")
				}
			case !slices.Contains(streamKinds, c.Kind) || (n.Kind == Processor && len(n.Stores) > 0):
				return unsupported(n, "it is on the path of a per-record stream stage")
			case c.Kind == KindRepartitionFilter:
				ip.si.DropNullKey = true
				path = append(slices.Clip(path), StreamOp{Op: OpDropNullKey, Node: n.Name})
			case c.Kind == KindMapValues:
				ip.si.Via = appendNew(ip.si.Via, "mapValues")
				changed = n.Name
			case c.Kind == KindPeek:
				ip.si.Via = appendNew(ip.si.Via, "peek")
			case c.Kind == KindMerge:
				ip.si.Via = appendNew(ip.si.Via, "merge")
			}
			if n.Kind == Sink {
				if n.Extractor != "" {
					return unsupported(n, fmt.Sprintf("it chooses its topic dynamically (%s)", n.Extractor))
				}
				for _, tp := range n.Topics {
					switch {
					case external[tp]:
						return unsupported(n, fmt.Sprintf("it writes input topic %s", tp))
					case len(readers[tp]) > 0:
						if !strings.HasSuffix(tp, "-repartition") {
							return unsupported(n, fmt.Sprintf("it writes topic %s, which the application reads again (through() or to() then stream()): only repartition topics are followed", tp))
						}
						if l := app + "-" + tp; !slices.Contains(ip.si.Links, l) {
							ip.si.Links = append(ip.si.Links, l)
						}
						ip.si.Via = appendNew(ip.si.Via, "repartition")
						next = append(next, readers[tp]...)
					default:
						ip.paths[tp]++
						outs[tp] = true
						ops[tp] = append(ops[tp], path)
						trails[tp] = append(trails[tp], trail)
					}
				}
			}
			for _, s := range n.Successors {
				if m, _ := t.Node(s); m != nil {
					next = append(next, m)
				}
			}
			for _, m := range next {
				if err := walk(m, depth+1, path, trail, changed); err != nil {
					return err
				}
			}
			return nil
		}
		if err := walk(src, 0, nil, nil, ""); err != nil {
			return nil, reached, err
		}
		ip.ops, ip.trails = ops, trails
		ip.si.Branches = branchRoutes(branchNodes, decl.Branches, trails)
		if len(branchNodes) > 0 {
			// The branches' paths were walked one after the other: each
			// operator once, in the order first met.
			var via []string
			for _, v := range ip.si.Via {
				if !slices.Contains(via, v) {
					via = append(via, v)
				}
			}
			ip.si.Via = via
		}
		all = append(all, ip)
	}
	if sp.Output == "" {
		if len(outs) != 1 {
			var names []string
			for o := range outs {
				names = append(names, o)
			}
			slices.Sort(names)
			return nil, reached, fmt.Errorf("the inputs reach %d topics (%s), not one: set pipeline.output", len(names), strings.Join(names, ", "))
		}
		for o := range outs {
			sp.Output = o
		}
	}
	for o := range outs {
		if o != sp.Output {
			sp.Ignored = append(sp.Ignored, o)
		}
	}
	slices.Sort(sp.Ignored)
	for _, ip := range all {
		switch n := ip.paths[sp.Output]; n {
		case 1:
			ip.si.Ops = ip.ops[sp.Output][0]
		case 0:
			return nil, reached, fmt.Errorf("line %d: input topic %s does not reach topic %s", ip.si.Line, ip.si.Topic, sp.Output)
		default:
			if err := t.exclusivePaths(kinds, ip.si, sp.Output, ip.trails[sp.Output]); err != nil {
				return nil, reached, err
			}
			ip.si.Alternatives = ip.ops[sp.Output]
		}
		sp.Inputs = append(sp.Inputs, ip.si)
	}
	return sp, reached, nil
}

// Filtered says whether the input's path has a declared filter (or a
// branch).
func (in StreamInput) Filtered() bool {
	for _, ops := range in.Paths() {
		if slices.ContainsFunc(ops, func(o StreamOp) bool { return o.Op == OpFilter }) {
			return true
		}
	}
	return false
}

// Paths are the ops of each of the input's paths to the output:
// Alternatives, or Ops alone.
func (in StreamInput) Paths() [][]StreamOp {
	if in.Alternatives != nil {
		return in.Alternatives
	}
	return [][]StreamOp{in.Ops}
}

// streamTableJoin checks a stream-table join node on a stream path: a
// left join (KSTREAM-LEFTJOIN-: KStreamImpl#doStreamTableJoin names inner
// joins KSTREAM-JOIN-) of a KTable (its one store; a GlobalKTable join,
// KStreamImpl#globalTableJoin, connects none, and a join with a grace
// period adds its buffer <name>-Buffer).
func (t *Topology) streamTableJoin(n *Node, c Classified, unsupported func(*Node, string) error) error {
	switch {
	case !strings.HasPrefix(n.Name, "KSTREAM-LEFTJOIN-"):
		if strings.HasPrefix(n.Name, "KSTREAM-JOIN-") {
			return unsupported(n, "an inner KStream-KTable join writes a record only when the table held its key when it was processed, which offsets do not show; only left joins are audited")
		}
		return unsupported(n, "a named stream-table join does not show whether it is a left or an inner join")
	case len(n.Stores) == 0 && t.hasGlobalStore():
		return unsupported(n, fmt.Sprintf("a KStream-GlobalKTable join (no store of its own: it reads %s): describe() prints inner and left joins alike, declare it, pipeline.nodes: [{name: %s, kind: global-left-join, null_mapped_key: joined}] (null_mapped_key: joined for Kafka Streams 4.1 and later, never when the key mapper returns a key for every record with a value), or global-inner-join, which is refused", globalNames(t.globalStores()), n.Name))
	case len(n.Stores) == 0:
		return unsupported(n, "a KStream-GlobalKTable join (no store connected) in a topology without a global store block: not audited")
	case len(n.Stores) > 1:
		return unsupported(n, fmt.Sprintf("a KStream-KTable join with a grace period buffers records (stores %s); not audited yet", strings.Join(n.Stores, ", ")))
	}
	return nil
}

// appendNew appends s unless xs ends with it.
func appendNew(xs []string, s string) []string {
	if len(xs) > 0 && xs[len(xs)-1] == s {
		return xs
	}
	return append(xs, s)
}

// noReduceError is an input whose path reaches no reduce: the derivation
// of a per-record stream stage may then apply (orStream).
type noReduceError struct{ msg string }

func (e *noReduceError) Error() string { return e.msg }

// orStream returns the derivation of the table family (d, err) unless
// it failed where a per-record stream stage may stand: no input reaches
// a reduce, or a node the table family does not support stopped it. Then
// a stream stage derived from the same text replaces it; when that fails
// too, the table family's error stands, unless the stream stage's is
// more to the point: the inputs reach no reduce at all, or the stream
// stage got as far as the node that stopped the table family.
func (t *Topology) orStream(app string, inputs []string, output string, decl Declarations, d *Derivation, err error) (*Derivation, error) {
	if err == nil {
		return d, nil
	}
	var nr *noReduceError
	var ue *UnsupportedError
	if !errors.As(err, &nr) && !errors.As(err, &ue) {
		return d, err
	}
	sp, reached, serr := t.deriveStream(app, inputs, output, decl)
	if serr != nil {
		// The stream stage's error is the one to show when it got past
		// the node that stopped the table family, or stopped at the
		// same stream-table join or filter with its own reason.
		var se *UnsupportedError
		if nr != nil {
			return nil, serr
		}
		same := errors.As(serr, &se) && se.Node == ue.Node
		// A stream stage stopped by an aggregation is no stream stage:
		// the table family's error says what to change on its path.
		atTable := se != nil && slices.Contains([]Kind{KindReduce, KindCount, KindAggregate, KindWindowed, KindCogroup}, se.Kind)
		if (reached[ue.Node] && !same && !atTable) || (same && (ue.Kind == KindStreamTableJoin || ue.Kind == KindGlobalLeftJoin || ue.Kind == KindGlobalInnerJoin || ue.Kind == KindFilter || ue.Kind == KindBranch)) {
			return nil, serr
		}
		return nil, err
	}
	return &Derivation{Output: sp.Output, Stream: sp}, nil
}

// fromStream fills the model of a per-record stream stage.
func (m *Model) fromStream(p Spec, sp *StreamPath) error {
	if p.Output != "" && sp.Output != p.Output {
		return &Error{Key: "pipeline.output", Msg: fmt.Sprintf("is %q, but in %s the inputs reach topic %q", p.Output, p.TopologyFile, sp.Output)}
	}
	for i, in := range p.Inputs {
		key := fmt.Sprintf("pipeline.inputs[%d]", i)
		switch {
		case in.Store != "" || in.ChangelogTopic != "":
			return &Error{Key: key + ".store", Msg: fmt.Sprintf("input %s reaches the output through a per-record stream stage (%s), which has no store or changelog of its own", in.Name, p.TopologyFile)}
		case in.RepartitionTopic != "":
			return &Error{Key: key + ".repartition_topic", Msg: fmt.Sprintf("input %s reaches the output through a per-record stream stage: its repartition topics come from %s", in.Name, p.TopologyFile)}
		case in.Rekey != "" && sp.Inputs[i].RekeyNode == "":
			return &Error{Key: key + ".rekey", Msg: fmt.Sprintf("input %s reaches the output through a per-record stream stage that keeps the record key (%s shows no selectKey or map on its path): remove it", in.Name, p.TopologyFile)}
		case in.Rekey == "" && sp.Inputs[i].RekeyNode != "":
			return &Error{Key: key + ".rekey", Msg: fmt.Sprintf("input %s is re-keyed by %s on its way to the output (%s): declare the new key as the field path of the value it is taken from (a selectKey or map whose key is not a value field cannot be audited)", in.Name, sp.Inputs[i].RekeyNode, p.TopologyFile)}
		}
	}
	m.Stream = sp
	if m.Output == "" {
		m.Output, m.OutputOrigin = sp.Output, FromTopology
	}
	// Topics reached only by branches that do not reach the output are
	// named with those branches.
	var branched []string
	for _, in := range sp.Inputs {
		for _, r := range in.Branches {
			if !slices.Contains(r.Topics, sp.Output) {
				branched = append(branched, r.Topics...)
			}
		}
	}
	for _, o := range sp.Ignored {
		if !slices.Contains(branched, o) {
			m.Warnings = append(m.Warnings, fmt.Sprintf("the inputs also reach topic %s, which is not audited (pipeline.output is %s)", o, sp.Output))
		}
	}
	for i, in := range sp.Inputs {
		for _, r := range in.Branches {
			if slices.Contains(r.Topics, sp.Output) {
				continue
			}
			what := fmt.Sprintf("branch %d", r.Index+1)
			if r.Default {
				what = "the default branch"
			}
			where := "reaches no topic (its records end there)"
			if len(r.Topics) > 0 {
				where = "reaches topic " + strings.Join(r.Topics, ", ") + ", which is not audited"
			}
			m.Warnings = append(m.Warnings, fmt.Sprintf("input %s: %s of %s (%s) %s; its records count as filtered", m.Stages[i].Input.Name, what, r.Node, r.Child, where))
		}
		for _, g := range in.Globals {
			m.Warnings = append(m.Warnings, fmt.Sprintf("input %s is left-joined with the GlobalKTable of %s: the table side is not audited by this stage", m.Stages[i].Input.Name, g))
		}
		if len(in.Tables) > 0 {
			m.Warnings = append(m.Warnings, fmt.Sprintf("input %s is left-joined with the table of store %s: the table side is not audited by this stage", m.Stages[i].Input.Name, strings.Join(in.Tables, ", ")))
		}
	}
	return nil
}

// streamGraph is the stage graph of a per-record stream stage: each
// input's source, its repartition topics as links, and the output held to
// the per-record rule.
func (m *Model) streamGraph() *Graph {
	g := &Graph{}
	for i, s := range m.Stages {
		name := s.Input.Name
		in := m.Stream.Inputs[i]
		src := "source:" + name
		g.Stages = append(g.Stages, GraphStage{ID: src, Kind: StageSource, Input: i, Topic: s.Input.Topic, Rule: RuleCandidates, TopicFrom: FromConfig})
		prev := src
		// The edge that re-keys: the one after as many repartition
		// topics as the path crosses before its selectKey or map.
		rekeyEdge := -1
		if in.RekeyNode != "" {
			rekeyEdge = 0
			ops := in.Ops
			for _, alt := range in.Alternatives {
				if slices.ContainsFunc(alt, func(o StreamOp) bool { return o.Op == OpRekey }) {
					ops = alt
					break
				}
			}
			for _, op := range ops {
				if op.Op == OpRekey {
					break
				}
				if op.Op == OpDropNullKey {
					rekeyEdge++
				}
			}
		}
		keyed := func(e Edge, j int) Edge {
			if j == rekeyEdge {
				e.Key, e.Field = KeyField, s.Input.Rekey
			}
			return e
		}
		for j, l := range in.Links {
			id := "link:" + name
			if len(in.Links) > 1 {
				id = fmt.Sprintf("link:%s:%d", name, j+1)
			}
			if st := g.Stage(id); st == nil {
				g.Stages = append(g.Stages, GraphStage{ID: id, Kind: StageLink, Input: i, Topic: l, Rule: RuleTail, TopicFrom: FromTopology})
			}
			g.Edges = append(g.Edges, keyed(Edge{From: prev, To: id, Key: KeyIdentity, Card: streamCard(in), TS: TSKept, Via: "repartition"}, j))
			prev = id
		}
		via := strings.Join(in.Via, " -> ")
		if via == "" {
			via = "pass-through"
		}
		for _, g := range in.Globals {
			via += " (" + g + " not audited)"
		}
		if len(in.Tables) > 0 {
			via += " (table " + strings.Join(in.Tables, ", ") + " not audited)"
		}
		g.Edges = append(g.Edges, keyed(Edge{From: prev, To: "output", Key: KeyIdentity, Card: streamCard(in), TS: TSKept, Via: via}, len(in.Links)))
	}
	g.Stages = append(g.Stages, GraphStage{ID: "output", Kind: StageOutput, Input: -1, Topic: m.Output, Rule: RuleOutputPerRecord, TopicFrom: m.OutputOrigin})
	return g
}

// streamCard is the cardinality of an input's path: one record per
// record, or at most one where null keys or values are dropped.
func streamCard(in StreamInput) Cardinality {
	if in.DropNullKey || in.DropNullValue || in.Filtered() {
		return AtMostOne
	}
	return One
}

// readers maps each topic to the non-global sources reading it.
func (t *Topology) readers() map[string][]*Node {
	readers := map[string][]*Node{}
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
	return readers
}
