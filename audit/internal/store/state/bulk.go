package state

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/ristretto/v2/z"
)

// The baseline's load. A step on an empty state (the baseline) writes a
// value for every key, millions of them, in the index's order, which is
// random in key order: written through transactions, Badger's LSM tree
// then rewrites them level after level (at 10M keys, 30 s of compaction
// after the baseline's commit, and a backlog the next step inherits). So
// a step that begins on a state without a checkpoint stages its changes
// sorted instead of in a redo log: in memory, in chunks of
// Options.SortBytes, each chunk sorted and spilled to a run file when
// full. Its commit merges the runs in key order and writes them with
// Badger's StreamWriter straight into the last level of the tree (no
// compaction), synced, and only then writes the checkpoint in one small
// transaction, synced: the commit point, as for any step. The values
// loaded before the commit point are not state: a state without a
// checkpoint is empty, and Open drops the values and marks such a state
// holds (those of a baseline killed while loading). So a baseline killed
// at any point leaves the empty state or the complete baseline.

const (
	runPrefix = "bulk-"
	runSuffix = ".run"
	// loadVersion is the Badger version of every loaded entry; the
	// checkpoint's transaction comes after it.
	loadVersion = 1
)

func isRunName(n string) bool {
	return strings.HasPrefix(n, runPrefix) && strings.HasSuffix(n, runSuffix)
}

// bulkEnt is one staged change: its database key and value in the
// chunk's arena.
type bulkEnt struct {
	off, klen, vlen uint32
	del             bool
}

// bulk stages a baseline's changes as sorted runs.
type bulk struct {
	dir   string
	limit int
	arena []byte
	ents  []bulkEnt
	runs  []string // spilled runs, in staging order
	count int64
	// bytes counts the keys' and values' bytes staged.
	bytes int64
}

func newBulk(dir string, limit int) *bulk {
	return &bulk{dir: dir, limit: limit}
}

// add stages database key k set to v, or deleted.
func (b *bulk) add(k, v []byte, del bool) error {
	if len(b.ents) > 0 && len(b.arena)+len(k)+len(v) > b.limit {
		if err := b.spill(); err != nil {
			return err
		}
	}
	if uint64(len(b.arena))+uint64(len(k))+uint64(len(v)) > 1<<32-1 {
		return errors.New("state: a staged entry does not fit a sort chunk")
	}
	b.ents = append(b.ents, bulkEnt{off: uint32(len(b.arena)), klen: uint32(len(k)), vlen: uint32(len(v)), del: del})
	b.arena = append(append(b.arena, k...), v...)
	b.count++
	b.bytes += int64(len(k) + len(v))
	return nil
}

func (b *bulk) key(e bulkEnt) []byte { return b.arena[e.off : e.off+e.klen] }
func (b *bulk) val(e bulkEnt) []byte { return b.arena[e.off+e.klen : e.off+e.klen+e.vlen] }

// sort orders the chunk by key, keeping the staging order of equal keys.
func (b *bulk) sort() {
	slices.SortFunc(b.ents, func(x, y bulkEnt) int {
		if c := bytes.Compare(b.key(x), b.key(y)); c != 0 {
			return c
		}
		return cmp.Compare(x.off, y.off) // the arena grows in staging order
	})
}

// spill writes the chunk, sorted, to a run file.
func (b *bulk) spill() error {
	b.sort()
	f, err := os.CreateTemp(b.dir, runPrefix+"*"+runSuffix)
	if err != nil {
		return fmt.Errorf("state: creating a sort run in %s: %w", b.dir, err)
	}
	b.runs = append(b.runs, f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	var hdr []byte
	for _, e := range b.ents {
		hdr = binary.AppendUvarint(hdr[:0], uint64(e.klen))
		hdr = append(hdr, b.key(e)...)
		d := byte(0)
		if e.del {
			d = 1
		}
		hdr = binary.AppendUvarint(append(hdr, d), uint64(e.vlen))
		if _, err := w.Write(hdr); err != nil {
			break
		}
		if _, err := w.Write(b.val(e)); err != nil {
			break
		}
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("state: writing the sort run %s: %w", f.Name(), err)
	}
	b.arena, b.ents = b.arena[:0], b.ents[:0]
	return nil
}

// discard removes the spilled runs.
func (b *bulk) discard() {
	for _, r := range b.runs {
		os.Remove(r)
	}
	b.runs = nil
	b.arena, b.ents = nil, nil
}

// source is a sorted sequence of staged changes: a run file or the chunk
// in memory.
type source struct {
	ok       bool
	key, val []byte
	del      bool
	next     func() error
}

func (b *bulk) memSource() *source {
	s := &source{}
	i := 0
	s.next = func() error {
		s.ok = i < len(b.ents)
		if s.ok {
			e := b.ents[i]
			s.key, s.val, s.del = b.key(e), b.val(e), e.del
			i++
		}
		return nil
	}
	return s
}

func runSource(path string) (*source, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("state: reading the sort run: %w", err)
	}
	r := bufio.NewReaderSize(f, 256<<10)
	s := &source{}
	s.next = func() error {
		var err error
		if s.key, err = readBytes(r, s.key); err != nil {
			if errors.Is(err, io.EOF) {
				s.ok = false
				return nil
			}
			return fmt.Errorf("state: reading the sort run %s: %w", path, err)
		}
		d, err := r.ReadByte()
		if err == nil {
			s.val, err = readBytes(r, s.val)
		}
		if err != nil {
			return fmt.Errorf("state: reading the sort run %s: %w", path, err)
		}
		s.ok, s.del = true, d == 1
		return nil
	}
	return s, func() { f.Close() }, nil
}

