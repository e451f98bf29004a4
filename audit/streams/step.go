package streams

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/incremental"
	"github.com/lossaudit/lossaudit/audit/internal/engine/pass"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// StepOptions configure a reconcile step besides Options.
type StepOptions = incremental.Options

// checkpoint is where the last committed step stopped, stored with the
// state: per partition its snapshot and where the next step reads from,
// and per input the counters accumulated since the baseline.
type checkpoint struct {
	incremental.Header
	From   time.Time `json:"window_from"`
	To     time.Time `json:"window_to"`
	Parts  []cpPart  `json:"partitions"`
	Inputs []cpInput `json:"inputs"`
	// DeadLetters is what the step kept of the dead-letter queue (nil
	// without one).
	DeadLetters *cpDeadLetters `json:"dead_letters,omitempty"`
	// NoRecount says that a step since the baseline saw a committed
	// offset move back or a changelog rebuilt (recountVoided): the counts
	// kept per key no longer bound the application's, so steps recount
	// nothing until a new baseline.
	NoRecount bool `json:"no_recount,omitempty"`
}

// cpPart is one partition in a checkpoint: what the step's snapshot saw
// of it, its role, and where the next step reads it from.
type cpPart struct {
	snapshot.Partition
	Role engine.Role `json:"role"`
	// Next is where the next step reads from: on an input the offset up
	// to which processed records were read, on a repartition topic the
	// group's committed offset (the tail's start), on a changelog or the
	// output the end the step read to.
	Next int64 `json:"next"`
}

// cpInput are one input's counters since the baseline.
type cpInput struct {
	Read          int64 `json:"read"`
	Candidates    int64 `json:"candidates"`
	OutsideWindow int64 `json:"outside_window"`
	NullValue     int64 `json:"null_value"`
	DecodeErrors  int64 `json:"decode_errors"`
	NullKey       int64 `json:"null_key"`
}

const checkpointVersion = 1

func (cp *checkpoint) part(topic string, p int32) (cpPart, bool) {
	for _, c := range cp.Parts {
		if c.Topic == topic && c.Partition.Partition == p {
			return c, true
		}
	}
	return cpPart{}, false
}

// history returns the checkpoint's partitions as the history detectors
// take them.
func (cp *checkpoint) history() map[kread.TP]history.Entry {
	out := map[kread.TP]history.Entry{}
	for _, c := range cp.Parts {
		out[kread.TP{Topic: c.Topic, Partition: c.Partition.Partition}] = history.Entry{At: cp.At, Partition: c.Partition}
	}
	return out
}

// describePipeline is the text a state is bound to.
func describePipeline(o Options, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "group=%s output=%s", o.Group, o.Output)
	for _, in := range o.Inputs {
		fmt.Fprintf(&b, " input=%s:%s>%s>%s key=%q", in.Name, in.Topic, in.RepartitionTopic, in.ChangelogTopic, in.Field)
		if in.BufferTopic != "" {
			// Pipelines with a buffer were refused before: no state
			// without this part can be one of them.
			fmt.Fprintf(&b, " buffer=%s", in.BufferTopic)
		}
	}
	if o.Join != "" && o.Join != "left" {
		fmt.Fprintf(&b, " join=%s", o.Join) // left joins were all there was before: their states stay valid
	}
	if extra != "" {
		b.WriteString(" " + extra)
	}
	return b.String()
}

