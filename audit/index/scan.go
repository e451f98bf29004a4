package index

import (
	"bytes"
	"encoding/binary"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
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

// Scan calls fn once per selected key present in the index, in key order,
// with the view of inputs 0..inputs-1. It reads the store sequentially and
// holds only one key's evidence in memory at a time.
func (s *Store) Scan(inputs int, fn func(v *KeyView) error) error {
	view := &KeyView{Inputs: make([]InputView, inputs), Changelog: make([]StageView, inputs)}
	tails := make([]map[tailID]struct{}, inputs)
	for i := range tails {
		tails[i] = map[tailID]struct{}{}
	}
	reset := func(key []byte) {
		view.Key = append(view.Key[:0], key...)
		clear(view.Inputs)
		clear(view.Changelog)
		view.Output = StageView{}
		for _, t := range tails {
			clear(t)
		}
	}
	have := false
	return s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = []byte{prefixRun}
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			k := item.Key()
			key, sec, x, rest, ok := splitKey(k)
			if !ok {
				return fmt.Errorf("index: malformed entry %x", k)
			}
			if int(x) >= inputs {
				return fmt.Errorf("index: entry for input %d but the pipeline has %d inputs (was the store written by another configuration?)", x, inputs)
			}
			if !have || !bytes.Equal(key, view.Key) {
				if have {
					if err := fn(view); err != nil {
						return err
					}
				}
				reset(key)
				have = true
			}
			if err := apply(view, tails, sec, x, rest, item); err != nil {
				return fmt.Errorf("index: entry %x: %w", k, err)
			}
		}
		if have {
			return fn(view)
		}
		return nil
	})
}

func apply(view *KeyView, tails []map[tailID]struct{}, sec section, x uint8, rest []byte, item *badger.Item) error {
	switch sec {
	case secRepartition:
		if len(rest) != 17 {
			return fmt.Errorf("repartition entry of %d bytes", len(rest))
		}
		if rest[0] == 1 {
			tails[x][tailID{int64(binary.BigEndian.Uint64(rest[1:9])), binary.BigEndian.Uint64(rest[9:17])}] = struct{}{}
		}
	case secInput:
		if len(rest) != 20 {
			return fmt.Errorf("input entry of %d bytes", len(rest))
		}
		var fp uint64
		if err := item.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("input value of %d bytes", len(v))
			}
			fp = binary.BigEndian.Uint64(v)
			return nil
		}); err != nil {
			return err
		}
		rec := InputRecord{
			TS:        uninv(binary.BigEndian.Uint64(rest[0:8])),
			Partition: int32(^binary.BigEndian.Uint32(rest[8:12])),
			Offset:    uninv(binary.BigEndian.Uint64(rest[12:20])),
			FP:        fp,
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
		var flags byte
		if err := item.Value(func(v []byte) error {
			if len(v) == 1 {
				flags = v[0]
			}
			return nil
		}); err != nil {
			return err
		}
		st.Has = true
		st.TS = uninv(binary.BigEndian.Uint64(rest[0:8]))
		st.Offset = uninv(binary.BigEndian.Uint64(rest[8:16]))
		st.Tombstone = flags&flagTombstone != 0
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

// RepartitionSeen reports where input x's repartition topic holds a
// processed (below the committed offset) copy of the record (key, ts, fp),
// if it still does.
func (s *Store) RepartitionSeen(x uint8, key []byte, ts int64, fp uint64) (partition int32, offset int64, ok bool, err error) {
	k, err := keyHead(key, secRepartition, x, 17)
	if err != nil {
		return 0, 0, false, err
	}
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(ts))
	k = binary.BigEndian.AppendUint64(k, fp)
	err = s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(k)
		if err == badger.ErrKeyNotFound {
			return nil
		}
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 12 {
				return fmt.Errorf("repartition value of %d bytes", len(v))
			}
			partition = int32(binary.BigEndian.Uint32(v[:4]))
			offset = int64(binary.BigEndian.Uint64(v[4:]))
			ok = true
			return nil
		})
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("index: looking up repartition copy: %w", err)
	}
	return partition, offset, ok, nil
}
