package index

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
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
// by fields bytewise. Entries added twice with Add are yielded twice.
type Cursor struct {
	p      *part
	i, end int
	e      Entry
	err    error
}

// Next moves to the key's next entry and reports whether there is one.
func (c *Cursor) Next() bool {
	if c.err != nil || c.i >= c.end {
		return false
	}
	e := c.p.ents[c.i]
	c.i++
	_, tag, fields, ok := splitKey(c.p.key(e))
	if !ok {
		c.err = fmt.Errorf("index: malformed entry %x", c.p.key(e))
		return false
	}
	c.e = Entry{Tag: tag, Fields: fields, Value: c.p.val(e)}
	return true
}

// Entry returns the entry Next moved to.
func (c *Cursor) Entry() Entry { return c.e }

// EachKey calls fn once per key in the index, in an order fixed by the keys'
// hashes (not by the keys), with a cursor over the key's entries. fn need
// not walk every entry; the rest are skipped. EachKey holds the partitions
// that stayed in memory and one spilled partition at a time, aggregated.
// key is valid only during the call.
func (s *Store) EachKey(fn func(key []byte, c *Cursor) error) error {
	return s.EachKeyAhead(nil, fn)
}

// Ahead is told the keys EachKeyAhead is about to visit, one partition at
// a time, before it visits them: keys yields them in the order fn will
// see them (each valid only during the yield; keys may be ranged over on
// another goroutine). The done it returns is called when the walk of
// those keys has ended, also when it stopped early; keys must not be used
// after done returns.
type Ahead func(keys iter.Seq[[]byte]) (done func())

// EachKeyAhead is EachKey telling ahead (nil for nothing) which keys come
// next, so that it can fetch what fn will need of them meanwhile.
func (s *Store) EachKeyAhead(ahead Ahead, fn func(key []byte, c *Cursor) error) error {
	s.mu.Lock()
	w := s.last
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	st := &settler{w: w, count: !w.walked.Load(), fn: fn, ahead: ahead}
	for i := range w.parts {
		pt := &w.parts[i]
		if pt.spill == nil {
			if pt.p == nil {
				return errors.New("index: the evidence was cancelled")
			}
			if err := walkAhead(pt.p, ahead, fn); err != nil {
				return err
			}
			continue
		}
		if err := st.settle(pt.spill.path, 1); err != nil {
			return err
		}
	}
	if st.count {
		w.walked.Store(true)
	}
	return nil
}

// settler aggregates and walks spilled partitions, one at a time, in one
// part whose memory it reuses.
type settler struct {
	w     *Writer
	count bool // count the entries (the first walk)
	tmp   []ent
	p     part
	fn    func(key []byte, c *Cursor) error
	ahead Ahead
}

// settle aggregates the spilled entries in path (a partition at level
// level: its keys share the hash's first level×partBits bits) and walks
// them. When they outgrow half the budget, what is read so far and the
// rest of the file are split by the next bits of the hash into files of
// their own, settled in order; past the hash's last bits it stops
// splitting.
func (st *settler) settle(path string, level int) error {
	w := st.w
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("index: reading spill: %w", err)
	}
	defer f.Close()
	r := &spillReader{path: path, r: bufio.NewReaderSize(f, 64<<10)}
	p := &st.p
	p.reset()
	limit := w.budget / 2
	canSplit := (level+1)*partBits <= 64
	full := false
	err = r.each(func() (bool, error) {
		if err := p.addStored(r.h, r.k, r.v, r.g); err != nil {
			return false, fmt.Errorf("index: reading spill %s: %w", path, err)
		}
		full = canSplit && p.size() > limit
		return !full, nil
	})
	if err != nil {
		return err
	}
	if full {
		return st.split(r, level)
	}
	storeMax(&w.peakSettled, p.bytes())
	st.tmp = p.sort(st.tmp)
	if st.count {
		w.stored.Add(int64(len(p.ents)))
	}
	return walkAhead(p, st.ahead, st.fn)
}

