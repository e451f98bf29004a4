// Package index is lossaudit's on-disk evidence store: entries about keys,
// written in any order and read back grouped by key. It stores and orders;
// what an entry means is its caller's business (a tag byte, sortable fields
// and a value). Memory stays bounded however many keys there are: entries
// are collected in a chunk of fixed size, sorted and written out as a run
// file when it fills (an external merge sort), and EachKey reads all runs back
// in one merged, ordered pass, key by key.
//
// An earlier version kept the entries in Badger; with one entry per record
// read, its memtable inserts (a skiplist search per entry) cost more CPU
// than reading the data from Kafka. The evidence is written once and read
// once in order, which is what a sort does best.
package index

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
)

// Store is an open index directory. It is safe for concurrent use; Close
// must be called exactly once.
type Store struct {
	dir   string
	lock  *os.File
	chunk int64
	runs  []string     // sorted run files of the last completed writer
	seq   atomic.Int64 // run file counter
}

// Options tune the store; the zero value is sensible.
type Options struct {
	// ChunkBytes is the memory for collecting and sorting entries before
	// they are written out as one sorted run (default 24 MiB). Up to three
	// chunks can be in memory at once (one filling, one waiting, one being
	// written).
	ChunkBytes int64
}

const (
	lockName  = "LOCK"
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
	if o.ChunkBytes <= 0 {
		o.ChunkBytes = 24 << 20
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
	s := &Store{dir: dir, lock: f, chunk: o.ChunkBytes}
	// Runs of an earlier, interrupted or completed run are stale.
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
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("index: clearing previous run in %s: %w", s.dir, err)
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, runPrefix) && strings.HasSuffix(n, runSuffix) {
			if err := os.Remove(filepath.Join(s.dir, n)); err != nil {
				return fmt.Errorf("index: clearing previous run in %s: %w", s.dir, err)
			}
		}
	}
	s.runs = nil
	return nil
}

func (s *Store) newRunPath() string {
	return filepath.Join(s.dir, fmt.Sprintf("%s%06d%s", runPrefix, s.seq.Add(1), runSuffix))
}