// Step performs one step of a scheduled reconciliation (docs/design.md,
// "Incremental steps"). On an empty state it is the baseline: a full
// audit (or the window's) that records what it learnt of every key. Later
// steps read only what is new since the last checkpoint: on each input
// partition the records processed since (from the committed offset the
// last step used to the one now), the repartition topics from the last
// step's committed offsets (the tails, and the copies written since), the
// changelogs and the output from where the last step stopped; they judge
// again exactly the keys those records touch, the keys pending at the
// second hop and the keys with open findings, so the open findings are
// those a full audit would report now. A table source's input, and every
// topic of a table groupBy's aggregation, are read whole at each step
// instead, as an audit reads them (stepRun.plan, docs/reconcile.md). The
// state of the step is staged: the caller writes the reports, then
// commits it.
func Step(ctx context.Context, o Options, so StepOptions) (*incremental.Stepped, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if so.State == nil {
		return nil, errors.New("reconcile: no state store")
	}
	for _, in := range o.Inputs {
		if in.Window != nil {
			return nil, fmt.Errorf("reconcile: input %s is a windowed aggregation, which a step does not check (its stream time bound needs each partition from its start)", in.Name)
		}
	}
	desc := describePipeline(o, so.Describe)
	var last checkpoint
	st, err := incremental.Begin(so.State, checkpointVersion, &last, desc)
	if err != nil {
		return nil, err
	}
	var cp *checkpoint
	if !st.Baseline {
		// The baseline's window holds for every later step.
		cp, o.From, o.To = &last, last.From, last.To
	}
	p := &modePass{o: o}
	s := &stepRun{p: p, cp: cp, desc: desc, step: st, keys: incremental.NewKeys[known](st, knownCodec{o.Inputs})}
	p.step = s
	res, err := pass.Run(ctx, pass.Config{Store: o.Store, Now: o.Now}, p)
	sp, err := st.Done(res, s.next, err)
	if sp != nil {
		// A stuck dead-letter partition may hide the record exempting any
		// record this step read, and a later step judges a record read now
		// from its state, where a dead-letter record read later could no
		// longer exempt it (only records pending at the second hop are
		// matched again): the step is reported, every row withheld, and
		// not committed.
		sp.Held = s.dlqStuck
	}
	return sp, err
}

// stepRun is a reconcile step's part in the pass (stepMode): what it reads
// after the last checkpoint, and the state's part in the check.
type stepRun struct {
	p    *modePass
	cp   *checkpoint // nil for the baseline
	desc string
	step *incremental.Step
	keys *incremental.Keys[known]

	readPlan *readPlan
	rebuild  map[kread.TP]bool
	v        *stepVisitor
	next     *checkpoint
	// dlqStuck: a dead-letter partition's LSO stayed below its mark.
	dlqStuck bool
	// noRecount: the next checkpoint's NoRecount.
	noRecount bool
}

// plan is, for the tails, the plan of the inputs and repartition topics;
// once the snapshot is complete, the downstream part too.
func (s *stepRun) plan(complete bool) *readPlan {
	plan, rebuild := planStep(s.p.o, s.p.snap, s.cp)
	read := plan
	if s.p.o.groupByInput() >= 0 {
		// A table groupBy's check is not a maximum a step can merge (an
		// input key's last record by offset moves it between groups, a
		// group's changelog timestamp starts again older once it is
		// emptied, compaction removes what an earlier step saw): the step
		// reads every topic whole, as an audit does, and keeps only the
		// open findings, so nothing kept is rebuilt.
		read, rebuild = &readPlan{}, nil
	}
	if complete {
		s.readPlan, s.rebuild = plan, rebuild
		s.noRecount = s.cp != nil && (s.cp.NoRecount || recountVoided(s.p.o, s.p.snap, s.cp, rebuild))
		s.p.col.dlq.resume(s.cp, s.p.o.hasTable()) // read after the plan is complete
	}
	return read
}

func (s *stepRun) history() map[kread.TP]history.Entry {
	if s.cp == nil {
		return nil
	}
	return s.cp.history()
}

func (s *stepRun) touch() error { return touchKeys(s.p.o, s.keys, s.p.w, s.rebuild) }

func (s *stepRun) visitor() keyVisitor {
	o := s.p.o
	s.v = &stepVisitor{o: o, snap: s.p.snap, keys: s.keys, now: s.p.started.UnixMilli(), dlq: s.p.col.dlq,
		rebuild: s.rebuild, windowed: !o.From.IsZero(), noRecount: s.noRecount,
		tableFrom: s.p.col.tableFrom, whole: o.groupByInput() >= 0}
	return s.v
}

func (s *stepRun) needsLookup() bool { return len(s.v.deferred) > 0 }

func (s *stepRun) lookup(ctx context.Context) error { return s.v.lookBefore(ctx, s.p.chk.rows) }

