package javastring

import (
	"bytes"
	"context"
	"flag"
	"math/rand/v2"
	"os/exec"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/lossaudit/lossaudit/schema"
)

var update = flag.Bool("update", false, "rewrite schema/testdata/javastring.txt with Java's outputs")

func skipWithoutJava(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Skipf("java is not on PATH, so Java's decoder cannot be asked (the checked-in table still runs in ./schema): %v", err)
	}
}

func roundtrip(t *testing.T, inputs [][]byte) [][]byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := Roundtrip(ctx, inputs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTable checks that the checked-in table of schema's unit test holds
// exactly what Java prints for its inputs (with -update, it rewrites the
// outputs), and that schema.JavaStringBytes agrees with Java on them.
func TestTable(t *testing.T) {
	skipWithoutJava(t)
	path, err := TablePath()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := ReadTable(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Cases) < 40 {
		t.Fatalf("%s has %d cases, want the handcrafted 40 or more", path, len(tab.Cases))
	}
	var inputs [][]byte
	for _, c := range tab.Cases {
		inputs = append(inputs, c.In)
	}
	java := roundtrip(t, inputs)
	changed := false
	for i := range tab.Cases {
		c := &tab.Cases[i]
		if c.Unknown || !bytes.Equal(c.Out, java[i]) {
			if !*update {
				t.Errorf("%s: input %x: the table says %x, Java says %x (run with -update to regenerate)", c.Name, c.In, c.Out, java[i])
				continue
			}
			c.Out, c.Unknown, changed = java[i], false, true
		}
		if got := schema.JavaStringBytes(c.In); !bytes.Equal(got, java[i]) {
			t.Errorf("%s: JavaStringBytes(%x) = %x, Java says %x", c.Name, c.In, got, java[i])
		}
	}
	if changed {
		if err := tab.Write(path); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %s", path)
	}
}

// TestRandom holds JavaStringBytes to Java on a few thousand seeded random
// byte strings: some from an alphabet dense in lead and continuation bytes,
// some valid UTF-8 with one byte changed or cut short.
func TestRandom(t *testing.T) {
	skipWithoutJava(t)
	rng := rand.New(rand.NewPCG(10, 2))
	var inputs [][]byte
	for range 3000 {
		b := make([]byte, rng.IntN(14))
		for j := range b {
			switch r := rng.IntN(8); {
			case r < 2:
				b[j] = byte('a' + rng.IntN(26))
			case r < 5:
				b[j] = byte(0x80 + rng.IntN(0x40))
			default:
				b[j] = byte(0xC0 + rng.IntN(0x40))
			}
		}
		inputs = append(inputs, b)
	}
	for range 2000 {
		var b []byte
		for range 1 + rng.IntN(4) {
			var r rune
			switch rng.IntN(4) {
			case 0:
				r = rune(rng.IntN(0x80))
			case 1:
				r = rune(0x80 + rng.IntN(0x800-0x80))
			case 2:
				r = rune(0x800 + rng.IntN(0x10000-0x800))
			default:
				r = rune(0x10000 + rng.IntN(0x110000-0x10000))
			}
			if !utf8.ValidRune(r) {
				r = 0xFFFD
			}
			b = utf8.AppendRune(b, r)
		}
		i := rng.IntN(len(b))
		if rng.IntN(2) == 0 {
			b[i] = byte(rng.IntN(256))
		} else {
			b = append(b[:i], b[i+1:]...)
		}
		inputs = append(inputs, b)
	}
	java := roundtrip(t, inputs)
	invalid, bad := 0, 0
	for i, in := range inputs {
		if !utf8.Valid(in) {
			invalid++
		}
		if got := schema.JavaStringBytes(in); !bytes.Equal(got, java[i]) {
			if bad++; bad <= 20 {
				t.Errorf("JavaStringBytes(%x) = %x, Java says %x", in, got, java[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d inputs differ from Java", bad, len(inputs))
	}
	if invalid < len(inputs)/2 {
		t.Errorf("only %d of %d random inputs are invalid UTF-8: the test would not exercise the decoder", invalid, len(inputs))
	}
	t.Logf("%d inputs (%d invalid UTF-8) agree with Java", len(inputs), invalid)
}
