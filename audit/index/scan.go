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

// InputRecord locates one input record in its topic.
type InputRecord struct {
	TS        int64
	Partition int32
	Offset    int64
	FP        uint64
}

// InputView summarises one input's candidate records for a key.
type InputView struct {
	// Has is true when at least one candidate record is not pending at the
	// second hop; Evidence is then the newest such record (max by ts,
	// partition, offset).
	Has      bool
	Evidence InputRecord
	// Candidates counts the candidate records of this input for the key;
	// TailMatched counts those whose copy is still in the repartition
	// topic's unprocessed tail (pending, not audited).
	Candidates  int64
	TailMatched int64
	// Seen is true when the repartition topic still holds a processed
	// (below the committed offset) copy of the evidence record (same key,
	// timestamp and fingerprint), at SeenPartition and SeenOffset.
	Seen          bool
	SeenPartition int32
	SeenOffset    int64
}

// StageView summarises what one changelog, or the output, holds for a key.
type StageView struct {
	// Has is true when a committed record exists; TS, Offset and Tombstone
	// describe the newest one (by timestamp, then offset).
	Has       bool
	TS        int64
	Offset    int64
	Tombstone bool
	// HasAborted is true when an aborted record exists; AbortedTS is the
	// newest aborted timestamp.
	HasAborted bool
	AbortedTS  int64
}

// KeyView is everything the index holds about one selected key. Its slices
// are indexed by input and reused between keys: copy what must outlive the
// callback.
type KeyView struct {
	Key       []byte
	Inputs    []InputView
	Changelog []StageView
	Output    StageView
}

type tailID struct {
	ts int64
	fp uint64
}

type copyAt struct {
	partition int32
	offset    int64
}

// Scan calls fn once per selected key present in the index (in an order
// fixed by the keys' hashes, not by the keys), with the view of inputs
// 0..inputs-1. It reads the sorted runs sequentially and holds only one
// key's evidence in memory at a time.
func (s *Store) Scan(inputs int, fn func(v *KeyView) error) error {
	view := &KeyView{Inputs: make([]InputView, inputs), Changelog: make([]StageView, inputs)}
	tails := make([]map[tailID]struct{}, inputs)
	copies := make([]map[tailID]copyAt, inputs)
	for i := range tails {
		tails[i] = map[tailID]struct{}{}
		copies[i] = map[tailID]copyAt{}
	}
	reset := func(key []byte) {
		view.Key = append(view.Key[:0], key...)
		clear(view.Inputs)
		clear(view.Changelog)
		view.Output = StageView{}
		for i := range tails {
			clear(tails[i])
			clear(copies[i])
		}
	}
	finish := func() error {
		for x := range view.Inputs {
			in := &view.Inputs[x]
			if !in.Has {
				continue
			}
			if c, ok := copies[x][tailID{in.Evidence.TS, in.Evidence.FP}]; ok {
				in.Seen, in.SeenPartition, in.SeenOffset = true, c.partition, c.offset
			}
		}
		return fn(view)
	}
	m, err := openMerge(s.runs)
	if err != nil {
		return err
	}
	defer m.close()
	have := false
	var prev []byte
	for {
		k, v, ok, err := m.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		key, sec, x, rest, ok := splitKey(k)
		if !ok {
			return fmt.Errorf("index: malformed entry %x", k)
		}
		if bytes.Equal(k, prev) && sec != secRepartition {
			continue // the same entry written twice
		}
		prev = append(prev[:0], k...)
		if int(x) >= inputs {
			return fmt.Errorf("index: entry for input %d but the pipeline has %d inputs (was the store written by another configuration?)", x, inputs)
		}
		if !have || !bytes.Equal(key, view.Key) {
			if have {
				if err := finish(); err != nil {
					return err
				}
			}
			reset(key)
			have = true
		}
		if err := apply(view, tails, copies, sec, x, rest, v); err != nil {
			return fmt.Errorf("index: entry %x: %w", k, err)
		}
	}
	if have {
		return finish()
	}
	return nil
}

func apply(view *KeyView, tails []map[tailID]struct{}, copies []map[tailID]copyAt, sec section, x uint8, rest, v []byte) error {
	switch sec {
	case secRepartition:
		if len(rest) != 17 || len(v) != 12 {
			return fmt.Errorf("repartition entry of %d+%d bytes", len(rest), len(v))
		}
		id := tailID{int64(binary.BigEndian.Uint64(rest[1:9])), binary.BigEndian.Uint64(rest[9:17])}
		if rest[0] == 1 {
			tails[x][id] = struct{}{}
		} else {
			// Copies with equal (key, ts, fingerprint): the first by
			// (partition, offset), whatever order they were written in.
			c := copyAt{int32(binary.BigEndian.Uint32(v[:4])), int64(binary.BigEndian.Uint64(v[4:]))}
			if o, ok := copies[x][id]; !ok || c.partition < o.partition || (c.partition == o.partition && c.offset < o.offset) {
				copies[x][id] = c
			}
		}
	case secInput:
		if len(rest) != 20 || len(v) != 8 {
			return fmt.Errorf("input entry of %d+%d bytes", len(rest), len(v))
		}
		rec := InputRecord{
			TS:        uninv(binary.BigEndian.Uint64(rest[0:8])),
			Partition: int32(^binary.BigEndian.Uint32(rest[8:12])),
			Offset:    uninv(binary.BigEndian.Uint64(rest[12:20])),
			FP:        binary.BigEndian.Uint64(v),
		}
		in := &view.Inputs[x]
		in.Candidates++
		if _, pending := tails[x][tailID{rec.TS, rec.FP}]; pending {
			in.TailMatched++
			return nil
		}
		if !in.Has {
			in.Has, in.Evidence = true, rec
		}
	case secChangelog, secOutput:
		st := &view.Output
		if sec == secChangelog {
			st = &view.Changelog[x]
		}
		if st.Has {
			return nil // entries come newest first
		}
		if len(rest) != 16 {
			return fmt.Errorf("stage entry of %d bytes", len(rest))
		}
		st.Has = true
		st.TS = uninv(binary.BigEndian.Uint64(rest[0:8]))
		st.Offset = uninv(binary.BigEndian.Uint64(rest[8:16]))
		st.Tombstone = len(v) == 1 && v[0]&flagTombstone != 0
	case secChangelogAborted, secOutputAborted:
		st := &view.Output
		if sec == secChangelogAborted {
			st = &view.Changelog[x]
		}
		if st.HasAborted {
			return nil
		}
		if len(rest) != 8 {
			return fmt.Errorf("aborted entry of %d bytes", len(rest))
		}
		st.HasAborted = true
		st.AbortedTS = uninv(binary.BigEndian.Uint64(rest[0:8]))
	default:
		return fmt.Errorf("unknown section %#x", byte(sec))
	}
	return nil
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
