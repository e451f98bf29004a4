package index

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
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

	spill sync.Mutex // one chunk is sorted and written at a time
}

// chunk is a batch of entries in memory: encoded back to back in buf.
type chunk struct {
	buf  []byte
	ents []ent
}

// ent locates one entry of a chunk; h is the entry's leading hash, so
// most comparisons while sorting look at one integer.
type ent struct {
	h          uint64
	off        uint32
	klen, vlen uint32
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

// Flush writes out everything pending and ends the writer; a later Scan
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

// add appends one entry: key (selected key), section and input, then the
// section fields, and the value.
func (w *Writer) add(key []byte, sec section, x uint8, fields, val []byte) error {
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
	c.buf = appendHead(c.buf, key, sec, x)
	c.buf = append(c.buf, fields...)
	klen := len(c.buf) - off
	c.buf = append(c.buf, val...)
	c.ents = append(c.ents, ent{h: binary.BigEndian.Uint64(c.buf[off:]), off: uint32(off), klen: uint32(klen), vlen: uint32(len(val))})
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
	slices.SortFunc(c.ents, func(a, b ent) int { return cmp.Compare(a.h, b.h) })
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
		for _, e := range c.ents {
			if err := emit(c.key(e), c.val(e)); err != nil {
				return err
			}
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

// Input records an input record of input x that is a candidate for the
// audit (committed, processed at the first hop, in the window, with a
// non-null value and selected key). fp is the value fingerprint used to
// match the record's copy in the repartition topic.
func (w *Writer) Input(x uint8, key []byte, ts int64, partition int32, offset int64, fp uint64) error {
	var f [20]byte
	binary.BigEndian.PutUint64(f[0:], inv(ts))
	binary.BigEndian.PutUint32(f[8:], ^uint32(partition))
	binary.BigEndian.PutUint64(f[12:], inv(offset))
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], fp)
	return w.add(key, secInput, x, f[:], v[:])
}

// Repartition records a committed record of input x's repartition topic.
// tail is true when the record is at or above the group's committed offset
// for its partition (not yet processed by the reduce).
func (w *Writer) Repartition(x uint8, key []byte, ts int64, fp uint64, tail bool, partition int32, offset int64) error {
	var f [17]byte
	if tail {
		f[0] = 1
	}
	binary.BigEndian.PutUint64(f[1:], uint64(ts))
	binary.BigEndian.PutUint64(f[9:], fp)
	var v [12]byte
	binary.BigEndian.PutUint32(v[:4], uint32(partition))
	binary.BigEndian.PutUint64(v[4:], uint64(offset))
	return w.add(key, secRepartition, x, f[:], v[:])
}

// Changelog records a record of input x's changelog topic; aborted marks
// one that belongs to an aborted transaction, tombstone one whose value is
// null.
func (w *Writer) Changelog(x uint8, key []byte, ts, offset int64, aborted, tombstone bool) error {
	if aborted {
		return w.aborted(secChangelogAborted, x, key, ts)
	}
	return w.committed(secChangelog, x, key, ts, offset, tombstone)
}

// Output records a record of the output topic.
func (w *Writer) Output(key []byte, ts, offset int64, aborted, tombstone bool) error {
	if aborted {
		return w.aborted(secOutputAborted, 0, key, ts)
	}
	return w.committed(secOutput, 0, key, ts, offset, tombstone)
}

func (w *Writer) committed(sec section, x uint8, key []byte, ts, offset int64, tombstone bool) error {
	var f [16]byte
	binary.BigEndian.PutUint64(f[0:], inv(ts))
	binary.BigEndian.PutUint64(f[8:], inv(offset))
	var flags [1]byte
	if tombstone {
		flags[0] |= flagTombstone
	}
	return w.add(key, sec, x, f[:], flags[:])
}

func (w *Writer) aborted(sec section, x uint8, key []byte, ts int64) error {
	var f [8]byte
	binary.BigEndian.PutUint64(f[:], inv(ts))
	return w.add(key, sec, x, f[:], nil)
}
