package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	badger "github.com/dgraph-io/badger/v4"
)

// TestBaselineKilledAtEveryPoint kills the process staging and loading a
// baseline (bulk.go) at each point: before the checkpoint is written the
// state is empty afterwards, after it the whole baseline; either way no
// sort run is left and the next step works.
func TestBaselineKilledAtEveryPoint(t *testing.T) {
	const keys = 2000
	for _, tc := range []struct {
		point string
		after int // the step in force after the crash (-1: none)
	}{
		{"staging", -1}, {"staged", -1}, {"applying", -1}, {"committed", 2}, {"applied", 2},
	} {
		t.Run(tc.point, func(t *testing.T) {
			dir := t.TempDir()
			runHelper(t, dir, tc.point, keys)
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			equalState(t, s, tc.after, keys)
			if runs, _ := filepath.Glob(filepath.Join(dir, runPrefix+"*")); len(runs) != 0 {
				t.Errorf("sort runs left after recovery: %v", runs)
			}
			if err := stepN(t, s, 3, keys).Commit([]byte("checkpoint 3")); err != nil {
				t.Fatal(err)
			}
			equalState(t, s, 3, keys)
		})
	}
}

// TestCompressedBaselineKilledAtEveryPoint is TestBaselineKilledAtEveryPoint
// for a baseline large enough to be written compressed: the database is
// opened again, compressed, between staging and loading.
func TestCompressedBaselineKilledAtEveryPoint(t *testing.T) {
	const keys = 2000
	t.Setenv("STATE_HELPER_COMPRESS_ABOVE", "1000")
	for _, tc := range []struct {
		point string
		after int
	}{
		{"staged", -1}, {"applying", -1}, {"committed", 2}, {"applied", 2},
	} {
		t.Run(tc.point, func(t *testing.T) {
			dir := t.TempDir()
			runHelper(t, dir, tc.point, keys)
			s := reopenAfterKill(t, dir, Options{CompressAbove: 1000}, tc.after, keys)
			if tc.after > 0 && !s.compressed {
				t.Error("the committed baseline's state was not opened compressed")
			}
		})
	}
}

// TestBaselineSortedRuns: a baseline staged over many sort runs, with keys
// changed again (the last change wins), deleted, marked and unmarked, and
// keys longer than Badger takes, holds exactly what the log's replay
// would.
func TestBaselineSortedRuns(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sortBytes int
		keys      int
		changes   int
	}{
		{"one chunk", 1 << 20, 300, 2000},
		{"many runs", 512, 300, 2000},
		{"a run per change", 1, 50, 300},
		{"nothing staged", 1 << 20, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{SortBytes: tc.sortBytes})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			rng := rand.New(rand.NewPCG(uint64(tc.keys), uint64(tc.changes)))
			key := func(i int) []byte {
				if i%7 == 0 {
					return []byte(fmt.Sprintf("long-%d-%s", i, strings.Repeat("x", maxDirectKey)))
				}
				return []byte(fmt.Sprintf("key-%05d", i))
			}
			tx, err := s.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if tx.bulk == nil {
				t.Fatal("the baseline is not staged sorted")
			}
			vals, marks := map[string]string{}, map[string]bool{}
			for c := range tc.changes {
				i := rng.IntN(tc.keys)
				k := key(i)
				switch rng.IntN(4) {
				case 0:
					if err := tx.Put(k, nil, false); err != nil {
						t.Fatal(err)
					}
					delete(vals, string(k))
				case 1:
					on := rng.IntN(2) == 0
					if err := tx.Mark(k, on); err != nil {
						t.Fatal(err)
					}
					marks[string(k)] = on
				default:
					v := fmt.Sprintf("%d@%d", i, c)
					if err := tx.Put(k, []byte(v), false); err != nil {
						t.Fatal(err)
					}
					vals[string(k)] = v
				}
			}
			if tc.sortBytes < 1<<20 && len(tx.bulk.runs) < 2 {
				t.Errorf("%d sort runs, want several", len(tx.bulk.runs))
			}
			if err := tx.Commit([]byte("checkpoint 1")); err != nil {
				t.Fatal(err)
			}
			if runs, _ := filepath.Glob(filepath.Join(dir, runPrefix+"*")); len(runs) != 0 {
				t.Errorf("sort runs left after the commit: %v", runs)
			}
			cp, gotVals, gotMarks := snapshotOf(t, s)
			var wantMarks []string
			for k, on := range marks {
				if on {
					wantMarks = append(wantMarks, k)
				}
			}
			slices.SortFunc(wantMarks, func(a, b string) int { return bytes.Compare([]byte(a), []byte(b)) })
			slices.Sort(gotMarks)
			slices.Sort(wantMarks)
			if cp != "checkpoint 1" || len(gotVals) != len(vals) || !slices.Equal(gotMarks, wantMarks) {
				t.Fatalf("checkpoint %q, %d values, marks %d; want %d values, %d marks", cp, len(gotVals), len(gotMarks), len(vals), len(wantMarks))
			}
			for k, v := range vals {
				if gotVals[k] != v {
					t.Errorf("%.20s = %q, want %q", k, gotVals[k], v)
				}
			}
		})
	}
}

