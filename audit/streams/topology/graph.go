package topology

import (
	"fmt"
	"io"
	"strings"
)

// StageKind is what a stage of the pipeline's stage graph is
// (../shared/STREAMS-TOPOLOGIES.md §10, docs/topology.md).
type StageKind string

// The stage kinds.
const (
	// StageSource is an input topic: where the records that count are read.
	StageSource StageKind = "source"
	// StageLink is an internal topic read again inside the application (a
	// repartition topic): its unprocessed tail holds pending records.
	StageLink StageKind = "link"
	// StageTable is a state store with its changelog topic.
	StageTable StageKind = "table"
	// StageBuffer is a store holding records for a later stage (a suppress
	// buffer): presence there is pending, not lost. No audited family has
	// one yet.
	StageBuffer StageKind = "buffer"
	// StageOutput is an output topic.
	StageOutput StageKind = "output"
)

// KeyMap says how an edge maps a record's key.
type KeyMap string

// The key maps.
const (
	// KeyIdentity keeps the key.
	KeyIdentity KeyMap = "identity"
	// KeyField selects the key from a declared field path of the value
	// (Edge.Field).
	KeyField KeyMap = "field"
	// KeyRecord keeps the record key as the selected key.
	KeyRecord KeyMap = "record key"
	// KeyWindow maps a record to its key and the start of each of its
	// time windows ([key][8-byte start], the windowed serde's form).
	KeyWindow KeyMap = "key and window start"
)

// Cardinality says how many records an edge yields per record it takes.
type Cardinality string

// The cardinalities.
const (
	// One: exactly one.
	One Cardinality = "1 per record"
	// AtMostOne: one or none (a null key or value is dropped by design).
	AtMostOne Cardinality = "at most 1 per record"
	// PerKey: updates of a key are coalesced into the key's newest state
	// (caching), so only "at least as new" is expected.
	PerKey Cardinality = "coalesced per key"
)

// TSCarry says how an edge carries the timestamp.
type TSCarry string

// The timestamp carries.
const (
	// TSKept keeps the record's timestamp.
	TSKept TSCarry = "kept"
	// TSMax carries the maximum of the record's and the state's timestamps
	// (a reduce, an aggregate, a KTable-KTable join).
	TSMax TSCarry = "max"
	// TSLast keeps the timestamp of the key's last record by offset (a
	// table source: an out-of-order update replaces a newer value).
	TSLast TSCarry = "last by offset"
)

// Rule names the check a stage is held to; its detector is named in the
// rule's description.
type Rule string

