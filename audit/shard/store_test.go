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