func (s *stepRun) assemble(ctx context.Context, parts []finding.PartitionFinding) *finding.Result {
	o, col := s.p.o, s.p.col
	for _, pf := range parts {
		s.dlqStuck = s.dlqStuck || (pf.Kind == finding.StuckLSO && o.DeadLetterTopic != "" && pf.Topic == o.DeadLetterTopic)
	}
	res, next := assembleStep(ctx, o, s.p.snap, col, s.p.chk, parts, s.readPlan, s.cp, s.step.Next(checkpointVersion, s.desc, s.p.started),
		s.noRecount, s.rebuild, s.v.resolved, col.stats.TopicRecords)
	s.next = next
	return res
}

// assembleStep builds a step's result and its next checkpoint (header h)
// from what it read and judged: a single step's, or the merge of a
// sharded step's parts. read gives the records read of a topic.
func assembleStep(ctx context.Context, o Options, snap *pipelineSnapshot, col *collector, chk *checked, parts []finding.PartitionFinding,
	plan *readPlan, cp *checkpoint, h incremental.Header, noRecount bool, rebuild map[kread.TP]bool, resolved []finding.Row, read func(topic string) int64) (*finding.Result, *checkpoint) {
	next, counts := nextCheckpoint(o, snap, plan, cp, col, chk, h)
	next.NoRecount = noRecount
	res := assemble(ctx, o, snap, col, chk, parts, counts)
	finding.SortRows(resolved, res.Summary.InputOrder)
	res.Resolved = resolved
	step := &finding.Step{Number: next.Step, Baseline: cp == nil, BaselineAt: next.Baseline, Read: map[string]int64{},
		KeysJudged: chk.keys, Resolved: int64(len(resolved))}
	if cp != nil {
		step.Previous = cp.At
	}
	for x, in := range o.Inputs {
		step.Read[string(engine.RoleInput)] += read(in.Topic)
		step.Read[string(engine.RoleRepartition)] += read(in.RepartitionTopic)
		step.Read[string(engine.RoleChangelog)] += read(snap.changelogs[x].Name)
	}
	step.Read[string(engine.RoleOutput)] = read(o.Output)
	for tp := range rebuild {
		step.Rebuilt = append(step.Rebuilt, fmt.Sprintf("%s[%d]", tp.Topic, tp.Partition))
	}
	slices.Sort(step.Rebuilt)
	res.Summary.Step = step
	return res, next
}

// planStep decides what the step reads of every partition, given the last
// checkpoint (nil for the baseline), and which downstream partitions must
// be read again from their start because they were truncated.
func planStep(o Options, snap *pipelineSnapshot, cp *checkpoint) (*readPlan, map[kread.TP]bool) {
	plan := &readPlan{from: map[kread.TP]int64{}, to: map[kread.TP]int64{}}
	rebuild := map[kread.TP]bool{}
	last := func(t string, p int32) (cpPart, bool) {
		if cp == nil {
			return cpPart{}, false
		}
		return cp.part(t, p)
	}
	for x := range o.Inputs {
		in := snap.inputs[x]
		for _, p := range in.Parts {
			tp := kread.TP{Topic: in.Name, Partition: p}
			of := in.Offsets[p]
			// Only processed records are read: up to the committed offset.
			plan.to[tp] = of.LogStart
			if c, ok := snap.group[tp]; ok {
				plan.to[tp] = c
			}
			if l, ok := last(in.Name, p); ok {
				// A log cut below what was read (truncated) is read on
				// from its new end.
				plan.from[tp] = min(l.Next, of.HighWatermark)
			}
		}
		rp := snap.reparts[x]
		for _, p := range rp.Parts {
			tp := kread.TP{Topic: rp.Name, Partition: p}
			if l, ok := last(rp.Name, p); ok {
				from := l.Next
				if c, ok := snap.group[tp]; ok {
					from = min(from, c) // a reset moved the tail back
				}
				plan.from[tp] = from
			}
		}
	}
	for _, t := range snap.withBuffers(append(slices.Clone(snap.changelogs), snap.output)) {
		for _, p := range t.Parts {
			tp := kread.TP{Topic: t.Name, Partition: p}
			l, ok := last(t.Name, p)
			if !ok {
				continue
			}
			if t.Offsets[p].HighWatermark < l.Next {
				rebuild[tp] = true // from the log (or window) start again
				continue
			}
			plan.from[tp] = l.Next
		}
	}
	return plan, rebuild
}

