package shard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/shard/shardtest"
)

// backend is one kind of shared storage the tests run against.
type backend struct {
	name string
	// open returns a fresh, empty store and its Dir.
	open func(t *testing.T) (Store, string)
}

// backends are the directory and an S3 bucket on an in-process server
// (loopback).
func backends() []backend {
	return []backend{
		{"dir", func(t *testing.T) (Store, string) {
			dir := t.TempDir()
			st, err := OpenStore(context.Background(), dir, S3Config{})
			if err != nil {
				t.Fatal(err)
			}
			return st, dir
		}},
		{"s3", func(t *testing.T) (Store, string) {
			srv := shardtest.Start(t, "audits")
			srv.Env(t)
			dir := "s3://audits/runs/" + strings.ReplaceAll(t.Name(), "/", "_")
			st, err := OpenStore(context.Background(), dir, S3Config{PathStyle: true})
			if err != nil {
				t.Fatal(err)
			}
			return st, dir
		}},
	}
}

// TestBucketsRoundTrip: entries written to the buckets are read back from
// the bucket of their shard, in order, with empty and long parts; a
// truncated bucket is an error naming the object, never fewer entries.
func TestBucketsRoundTrip(t *testing.T) {
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			ctx := context.Background()
			st, _ := bk.open(t)
			b, err := newBuckets(ctx, st, "run-r/map-0/a", 3)
			if err != nil {
				t.Fatal(err)
			}
			type ent struct {
				r   int
				key string
				e   index.Entry
			}
			in := []ent{
				{0, "k1", index.Entry{Tag: 0x10, Fields: []byte{0, 1, 2}, Value: []byte("v")}},
				{2, "", index.Entry{Tag: 0x08}},
				{0, strings.Repeat("x", 70000), index.Entry{Tag: 0x10, Fields: bytes.Repeat([]byte{7}, 300), Value: nil}},
				{1, "k3", index.Entry{Tag: 0x08, Fields: []byte{1}, Value: []byte{1, 2, 3, 4}}},
			}
			for _, e := range in {
				if err := b.add(e.r, []byte(e.key), e.e); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.close(); err != nil {
				t.Fatal(err)
			}
			for r := 0; r < 3; r++ {
				var want, got []string
				for _, e := range in {
					if e.r == r {
						want = append(want, fmt.Sprintf("%q %x %x %x", e.key, e.e.Tag, e.e.Fields, e.e.Value))
					}
				}
				err := readBucket(ctx, st, bucketPath(b.dir, r), func(key []byte, e index.Entry) error {
					got = append(got, fmt.Sprintf("%q %x %x %x", key, e.Tag, e.Fields, e.Value))
					return nil
				})
				if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("bucket %d: %v\n got %v\nwant %v", r, err, got, want)
				}
				if b.Entries[r] != int64(len(want)) {
					t.Errorf("bucket %d: counted %d entries, want %d", r, b.Entries[r], len(want))
				}
			}
			p := bucketPath(b.dir, 0)
			rd, err := st.Open(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(rd)
			rd.Close()
			if err != nil {
				t.Fatal(err)
			}
			w, err := st.Create(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(data[:len(data)-1])
			if err := w.Commit(); err != nil {
				t.Fatal(err)
			}
			err = readBucket(ctx, st, p, func([]byte, index.Entry) error { return nil })
			if err == nil || !strings.Contains(err.Error(), st.Describe(p)) {
				t.Errorf("a truncated bucket: %v, want an error naming %s", err, st.Describe(p))
			}
			if _, err := st.Open(ctx, "run-r/none"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a missing object: %v, want os.ErrNotExist", err)
			}
		})
	}
}

// TestCreateAtomicKeepsTheFirst: the manifest is created once; a second
// writer (a duplicate index 0) is told it exists and the first stays; of
// many writers racing, exactly one wins (the S3 backend's conditional PUT,
// the directory's hard link).
func TestCreateAtomicKeepsTheFirst(t *testing.T) {
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			ctx := context.Background()
			st, _ := bk.open(t)
			p := "manifest"
			if err := createAtomic(ctx, st, p, &manifest{RunID: "first"}); err != nil {
				t.Fatal(err)
			}
			if err := createAtomic(ctx, st, p, &manifest{RunID: "second"}); !errors.Is(err, os.ErrExist) {
				t.Errorf("second create: %v, want it to exist", err)
			}
			var m manifest
			if err := readGob(ctx, st, p, &m); err != nil || m.RunID != "first" {
				t.Errorf("manifest %+v, %v: want the first", m, err)
			}
			const racers = 8
			errs := make(chan error, racers)
			for i := 0; i < racers; i++ {
				go func() {
					errs <- createAtomic(ctx, st, "run-x/map-0.done", &marker{Attempt: fmt.Sprint(i)})
				}()
			}
			won := 0
			for i := 0; i < racers; i++ {
				switch err := <-errs; {
				case err == nil:
					won++
				case !errors.Is(err, os.ErrExist):
					t.Errorf("racer: %v", err)
				}
			}
			if won != 1 {
				t.Errorf("%d of %d racers created the marker, want 1", won, racers)
			}
			names, err := st.List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if strings.Contains(n, ".tmp-") {
					t.Errorf("temporary object left: %s", n)
				}
			}
		})
	}
}

