package index

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// TestSettlingAheadWalksWhatSettlingInTurnWalks: the walk with spilled
// partitions settled on goroutines ahead of it (one, two, three workers)
// yields the same keys with the same entries in the same order as the walk
// settling each in its turn, for evidence kept in memory, spilled, and
// spilled beyond each settled part's share (split, down to a budget so
// tiny that partitions split twice); it counts the same entries, holds no
// settled part beyond its share, and stops cleanly when fn stops it.
func TestSettlingAheadWalksWhatSettlingInTurnWalks(t *testing.T) {
	write := func(s *Store, keys, n int) *Writer {
		w := s.NewWriter()
		for i := range n {
			j := (i * 7919) % n // arrival order unrelated to the keys
			key := fmt.Appendf(nil, "key-%d", j%keys)
			var err error
			if j%3 == 0 {
				// Record-level entries, some the same record twice.
				err = w.Add(key, 0x10, fmt.Appendf(nil, "%06d", j/2), fmt.Appendf(nil, "v%d", j))
			} else {
				// Aggregated: the first-sorting per group, with ties.
				f := fmt.Appendf(nil, "%d|%06d", j%2, 999999-j/5)
				err = w.AddFirst(key, 0x20, 1, f, fmt.Appendf(nil, "w%d", j%11))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		return w
	}
	for _, tc := range []struct {
		name    string
		budget  int64
		keys, n int
	}{
		{"in memory", 64 << 20, 1000, 3000},
		{"spilled", 64 << 10, 4000, 10000},
		{"spilled and split", 64 << 10, 8000, 20000},
		{"spilled and split, a small budget", 8 << 10, 2000, 6000},
		{"spilled and split twice", 1 << 10, 1000, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inTurn := openTemp(t, Options{MemoryBytes: tc.budget})
			inTurn.settleWorkers = -1
			w0 := write(inTurn, tc.keys, tc.n)
			want := scanAll(t, inTurn)
			if len(want) != tc.keys {
				t.Fatalf("in turn: %d keys, want %d", len(want), tc.keys)
			}
			for _, workers := range []int{1, 2, 3} {
				s := openTemp(t, Options{MemoryBytes: tc.budget})
				s.settleWorkers = workers
				w := write(s, tc.keys, tc.n)
				if w.spilled.Load() != w0.spilled.Load() {
					t.Fatalf("%d workers: %d partitions spilled, in turn %d", workers, w.spilled.Load(), w0.spilled.Load())
				}
				got := scanAll(t, s)
				if len(got) != len(want) {
					t.Fatalf("%d workers: %d keys, in turn %d", workers, len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%d workers: key %d differs:\nin turn: %s\nahead:   %s", workers, i, want[i], got[i])
					}
				}
				if w.Entries() != w0.Entries() {
					t.Errorf("%d workers: %d entries counted, in turn %d", workers, w.Entries(), w0.Entries())
				}
				// A second walk sees the same and counts nothing again.
				again := scanAll(t, s)
				if len(again) != len(want) || again[len(again)-1] != want[len(want)-1] || w.Entries() != w0.Entries() {
					t.Errorf("%d workers: the second walk differs (%d keys, %d entries)", workers, len(again), w.Entries())
				}
				share := tc.budget / 2 / int64(min(workers, int(w.spilled.Load()))+1)
				// A part's slices grow by doubling (and start at a minimum
				// size, which a tiny budget's share is below).
				if w.spilled.Load() > 1 && tc.budget >= 64<<10 && w.peakSettled.Load() > 2*share+share/2 {
					t.Errorf("%d workers: a settled part held %d bytes, its share is %d", workers, w.peakSettled.Load(), share)
				}
				t.Logf("%d workers: %d partitions spilled, peak settled %d (share %d)", workers, w.spilled.Load(), w.peakSettled.Load(), share)

				// Stopped at the first key, a third in and the last: the same
				// keys up to there, and the stop returned.
				for _, at := range []int{0, len(want) / 3, len(want) - 1} {
					stop := errors.New("stop")
					var seen []string
					err := s.EachKey(func(key []byte, c *Cursor) error {
						if len(seen) == at {
							return stop
						}
						seen = append(seen, string(key))
						return nil
					})
					if !errors.Is(err, stop) {
						t.Fatalf("%d workers, stopped at %d: %v, want the stop", workers, at, err)
					}
					for i := range seen {
						if !startsWithKey(want[i], seen[i]) {
							t.Fatalf("%d workers, stopped at %d: key %d is %q, in turn %s", workers, at, i, seen[i], want[i])
						}
					}
				}
			}
		})
	}
}

func startsWithKey(line, key string) bool {
	p := fmt.Sprintf("%q:", key)
	return len(line) >= len(p) && line[:len(p)] == p
}

// BenchmarkSettledWalk walks evidence shaped like lossaudit compare's
// (every record an entry, two per identity: the source record and its
// copy, nearly all spilled) with the spilled partitions settled in turn
// and by one or two workers ahead of the walk.
func BenchmarkSettledWalk(b *testing.B) {
	const ids = 500_000
	for _, workers := range []int{-1, 1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{MemoryBytes: 12 << 20})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.settleWorkers = workers
			w := s.NewWriter()
			var k [19]byte
			var f [12]byte
			v := make([]byte, 20)
			for i := range 2 * ids {
				binary.BigEndian.PutUint64(k[3:], uint64(i%ids)*0x9e3779b97f4a7c15)
				binary.BigEndian.PutUint64(f[4:], uint64(i))
				tag := byte(0x30)
				if i >= ids {
					tag = 0x10
				}
				if err := w.Add(k[:], tag, f[:], v); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			var n, sum int
			for b.Loop() {
				if err := s.EachKey(func(key []byte, c *Cursor) error {
					for c.Next() {
						n++
						sum += int(c.Entry().Fields[11])
					}
					return nil
				}); err != nil {
					b.Fatal(err)
				}
			}
			if n == 0 || sum < 0 {
				b.Fatal("nothing walked")
			}
		})
	}
}

// TestSettlers checks how many goroutines settle ahead of the walk: none on
// one core, one on more, two for a light walk; the tests' override wins.
func TestSettlers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		procs, override int
		light           bool
		want            int
	}{
		{procs: 1, want: 0},
		{procs: 1, light: true, want: 0},
		{procs: 2, want: 1},
		{procs: 2, light: true, want: 2},
		{procs: 8, want: 1},
		{procs: 8, light: true, want: 2},
		{procs: 2, light: true, override: -1, want: 0},
		{procs: 1, override: 3, want: 3},
	} {
		runtime.GOMAXPROCS(tc.procs)
		s := &Store{lightWalk: tc.light, settleWorkers: tc.override}
		if got := s.settlers(); got != tc.want {
			t.Errorf("%d cores, light walk %v, override %d: %d settlers, want %d", tc.procs, tc.light, tc.override, got, tc.want)
		}
	}
}
