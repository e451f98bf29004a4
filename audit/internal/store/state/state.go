// Package state keeps what a scheduled reconciliation knows between its
// steps, in an embedded Badger database under the store directory: one
// value per key (what earlier steps learnt about a selected key), a set of
// marked keys (to judge again at the next step), and the checkpoint (where
// the last step stopped reading). What the values mean is the engine's
// business; this package stores them and makes one step's changes visible
// all at once or not at all.
//
// A step's changes can be far larger than one Badger transaction allows,
// so they go through a redo log (docs/design.md, "Incremental steps"):
//
//  1. Stage: Txn.Put and Txn.Mark append the step's changes to a log file
//     in the store directory (not yet state: nothing reads it).
//  2. Commit: the log is completed with a checksum and synced to disk;
//     then ONE small Badger transaction writes the new checkpoint together
//     with a record naming the log (file, size, checksum), and the
//     database is synced. This transaction is the commit point.
//  3. Apply: the log is replayed into the database in batches, the
//     database synced, and then the record naming the log is deleted
//     (with the file).
//
// A process killed before step 2 ends leaves the old checkpoint and the
// old state (the partial log is garbage, removed by the next Open). Killed
// after it, the new checkpoint is in force and its log is complete on
// disk: Open replays it before anything is read. Replaying is idempotent
// (every entry of the log sets or deletes a key to its final value), so a
// process killed while applying, or while replaying at Open, just replays
// again. State is therefore always either the old checkpoint with the old
// values or the new checkpoint with the new values.
//
// The baseline (a step on a state without a checkpoint) is staged sorted
// and loaded before its checkpoint is written instead (bulk.go): values
// without a checkpoint are not state, and Open drops them.
package state

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Key prefixes in the database. A key longer than maxDirectKey (Badger
// refuses keys over 65,000 bytes, and Kafka record keys can be larger) is
// stored under the SHA-256 of the key with the long prefix, the key itself
// at the start of the value (of the mark too).
const (
	prefixValue     = 'k'
	prefixLongValue = 'K'
	prefixMark      = 'r'
	prefixLongMark  = 'R'
	prefixMeta      = 'm'

	maxDirectKey = 1024
)

var (
	metaCheckpoint = []byte("m\x00checkpoint")
	metaRedo       = []byte("m\x00redo")
)

// Hook, when set in Options, is called at the named points of a commit
// and of recovery: "staged" (the log is on disk, nothing committed),
// "committed" (the checkpoint is in force, nothing applied), "applying"
// (part of the log applied) and "applied" (all applied, the log still
// named). The test bed uses it to kill the process at each point.
type Hook func(point string)

// Options tune a store; the zero value is sensible.
type Options struct {
	// Hook is called at the points of a commit (tests only).
	Hook Hook
	// ApplyBatch is the number of log entries applied per batch (default
	// 50000).
	ApplyBatch int
	// SortBytes is the size of the chunks in which a baseline's changes
	// are sorted in memory (default 32 MiB; see bulk.go).
	SortBytes int
	// CompressAbove is the size of the state's tables (the bytes a
	// baseline stages) above which they are written compressed (default
	// 256 MiB; see openDB).
	CompressAbove int64
}

// Store is an open state database. Close must be called exactly once.
type Store struct {
	dir string
	db  *badger.DB
	o   Options
	// compressed says the database writes its tables compressed.
	compressed bool
	// open is the transaction staging a step, if any.
	open *Txn
}

// ErrInUse says the store directory is used by another process.
var ErrInUse = errors.New("in use by another lossaudit run")

// Open opens (creating if needed) the state in dir. A step that was
// committed but not completely applied when its process died is applied
// now; logs of steps that never committed are removed.
func Open(dir string, o Options) (*Store, error) {
	if o.ApplyBatch <= 0 {
		o.ApplyBatch = 50000
	}
	if o.SortBytes <= 0 {
		o.SortBytes = 32 << 20
	}
	if o.CompressAbove <= 0 {
		o.CompressAbove = 256 << 20
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state: creating %s: %w", dir, err)
	}
	if err := removeEmptyLogs(filepath.Join(dir, "db")); err != nil {
		return nil, err
	}
	compress := max(stagedSize(dir), tablesSize(filepath.Join(dir, "db"))) > o.CompressAbove
	db, err := openDB(dir, compress)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: dir, db: db, o: o, compressed: compress}
	if err := s.recover(); err != nil {
		db.Close()
		return nil, err
	}
	if cp, err := s.Checkpoint(); err != nil || cp == nil {
		if err == nil {
			err = s.dropUncommitted()
		}
		if err != nil {
			db.Close()
			return nil, err
		}
	}
	return s, nil
}

