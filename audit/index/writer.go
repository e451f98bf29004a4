package index

import (
	"encoding/binary"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// Writer batches evidence into the store. Its methods are safe for
// concurrent use; Flush must be called once at the end, and its error (or
// the first error of any write) decides whether the evidence is complete.
type Writer struct {
	wb *badger.WriteBatch
}

// NewWriter starts a batched writer.
func (s *Store) NewWriter() *Writer {
	return &Writer{wb: s.db.NewWriteBatch()}
}

// Flush writes out everything pending and ends the writer.
func (w *Writer) Flush() error {
	if err := w.wb.Flush(); err != nil {
		return fmt.Errorf("index: writing batch: %w", err)
	}
	return nil
}

// Cancel abandons the writer after an error.
func (w *Writer) Cancel() { w.wb.Cancel() }

func (w *Writer) set(k, v []byte) error {
	if err := w.wb.Set(k, v); err != nil {
		return fmt.Errorf("index: writing entry: %w", err)
	}
	return nil
}

// Input records an input record of input x that is a candidate for the
// audit (committed, processed at the first hop, in the window, with a
// non-null value and selected key). fp is the value fingerprint used to
// match the record's copy in the repartition topic.
func (w *Writer) Input(x uint8, key []byte, ts int64, partition int32, offset int64, fp uint64) error {
	k, err := keyHead(key, secInput, x, 20)
	if err != nil {
		return err
	}
	k = binary.BigEndian.AppendUint64(k, inv(ts))
	k = binary.BigEndian.AppendUint32(k, ^uint32(partition))
	k = binary.BigEndian.AppendUint64(k, inv(offset))
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], fp)
	return w.set(k, v[:])
}

// Repartition records a committed record of input x's repartition topic.
// tail is true when the record is at or above the group's committed offset
// for its partition (not yet processed by the reduce).
func (w *Writer) Repartition(x uint8, key []byte, ts int64, fp uint64, tail bool, partition int32, offset int64) error {
	k, err := keyHead(key, secRepartition, x, 17)
	if err != nil {
		return err
	}
	if tail {
		k = append(k, 1)
	} else {
		k = append(k, 0)
	}
	k = binary.BigEndian.AppendUint64(k, uint64(ts))
	k = binary.BigEndian.AppendUint64(k, fp)
	var v [12]byte
	binary.BigEndian.PutUint32(v[:4], uint32(partition))
	binary.BigEndian.PutUint64(v[4:], uint64(offset))
	return w.set(k, v[:])
}

// Changelog records a record of input x's changelog topic; aborted marks
// one that belongs to an aborted transaction, tombstone one whose value is
// null.
func (w *Writer) Changelog(x uint8, key []byte, ts, offset int64, aborted, tombstone bool) error {
	if aborted {
		return w.aborted(secChangelogAborted, x, key, ts)
	}
	return w.committed(secChangelog, x, key, ts, offset, tombstone)
}

// Output records a record of the output topic.
func (w *Writer) Output(key []byte, ts, offset int64, aborted, tombstone bool) error {
	if aborted {
		return w.aborted(secOutputAborted, 0, key, ts)
	}
	return w.committed(secOutput, 0, key, ts, offset, tombstone)
}

func (w *Writer) committed(sec section, x uint8, key []byte, ts, offset int64, tombstone bool) error {
	k, err := keyHead(key, sec, x, 16)
	if err != nil {
		return err
	}
	k = binary.BigEndian.AppendUint64(k, inv(ts))
	k = binary.BigEndian.AppendUint64(k, inv(offset))
	var flags byte
	if tombstone {
		flags |= flagTombstone
	}
	return w.set(k, []byte{flags})
}

func (w *Writer) aborted(sec section, x uint8, key []byte, ts int64) error {
	k, err := keyHead(key, sec, x, 8)
	if err != nil {
		return err
	}
	k = binary.BigEndian.AppendUint64(k, inv(ts))
	return w.set(k, nil)
}
