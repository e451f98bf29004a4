package streams

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// deadLetterQueue is what a run learns from the application's dead-letter
// queue (Options.DeadLetterTopic; Kafka Streams 4.2+, KIP-1034): which
// input records the application dropped on purpose. They are neither
// audited nor lost.
//
// A dead-letter record names the record the failing task was processing:
// an input record (a deserialization error, or a processing error before
// the repartition) or, after a repartition, the input record's copy in
// the repartition topic. That copy may be purged by the time the audit
// reads it, but the dead-letter record carries its raw key and value and
// its timestamp (ExceptionHandlerUtils copies them), which identify the
// input record as the repartition tails do (selected key, timestamp,
// value fingerprint).
type deadLetterQueue struct {
	topic   string
	missing bool
	snap    snapshot.Topic

	idx        detect.DeadLetters
	copies     map[tailID]int // second-hop dead letters by the copy's identity
	read       atomic.Int64
	unreadable atomic.Int64

	byInput []atomic.Int64
	// fromState counts, per input, the records a reconcile step exempted
	// from its state (pending at the second hop in an earlier step): the
	// earlier step counted them as candidates.
	fromState []atomic.Int64
	// step is set in a reconcile step (see resume); prev is what the last
	// step kept (nil for the baseline) and meta the copy identity of each
	// indexed record, to carry the ones not yet due.
	step bool
	prev *cpDeadLetters
	meta map[int]dlCopy

	mu     sync.Mutex // guards listed, unlisted
	listed []finding.DeadLettered
	// unlisted counts the records past finding.MaxDeadLettered.
	unlisted int64
}

// newDeadLetterQueue returns the run's view of topic ("" for none).
func newDeadLetterQueue(topic string, inputs int) *deadLetterQueue {
	if topic == "" {
		return nil
	}
	return &deadLetterQueue{topic: topic, copies: map[tailID]int{}, byInput: make([]atomic.Int64, inputs),
		fromState: make([]atomic.Int64, inputs)}
}

// settle completes the snapshot of the dead-letter topic, after the
// downstream topics': its high watermark, then each partition once its LSO
// reached it, as for a changelog. A dead-letter record is written in the
// transaction that commits the consumed offset past the failed record, so
// the dead-letter record of every record counted as processed committed
// before the group offsets were read, below this mark; once the LSO reaches
// the mark it is read committed. A partition that does not settle is
// stuck_lso, and every row is withheld (any could be a dead-lettered
// record). A topic that does not exist after the offsets were read held no
// record when they were read.
func (q *deadLetterQueue) settle(ctx context.Context, o Options, s *pipelineSnapshot) error {
	if q == nil {
		return nil
	}
	hw, err := q.highWatermarks(ctx, o)
	if err != nil || q.missing {
		return err
	}
	s.startHW[q.topic] = hw
	if q.snap, err = snapshot.Settle(ctx, o.Kafka, q.topic, hw, o.Now().Add(o.SettleTimeout), o.SettlePoll, o.Now); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	s.nameHoldersOf(ctx, o, []snapshot.Topic{q.snap})
	return ctx.Err()
}

// stuck returns the stuck_lso findings of the dead-letter topic.
func (q *deadLetterQueue) stuck(o Options, s *pipelineSnapshot) []finding.PartitionFinding {
	if q == nil || q.missing {
		return nil
	}
	return detect.StuckLSO(q.snap, s.startHW[q.topic], o.SettleTimeout, s.holders[q.topic], s.holderErr[q.topic])
}

func (q *deadLetterQueue) highWatermarks(ctx context.Context, o Options) (map[int32]int64, error) {
	if _, err := o.Kafka.Partitions(ctx, q.topic); err != nil {
		if errors.Is(err, kread.ErrUnknownTopic) {
			q.missing = true
			return nil, nil
		}
		return nil, fmt.Errorf("audit: dead-letter topic %s: %w", q.topic, err)
	}
	hw, err := snapshot.HighWatermarks(ctx, o.Kafka, q.topic)
	if err != nil {
		return nil, fmt.Errorf("audit: dead-letter topic: %w", err)
	}
	return hw, nil
}

