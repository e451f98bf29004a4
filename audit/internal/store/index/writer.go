package index

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
)

// Writer collects evidence into the store. Its methods are safe for
// concurrent use; Flush must be called once at the end, and its error (or
// the first error of any write) decides whether the evidence is complete.
type Writer struct {
	s *Store

	mu    sync.Mutex // guards cur, spare, err, runs
	cur   *chunk
	spare *chunk // a written chunk, kept for reuse
	err   error
	runs  []string
	done  bool

	stored atomic.Int64 // entries written to run files

	spill   sync.Mutex // one chunk is sorted and written at a time
	sortTmp []ent      // the radix sort's buffer; guarded by spill
}

// chunk is a batch of entries in memory: encoded back to back in buf.
type chunk struct {
	buf  []byte
	ents []ent
}

// ent locates one entry of a chunk; h is the entry's leading hash, so
// most comparisons while sorting look at one integer. group is, for an
// entry added with AddFirst, the length of its stored key up to the end of
// its group bytes (hash, length, key, tag, group); 0 otherwise.
type ent struct {
	h          uint64
	off        uint32
	klen, vlen uint32
	group      uint32
}

func (c *chunk) key(e ent) []byte { return c.buf[e.off : e.off+e.klen] }
func (c *chunk) val(e ent) []byte { return c.buf[e.off+e.klen : e.off+e.klen+e.vlen] }

// NewWriter starts a writer. Evidence of any earlier writer is dropped.
func (s *Store) NewWriter() *Writer {
	return &Writer{s: s, cur: &chunk{}}
}

// maxRunsMerged bounds the run files merged at once (open files and read
// buffers); more runs are first merged into fewer.
const maxRunsMerged = 128

// Flush writes out everything pending and ends the writer; a later EachKey
// reads what it wrote.
func (w *Writer) Flush() error {
	w.mu.Lock()
	if w.done {
		w.mu.Unlock()
		return errors.New("index: writer already flushed or cancelled")
	}
	w.done = true
	c := w.cur
	w.cur, w.spare = nil, nil
	w.mu.Unlock()
	if len(c.ents) > 0 {
		w.write(c)
	}
	w.spill.Lock()
	defer w.spill.Unlock()
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err != nil {
		w.removeRuns()
		return err
	}
	runs := w.runs
	for len(runs) > maxRunsMerged {
		merged, err := w.s.mergeRuns(runs[:maxRunsMerged])
		if err != nil {
			w.runs = runs
			w.removeRuns()
			return err
		}
		runs = append(runs[maxRunsMerged:], merged)
	}
	w.s.runs = runs
	return nil
}

// Entries returns how many entries the writer has written out so far (all
// of them once Flush returned): after coalescing (AddFirst), before any
// merge of runs.
func (w *Writer) Entries() int64 { return w.stored.Load() }

// Cancel abandons the writer after an error.
func (w *Writer) Cancel() {
	w.mu.Lock()
	w.done = true
	w.cur, w.spare = nil, nil
	w.mu.Unlock()
	w.spill.Lock()
	w.removeRuns()
	w.spill.Unlock()
}

func (w *Writer) removeRuns() {
	for _, r := range w.runs {
		_ = os.Remove(r)
	}
	w.runs = nil
}

// Add stores one entry about key: its tag and fields (which order the
// entries of a key, see the package notes) and its value. The slices are
// copied.
func (w *Writer) Add(key []byte, tag byte, fields, val []byte) error {
	return w.add(key, tag, -1, fields, val)
}

// AddFirst is Add for entries of which only one per group matters: among
// the entries of key and tag whose fields start with the same group bytes,
// only the one whose fields sort first is needed (callers encode "newest"
// so that it sorts first). When the chunk it is collected in is sorted,
// only that one is written out, so a key updated a thousand times within a
// chunk costs one entry on disk, not a thousand; it costs nothing while
// collecting. Chunks are not merged with each other: an EachKey may still see
// several entries of a group, never more than one per chunk, the
// first-sorting one among them.
func (w *Writer) AddFirst(key []byte, tag byte, group int, fields, val []byte) error {
	if group < 0 || group > len(fields) {
		return fmt.Errorf("index: group of %d bytes in fields of %d", group, len(fields))
	}
	return w.add(key, tag, group, fields, val)
}

