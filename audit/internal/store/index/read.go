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
	"runtime"
	"sync"
	"sync/atomic"
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
// that stayed in memory and the spilled ones being settled and walked
// (at most two at a time, within half the budget together), aggregated.
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
//
// With two or more spilled partitions, the spilled ones are settled
// (read back, aggregated and sorted) on goroutines of their own while fn
// walks what was settled before, in the same order: see settleAhead.
func (s *Store) EachKeyAhead(ahead Ahead, fn func(key []byte, c *Cursor) error) error {
	s.mu.Lock()
	w := s.last
	s.mu.Unlock()
	if w == nil {
		return nil
	}
	var spilled []int
	for i := range w.parts {
		pt := &w.parts[i]
		if pt.spill != nil {
			spilled = append(spilled, i)
		} else if pt.p == nil {
			return errors.New("index: the evidence was cancelled")
		}
	}
	count := !w.walked.Load()
	var err error
	if workers := s.settlers(); workers > 0 && len(spilled) > 1 {
		err = settleAhead(w, spilled, workers, count, ahead, fn)
	} else {
		err = settleInTurn(w, count, ahead, fn)
	}
	if err == nil && count {
		w.walked.Store(true)
	}
	return err
}

// settlers is how many goroutines settle spilled partitions ahead of the
// walk: none (settle in turn) with one core; with two or more, one, or
// two for a light walk (Options.LightWalk).
//
// Measured on two cores: the audit's check (a light walk: 0.35 s of CPU
// walking against 1.4 s settling, at 10M input records) waited for its one
// settler 80% of the time; two cut the check by 25 to 35%. Compare's walk
// costs about what its settling does, and with two settlers it waited for
// a core behind them (its check 1.05-1.46 s with one, 1.21-1.40 s with
// two; on a machine loaded 36 to 45, BenchmarkSettledWalk's medians were
// one worker -45%, two +140% against settling in turn).
func (s *Store) settlers() int {
	if s.settleWorkers != 0 {
		return max(0, s.settleWorkers)
	}
	switch {
	case runtime.GOMAXPROCS(0) < 2:
		return 0
	case s.lightWalk:
		return 2
	}
	return 1
}

// settleInTurn walks the partitions in order on this goroutine, settling
// each spilled one in its turn within half the budget.
func settleInTurn(w *Writer, count bool, ahead Ahead, fn func(key []byte, c *Cursor) error) error {
	st := &settler{w: w, count: count, limit: w.budget / 2, p: &part{}}
	st.emit = func(p *part) error { return walkAhead(p, ahead, fn) }
	return walkInOrder(w, ahead, fn, func(i int) error { return st.settle(w.parts[i].spill.path, 1) })
}

// walkInOrder walks the partitions in hash order: those in memory
// directly, each spilled one i through spilled(i).
func walkInOrder(w *Writer, ahead Ahead, fn func(key []byte, c *Cursor) error, spilled func(i int) error) error {
	for i := range w.parts {
		pt := &w.parts[i]
		if pt.spill == nil {
			if err := walkAhead(pt.p, ahead, fn); err != nil {
				return err
			}
			continue
		}
		if err := spilled(i); err != nil {
			return err
		}
	}
	return nil
}

// settled is a settled (sub)partition handed to the walk, or the error
// that ended its settling.
type settled struct {
	p   *part
	err error
}

var errWalkStopped = errors.New("index: the walk stopped")

// settleAhead walks the partitions in order on this goroutine while
// workers goroutines settle the spilled ones (indexes spilled, in order)
// ahead of it. Each worker takes the next spilled partition, settles it
// into a free part and hands it to the walk (splitting it as settle does,
// one part per subpartition), then takes the next. There are workers+1
// parts, each settled within a (workers+1)th of half the budget, so the
// settled parts together hold what one did when settled in turn (half
// the budget; the partitions in memory hold the other half). A worker
// waits for the walk to take what it settled before it takes another
// part, so the walk, on the lowest partition not walked, always gets it:
// the other workers hold at most one part each, the walk one.
func settleAhead(w *Writer, spilled []int, workers int, count bool, ahead Ahead, fn func(key []byte, c *Cursor) error) error {
	workers = min(workers, len(spilled))
	slots := workers + 1
	free := make(chan *part, slots)
	for range slots {
		free <- &part{}
	}
	outs := make([]chan settled, len(w.parts))
	for _, i := range spilled {
		outs[i] = make(chan settled)
	}
	stop := make(chan struct{})
	var next atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := &settler{w: w, count: count, limit: w.budget / 2 / int64(slots)}
			for {
				j := int(next.Add(1)) - 1
				if j >= len(spilled) {
					return
				}
				out := outs[spilled[j]]
				st.emit = func(p *part) error {
					select {
					case out <- settled{p: p}:
						st.p = nil // the walk's now; it returns it to free
						return nil
					case <-stop:
						return errWalkStopped
					}
				}
				st.take = func() (*part, error) {
					select {
					case p := <-free:
						return p, nil
					case <-stop:
						return nil, errWalkStopped
					}
				}
				err := st.settle(w.parts[spilled[j]].spill.path, 1)
				if st.p != nil { // taken and not handed on (an error)
					free <- st.p
					st.p = nil
				}
				if err != nil {
					select {
					case out <- settled{err: err}:
					case <-stop:
					}
					return
				}
				close(out)
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	return walkInOrder(w, ahead, fn, func(i int) error {
		for s := range outs[i] {
			if s.err != nil {
				return s.err
			}
			err := walkAhead(s.p, ahead, fn)
			free <- s.p
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// settler aggregates spilled partitions into parts and hands each,
// sorted, to emit. With take nil it settles in the one part p, whose
// memory it reuses; otherwise take gives it a part for each
// (sub)partition, which emit takes over.
type settler struct {
	w     *Writer
	count bool  // count the entries (the first walk)
	limit int64 // the most a part may hold before its partition is split
	tmp   []ent
	p     *part
	take  func() (*part, error)
	emit  func(p *part) error
}

// settle aggregates the spilled entries in path (a partition at level
// level: its keys share the hash's first level×partBits bits) and emits
// them. When they outgrow the settler's limit, what is read so far and the
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
	if st.p == nil {
		if st.p, err = st.take(); err != nil {
			return err
		}
	}
	p := st.p
	p.reset()
	canSplit := (level+1)*partBits <= 64
	full := false
	err = r.each(func() (bool, error) {
		if err := p.addStored(r.h, r.k, r.v, r.g); err != nil {
			return false, fmt.Errorf("index: reading spill %s: %w", path, err)
		}
		full = canSplit && p.size() > st.limit
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
	return st.emit(p)
}

// split writes p and the rest of r into one file per next partBits of the
// hash and settles each, in hash order.
func (st *settler) split(r *spillReader, level int) error {
	w, p := st.w, st.p
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
