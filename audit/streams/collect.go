package streams

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// inputCounters are one input's counters while the reads run.
type inputCounters struct {
	scanned, outside, pending, nullValue, undecodable, nullKey, candidates atomic.Int64
}

func (c *inputCounters) counts() finding.InputCounts {
	return finding.InputCounts{
		Scanned: c.scanned.Load(), OutsideWindow: c.outside.Load(), Pending: c.pending.Load(),
		NullValue: c.nullValue.Load(), DecodeErrors: c.undecodable.Load(), NullKey: c.nullKey.Load(),
		Audited: c.candidates.Load(),
	}
}

// readPlan says which offsets of each partition a run reads. A nil plan
// reads what an audit does: every partition from its log start (or the
// window start) to its LSO.
type readPlan struct {
	// from holds start offsets; a partition missing from it starts at its
	// log start, or with a window at the window start.
	from map[kread.TP]int64
	// to holds end offsets (exclusive) below the LSO; a partition missing
	// from it is read to its LSO.
	to map[kread.TP]int64
}

// bounds returns the plan's start and end offsets of topic's partitions,
// starting from start (the window start, or nil).
func (p *readPlan) bounds(topic string, parts []int32, start map[int32]int64) (from, to map[int32]int64) {
	if p == nil {
		return start, nil
	}
	from, to = map[int32]int64{}, map[int32]int64{}
	for _, part := range parts {
		tp := kread.TP{Topic: topic, Partition: part}
		if o, ok := p.from[tp]; ok {
			from[part] = o
		} else if o, ok := start[part]; ok {
			from[part] = o
		}
		if o, ok := p.to[tp]; ok {
			to[part] = o
		}
	}
	return from, to
}

// ranges returns what the plan reads of t, starting from start (the window
// start, or nil).
func (c *collector) ranges(t snapshot.Topic, start map[int32]int64) ([]kread.Range, int64) {
	from, to := c.plan.bounds(t.Name, t.Parts, start)
	return collect.Ranges(t, from, to)
}

// collector reads the pipeline's topics into the index.
type collector struct {
	o      Options
	snap   *pipelineSnapshot
	plan   *readPlan
	w      entryWriter
	stats  collect.Stats
	counts []inputCounters
	decode engine.DecodeErrors
	win    window
	tails  tailSet
	// timeline counts the audited and pending input records by timestamp.
	timeline *timeline
	// dlq is the application's dead-letter queue; nil without one.
	dlq *deadLetterQueue
	// shard, when set, restricts the reads to one shard's part of a
	// sharded audit (shard.go).
	shard *shardView

	// windowFrom holds, per input partition, the window start offset the
	// read began at (windowed runs).
	windowFrom map[kread.TP]int64
	// tableFrom holds, per partition of a table source's changelog, the
	// window start offset its read began at (windowed runs): a step drops
	// the changelog records its state holds below it, which an audit of
	// the window does not read.
	tableFrom map[kread.TP]int64
	// win2 counts what a windowed aggregation's reads gave (windowagg.go).
	win2 windowCounters

	mu sync.Mutex // guards next
	// next holds, per input partition, the first committed record at or
	// after the group's committed offset (unwindowed audits only).
	next map[kread.TP]detect.NextRecord
}

func newCollector(o Options, snap *pipelineSnapshot, plan *readPlan, w entryWriter) *collector {
	c := &collector{o: o, snap: snap, plan: plan, w: w, counts: make([]inputCounters, len(o.Inputs)), next: map[kread.TP]detect.NextRecord{},
		timeline: newTimeline(len(o.Inputs)), dlq: newDeadLetterQueue(o.DeadLetterTopic, len(o.Inputs))}
	c.tails.limit = o.maxTails
	if !o.From.IsZero() {
		c.win.from = o.From.UnixMilli()
	}
	if !o.To.IsZero() {
		c.win.to = o.To.UnixMilli()
	}
	return c
}

// readTails reads the repartition topics: their tails decide which input
// records are pending at the second hop. It runs between the two halves
// of the snapshot (settleDownstream says why).
func (c *collector) readTails(ctx context.Context) error {
	for x := range c.o.Inputs {
		if c.o.Inputs[x].Window != nil {
			continue // read whole after the snapshot (readWindowInput)
		}
		if err := c.readRepartition(ctx, x); err != nil {
			return err
		}
	}
	return nil
}

