package index

import (
	"fmt"
	"testing"
)

// BenchmarkWriteScan writes the evidence of 300k records (100k keys, three
// inputs: input, changelog and output entries) and scans it back, the
// index's share of an audit.
func BenchmarkWriteScan(b *testing.B) {
	keys := make([][]byte, 100_000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "cust-%08d", i*7919%len(keys))
	}
	for b.Loop() {
		s, err := Open(b.TempDir(), Options{})
		if err != nil {
			b.Fatal(err)
		}
		w := s.NewWriter()
		for i := range 300_000 {
			k := keys[i%len(keys)]
			x := uint8(i % 3)
			if err := w.Input(x, k, int64(i), int32(i%6), int64(i), uint64(i)); err != nil {
				b.Fatal(err)
			}
			if err := w.Changelog(x, k, int64(i), int64(i), false, false); err != nil {
				b.Fatal(err)
			}
			if err := w.Output(k, int64(i), int64(i), false, false); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := s.Scan(3, func(*KeyView) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != len(keys) {
			b.Fatalf("scanned %d keys, want %d", n, len(keys))
		}
		s.Close()
	}
}