// load reads the dead-letter topic (read committed) and indexes its
// records by the source record each names. Second-hop records (naming a
// repartition topic's record below the group's committed offset) are
// indexed by their copy's identity too. A reconcile step first indexes
// the records the last step carried, then reads each partition from where
// the last step stopped (see resume).
func (q *deadLetterQueue) load(ctx context.Context, c *collector) error {
	reparts := map[string]int{}
	for x, in := range c.o.Inputs {
		reparts[in.RepartitionTopic] = x
	}
	if q.prev != nil {
		for _, d := range q.prev.Carried {
			if err := q.add(c, reparts, d.DeadLetterRecord, d.C); err != nil {
				return fmt.Errorf("audit: dead-letter topic %s: carried record %s[%d]@%d: %w", q.topic, q.topic, d.DLQPartition, d.DLQOffset, err)
			}
		}
	}
	if q.missing {
		q.idx.Seal()
		return nil
	}
	rs, total := collect.Ranges(q.snap, q.start(), nil)
	var mu sync.Mutex
	err := collect.Read(ctx, c.o.Kafka, collect.Spec{Name: "dead-letter " + q.topic, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) error {
		q.read.Add(int64(len(recs)))
		for i := range recs {
			rec := &recs[i]
			src, err := detect.ParseDeadLetter(rec.Headers)
			if err != nil {
				q.unreadable.Add(1)
				continue
			}
			dl := detect.DeadLetterRecord{DeadLetterSource: src, DLQPartition: rec.Partition, DLQOffset: rec.Offset}
			var cp *dlCopy
			if rec.Key != nil && rec.Value != nil {
				cp = &dlCopy{Key: rec.Key, TS: rec.Timestamp, FP: fingerprint(rec.Value)}
			}
			mu.Lock()
			err = q.add(c, reparts, dl, cp)
			mu.Unlock()
			if err != nil {
				return fmt.Errorf("%s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: reading dead-letter topic %s: %w", q.topic, err)
	}
	q.idx.Seal()
	return nil
}

// dlCopy is the copy a dead-letter record carries of the record it names:
// its raw key, timestamp and value fingerprint.
type dlCopy struct {
	Key []byte `json:"key"`
	TS  int64  `json:"ts"`
	FP  uint64 `json:"fp"`
}

// add indexes one dead-letter record (cp is its copy, nil when its key or
// value is null). Callers serialize.
func (q *deadLetterQueue) add(c *collector, reparts map[string]int, dl detect.DeadLetterRecord, cp *dlCopy) error {
	n, err := q.idx.Add(dl)
	if err != nil {
		return err
	}
	if q.step && cp != nil {
		if q.meta == nil {
			q.meta = map[int]dlCopy{}
		}
		if _, dup := q.meta[n]; !dup {
			q.meta[n] = *cp
		}
	}
	x, ok := reparts[dl.Topic]
	if !ok || cp == nil {
		return nil
	}
	committed, ok := c.snap.group[kread.TP{Topic: dl.Topic, Partition: dl.Partition}]
	if !ok || dl.Offset >= committed {
		return nil
	}
	key := cp.Key
	if in := c.o.Inputs[x]; in.DownstreamKey != nil {
		key = in.DownstreamKey(key)
	}
	id := newTailID(uint8(x), key, cp.TS, cp.FP)
	if _, dup := q.copies[id]; !dup {
		q.copies[id] = n
	}
	return nil
}

// resume makes q a reconcile step's, after the checkpoint cp of the last
// step (nil for the baseline). With whole (a pipeline with a table source,
// whose input a step reads whole), the step reads the queue whole too, as
// an audit does: a record read again may have been dead-lettered in a
// record an earlier step read.
func (q *deadLetterQueue) resume(cp *checkpoint, whole bool) {
	if q == nil {
		return
	}
	q.step = true
	if cp != nil && !whole {
		q.prev = cp.DeadLetters
	}
}

// start returns where a step reads each dead-letter partition from: where
// the last step stopped (its LSO), or the log start when the last step read
// another topic or none, or when the partition's high watermark is below
// that position (truncated, or the topic recreated). Records the retention
// deleted before any step read them are not read: they exempt nothing (the
// records they name are reported lost, as by an audit). An audit reads
// every partition from its log start (nil).
func (q *deadLetterQueue) start() map[int32]int64 {
	if q.prev == nil || q.prev.Topic != q.topic {
		return nil
	}
	out := map[int32]int64{}
	for _, p := range q.prev.Parts {
		if of, ok := q.snap.Offsets[p.Partition]; ok && p.Next <= of.HighWatermark {
			out[p.Partition] = p.Next
		}
	}
	return out
}

// cpDeadLetters is what a reconcile step keeps of the dead-letter queue
// for the next one.
//
// Invariant: after a committed step, every committed dead-letter record
// that could still exempt a record a later step judges is either above
// Parts' positions (the next step reads it) or in Carried. Proof: a
// dead-letter record is committed in the transaction that commits the
// consumed offset past the record it names, so once a step reads a group
// offset past that record, the dead-letter record is below the high
// watermark the step settles the queue at afterwards, and the step reads
// it. A record named below the committed offset of its partition is
// judged by this step or was by an earlier one: an input record is read
// by the step whose committed offset passes it, a repartition copy's
// input record was read no later (the copy is written in the transaction
// that commits the input offset past it) and, if its copy was pending
// then, is in the key's state, judged again in every step (stepVisitor).
// So a dead-letter record naming a record below the committed offset has
// done its work after this step; one naming a record at or above it
// (written after the group offsets were read, or by a handler that did
// not skip the record) is carried until a step sees it below.
type cpDeadLetters struct {
	Topic string `json:"topic"`
	// Parts are the positions the next step reads each partition from.
	Parts []cpDLQPart `json:"partitions"`
	// Carried are the records read that named a record not yet
	// processed (at or above the committed offset of its partition).
	Carried []cpDeadLetter `json:"carried,omitempty"`
}

// cpDLQPart is where the next step reads a dead-letter partition from.
type cpDLQPart struct {
	Partition int32 `json:"partition"`
	Next      int64 `json:"next"`
}

// cpDeadLetter is a carried dead-letter record.
type cpDeadLetter struct {
	detect.DeadLetterRecord
	C *dlCopy `json:"copy,omitempty"`
}

// checkpoint returns what the step keeps of the queue for the next one.
func (q *deadLetterQueue) checkpoint(o Options, snap *pipelineSnapshot) *cpDeadLetters {
	if q == nil {
		return nil
	}
	out := &cpDeadLetters{Topic: q.topic}
	if !q.missing {
		for _, p := range q.snap.Parts {
			out.Parts = append(out.Parts, cpDLQPart{Partition: p, Next: q.snap.Offsets[p].LSO})
		}
	}
	named := map[string]bool{}
	for _, in := range o.Inputs {
		named[in.Topic], named[in.RepartitionTopic] = true, true
	}
	for i := range q.idx.Len() {
		r := q.idx.Record(i)
		if !named[r.Topic] {
			continue // names no record of this pipeline: exempts nothing, ever
		}
		if c, ok := snap.group[kread.TP{Topic: r.Topic, Partition: r.Partition}]; ok && r.Offset < c {
			continue // its record is judged (see the invariant)
		}
		r.Message = clip(r.Message, 300) // as listed: the state stays small
		d := cpDeadLetter{DeadLetterRecord: r}
		if m, ok := q.meta[i]; ok {
			d.C = &m
		}
		out.Carried = append(out.Carried, d)
	}
	return out
}

// exempt reports whether input x's record rec (its selected key, the
// timestamp the application sees and its value fingerprint, when a
// candidate) was dead-lettered, and lists it if so. processed says whether
// its offset is below the group's committed offset; fromState that a
// reconcile step judges it from its state (an earlier step read it).
func (q *deadLetterQueue) exempt(x int, name string, rec *kread.Record, processed, candidate, fromState bool, key []byte, ts int64, fp uint64) bool {
	if q == nil || !processed {
		return false
	}
	dl, ok := q.idx.Exempt(kread.TP{Topic: rec.Topic, Partition: rec.Partition}, rec.Offset, processed)
	via := false
	if !ok && candidate && len(q.copies) > 0 {
		var i int
		if i, ok = q.copies[newTailID(uint8(x), key, ts, fp)]; ok {
			q.idx.Use(i)
			dl, via = q.idx.Record(i), true
		}
	}
	if !ok {
		return false
	}
	q.byInput[x].Add(1)
	if fromState {
		q.fromState[x].Add(1)
	}
	d := finding.DeadLettered{Input: name, Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp,
		DLQPartition: dl.DLQPartition, DLQOffset: dl.DLQOffset, Exception: dl.Exception, Message: clip(dl.Message, 300)}
	if via {
		d.ViaTopic, d.ViaPartition, d.ViaOffset = dl.Topic, dl.Partition, dl.Offset
	}
	q.mu.Lock()
	if len(q.listed) < finding.MaxDeadLettered {
		q.listed = append(q.listed, d)
	} else {
		q.unlisted++
	}
	q.mu.Unlock()
	return true
}

// clip shortens s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// section is the run's dead-letter section.
func (q *deadLetterQueue) section(o Options) *finding.DeadLetters {
	out := &finding.DeadLetters{Topic: q.topic, Missing: q.missing, Read: q.read.Load(), Unreadable: q.unreadable.Load(),
		Unmatched: q.idx.Unused(), Unlisted: q.unlisted}
	order := map[string]int{}
	for x, in := range o.Inputs {
		order[in.Name] = x
		out.ByInput = append(out.ByInput, finding.InputDeadLetters{Input: in.Name, Count: q.byInput[x].Load()})
	}
	out.Records = slices.Clone(q.listed)
	slices.SortFunc(out.Records, func(a, b finding.DeadLettered) int {
		return cmp.Or(cmp.Compare(order[a.Input], order[b.Input]), cmp.Compare(a.Topic, b.Topic),
			cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Offset, b.Offset))
	})
	if out.Records == nil {
		out.Records = []finding.DeadLettered{}
	}
	return out
}
