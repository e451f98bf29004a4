// Package index is lossaudit's on-disk evidence store: entries about keys,
// written in any order and read back grouped by key. It stores and orders;
// what an entry means is its caller's business (a tag byte, sortable fields
// and a value).
//
// Evidence is aggregated per key, not sorted record by record: entries
// are kept in memory in partitions by key hash, and an entry added with
// AddFirst replaces the one of its group it sorts before (one hash probe
// per record), so a key updated a thousand times costs one entry. Memory
// is bounded by a budget whatever the number of keys: when the partitions
// in memory reach it, the largest ones spill to disk and every later entry
// of theirs is appended to their file; after the read, EachKey aggregates
// the spilled partitions one at a time per goroutine (splitting one
// further by the next hash bits when even that does not fit; on two cores
// or more one goroutine, or two for a light walk, settle the next ones
// while the walk visits what was settled before) and walks every partition
// in hash order, sorting only the aggregated entries of one partition at a
// time.
//
// Earlier versions kept the entries in Badger (a skiplist insert per
// record, more CPU than reading the data from Kafka), then sorted every
// record's entry in chunks and merged the sorted runs (an O(n log n) sort
// with byte compares, half the audit's CPU, for answers that are maxima
// per key).
package index

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Store is an open index directory. It is safe for concurrent use; Close
// must be called exactly once.
type Store struct {
	dir    string
	lock   *os.File
	budget int64
	seq    atomic.Int64 // spill file counter
	// settleWorkers overrides how many goroutines settle spilled
	// partitions ahead of the walk (tests: < 0 for none, in turn).
	settleWorkers int
	lightWalk     bool // Options.LightWalk

	mu   sync.Mutex
	last *Writer // the last flushed writer: what EachKey walks
}

// Options tune the store; the zero value is sensible.
type Options struct {
	// MemoryBytes is the memory budget of the evidence while it is
	// collected (default 96 MiB): the partitions held in memory, their
	// hash tables included. Beyond it partitions spill to disk. EachKey
	// holds at most about as much: what stayed in memory (at most half of
	// it once anything spilled) and the spilled partitions being settled
	// and walked (one, or on two cores or more two or three, sharing the
	// other half).
	MemoryBytes int64
	// LightWalk says the caller's walk (EachKey's fn) costs far less per
	// key than settling a spilled partition does: the audit's check, whose
	// walk takes about a quarter of the settling's CPU. On two cores or
	// more, two goroutines then settle spilled partitions ahead of the
	// walk instead of one (see Store.settlers). Leave it unset for a walk
	// that costs about what settling does (compare's), which a second
	// settler would keep waiting for a core.
	LightWalk bool
}

// DefaultMemoryBytes is the memory budget when Options.MemoryBytes is 0.
const DefaultMemoryBytes = 96 << 20

const (
	lockName    = "LOCK"
	spillPrefix = "spill-"
	spillSuffix = ".part"
	// Files of earlier versions (sorted runs), cleared like spills.
	runPrefix = "run-"
	runSuffix = ".sorted"
)

// Open opens (creating if needed) the index in dir. Another process (or
// another Open) using the same directory is reported clearly.
func Open(dir string, o Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("index: store directory is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("index: creating store directory %s: %w", dir, err)
	}
	if o.MemoryBytes <= 0 {
		o.MemoryBytes = DefaultMemoryBytes
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("index: opening store directory %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("index: store directory %s is in use by another lossaudit run: %w", dir, err)
		}
		return nil, fmt.Errorf("index: locking store directory %s: %w", dir, err)
	}
	s := &Store{dir: dir, lock: f, budget: o.MemoryBytes, lightWalk: o.LightWalk}
	// Spills of an earlier, interrupted or completed run are stale.
	if err := s.Reset(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Dir returns the directory the store lives in.
func (s *Store) Dir() string { return s.dir }

// Close releases the directory.
func (s *Store) Close() error {
	if err := s.lock.Close(); err != nil {
		return fmt.Errorf("index: closing %s: %w", s.dir, err)
	}
	return nil
}

// Reset drops the evidence of the previous run.
func (s *Store) Reset() error {
	s.mu.Lock()
	s.last = nil
	s.mu.Unlock()
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("index: clearing previous run in %s: %w", s.dir, err)
	}
	for _, e := range ents {
		n := e.Name()
		if (strings.HasPrefix(n, spillPrefix) && strings.HasSuffix(n, spillSuffix)) ||
			(strings.HasPrefix(n, runPrefix) && strings.HasSuffix(n, runSuffix)) {
			if err := os.Remove(filepath.Join(s.dir, n)); err != nil {
				return fmt.Errorf("index: clearing previous run in %s: %w", s.dir, err)
			}
		}
	}
	return nil
}

func (s *Store) newSpillPath() string {
	return filepath.Join(s.dir, fmt.Sprintf("%s%06d%s", spillPrefix, s.seq.Add(1), spillSuffix))
}