// TestWaitGivesUpAtItsDeadline: a wait shows its progress when it changes
// and ends with a WaitError naming what it waited for.
func TestWaitGivesUpAtItsDeadline(t *testing.T) {
	var log bytes.Buffer
	so := Options{Shards: 3, Index: 1, Wait: 50 * time.Millisecond, Poll: 5 * time.Millisecond, Log: &log, Now: time.Now}
	n := 0
	err := wait(context.Background(), so, "the map outputs", func() (int, int, error) {
		n++
		return min(n, 2), 3, nil
	})
	var we *WaitError
	if !errors.As(err, &we) || !strings.Contains(err.Error(), "waited 50ms for the map outputs: 2 of 3 complete") {
		t.Errorf("wait: %v, want a WaitError", err)
	}
	if got := log.String(); strings.Count(got, "waiting for the map outputs") != 2 {
		t.Errorf("progress lines:\n%s\nwant one per change (1 of 3, 2 of 3)", got)
	}
}

// TestCleanup: after the merge, what no marker names goes (the attempts
// of killed and dropped shards, interrupted writes' temporary files, a
// losing index 0's run); the manifest, the markers, the snapshot's buckets,
// the named attempts and files this package did not write stay.
func TestCleanup(t *testing.T) {
	files := []string{
		"manifest", "manifest.tmp-x1", "probe-p1", "report.csv",
		"run-r1/snapshot/to-0", "run-r1/snapshot/to-1",
		"run-r1/map-0.done", "run-r1/map-0.done.tmp-b", "run-r1/map-0/a/to-0", "run-r1/map-0/a/counts", "run-r1/map-0/b/to-0",
		"run-r1/map-1.done", "run-r1/map-1/c/to-1", "run-r1/map-1/c/counts",
		"run-r1/reduce-0.done", "run-r1/reduce-0/d/result", "run-r1/reduce-0/e/result.tmp-e",
		"run-r1/reduce-1.done", "run-r1/reduce-1/f/result", "run-r1/reduce-1/g/result",
		"run-r1/notes.txt", "run-r1/map-x/y/z",
		"run-r2/snapshot/to-0",
	}
	for _, bk := range backends() {
		for _, tc := range []struct {
			name    string
			maps    []string
			reduces []string
			removed []string
		}{
			{name: "killed attempts", maps: []string{"a", "c"}, reduces: []string{"d", "f"},
				removed: []string{"manifest.tmp-x1", "run-r1/map-0.done.tmp-b", "run-r1/map-0/b", "run-r1/reduce-0/e", "run-r1/reduce-1/g", "run-r2"}},
			{name: "the later attempts won", maps: []string{"b", "c"}, reduces: []string{"e", "g"},
				removed: []string{"manifest.tmp-x1", "run-r1/map-0.done.tmp-b", "run-r1/map-0/a", "run-r1/reduce-0/d", "run-r1/reduce-1/f", "run-r2"}},
		} {
			t.Run(bk.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				st, _ := bk.open(t)
				for _, f := range files {
					if ds, ok := st.(dirStore); ok {
						// The directory's temporary files are not
						// objects: written as they are left.
						p := ds.path(f)
						if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
							t.Fatal(err)
						}
						continue
					}
					w, err := st.Create(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					w.Write([]byte(f))
					if err := w.Commit(); err != nil {
						t.Fatal(err)
					}
				}
				marks := func(as []string) []*marker {
					var out []*marker
					for _, a := range as {
						out = append(out, &marker{Attempt: a})
					}
					return out
				}
				removed := tc.removed
				if bk.name == "s3" {
					// The S3 store's probe objects (a directory's are the
					// user's: left alone).
					removed = append(removed[:len(removed):len(removed)], "probe-p1")
				}
				n, err := cleanup(ctx, st, layout{run: "r1"}, marks(tc.maps), marks(tc.reduces))
				if err != nil || n != len(removed) {
					t.Errorf("cleanup: %d removed, %v; want %d", n, err, len(removed))
				}
				for _, f := range files {
					gone := false
					for _, r := range removed {
						gone = gone || f == r || strings.HasPrefix(f, r+"/")
					}
					ok, err := st.Exists(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					if ok == gone {
						t.Errorf("%s: present %t, want %t", f, ok, !gone)
					}
				}
			})
		}
	}
}

// TestLargeObject: an object larger than an S3 part (a map's bucket of
// GBs) is streamed as a multipart upload and read back whole; an aborted
// one leaves nothing; an empty one is an object.
func TestLargeObject(t *testing.T) {
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			ctx := context.Background()
			st, _ := bk.open(t)
			data := make([]byte, 2*s3PartSize+123)
			for i := range data {
				data[i] = byte(i * 7 / 5)
			}
			for name, size := range map[string]int{"large": len(data), "empty": 0} {
				w, err := st.Create(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				for b := data[:size]; len(b) > 0; b = b[min(len(b), 100000):] {
					if _, err := w.Write(b[:min(len(b), 100000)]); err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Commit(); err != nil {
					t.Fatal(err)
				}
				r, err := st.Open(ctx, name)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(r)
				r.Close()
				if err != nil || !bytes.Equal(got, data[:size]) {
					t.Errorf("%s: read back %d bytes (%v), want %d equal", name, len(got), err, size)
				}
			}
			w, err := st.Create(ctx, "aborted")
			if err != nil {
				t.Fatal(err)
			}
			w.Write(data)
			w.Abort()
			if ok, err := st.Exists(ctx, "aborted"); ok || err != nil {
				t.Errorf("an aborted object: exists %t, %v", ok, err)
			}
		})
	}
}
