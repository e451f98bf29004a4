package streams

import (
	"fmt"
	"testing"

	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// BenchmarkIndexEvidence writes the evidence of 900k records read (300k
// input records over 10k keys and three inputs, 10 updates per key and
// input, each with a changelog and an output record, as the benchmark
// harness's pipeline has) and scans it back, the index's share of an
// audit; it reports the entries stored per record read.
// coalesced=false writes one entry per record (no AddFirst), as the index
// did before entries were coalesced per key.
func BenchmarkIndexEvidence(b *testing.B) {
	keys := make([][]byte, 10_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "cust-%08d", i*7919%len(keys))
	}
	for _, coalesced := range []bool{false, true} {
		b.Run(fmt.Sprintf("coalesced=%v", coalesced), func(b *testing.B) {
			var stored, read int64
			for b.Loop() {
				s, err := index.Open(b.TempDir(), index.Options{})
				if err != nil {
					b.Fatal(err)
				}
				iw := s.NewWriter()
				w := newEntryWriter(iw)
				for i := range 300_000 {
					k := keys[(i/3)%len(keys)]
					x := uint8(i % 3)
					if err := w.input(coalesced, x, k, int64(i), int32(i%6), int64(i), uint64(i)); err != nil {
						b.Fatal(err)
					}
					if coalesced {
						err = w.stage(false, x, k, 0, int64(i), int64(i), false, false, nil)
					} else {
						err = w.w.Add(k, tagChangelog, fmt.Appendf(nil, "%c%016x", x, i), make([]byte, 5))
					}
					if err != nil {
						b.Fatal(err)
					}
					if coalesced {
						err = w.stage(true, 0, k, 0, int64(i), int64(i), false, false, nil)
					} else {
						err = w.w.Add(k, tagOutput, fmt.Appendf(nil, "%c%016x", 0, i), make([]byte, 5))
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if err := iw.Flush(); err != nil {
					b.Fatal(err)
				}
				ev := detect.NewKeyEvidence(3)
				err = s.EachKey(func(key []byte, c *index.Cursor) error {
					ev.Reset(key)
					for c.Next() {
						stored++
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				read += 3 * 300_000
				s.Close()
			}
			b.ReportMetric(float64(stored)/float64(read), "entries/record")
		})
	}
}
