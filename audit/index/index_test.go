package index

import (
	"fmt"
	"strings"
	"testing"
)

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestScanGroupsEvidenceByKey(t *testing.T) {
	s := openTemp(t)
	w := s.NewWriter()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// key "k1": input 0 has three candidates; the newest (ts 300) is still in
	// the repartition tail, so the evidence is ts 200 at the higher offset of
	// the two records carrying it.
	must(w.Input(0, []byte("k1"), 100, 0, 1, 11))
	must(w.Input(0, []byte("k1"), 200, 0, 2, 22))
	must(w.Input(0, []byte("k1"), 200, 1, 7, 23))
	must(w.Input(0, []byte("k1"), 300, 2, 9, 33))
	must(w.Repartition(0, []byte("k1"), 300, 33, true, 0, 50))
	must(w.Repartition(0, []byte("k1"), 100, 11, false, 0, 40))
	must(w.Changelog(0, []byte("k1"), 150, 5, false, false))
	must(w.Changelog(0, []byte("k1"), 250, 6, true, false))
	must(w.Changelog(0, []byte("k1"), 120, 4, false, false))
	must(w.Output([]byte("k1"), 150, 3, false, false))
	must(w.Output([]byte("k1"), 260, 8, true, false))
	// key "k2": only input 1 and a tombstone in its changelog.
	must(w.Input(1, []byte("k2"), 500, 0, 3, 44))
	must(w.Changelog(1, []byte("k2"), 500, 9, false, true))
	// a key that is not valid UTF-8 and a longer key sharing a prefix.
	must(w.Input(2, []byte{0xff, 0x00}, 1, 0, 0, 1))
	must(w.Input(0, []byte("k10"), 7, 0, 0, 1))
	// key "k3": the evidence's copy is still in the repartition topic below
	// the committed offset; key "k4": only a tail copy of an older record.
	must(w.Input(0, []byte("k3"), 100, 0, 1, 11))
	must(w.Repartition(0, []byte("k3"), 100, 11, false, 0, 40))
	must(w.Input(0, []byte("k4"), 300, 0, 1, 11))
	must(w.Input(0, []byte("k4"), 100, 0, 0, 12))
	must(w.Repartition(0, []byte("k4"), 100, 12, true, 0, 41))
	must(w.Flush())

	got := map[string]KeyView{}
	var order []string
	err := s.Scan(3, func(v *KeyView) error {
		cp := KeyView{Key: append([]byte(nil), v.Key...), Inputs: append([]InputView(nil), v.Inputs...),
			Changelog: append([]StageView(nil), v.Changelog...), Output: v.Output}
		got[string(v.Key)] = cp
		order = append(order, string(v.Key))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 6 {
		t.Fatalf("scanned keys %q, want 6 keys", order)
	}
	k1 := got["k1"]
	wantIn := InputView{Has: true, Evidence: InputRecord{TS: 200, Partition: 1, Offset: 7, FP: 23}, Candidates: 4, TailMatched: 1}
	if k1.Inputs[0] != wantIn {
		t.Errorf("k1 input 0 = %+v, want %+v", k1.Inputs[0], wantIn)
	}
	wantCL := StageView{Has: true, TS: 150, Offset: 5, HasAborted: true, AbortedTS: 250}
	if k1.Changelog[0] != wantCL {
		t.Errorf("k1 changelog 0 = %+v, want %+v", k1.Changelog[0], wantCL)
	}
	wantOut := StageView{Has: true, TS: 150, Offset: 3, HasAborted: true, AbortedTS: 260}
	if k1.Output != wantOut {
		t.Errorf("k1 output = %+v, want %+v", k1.Output, wantOut)
	}
	if k1.Inputs[1].Candidates != 0 || k1.Changelog[1].Has {
		t.Errorf("k1 leaked evidence of another key: %+v", k1)
	}
	k2 := got["k2"]
	if !k2.Changelog[1].Has || !k2.Changelog[1].Tombstone || k2.Changelog[1].TS != 500 {
		t.Errorf("k2 changelog 1 = %+v, want tombstone at 500", k2.Changelog[1])
	}
	if got["k10"].Inputs[0].Evidence.TS != 7 || got["\xff\x00"].Inputs[2].Evidence.TS != 1 {
		t.Errorf("prefix-sharing or binary keys mixed up: %+v %+v", got["k10"], got["\xff\x00"])
	}

	if k1.Inputs[0].Seen {
		t.Errorf("k1 evidence (ts 200) has no repartition copy, but Seen = %+v", k1.Inputs[0])
	}
	k3 := got["k3"].Inputs[0]
	if !k3.Has || !k3.Seen || k3.SeenPartition != 0 || k3.SeenOffset != 40 {
		t.Errorf("k3 input 0 = %+v, want its evidence seen in the repartition topic at [0]@40", k3)
	}
	if got["k4"].Inputs[0].Seen {
		t.Error("a tail copy of the evidence counted as seen; only processed copies count")
	}
}

func TestResetDropsPreviousRun(t *testing.T) {
	s := openTemp(t)
	w := s.NewWriter()
	for i := range 1000 {
		if err := w.Input(0, fmt.Appendf(nil, "key-%d", i), int64(i), 0, int64(i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := s.Scan(1, func(*KeyView) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("after Reset the scan saw %d keys, want 0", n)
	}
}

func TestOpenTwiceIsAClearError(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = Open(dir, Options{})
	if err == nil {
		t.Fatal("second Open of the same directory succeeded")
	}
	if want := "in use by another lossaudit run"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

func TestRejectsHugeKey(t *testing.T) {
	s := openTemp(t)
	w := s.NewWriter()
	defer w.Cancel()
	if err := w.Input(0, make([]byte, maxKeyLen+1), 1, 0, 0, 0); err == nil {
		t.Error("a key longer than the index supports was accepted")
	}
}

// TestManyRunsMatchOneRun writes the same entries through tiny chunks
// (hundreds of runs, merged in several passes) and through one chunk, in
// different orders and from several goroutines: the scans must agree
// entry for entry.
func TestManyRunsMatchOneRun(t *testing.T) {
	write := func(s *Store, reverse bool, workers int) {
		w := s.NewWriter()
		done := make(chan error, workers)
		for g := range workers {
			go func() {
				for i := range 3000 {
					j := i
					if reverse {
						j = 2999 - i
					}
					if j%workers != g {
						continue
					}
					key := fmt.Appendf(nil, "key-%d", j%700)
					if err := w.Input(uint8(j%2), key, int64(j%50), int32(j%3), int64(j), uint64(j%5)); err != nil {
						done <- err
						return
					}
					if err := w.Changelog(uint8(j%2), key, int64(j%60), int64(j), j%7 == 0, j%11 == 0); err != nil {
						done <- err
						return
					}
					if err := w.Repartition(uint8(j%2), key, int64(j%50), uint64(j%5), j%13 == 0, int32(j%3), int64(j)); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
		}
		for range workers {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(s *Store) []string {
		var out []string
		if err := s.Scan(2, func(v *KeyView) error {
			out = append(out, fmt.Sprintf("%s %+v %+v %+v", v.Key, v.Inputs, v.Changelog, v.Output))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}
	one, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	write(one, false, 1)
	many, err := Open(t.TempDir(), Options{ChunkBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer many.Close()
	write(many, true, 4)
	if len(many.runs) > maxRunsMerged || len(one.runs) != 1 {
		t.Errorf("runs: %d (tiny chunks), %d (one chunk)", len(many.runs), len(one.runs))
	}
	a, b := scan(one), scan(many)
	if len(a) != 700 {
		t.Fatalf("scanned %d keys, want 700", len(a))
	}
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			t.Fatalf("key %d differs:\none run:   %s\nmany runs: %s", i, a[i], b[min(i, len(b)-1)])
		}
	}
	if len(b) != len(a) {
		t.Fatalf("many runs scanned %d keys, one run %d", len(b), len(a))
	}
}