// add appends one entry; group >= 0 marks an AddFirst entry.
func (w *Writer) add(key []byte, tag byte, group int, fields, val []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	w.mu.Lock()
	if w.err != nil || w.done {
		err := w.err
		w.mu.Unlock()
		if err == nil {
			err = errors.New("index: write after Flush or Cancel")
		}
		return err
	}
	c := w.cur
	off := len(c.buf)
	c.buf = appendHead(c.buf, key, tag)
	c.buf = append(c.buf, fields...)
	klen := len(c.buf) - off
	c.buf = append(c.buf, val...)
	e := ent{h: binary.BigEndian.Uint64(c.buf[off:]), off: uint32(off), klen: uint32(klen), vlen: uint32(len(val))}
	if group >= 0 {
		e.group = uint32(klen - len(fields) + group)
	}
	c.ents = append(c.ents, e)
	var full *chunk
	if int64(len(c.buf)) >= w.s.chunk || len(c.buf) > 1<<31 {
		full = c
		if w.spare != nil {
			w.cur, w.spare = w.spare, nil
		} else {
			w.cur = &chunk{buf: make([]byte, 0, cap(c.buf)), ents: make([]ent, 0, cap(c.ents))}
		}
	}
	w.mu.Unlock()
	if full != nil {
		w.write(full)
		w.mu.Lock()
		err := w.err
		if w.spare == nil && !w.done {
			full.buf, full.ents = full.buf[:0], full.ents[:0]
			w.spare = full
		}
		w.mu.Unlock()
		return err
	}
	return nil
}

// write sorts a chunk and writes it as a run file.
func (w *Writer) write(c *chunk) {
	w.spill.Lock()
	defer w.spill.Unlock()
	w.mu.Lock()
	failed := w.err != nil
	w.mu.Unlock()
	if failed {
		return
	}
	// By hash first (integer compares only), then each run of equal hashes
	// (one key's entries, or a rare collision) by the bytes.
	if cap(w.sortTmp) < len(c.ents) {
		w.sortTmp = make([]ent, len(c.ents))
	}
	radixSortByHash(c.ents, w.sortTmp[:len(c.ents)])
	for i := 0; i < len(c.ents); {
		j := i + 1
		for j < len(c.ents) && c.ents[j].h == c.ents[i].h {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(c.ents[i:j], func(a, b ent) int { return bytes.Compare(c.key(a)[8:], c.key(b)[8:]) })
		}
		i = j
	}
	path := w.s.newRunPath()
	err := writeRun(path, func(emit func(k, v []byte) error) error {
		// Sorted, the entries of an AddFirst group are adjacent, the one
		// that sorts first first: write it, skip the rest.
		var group []byte
		for _, e := range c.ents {
			k := c.key(e)
			if e.group > 0 {
				if group != nil && bytes.Equal(k[:e.group], group) {
					continue
				}
				group = k[:e.group]
			} else {
				group = nil
			}
			if err := emit(k, c.val(e)); err != nil {
				return err
			}
			w.stored.Add(1)
		}
		return nil
	})
	if err != nil {
		_ = os.Remove(path)
		w.mu.Lock()
		if w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
		return
	}
	w.runs = append(w.runs, path)
}

// writeRun writes a run file: uvarint key length, key, uvarint value
// length, value, in the order fill emits them (sorted).
func writeRun(path string, fill func(emit func(k, v []byte) error) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("index: writing run: %w", err)
	}
	bw := bufio.NewWriterSize(f, 256<<10)
	var hdr [binary.MaxVarintLen64]byte
	err = fill(func(k, v []byte) error {
		n := binary.PutUvarint(hdr[:], uint64(len(k)))
		if _, err := bw.Write(hdr[:n]); err != nil {
			return err
		}
		bw.Write(k)
		n = binary.PutUvarint(hdr[:], uint64(len(v)))
		bw.Write(hdr[:n])
		_, err := bw.Write(v)
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("index: writing run %s: %w", path, err)
	}
	return nil
}

// mergeRuns merges sorted runs into one new run and removes them.
func (s *Store) mergeRuns(runs []string) (string, error) {
	path := s.newRunPath()
	m, err := openMerge(runs)
	if err != nil {
		return "", err
	}
	err = writeRun(path, func(emit func(k, v []byte) error) error {
		for {
			k, v, ok, err := m.next()
			if err != nil || !ok {
				return err
			}
			if err := emit(k, v); err != nil {
				return err
			}
		}
	})
	m.close()
	if err != nil {
		_ = os.Remove(path)
		return "", err
	}
	for _, r := range runs {
		_ = os.Remove(r)
	}
	return path, nil
}