// The stage rules, each implemented by one detector of
// audit/internal/engine/detect.
const (
	// RuleCandidates: the source's records that count (committed,
	// processed below the group's offset, in the window, with a value
	// and a selected key); detect.AddCandidate.
	RuleCandidates Rule = "candidates"
	// RuleTail: a processed record whose copy sits in the link's
	// unprocessed tail is pending, not lost; audit/internal/engine/detect/link.go.
	RuleTail Rule = "tail-pending"
	// RuleTableMax: the changelog holds every key at least as new as its
	// newest processed update (missing, stale, aborted); detect.TableMax.
	RuleTableMax Rule = "table-max"
	// RuleTableCount: a count's table: RuleTableMax, and the newest count
	// of a key is at least the number of its processed records (else
	// undercount, naming the lost updates); detect.TableMax and
	// detect.Undercount.
	RuleTableCount Rule = "table-max+count"
	// RuleOutputLeftJoin: for every key the left table holds as a value,
	// the output holds it at least as new as every input's newest
	// processed update; detect.OutputLeftJoin.
	RuleOutputLeftJoin Rule = "output-left-join"
	// RuleOutputInnerJoin: for every key every table holds as a value,
	// the output holds it at least as new as every input's newest
	// processed update; detect.OutputInnerJoin.
	RuleOutputInnerJoin Rule = "output-inner-join"
	// RuleOutputOuterJoin: for every key a table holds as a value, the
	// output holds it at least as new as that table's input's newest
	// processed update; detect.OutputOuterJoin.
	RuleOutputOuterJoin Rule = "output-outer-join"
	// RuleOutputTable: the output of a table without joins holds every
	// key its table holds as a value at least as new as the table's
	// input; detect.OutputLeftJoin with one input.
	RuleOutputTable Rule = "output-to-stream"
	// RuleBufferPending: a key whose suppress buffer changelog's last
	// record is a value is pending at the output, not lost;
	// detect.BufferPending.
	RuleBufferPending Rule = "buffer-pending"
	// RuleWindowFinal: the suppress(untilWindowCloses) buffer after a
	// time-windowed aggregation (emit: final): each window certainly
	// closed whose changelog's newest record is a value is in the output
	// at least as new, unless the buffer's changelog's last record of the
	// window is a value (pending); a window not certainly closed is
	// pending; detect.WindowFinal.
	RuleWindowFinal Rule = "window-final"
	// RuleOutputPerRecord: a per-record stream stage's output holds the
	// (key, timestamp) of every processed input record, as many times as
	// the inputs hold it (missing, duplicated); detect.StreamCopies.
	RuleOutputPerRecord Rule = "output-per-record"
	// RuleTableLast: a table source's table (builder.table, toTable)
	// holds each key's last processed record by offset, or a later one;
	// detect.TableLast.
	RuleTableLast Rule = "table-last"
	// RuleWindowMax: a time-windowed aggregation's changelog and
	// output hold each (key, window) at least as new as its newest
	// processed record certainly on time; detect.TimeWindows.Place,
	// then detect.TableMax per (key, window).
	RuleWindowMax Rule = "window-max"
	// RuleWindowCount: RuleWindowMax, and each window's newest count is at
	// least the number of its certainly-on-time processed records;
	// detect.Undercount per (key, window).
	RuleWindowCount Rule = "window-max+count"
	// RuleOutputCogroup: the output of a cogroup's table holds every key
	// the table holds as a value at least as new as each input's newest
	// processed update of it; detect.OutputOuterJoin on the one shared
	// table, per input.
	RuleOutputCogroup Rule = "output-cogroup"
	// RuleTableIsInput: a table source restored from its input topic
	// (the source-topic optimization) has no changelog of its own: the
	// table is its input, nothing to check between them.
	RuleTableIsInput Rule = "table-is-input"
	// RuleTableGroupMax: a grouped table's count, reduce or aggregate
	// (table groupBy, then count, reduce or aggregate) holds each group key at least as new as the last processed
	// record by offset of every input key whose value is in that group;
	// detect.GroupByLast, then detect.TableMax per group key.
	RuleTableGroupMax Rule = "table-group-max"
)

// ruleText is what each rule checks, as `lossaudit topology` prints it.
var ruleText = map[Rule]string{
	RuleCandidates:      "records that count: committed, processed (below the group's offset), in the window, with a value and a selected key",
	RuleTail:            "a processed record whose copy is in the unprocessed tail is pending, not lost",
	RuleTableMax:        "the changelog holds each key at least as new as its newest processed update (else missing, stale or aborted)",
	RuleTableCount:      "as table-max, and each key's newest count is at least the number of its processed records (else undercount, with the number of lost updates)",
	RuleOutputLeftJoin:  "each key the left table holds as a value is in the output at least as new as every input's newest processed update",
	RuleOutputInnerJoin: "each key every table holds as a value is in the output at least as new as every input's newest processed update",
	RuleOutputOuterJoin: "each key a table holds as a value is in the output at least as new as that table's newest processed update",
	RuleOutputTable:     "each key the table holds as a value is in the output at least as new as its newest processed update",
	RuleBufferPending:   "a key whose last record in the buffer's changelog is a value is pending at the output, not lost; evicted (a tombstone) or never buffered, the output rule stands",
	RuleWindowFinal:     "each (key, window start) certainly closed (its end plus grace at or before the greatest timestamp of a processed record certainly on time in its repartition partition) whose changelog's newest record is a value is in the output at least as new (else missing or stale), unless the buffer's changelog's last record of the window is a value (pending); windows not certainly closed are pending",
	RuleOutputPerRecord: "the output holds the key and timestamp of every processed input record, once per record (else missing; more copies than input records: duplicated)",
	RuleTableLast:       "the changelog's last record of each key by offset is the input's last processed record of the key or a later one, matched by timestamp and tombstone (else missing or stale)",
	RuleWindowMax:       "each (key, window start) of a processed record certainly on time in that window (the window ends after the repartition partition's greatest timestamp minus grace, read from offset 0) is in the changelog at least as new (else missing or stale); late or uncertain ones are counted, never reported",
	RuleWindowCount:     "as window-max, and each window's newest count is at least the number of its certainly-on-time processed records (else undercount)",
	RuleTableGroupMax:   "each group key is in the changelog at least as new as the last processed record by offset of every input key (per partition) whose value is in that group, a value with a group key (else missing, stale or aborted); nothing is recounted (a table count goes down); a reduce's or aggregate's adder or subtractor returning null while the group has members may make it look stale",
	RuleOutputCogroup:   "each key the cogroup's table holds as a value is in the output at least as new as every input's newest processed update of it",
	RuleTableIsInput:    "the input topic is the table's changelog (topology.optimization=all): nothing is checked between them; its last processed record by offset is what the output is checked against",
}

