package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
)

// snapshotOf returns everything the store holds: checkpoint, values and
// marks, as text.
func snapshotOf(t *testing.T, s *Store) (string, map[string]string, []string) {
	t.Helper()
	cp, err := s.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	r := s.NewReader()
	defer r.Close()
	vals := map[string]string{}
	if err := r.Values(func(k, v []byte) error { vals[string(k)] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	var marks []string
	if err := r.Marked(func(k []byte) error { marks = append(marks, string(k)); return nil }); err != nil {
		t.Fatal(err)
	}
	return string(cp), vals, marks
}

// stepN stages step n over keys 0..keys-1: key i gets value "n:i", keys
// with i%3 == n%3 are marked and the others unmarked, key n is deleted.
func stepN(t *testing.T, s *Store, n, keys int) *Txn {
	t.Helper()
	tx, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		k := []byte(fmt.Sprintf("key-%05d", i))
		v := []byte(fmt.Sprintf("%d:%d", n, i))
		if i == n {
			v = nil
		}
		if err := tx.Put(k, v, i%3 == n%3); err != nil {
			t.Fatal(err)
		}
		if err := tx.Mark(k, i%3 == n%3); err != nil {
			t.Fatal(err)
		}
	}
	return tx
}

// want returns what the store holds after step n.
func want(n, keys int) (string, map[string]string, []string) {
	vals := map[string]string{}
	var marks []string
	for i := range keys {
		k := fmt.Sprintf("key-%05d", i)
		if i != n {
			vals[k] = fmt.Sprintf("%d:%d", n, i)
		}
		if i%3 == n%3 {
			marks = append(marks, k)
		}
	}
	return fmt.Sprintf("checkpoint %d", n), vals, marks
}

func equalState(t *testing.T, s *Store, n, keys int) {
	t.Helper()
	cp, vals, marks := snapshotOf(t, s)
	wcp, wvals, wmarks := want(n, keys)
	if n < 0 {
		wcp, wvals, wmarks = "", map[string]string{}, nil
	}
	if cp != wcp || len(vals) != len(wvals) || !slices.Equal(marks, wmarks) {
		t.Fatalf("state is checkpoint %q with %d values, %d marks; want the state of step %d (%q, %d values, %d marks)",
			cp, len(vals), len(marks), n, wcp, len(wvals), len(wmarks))
	}
	for k, v := range wvals {
		if vals[k] != v {
			t.Fatalf("%s = %q, want %q (step %d)", k, vals[k], v, n)
		}
	}
}

func TestCommitAbortAndReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{ApplyBatch: 7})
	if err != nil {
		t.Fatal(err)
	}
	equalState(t, s, -1, 0)
	if err := stepN(t, s, 1, 50).Commit([]byte("checkpoint 1")); err != nil {
		t.Fatal(err)
	}
	equalState(t, s, 1, 50)
	// An aborted step changes nothing.
	tx := stepN(t, s, 2, 50)
	if _, err := s.Begin(); err == nil {
		t.Error("a second step could be staged while one is open")
	}
	tx.Abort()
	equalState(t, s, 1, 50)
	// A reader sees the committed state while a step is staged.
	tx = stepN(t, s, 2, 50)
	r := s.NewReader()
	v, marked, err := r.Get([]byte("key-00004"))
	r.Close()
	if err != nil || string(v) != "1:4" || !marked {
		t.Errorf("during staging key-00004 = %q marked %v (%v), want the committed 1:4, marked", v, marked, err)
	}
	if err := tx.Commit([]byte("checkpoint 2")); err != nil {
		t.Fatal(err)
	}
	equalState(t, s, 2, 50)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	equalState(t, s, 2, 50)
	if logs, _ := filepath.Glob(filepath.Join(dir, "redo-*.log")); len(logs) != 0 {
		t.Errorf("redo logs left after complete steps: %v", logs)
	}
}

func TestOpenTwiceSaysInUse(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrInUse) {
		t.Errorf("second Open: %v, want ErrInUse", err)
	}
}

