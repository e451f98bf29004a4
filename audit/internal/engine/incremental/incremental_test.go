package incremental

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/store/state"
)

// modeCheckpoint is a mode's checkpoint embedding the header.
type modeCheckpoint struct {
	Header
	Extra string `json:"extra"`
}

// counter is a per-key state: a count, empty at zero.
type counter struct{ n byte }

type counterCodec struct{}

func (counterCodec) Encode(k *counter, b []byte) []byte { return append(b, k.n) }
func (counterCodec) Decode(b []byte, k *counter) error {
	if len(b) != 1 {
		return errors.New("bad length")
	}
	k.n = b[0]
	return nil
}
func (counterCodec) Empty(k *counter) bool { return k.n == 0 }

// step takes one step on st: every key in add is counted add[key] more
// (0 forgets it), and marked while its count is odd; commit or abort.
func step(t *testing.T, st *state.Store, desc string, at time.Time, add map[string]byte, commit bool) *modeCheckpoint {
	t.Helper()
	var last modeCheckpoint
	s, err := Begin(st, 1, &last, desc)
	if err != nil {
		t.Fatal(err)
	}
	ks := NewKeys[counter](s, counterCodec{})
	for key, n := range add {
		var k counter
		old, was, err := ks.Get([]byte(key), &k)
		if err != nil {
			t.Fatal(err)
		}
		k.n += n
		if n == 0 {
			k.n = 0
		}
		if err := ks.Stage([]byte(key), &k, old, was, k.n%2 == 1); err != nil {
			t.Fatal(err)
		}
	}
	next := &modeCheckpoint{Header: s.Next(1, desc, at), Extra: "x"}
	sp, err := s.Done(&finding.Result{}, next, nil)
	if err != nil {
		t.Fatal(err)
	}
	if commit {
		if err := sp.Commit(); err != nil {
			t.Fatal(err)
		}
	} else {
		sp.Abort()
	}
	return next
}

// TestSteps takes steps through the generic machinery: the checkpoint's
// header counts steps from the baseline, an aborted step changes nothing,
// values and marks are staged only through the codec, and a state bound to
// another configuration or checkpoint version is refused.
func TestSteps(t *testing.T) {
	st, err := state.Open(t.TempDir(), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if cp := step(t, st, "p", t0, map[string]byte{"a": 1, "b": 2}, true); cp.Step != 1 || !cp.Baseline.Equal(t0) {
		t.Fatalf("baseline: %+v", cp)
	}
	step(t, st, "p", t0.Add(time.Minute), map[string]byte{"a": 5}, false) // aborted
	cp := step(t, st, "p", t0.Add(2*time.Minute), map[string]byte{"a": 2, "b": 0}, true)
	if cp.Step != 2 || !cp.Baseline.Equal(t0) || !cp.At.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("second step: %+v", cp)
	}
	r := st.NewReader()
	defer r.Close()
	if val, marked, err := r.Get([]byte("a")); err != nil || string(val) != "\x03" || !marked {
		t.Errorf("a = %q marked %v (%v), want 3, marked", val, marked, err)
	}
	if val, marked, err := r.Get([]byte("b")); err != nil || val != nil || marked {
		t.Errorf("b = %q marked %v (%v), want forgotten", val, marked, err)
	}
	b, err := st.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil || raw["version"] != 1.0 || raw["pipeline"] != "p" || raw["extra"] != "x" || raw["step"] != 2.0 {
		t.Errorf("checkpoint %s, want the header's fields flat with the mode's", b)
	}

	var last modeCheckpoint
	_, err = Begin(st, 1, &last, "other")
	var me *StateMismatchError
	if !errors.As(err, &me) || me.Was != "p" || me.Now != "other" || !strings.Contains(err.Error(), "move that directory away") {
		t.Errorf("another configuration: %v, want a StateMismatchError", err)
	}
	if _, err = Begin(st, 2, &last, "p"); err == nil || !strings.Contains(err.Error(), "has version 1, this lossaudit reads 2") {
		t.Errorf("another version: %v", err)
	}
}

// TestReadAhead reads states ahead of Get (Keys.Ahead) over a committed
// state: Get returns each key's state in the walk's order whichever reader
// read it, keys without a state read as none, a Get for another key than
// the walk's next fails naming both, and stopping at any point (the walk
// done, half done, or never started) returns without leaving a goroutine
// blocked.
func TestReadAhead(t *testing.T) {
	st, err := state.Open(t.TempDir(), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	add := map[string]byte{}
	const n = 3*aheadDepth*aheadReaders + 7 // more than the readers hold at once
	for i := range n {
		if i%5 != 0 { // every fifth key has no state
			add[fmt.Sprintf("k%05d", i)] = byte(i%250 + 1)
		}
	}
	step(t, st, "p", t0, add, true)
	walk := func(stopAt int) iter.Seq[[]byte] {
		return func(yield func([]byte) bool) {
			for i := range n {
				if i == stopAt || !yield([]byte(fmt.Sprintf("k%05d", i))) {
					return
				}
			}
		}
	}
	for _, tc := range []struct {
		name  string
		asks  int // Gets before stopping
		wrong int // the ask that names another key (-1: none)
	}{
		{"every key", n, -1},
		{"half the keys", n / 2, -1},
		{"none", 0, -1},
		{"a wrong key", n, 2*aheadReaders + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ks := beginAhead(t, st, walk(-1))
			for i := range tc.asks {
				key := fmt.Sprintf("k%05d", i)
				if i == tc.wrong {
					_, _, err := ks.Get([]byte("zz"), &counter{})
					if err == nil || !strings.Contains(err.Error(), "the state read ahead was key") {
						t.Fatalf("Get of another key than %s: %v, want an error", key, err)
					}
					return
				}
				var k counter
				old, marked, err := ks.Get([]byte(key), &k)
				if err != nil {
					t.Fatalf("Get %s: %v", key, err)
				}
				want := add[key]
				if k.n != want || (want == 0) != (old == nil) || marked != (want%2 == 1) {
					t.Fatalf("Get %s = %d (encoded %q, marked %v), want %d", key, k.n, old, marked, want)
				}
			}
		})
	}
	t.Run("a walk shorter than the asks", func(t *testing.T) {
		ks := beginAhead(t, st, walk(3))
		for i := range 3 {
			if _, _, err := ks.Get([]byte(fmt.Sprintf("k%05d", i)), &counter{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := ks.Get([]byte("k00003"), &counter{}); err == nil || !strings.Contains(err.Error(), "was not read ahead") {
			t.Fatalf("Get past the walk: %v, want 'was not read ahead'", err)
		}
	})
}

// beginAhead begins a step on st whose states are read ahead for the keys
// of walk; the test's cleanup stops the reading and abandons the step.
func beginAhead(t *testing.T, st *state.Store, walk iter.Seq[[]byte]) *Keys[counter] {
	t.Helper()
	var last modeCheckpoint
	s, err := Begin(st, 1, &last, "p")
	if err != nil {
		t.Fatal(err)
	}
	ks := NewKeys[counter](s, counterCodec{})
	stop := ks.Ahead()(walk)
	t.Cleanup(func() {
		stop()
		s.Reader.Close()
		s.Tx.Abort()
	})
	return ks
}
