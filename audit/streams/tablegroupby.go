package streams

import (
	"context"
	"fmt"
	"sync"

	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// groupByInput returns the index of the input that is a table groupBy's
// count, -1 for none.
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
// offset, so no audit window, and nothing but the count between the
// table and the output.
func (o *Options) checkTableGroupBy() error {
	x := o.groupByInput()
	if x < 0 {
		return nil
	}
	in := o.Inputs[x]
	switch {
	case len(o.Inputs) != 1:
		return fmt.Errorf("audit: input %s is a table groupBy's count: it is audited alone (one input, no join)", in.Name)
	case in.Table || in.Window != nil || in.BufferTopic != "" || in.Count:
		return fmt.Errorf("audit: input %s: a table groupBy's count is audited with no other table rule, window or suppress", in.Name)
	case in.RepartitionTopic == "":
		return fmt.Errorf("audit: input %s is a table groupBy's count without its repartition topic", in.Name)
	case o.DeadLetterTopic != "":
		return fmt.Errorf("audit: input %s is a table groupBy's count: a dead-letter queue (pipeline.dead_letter_topic) is not supported with it yet", in.Name)
	case !o.From.IsZero() || !o.To.IsZero():
		return fmt.Errorf("audit: input %s is a table groupBy's count: a time window (window.from, window.to) is not supported with it (each input key's last processed record by offset is needed, whatever its timestamp)", in.Name)
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

// readGroupByInput reads input x, a table source grouped by a table
// groupBy into a count. Every processed record is folded per partition and
// input key into its last by offset (detect.GroupByLast); once the input
// is read, each last record that is a value with a group key is a
// candidate under that group key, pending when a copy with a new value of
// the same group key and timestamp waits in the repartition topic's
// unprocessed tail (values are Change-encoded, so they are matched by key
// and timestamp alone: a match may only make a record pending).
func (c *collector) readGroupByInput(ctx context.Context, x int) error {
	in := &c.o.Inputs[x]
	t := c.snap.inputs[x]
	rs, total := c.ranges(t, nil)
	cnt := &c.counts[x]
	var mu sync.Mutex
	var last detect.GroupByLast
	seenNext := map[int32]bool{}
	err := collect.Read(ctx, c.o.Kafka, collect.Spec{Name: "input " + in.Topic, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) error {
		var n [deadLettered + 1]int64
		type row struct {
			key []byte
			r   detect.GroupRecord
		}
		rows := make([]row, 0, len(recs))
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
			case status == DecodeError:
				n[undecodable]++
				c.decode.Add(x, rec, serr, in.FieldsNear)
			case status == NullKey:
				n[nullKey]++ // KTableRepartitionMap skips a null group key
			}
			gr := detect.GroupRecord{Partition: rec.Partition, Offset: rec.Offset, TS: ts, Tombstone: rec.Value == nil, NoGroup: status != Selected}
			if rec.Value != nil && status == Selected {
				gr.Group = g
			}
			rows = append(rows, row{rec.Key, gr})
		}
		mu.Lock()
		for _, r := range rows {
			last.Add(r.key, r.r)
		}
		mu.Unlock()
		c.timeline.add(x, tl)
		cnt.scanned.Add(int64(len(recs)))
		cnt.pending.Add(n[pending])
		cnt.nullValue.Add(n[nullValue])
		cnt.undecodable.Add(n[undecodable])
		cnt.nullKey.Add(n[nullKey])
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	coalesce := c.tails.complete()
	tl := c.timeline.batch()
	var cands, pend int64
	err = last.Each(func(group []byte, r detect.GroupRecord) error {
		if coalesce && c.tails.has(newTailID(uint8(x), group, r.TS, 0)) {
			pend++
			tl.note(r.TS, true)
			return nil
		}
		cands++
		tl.note(r.TS, false)
		if err := c.w.input(coalesce, uint8(x), group, r.TS, r.Partition, r.Offset, 0); err != nil {
			return fmt.Errorf("indexing %s[%d]@%d: %w", in.Topic, r.Partition, r.Offset, err)
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
