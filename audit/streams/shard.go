package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// This file is the Kafka Streams mode's part in a sharded audit
// (docs/scale.md): the snapshot taken once (ShardSnapshot), the inputs read
// by map shards (ShardMap), the keys judged by reduce shards (ShardReduce),
// and the result assembled from their parts (ShardMerge). The storage, the
// manifest and the waiting are audit/shard's; what is read and judged is
// the audit's own code, restricted by a shardView.

// Emit receives an index entry of key for the reduce shard that owns the
// key (KeyShard).
type Emit func(key []byte, e index.Entry) error

// UnsupportedShardingError says why an audit cannot be sharded soundly.
type UnsupportedShardingError struct{ Reason string }

func (e *UnsupportedShardingError) Error() string {
	return "the audit cannot be sharded: " + e.Reason
}

// KeyShard returns the reduce shard of a selected key: its task partition
// (murmur2(key) % taskParts, where Kafka Streams sent its repartition copy)
// modulo n.
func KeyShard(key []byte, taskParts, n int) int {
	return int(partitionFor(key, taskParts)) % n
}

// ShardTail is one repartition-tail record of the manifest (a tailID).
type ShardTail struct {
	X      uint8
	H1, H2 uint64
	TS     int64
	FP     uint64
}

// ShardSnapshot is the snapshot of a sharded audit, taken once by index 0
// in the order docs/design.md proves sound and read by every shard: the
// manifest's body.
type ShardSnapshot struct {
	Group       map[kread.TP]int64
	GroupActive bool
	GroupInfo   finding.Group
	Recheck     map[kread.TP]int64
	First       map[kread.TP]detect.FirstRecord
	Holders     map[string]map[int32]*finding.TxnHolder
	HolderErr   map[string]map[int32]string
	StartHW     map[string]map[int32]int64
	Inputs      []snapshot.Topic
	Reparts     []snapshot.Topic
	Changelogs  []snapshot.Topic
	Output      snapshot.Topic
	// Tails are the repartition-tail records; TailsOver says there were
	// more than the collector holds (the check then matches them).
	Tails     []ShardTail
	TailsOver bool
	// TaskParts is the task partitions: the partition count of every
	// repartition topic and changelog.
	TaskParts int
	// Records and Issues are what reading the repartition topics read;
	// TopicRecords the records by topic.
	Records      int64
	Issues       []finding.ReadIssue
	TopicRecords map[string]int64
	// Step is the number of a reconcile step's snapshot (0 for an audit);
	// Prev the checkpoint of the step before (JSON; nil for the baseline):
	// the step's read plan follows from it and the snapshot.
	Step int64
	Prev []byte
}

// ShardMapResult is a map shard's part of the result besides its entries.
type ShardMapResult struct {
	Counts        []finding.InputCounts
	TimelineLevel int
	Timeline      []map[int64]finding.BucketCounts
	DecodeCounts  map[int]map[string]int64
	DecodeSamples []finding.DecodeErrorSample
	DecodeNear    map[int][]string
	Next          []detect.NextRecord
	Records       int64
	Issues        []finding.ReadIssue
	TopicRecords  map[string]int64
}

// ShardRow is a row of a reduce shard, with its evidence by type.
type ShardRow struct {
	Row     finding.Row
	Witness *finding.Witness
	Count   *finding.CountEvidence
}

// ShardReduceResult is a reduce shard's part of the result.
type ShardReduceResult struct {
	Rows                                                  []ShardRow
	CheckedChangelog, CheckedOutput, Withheld, CheckedCnt int64
	Counted                                               bool
	Pending                                               []int64
	Keys                                                  int64
	TimelineLevel                                         int
	Timeline                                              []map[int64]finding.BucketCounts
	Entries, Records                                      int64
	Issues                                                []finding.ReadIssue
	// Resolved are a reconcile step's findings of earlier steps that this
	// one found fixed; TopicRecords the records read by topic.
	Resolved     []ShardRow
	TopicRecords map[string]int64
}