func TestDamagedLogIsReportedNotApplied(t *testing.T) {
	dir := t.TempDir()
	armed := false
	s, err := Open(dir, Options{Hook: func(p string) {
		if p == "committed" && armed {
			panic("stop here")
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The baseline is loaded without a redo log (bulk.go); the step
	// after it has one.
	if err := stepN(t, s, 1, 10).Commit([]byte("checkpoint 1")); err != nil {
		t.Fatal(err)
	}
	armed = true
	func() {
		defer func() { _ = recover() }()
		_ = stepN(t, s, 2, 10).Commit([]byte("checkpoint 2"))
	}()
	s.db.Close()
	logs, _ := filepath.Glob(filepath.Join(dir, "redo-*.log"))
	if len(logs) != 1 {
		t.Fatalf("logs %v, want the committed step's", logs)
	}
	if err := os.WriteFile(logs[0], []byte("lossaudit-redo-1\n\xff\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, errDamaged) {
		t.Errorf("Open with a damaged log: %v, want errDamaged", err)
	}
}

// TestKilledAtEveryPoint kills a process (SIGKILL, as kill -9 does) at each
// point of a commit and of the recovery that follows, then checks that the
// store holds exactly the previous step or exactly the new one: the new
// one once the commit point has passed, the previous one before.
func TestKilledAtEveryPoint(t *testing.T) {
	const keys = 2000
	for _, tc := range []struct {
		point string
		after int // the step in force after the crash
	}{
		{"staging", 1}, {"staged", 1}, {"committed", 2}, {"applying", 2}, {"applied", 2},
	} {
		t.Run(tc.point, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := stepN(t, s, 1, keys).Commit([]byte("checkpoint 1")); err != nil {
				t.Fatal(err)
			}
			s.Close()
			runHelper(t, dir, tc.point, keys)
			// Recovery itself killed while replaying, then completed.
			if tc.after == 2 {
				runHelper(t, dir, "recover-applying", keys)
			}
			reopenAfterKill(t, dir, Options{}, tc.after, keys)
		})
	}
}

// reopenAfterKill opens the state in dir after runHelper's process was
// killed, checks that it holds step after (-1: empty), and that the next
// step commits as if nothing had happened.
func reopenAfterKill(t *testing.T, dir string, o Options, after, keys int) *Store {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	equalState(t, s, after, keys)
	if err := stepN(t, s, 3, keys).Commit([]byte("checkpoint 3")); err != nil {
		t.Fatal(err)
	}
	equalState(t, s, 3, keys)
	return s
}

func runHelper(t *testing.T, dir, point string, keys int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "STATE_HELPER_DIR="+dir, "STATE_HELPER_POINT="+point, "STATE_HELPER_KEYS="+strconv.Itoa(keys))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper at %s: %v, want killed by SIGKILL\n%s", point, err, out)
	}
}

// TestHelperProcess is the process killed by TestKilledAtEveryPoint.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv("STATE_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process only")
	}
	point := os.Getenv("STATE_HELPER_POINT")
	keys, _ := strconv.Atoi(os.Getenv("STATE_HELPER_KEYS"))
	kill := func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }
	hook := func(p string) {
		if p == point || "recover-"+p == point {
			kill()
		}
	}
	above, _ := strconv.ParseInt(os.Getenv("STATE_HELPER_COMPRESS_ABOVE"), 10, 64)
	s, err := Open(dir, Options{Hook: hook, ApplyBatch: 500, SortBytes: 4096, CompressAbove: above})
	if err != nil {
		t.Fatal(err)
	}
	if point == "recover-applying" {
		t.Fatal("recovery did not reach the point")
	}
	tx := stepN(t, s, 2, keys)
	if point == "staging" {
		kill()
	}
	_ = tx.Commit([]byte("checkpoint 2"))
	t.Fatal("the commit did not reach the point")
}

// TestKeysLongerThanBadgerAllows: Kafka keys can be larger than the
// 65,000 bytes Badger takes for a key; they are stored by their hash.
func TestKeysLongerThanBadgerAllows(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	huge := bytes.Repeat([]byte("0123456789"), 10_000)
	other := append(bytes.Clone(huge[:5000]), 'x')
	tx, err := s.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range [][]byte{huge, other, []byte("short")} {
		if err := tx.Put(k, append([]byte("v:"), k[:4]...), true); err != nil {
			t.Fatal(err)
		}
		if err := tx.Mark(k, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit([]byte("checkpoint 1")); err != nil {
		t.Fatal(err)
	}
	r := s.NewReader()
	v, marked, err := r.Get(huge)
	if err != nil || string(v) != "v:0123" || !marked {
		t.Errorf("Get(huge) = %q %v %v", v, marked, err)
	}
	if v, marked, err := r.Get(huge[:len(huge)-1]); err != nil || v != nil || marked {
		t.Errorf("Get of a key never stored = %q %v %v", v, marked, err)
	}
	var keys, marks int
	_ = r.Values(func(k, v []byte) error {
		keys++
		if !bytes.Equal(v, append([]byte("v:"), k[:4]...)) {
			t.Errorf("value of %.10q = %q", k, v)
		}
		return nil
	})
	_ = r.Marked(func(k []byte) error {
		marks++
		if len(k) != len(huge) && len(k) != len(other) && string(k) != "short" {
			t.Errorf("marked key of %d bytes", len(k))
		}
		return nil
	})
	r.Close()
	if keys != 3 || marks != 3 {
		t.Errorf("%d values and %d marks, want 3 and 3", keys, marks)
	}
	tx, _ = s.Begin()
	_ = tx.Put(huge, nil, false)
	_ = tx.Mark(huge, false)
	if err := tx.Commit([]byte("checkpoint 2")); err != nil {
		t.Fatal(err)
	}
	r = s.NewReader()
	defer r.Close()
	if v, marked, _ := r.Get(huge); v != nil || marked {
		t.Errorf("deleted huge key: %q %v", v, marked)
	}
}
