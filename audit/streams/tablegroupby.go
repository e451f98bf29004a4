package streams

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// groupByInput returns the index of the input that is a table groupBy's
// aggregation (count, reduce or aggregate), -1 for none.
func (o *Options) groupByInput() int {
	for x := range o.Inputs {
		if o.Inputs[x].GroupBy {
			return x
		}
	}
	return -1
}

// checkTableGroupBy refuses what the table groupBy check cannot do: it
// needs every processed record of each input key to find its last by
// offset, so no audit window, and nothing but the aggregation between the
// table and the output.
func (o *Options) checkTableGroupBy() error {
	x := o.groupByInput()
	if x < 0 {
		return nil
	}
	in := o.Inputs[x]
	switch {
	case len(o.Inputs) != 1:
		return fmt.Errorf("audit: input %s is a table groupBy's aggregation: it is audited alone (one input, no join)", in.Name)
	case in.Table || in.Window != nil || in.BufferTopic != "" || in.Count:
		return fmt.Errorf("audit: input %s: a table groupBy's aggregation is audited with no other table rule, window or suppress", in.Name)
	case in.RepartitionTopic == "":
		return fmt.Errorf("audit: input %s is a table groupBy's aggregation without its repartition topic", in.Name)
	case o.DeadLetterTopic != "":
		return fmt.Errorf("audit: input %s is a table groupBy's aggregation: a dead-letter queue (pipeline.dead_letter_topic) is not supported with it yet", in.Name)
	case !o.From.IsZero() || !o.To.IsZero():
		return fmt.Errorf("audit: input %s is a table groupBy's aggregation: a time window (window.from, window.to) is not supported with it (each input key's last processed record by offset is needed, whatever its timestamp)", in.Name)
	}
	return nil
}

// changeHasNew says whether a value of a table groupBy's repartition topic
// carries a new value (an adder's update): ChangedSerializer ends every
// value with an encoding flag, 1 or 4 for a new value alone, 2 or 5 for
// new and old (KIP-904: one record when both map to one group key), 0 or
// 3 for an old value alone (a subtraction).
func changeHasNew(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch v[len(v)-1] {
	case 1, 2, 4, 5:
		return true
	}
	return false
}

// tagGroupLast is the scratch index's entry of a table groupBy's input: per
// input key, partition u32 | ^offset u64 -> ts u64 | flags u8 | group key;
// AddFirst keeps the last by offset per partition (detect.Later).
const tagGroupLast byte = 0x01

// The flags of a tagGroupLast entry.
const (
	groupTombstone = 1
	groupNone      = 2
)

// readGroupByInput reads input x, a table source grouped by a table
// groupBy into a count, reduce or aggregate. Every processed record is folded per partition and
// input key into its last by offset, in a scratch index beside the run's
// (on disk past its memory budget: a table may hold more keys than
// memory); once the input is read, each last record that owes its group
// (detect.GroupRecord.Owed) is a candidate under that group key, pending
// when a copy with a new value of the same group key and timestamp waits
// in the repartition topic's unprocessed tail (values are Change-encoded,
// so they are matched by key and timestamp alone: a match may only make a
// record pending).
func (c *collector) readGroupByInput(ctx context.Context, x int) error {
	in := &c.o.Inputs[x]
	dir := filepath.Join(c.o.Store.Dir(), "tablegroupby")
	scratch, err := index.Open(dir, index.Options{MemoryBytes: index.DefaultMemoryBytes / 2})
	if err != nil {
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	defer func() {
		scratch.Close()
		os.RemoveAll(dir)
	}()
	w := scratch.NewWriter()
	t := c.snap.inputs[x]
	rs, total := c.ranges(t, nil)
	cnt := &c.counts[x]
	var mu sync.Mutex
	seenNext := map[int32]bool{}
	err = collect.Read(ctx, c.o.Kafka, collect.Spec{Name: "input " + in.Topic, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) error {
		var n [deadLettered + 1]int64
		tl := c.timeline.batch()
		for i := range recs {
			rec := &recs[i]
			committed, ok := c.snap.group[kread.TP{Topic: rec.Topic, Partition: rec.Partition}]
			processed := ok && rec.Offset < committed
			g, ts, status, serr := []byte(nil), rec.Timestamp, Selected, error(nil)
			if rec.Value != nil {
				g, ts, status, serr = in.Select(rec)
				if status == Failed {
					return fmt.Errorf("selecting the group key of %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, serr)
				}
				if status != Selected {
					ts = rec.Timestamp
				}
			}
			if ok && rec.Offset >= committed {
				mu.Lock()
				if !seenNext[rec.Partition] {
					seenNext[rec.Partition] = true
					c.noteNext(rec, status, serr)
				}
				mu.Unlock()
			}
			var flags byte
			switch {
			case !processed:
				n[pending]++
				tl.note(ts, true)
				continue
			case rec.Key == nil:
				n[nullKey]++ // KTableSource drops a null key
				continue
			case rec.Value == nil:
				n[nullValue]++ // a delete: its group's subtraction only
				flags = groupTombstone
			case status == DecodeError:
				n[undecodable]++
				c.decode.Add(x, rec, serr, in.FieldsNear)
				flags = groupNone
			case status == NullKey:
				n[nullKey]++ // KTableRepartitionMap skips a null group key
				flags = groupNone
			}
			var f [12]byte
			binary.BigEndian.PutUint32(f[:4], uint32(rec.Partition))
			binary.BigEndian.PutUint64(f[4:], inv(rec.Offset))
			v := make([]byte, 9, 9+len(g))
			binary.BigEndian.PutUint64(v, uint64(ts))
			v[8] = flags
			if flags == 0 {
				v = append(v, g...)
			}
			if err := w.AddFirst(rec.Key, tagGroupLast, 4, f[:], v); err != nil {
				return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
		}
		c.timeline.add(x, tl)
		cnt.scanned.Add(int64(len(recs)))
		cnt.pending.Add(n[pending])
		cnt.nullValue.Add(n[nullValue])
		cnt.undecodable.Add(n[undecodable])
		cnt.nullKey.Add(n[nullKey])
		return nil
	})
	if err != nil {
		w.Cancel()
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	coalesce := c.tails.complete()
	tl := c.timeline.batch()
	var cands, pend int64
	err = scratch.EachKey(func(_ []byte, cur *index.Cursor) error {
		for cur.Next() {
			e := cur.Entry()
			if e.Tag != tagGroupLast || len(e.Fields) != 12 || len(e.Value) < 9 {
				return fmt.Errorf("table groupBy entry of %d+%d bytes", len(e.Fields), len(e.Value))
			}
			r := detect.GroupRecord{Partition: int32(be32(e.Fields[:4])), Offset: uninv(be64(e.Fields[4:])), TS: int64(be64(e.Value)),
				Tombstone: e.Value[8]&groupTombstone != 0, NoGroup: e.Value[8]&groupNone != 0}
			if e.Value[8] == 0 {
				r.Group = e.Value[9:]
			}
			group, ok := r.Owed()
			if !ok {
				continue
			}
			if coalesce && c.tails.has(newTailID(uint8(x), group, r.TS, 0)) {
				pend++
				tl.note(r.TS, true)
				continue
			}
			cands++
			tl.note(r.TS, false)
			if err := c.w.input(coalesce, uint8(x), group, r.TS, r.Partition, r.Offset, 0); err != nil {
				return fmt.Errorf("indexing %s[%d]@%d: %w", in.Topic, r.Partition, r.Offset, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	c.timeline.add(x, tl)
	cnt.candidates.Add(cands)
	cnt.pending.Add(pend)
	return nil
}
