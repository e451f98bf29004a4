package index

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Entry is one stored entry of a key: the tag and fields it was added
// with, and its value. The slices are valid until the cursor moves.
type Entry struct {
	Tag    byte
	Fields []byte
	Value  []byte
}

// Cursor walks the entries of one key during EachKey, in order: by tag, then
// by fields bytewise. Entries added twice are yielded twice.
type Cursor struct {
	m    *merger
	cur  []byte // key part (hash, length, key) of the key being walked
	e    Entry
	err  error
	peek bool // the merger's current entry is this key's next, not yet yielded
	done bool // no more entries for this key
}

// Next moves to the key's next entry and reports whether there is one.
func (c *Cursor) Next() bool {
	if c.done || c.err != nil {
		return false
	}
	if !c.peek {
		if !c.m.step() {
			c.err = c.m.err
			c.done = true
			return false
		}
	}
	c.peek = false
	k, v := c.m.k, c.m.v
	if !bytes.Equal(keyPart(k), c.cur) {
		c.peek = true // the next key's first entry
		c.done = true
		return false
	}
	_, tag, fields, ok := splitKey(k)
	if !ok {
		c.err = fmt.Errorf("index: malformed entry %x", k)
		return false
	}
	c.e = Entry{Tag: tag, Fields: fields, Value: v}
	return true
}

// Entry returns the entry Next moved to.
func (c *Cursor) Entry() Entry { return c.e }

// EachKey calls fn once per key in the index, in an order fixed by the keys'
// hashes (not by the keys), with a cursor over the key's entries. fn need
// not walk every entry; the rest are skipped. EachKey reads the sorted runs
// sequentially and holds only the current entry in memory. key is valid
// only during the call.
func (s *Store) EachKey(fn func(key []byte, c *Cursor) error) error {
	m, err := openMerge(s.runs)
	if err != nil {
		return err
	}
	defer m.close()
	c := &Cursor{m: m}
	var key []byte
	if !m.step() {
		return m.err
	}
	for {
		kp := keyPart(m.k)
		if kp == nil {
			return fmt.Errorf("index: malformed entry %x", m.k)
		}
		c.cur = append(c.cur[:0], kp...)
		key = append(key[:0], kp[headLen:]...)
		c.peek, c.done, c.err = true, false, nil
		if err := fn(key, c); err != nil {
			return err
		}
		for c.Next() {
		}
		if c.err != nil {
			return c.err
		}
		if !c.peek {
			return nil // the merge is exhausted
		}
	}
}

// runReader reads one run file entry by entry.
type runReader struct {
	f    *os.File
	r    *bufio.Reader
	k, v []byte
}

func (rr *runReader) advance() (bool, error) {
	read := func(dst []byte) ([]byte, error) {
		n, err := binary.ReadUvarint(rr.r)
		if err != nil {
			return nil, err
		}
		if uint64(cap(dst)) < n {
			dst = make([]byte, n, max(n, 64))
		}
		dst = dst[:n]
		_, err = io.ReadFull(rr.r, dst)
		return dst, err
	}
	var err error
	if rr.k, err = read(rr.k); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("index: reading run %s: %w", rr.f.Name(), err)
	}
	if rr.v, err = read(rr.v); err != nil {
		return false, fmt.Errorf("index: reading run %s: %w", rr.f.Name(), noEOF(err))
	}
	return true, nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// merger yields the entries of several sorted runs in order.
type merger struct {
	k, v []byte // the entry step moved to
	err  error
	h    runHeap
	last *runReader // the reader whose entry was returned last
	all  []*runReader
}

type runHeap []*runReader

func (h runHeap) Len() int { return len(h) }
func (h runHeap) Less(i, j int) bool {
	// Entry keys start with the key's hash: compare it as an integer first.
	a, b := h[i].k, h[j].k
	if len(a) >= 8 && len(b) >= 8 {
		if x, y := binary.BigEndian.Uint64(a), binary.BigEndian.Uint64(b); x != y {
			return x < y
		}
	}
	return bytes.Compare(a, b) < 0
}
func (h runHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)   { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func openMerge(runs []string) (*merger, error) {
	m := &merger{}
	for _, p := range runs {
		f, err := os.Open(p)
		if err != nil {
			m.close()
			return nil, fmt.Errorf("index: opening run: %w", err)
		}
		rr := &runReader{f: f, r: bufio.NewReaderSize(f, 64<<10)}
		m.all = append(m.all, rr)
		ok, err := rr.advance()
		if err != nil {
			m.close()
			return nil, err
		}
		if ok {
			m.h = append(m.h, rr)
		}
	}
	heap.Init(&m.h)
	return m, nil
}

// step moves to the smallest remaining entry, available in m.k and m.v
// until the following call; false at the end or on error (m.err).
func (m *merger) step() bool {
	k, v, ok, err := m.next()
	m.k, m.v, m.err = k, v, err
	return ok
}

// next returns the smallest remaining entry; its slices are valid until
// the following call.
func (m *merger) next() (k, v []byte, ok bool, err error) {
	if m.last != nil {
		more, err := m.last.advance()
		if err != nil {
			return nil, nil, false, err
		}
		if more {
			heap.Fix(&m.h, 0)
		} else {
			heap.Pop(&m.h)
		}
		m.last = nil
	}
	if len(m.h) == 0 {
		return nil, nil, false, nil
	}
	m.last = m.h[0]
	return m.last.k, m.last.v, true, nil
}

func (m *merger) close() {
	for _, rr := range m.all {
		rr.f.Close()
	}
}