// Describe is what the rule checks, in words.
func (r Rule) Describe() string { return ruleText[r] }

// GraphStage is one stage of the stage graph.
type GraphStage struct {
	// ID is the stage's name in the graph (source:a, link:a, table:a,
	// output).
	ID   string
	Kind StageKind
	// Input is the configured input the stage belongs to, -1 for the
	// output.
	Input int
	// Topic is the stage's topic: the input, link or output topic, or the
	// table's changelog.
	Topic string
	// Store is a table's or buffer's state store, "" otherwise.
	Store string
	// Operator is what writes a table (reduce), "" otherwise.
	Operator Kind
	// Rule is the check the stage is held to.
	Rule Rule
	// TopicFrom and StoreFrom say where the names came from.
	TopicFrom, StoreFrom Origin
}

// Edge is how records move from one stage to the next.
type Edge struct {
	From, To string
	Key      KeyMap
	// Field is the field path of a KeyField map.
	Field string
	Card  Cardinality
	TS    TSCarry
	// Via names the operator of the edge (selectKey, groupByKey, reduce,
	// leftJoin, toStream).
	Via string
}

// Graph is the pipeline model as a stage graph: today's family, each
// input selectKey -> groupByKey -> reduce and the tables joined left to
// right into the output, is one instance.
type Graph struct {
	Stages []GraphStage
	Edges  []Edge
}

// Stage returns the stage with id, or nil.
func (g *Graph) Stage(id string) *GraphStage {
	for i := range g.Stages {
		if g.Stages[i].ID == id {
			return &g.Stages[i]
		}
	}
	return nil
}