// split writes p and the rest of r into one file per next partBits of the
// hash and settles each, in hash order.
func (st *settler) split(r *spillReader, level int) error {
	w, p := st.w, &st.p
	shift := 64 - uint((level+1)*partBits)
	var subs [parts]*spillFile
	defer func() {
		for _, sf := range subs {
			if sf != nil {
				sf.remove()
			}
		}
	}()
	put := func(h uint64, k, v []byte, g uint32) error {
		i := (h >> shift) & (parts - 1)
		if subs[i] == nil {
			sf, err := createSpill(w.s.newSpillPath())
			if err != nil {
				return err
			}
			subs[i] = sf
		}
		return subs[i].write(k, v, g)
	}
	p.file()
	for _, e := range p.ents {
		if err := put(e.h, p.key(e), p.val(e), e.group); err != nil {
			return err
		}
	}
	p.reset() // reused by the parts
	if err := r.each(func() (bool, error) { return true, put(r.h, r.k, r.v, r.g) }); err != nil {
		return err
	}
	for _, sf := range subs {
		if sf == nil {
			continue
		}
		if err := sf.close(); err != nil {
			return err
		}
		if err := st.settle(sf.path, level+1); err != nil {
			return err
		}
		sf.remove()
	}
	return nil
}

// walkAhead is walk telling ahead (when not nil) the part's keys first.
func walkAhead(p *part, ahead Ahead, fn func(key []byte, c *Cursor) error) error {
	if ahead == nil || len(p.ents) == 0 {
		return walk(p, fn)
	}
	done := ahead(func(yield func([]byte) bool) {
		_ = eachKey(p, func(_, _ int, key []byte) error {
			if !yield(key) {
				return errStopKeys
			}
			return nil
		})
	})
	defer done()
	return walk(p, fn)
}

var errStopKeys = errors.New("stop")

// eachKey calls fn for every key of a sorted part, with the range of its
// entries, in the order of the part: the order walk visits them in. It
// only reads the part.
func eachKey(p *part, fn func(i, j int, key []byte) error) error {
	for i := 0; i < len(p.ents); {
		kp := keyPart(p.key(p.ents[i]))
		if kp == nil {
			return fmt.Errorf("index: malformed entry %x", p.key(p.ents[i]))
		}
		j := i + 1
		for j < len(p.ents) && p.ents[j].h == p.ents[i].h && bytes.Equal(keyPart(p.key(p.ents[j])), kp) {
			j++
		}
		if err := fn(i, j, kp[headLen:]); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// walk calls fn for every key of a sorted part.
func walk(p *part, fn func(key []byte, c *Cursor) error) error {
	c := &Cursor{p: p}
	return eachKey(p, func(i, j int, key []byte) error {
		c.i, c.end, c.err = i, j, nil
		if err := fn(key, c); err != nil {
			return err
		}
		return c.err
	})
}

// spillReader reads a spill file entry by entry.
type spillReader struct {
	path string
	r    *bufio.Reader
	h    uint64
	k, v []byte
	g    uint32
}

// each calls fn for every remaining entry (in sr.h, k, v and g) until fn
// says to stop or fails.
func (sr *spillReader) each(fn func() (more bool, err error)) error {
	for {
		ok, err := sr.next()
		if err != nil || !ok {
			return err
		}
		if more, err := fn(); err != nil || !more {
			return err
		}
	}
}

func (sr *spillReader) next() (bool, error) {
	read := func(dst []byte) ([]byte, error) {
		n, err := binary.ReadUvarint(sr.r)
		if err != nil {
			return nil, err
		}
		if n > maxPartBytes {
			return nil, fmt.Errorf("entry of %d bytes", n)
		}
		if uint64(cap(dst)) < n {
			dst = make([]byte, n, max(n, 64))
		}
		dst = dst[:n]
		_, err = io.ReadFull(sr.r, dst)
		return dst, err
	}
	var err error
	if sr.k, err = read(sr.k); err != nil {
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		return false, fmt.Errorf("index: reading spill %s: %w", sr.path, err)
	}
	if len(sr.k) < headLen {
		return false, fmt.Errorf("index: reading spill %s: malformed entry %x", sr.path, sr.k)
	}
	sr.h = binary.BigEndian.Uint64(sr.k)
	if sr.v, err = read(sr.v); err != nil {
		return false, fmt.Errorf("index: reading spill %s: %w", sr.path, noEOF(err))
	}
	g, err := binary.ReadUvarint(sr.r)
	if err != nil {
		return false, fmt.Errorf("index: reading spill %s: %w", sr.path, noEOF(err))
	}
	sr.g = uint32(g)
	return true, nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
