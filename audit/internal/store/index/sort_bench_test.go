package index

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkChunkSort compares the chunk's sort by leading hash
// (comparison sort) with an LSD radix sort, on one 24 MiB chunk's worth of
// entries (about 600k).
func BenchmarkChunkSort(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]ent, 600_000)
	for i := range src {
		src[i] = ent{h: rng.Uint64(), off: uint32(i)}
	}
	work := make([]ent, len(src))
	b.Run("pdqsort", func(b *testing.B) {
		for b.Loop() {
			copy(work, src)
			slices.SortFunc(work, func(a, b ent) int { return cmp.Compare(a.h, b.h) })
		}
	})
	b.Run("radix", func(b *testing.B) {
		tmp := make([]ent, len(src))
		for b.Loop() {
			copy(work, src)
			radixSortByHash(work, tmp)
		}
	})
}

func TestRadixSortByHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 100, 10_000} {
		a := make([]ent, n)
		for i := range a {
			a[i] = ent{h: rng.Uint64() >> uint(rng.IntN(64)), off: uint32(i)}
		}
		want := slices.Clone(a)
		slices.SortStableFunc(want, func(x, y ent) int { return cmp.Compare(x.h, y.h) })
		radixSortByHash(a, make([]ent, n))
		if !slices.Equal(a, want) {
			t.Fatalf("n=%d: radix sort differs from a stable sort", n)
		}
	}
}
