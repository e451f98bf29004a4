package index

import (
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// Batch collects entries on one goroutine and files them into its Writer
// partition by partition: Add and AddFirst only append to the batch's own
// buffers (which stay in the core's cache), and Close (or a full batch)
// takes each partition's lock once and appends that partition's entries
// back to back. Filing record by record instead takes a lock and writes
// the tails of a random partition's buffers per record, lines that are
// rarely still in the cache when the partition's next record comes.
//
// The evidence is the same as with the Writer's own Add and AddFirst:
// entries are filed in the order added within a partition, and the order
// of entries from different goroutines was never defined. A Batch is used
// by one goroutine at a time; Close must be called once, before the
// Writer's Flush.
type Batch struct {
	w    *Writer
	buf  []byte
	ents []ent // off is within buf
	// order and counts are Close's scratch: the entries by partition.
	order  []int32
	counts [parts + 1]int32
	ghs    [stageLen]uint64 // the probes' group hashes (part.addBatch)
	err    error
}

// batchEnts and batchBytes bound a batch before it files itself: its
// buffers then fit the core's cache beside the data being read.
const (
	batchEnts  = 4096
	batchBytes = 256 << 10
)

// Batch returns an empty batch of the writer (one its closed batches
// left, when there is one).
func (w *Writer) Batch() *Batch {
	b, _ := w.batches.Get().(*Batch)
	if b == nil {
		b = &Batch{buf: make([]byte, 0, batchBytes+4096), ents: make([]ent, 0, batchEnts), order: make([]int32, batchEnts)}
	}
	b.w = w
	return b
}

// Add is Writer.Add through the batch.
func (b *Batch) Add(key []byte, tag byte, fields, val []byte) error {
	return b.add(key, tag, -1, fields, val)
}

// AddFirst is Writer.AddFirst through the batch.
func (b *Batch) AddFirst(key []byte, tag byte, group int, fields, val []byte) error {
	if group < 0 || group > len(fields) {
		return fmt.Errorf("index: group of %d bytes in fields of %d", group, len(fields))
	}
	return b.add(key, tag, group, fields, val)
}

func (b *Batch) add(key []byte, tag byte, group int, fields, val []byte) error {
	if b.err != nil {
		return b.err
	}
	if err := checkKey(key); err != nil {
		return err
	}
	if uint64(headLen)+uint64(len(key))+1+uint64(len(fields))+uint64(len(val)) > maxPartBytes {
		return errPartFull
	}
	h := xxhash.Sum64(key)
	off := len(b.buf)
	b.buf = appendHead(b.buf, h, key, tag)
	b.buf = append(b.buf, fields...)
	klen := len(b.buf) - off
	b.buf = append(b.buf, val...)
	e := ent{h: h, off: uint32(off), klen: uint32(klen), vlen: uint32(len(val))}
	if group >= 0 {
		e.group = uint32(klen - len(fields) + group)
	}
	b.ents = append(b.ents, e)
	if len(b.ents) >= batchEnts || len(b.buf) >= batchBytes {
		if err := b.file(); err != nil {
			b.err = err
			return err
		}
	}
	return nil
}

// Close files what the batch holds and releases it; the batch must not be
// used afterwards.
func (b *Batch) Close() error {
	err := b.err
	if err == nil {
		err = b.file()
	}
	w := b.w
	b.w, b.err = nil, nil
	b.buf, b.ents = b.buf[:0], b.ents[:0]
	if cap(b.buf) <= 4*batchBytes { // a huge key's buffer is not kept
		w.batches.Put(b)
	}
	return err
}

// file hands the batch's entries to their partitions and empties it.
func (b *Batch) file() error {
	defer func() { b.buf, b.ents = b.buf[:0], b.ents[:0] }()
	if len(b.ents) == 0 {
		return nil
	}
	w := b.w
	if w.done.Load() {
		return w.closed()
	}
	// A counting sort of the entries by partition (stable: a partition's
	// entries keep their order).
	clear(b.counts[:])
	for i := range b.ents {
		b.counts[b.ents[i].h>>(64-partBits)+1]++
	}
	for i := 1; i <= parts; i++ {
		b.counts[i] += b.counts[i-1]
	}
	if cap(b.order) < len(b.ents) {
		b.order = make([]int32, len(b.ents))
	}
	order := b.order[:len(b.ents)]
	pos := b.counts // copy: the starts, advanced as entries are placed
	for i := range b.ents {
		x := b.ents[i].h >> (64 - partBits)
		order[pos[x]] = int32(i)
		pos[x]++
	}
	for x := range parts {
		lo, hi := b.counts[x], b.counts[x+1]
		if lo == hi {
			continue
		}
		if err := w.fileBatch(&w.parts[x], b, order[lo:hi]); err != nil {
			return err
		}
	}
	return nil
}

// fileBatch files the batch's entries order (all of partition pt) under
// one lock, then accounts for the memory and spills as add does
// (settleUnlock). Its errors are the writer's (w.fail), or w.closed()
// after Flush or Cancel.
func (w *Writer) fileBatch(pt *partition, b *Batch, order []int32) error {
	pt.mu.Lock()
	if w.done.Load() { // Flush or Cancel began meanwhile
		pt.mu.Unlock()
		return w.closed()
	}
	// A spilled partition aggregates in a small share of the budget,
	// drained to its file whenever that fills (as add does).
	for len(order) > 0 {
		var limit int64
		if pt.spill != nil {
			limit = w.budget / (4 * parts)
		}
		n, err := pt.p.addBatch(b.buf, b.ents, order, limit, b.ghs[:])
		if err != nil {
			pt.mu.Unlock()
			return w.fail(err)
		}
		order = order[n:]
		if len(order) == 0 {
			break
		}
		if pt.spill != nil && pt.p.size() > w.budget/(4*parts) {
			if err := pt.drain(); err != nil {
				pt.mu.Unlock()
				return w.fail(err)
			}
		}
	}
	return w.settleUnlock(pt)
}