// shardView restricts a collector to one shard's part.
type shardView struct {
	n, index, taskParts int
	// inputs are the input partitions a map shard reads.
	inputs map[kread.TP]bool
	// reduce restricts the changelogs and the output to the task
	// partitions p with p % n == index.
	reduce bool
	// read, when set, is called at the first changelog or output record a
	// reduce shard reads; an error it returns stops the read (tests: a
	// shard killed mid-read).
	read  func() error
	fired atomic.Bool
}

// filter returns the ranges of rs the shard reads, and their offsets.
func (v *shardView) filter(rs []kread.Range, input bool) ([]kread.Range, int64) {
	var out []kread.Range
	var total int64
	for _, r := range rs {
		keep := v.inputs[kread.TP{Topic: r.Topic, Partition: r.Partition}]
		if !input {
			keep = int(r.Partition)%v.n == v.index
		}
		if keep {
			out = append(out, r)
			total += r.To - r.From
		}
	}
	return out, total
}

// owns fails when a changelog or output record read by a reduce shard has
// a key of another shard: its evidence would be judged without the key's
// inputs (a custom partitioner, an output partitioned otherwise).
func (v *shardView) owns(key []byte, rec *kread.Record) error {
	if v.read != nil && v.fired.CompareAndSwap(false, true) {
		if err := v.read(); err != nil {
			return err
		}
	}
	if s := KeyShard(key, v.taskParts, v.n); s != v.index {
		return &UnsupportedShardingError{Reason: fmt.Sprintf("%s[%d]@%d holds a key of task partition %d (shard %d of %d), not of this partition's shard %d: the topic is not partitioned like the task partitions",
			rec.Topic, rec.Partition, rec.Offset, partitionFor(key, v.taskParts), s, v.n, v.index)}
	}
	return nil
}

// CheckShardable refuses, before anything is read, what a sharded audit
// does not support yet (docs/scale.md, "Not sharded yet").
func CheckShardable(o Options) error {
	switch {
	case !o.From.IsZero() || !o.To.IsZero():
		return &UnsupportedShardingError{Reason: "a windowed audit (window.from, window.to) is not sharded yet"}
	case o.DeadLetterTopic != "":
		return &UnsupportedShardingError{Reason: "an audit with a dead-letter queue (pipeline.dead_letter_topic) is not sharded yet"}
	case o.Output == "":
		return &UnsupportedShardingError{Reason: "an aggregation ending in its changelog (no output topic) is not sharded yet"}
	case o.OutputKey != nil:
		return &UnsupportedShardingError{Reason: "output keys normalized to the selected key's form (Avro-framed keys) are not sharded yet"}
	}
	if o.Cogroup {
		return &UnsupportedShardingError{Reason: "a cogroup (one store fed by several inputs) is not sharded yet"}
	}
	for _, in := range o.Inputs {
		if in.BufferTopic != "" {
			return &UnsupportedShardingError{Reason: fmt.Sprintf("input %s reaches the output through a suppress buffer: not sharded yet", in.Name)}
		}
		if in.Window != nil {
			return &UnsupportedShardingError{Reason: fmt.Sprintf("input %s is a windowed aggregation: not sharded yet", in.Name)}
		}
		if in.GroupBy {
			return &UnsupportedShardingError{Reason: fmt.Sprintf("input %s is read by a table whose groupBy feeds a count, reduce or aggregate (each input key's last record by offset): not sharded yet", in.Name)}
		}
		if in.Table {
			return &UnsupportedShardingError{Reason: fmt.Sprintf("input %s is read by a table source (its last record by offset per key, per input partition): not sharded yet", in.Name)}
		}
		if in.DownstreamKey != nil {
			return &UnsupportedShardingError{Reason: fmt.Sprintf("input %s: keys normalized to the selected key's form (Avro-framed keys) are not sharded yet", in.Name)}
		}
	}
	return nil
}

