package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// partBits is how many bits of a key's hash choose its partition, at
// the top level and at every level of splitting a spilled one.
const partBits = 7

const parts = 1 << partBits

// Writer collects evidence into the store. Its methods are safe for
// concurrent use (writers of different partitions do not wait for each
// other); Flush must be called once at the end, and its error (or the first
// error of any write) decides whether the evidence is complete.
type Writer struct {
	s      *Store
	budget int64
	parts  [parts]partition
	used   atomic.Int64 // bytes of the partitions in memory
	done   atomic.Bool

	spillMu sync.Mutex // one spill decision at a time

	batches sync.Pool // closed batches, for Batch to reuse

	errMu sync.Mutex
	err   error

	stored  atomic.Int64 // entries after aggregation, counted as partitions are settled
	spilled atomic.Int32 // partitions spilled
	walked  atomic.Bool  // a walk counted the spilled partitions' entries

	// peakUsed and peakSettled are the most the partitions in memory held
	// while writing, and the most one settled partition held (for tests).
	peakUsed, peakSettled atomic.Int64
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		o := a.Load()
		if v <= o || a.CompareAndSwap(o, v) {
			return
		}
	}
}

// partition is one top-level partition: in memory (p) until it spills,
// then a file every later entry of it is appended to.
type partition struct {
	mu      sync.Mutex
	p       *part
	acct    atomic.Int64 // p's bytes as counted in Writer.used
	spilled atomic.Bool  // spill is set
	spill   *spillFile
	_       [40]byte // keeps the mutexes of neighbours off one cache line
}

// NewWriter starts a writer. Evidence of any earlier writer is dropped.
func (s *Store) NewWriter() *Writer {
	w := &Writer{s: s, budget: s.budget}
	for i := range w.parts {
		w.parts[i].p = &part{}
	}
	return w
}

// Add stores one entry about key: its tag and fields (which order the
// entries of a key, see the package notes) and its value. The slices are
// copied. Every entry added is kept (the record-level evidence).
func (w *Writer) Add(key []byte, tag byte, fields, val []byte) error {
	return w.add(key, tag, -1, fields, val)
}

// AddFirst is Add for entries of which only one per group matters: among
// the entries of key and tag whose fields start with the same group bytes,
// only the one whose fields sort first is kept (callers encode "newest"
// so that it sorts first). The group's entry is aggregated as entries
// arrive, in one hash probe: EachKey sees exactly one entry per group, the
// first-sorting one of all that were added (of equal fields, any one).
func (w *Writer) AddFirst(key []byte, tag byte, group int, fields, val []byte) error {
	if group < 0 || group > len(fields) {
		return fmt.Errorf("index: group of %d bytes in fields of %d", group, len(fields))
	}
	return w.add(key, tag, group, fields, val)
}

func (w *Writer) fail(err error) error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	if w.err == nil {
		w.err = err
	}
	return w.err
}

func (w *Writer) failed() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// closed is the error of a write after Flush or Cancel.
func (w *Writer) closed() error {
	if err := w.failed(); err != nil {
		return err
	}
	return errors.New("index: write after Flush or Cancel")
}

// add files one entry; group >= 0 marks an AddFirst entry.
func (w *Writer) add(key []byte, tag byte, group int, fields, val []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if w.done.Load() {
		return w.closed()
	}
	h := xxhash.Sum64(key)
	pt := &w.parts[h>>(64-partBits)]
	pt.mu.Lock()
	if w.done.Load() { // Flush or Cancel began meanwhile
		pt.mu.Unlock()
		return w.closed()
	}
	if err := pt.p.add(h, key, tag, group, fields, val); err != nil {
		pt.mu.Unlock()
		return w.fail(err)
	}
	return w.settleUnlock(pt)
}

