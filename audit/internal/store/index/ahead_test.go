package index

import (
	"errors"
	"fmt"
	"iter"
	"sync"
	"testing"
)

// TestEachKeyAheadTellsTheKeysInWalkOrder: ahead, ranging over each
// partition's keys on a goroutine of its own, sees exactly the keys fn
// visits, in the same order, in partitions kept in memory and spilled
// (also beyond half the budget each, which settling splits); done is called once per partition told,
// also when fn stops the walk.
func TestEachKeyAheadTellsTheKeysInWalkOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget int64
		keys   int
		stopAt int // fn fails at this key (-1: never)
	}{
		{"in memory", 64 << 20, 3000, -1},
		{"spilled", 64 << 10, 20000, -1},
		{"half the budget per settled partition exceeded", 8 << 10, 12000, -1},
		{"stopped early", 8 << 10, 12000, 777},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t, Options{MemoryBytes: tc.budget})
			w := s.NewWriter()
			for i := range tc.keys {
				if err := w.Add(fmt.Appendf(nil, "key-%d", i), 0x10, []byte{1}, []byte("v")); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var told, visited []string
			told2, dones := 0, 0
			ahead := func(keys iter.Seq[[]byte]) func() {
				told2++
				done := make(chan struct{})
				go func() {
					defer close(done)
					for k := range keys {
						mu.Lock()
						told = append(told, string(k))
						mu.Unlock()
					}
				}()
				return func() { <-done; dones++ }
			}
			stop := errors.New("stop")
			err := s.EachKeyAhead(ahead, func(key []byte, c *Cursor) error {
				if len(visited) == tc.stopAt {
					return stop
				}
				visited = append(visited, string(key))
				return nil
			})
			if tc.stopAt >= 0 {
				if !errors.Is(err, stop) {
					t.Fatalf("walk: %v, want the stop", err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if dones != told2 {
				t.Errorf("%d partitions told, %d done", told2, dones)
			}
			if tc.stopAt < 0 && len(visited) != tc.keys {
				t.Errorf("visited %d keys, want %d", len(visited), tc.keys)
			}
			// ahead may have been told a stopped partition's remaining keys.
			if len(told) < len(visited) {
				t.Fatalf("told %d keys, visited %d", len(told), len(visited))
			}
			for i := range visited {
				if told[i] != visited[i] {
					t.Fatalf("key %d: told %q, visited %q", i, told[i], visited[i])
				}
			}
			if w.spilled.Load() == 0 && tc.budget < 1<<20 {
				t.Errorf("nothing spilled with a budget of %d", tc.budget)
			}
		})
	}
}
