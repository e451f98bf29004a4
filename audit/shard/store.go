package shard

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// newAttempt returns a fresh attempt id: every process writes only under
// its own, so a killed attempt's files are never read with a retried one's.
func newAttempt() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("shard: drawing an attempt id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// syncDir fsyncs a directory, so that a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("shard: opening %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("shard: syncing %s: %w", dir, err)
	}
	return nil
}

// writeAtomic writes v (gob) to path: a temporary file named by attempt,
// fsynced, renamed over path, the directory fsynced. Readers see the whole
// file or none.
func writeAtomic(path, attempt string, v any) error {
	return write(path, attempt, v, false)
}

// createAtomic is writeAtomic for a file that must not be replaced: the
// complete file is linked to path, which fails with os.ErrExist when
// another process created it first.
func createAtomic(path, attempt string, v any) error {
	return write(path, attempt, v, true)
}

func write(path, attempt string, v any, create bool) error {
	tmp := path + ".tmp-" + attempt
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("shard: creating %s: %w", tmp, err)
	}
	bw := bufio.NewWriter(f)
	err = gob.NewEncoder(bw).Encode(v)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && create {
		err = os.Link(tmp, path)
		os.Remove(tmp)
	} else if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("shard: writing %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// readGob reads the gob value of path into v.
func readGob(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := gob.NewDecoder(bufio.NewReader(f)).Decode(v); err != nil {
		return fmt.Errorf("shard: reading %s: %w", path, err)
	}
	return nil
}

// exists reports whether path exists; other errors are returned.
func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("shard: %w", err)
}

// buckets writes entries to one file per reduce shard:
// len(key) u32 | key | tag u8 | len(fields) u16 | fields | len(value) u16 | value.
type buckets struct {
	dir   string
	files []*os.File
	w     []*bufio.Writer
	// Entries and Bytes count what went to each reduce shard.
	Entries, Bytes []int64
}

func bucketPath(dir string, r int) string { return filepath.Join(dir, fmt.Sprintf("to-%d", r)) }

func newBuckets(dir string, n int) (*buckets, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shard: creating %s: %w", dir, err)
	}
	b := &buckets{dir: dir, Entries: make([]int64, n), Bytes: make([]int64, n)}
	for r := 0; r < n; r++ {
		f, err := os.OpenFile(bucketPath(dir, r), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			b.abort()
			return nil, fmt.Errorf("shard: creating %s: %w", bucketPath(dir, r), err)
		}
		b.files = append(b.files, f)
		b.w = append(b.w, bufio.NewWriterSize(f, 256<<10))
	}
	return b, nil
}

func (b *buckets) add(r int, key []byte, e index.Entry) error {
	if len(e.Fields) > math.MaxUint16 || len(e.Value) > math.MaxUint16 || len(key) > math.MaxUint32 {
		return fmt.Errorf("shard: an entry of key %x is too large for a bucket", key[:min(len(key), 32)])
	}
	w := b.w[r]
	var h [4]byte
	binary.BigEndian.PutUint32(h[:], uint32(len(key)))
	w.Write(h[:])
	w.Write(key)
	w.WriteByte(e.Tag)
	binary.BigEndian.PutUint16(h[:2], uint16(len(e.Fields)))
	w.Write(h[:2])
	w.Write(e.Fields)
	binary.BigEndian.PutUint16(h[:2], uint16(len(e.Value)))
	w.Write(h[:2])
	if _, err := w.Write(e.Value); err != nil {
		return fmt.Errorf("shard: writing %s: %w", bucketPath(b.dir, r), err)
	}
	b.Entries[r]++
	b.Bytes[r] += int64(4 + len(key) + 1 + 2 + len(e.Fields) + 2 + len(e.Value))
	return nil
}

// close flushes and fsyncs every bucket.
func (b *buckets) close() error {
	var first error
	for r, f := range b.files {
		err := b.w[r].Flush()
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil && first == nil {
			first = fmt.Errorf("shard: writing %s: %w", bucketPath(b.dir, r), err)
		}
	}
	if first != nil {
		return first
	}
	return syncDir(b.dir)
}

func (b *buckets) abort() {
	for _, f := range b.files {
		f.Close()
	}
}

