package index

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// TestBatchFilesWhatTheWriterFiles: entries written through batches, from
// several goroutines, in any order and through budgets of any size (in
// memory, spilled, spilled and split), scan back exactly as the same
// entries written one by one through the Writer: every Add entry, and
// the first of each AddFirst group.
func TestBatchFilesWhatTheWriterFiles(t *testing.T) {
	type e struct {
		key    []byte
		tag    byte
		first  bool
		fields []byte
		val    []byte
	}
	rng := rand.New(rand.NewPCG(3, 9))
	var all []e
	for i, u := range rng.Perm(30000) {
		f := make([]byte, 1+8)
		f[0] = byte(rng.IntN(3))                     // the group
		binary.BigEndian.PutUint64(f[1:], uint64(u)) // unique: the first of a group is one entry
		all = append(all, e{fmt.Appendf(nil, "k%d", rng.IntN(900)), byte(rng.IntN(3)), i%4 != 0, f,
			fmt.Appendf(nil, "v%d", i)})
	}
	put := func(a interface {
		Add([]byte, byte, []byte, []byte) error
		AddFirst([]byte, byte, int, []byte, []byte) error
	}, x e) error {
		if x.first {
			return a.AddFirst(x.key, x.tag+0x10, 1, x.fields, x.val)
		}
		return a.Add(x.key, x.tag, x.fields, x.val)
	}
	ref := openTemp(t, Options{})
	w := ref.NewWriter()
	for _, x := range all {
		if err := put(w, x); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := scanAll(t, ref)

	tests := []struct {
		name    string
		budget  int64
		workers int
		per     int  // entries per batch before Close
		direct  bool // the first goroutine writes through the Writer itself
	}{
		{"in memory, one goroutine", 0, 1, 1 << 30, false},
		{"in memory, four goroutines, small batches", 0, 4, 37, false},
		{"in memory, batches beside the writer's own adds", 0, 3, 700, true},
		{"spilled", 64 << 10, 4, 5000, false},
		{"spilled, batches beside the writer's own adds", 64 << 10, 2, 5000, true},
		{"spilled and split", 2 << 10, 3, 100, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t, Options{MemoryBytes: tt.budget})
			w := s.NewWriter()
			perm := rng.Perm(len(all))
			var wg sync.WaitGroup
			errs := make(chan error, tt.workers)
			for g := range tt.workers {
				wg.Go(func() {
					b := w.Batch()
					n := 0
					for i := g; i < len(perm); i += tt.workers {
						if tt.direct && g == 0 {
							if err := put(w, all[perm[i]]); err != nil {
								errs <- err
								return
							}
							continue
						}
						if err := put(b, all[perm[i]]); err != nil {
							errs <- err
							return
						}
						if n++; n%tt.per == 0 {
							if err := b.Close(); err != nil {
								errs <- err
								return
							}
							b = w.Batch()
						}
					}
					if err := b.Close(); err != nil {
						errs <- err
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			got := scanAll(t, s)
			if len(got) != len(want) {
				t.Fatalf("scanned %d keys, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("key %d differs:\nbatches: %s\nwriter:  %s", i, got[i], want[i])
				}
			}
			if tt.budget > 0 && s.last.spilled.Load() == 0 {
				t.Errorf("budget %d spilled nothing", tt.budget)
			}
		})
	}
}

func TestBatchAfterFlushOrWithABadGroupIsAnError(t *testing.T) {
	s := openTemp(t, Options{})
	w := s.NewWriter()
	b := w.Batch()
	if err := b.AddFirst([]byte("k"), 1, 3, []byte("ab"), nil); err == nil {
		t.Error("a group longer than the fields was accepted")
	}
	if err := b.Add([]byte("k"), 1, []byte("ab"), nil); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err == nil || !strings.Contains(err.Error(), "after Flush") {
		t.Errorf("closing a batch after Flush: %v, want an error", err)
	}
}

// TestBatchMemoryStaysWithinTheBudget is TestMemoryStaysWithinTheBudget
// through batches.
func TestBatchMemoryStaysWithinTheBudget(t *testing.T) {
	const budget, keys = 256 << 10, 60_000
	s := openTemp(t, Options{MemoryBytes: budget})
	w := s.NewWriter()
	b := w.Batch()
	var f [21]byte
	for i := range keys {
		binary.BigEndian.PutUint64(f[1:], uint64(i))
		if err := b.AddFirst(fmt.Appendf(nil, "key-%d", i), 0x10, 1, f[:], []byte("12345678")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	n := flushAndCount(t, s, w)
	if n != keys || w.Entries() != keys {
		t.Errorf("walked %d entries (Entries %d), want %d", n, w.Entries(), keys)
	}
	if p := w.peakUsed.Load(); p > budget+budget/4 {
		t.Errorf("partitions in memory peaked at %d bytes, budget %d", p, budget)
	}
}