// settleUnlock ends a write into the locked partition pt: a spilled
// partition whose share of the budget filled drains to its file, the
// memory it holds now is counted, the lock is released, and when the
// partitions in memory hold more than the budget the largest spill.
func (w *Writer) settleUnlock(pt *partition) error {
	if pt.spill != nil && pt.p.size() > w.budget/(4*parts) {
		if err := pt.drain(); err != nil {
			pt.mu.Unlock()
			return w.fail(err)
		}
	}
	d := pt.p.bytes() - pt.acct.Load()
	pt.acct.Add(d)
	pt.mu.Unlock()
	if d == 0 {
		return nil
	}
	u := w.used.Add(d)
	storeMax(&w.peakUsed, u)
	if u > w.budget {
		if err := w.spillDownTo(w.budget - w.budget/8); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// spillDownTo spills the largest partitions in memory until they hold at
// most target bytes.
func (w *Writer) spillDownTo(target int64) error {
	w.spillMu.Lock()
	defer w.spillMu.Unlock()
	for w.used.Load() > target {
		best, size := -1, int64(0)
		for i := range w.parts {
			if a := w.parts[i].acct.Load(); a > size && !w.parts[i].spilled.Load() {
				best, size = i, a
			}
		}
		if best < 0 {
			return nil
		}
		if err := w.spillPart(&w.parts[best]); err != nil {
			return err
		}
	}
	return nil
}

// spillPart writes a partition's entries to a new spill file and frees
// its memory. From then on the partition aggregates what arrives in a
// small part of the budget and appends it to the file when that fills.
func (w *Writer) spillPart(pt *partition) error {
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if pt.p == nil || pt.spill != nil {
		return nil
	}
	sf, err := createSpill(w.s.newSpillPath())
	if err != nil {
		return err
	}
	pt.spill = sf
	pt.spilled.Store(true)
	w.spilled.Add(1)
	if err := pt.drain(); err != nil {
		return err
	}
	pt.p = &part{}
	w.used.Add(-pt.acct.Swap(0))
	return nil
}

// drain appends the spilled partition's entries in memory to its file and
// empties its part, keeping the part's capacity.
func (pt *partition) drain() error {
	p := pt.p
	p.file()
	for _, e := range p.ents {
		if err := pt.spill.write(p.key(e), p.val(e), e.group); err != nil {
			return err
		}
	}
	p.reset()
	return nil
}

// Flush ends the writer: what stayed in memory is ordered for the walk
// (and, when anything spilled, the partitions in memory beyond half the
// budget spill too, so that the walk holds no more than the budget). A
// later EachKey walks what it wrote.
func (w *Writer) Flush() error {
	if w.done.Swap(true) {
		return errors.New("index: writer already flushed or cancelled")
	}
	if err := w.failed(); err != nil {
		w.removeSpills()
		return err
	}
	if w.spilled.Load() > 0 {
		if err := w.spillDownTo(w.budget / 2); err != nil {
			w.fail(err)
			w.removeSpills()
			return err
		}
	}
	var tmp []ent
	for i := range w.parts {
		pt := &w.parts[i]
		if pt.spill != nil {
			err := pt.drain()
			if err == nil {
				err = pt.spill.close()
			}
			pt.p = nil
			w.used.Add(-pt.acct.Swap(0))
			if err != nil {
				w.fail(err)
				w.removeSpills()
				return err
			}
			continue
		}
		pt.mu.Lock()
		tmp = pt.p.sort(tmp)
		w.stored.Add(int64(len(pt.p.ents)))
		pt.mu.Unlock()
	}
	w.s.mu.Lock()
	w.s.last = w
	w.s.mu.Unlock()
	return nil
}

// Entries returns how many entries the writer's evidence holds after
// aggregation (one per AddFirst group, every Add): those in memory once
// Flush returned, the spilled ones once an EachKey has walked them.
func (w *Writer) Entries() int64 { return w.stored.Load() }

// Cancel abandons the writer after an error.
func (w *Writer) Cancel() {
	w.done.Store(true)
	w.removeSpills()
}

func (w *Writer) removeSpills() {
	for i := range w.parts {
		pt := &w.parts[i]
		pt.mu.Lock()
		if pt.spill != nil {
			pt.spill.remove()
		}
		pt.p = nil
		pt.mu.Unlock()
	}
}

// spillFile is a partition's entries on disk, appended in arrival order:
// uvarint stored-key length, stored key, uvarint value length, value,
// uvarint group length (0 for Add).
type spillFile struct {
	path string
	f    *os.File
	bw   *bufio.Writer
	hdr  [binary.MaxVarintLen64]byte
}

func createSpill(path string) (*spillFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("index: spilling evidence: %w", err)
	}
	return &spillFile{path: path, f: f, bw: bufio.NewWriterSize(f, 32<<10)}, nil
}

func (sf *spillFile) write(k, v []byte, g uint32) error {
	hdr := sf.hdr[:]
	sf.bw.Write(hdr[:binary.PutUvarint(hdr, uint64(len(k)))])
	sf.bw.Write(k)
	sf.bw.Write(hdr[:binary.PutUvarint(hdr, uint64(len(v)))])
	sf.bw.Write(v)
	if _, err := sf.bw.Write(hdr[:binary.PutUvarint(hdr, uint64(g))]); err != nil {
		return fmt.Errorf("index: writing spill %s: %w", sf.path, err)
	}
	return nil
}

func (sf *spillFile) close() error {
	if sf.f == nil {
		return nil
	}
	err := sf.bw.Flush()
	if cerr := sf.f.Close(); err == nil {
		err = cerr
	}
	sf.f = nil
	if err != nil {
		return fmt.Errorf("index: writing spill %s: %w", sf.path, err)
	}
	return nil
}

func (sf *spillFile) remove() {
	if sf.f != nil {
		sf.f.Close()
		sf.f = nil
	}
	_ = os.Remove(sf.path)
}