// TakeShardSnapshot takes the snapshot of a sharded audit of n shards, exactly
// as Run takes it (the repartition topics read between its halves), and
// hands every repartition entry to emit with the reduce shard that owns
// its key (KeyShard). o.Store is its scratch index.
func TakeShardSnapshot(ctx context.Context, o Options, n int, emit func(shard int, key []byte, e index.Entry) error) (*ShardSnapshot, error) {
	return takeShardSnapshot(ctx, o, n, emit, nil, nil)
}

// takeShardSnapshot is TakeShardSnapshot; setup, when set, prepares the
// pass (a step's read plan), and finish completes the snapshot.
func takeShardSnapshot(ctx context.Context, o Options, n int, emit func(shard int, key []byte, e index.Entry) error, setup func(*modePass), finish func(*ShardSnapshot)) (*ShardSnapshot, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := CheckShardable(o); err != nil {
		return nil, err
	}
	p := &modePass{o: o}
	if setup != nil {
		setup(p)
	}
	if err := o.Store.Reset(); err != nil {
		return nil, err
	}
	w := o.Store.NewWriter()
	p.Start(w, o.Now())
	err = func() error {
		if err := p.Snapshot(ctx); err != nil {
			return err
		}
		if err := p.Tails(ctx); err != nil {
			return err
		}
		return p.Settle(ctx)
	}()
	if err != nil {
		w.Cancel()
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	s := p.snap
	out := &ShardSnapshot{Group: s.group, GroupActive: s.groupActive, GroupInfo: s.groupInfo, Recheck: s.recheck, First: s.first,
		Holders: s.holders, HolderErr: s.holderErr, StartHW: s.startHW, Inputs: s.inputs, Reparts: s.reparts,
		Changelogs: s.changelogs, Output: s.output, TailsOver: !p.col.tails.complete(),
		Records: p.col.stats.Records(), Issues: p.col.stats.Issues(), TopicRecords: topicRecords(o, s, p.col)}
	if finish != nil {
		finish(out)
	}
	for id := range p.col.tails.m {
		out.Tails = append(out.Tails, ShardTail{X: id.x, H1: id.h1, H2: id.h2, TS: id.ts, FP: id.fp})
	}
	for _, t := range append(append([]snapshot.Topic{}, s.reparts...), s.changelogs...) {
		if out.TaskParts == 0 {
			out.TaskParts = len(t.Parts)
		}
		if len(t.Parts) != out.TaskParts {
			return nil, &UnsupportedShardingError{Reason: fmt.Sprintf("%s has %d partitions, another repartition topic or changelog %d: the task partitions are not one set", t.Name, len(t.Parts), out.TaskParts)}
		}
	}
	if po := len(s.output.Parts); po != out.TaskParts && (out.TaskParts%n != 0 || po%n != 0) {
		return nil, &UnsupportedShardingError{Reason: fmt.Sprintf("the output %s has %d partitions and the tasks %d: with %d shards its keys do not fall on their task partitions' shards (use a shard count dividing both)", s.output.Name, po, out.TaskParts, n)}
	}
	err = o.Store.EachKey(func(key []byte, c *index.Cursor) error {
		for c.Next() {
			if err := emit(KeyShard(key, out.TaskParts, n), key, c.Entry()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit: routing the repartition entries: %w", err)
	}
	return out, nil
}

// restore turns a manifest's snapshot back into the pass's.
func (d *ShardSnapshot) restore() *pipelineSnapshot {
	return &pipelineSnapshot{group: d.Group, groupActive: d.GroupActive, groupInfo: d.GroupInfo, recheck: d.Recheck, first: d.First,
		holders: d.Holders, holderErr: d.HolderErr, startHW: d.StartHW, inputs: d.Inputs, reparts: d.Reparts,
		changelogs: d.Changelogs, output: d.Output}
}

// shardCollector is a collector over the manifest's snapshot, its tail
// set restored.
func shardCollector(o Options, d *ShardSnapshot, w entryWriter, v *shardView) *collector {
	c := newCollector(o, d.restore(), nil, w)
	c.shard = v
	if d.TailsOver {
		c.tails.over = true
	}
	for _, t := range d.Tails {
		if c.tails.m == nil {
			c.tails.m = map[tailID]struct{}{}
		}
		c.tails.m[tailID{x: t.X, h1: t.H1, h2: t.H2, ts: t.TS, fp: t.FP}] = struct{}{}
	}
	return c
}

// MapInputs returns the input partitions map shard shard of n reads: the
// (input, partition) pairs in input and partition order, dealt round-robin.
func (d *ShardSnapshot) MapInputs(n, shard int) map[kread.TP]bool {
	out := map[kread.TP]bool{}
	j := 0
	for _, t := range d.Inputs {
		for _, p := range t.Parts {
			if j%n == shard {
				out[kread.TP{Topic: t.Name, Partition: p}] = true
			}
			j++
		}
	}
	return out
}

// ShardMap reads map shard shard's input partitions up to the manifest's
// bounds, combines their evidence per key in o.Store and hands every entry
// to emit; it returns the shard's counters.
func ShardMap(ctx context.Context, o Options, d *ShardSnapshot, n, shard int, emit Emit) (*ShardMapResult, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := o.Store.Reset(); err != nil {
		return nil, err
	}
	w := o.Store.NewWriter()
	c := shardCollector(o, d, newEntryWriter(w), &shardView{n: n, index: shard, taskParts: d.TaskParts, inputs: d.MapInputs(n, shard)})
	if d.Step > 0 {
		// A reconcile step's map reads what the step's plan says: the
		// input records processed since the previous step.
		if c.plan, _, _, _, err = d.stepPlan(o, c.snap); err != nil {
			w.Cancel()
			return nil, err
		}
	}
	for x := range o.Inputs {
		if err := c.readInput(ctx, x); err != nil {
			w.Cancel()
			return nil, err
		}
	}
	if d.Step > 0 && !d.GroupActive && o.From.IsZero() {
		if err := c.readNext(ctx); err != nil {
			w.Cancel()
			return nil, err
		}
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	err = o.Store.EachKey(func(key []byte, cur *index.Cursor) error {
		for cur.Next() {
			if err := emit(key, cur.Entry()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("audit: routing the input entries: %w", err)
	}
	res := &ShardMapResult{Next: c.nextRecords(), Records: c.stats.Records(), Issues: c.stats.Issues(), TopicRecords: topicRecords(o, c.snap, c),
		DecodeCounts: c.decode.PerInput(), DecodeSamples: c.decode.Samples, DecodeNear: c.decode.Near}
	for x := range c.counts {
		res.Counts = append(res.Counts, c.counts[x].counts())
	}
	res.TimelineLevel, res.Timeline = c.timeline.level, c.timeline.inputs
	return res, nil
}

// ShardReduce judges the keys of reduce shard shard: load hands it every
// entry routed to it (the snapshot's and the maps'), then it reads its task
// partitions of the changelogs and the output up to the manifest's bounds
// and runs the check. read, when not nil, is called at the first
// changelog or output record read; an error it returns stops the reduce
// (a shard killed mid-read, in tests).
func ShardReduce(ctx context.Context, o Options, d *ShardSnapshot, n, shard int, load func(add Emit) error, read func() error) (*ShardReduceResult, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := o.Store.Reset(); err != nil {
		return nil, err
	}
	w := o.Store.NewWriter()
	c := shardCollector(o, d, newEntryWriter(w), &shardView{n: n, index: shard, taskParts: d.TaskParts, reduce: true, read: read})
	coalesce := c.tails.complete()
	err = func() error {
		// Entries are added as the single audit adds them (AddFirst for
		// what it combines), so the index holds the same entries.
		err := load(func(key []byte, e index.Entry) error {
			if len(e.Fields) < 1 || int(e.Fields[0]) >= len(o.Inputs) {
				return fmt.Errorf("audit: a routed entry %#x of key %x has no input of this pipeline", e.Tag, key)
			}
			if e.Tag == tagInput && coalesce && !o.Inputs[e.Fields[0]].Count {
				return w.AddFirst(key, e.Tag, 1, e.Fields, e.Value)
			}
			if e.Tag != tagInput && e.Tag != tagRepartition {
				return fmt.Errorf("audit: a routed entry %#x of key %x is neither an input's nor a repartition topic's", e.Tag, key)
			}
			return w.Add(key, e.Tag, e.Fields, e.Value)
		})
		if err != nil {
			return err
		}
		return c.readTaskStages(ctx)
	}()
	if err != nil {
		w.Cancel()
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	parts := partitionFindings(o, c.snap, c, nil)
	chk, err := check(o, c.snap, stuckPartitions(parts), c.timeline, nil, nil)
	if err != nil {
		return nil, err
	}
	res := &ShardReduceResult{CheckedChangelog: chk.checkedChangelog, CheckedOutput: chk.checkedOutput, Withheld: chk.withheld,
		CheckedCnt: chk.checkedCount, Counted: chk.counted, Pending: chk.pending, Keys: chk.keys,
		TimelineLevel: c.timeline.level, Timeline: c.timeline.inputs, Entries: w.Entries(), Records: c.stats.Records(), Issues: c.stats.Issues()}
	if res.Rows, err = shardRows(chk.rows); err != nil {
		return nil, err
	}
	return res, nil
}

// shardRows turns rows into what a reduce hands the merge: the evidence
// by type.
func shardRows(rows []finding.Row) ([]ShardRow, error) {
	var out []ShardRow
	for _, r := range rows {
		sr := ShardRow{Row: r}
		switch ev := r.Evidence.(type) {
		case nil:
		case *finding.Witness:
			sr.Witness = ev
		case *finding.CountEvidence:
			sr.Count = ev
		default:
			return nil, fmt.Errorf("audit: a row's evidence of type %s cannot be handed to the merge", r.Evidence.EvidenceKind())
		}
		sr.Row.Evidence = nil
		out = append(out, sr)
	}
	return out, nil
}

// restoreRows is the inverse of shardRows.
func restoreRows(rs []ShardRow) []finding.Row {
	var out []finding.Row
	for _, sr := range rs {
		row := sr.Row
		switch {
		case sr.Witness != nil:
			row.Evidence = sr.Witness
		case sr.Count != nil:
			row.Evidence = sr.Count
		}
		out = append(out, row)
	}
	return out
}

// readTaskStages reads a reduce shard's task partitions of the changelogs
// and the output.
func (c *collector) readTaskStages(ctx context.Context) error {
	o := c.o
	for x, in := range o.Inputs {
		if err := c.readStage(ctx, "changelog "+in.ChangelogTopic, c.snap.changelogs[x].Name, x, false, in.Count, in.DownstreamKey); err != nil {
			return err
		}
	}
	return c.readStage(ctx, "output "+o.Output, o.Output, 0, true, false, o.OutputKey)
}

// ShardMerge assembles the result of a sharded audit from the manifest's
// snapshot and every map's and reduce's part: rows in the one row order,
// counters summed, the partition-level detectors over the snapshot, the
// verdict from the whole. started is when index 0 began.
func ShardMerge(ctx context.Context, o Options, d *ShardSnapshot, maps []*ShardMapResult, reduces []*ShardReduceResult, started time.Time) (*finding.Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	c, chk, records, entries, issues, err := mergeParts(o, d, maps, reduces)
	if err != nil {
		return nil, err
	}
	snap := c.snap
	var prev map[kread.TP]history.Entry
	if o.History != nil {
		if prev, err = o.History.Load(o.Group); err != nil {
			return nil, err
		}
	}
	parts := partitionFindings(o, snap, c, prev)
	res := assemble(ctx, o, snap, c, chk, parts, auditCounts(c, chk))
	res.Summary.Reads = sortIssues(issues)
	res.Summary.Index = finding.IndexStats{RecordsRead: records, Entries: entries}
	res.Summary.Started, res.Summary.Finished = started, o.Now()
	if o.History != nil {
		if err := o.History.Record(o.Group, snap.partitions(), started); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
	}
	return res, nil
}

// mergeParts sums the maps' and the reduces' parts over a collector of the
// snapshot d: the counters, timelines, decode errors and next records in
// the collector, the rows and the check's counters in the checked, and
// the records read, the index entries and the read issues.
func mergeParts(o Options, d *ShardSnapshot, maps []*ShardMapResult, reduces []*ShardReduceResult) (*collector, *checked, int64, int64, []finding.ReadIssue, error) {
	c := shardCollector(o, d, entryWriter{}, nil)
	chk := &checked{pending: make([]int64, len(o.Inputs))}
	records := d.Records
	issues := append([]finding.ReadIssue{}, d.Issues...)
	var entries int64
	for i, m := range maps {
		if len(m.Counts) != len(o.Inputs) || len(m.Timeline) != len(o.Inputs) {
			return nil, nil, 0, 0, nil, fmt.Errorf("audit: map %d counted %d inputs, the pipeline has %d", i, len(m.Counts), len(o.Inputs))
		}
		for x, k := range m.Counts {
			cnt := &c.counts[x]
			cnt.scanned.Add(k.Scanned)
			cnt.outside.Add(k.OutsideWindow)
			cnt.pending.Add(k.Pending)
			cnt.nullValue.Add(k.NullValue)
			cnt.undecodable.Add(k.DecodeErrors)
			cnt.nullKey.Add(k.NullKey)
			cnt.candidates.Add(k.Audited)
		}
		c.timeline.merge(m.TimelineLevel, m.Timeline)
		c.decode.Merge(m.DecodeCounts, m.DecodeSamples, m.DecodeNear)
		for _, nr := range m.Next {
			c.next[kread.TP{Topic: nr.Topic, Partition: nr.Partition}] = nr
		}
		records += m.Records
		issues = append(issues, m.Issues...)
	}
	for i, r := range reduces {
		if len(r.Pending) != len(o.Inputs) || len(r.Timeline) != len(o.Inputs) {
			return nil, nil, 0, 0, nil, fmt.Errorf("audit: reduce %d judged %d inputs, the pipeline has %d", i, len(r.Pending), len(o.Inputs))
		}
		chk.rows = append(chk.rows, restoreRows(r.Rows)...)
		chk.checkedChangelog += r.CheckedChangelog
		chk.checkedOutput += r.CheckedOutput
		chk.withheld += r.Withheld
		chk.checkedCount += r.CheckedCnt
		chk.counted = chk.counted || r.Counted
		chk.keys += r.Keys
		for x := range r.Pending {
			chk.pending[x] += r.Pending[x]
		}
		c.timeline.merge(r.TimelineLevel, r.Timeline)
		records += r.Records
		entries += r.Entries
		issues = append(issues, r.Issues...)
	}
	for _, in := range o.Inputs {
		chk.counted = chk.counted || in.Count
	}
	return c, chk, records, entries, issues, nil
}

// IsUnsupportedSharding reports whether err says the audit cannot be
// sharded.
func IsUnsupportedSharding(err error) bool {
	var u *UnsupportedShardingError
	return errors.As(err, &u)
}

// sortIssues orders read issues as collect.Stats does: by topic and
// partition (the shards read disjoint partitions).
func sortIssues(is []finding.ReadIssue) []finding.ReadIssue {
	slices.SortFunc(is, func(a, b finding.ReadIssue) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	if len(is) == 0 {
		return nil
	}
	return is
}

// merge adds a shard's timeline (kept at level) to t: t moves to the
// coarser of the two levels first (each level's width is a multiple of the
// ones before, so the shard's buckets fall exactly into t's), then coarsens
// as the single audit's timeline does when an input has too many buckets.
func (t *timeline) merge(level int, in []map[int64]finding.BucketCounts) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.level < level && t.coarsen() {
	}
	w := t.width.Load()
	for x, m := range in {
		for k, c := range m {
			k = floorTo(k, w)
			old := t.inputs[x][k]
			old.Audited += c.Audited
			old.Pending += c.Pending
			t.inputs[x][k] = old
		}
	}
	for x := range t.inputs {
		for len(t.inputs[x]) > maxTimelineBuckets && t.coarsen() {
		}
	}
}