// readRest reads, after the snapshot is complete, the inputs, the
// changelogs and the output.
func (c *collector) readRest(ctx context.Context) error {
	if c.dlq != nil {
		if err := c.dlq.load(ctx, c); err != nil {
			return err
		}
	}
	for x := range c.o.Inputs {
		read := c.readInput
		if c.o.Inputs[x].Table {
			read = c.readTableInput
		}
		if c.o.Inputs[x].Window != nil {
			read = c.readWindowInput
		}
		if c.o.Inputs[x].GroupBy {
			read = c.readGroupByInput
		}
		if err := read(ctx, x); err != nil {
			return err
		}
	}
	done := map[string]bool{} // changelogs read (a cogroup's inputs share one)
	for x, in := range c.o.Inputs {
		if in.Table {
			if in.ChangelogTopic == "" {
				continue // restored from the input topic: no changelog of its own
			}
			if err := c.readTableChangelog(ctx, x); err != nil {
				return err
			}
			continue
		}
		t := c.snap.changelogs[x]
		norm := in.DownstreamKey
		if in.Window != nil {
			norm = c.windowChangelogKey(x)
		}
		if done[t.Name] {
			continue
		}
		done[t.Name] = true
		also := c.sharing(x)
		if err := c.readStage(ctx, "changelog "+in.ChangelogTopic, t.Name, x, false, in.Count, norm, also...); err != nil {
			return err
		}
	}
	for x := range c.o.Inputs {
		if err := c.readBuffer(ctx, x); err != nil {
			return err
		}
	}
	if c.o.Output == "" {
		return nil // the table is the end
	}
	norm := c.o.OutputKey
	if x := c.o.windowed(); x >= 0 {
		norm = c.windowOutputKey(x)
	}
	return c.readStage(ctx, "output "+c.o.Output, c.o.Output, 0, true, false, norm)
}