// openDB opens the Badger database of the state in dir, writing its tables
// compressed (Snappy) when compress is set.
//
// Badger reads its tables through mmap, and a step reads the state of the
// keys it touches: those of a step after 1% more records are spread over
// the whole key space, so nearly every page of the tables is mapped into
// the step's resident memory (at 10M input records, each a key of its
// own: 3.3M keys, 410 MiB of tables, all of it resident). Compressed, the
// tables take half the pages, but every read decompresses a 4 KiB block
// (a quarter more of the step's CPU): a small state is kept uncompressed,
// a large one compressed. Which tables are compressed is recorded per
// table in Badger's manifest, so a database holding both reads both.
func openDB(dir string, compress bool) (*badger.DB, error) {
	opts := badger.DefaultOptions(filepath.Join(dir, "db")).
		WithLogger(nil).
		WithMemTableSize(16 << 20).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(8).
		WithValueThreshold(1 << 10).
		WithValueLogFileSize(64 << 20).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithIndexCacheSize(8 << 20).
		WithNumCompactors(2).
		WithSyncWrites(false).
		WithMetricsEnabled(false)
	if compress {
		// Badger needs a block cache to decompress into; the blocks a
		// step reads are not read again, so it is small.
		opts = opts.WithCompression(options.Snappy).WithBlockCacheSize(1 << 20)
	}
	db, err := badger.Open(opts)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("state: %s is %w: %w", dir, ErrInUse, err)
		}
		return nil, fmt.Errorf("state: opening %s: %w", dir, err)
	}
	return db, nil
}

