package streams

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"

	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// The index entries of the Kafka Streams audit, one tag per kind of fact
// about a selected key. Within a key the index orders entries by tag, so
// the repartition entries (which say which candidates are pending) come
// before the input entries, as detect.KeyEvidence requires. Every entry's
// fields start with the input's index. Timestamps and offsets are stored
// inverted (^v), newest first.
const (
	tagTouch            byte = 0x01 // 0: judge the key (reconcile: what earlier steps know of it)
	tagRepartition      byte = 0x08 // x | tail u8 | ts u64 | fp u64 -> partition u32 | offset u64
	tagInput            byte = 0x10 // x | ^ts u64 | ^partition u32 | ^offset u64 -> fp u64
	tagChangelog        byte = 0x30 // x | ^ts u64 | ^offset u64 -> flags u8 | partition u32 [| count u64 with flagCount]
	tagChangelogAborted byte = 0x40 // x | ^ts u64 -> partition u32
	tagOutput           byte = 0x50 // 0 | ^ts u64 | ^offset u64 -> flags u8 | partition u32
	tagOutputAborted    byte = 0x60 // 0 | ^ts u64 -> partition u32
	tagBuffer           byte = 0x78 // x | ^offset u64 -> flags u8 | partition u32
)

// flagTombstone marks a changelog or output record whose value was null;
// flagCount a count's changelog record whose value is a Long (8 bytes,
// Serdes.Long), stored after the partition.
const (
	flagTombstone = 1
	flagCount     = 2
)

func inv(v int64) uint64   { return ^uint64(v) }
func uninv(u uint64) int64 { return int64(^u) }
func be64(b []byte) uint64 { return binary.BigEndian.Uint64(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
func fingerprint(v []byte) uint64 {
	// The Avro payload after the Confluent header identifies a value across
	// its input and repartition copies, whose schema ids may differ.
	if len(v) >= 5 && v[0] == 0 {
		v = v[5:]
	}
	return xxhash.Sum64(v)
}

// entryWriter writes the audit's facts to an index writer, or to a batch
// of it (batch).
type entryWriter struct{ w sink }

// newEntryWriter writes to w.
func newEntryWriter(w *index.Writer) entryWriter { return entryWriter{sink{w: w}} }

// sink is an index writer, or, when b is set, a batch of it. (Concrete
// types, not an interface: the callers' field arrays stay on the stack.)
type sink struct {
	w *index.Writer
	b *index.Batch
}

// Add is index.Writer.Add, through the batch when there is one.
func (s sink) Add(key []byte, tag byte, fields, val []byte) error {
	if s.b != nil {
		return s.b.Add(key, tag, fields, val)
	}
	return s.w.Add(key, tag, fields, val)
}

// AddFirst is index.Writer.AddFirst, through the batch when there is one.
func (s sink) AddFirst(key []byte, tag byte, group int, fields, val []byte) error {
	if s.b != nil {
		return s.b.AddFirst(key, tag, group, fields, val)
	}
	return s.w.AddFirst(key, tag, group, fields, val)
}

// batch returns an entryWriter writing through a batch of e's writer,
// for one goroutine's records (a read callback's), and the function that
// files the batch: it must be called once, before the writer is flushed.
// Entries are the same as through the writer; the batch files them
// partition by partition (index.Batch says why that is cheaper). Without
// a writer, e itself is returned.
func (e entryWriter) batch() (entryWriter, func() error) {
	if e.w.w == nil || e.w.b != nil {
		return e, func() error { return nil }
	}
	b := e.w.w.Batch()
	return entryWriter{sink{w: e.w.w, b: b}}, b.Close
}

func (e entryWriter) repartition(x uint8, key []byte, ts int64, fp uint64, tail bool, partition int32, offset int64) error {
	var f [18]byte
	f[0] = x
	if tail {
		f[1] = 1
	}
	binary.BigEndian.PutUint64(f[2:], uint64(ts))
	binary.BigEndian.PutUint64(f[10:], fp)
	var v [12]byte
	binary.BigEndian.PutUint32(v[:4], uint32(partition))
	binary.BigEndian.PutUint64(v[4:], uint64(offset))
	return e.w.Add(key, tagRepartition, f[:], v[:])
}

// input writes a candidate of input x. With first, only the newest
// candidate per key of a chunk is kept: right when the candidates pending
// at the second hop were left out (see tailSet), since the evidence is
// then simply the newest.
func (e entryWriter) input(first bool, x uint8, key []byte, ts int64, partition int32, offset int64, fp uint64) error {
	var f [21]byte
	f[0] = x
	binary.BigEndian.PutUint64(f[1:], inv(ts))
	binary.BigEndian.PutUint32(f[9:], ^uint32(partition))
	binary.BigEndian.PutUint64(f[13:], inv(offset))
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], fp)
	if first {
		return e.w.AddFirst(key, tagInput, 1, f[:], v[:])
	}
	return e.w.Add(key, tagInput, f[:], v[:])
}