// TestOpenDropsAnUncommittedBaseline: values loaded without a checkpoint
// (a baseline killed while loading) are not state.
func TestOpenDropsAnUncommittedBaseline(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tx := stepN(t, s, 1, 100)
	if err := s.load(tx.bulk); err != nil {
		t.Fatal(err)
	}
	tx.Abort()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(dir, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	equalState(t, s, -1, 0)
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// TestBaselineLoadedThroughBatchesWhenAStreamCannotStart: a database
// with unflushed writes cannot take a StreamWriter; the baseline is then
// loaded through write batches, with the same result.
func TestBaselineLoadedThroughBatchesWhenAStreamCannotStart(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{ApplyBatch: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("x-unflushed"), []byte("1")) }); err != nil {
		t.Fatal(err)
	}
	var hooks []string
	s.o.Hook = func(p string) { hooks = append(hooks, p) }
	if err := stepN(t, s, 1, 50).Commit([]byte("checkpoint 1")); err != nil {
		t.Fatal(err)
	}
	equalState(t, s, 1, 50)
	if want := []string{"staged", "applying", "committed", "applied"}; !slices.Equal(hooks, want) {
		t.Errorf("hooks %v, want %v", hooks, want)
	}
	if err := stepN(t, s, 2, 50).Commit([]byte("checkpoint 2")); err != nil {
		t.Fatal(err)
	}
	equalState(t, s, 2, 50)
}

// TestEmptyCheckpointIsRefused: read back, an empty checkpoint would be
// none, and the state empty.
func TestEmptyCheckpointIsRefused(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx := stepN(t, s, 1, 10)
	if err := tx.Commit(nil); err == nil {
		t.Fatal("an empty checkpoint was committed")
	}
	tx.Abort()
	equalState(t, s, -1, 0)
}

// TestLargeStateIsCompressed: a baseline staging more than CompressAbove
// writes its tables compressed, the steps after it read and write it
// like any state, and a store opened with a larger CompressAbove (its
// tables then written uncompressed) reads the compressed tables.
func TestLargeStateIsCompressed(t *testing.T) {
	const keys = 3000
	dir := t.TempDir()
	compressed := func(s *Store) (on, off int) {
		t.Helper()
		for _, ti := range s.db.Tables() {
			if ti.KeyCount < 2 {
				continue
			}
			if ti.OnDiskSize < ti.UncompressedSize*3/4 {
				on++
			} else {
				off++
			}
		}
		return on, off
	}
	s, err := Open(dir, Options{CompressAbove: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if s.compressed {
		t.Error("an empty state is written compressed")
	}
	if err := stepN(t, s, 1, keys).Commit([]byte("checkpoint 1")); err != nil {
		t.Fatal(err)
	}
	equalState(t, s, 1, keys)
	if on, off := compressed(s); !s.compressed || on == 0 || off != 0 {
		t.Errorf("after a baseline of %d keys: compressed %v, %d tables compressed, %d not", keys, s.compressed, on, off)
	}
	if err := stepN(t, s, 2, keys).Commit([]byte("checkpoint 2")); err != nil {
		t.Fatal(err)
	}
	equalState(t, s, 2, keys)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for n, above := range []int64{10000, 0} {
		s, err := Open(dir, Options{CompressAbove: above})
		if err != nil {
			t.Fatal(err)
		}
		if s.compressed != (above > 0) {
			t.Errorf("CompressAbove %d: opened compressed %v", above, s.compressed)
		}
		equalState(t, s, 2+n, keys)
		if err := stepN(t, s, 3+n, keys).Commit([]byte(fmt.Sprintf("checkpoint %d", 3+n))); err != nil {
			t.Fatal(err)
		}
		equalState(t, s, 3+n, keys)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A baseline small enough is written uncompressed again.
	dir = t.TempDir()
	s, err = Open(dir, Options{CompressAbove: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := stepN(t, s, 1, keys).Commit([]byte("checkpoint 1")); err != nil {
		t.Fatal(err)
	}
	equalState(t, s, 1, keys)
	if on, off := compressed(s); s.compressed || on != 0 || off == 0 {
		t.Errorf("after a small baseline: compressed %v, %d tables compressed, %d not", s.compressed, on, off)
	}
}

// TestCompressedStateStaysCompressed: a state written compressed takes
// less room on disk than the baseline staged; opened again with the same
// CompressAbove, between the two sizes, it is still written compressed
// (Open decides by the recorded baseline size, not by the tables alone).
func TestCompressedStateStaysCompressed(t *testing.T) {
	const keys = 3000
	dir := t.TempDir()
	s, err := Open(dir, Options{CompressAbove: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := stepN(t, s, 1, keys).Commit([]byte("checkpoint 1")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	staged, disk := stagedSize(dir), tablesSize(filepath.Join(dir, "db"))
	if staged <= disk {
		t.Fatalf("the baseline staged %d bytes, its compressed tables take %d: the test needs fewer on disk", staged, disk)
	}
	above := (staged + disk) / 2
	s, err = Open(dir, Options{CompressAbove: above})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.compressed {
		t.Errorf("a state of %d bytes staged (%d on disk) opened with CompressAbove %d is written uncompressed", staged, disk, above)
	}
	equalState(t, s, 1, keys)
}
