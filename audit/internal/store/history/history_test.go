package history

import (
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

func TestRecordAndLoad(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	run := []snapshot.Partition{
		{Topic: "in", Partition: 0, LogStart: 3, HighWatermark: 100, LSO: 99, Committed: 80, HasCommitted: true},
		{Topic: "out", Partition: 2, HighWatermark: 70, LSO: 70},
	}
	if err := s.Record("app", run, at); err != nil {
		t.Fatal(err)
	}
	// Another group's history, and a group whose name extends this one's,
	// must not leak into it.
	for _, g := range []string{"other", "app2"} {
		if err := s.Record(g, []snapshot.Partition{{Topic: "in", Partition: 0, HighWatermark: 1 << 40}}, at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// A later run overwrites the same partition.
	later := snapshot.Partition{Topic: "out", Partition: 2, HighWatermark: 90, LSO: 90}
	if err := s.Record("app", []snapshot.Partition{later}, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load("app")
	if err != nil {
		t.Fatal(err)
	}
	want := map[kread.TP]Entry{
		{Topic: "in", Partition: 0}:  {Partition: run[0], At: at},
		{Topic: "out", Partition: 2}: {Partition: later, At: at.Add(time.Minute)},
	}
	if len(got) != len(want) {
		t.Fatalf("loaded %d entries %+v, want %d", len(got), got, len(want))
	}
	for tp, w := range want {
		g, ok := got[tp]
		if !ok || g.Partition != w.Partition || !g.At.Equal(w.At) {
			t.Errorf("%v = %+v, want %+v", tp, g, w)
		}
	}
	if none, err := s.Load("nobody"); err != nil || len(none) != 0 {
		t.Errorf("unknown group loaded %v, %v", none, err)
	}
}

func TestHistoryPersistsAcrossOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := snapshot.Partition{Topic: "t", Partition: 0, HighWatermark: 10}
	if err := s.Record("app", []snapshot.Partition{p}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Load("app")
	if err != nil {
		t.Fatal(err)
	}
	if e := got[kread.TP{Topic: "t", Partition: 0}]; e.Partition != p {
		t.Fatalf("after reopening: %+v, want %+v", got, p)
	}
}