// tablesSize returns the size of the tables in the Badger directory dir.
func tablesSize(dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0 // a new state; Open reports what else is wrong
	}
	var n int64
	for _, e := range ents {
		if filepath.Ext(e.Name()) != ".sst" {
			continue
		}
		if fi, err := e.Info(); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// stagedFile holds, in decimal, the bytes the last baseline staged: the
// state's size uncompressed. Open decides by it (or by the tables' size on
// disk, if larger: steps add keys) because a state written compressed
// takes about half that on disk, which would fall below CompressAbove and
// have the steps' compactions rewrite it uncompressed.
const stagedFile = "baseline-bytes"

// stagedSize returns the size recorded in dir's stagedFile, 0 if none.
func stagedSize(dir string) int64 {
	b, err := os.ReadFile(filepath.Join(dir, stagedFile))
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// recordStaged records n as the bytes the baseline being loaded staged
// (written to a temporary file, then renamed over stagedFile). A process
// killed before the baseline commits leaves it recorded over an empty
// state, which only has the next baseline's tables written compressed or
// not by it until that baseline records its own.
func (s *Store) recordStaged(n int64) error {
	path := filepath.Join(s.dir, stagedFile)
	if err := os.WriteFile(path+".tmp", []byte(strconv.FormatInt(n, 10)+"\n"), 0o644); err != nil {
		return fmt.Errorf("state: recording the baseline's size: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return fmt.Errorf("state: recording the baseline's size: %w", err)
	}
	return nil
}

// reopen closes the database and opens it again, writing its tables
// compressed or not.
func (s *Store) reopen(compress bool) error {
	if err := s.db.Close(); err != nil {
		s.db = nil
		return fmt.Errorf("state: closing %s: %w", s.dir, err)
	}
	db, err := openDB(s.dir, compress)
	s.db, s.compressed = db, compress
	return err
}

// removeEmptyLogs removes the empty write-ahead and value log files of a
// Badger directory. Badger creates such a file, then sizes it; a process
// killed in between leaves an empty file that Badger (v4.9) refuses to
// open ("Create a new file"), although it holds nothing.
func removeEmptyLogs(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("state: listing %s: %w", dir, err)
	}
	for _, e := range ents {
		if ext := filepath.Ext(e.Name()); ext != ".mem" && ext != ".vlog" {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Size() == 0 {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("state: removing the empty %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// Dir returns the directory of the store.
func (s *Store) Dir() string { return s.dir }

// Close closes the database, abandoning a step still staged.
func (s *Store) Close() error {
	if s.open != nil {
		s.open.Abort()
	}
	if s.db == nil {
		return nil // a reopen failed, and said so
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("state: closing %s: %w", s.dir, err)
	}
	return nil
}

// Checkpoint returns the checkpoint of the last committed step, nil when
// no step ever committed (an empty store).
func (s *Store) Checkpoint() ([]byte, error) {
	var out []byte
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(metaCheckpoint)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		out, err = it.ValueCopy(nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("state: reading the checkpoint in %s: %w", s.dir, err)
	}
	return out, nil
}

// Reader reads the state of the last committed step, as one consistent
// view. Release it with Close.
type Reader struct {
	s   *Store
	txn *badger.Txn
	buf []byte
}

// NewReader starts a consistent read of the committed state.
func (s *Store) NewReader() *Reader {
	return &Reader{s: s, txn: s.db.NewTransaction(false)}
}

// Close ends the read.
func (r *Reader) Close() { r.txn.Discard() }

// dbKey returns the database key of key under prefix p (prefixValue or
// prefixMark) in buf, and whether key is long (stored by its hash).
func dbKey(buf []byte, p byte, key []byte) ([]byte, bool) {
	if len(key) <= maxDirectKey {
		buf = append(buf[:0], p)
		return append(buf, key...), false
	}
	sum := sha256.Sum256(key)
	buf = append(buf[:0], p-'a'+'A') // prefixLongValue, prefixLongMark
	return append(buf, sum[:]...), true
}

// longValue is the stored value of a long key: the key, then val.
func longValue(key, val []byte) []byte {
	b := binary.AppendUvarint(make([]byte, 0, binary.MaxVarintLen64+len(key)+len(val)), uint64(len(key)))
	return append(append(b, key...), val...)
}

// splitLong splits a long key's stored value into the key and the value.
func splitLong(b []byte) (key, val []byte, err error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || uint64(len(b)-w) < n {
		return nil, nil, errors.New("damaged value of a long key")
	}
	return b[w : w+int(n)], b[w+int(n):], nil
}

// get returns the stored value of key under p, nil when absent.
func (r *Reader) get(p byte, key []byte) ([]byte, bool, error) {
	var long bool
	r.buf, long = dbKey(r.buf, p, key)
	it, err := r.txn.Get(r.buf)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := it.ValueCopy(nil)
	if err != nil || !long {
		return v, err == nil, err
	}
	k, v, err := splitLong(v)
	if err != nil || !bytes.Equal(k, key) {
		return nil, false, err // another key of the same hash: absent
	}
	return v, true, nil
}

// Get returns the value of key (nil when it has none) and whether key is
// marked.
func (r *Reader) Get(key []byte) (val []byte, marked bool, err error) {
	v, ok, err := r.get(prefixValue, key)
	if err != nil {
		return nil, false, fmt.Errorf("state: reading key %.64q: %w", key, err)
	}
	if ok {
		if len(v) == 0 {
			return nil, false, fmt.Errorf("state: the value of key %.64q is damaged", key)
		}
		return v[1:], v[0] == 1, nil // the mark is recorded with the value
	}
	if _, marked, err = r.get(prefixMark, key); err != nil {
		return nil, false, fmt.Errorf("state: reading the mark of key %.64q: %w", key, err)
	}
	return nil, marked, nil
}

// Marked calls fn with every marked key. The key is valid only during the
// call.
func (r *Reader) Marked(fn func(key []byte) error) error {
	if err := r.iterate(prefixMark, false, func(k, _ []byte) error { return fn(k) }); err != nil {
		return err
	}
	return r.iterate(prefixLongMark, true, func(_, v []byte) error {
		k, _, err := splitLong(v)
		if err != nil {
			return err
		}
		return fn(k)
	})
}

// Values calls fn with every key and its value. Both are valid only during
// the call.
func (r *Reader) Values(fn func(key, val []byte) error) error {
	strip := func(k, v []byte) error {
		if len(v) == 0 {
			return fmt.Errorf("state: the value of key %.64q is damaged", k)
		}
		return fn(k, v[1:])
	}
	if err := r.iterate(prefixValue, true, strip); err != nil {
		return err
	}
	return r.iterate(prefixLongValue, true, func(_, v []byte) error {
		k, v, err := splitLong(v)
		if err != nil {
			return err
		}
		return strip(k, v)
	})
}

func (r *Reader) iterate(p byte, values bool, fn func(k, v []byte) error) error {
	it := r.txn.NewIterator(badger.IteratorOptions{Prefix: []byte{p}, PrefetchValues: values, PrefetchSize: 256})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		var v []byte
		if values {
			var err error
			if v, err = item.ValueCopy(v); err != nil {
				return fmt.Errorf("state: reading %.64q: %w", item.Key(), err)
			}
		}
		if err := fn(item.Key()[1:], v); err != nil {
			return err
		}
	}
	return nil
}

// Begin starts staging a step. Only one step can be staged at a time.
func (s *Store) Begin() (*Txn, error) {
	if s.open != nil {
		return nil, errors.New("state: a step is already being staged")
	}
	if err := s.removeStaleLogs(""); err != nil {
		return nil, err
	}
	cp, err := s.Checkpoint()
	if err != nil {
		return nil, err
	}
	if cp == nil {
		// The baseline: loaded sorted (bulk.go).
		s.open = &Txn{s: s, bulk: newBulk(s.dir, s.o.SortBytes)}
		return s.open, nil
	}
	l, err := createLog(s.dir)
	if err != nil {
		return nil, err
	}
	s.open = &Txn{s: s, log: l}
	return s.open, nil
}

// Txn stages the changes of one step. Its methods are not safe for
// concurrent use.
type Txn struct {
	s   *Store
	log *logWriter
	// bulk stages the changes instead of log when the step is the
	// baseline.
	bulk *bulk
	done bool
	buf  []byte
	kb   []byte
}

// add stages one change.
func (t *Txn) add(op byte, key, val []byte) error {
	if t.bulk == nil {
		return t.log.add(op, key, val)
	}
	var k, v []byte
	var del bool
	k, v, del, t.kb = entry(op, key, val, t.kb)
	return t.bulk.add(k, v, del)
}

// entry returns the database key and value that the change op of key
// sets (del: deletes), the key built in kb.
func entry(op byte, key, val, kb []byte) (k, v []byte, del bool, _ []byte) {
	p := byte(prefixValue)
	if op == opMark || op == opUnmark {
		p = prefixMark
	}
	var long bool
	kb, long = dbKey(kb, p, key)
	switch op {
	case opPut:
		v = val
		if long {
			v = longValue(key, val)
		}
	case opMark:
		if long {
			v = longValue(key, nil)
		}
	case opDelete, opUnmark:
		del = true
	}
	return kb, v, del, kb
}

// Put stages key's new value (a nil value deletes it) and records with it
// whether key is marked, so that reading a key with a value takes one
// lookup; a change of the mark must also be staged with Mark.
func (t *Txn) Put(key, val []byte, marked bool) error {
	if val == nil {
		return t.add(opDelete, key, nil)
	}
	t.buf = append(append(t.buf[:0], 0), val...)
	if marked {
		t.buf[0] = 1
	}
	return t.add(opPut, key, t.buf)
}

// Mark stages marking (on) or unmarking key.
func (t *Txn) Mark(key []byte, on bool) error {
	if on {
		return t.add(opMark, key, nil)
	}
	return t.add(opUnmark, key, nil)
}

// Staged returns the number of changes staged so far.
func (t *Txn) Staged() int64 {
	if t.bulk != nil {
		return t.bulk.count
	}
	return t.log.count
}

// Abort abandons the staged changes.
func (t *Txn) Abort() {
	if t.done {
		return
	}
	t.done = true
	t.s.open = nil
	if t.bulk != nil {
		t.bulk.discard()
		return
	}
	t.log.discard()
}

// Commit makes the staged changes and checkpoint the store's state in one
// atomic step (see the package documentation), then applies them. The
// checkpoint must not be empty.
func (t *Txn) Commit(checkpoint []byte) error {
	if t.done {
		return errors.New("state: the step was already committed or aborted")
	}
	if len(checkpoint) == 0 {
		// Read back it would be no checkpoint: an empty state.
		return errors.New("state: a step cannot commit an empty checkpoint")
	}
	t.done = true
	t.s.open = nil
	s := t.s
	if t.bulk != nil {
		return s.commitBulk(t.bulk, checkpoint)
	}
	ref, err := t.log.finish()
	if err != nil {
		t.log.discard()
		return err
	}
	s.hook("staged")
	err = s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(metaRedo, ref.encode()); err != nil {
			return err
		}
		return txn.Set(metaCheckpoint, checkpoint)
	})
	if err == nil {
		err = s.db.Sync()
	}
	if err != nil {
		// Whether the transaction reached the disk is unknown only if
		// the sync failed; then the next Open decides (it replays the
		// log if the record naming it is there), so the log must stay.
		return fmt.Errorf("state: committing the step in %s: %w", s.dir, err)
	}
	s.hook("committed")
	return s.apply(ref)
}

func (s *Store) hook(point string) {
	if s.o.Hook != nil {
		s.o.Hook(point)
	}
}

// recover applies a committed step's log that was not completely applied,
// and removes logs of steps that never committed.
func (s *Store) recover() error {
	var ref *logRef
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(metaRedo)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error {
			r, err := decodeRef(v)
			ref = r
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("state: reading %s: %w", s.dir, err)
	}
	if ref != nil {
		if err := s.apply(ref); err != nil {
			return err
		}
	}
	return s.removeStaleLogs("")
}

// apply replays the log named by ref into the database, then forgets it.
func (s *Store) apply(ref *logRef) error {
	path := filepath.Join(s.dir, ref.Name)
	n := 0
	// Batches of ApplyBatch entries, at least two when there are two
	// entries: a process killed while applying has applied a part.
	batch := int(min(int64(s.o.ApplyBatch), max(1, ref.Entries/2)))
	wb := s.db.NewWriteBatch()
	flush := func() error {
		if err := wb.Flush(); err != nil {
			return err
		}
		wb = s.db.NewWriteBatch()
		return nil
	}
	first := true
	var kb []byte
	err := readLog(path, ref, func(op byte, key, val []byte) error {
		var err error
		var k, v []byte
		var del bool
		k, v, del, kb = entry(op, key, val, kb)
		k = bytes.Clone(k)
		if del {
			err = wb.Delete(k)
		} else {
			if v != nil {
				v = bytes.Clone(v)
			}
			err = wb.Set(k, v)
		}
		if err != nil {
			return err
		}
		if n++; n%batch == 0 {
			if err := flush(); err != nil {
				return err
			}
			if first {
				first = false
				s.hook("applying")
			}
		}
		return nil
	})
	if err == nil {
		err = wb.Flush()
	} else {
		wb.Cancel()
	}
	if err == nil {
		err = s.db.Sync()
	}
	if err != nil {
		return fmt.Errorf("state: applying the committed step (%s) in %s: %w", ref.Name, s.dir, err)
	}
	s.hook("applied")
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(metaRedo) }); err != nil {
		return fmt.Errorf("state: completing the step in %s: %w", s.dir, err)
	}
	if err := s.db.Sync(); err != nil {
		return fmt.Errorf("state: completing the step in %s: %w", s.dir, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("state: removing %s: %w", path, err)
	}
	return nil
}

// removeStaleLogs removes every redo log in the directory but keep.
func (s *Store) removeStaleLogs(keep string) error {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("state: listing %s: %w", s.dir, err)
	}
	for _, e := range ents {
		if n := e.Name(); (isLogName(n) || isRunName(n)) && n != keep {
			if err := os.Remove(filepath.Join(s.dir, n)); err != nil {
				return fmt.Errorf("state: removing the uncommitted step %s: %w", n, err)
			}
		}
	}
	return nil
}
