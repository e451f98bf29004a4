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