// Graph returns the model's stage graph.
func (m *Model) Graph() *Graph {
	if m.Stream != nil {
		return m.streamGraph()
	}
	g := &Graph{}
	outRule, join := RuleOutputLeftJoin, "leftJoin"
	switch {
	case len(m.Stages) == 1:
		outRule = RuleOutputTable
	case m.Stages[0].Cogroup != "":
		outRule = RuleOutputCogroup
	case m.Join == JoinInner:
		outRule, join = RuleOutputInnerJoin, "join"
	case m.Join == JoinOuter:
		outRule, join = RuleOutputOuterJoin, "outerJoin"
	}
	for i, s := range m.Stages {
		name := s.Input.Name
		src := "source:" + name
		g.Stages = append(g.Stages, GraphStage{ID: src, Kind: StageSource, Input: i, Topic: s.Input.Topic, Rule: RuleCandidates, TopicFrom: FromConfig})
		keyEdge := Edge{Key: KeyRecord, Card: AtMostOne, TS: TSKept, Via: "selectKey"}
		if s.Input.Rekey != "" {
			keyEdge.Key, keyEdge.Field = KeyField, s.Input.Rekey
		}
		if IsTableSource(s.Operator) {
			g.tableSource(s, i, src, join, len(m.Stages))
			continue
		}
		prev := src
		if s.RepartitionTopic == "" {
			keyEdge.Via = "groupByKey" // the key is kept: no repartitioning
		} else {
			link := "link:" + name
			g.Stages = append(g.Stages, GraphStage{ID: link, Kind: StageLink, Input: i, Topic: s.RepartitionTopic, Rule: RuleTail, TopicFrom: s.Origins.RepartitionTopic})
			keyEdge.From, keyEdge.To = src, link
			if IsTableGroupBy(s.Operator) {
				// The table keeps each key's last record by offset, and its
				// groupBy sends that value to its group.
				keyEdge.Card, keyEdge.TS, keyEdge.Via = PerKey, TSLast, "table -> groupBy"
			}
			g.Edges = append(g.Edges, keyEdge)
			prev = link
			keyEdge = Edge{Key: KeyIdentity, Card: One, TS: TSKept, Via: "repartition"}
		}
		op := s.Operator
		if op == "" {
			op = KindReduce
		}
		table := "table:" + name
		if s.Cogroup != "" {
			table = "table:" + m.Stages[0].Input.Name // one table, shared by the cogroup's inputs
		}
		rule := RuleTableMax
		switch op {
		case KindCount:
			rule = RuleTableCount
		case KindTableCount, KindTableReduce, KindTableAggregate:
			rule = RuleTableGroupMax
		case KindWindowedCount:
			rule = RuleWindowCount
		case KindWindowedReduce, KindWindowedAggregate:
			rule = RuleWindowMax
		}
		if s.Cogroup == "" || i == 0 {
			g.Stages = append(g.Stages, GraphStage{ID: table, Kind: StageTable, Input: i, Topic: s.ChangelogTopic, Store: s.Store, Operator: op,
				Rule: rule, TopicFrom: s.Origins.ChangelogTopic, StoreFrom: s.Origins.Store})
		}
		keyEdge.From, keyEdge.To, keyEdge.Card, keyEdge.TS = prev, table, PerKey, TSMax
		switch {
		case IsWindowed(op):
			keyEdge.Key = KeyWindow
			keyEdge.Via = "windowedBy(" + s.Window.String() + ") -> " + string(op)
		case keyEdge.Via == "repartition":
			keyEdge.Via = string(op)
		default:
			keyEdge.Via += " -> " + string(op)
		}
		g.Edges = append(g.Edges, keyEdge)
		table = g.addBuffer(s, table)
		via := "toStream"
		if s.Cogroup != "" && i > 0 {
			continue // the shared table's one edge to the output
		}
		if len(m.Stages) > 1 && s.Cogroup == "" {
			via = join + " (right side)"
			if i == 0 {
				via = join + " (left side)"
			}
		}
		if m.ChangelogOnly {
			continue // the table is the end
		}
		g.Edges = append(g.Edges, Edge{From: table, To: "output", Key: KeyIdentity, Card: PerKey, TS: TSMax, Via: via})
	}
	if m.ChangelogOnly {
		return g
	}
	g.Stages = append(g.Stages, GraphStage{ID: "output", Kind: StageOutput, Input: -1, Topic: m.Output, Rule: outRule, TopicFrom: m.OutputOrigin})
	return g
}

// Write prints the graph: one line per stage with its rule and where its
// names came from, then one line per edge. clean makes names safe for a
// terminal (report.TerminalSafe); nil prints them as they are.
func (g *Graph) Write(w io.Writer, clean func(string) string) error {
	if clean == nil {
		clean = func(s string) string { return s }
	}
	var b strings.Builder
	b.WriteString("stages:\n")
	for _, s := range g.Stages {
		fmt.Fprintf(&b, "  %-10s %-6s %s (%s)", clean(s.ID), s.Kind, clean(s.Topic), s.TopicFrom)
		if s.Store != "" {
			fmt.Fprintf(&b, " store %s (%s)", clean(s.Store), s.StoreFrom)
		}
		if s.Operator != "" {
			fmt.Fprintf(&b, " by %s", s.Operator)
		}
		fmt.Fprintf(&b, "\n    rule %s: %s\n", s.Rule, s.Rule.Describe())
	}
	b.WriteString("edges:\n")
	for _, e := range g.Edges {
		key := string(e.Key)
		if e.Key == KeyField {
			key = "field " + clean(e.Field)
		}
		fmt.Fprintf(&b, "  %s -> %s via %s: key %s, %s, timestamp %s\n", clean(e.From), clean(e.To), e.Via, key, e.Card, e.TS)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
