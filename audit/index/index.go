// Package index is lossaudit's on-disk evidence store: an embedded Badger
// database holding, per selected key, the input records that count, the
// repartition records still readable, and the newest committed and aborted
// timestamps of the changelogs and the output. Memory stays bounded however
// many keys a pipeline has: writes are batched blind writes, and the check
// reads everything back in one ordered pass, key by key.
package index

import (
	"errors"
	"fmt"
	"os"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Store is an open index directory. It is safe for concurrent use; Close
// must be called exactly once.
type Store struct {
	db  *badger.DB
	dir string
}

// Options tune the store; the zero value is sensible.
type Options struct {
	// MemTableSize bounds each in-memory table (default 32 MiB).
	MemTableSize int64
	// IndexCacheSize bounds the cache of table indexes (default 32 MiB).
	IndexCacheSize int64
}

// Open opens (creating if needed) the index in dir. Another process using
// the same directory is reported clearly instead of as a lock error.
func Open(dir string, o Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("index: store directory is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("index: creating store directory %s: %w", dir, err)
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = 32 << 20
	}
	if o.IndexCacheSize == 0 {
		o.IndexCacheSize = 32 << 20
	}
	opts := badger.DefaultOptions(dir).
		WithLogger(nil).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithIndexCacheSize(o.IndexCacheSize).
		WithMemTableSize(o.MemTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(4).
		WithNumLevelZeroTablesStall(8).
		WithValueLogFileSize(64 << 20).
		WithNumCompactors(2).
		WithDetectConflicts(false).
		WithMetricsEnabled(false)
	db, err := badger.Open(opts)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("index: store directory %s is in use by another lossaudit run (or a crashed one left its lock): %w", dir, err)
		}
		return nil, fmt.Errorf("index: opening store directory %s: %w", dir, err)
	}
	return &Store{db: db, dir: dir}, nil
}

// Dir returns the directory the store lives in.
func (s *Store) Dir() string { return s.dir }

// Close flushes and closes the store.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("index: closing %s: %w", s.dir, err)
	}
	return nil
}

// Reset drops the evidence of the previous run, keeping the cross-run
// history.
func (s *Store) Reset() error {
	if err := s.db.DropPrefix([]byte{prefixRun}); err != nil {
		return fmt.Errorf("index: clearing previous run in %s: %w", s.dir, err)
	}
	return nil
}
