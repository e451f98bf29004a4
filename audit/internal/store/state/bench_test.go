package state

import (
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// benchKeys is the number of keys of the baseline the benchmarks build
// (STATE_BENCH_KEYS, default 200,000).
func benchKeys() int {
	if n, err := strconv.Atoi(os.Getenv("STATE_BENCH_KEYS")); err == nil && n > 0 {
		return n
	}
	return 200_000
}

func benchKey(b []byte, i int) []byte {
	return binary.BigEndian.AppendUint64(append(b[:0], "order-"...), uint64(i)*0x9e3779b97f4a7c15)
}

func benchVal(b []byte, i, step int) []byte {
	b = append(b[:0], make([]byte, 40)...)
	binary.BigEndian.PutUint64(b, uint64(i))
	binary.BigEndian.PutUint64(b[8:], uint64(step))
	return b
}

// baseline writes a state of n keys in dir, timing stage, commit and close.
func baseline(tb testing.TB, dir string, n int) {
	s, err := Open(dir, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	tx, err := s.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	var k, v []byte
	for i := range n {
		k, v = benchKey(k, i), benchVal(v, i, 0)
		if err := tx.Put(k, v, false); err != nil {
			tb.Fatal(err)
		}
	}
	t1 := time.Now()
	if err := tx.Commit([]byte("cp 0")); err != nil {
		tb.Fatal(err)
	}
	t2 := time.Now()
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("baseline %d keys: stage %v commit %v close %v", n, t1.Sub(t0), t2.Sub(t1), time.Since(t2))
}

// step reads and rewrites share of the n keys, at random, timing each
// phase.
func step(tb testing.TB, dir string, n, touched, no int) {
	t0 := time.Now()
	s, err := Open(dir, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	t1 := time.Now()
	r := s.NewReader()
	tx, err := s.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(no), 1))
	var k, v []byte
	for range touched {
		i := rng.IntN(n)
		k = benchKey(k, i)
		old, _, err := r.Get(k)
		if err != nil || old == nil {
			tb.Fatalf("key %d: %v %v", i, old, err)
		}
		v = benchVal(v, i, no)
		if err := tx.Put(k, v, false); err != nil {
			tb.Fatal(err)
		}
	}
	r.Close()
	t2 := time.Now()
	if err := tx.Commit([]byte("cp " + strconv.Itoa(no))); err != nil {
		tb.Fatal(err)
	}
	t3 := time.Now()
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("step %d of %d keys: open %v check %v commit %v close %v", touched, n, t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), time.Since(t3))
}

// BenchmarkBaseline times writing the state of benchKeys keys.
func BenchmarkBaseline(b *testing.B) {
	for range b.N {
		baseline(b, b.TempDir(), benchKeys())
	}
}

// BenchmarkStep times a step touching 1% of benchKeys keys.
func BenchmarkStep(b *testing.B) {
	dir := b.TempDir()
	n := benchKeys()
	baseline(b, dir, n)
	b.ResetTimer()
	for i := range b.N {
		step(b, dir, n, n/100, i+1)
	}
}
