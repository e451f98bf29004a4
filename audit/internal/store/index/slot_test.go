package index

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPackLens: a slot's lens say the entry's group, klen and vlen exactly
// when they fit, and 0 (read the ent) when not.
func TestPackLens(t *testing.T) {
	tests := []struct {
		group, klen, vlen uint32
		fits              bool
	}{
		{0, 0, 0, true},
		{14, 30, 5, true},
		{4095, 4095 + 255, 2047, true},
		{4096, 4100, 5, false},
		{14, 14 + 256, 5, false},
		{14, 30, 2048, false},
		{1 << 20, 1<<20 + 17, 13, false},
	}
	for _, tt := range tests {
		e := ent{group: tt.group, klen: tt.klen, vlen: tt.vlen}
		l := packLens(e)
		if (l != 0) != tt.fits {
			t.Errorf("%+v: packed %#x, want fits=%v", tt, l, tt.fits)
			continue
		}
		p := &part{ents: []ent{e}}
		g, k, v := p.lens(&slot{w: 1, lens: l})
		if g != tt.group || k != tt.klen || v != tt.vlen {
			t.Errorf("%+v: lens %d %d %d", tt, g, k, v)
		}
	}
}

// TestAddFirstWhateverTheLengths: the first entry per group is kept, with
// its value, through the Writer and through a Batch, whether the entries'
// lengths fit a slot (packLens) or not (long keys, fields after the
// group, values), and when a group's kept entry changes between the two.
func TestAddFirstWhateverTheLengths(t *testing.T) {
	shapes := []struct {
		name                string
		keyLen, tail, vlens int // vlens: the value lengths drawn from [4, 4+vlens)
		bigValEvery         int // every n-th value is 3000 bytes (0: none)
	}{
		{"fits", 12, 8, 13, 0},
		{"long keys", 5000, 8, 13, 0},
		{"long fields", 12, 300, 13, 0},
		{"long values", 12, 8, 3000, 0},
		{"fits, then not, then fits", 12, 8, 13, 3},
	}
	for _, sh := range shapes {
		for _, batched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/batch=%v", sh.name, batched), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(sh.keyLen), uint64(sh.tail)))
				type first struct{ fields, val string }
				want := map[string]first{}
				s := openTemp(t, Options{})
				w := s.NewWriter()
				b := w.Batch()
				for i := range 6000 {
					key := bytes.Repeat([]byte{'k'}, sh.keyLen)
					binary.BigEndian.PutUint16(key, uint16(rng.IntN(200)))
					f := make([]byte, 1+sh.tail)
					f[0] = byte(rng.IntN(2)) // the group
					binary.BigEndian.PutUint64(f[1:], rng.Uint64())
					v := make([]byte, 4+rng.IntN(sh.vlens))
					if sh.bigValEvery > 0 && i%sh.bigValEvery == 0 {
						v = make([]byte, 3000)
					}
					binary.BigEndian.PutUint32(v[len(v)-4:], uint32(i))
					g := fmt.Sprintf("%x/%d", key, f[0])
					if o, ok := want[g]; !ok || string(f) < o.fields {
						want[g] = first{string(f), string(v)}
					}
					var err error
					if batched {
						err = b.AddFirst(key, 0x10, 1, f, v)
					} else {
						err = w.AddFirst(key, 0x10, 1, f, v)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
				n := 0
				err := s.EachKey(func(key []byte, c *Cursor) error {
					for c.Next() {
						n++
						en := c.Entry()
						g := fmt.Sprintf("%x/%d", key, en.Fields[0])
						if o := want[g]; string(en.Fields) != o.fields || string(en.Value) != o.val {
							t.Errorf("group %.20s...: kept fields %x (value of %d bytes), want %x (%d)", g, en.Fields, len(en.Value), o.fields, len(o.val))
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if n != len(want) {
					t.Errorf("%d entries for %d groups", n, len(want))
				}
			})
		}
	}
}
