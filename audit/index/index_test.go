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
	if len(order) != 4 {
		t.Fatalf("scanned keys %q, want 4 keys", order)
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

	p, o, ok, err := s.RepartitionSeen(0, []byte("k1"), 100, 11)
	if err != nil || !ok || p != 0 || o != 40 {
		t.Errorf("RepartitionSeen(processed copy) = %d %d %v %v, want 0 40 true", p, o, ok, err)
	}
	if _, _, ok, _ := s.RepartitionSeen(0, []byte("k1"), 300, 33); ok {
		t.Error("RepartitionSeen found a tail record; only processed copies count")
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