// readBucket hands every entry of the bucket file path to add.
func readBucket(path string, add func(key []byte, e index.Entry) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("shard: opening %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	var key, fields, val []byte
	var h [4]byte
	for n := 0; ; n++ {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("shard: %s, entry %d: %w", path, n, err)
		}
		k := binary.BigEndian.Uint32(h[:])
		if k > 64<<20 {
			return fmt.Errorf("shard: %s, entry %d: a key of %d bytes (a damaged file?)", path, n, k)
		}
		key = grow(key, int(k))
		if _, err := readFull(r, key); err != nil {
			return fmt.Errorf("shard: %s, entry %d: %w", path, n, err)
		}
		t, err := r.ReadByte()
		if err != nil {
			return fmt.Errorf("shard: %s, entry %d: %w", path, n, noEOF(err))
		}
		if fields, err = readShort(r, fields); err != nil {
			return fmt.Errorf("shard: %s, entry %d: %w", path, n, err)
		}
		if val, err = readShort(r, val); err != nil {
			return fmt.Errorf("shard: %s, entry %d: %w", path, n, err)
		}
		if err := add(key, index.Entry{Tag: t, Fields: fields, Value: val}); err != nil {
			return err
		}
	}
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

func readFull(r io.Reader, b []byte) (int, error) {
	n, err := io.ReadFull(r, b)
	return n, noEOF(err)
}

func readShort(r *bufio.Reader, b []byte) ([]byte, error) {
	var h [2]byte
	if _, err := readFull(r, h[:]); err != nil {
		return b, err
	}
	b = grow(b, int(binary.BigEndian.Uint16(h[:])))
	_, err := readFull(r, b)
	return b, err
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// cleanup removes, after the merge has read every part, what no marker
// names: the attempt directories of killed or dropped attempts, the
// temporary files of interrupted writes (a process killed between writing
// and renaming), and the runs of a duplicate index 0 that lost the race
// for the manifest. The manifest, the markers, the snapshot's buckets and
// the attempts the markers name (maps[i], reduces[i]) stay, as does any
// file this package did not write. It returns how many entries it removed.
func cleanup(so Options, l layout, maps, reduces []*marker) (int, error) {
	removed := 0
	remove := func(p string) error {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("shard: removing %s: %w", p, err)
		}
		removed++
		return nil
	}
	top, err := os.ReadDir(so.Dir)
	if err != nil {
		return 0, fmt.Errorf("shard: listing %s: %w", so.Dir, err)
	}
	for _, e := range top {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "manifest.tmp-"):
		case e.IsDir() && strings.HasPrefix(name, "run-") && name != filepath.Base(l.runDir()):
		default:
			continue
		}
		if err := remove(filepath.Join(so.Dir, name)); err != nil {
			return removed, err
		}
	}
	entries, err := os.ReadDir(l.runDir())
	if err != nil {
		return removed, fmt.Errorf("shard: listing %s: %w", l.runDir(), err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.Contains(name, ".tmp-") {
			if err := remove(filepath.Join(l.runDir(), name)); err != nil {
				return removed, err
			}
			continue
		}
		if !e.IsDir() {
			continue
		}
		var keep string
		for kind, ms := range map[string][]*marker{"map-": maps, "reduce-": reduces} {
			if rest, ok := strings.CutPrefix(name, kind); ok {
				if i, err := strconv.Atoi(rest); err == nil && i >= 0 && i < len(ms) && ms[i] != nil {
					keep = ms[i].Attempt
				}
			}
		}
		if keep == "" {
			continue // the snapshot's buckets, or not this package's
		}
		dir := filepath.Join(l.runDir(), name)
		attempts, err := os.ReadDir(dir)
		if err != nil {
			return removed, fmt.Errorf("shard: listing %s: %w", dir, err)
		}
		for _, a := range attempts {
			if a.Name() == keep {
				continue
			}
			if err := remove(filepath.Join(dir, a.Name())); err != nil {
				return removed, err
			}
		}
	}
	if removed > 0 {
		if err := syncDir(l.runDir()); err != nil {
			return removed, err
		}
	}
	return removed, nil
}
