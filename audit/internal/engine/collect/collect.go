// Package collect holds the reading phase shared by the engine's modes:
// turning a snapshot into offset ranges, reading them with the committed
// reader under a progress phase, and keeping what the reads met (gaps and
// retries per partition) for the report. What a record means is the
// caller's business: collect hands records to a callback.
package collect

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// Reader is what reading needs from the cluster; *kread.Client has it.
type Reader interface {
	Read(ctx context.Context, ranges []kread.Range, o kread.ReadOptions, fn func(recs []kread.Record) error) (map[kread.TP]kread.Stats, error)
}

// Progress receives progress of the long phases; nil means none.
type Progress interface {
	Phase(name string, totalRecords int64) Phase
}

// Phase is one phase of a Progress.
type Phase interface {
	Add(records, bytes int64)
	Done()
}

// Ranges returns the ranges [start, end) of every partition of t that has
// something to read, and their total offsets. A partition missing from
// start is read from its log start; start below the log start is raised
// to it. A partition missing from end is read to its LSO; end above the
// LSO is lowered to it.
func Ranges(t snapshot.Topic, start, end map[int32]int64) ([]kread.Range, int64) {
	var rs []kread.Range
	var total int64
	for _, p := range t.Parts {
		of := t.Offsets[p]
		from, ok := start[p]
		if !ok || from < of.LogStart {
			from = of.LogStart
		}
		to, ok := end[p]
		if !ok || to > of.LSO {
			to = of.LSO
		}
		if from < to {
			rs = append(rs, kread.Range{Topic: t.Name, Partition: p, From: from, To: to})
			total += to - from
		}
	}
	return rs, total
}

// Stats accumulates the read statistics of every partition read through
// it; safe for concurrent use.
type Stats struct {
	mu sync.Mutex
	m  map[kread.TP]kread.Stats
	// records counts the records handed to callbacks.
	records atomic.Int64
}

// Records returns the records handed to the callbacks of every Read
// through s.
func (s *Stats) Records() int64 { return s.records.Load() }

func (s *Stats) add(m map[kread.TP]kread.Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[kread.TP]kread.Stats{}
	}
	for tp, st := range m {
		old := s.m[tp]
		old.Committed += st.Committed
		old.Aborted += st.Aborted
		old.Control += st.Control
		old.Gaps += st.Gaps
		old.Retries += st.Retries
		old.Next = st.Next
		s.m[tp] = old
	}
}

// TopicRecords returns the records (committed and aborted) read from topic.
func (s *Stats) TopicRecords(topic string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for tp, st := range s.m {
		if tp.Topic == topic {
			n += st.Committed + st.Aborted
		}
	}
	return n
}

// Issues lists the partitions whose reads met gaps or retries, ordered by
// topic and partition.
func (s *Stats) Issues() []finding.ReadIssue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []finding.ReadIssue
	for tp, st := range s.m {
		if st.Gaps > 0 || st.Retries > 0 {
			out = append(out, finding.ReadIssue{Topic: tp.Topic, Partition: tp.Partition, Gaps: st.Gaps, Retries: st.Retries})
		}
	}
	slices.SortFunc(out, func(a, b finding.ReadIssue) int {
		if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	return out
}

// Read reads rs under a progress phase called name (nil p: none), with
// aborted records too when aborted is set, and calls fn with each batch of
// records (concurrently for different partitions, see kread.Client.Read).
// The phase advances by the offsets each fetch consumed, so markers and
// compacted gaps do not leave it short of its total, and by the bytes of
// keys and values. The reads' statistics are added to stats.
func Read(ctx context.Context, r Reader, p Progress, name string, rs []kread.Range, total int64, aborted bool, stats *Stats, fn func(recs []kread.Record) error) error {
	var ph Phase = nopPhase{}
	if p != nil {
		ph = p.Phase(name, total)
	}
	defer ph.Done()
	var mu sync.Mutex
	next := make(map[kread.TP]int64, len(rs))
	for _, rg := range rs {
		next[kread.TP{Topic: rg.Topic, Partition: rg.Partition}] = rg.From
	}
	o := kread.ReadOptions{Aborted: aborted, Progress: func(tp kread.TP, n int64) {
		mu.Lock()
		d := n - next[tp]
		next[tp] = n
		mu.Unlock()
		if d > 0 {
			ph.Add(d, 0)
		}
	}}
	st, err := r.Read(ctx, rs, o, func(recs []kread.Record) error {
		var bytes int64
		for i := range recs {
			bytes += int64(len(recs[i].Key) + len(recs[i].Value))
		}
		if err := fn(recs); err != nil {
			return err
		}
		stats.records.Add(int64(len(recs)))
		ph.Add(0, bytes)
		return nil
	})
	stats.add(st)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	return nil
}

type nopPhase struct{}

func (nopPhase) Add(int64, int64) {}
func (nopPhase) Done()            {}
