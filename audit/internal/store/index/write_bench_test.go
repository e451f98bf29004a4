package index

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// benchWrite writes records like the Kafka Streams audit does (per record
// one AddFirst of the input's newest candidate, and per changelog and
// output record one AddFirst of the newest), from workers goroutines, then
// flushes and walks the index. keys is the number of distinct keys;
// batched writes through a Batch per worker, closed every 4096 records (as
// the audit closes one per fetch callback).
func benchWrite(b *testing.B, records, keys, workers int, plain, batched bool) {
	rng := rand.New(rand.NewPCG(5, 6))
	type rec struct {
		key []byte
		x   byte
		ts  uint64
	}
	recs := make([]rec, records)
	for i := range recs {
		recs[i] = rec{fmt.Appendf(nil, "customer-%08d", rng.IntN(keys)), byte(i % 3), uint64(i)}
	}
	b.SetBytes(int64(records))
	b.ResetTimer()
	for b.Loop() {
		s, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		w := s.NewWriter()
		var wg sync.WaitGroup
		for g := range workers {
			wg.Go(func() {
				var f [21]byte
				var v [8]byte
				type adder interface {
					Add([]byte, byte, []byte, []byte) error
					AddFirst([]byte, byte, int, []byte, []byte) error
				}
				var a adder = w
				var bt *Batch
				if batched {
					bt = w.Batch()
					a = bt
				}
				n := 0
				for i := g; i < len(recs); i += workers {
					if n++; bt != nil && n%4096 == 0 {
						if err := bt.Close(); err != nil {
							b.Error(err)
							return
						}
						bt = w.Batch()
						a = bt
					}
					r := &recs[i]
					f[0] = r.x
					binary.BigEndian.PutUint64(f[1:], ^r.ts)
					binary.BigEndian.PutUint32(f[9:], ^uint32(i%6))
					binary.BigEndian.PutUint64(f[13:], ^r.ts)
					binary.BigEndian.PutUint64(v[:], r.ts*7)
					var err error
					if plain {
						err = a.Add(r.key, 0x10, f[:], v[:])
					} else {
						err = a.AddFirst(r.key, 0x10, 1, f[:], v[:])
						if err == nil && i%3 == 0 { // a changelog record
							err = a.AddFirst(r.key, 0x30, 1, f[:17], v[:5])
						}
					}
					if err != nil {
						b.Error(err)
						return
					}
				}
				if bt != nil {
					if err := bt.Close(); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if n := flushAndCount(b, s, w); n == 0 {
			b.Fatal("nothing walked")
		}
		s.Close()
	}
}

// BenchmarkWrite measures writing, flushing and walking the evidence of
// 2M records (bytes/s reads as records/s).
func BenchmarkWrite(b *testing.B) {
	const n = 2_000_000
	for _, batched := range []bool{false, true} {
		mode := map[bool]string{false: "", true: "batch-"}[batched]
		b.Run(mode+"newest/keys=n÷30", func(b *testing.B) { benchWrite(b, n, n/30, 4, false, batched) })
		// A state beyond the CPU's caches but within the budget, as at 10M
		// input records on the harness: most probes miss the cache.
		b.Run(mode+"newest/keys=n÷4", func(b *testing.B) { benchWrite(b, n, n/4, 4, false, batched) })
		b.Run(mode+"newest/keys=n", func(b *testing.B) { benchWrite(b, n, n, 4, false, batched) })
		b.Run(mode+"all/keys=n÷30", func(b *testing.B) { benchWrite(b, n, n/30, 4, true, batched) })
	}
}
