package streams

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// The index entries of an input read by a table source (Input.Table): its
// table holds each key's last record by offset (detect.TableLast), so
// these keep records by partition and offset, not by timestamp.
const (
	tagTableLast      byte = 0x20 // x | partition u32 | ^offset u64 -> ts u64 | flags u8: the last processed record that counts, per partition
	tagTableRecord    byte = 0x21 // x | partition u32 | offset u64 -> ts u64 | flags u8: every record read (the key's records before and after the last)
	tagTableChangelog byte = 0x70 // x | partition u32 | ^offset u64 -> ts u64 | flags u8: the changelog's last committed record, per partition
)

// hasTable reports whether an input is read by a table source.
func (o Options) hasTable() bool {
	for _, in := range o.Inputs {
		if in.Table {
			return true
		}
	}
	return false
}

// tableEntry writes one entry of the table-source tags; with first, only
// the last by offset per partition is kept.
func (e entryWriter) tableEntry(tag, x uint8, key []byte, partition int32, offset, ts int64, tombstone, first bool) error {
	var f [13]byte
	f[0] = x
	binary.BigEndian.PutUint32(f[1:], uint32(partition))
	o := uint64(offset)
	if first {
		o = inv(offset)
	}
	binary.BigEndian.PutUint64(f[5:], o)
	var v [9]byte
	binary.BigEndian.PutUint64(v[:], uint64(ts))
	if tombstone {
		v[8] = flagTombstone
	}
	if first {
		return e.w.AddFirst(key, tag, 5, f[:], v[:])
	}
	return e.w.Add(key, tag, f[:], v[:])
}

// applyTable folds one table-source entry (f without the input byte)
// into ev.
func applyTable(ev *detect.KeyEvidence, tag byte, x int, f, val []byte) error {
	if len(f) != 12 || len(val) != 9 {
		return fmt.Errorf("table entry of %d+%d bytes", len(f), len(val))
	}
	r := detect.TableRecord{Partition: int32(be32(f[:4])), Offset: int64(be64(f[4:])), TS: int64(be64(val)), Tombstone: val[8]&flagTombstone != 0}
	t := &ev.Tables[x]
	switch tag {
	case tagTableLast:
		r.Offset = uninv(uint64(r.Offset))
		t.AddLast(r)
	case tagTableRecord:
		t.AddRecord(r)
	default:
		r.Offset = uninv(uint64(r.Offset))
		t.AddChangelog(r)
	}
	return nil
}

// readTableInput reads input x, read by a table source. Its records that
// count (processed, in the window, decodable; a null value is a delete and
// counts) give each key's last record by offset per partition; every
// record is kept too: one after that last may be what the table holds now
// (processed since the offsets were read, or processed without counting),
// one before it witnesses a lost update when the table holds it. It reads each partition to its
// end as it is now, after the changelog's snapshot settled: the changelog
// may hold puts of records written after the input's snapshot, and those
// must be known (they are counted nowhere).
func (c *collector) readTableInput(ctx context.Context, x int) error {
	in := &c.o.Inputs[x]
	start, err := c.windowStart(ctx, in.Topic)
	if err != nil {
		return err
	}
	now, err := snapshot.Read(ctx, c.o.Kafka, in.Topic)
	if err != nil {
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	snapLSO := c.snap.inputs[x].Offsets
	rs, total := collect.Ranges(now, start, nil)
	cnt := &c.counts[x]
	var nextMu sync.Mutex
	seenNext := map[int32]bool{} // the record the application reads next, per partition (unwindowed audits)
	err = collect.Read(ctx, c.o.Kafka, collect.Spec{Name: "input " + in.Topic, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) error {
		var n [deadLettered + 1]int64
		var scanned int64
		tl := c.timeline.batch()
		for i := range recs {
			rec := &recs[i]
			inSnap := rec.Offset < snapLSO[rec.Partition].LSO
			if inSnap {
				scanned++
			}
			committed, ok := c.snap.group[kread.TP{Topic: rec.Topic, Partition: rec.Partition}]
			next := func(status SelectStatus, serr error) {
				if ok && rec.Offset >= committed && c.o.From.IsZero() {
					nextMu.Lock()
					if !seenNext[rec.Partition] {
						seenNext[rec.Partition] = true
						c.noteNext(rec, status, serr)
					}
					nextMu.Unlock()
				}
			}
			if rec.Key == nil {
				next(Selected, nil)
				if inSnap {
					n[nullKey]++ // KTableSource drops a null key
				}
				continue
			}
			key, ts, status, serr := rec.Key, rec.Timestamp, Selected, error(nil)
			if rec.Value != nil {
				key, ts, status, serr = in.Select(rec)
				if status == Failed {
					return fmt.Errorf("selecting the key of %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, serr)
				}
				if status == DecodeError {
					key, ts = rec.Key, rec.Timestamp
				}
			}
			if rec.Value == nil || status == DecodeError {
				if in.DownstreamKey != nil {
					key = in.DownstreamKey(rec.Key)
				}
			}
			next(status, serr)
			processed := ok && rec.Offset < committed
			cl := classify(processed, true, ts, status, c.win)
			if inSnap && (cl == candidate || cl == undecodable) && c.dlq.exempt(x, in.Name, rec, processed, false, false, key, ts, 0) {
				cl = deadLettered // given up on by the application: never put, kept below as a record only
			}
			if !inSnap {
				cl = pending // written after the snapshot: only what the table may hold
			} else {
				n[cl]++
			}
			switch cl {
			case undecodable:
				c.decode.Add(x, rec, serr, in.FieldsNear)
			case pending:
				if inSnap {
					tl.note(ts, true)
				}
			case candidate:
				tl.note(ts, false)
			}
			if cl == candidate {
				if err := c.w.tableEntry(tagTableLast, uint8(x), key, rec.Partition, rec.Offset, ts, rec.Value == nil, true); err != nil {
					return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
				}
			}
			if err := c.w.tableEntry(tagTableRecord, uint8(x), key, rec.Partition, rec.Offset, ts, rec.Value == nil, false); err != nil {
				return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
		}
		c.timeline.add(x, tl)
		cnt.scanned.Add(scanned)
		cnt.candidates.Add(n[candidate])
		cnt.outside.Add(n[outsideWindow])
		cnt.pending.Add(n[pending])
		cnt.undecodable.Add(n[undecodable])
		cnt.nullKey.Add(n[nullKey])
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	return nil
}

// readTableChangelog indexes the changelog of input x's table source: the
// last committed record of each key by offset, per partition.
func (c *collector) readTableChangelog(ctx context.Context, x int) error {
	in := &c.o.Inputs[x]
	start, err := c.windowStart(ctx, in.ChangelogTopic)
	if err != nil {
		return err
	}
	for p, off := range start {
		if c.tableFrom == nil {
			c.tableFrom = map[kread.TP]int64{}
		}
		c.tableFrom[kread.TP{Topic: in.ChangelogTopic, Partition: p}] = off
	}
	rs, total := c.ranges(c.snap.changelogs[x], start)
	err = collect.Read(ctx, c.o.Kafka, collect.Spec{Name: "changelog " + in.ChangelogTopic, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) error {
		for i := range recs {
			rec := &recs[i]
			if rec.Key == nil {
				continue
			}
			key := rec.Key
			if in.DownstreamKey != nil {
				key = in.DownstreamKey(key)
			}
			if err := c.w.tableEntry(tagTableChangelog, uint8(x), key, rec.Partition, rec.Offset, rec.Timestamp, rec.Value == nil, true); err != nil {
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
