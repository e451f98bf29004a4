package incremental

import (
	"encoding/json"
	"errors"
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