// touchKeys makes the check visit the keys marked by the last step
// (pending at the second hop, with open or withheld findings) and the keys
// whose state came from a partition being rebuilt.
func touchKeys(o Options, keys *incremental.Keys[known], ew entryWriter, rebuild map[kread.TP]bool) error {
	if err := keys.Marked(func(key []byte) error { return ew.touch(key) }); err != nil {
		return err
	}
	if len(rebuild) == 0 {
		return nil
	}
	var k known
	return keys.Each(&k, func(key []byte, k *known) error {
		for x := range k.changelogs {
			if rebuilt(rebuild, o.Inputs[x].ChangelogTopic, k.changelogs[x]) {
				return ew.touch(key)
			}
		}
		if rebuilt(rebuild, o.Output, k.output) {
			return ew.touch(key)
		}
		for x, t := range k.tables {
			for _, r := range t {
				if rebuild[kread.TP{Topic: o.Inputs[x].ChangelogTopic, Partition: r.Partition}] {
					return ew.touch(key)
				}
			}
		}
		for x := range k.buffers {
			if bufferRebuilt(rebuild, o.Inputs[x].BufferTopic, k.buffers[x]) {
				return ew.touch(key)
			}
		}
		return nil
	})
}

// rebuilt reports whether stage state s came from a partition of topic
// that is being rebuilt.
func rebuilt(rebuild map[kread.TP]bool, topic string, s detect.StageState) bool {
	return (s.Has || s.HasAborted) && rebuild[kread.TP{Topic: topic, Partition: s.Partition}]
}

// recountVoided reports whether, since the last checkpoint cp, a committed
// offset of an input or repartition partition moved back (an offset
// reset: the application may count records again that no step reads
// again, or count from zero in a new store) or a changelog partition is
// rebuilt (truncated or recreated: its counts may start over). Either way
// the processed records a step's state counted per key no longer bound the
// counts the changelog shows, and recounting would report undercounts
// that are not losses.
func recountVoided(o Options, snap *pipelineSnapshot, cp *checkpoint, rebuild map[kread.TP]bool) bool {
	for x := range o.Inputs {
		for _, t := range []snapshot.Topic{snap.inputs[x], snap.reparts[x]} {
			for _, p := range t.Parts {
				tp := kread.TP{Topic: t.Name, Partition: p}
				l, ok := cp.part(t.Name, p)
				c, committed := snap.group[tp]
				if ok && committed && c < l.Next {
					return true
				}
			}
		}
		for tp := range rebuild {
			if tp.Topic == o.Inputs[x].ChangelogTopic {
				return true
			}
		}
	}
	return false
}

// bufferRebuilt reports whether buffer state b came from a partition of
// topic that is being rebuilt.
func bufferRebuilt(rebuild map[kread.TP]bool, topic string, b detect.BufferState) bool {
	return b.Has && rebuild[kread.TP{Topic: topic, Partition: b.Partition}]
}