// stage writes a record of input x's changelog (output false) or of the
// output (output true), read from partition.
// With count (a count's changelog), a value of 8 bytes is stored as the
// key's count.
func (e entryWriter) stage(output bool, x uint8, key []byte, partition int32, ts, offset int64, aborted, tombstone bool, count []byte) error {
	tag := tagChangelog
	if output {
		tag, x = tagOutput, 0
	}
	var v [13]byte
	binary.BigEndian.PutUint32(v[1:5], uint32(partition))
	n := 5
	if aborted {
		var f [9]byte
		f[0] = x
		binary.BigEndian.PutUint64(f[1:], inv(ts))
		return e.w.AddFirst(key, tag+0x10, 1, f[:], v[1:5]) // tagChangelogAborted, tagOutputAborted: only the newest counts
	}
	var f [17]byte
	f[0] = x
	binary.BigEndian.PutUint64(f[1:], inv(ts))
	binary.BigEndian.PutUint64(f[9:], inv(offset))
	switch {
	case tombstone:
		v[0] = flagTombstone
	case len(count) == 8 && !output:
		v[0] = flagCount
		copy(v[5:], count)
		n = 13
	}
	// Only the newest committed record of a key counts (with its tombstone
	// flag): one entry per key and chunk.
	return e.w.AddFirst(key, tag, 1, f[:], v[:n])
}

// buffer writes a committed record of input x's suppress buffer
// changelog: only the last by offset counts (detect.BufferState).
func (e entryWriter) buffer(x uint8, key []byte, partition int32, offset int64, tombstone bool) error {
	var f [9]byte
	f[0] = x
	binary.BigEndian.PutUint64(f[1:], inv(offset))
	var v [5]byte
	if tombstone {
		v[0] = flagTombstone
	}
	binary.BigEndian.PutUint32(v[1:], uint32(partition))
	return e.w.AddFirst(key, tagBuffer, 1, f[:], v[:])
}

// touch writes an entry that makes the check visit key even when this
// run read nothing about it.
func (e entryWriter) touch(key []byte) error {
	return e.w.AddFirst(key, tagTouch, 1, []byte{0}, nil)
}

