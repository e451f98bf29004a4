package shard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// TestBucketsRoundTrip: entries written to the buckets are read back from
// the bucket of their shard, in order, with empty and long parts; a
// truncated bucket is an error naming the file, never fewer entries.
func TestBucketsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	b, err := newBuckets(dir, 3)
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
		err := readBucket(bucketPath(dir, r), func(key []byte, e index.Entry) error {
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
	p := bucketPath(dir, 0)
	fi, _ := os.Stat(p)
	if err := os.Truncate(p, fi.Size()-1); err != nil {
		t.Fatal(err)
	}
	err = readBucket(p, func([]byte, index.Entry) error { return nil })
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("a truncated bucket: %v, want an error naming %s", err, p)
	}
}

// TestCreateAtomicKeepsTheFirst: the manifest is created once; a second
// writer (a duplicate index 0) is told it exists and the first stays.
func TestCreateAtomicKeepsTheFirst(t *testing.T) {
	p := filepath.Join(t.TempDir(), "manifest")
	if err := createAtomic(p, "a1", &manifest{RunID: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := createAtomic(p, "a2", &manifest{RunID: "second"}); !errors.Is(err, os.ErrExist) {
		t.Errorf("second create: %v, want it to exist", err)
	}
	var m manifest
	if err := readGob(p, &m); err != nil || m.RunID != "first" {
		t.Errorf("manifest %+v, %v: want the first", m, err)
	}
	left, _ := filepath.Glob(p + ".tmp-*")
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
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
		"manifest", "manifest.tmp-x1", "report.csv",
		"run-r1/snapshot/to-0", "run-r1/snapshot/to-1",
		"run-r1/map-0.done", "run-r1/map-0.done.tmp-b", "run-r1/map-0/a/to-0", "run-r1/map-0/a/counts", "run-r1/map-0/b/to-0",
		"run-r1/map-1.done", "run-r1/map-1/c/to-1", "run-r1/map-1/c/counts",
		"run-r1/reduce-0.done", "run-r1/reduce-0/d/result", "run-r1/reduce-0/e/result.tmp-e",
		"run-r1/reduce-1.done", "run-r1/reduce-1/f/result", "run-r1/reduce-1/g/result",
		"run-r1/notes.txt", "run-r1/map-x/y/z",
		"run-r2/snapshot/to-0",
	}
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
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range files {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
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
			n, err := cleanup(Options{Dir: dir}, layout{dir: dir, run: "r1"}, marks(tc.maps), marks(tc.reduces))
			if err != nil || n != len(tc.removed) {
				t.Errorf("cleanup: %d removed, %v; want %d", n, err, len(tc.removed))
			}
			for _, f := range files {
				gone := false
				for _, r := range tc.removed {
					gone = gone || f == r || strings.HasPrefix(f, r+"/")
				}
				_, err := os.Stat(filepath.Join(dir, f))
				if ok := err == nil; ok == gone {
					t.Errorf("%s: present %t, want %t", f, ok, !gone)
				}
			}
		})
	}
}
