// Package history keeps, across audit runs, what each run saw of every
// audited partition (log start, last stable offset, high watermark, the
// group's committed offset), in an embedded Badger database under the
// store directory. Comparing a run's snapshot with the previous one finds
// what no single snapshot can show: a partition whose log end moved
// backwards (truncated: unclean leader election, a last-replica-standing
// shutdown) and a consumer group whose committed offset moved backwards or
// vanished (offset_reset). It is small (one entry per partition) and read
// and written at random, which is what Badger is for.
package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// Partition is what one run saw of one partition.
type Partition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// LogStart, LSO and HighWatermark are the partition's offsets.
	LogStart      int64 `json:"log_start"`
	LSO           int64 `json:"lso"`
	HighWatermark int64 `json:"high_watermark"`
	// Committed is the group's committed offset; HasCommitted is false
	// for partitions the group does not consume (changelogs, output) or
	// has never committed.
	Committed    int64 `json:"committed"`
	HasCommitted bool  `json:"has_committed"`
}

type entry struct {
	Partition
	At time.Time `json:"at"`
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

// Compare returns the partition findings of now against the previous
// run's snapshot of the same group: truncated when a partition's high
// watermark is below the one seen before, offset_reset when the group's
// committed offset is below the one seen before or has disappeared.
// Partitions without a previous snapshot yield nothing.
func (s *Store) Compare(group string, now []Partition) ([]finding.PartitionFinding, error) {
	var out []finding.PartitionFinding
	err := s.db.View(func(txn *badger.Txn) error {
		for _, p := range now {
			item, err := txn.Get(key(group, p.Topic, p.Partition))
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var prev entry
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &prev) }); err != nil {
				return fmt.Errorf("%s[%d]: %w", p.Topic, p.Partition, err)
			}
			out = append(out, compare(group, prev, p)...)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("history: comparing with the previous run in %s: %w", s.dir, err)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

func compare(group string, prev entry, now Partition) []finding.PartitionFinding {
	var out []finding.PartitionFinding
	when := prev.At.UTC().Format(time.RFC3339)
	if now.HighWatermark < prev.HighWatermark {
		out = append(out, finding.PartitionFinding{
			Kind: finding.Truncated, Topic: now.Topic, Partition: now.Partition,
			Evidence: fmt.Sprintf("high watermark moved back from %d (run at %s) to %d: %d acknowledged offsets are gone (unclean leader election, a last-replica-standing shutdown, or the topic was recreated)",
				prev.HighWatermark, when, now.HighWatermark, prev.HighWatermark-now.HighWatermark),
			Offsets: map[string]int64{"previous_high_watermark": prev.HighWatermark, "high_watermark": now.HighWatermark},
		})
	}
	switch {
	case prev.HasCommitted && !now.HasCommitted:
		out = append(out, finding.PartitionFinding{
			Kind: finding.OffsetReset, Topic: now.Topic, Partition: now.Partition,
			Evidence: fmt.Sprintf("group %s had committed offset %d (run at %s) and now has none: its offsets were deleted or expired, and it will restart from auto.offset.reset",
				group, prev.Committed, when),
			Offsets: map[string]int64{"previous_committed": prev.Committed},
		})
	case prev.HasCommitted && now.HasCommitted && now.Committed < prev.Committed:
		out = append(out, finding.PartitionFinding{
			Kind: finding.OffsetReset, Topic: now.Topic, Partition: now.Partition,
			Evidence: fmt.Sprintf("committed offset of group %s moved back from %d (run at %s) to %d: records were (or will be) processed again",
				group, prev.Committed, when, now.Committed),
			Offsets: map[string]int64{"previous_committed": prev.Committed, "committed": now.Committed},
		})
	}
	return out
}

// Record stores now as the latest snapshot of the group's partitions.
func (s *Store) Record(group string, now []Partition, at time.Time) error {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, p := range now {
		v, err := json.Marshal(entry{Partition: p, At: at})
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
