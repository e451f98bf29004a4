package index

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

func openTemp(t *testing.T, o Options) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), o)
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

// scanAll renders every key with its entries, in scan order.
func scanAll(t *testing.T, s *Store) []string {
	t.Helper()
	var out []string
	err := s.EachKey(func(key []byte, c *Cursor) error {
		var b strings.Builder
		fmt.Fprintf(&b, "%q:", key)
		for c.Next() {
			e := c.Entry()
			fmt.Fprintf(&b, " %d/%x=%x", e.Tag, e.Fields, e.Value)
		}
		out = append(out, b.String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScanGroupsEntriesByKeyInTagAndFieldOrder(t *testing.T) {
	s := openTemp(t, Options{})
	w := s.NewWriter()
	add := func(key string, tag byte, fields, val string) {
		t.Helper()
		if err := w.Add([]byte(key), tag, []byte(fields), []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	add("k1", 2, "b", "x")
	add("k2", 1, "a", "")
	add("k1", 1, "z", "y")
	add("k10", 1, "a", "prefix of k1 must not merge with it")
	add("k1", 2, "a", "w")
	add("k1", 2, "a", "dup")
	add("\xff\x00", 0, "", "not UTF-8")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range scanAll(t, s) {
		k, _, _ := strings.Cut(line, ":")
		if _, dup := got[k]; dup {
			t.Errorf("key %s scanned twice", k)
		}
		got[k] = line
	}
	want := map[string]string{
		`"k1"`:       `"k1": 1/7a=79 2/61=647570 2/61=77 2/62=78`,
		`"k2"`:       `"k2": 1/61=`,
		`"k10"`:      `"k10": 1/61=` + fmt.Sprintf("%x", "prefix of k1 must not merge with it"),
		`"\xff\x00"`: `"\xff\x00": 0/=` + fmt.Sprintf("%x", "not UTF-8"),
	}
	if len(got) != len(want) {
		t.Fatalf("scanned %d keys %v, want %d", len(got), got, len(want))
	}
	for k, w := range want {
		// Entries of equal tag and fields keep no particular order between
		// them; k1's two "a" entries are compared as a set.
		g := got[k]
		if k == `"k1"` {
			g = strings.Replace(g, "2/61=77 2/61=647570", "2/61=647570 2/61=77", 1)
		}
		if g != w {
			t.Errorf("key %s:\n got %s\nwant %s", k, g, w)
		}
	}
}

func TestScanLetsTheCallerSkipEntries(t *testing.T) {
	s := openTemp(t, Options{MemoryBytes: 64})
	w := s.NewWriter()
	for i := range 200 {
		if err := w.Add(fmt.Appendf(nil, "k%d", i%20), byte(i%3), fmt.Appendf(nil, "%03d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	keys, firsts := 0, 0
	err := s.EachKey(func(key []byte, c *Cursor) error {
		keys++
		if keys%2 == 0 && c.Next() { // read one entry of every other key, none of the rest
			firsts++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys != 20 || firsts != 10 {
		t.Errorf("scanned %d keys (read the first entry of %d), want 20 (10)", keys, firsts)
	}
}

func TestScanOfAnEmptyIndex(t *testing.T) {
	s := openTemp(t, Options{})
	if got := scanAll(t, s); len(got) != 0 {
		t.Errorf("empty index scanned %v", got)
	}
	w := s.NewWriter()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, s); len(got) != 0 {
		t.Errorf("empty writer scanned %v", got)
	}
}

func TestResetDropsPreviousRun(t *testing.T) {
	s := openTemp(t, Options{})
	w := s.NewWriter()
	for i := range 1000 {
		if err := w.Add(fmt.Appendf(nil, "key-%d", i), 0, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, s); len(got) != 0 {
		t.Errorf("after Reset the scan saw %d keys, want 0", len(got))
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

// TestHugeKeys stores keys far longer than any selected key seen in
// practice (a record may carry a megabyte key) next to short ones, through
// chunks smaller than one key: every key comes back whole.
func TestHugeKeys(t *testing.T) {
	s := openTemp(t, Options{MemoryBytes: 4096})
	w := s.NewWriter()
	sizes := []int{0, 1, 1<<16 - 1, 1 << 16, 100_000, 1 << 20}
	for _, n := range sizes {
		key := bytes.Repeat([]byte{byte(n)}, n)
		for tag := range 2 {
			if err := w.Add(key, byte(tag), []byte{1}, []byte("v")); err != nil {
				t.Fatalf("key of %d bytes: %v", n, err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	err := s.EachKey(func(key []byte, c *Cursor) error {
		if len(key) > 0 && !bytes.Equal(key, bytes.Repeat(key[:1], len(key))) {
			t.Errorf("key of %d bytes came back altered", len(key))
		}
		for c.Next() {
			seen[len(key)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range sizes {
		if seen[n] != 2 {
			t.Errorf("key of %d bytes: %d entries, want 2", n, seen[n])
		}
	}
}

// TestManyRunsMatchOneRun writes the same entries through a tiny budget
// (every partition spilled, and split again when settled) and in memory,
// in different orders and from several goroutines: the scans must agree
// entry for entry.
func TestManyRunsMatchOneRun(t *testing.T) {
	write := func(s *Store, reverse bool, workers int) {
		w := s.NewWriter()
		done := make(chan error, workers)
		for g := range workers {
			go func() {
				for i := range 3000 {
					j := i
					if reverse {
						j = 2999 - i
					}
					if j%workers != g {
						continue
					}
					key := fmt.Appendf(nil, "key-%d", j%700)
					if err := w.Add(key, byte(j%4), fmt.Appendf(nil, "%05d", j), fmt.Appendf(nil, "v%d", j%9)); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
		}
		for range workers {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	one := openTemp(t, Options{})
	write(one, false, 1)
	many := openTemp(t, Options{MemoryBytes: 512})
	write(many, true, 4)
	if n := many.last.spilled.Load(); n < parts-2 {
		t.Errorf("a tiny budget spilled %d partitions, want (almost) all %d", n, parts)
	}
	if n := one.last.spilled.Load(); n != 0 {
		t.Errorf("the default budget spilled %d partitions, want none", n)
	}
	a, b := scanAll(t, one), scanAll(t, many)
	if len(a) != 700 {
		t.Fatalf("scanned %d keys, want 700", len(a))
	}
	if len(b) != len(a) {
		t.Fatalf("many runs scanned %d keys, one run %d", len(b), len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("key %d differs:\none run:   %s\nmany runs: %s", i, a[i], b[i])
		}
	}
}

// TestAddFirstKeepsTheFirstOfEachGroup: entries added with AddFirst, in
// any order and through budgets of any size (in memory, spilled, spilled
// and split), scan back with the same first entry per (key, tag, group) as
// when every one of them is kept, and exactly one entry per group.
func TestAddFirstKeepsTheFirstOfEachGroup(t *testing.T) {
	type e struct {
		key    string
		tag    byte
		fields []byte
		val    []byte
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var all []e
	for i := range 20000 {
		f := make([]byte, 1+8)
		f[0] = byte(rng.IntN(3)) // the group: one byte
		binary.BigEndian.PutUint64(f[1:], rng.Uint64N(1000))
		all = append(all, e{fmt.Sprintf("k%d", rng.IntN(300)), byte(rng.IntN(2)), f, fmt.Appendf(nil, "v%d", i)})
	}
	firsts := func(s *Store) (map[string]string, int) {
		out, n := map[string]string{}, 0
		err := s.EachKey(func(key []byte, c *Cursor) error {
			for c.Next() {
				n++
				en := c.Entry()
				g := fmt.Sprintf("%s/%d/%d", key, en.Tag, en.Fields[0])
				if old, ok := out[g]; !ok || string(en.Fields) < old[:len(en.Fields)] {
					out[g] = string(en.Fields) + string(en.Value)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out, n
	}
	plain := openTemp(t, Options{})
	w := plain.NewWriter()
	for _, x := range all {
		if err := w.Add([]byte(x.key), x.tag, x.fields, x.val); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want, nAll := firsts(plain)
	for _, chunk := range []int64{1 << 20, 64 << 10, 2 << 10} {
		s := openTemp(t, Options{MemoryBytes: chunk})
		w := s.NewWriter()
		for _, i := range rng.Perm(len(all)) {
			x := all[i]
			if err := w.AddFirst([]byte(x.key), x.tag, 1, x.fields, x.val); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		got, n := firsts(s)
		// The value of the first entry is only fixed when its fields are
		// unique; compare the fields.
		for g, wv := range want {
			if gv, ok := got[g]; !ok || gv[:9] != wv[:9] {
				t.Errorf("chunk %d: group %s first %x, want %x", chunk, g, gv, wv)
			}
		}
		if len(got) != len(want) {
			t.Errorf("chunk %d: %d groups, want %d", chunk, len(got), len(want))
		}
		if n != len(want) || s.last.Entries() != int64(n) {
			t.Errorf("budget %d: kept %d entries (Entries %d) for %d groups", chunk, n, s.last.Entries(), len(want))
		}
		t.Logf("budget %d: %d entries stored for %d added (%d groups), %d partitions spilled", chunk, n, nAll, len(want), s.last.spilled.Load())
	}
}

// TestMemoryStaysWithinTheBudget: with every record a key of its own (no
// aggregation helps), the partitions in memory never hold more than the
// budget (plus one partition's growth step) while writing, nor one settled
// partition more than half of it, and every key comes back once.
func TestMemoryStaysWithinTheBudget(t *testing.T) {
	const budget, keys = 256 << 10, 60_000
	s := openTemp(t, Options{MemoryBytes: budget})
	w := s.NewWriter()
	var f [21]byte
	for i := range keys {
		binary.BigEndian.PutUint64(f[1:], uint64(i))
		if err := w.AddFirst(fmt.Appendf(nil, "key-%d", i), 0x10, 1, f[:], []byte("12345678")); err != nil {
			t.Fatal(err)
		}
	}
	n := flushAndCount(t, s, w)
	if n != keys || w.Entries() != keys {
		t.Errorf("walked %d entries (Entries %d), want %d", n, w.Entries(), keys)
	}
	// A partition's slices grow by doubling: one growth step can overshoot.
	if p := w.peakUsed.Load(); p > budget+budget/4 {
		t.Errorf("partitions in memory peaked at %d bytes, budget %d", p, budget)
	}
	if p := w.peakSettled.Load(); p > budget/2+budget/4 {
		t.Errorf("a settled partition held %d bytes, half the budget is %d", p, budget/2)
	}
	t.Logf("peak in memory %d, peak settled %d, budget %d, %d partitions spilled", w.peakUsed.Load(), w.peakSettled.Load(), budget, w.spilled.Load())
}

// flushAndCount flushes w and counts the entries a walk of s sees.
func flushAndCount(tb testing.TB, s *Store, w *Writer) int {
	tb.Helper()
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	n := 0
	if err := s.EachKey(func(key []byte, c *Cursor) error {
		for c.Next() {
			n++
		}
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return n
}