// merge calls fn with every key staged, in key order, and its last
// staged value; a key whose last change deletes it is left out. k and v
// are valid only during the call.
func (b *bulk) merge(fn func(k, v []byte) error) error {
	b.sort()
	var srcs []*source
	for _, r := range b.runs {
		s, closeRun, err := runSource(r)
		if err != nil {
			return err
		}
		defer closeRun()
		srcs = append(srcs, s)
	}
	srcs = append(srcs, b.memSource()) // the last staged
	for _, s := range srcs {
		if err := s.next(); err != nil {
			return err
		}
	}
	var k, v []byte
	for {
		var least []byte
		found := false
		for _, s := range srcs {
			if s.ok && (!found || bytes.Compare(s.key, least) < 0) {
				least, found = s.key, true
			}
		}
		if !found {
			return nil
		}
		k = append(k[:0], least...)
		del := false
		// Sources in staging order: the last change of k wins.
		for _, s := range srcs {
			for s.ok && bytes.Equal(s.key, k) {
				v, del = append(v[:0], s.val...), s.del
				if err := s.next(); err != nil {
					return err
				}
			}
		}
		if !del {
			if err := fn(k, v); err != nil {
				return err
			}
		}
	}
}

// commitBulk loads a baseline's sorted changes, then commits the
// checkpoint (see the top of this file).
func (s *Store) commitBulk(b *bulk, checkpoint []byte) error {
	defer b.discard()
	s.hook("staged")
	if err := s.recordStaged(b.bytes); err != nil {
		return err
	}
	if compress := b.bytes > s.o.CompressAbove; compress != s.compressed {
		// The state's tables are written now: compressed if they are
		// large (openDB).
		if err := s.reopen(compress); err != nil {
			return err
		}
	}
	if err := s.load(b); err != nil {
		return fmt.Errorf("state: loading the baseline in %s: %w", s.dir, err)
	}
	err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(metaCheckpoint, checkpoint) })
	if err == nil {
		err = s.db.Sync()
	}
	if err != nil {
		return fmt.Errorf("state: committing the step in %s: %w", s.dir, err)
	}
	s.hook("committed")
	s.hook("applied")
	return nil
}

// load writes the merged changes into the database, durably: with a
// StreamWriter into the last level; through write batches if the
// database cannot take a stream (it holds unflushed writes).
func (s *Store) load(b *bulk) error {
	batch := int(min(int64(s.o.ApplyBatch), max(1, b.count/2)))
	n := 0
	applying := func() {
		if n++; n == batch {
			s.hook("applying")
		}
	}
	sw := s.db.NewStreamWriter()
	if err := sw.PrepareIncremental(); err != nil {
		sw.Cancel()
		wb := s.db.NewWriteBatch()
		err := b.merge(func(k, v []byte) error {
			applying()
			return wb.Set(bytes.Clone(k), bytes.Clone(v))
		})
		if err != nil {
			wb.Cancel()
			return err
		}
		if err := wb.Flush(); err != nil {
			return err
		}
		return s.db.Sync()
	}
	buf := z.NewBuffer(4<<20, "state.load")
	defer buf.Release()
	kv := &pb.KV{Version: loadVersion}
	err := b.merge(func(k, v []byte) error {
		kv.Key, kv.Value = k, v
		badger.KVToBuffer(kv, buf)
		if buf.LenNoPadding() >= 4<<20 || n+1 == batch {
			if err := sw.Write(buf); err != nil {
				return err
			}
			buf.Reset()
		}
		applying()
		return nil
	})
	if err == nil {
		err = sw.Write(buf)
	}
	if err != nil {
		sw.Cancel()
		return err
	}
	return sw.Flush() // syncs the tables and the directory
}

// dropUncommitted removes the values and marks of a state without a
// checkpoint: those of a baseline that never committed.
func (s *Store) dropUncommitted() error {
	err := s.db.DropPrefix([]byte{prefixValue}, []byte{prefixLongValue}, []byte{prefixMark}, []byte{prefixLongMark})
	if err != nil {
		return fmt.Errorf("state: removing the uncommitted baseline in %s: %w", s.dir, err)
	}
	return nil
}
