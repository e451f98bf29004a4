package shard

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/gob"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
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

// writeAtomic writes v (gob) as the object name: readers see the whole
// object or none.
func writeAtomic(ctx context.Context, st Store, name string, v any) error {
	w, err := st.Create(ctx, name)
	if err != nil {
		return err
	}
	if err := gob.NewEncoder(w).Encode(v); err != nil {
		w.Abort()
		return fmt.Errorf("shard: writing %s: %w", st.Describe(name), err)
	}
	return w.Commit()
}

// createAtomic is writeAtomic for an object that must not be replaced: it
// fails with an error wrapping os.ErrExist when another process created
// it first.
func createAtomic(ctx context.Context, st Store, name string, v any) error {
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return fmt.Errorf("shard: encoding %s: %w", st.Describe(name), err)
	}
	return st.PutIfAbsent(ctx, name, b.Bytes())
}

// readGob reads the gob value of the object name into v.
func readGob(ctx context.Context, st Store, name string, v any) error {
	r, err := st.Open(ctx, name)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := gob.NewDecoder(bufio.NewReader(r)).Decode(v); err != nil {
		return fmt.Errorf("shard: reading %s: %w", st.Describe(name), err)
	}
	return nil
}

// buckets writes entries to one object per reduce shard:
// len(key) u32 | key | tag u8 | len(fields) u16 | fields | len(value) u16 | value.
type buckets struct {
	st  Store
	dir string
	obj []Writer
	w   []*bufio.Writer
	// Entries and Bytes count what went to each reduce shard.
	Entries, Bytes []int64
}

func bucketPath(dir string, r int) string { return joinName(dir, fmt.Sprintf("to-%d", r)) }

func newBuckets(ctx context.Context, st Store, dir string, n int) (*buckets, error) {
	b := &buckets{st: st, dir: dir, Entries: make([]int64, n), Bytes: make([]int64, n)}
	for r := 0; r < n; r++ {
		w, err := st.Create(ctx, bucketPath(dir, r))
		if err != nil {
			b.abort()
			return nil, err
		}
		b.obj = append(b.obj, w)
		b.w = append(b.w, bufio.NewWriterSize(w, 256<<10))
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
		return fmt.Errorf("shard: writing %s: %w", b.st.Describe(bucketPath(b.dir, r)), err)
	}
	b.Entries[r]++
	b.Bytes[r] += int64(4 + len(key) + 1 + 2 + len(e.Fields) + 2 + len(e.Value))
	return nil
}

// close completes every bucket (a file fsynced and renamed into place, an
// S3 upload completed).
func (b *buckets) close() error {
	for r, w := range b.obj {
		err := b.w[r].Flush()
		if err != nil {
			b.abort()
			return fmt.Errorf("shard: writing %s: %w", b.st.Describe(bucketPath(b.dir, r)), err)
		}
		if err := w.Commit(); err != nil {
			for _, w := range b.obj[r+1:] {
				w.Abort()
			}
			return err
		}
	}
	return nil
}

func (b *buckets) abort() {
	for _, w := range b.obj {
		w.Abort()
	}
}

// readBucket hands every entry of the bucket object name to add.
func readBucket(ctx context.Context, st Store, name string, add func(key []byte, e index.Entry) error) error {
	f, err := st.Open(ctx, name)
	if err != nil {
		return err
	}
	defer f.Close()
	path := st.Describe(name)
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
// and renaming), an S3 store's probe objects, and the runs of a duplicate index 0 that lost the race
// for the manifest. The manifest, the markers, the snapshot's buckets and
// the attempts the markers name (mapMks[i], reduceMks[i]) stay, as does any
// object this package did not write. It returns how many entries (an
// attempt, a run, a temporary file) it removed.
func cleanup(ctx context.Context, st Store, l layout, mapMks, reduceMks []*marker) (int, error) {
	names, err := st.List(ctx)
	if err != nil {
		return 0, err
	}
	run := "run-" + l.run
	_, s3 := st.(*s3Store)
	drop := map[string]bool{}
	for _, name := range names {
		// Only the step's own objects (l.prefix: a reconcile step's
		// step-<k>/; an audit's is "").
		name, ok := strings.CutPrefix(name, l.prefix)
		if !ok {
			continue
		}
		dir := strings.HasSuffix(name, "/")
		c := strings.Split(strings.TrimSuffix(name, "/"), "/")
		switch {
		case strings.HasPrefix(c[0], "manifest.tmp-"), strings.HasPrefix(c[0], "merged.tmp-"), s3 && strings.HasPrefix(c[0], "probe-") && len(c) == 1:
			// (a probe-<id> object: the S3 store's check of conditional
			// writes, left by a process killed during it)
			drop[c[0]] = true
		case strings.HasPrefix(c[0], "run-") && c[0] != run && (dir || len(c) > 1):
			drop[c[0]] = true // a duplicate index 0's run
		case c[0] != run || len(c) < 2:
		case strings.Contains(c[1], ".tmp-"):
			drop[joinName(c[0], c[1])] = true
		case len(c) >= 3:
			var keep string
			for kind, ms := range map[string][]*marker{"map-": mapMks, "reduce-": reduceMks} {
				if rest, ok := strings.CutPrefix(c[1], kind); ok {
					if i, err := strconv.Atoi(rest); err == nil && i >= 0 && i < len(ms) && ms[i] != nil {
						keep = ms[i].Attempt
					}
				}
			}
			if keep != "" && c[2] != keep {
				drop[joinName(c[0], c[1], c[2])] = true
			}
		}
	}
	units := slices.Sorted(maps.Keys(drop))
	for i, u := range units {
		if err := st.RemoveAll(ctx, l.prefix+u); err != nil {
			return i, err
		}
	}
	return len(units), nil
}