// readBuffer indexes the committed records of input x's suppress buffer
// changelog, if it has one, up to its settled mark. Its keys are the
// table's (the buffer stores the serialized key).
func (c *collector) readBuffer(ctx context.Context, x int) error {
	in := c.o.Inputs[x]
	t := c.snap.buffers[x]
	if in.BufferTopic == "" || t.Name == "" {
		return nil
	}
	norm := in.DownstreamKey
	if in.Window != nil {
		norm = c.windowBufferKey(x)
	}
	rs, total := c.ranges(t, nil)
	err := collect.Read(ctx, c.o.Kafka, collect.Spec{Name: "suppress buffer " + in.BufferTopic, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) error {
		for i := range recs {
			rec := &recs[i]
			if rec.Key == nil {
				continue
			}
			key := rec.Key
			if norm != nil {
				if key = norm(key); key == nil {
					continue // too short for a windowed key
				}
			}
			if err := c.w.buffer(uint8(x), key, rec.Partition, rec.Offset, rec.Value == nil); err != nil {
				return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// windowStart returns where reading topic starts: the log start, or with a
// window start, the first offset whose timestamp is at least From (every
// record at or after From lies at or after it).
func (c *collector) windowStart(ctx context.Context, topic string) (map[int32]int64, error) {
	if c.o.From.IsZero() {
		return nil, nil
	}
	start, err := c.o.Kafka.OffsetsForTime(ctx, topic, c.o.From)
	if err != nil {
		return nil, fmt.Errorf("audit: looking up offsets of %s for %s: %w", topic, c.o.From.UTC().Format("2006-01-02T15:04:05Z07:00"), err)
	}
	return start, nil
}

func (c *collector) readRepartition(ctx context.Context, x int) error {
	in := c.o.Inputs[x]
	if in.RepartitionTopic == "" {
		return nil // a table source reads its input topic itself
	}
	t := c.snap.reparts[x]
	rs, total := c.ranges(t, nil)
	return collect.Read(ctx, c.o.Kafka, collect.Spec{Name: "repartition " + in.RepartitionTopic, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) (err error) {
		bw, file := c.w.batch()
		defer fileBatch(file, &err)
		for i := range recs {
			rec := &recs[i]
			if rec.Key == nil || rec.Value == nil {
				continue
			}
			committed, ok := c.snap.group[kread.TP{Topic: rec.Topic, Partition: rec.Partition}]
			key := rec.Key
			if in.DownstreamKey != nil {
				key = in.DownstreamKey(key)
			}
			fp, tail := fingerprint(rec.Value), !ok || rec.Offset >= committed
			if in.GroupBy {
				// A Change: only a copy with a new value is an update's
				// add, matched by group key and timestamp alone.
				if !changeHasNew(rec.Value) {
					continue
				}
				fp = 0
			}
			if tail {
				c.tails.add(newTailID(uint8(x), key, rec.Timestamp, fp))
			}
			if err := bw.repartition(uint8(x), key, rec.Timestamp, fp, tail, rec.Partition, rec.Offset); err != nil {
				return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
		}
		return nil
	})
}

func (c *collector) readInput(ctx context.Context, x int) error {
	in := &c.o.Inputs[x]
	start, err := c.windowStart(ctx, in.Topic)
	if err != nil {
		return err
	}
	t := c.snap.inputs[x]
	for p, off := range start {
		if c.windowFrom == nil {
			c.windowFrom = map[kread.TP]int64{}
		}
		c.windowFrom[kread.TP{Topic: t.Name, Partition: p}] = off
	}
	rs, total := c.ranges(t, start)
	if c.shard != nil {
		rs, total = c.shard.filter(rs, true)
	}
	cnt := &c.counts[x]
	// With every repartition-tail record in memory, a candidate pending at
	// the second hop is known as it is read, so the others can be
	// coalesced to the newest per key: the check needs no more.
	coalesce := c.tails.complete()
	seenNext := map[int32]bool{} // per partition; callbacks of one partition are sequential, in offset order
	var seenMu sync.Mutex
	err = collect.Read(ctx, c.o.Kafka, collect.Spec{Name: "input " + in.Topic, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) (err error) {
		bw, file := c.w.batch()
		defer fileBatch(file, &err)
		var n [deadLettered + 1]int64
		var nextDone bool
		if len(recs) > 0 {
			seenMu.Lock()
			nextDone = seenNext[recs[0].Partition] || !c.o.From.IsZero()
			seenMu.Unlock()
		}
		tl := c.timeline.batch()
		for i := range recs {
			rec := &recs[i]
			committed, ok := c.snap.group[kread.TP{Topic: rec.Topic, Partition: rec.Partition}]
			key, ts, status, serr := rec.Key, rec.Timestamp, DecodeError, error(nil)
			if rec.Value != nil {
				key, ts, status, serr = in.Select(rec)
				if status == Failed {
					return fmt.Errorf("selecting the key of %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, serr)
				}
				if status == DecodeError {
					ts = rec.Timestamp // the window applies to the record's own timestamp
				}
			}
			if !nextDone && ok && rec.Offset >= committed {
				nextDone = true
				c.noteNext(rec, status, serr)
				seenMu.Lock()
				seenNext[rec.Partition] = true
				seenMu.Unlock()
			}
			cl := classify(ok && rec.Offset < committed, rec.Value != nil, ts, status, c.win)
			var fp uint64
			first := coalesce && !in.Count // a count's check counts every processed record
			if cl == candidate {
				fp = fingerprint(rec.Value)
			}
			if (cl == candidate || cl == undecodable) && c.dlq.exempt(x, in.Name, rec, ok && rec.Offset < committed, cl == candidate, false, key, ts, fp) {
				cl = deadLettered
			}
			if cl == candidate {
				if coalesce && c.tails.has(newTailID(uint8(x), key, ts, fp)) {
					if c.plan == nil {
						cl = pending // its copy waits in the repartition tail: the second hop's lag
					} else {
						// A reconcile step keeps the record in its state to
						// judge it once processed: indexed as it is, the
						// check finds it pending.
						first = false
					}
				}
			}
			n[cl]++
			switch cl {
			case undecodable:
				c.decode.Add(x, rec, serr, in.FieldsNear)
			case pending:
				tl.note(ts, true)
			case candidate:
				tl.note(ts, false)
				if err := bw.input(first, uint8(x), key, ts, rec.Partition, rec.Offset, fp); err != nil {
					return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
				}
			}
		}
		c.timeline.add(x, tl)
		cnt.scanned.Add(int64(len(recs)))
		cnt.candidates.Add(n[candidate])
		cnt.outside.Add(n[outsideWindow])
		cnt.pending.Add(n[pending])
		cnt.nullValue.Add(n[nullValue])
		cnt.undecodable.Add(n[undecodable])
		cnt.nullKey.Add(n[nullKey])
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	return nil
}

// noteNext records the record the application reads next on its
// partition, and whether it decodes.
func (c *collector) noteNext(rec *kread.Record, status SelectStatus, err error) {
	n := detect.NextRecord{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset}
	if rec.Value != nil && status == DecodeError {
		n.DecodeError = fmt.Sprint(err)
	}
	c.mu.Lock()
	c.next[kread.TP{Topic: rec.Topic, Partition: rec.Partition}] = n
	c.mu.Unlock()
}

// nextRecords lists what noteNext recorded, by topic and partition.
func (c *collector) nextRecords() []detect.NextRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]detect.NextRecord, 0, len(c.next))
	for _, n := range c.next {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b detect.NextRecord) int {
		if a.Topic != b.Topic {
			return strings.Compare(a.Topic, b.Topic)
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// sharing returns the later inputs whose changelog is input x's (a
// cogroup's inputs share one), each with its key normalization: one read
// of the changelog indexes it for all of them.
func (c *collector) sharing(x int) []stageTarget {
	var out []stageTarget
	for y := x + 1; y < len(c.o.Inputs); y++ {
		in := c.o.Inputs[y]
		if c.o.Cogroup && !in.Table && in.Window == nil && in.ChangelogTopic == c.o.Inputs[x].ChangelogTopic {
			out = append(out, stageTarget{x: y, norm: in.DownstreamKey, count: in.Count})
		}
	}
	return out
}

// stageTarget is one more input a changelog read indexes its records for
// (readStage): its index, key normalization and whether it is a count.
type stageTarget struct {
	x     int
	norm  func([]byte) []byte
	count bool
}

// fileBatch files a read callback's batch (entryWriter.batch) as the
// callback returns, keeping the callback's own error first.
func fileBatch(file func() error, err *error) {
	if ferr := file(); *err == nil && ferr != nil {
		*err = fmt.Errorf("indexing: %w", ferr)
	}
}

// readStage indexes a changelog (or the output, with output); count keeps
// the values of a count's changelog. The changelog's records are indexed
// for input x and, as they are, for every input of also (inputs sharing
// the changelog).
func (c *collector) readStage(ctx context.Context, name, topic string, x int, output, count bool, norm func([]byte) []byte, also ...stageTarget) error {
	start, err := c.windowStart(ctx, topic)
	if err != nil {
		return err
	}
	t := c.snap.output
	if !output {
		t = c.snap.changelogs[x]
	}
	rs, total := c.ranges(t, start)
	if c.shard != nil {
		rs, total = c.shard.filter(rs, false)
	}
	targets := append([]stageTarget{{x: x, norm: norm, count: count}}, also...)
	err = collect.Read(ctx, c.o.Kafka, collect.Spec{Name: name, Ranges: rs, Total: total, Aborted: true, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) (err error) {
		bw, file := c.w.batch()
		defer fileBatch(file, &err)
		for i := range recs {
			rec := &recs[i]
			if rec.Key == nil {
				continue
			}
			for _, tg := range targets {
				key := rec.Key
				if tg.norm != nil {
					if key = tg.norm(key); key == nil {
						continue // a windowed key too short: counted by norm
					}
				}
				if c.shard != nil {
					if err := c.shard.owns(key, rec); err != nil {
						return err
					}
				}
				var val []byte
				if tg.count {
					val = rec.Value
				}
				if err := bw.stage(output, uint8(tg.x), key, rec.Partition, rec.Timestamp, rec.Offset, rec.Kind == kread.Aborted, rec.Value == nil, val); err != nil {
					return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}
