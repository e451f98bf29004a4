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
	mu      sync.Mutex // guards listed, unlisted
	listed  []finding.DeadLettered
	// unlisted counts the records past finding.MaxDeadLettered.
	unlisted int64
}

// newDeadLetterQueue returns the run's view of topic ("" for none).
func newDeadLetterQueue(topic string, inputs int) *deadLetterQueue {
	if topic == "" {
		return nil
	}
	return &deadLetterQueue{topic: topic, copies: map[tailID]int{}, byInput: make([]atomic.Int64, inputs)}
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
// indexed by their copy's identity too.
func (q *deadLetterQueue) load(ctx context.Context, c *collector) error {
	if q.missing {
		q.idx.Seal()
		return nil
	}
	reparts := map[string]int{}
	for x, in := range c.o.Inputs {
		reparts[in.RepartitionTopic] = x
	}
	rs, total := c.ranges(q.snap, nil)
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
			mu.Lock()
			n, err := q.idx.Add(dl)
			if err == nil {
				if x, ok := reparts[src.Topic]; ok && rec.Key != nil && rec.Value != nil {
					committed, ok := c.snap.group[kread.TP{Topic: src.Topic, Partition: src.Partition}]
					if ok && src.Offset < committed {
						key := rec.Key
						if in := c.o.Inputs[x]; in.DownstreamKey != nil {
							key = in.DownstreamKey(key)
						}
						id := newTailID(uint8(x), key, rec.Timestamp, fingerprint(rec.Value))
						if _, dup := q.copies[id]; !dup {
							q.copies[id] = n
						}
					}
				}
			}
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

// exempt reports whether input x's record rec (its selected key, the
// timestamp the application sees and its value fingerprint, when a
// candidate) was dead-lettered, and lists it if so. processed says whether
// its offset is below the group's committed offset.
func (q *deadLetterQueue) exempt(x int, name string, rec *kread.Record, processed, candidate bool, key []byte, ts int64, fp uint64) bool {
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