// fold reads the entries of one key into ev (reset to key first). inputs
// is the pipeline's number of inputs. pending, when not nil, is told the
// input and timestamp of every candidate that turns out pending at the
// second hop. known, when not nil, is called once, after the key's
// repartition entries and before its input entries, to add what is known
// of the key from elsewhere (an incremental step's state): candidates must
// follow the repartition tail (detect.KeyEvidence).
func fold(key []byte, c *index.Cursor, ev *detect.KeyEvidence, inputs int, pending func(x int, ts int64), known func() error) error {
	ev.Reset(key)
	var prevTag byte
	var prev []byte
	addKnown := func() error {
		if known == nil {
			return nil
		}
		k := known
		known = nil
		return k()
	}
	for c.Next() {
		e := c.Entry()
		f := e.Fields
		if len(f) < 1 {
			return fmt.Errorf("index: entry %#x of key %s has no fields", e.Tag, engine.KeyRef(key))
		}
		if int(f[0]) >= inputs {
			return fmt.Errorf("index: entry %#x for input %d of a %d-input pipeline (was the store written by another configuration?)", e.Tag, f[0], inputs)
		}
		x := int(f[0])
		if e.Tag > tagRepartition {
			if err := addKnown(); err != nil {
				return err
			}
		}
		if e.Tag != tagRepartition && e.Tag == prevTag && bytes.Equal(f, prev) {
			continue // the same record read twice
		}
		prevTag, prev = e.Tag, append(prev[:0], f...)
		if err := apply(ev, e, x, f[1:], pending); err != nil {
			return fmt.Errorf("index: entry %#x of key %s: %w", e.Tag, engine.KeyRef(key), err)
		}
	}
	return addKnown()
}

func apply(ev *detect.KeyEvidence, e index.Entry, x int, f []byte, pending func(x int, ts int64)) error {
	switch e.Tag {
	case tagTouch:
	case tagRepartition:
		if len(f) != 17 || len(e.Value) != 12 {
			return fmt.Errorf("repartition entry of %d+%d bytes", len(f), len(e.Value))
		}
		ts, fp := int64(be64(f[1:9])), be64(f[9:17])
		if f[0] == 1 {
			ev.AddTail(x, ts, fp)
		} else {
			ev.AddCopy(x, ts, fp, int32(be32(e.Value[:4])), int64(be64(e.Value[4:])))
		}
	case tagInput:
		if len(f) != 20 || len(e.Value) != 8 {
			return fmt.Errorf("input entry of %d+%d bytes", len(f), len(e.Value))
		}
		before := ev.Inputs[x].Pending
		ts := uninv(be64(f[0:8]))
		ev.AddCandidate(x, detect.InputRecord{TS: ts, Partition: int32(^be32(f[8:12])),
			Offset: uninv(be64(f[12:20])), FP: be64(e.Value)})
		if pending != nil && ev.Inputs[x].Pending > before {
			pending(x, ts)
		}
	case tagChangelog, tagOutput:
		counted := len(e.Value) == 13 && e.Value[0]&flagCount != 0 && e.Tag == tagChangelog
		if len(f) != 16 || (len(e.Value) != 5 && !counted) {
			return fmt.Errorf("stage entry of %d+%d bytes", len(f), len(e.Value))
		}
		ts, off := uninv(be64(f[0:8])), uninv(be64(f[8:16]))
		tomb := e.Value[0]&flagTombstone != 0
		p := int32(be32(e.Value[1:5]))
		switch {
		case counted:
			ev.AddChangelogCount(x, p, ts, off, int64(be64(e.Value[5:])))
		case e.Tag == tagChangelog:
			ev.AddChangelog(x, p, ts, off, tomb)
		default:
			ev.AddOutput(p, ts, off, tomb)
		}
	case tagTableLast, tagTableRecord, tagTableChangelog:
		return applyTable(ev, e.Tag, x, f, e.Value)
	case tagChangelogAborted, tagOutputAborted:
		if len(f) != 8 || len(e.Value) != 4 {
			return fmt.Errorf("aborted entry of %d+%d bytes", len(f), len(e.Value))
		}
		p := int32(be32(e.Value))
		if e.Tag == tagChangelogAborted {
			ev.AddChangelogAborted(x, p, uninv(be64(f)))
		} else {
			ev.AddOutputAborted(p, uninv(be64(f)))
		}
	case tagBuffer:
		if len(f) != 8 || len(e.Value) != 5 {
			return fmt.Errorf("buffer entry of %d+%d bytes", len(f), len(e.Value))
		}
		ev.AddBuffer(x, int32(be32(e.Value[1:5])), uninv(be64(f)), e.Value[0]&flagTombstone != 0)
	default:
		return fmt.Errorf("unknown tag")
	}
	return nil
}
