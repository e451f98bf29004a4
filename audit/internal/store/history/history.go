// Package history keeps, across audit runs, what each run saw of every
// audited partition (log start, last stable offset, high watermark, the
// group's committed offset), in an embedded Badger database under the
// store directory. It only stores: comparing a run's snapshot with the
// previous one (the truncated and offset_reset detectors) is done by the
// engine's detectors. It is small (one entry per partition) and read and
// written at random, which is what Badger is for.
package history

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// Entry is what an earlier run saw of one partition, and when.
type Entry struct {
	snapshot.Partition
	At time.Time
}

// stored is the on-disk form of an Entry (JSON; the field names are the
// format of stores written by earlier versions).
type stored struct {
	Topic         string    `json:"topic"`
	Partition     int32     `json:"partition"`
	LogStart      int64     `json:"log_start"`
	LSO           int64     `json:"lso"`
	HighWatermark int64     `json:"high_watermark"`
	Committed     int64     `json:"committed"`
	HasCommitted  bool      `json:"has_committed"`
	At            time.Time `json:"at"`
}

// Store is an open history database. Close must be called exactly once.
type Store struct {
	db  *badger.DB
	dir string
}

// Open opens (creating if needed) the history in dir.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("history: creating %s: %w", dir, err)
	}
	opts := badger.DefaultOptions(dir).
		WithLogger(nil).
		WithMemTableSize(8 << 20).
		WithValueThreshold(1 << 10).
		WithNumMemtables(1).
		WithValueLogFileSize(16 << 20).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithIndexCacheSize(4 << 20).
		WithNumCompactors(2).
		WithMetricsEnabled(false)
	db, err := badger.Open(opts)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("history: %s is in use by another lossaudit run: %w", dir, err)
		}
		return nil, fmt.Errorf("history: opening %s: %w", dir, err)
	}
	return &Store{db: db, dir: dir}, nil
}

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("history: closing %s: %w", s.dir, err)
	}
	return nil
}

func key(group, topic string, partition int32) []byte {
	return fmt.Appendf(nil, "p\x00%s\x00%s\x00%d", group, topic, partition)
}

// Load returns the latest snapshot of every partition recorded for group.
func (s *Store) Load(group string) (map[kread.TP]Entry, error) {
	out := map[kread.TP]Entry{}
	prefix := fmt.Appendf(nil, "p\x00%s\x00", group)
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true, PrefetchSize: 64})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var st stored
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &st) }); err != nil {
				return fmt.Errorf("entry %q: %w", it.Item().Key(), err)
			}
			out[kread.TP{Topic: st.Topic, Partition: st.Partition}] = Entry{At: st.At, Partition: snapshot.Partition{
				Topic: st.Topic, Partition: st.Partition, LogStart: st.LogStart, LSO: st.LSO, HighWatermark: st.HighWatermark,
				Committed: st.Committed, HasCommitted: st.HasCommitted}}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: reading the previous run of %s in %s: %w", group, s.dir, err)
	}
	return out, nil
}

// Record stores now as the latest snapshot of the group's partitions.
func (s *Store) Record(group string, now []snapshot.Partition, at time.Time) error {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, p := range now {
		v, err := json.Marshal(stored{Topic: p.Topic, Partition: p.Partition, LogStart: p.LogStart, LSO: p.LSO,
			HighWatermark: p.HighWatermark, Committed: p.Committed, HasCommitted: p.HasCommitted, At: at})
		if err != nil {
			return err
		}
		if err := wb.Set(key(group, p.Topic, p.Partition), v); err != nil {
			return fmt.Errorf("history: recording %s[%d]: %w", p.Topic, p.Partition, err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("history: recording the run in %s: %w", s.dir, err)
	}
	return nil
}