// nextCheckpoint returns the checkpoint of this step and the per-input
// counters of its summary: totals since the baseline, with the records
// not yet processed (lag) counted as scanned and pending, as one full
// audit counts them.
func nextCheckpoint(o Options, snap *pipelineSnapshot, plan *readPlan, cp *checkpoint, col *collector, chk *checked, h incremental.Header) (*checkpoint, []finding.InputCounts) {
	next := &checkpoint{Header: h, From: o.From, To: o.To}
	add := func(role engine.Role, t snapshot.Topic, nextOf func(p int32, of kread.Offsets) int64) {
		for _, sp := range t.Partitions(snap.group) {
			next.Parts = append(next.Parts, cpPart{Partition: sp, Role: role, Next: nextOf(sp.Partition, t.Offsets[sp.Partition])})
		}
	}
	counts := make([]finding.InputCounts, len(o.Inputs))
	for x := range o.Inputs {
		var lag int64
		in := snap.inputs[x]
		add(engine.RoleInput, in, func(p int32, of kread.Offsets) int64 {
			tp := kread.TP{Topic: in.Name, Partition: p}
			// Read up to here: the committed offset, or further when it
			// moved back (a reset: those records were read already).
			n := plan.to[tp]
			if from, ok := plan.from[tp]; ok {
				n = max(n, from)
			} else if from, ok := col.windowFrom[tp]; ok {
				n = max(n, from) // records before the window start are not audited
			}
			lag += max(0, of.LSO-max(n, of.LogStart))
			return n
		})
		rp := snap.reparts[x]
		add(engine.RoleRepartition, rp, func(p int32, of kread.Offsets) int64 {
			if c, ok := snap.group[kread.TP{Topic: rp.Name, Partition: p}]; ok {
				return c
			}
			return of.LogStart
		})
		add(engine.RoleChangelog, snap.changelogs[x], func(_ int32, of kread.Offsets) int64 { return of.LSO })
		if x < len(snap.buffers) && snap.buffers[x].Name != "" {
			add(engine.RoleBuffer, snap.buffers[x], func(_ int32, of kread.Offsets) int64 { return of.LSO })
		}
		if o.Inputs[x].Table || o.Inputs[x].GroupBy {
			// A step reads a table source's input whole, as an audit
			// does (readTableInput, readGroupByInput): its counters are
			// this step's.
			c := col.counts[x].counts()
			next.Inputs = append(next.Inputs, cpInput{Read: c.Scanned, Candidates: c.Audited, OutsideWindow: c.OutsideWindow,
				NullValue: c.NullValue, DecodeErrors: c.DecodeErrors, NullKey: c.NullKey})
			c.Pending += chk.pending[x]
			c.Audited -= chk.pending[x]
			counts[x] = c
			continue
		}
		var ci cpInput
		if cp != nil && x < len(cp.Inputs) {
			ci = cp.Inputs[x]
		}
		c := col.counts[x].counts()
		ci.Read += c.Scanned
		ci.Candidates += c.Audited
		if col.dlq != nil {
			// Counted as candidates while pending, dead-lettered since.
			ci.Candidates -= col.dlq.fromState[x].Load()
		}
		ci.OutsideWindow += c.OutsideWindow
		ci.NullValue += c.NullValue
		ci.DecodeErrors += c.DecodeErrors
		ci.NullKey += c.NullKey
		next.Inputs = append(next.Inputs, ci)
		// Pending at the first hop (lag) and at the second (state).
		counts[x] = finding.InputCounts{
			Scanned: ci.Read + lag, Audited: ci.Candidates - chk.pending[x], Pending: lag + chk.pending[x],
			NullKey: ci.NullKey, NullValue: ci.NullValue, DecodeErrors: ci.DecodeErrors, OutsideWindow: ci.OutsideWindow,
		}
	}
	add(engine.RoleOutput, snap.output, func(_ int32, of kread.Offsets) int64 { return of.LSO })
	next.DeadLetters = col.dlq.checkpoint(o, snap)
	return next, counts
}

// readNext notes, on every input partition with records above the group's
// committed offset, the first of them (the record the application reads
// next), for the poison pill detector: a reconcile step reads inputs only
// up to the committed offsets.
func (c *collector) readNext(ctx context.Context) error {
	for x := range c.o.Inputs {
		in := &c.o.Inputs[x]
		t := c.snap.inputs[x]
		for _, p := range t.Parts {
			if c.shard != nil && !c.shard.inputs[kread.TP{Topic: t.Name, Partition: p}] {
				continue // another map shard's
			}
			committed, ok := c.snap.group[kread.TP{Topic: t.Name, Partition: p}]
			of := t.Offsets[p]
			if !ok || committed >= of.LSO {
				continue
			}
			rg := kread.Range{Topic: t.Name, Partition: p, From: max(committed, of.LogStart), To: of.LSO}
			err := collect.Read(ctx, c.o.Kafka, collect.Spec{Ranges: []kread.Range{rg}}, func(recs []kread.Record) error {
				if len(recs) == 0 {
					return nil
				}
				rec := &recs[0]
				status, serr := Selected, error(nil)
				if rec.Value != nil {
					if _, _, status, serr = in.Select(rec); status == Failed {
						return fmt.Errorf("selecting the key of %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, serr)
					}
				}
				c.noteNext(rec, status, serr)
				return errNextFound
			})
			if err != nil && !errors.Is(err, errNextFound) {
				return fmt.Errorf("audit: input %s: %w", in.Name, err)
			}
		}
	}
	return nil
}

var errNextFound = errors.New("found the next record")
