// Package incremental is the machinery of a scheduled reconciliation that
// every mode shares (docs/design.md, "Incremental steps"): the checkpoint
// of the last committed step and what binds a state to one configuration,
// the per-key state read and staged through the mode's codec, and the
// staged step that the caller commits once its reports are written. The
// state store itself (values, marks, the redo log and its atomic commit)
// is audit/internal/store/state. What a step reads and how its keys are
// judged is the mode's: its step plan, run in the engine's pass.
package incremental

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/internal/store/state"
)

// Header is what every mode's checkpoint holds; a mode embeds it in its
// checkpoint (its JSON fields are the checkpoint's own).
type Header struct {
	Version int   `json:"version"`
	Step    int64 `json:"step"`
	// Pipeline is the description of the configuration the state is
	// bound to.
	Pipeline string    `json:"pipeline"`
	At       time.Time `json:"at"`
	Baseline time.Time `json:"baseline"`
}

// Head returns h (a checkpoint embedding a Header has it).
func (h *Header) Head() *Header { return h }

// Checkpoint is a mode's checkpoint: a JSON object embedding Header.
type Checkpoint interface {
	Head() *Header
}

// Options configure a mode's reconcile step besides the mode's own
// options.
type Options struct {
	// State holds what earlier steps learnt; an empty state makes the
	// step the baseline.
	State *state.Store
	// Describe is configuration text that changes what the state means
	// besides what the mode's options name (key formats, timestamp
	// fields, the sink cluster); a state recorded under another text
	// cannot be continued.
	Describe string
}

// StateMismatchError says the state was recorded for another
// configuration: continuing it would mix two pipelines' facts.
type StateMismatchError struct {
	Dir string
	// Was and Now describe the configurations, for the message.
	Was, Now string
}

func (e *StateMismatchError) Error() string {
	return fmt.Sprintf("the reconciliation state in %s was recorded for another pipeline configuration (was %s; now %s): move that directory away to start a new baseline, or restore the configuration", e.Dir, e.Was, e.Now)
}

// Step is a step being taken: the checkpoint it continues, a consistent
// read of the committed state, and the transaction staging its changes.
type Step struct {
	// Baseline says the state was empty: the step records the baseline.
	Baseline bool
	Reader   *state.Reader
	Tx       *state.Txn
	prev     Header
	st       *state.Store
}

// Begin starts a step on st for the configuration described by describe:
// it reads the last checkpoint into cp (a mode's checkpoint of the given
// version; left as it is for the baseline), refuses a state bound to
// another description, and opens the reader and the transaction. Close
// the step when done.
func Begin(st *state.Store, version int, cp Checkpoint, describe string) (*Step, error) {
	b, err := st.Checkpoint()
	if err != nil {
		return nil, err
	}
	s := &Step{Baseline: b == nil, st: st}
	if b != nil {
		if err := json.Unmarshal(b, cp); err != nil {
			return nil, fmt.Errorf("reconcile: the checkpoint in %s is damaged: %w", st.Dir(), err)
		}
		h := cp.Head()
		if h.Version != version {
			return nil, fmt.Errorf("reconcile: the checkpoint in %s has version %d, this lossaudit reads %d", st.Dir(), h.Version, version)
		}
		if h.Pipeline != describe {
			return nil, &StateMismatchError{Dir: st.Dir(), Was: h.Pipeline, Now: describe}
		}
		s.prev = *h
	}
	s.Reader = st.NewReader()
	if s.Tx, err = st.Begin(); err != nil {
		s.Reader.Close()
		return nil, err
	}
	return s, nil
}

// Next returns the header of the checkpoint this step writes, taken at at.
func (s *Step) Next(version int, describe string, at time.Time) Header {
	h := Header{Version: version, Step: 1, Pipeline: describe, At: at, Baseline: at}
	if !s.Baseline {
		h.Step, h.Baseline = s.prev.Step+1, s.prev.Baseline
	}
	return h
}

// Done ends the step: with a result, it is staged with the checkpoint
// next, to be committed by the caller; with err, it is abandoned.
func (s *Step) Done(res *finding.Result, next Checkpoint, err error) (*Stepped, error) {
	s.Reader.Close()
	if err != nil {
		s.Tx.Abort()
		return nil, err
	}
	b, err := json.Marshal(next)
	if err != nil {
		s.Tx.Abort()
		return nil, fmt.Errorf("reconcile: encoding the checkpoint: %w", err)
	}
	return &Stepped{Result: res, tx: s.Tx, cp: b}, nil
}

// Stepped is a reconcile step whose result is ready and whose state is
// staged, not yet committed: write the reports, then Commit (or Abort).
type Stepped struct {
	// Result lists the findings open after the step (Rows, with
	// FirstSeen) and those it resolved (Resolved).
	Result *finding.Result
	// Held says the step must not be committed: what it read cannot be
	// judged for good yet (a mode's reason). Commit then aborts it, and the
	// next step starts again from the previous checkpoint.
	Held bool
	tx   *state.Txn
	cp   []byte
}

// Commit makes the step's state and checkpoint the store's, atomically;
// a held step is aborted instead.
func (s *Stepped) Commit() error {
	if s.Held {
		s.tx.Abort()
		return nil
	}
	if err := s.tx.Commit(s.cp); err != nil {
		return fmt.Errorf("reconcile: %w", err)
	}
	return nil
}

// Abort forgets the step: the next one starts from the previous checkpoint.
func (s *Stepped) Abort() { s.tx.Abort() }

// Codec is a mode's encoding of what it keeps per key (K).
type Codec[K any] interface {
	// Encode appends k's encoding to b.
	Encode(k *K, b []byte) []byte
	// Decode reads b into k, replacing what k held.
	Decode(b []byte, k *K) error
	// Empty reports whether k holds nothing (the key then has no value).
	Empty(k *K) bool
}

// Keys reads and stages a step's per-key state through a codec.
type Keys[K any] struct {
	codec Codec[K]
	step  *Step
	enc   []byte
	// ahead are the states read ahead for the keys Get is asked next, key
	// i in ahead[i mod len(ahead)] (nil when none are: Get reads the state
	// itself); next is the channel of the key Get is asked next.
	ahead []chan readAhead
	next  int
}

// readAhead is the committed state of one key, read ahead of Get.
type readAhead struct {
	key    []byte
	val    []byte
	marked bool
	err    error
}

// NewKeys returns the per-key state of step s, kept with codec c.
func NewKeys[K any](s *Step, c Codec[K]) *Keys[K] { return &Keys[K]{codec: c, step: s} }

// aheadDepth is how many states each reader reads ahead of Get at most.
const aheadDepth = 256

// aheadReaders is how many goroutines read states ahead. A point read of
// the state costs several times what the check does with the key, so one
// reader kept the check waiting: two keep a second core busy even while
// the check runs.
const aheadReaders = 2

// Ahead returns what the index walk of the check tells which keys come
// next (index.Ahead): while the walk visits a partition's keys, their
// committed states are read by aheadReaders goroutines, each with a
// reader of its own, key i by reader i mod aheadReaders, at most
// aheadDepth ahead each, so that the check uses the second core instead
// of waiting for each read. Get must then be asked for exactly those
// keys, in that order (the check asks once per key it visits); it fails
// otherwise. Nil for the baseline, which has no state to read.
func (ks *Keys[K]) Ahead() index.Ahead {
	if ks.step.Baseline {
		return nil
	}
	return func(keys iter.Seq[[]byte]) func() {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		ins := make([]chan []byte, aheadReaders)
		outs := make([]chan readAhead, aheadReaders)
		for i := range aheadReaders {
			in, out := make(chan []byte, aheadDepth), make(chan readAhead, aheadDepth)
			ins[i], outs[i] = in, out
			r := ks.step.st.NewReader()
			wg.Go(func() {
				defer close(out)
				defer r.Close()
				for key := range in {
					val, marked, err := r.Get(key)
					select {
					case out <- readAhead{key: key, val: val, marked: marked, err: err}:
					case <-stop:
						return
					}
					if err != nil {
						return
					}
				}
			})
		}
		wg.Go(func() { // hands the walk's keys out in turn
			defer func() {
				for _, in := range ins {
					close(in)
				}
			}()
			i := 0
			for key := range keys {
				select {
				case ins[i] <- bytes.Clone(key):
				case <-stop:
					return
				}
				i = (i + 1) % aheadReaders
			}
		})
		ks.ahead, ks.next = outs, 0
		return func() {
			close(stop)
			wg.Wait()
			ks.ahead = nil
		}
	}
}

// Get reads key's committed state into k (left as it is when the key has
// none, and always for the baseline) and returns its encoding and whether
// the key is marked, to hand back to Stage.
func (ks *Keys[K]) Get(key []byte, k *K) (old []byte, marked bool, err error) {
	if ks.step.Baseline {
		return nil, false, nil
	}
	var val []byte
	if ks.ahead != nil {
		a, ok := <-ks.ahead[ks.next]
		ks.next = (ks.next + 1) % len(ks.ahead)
		switch {
		case !ok:
			return nil, false, fmt.Errorf("reconcile: the state of key %s was not read ahead", engine.KeyRef(key))
		case !bytes.Equal(a.key, key):
			return nil, false, fmt.Errorf("reconcile: the state read ahead was key %s's, not %s's", engine.KeyRef(a.key), engine.KeyRef(key))
		}
		val, marked, err = a.val, a.marked, a.err
	} else {
		val, marked, err = ks.step.Reader.Get(key)
	}
	if err != nil {
		return nil, false, err
	}
	if val != nil {
		if err := ks.codec.Decode(val, k); err != nil {
			return nil, false, fmt.Errorf("reconcile: the state of key %s: %w", engine.KeyRef(key), err)
		}
	}
	return val, marked, nil
}

// Stage stages key's new state k and whether it is marked (judged again by
// the next step), when they changed from old and was (what Get returned).
func (ks *Keys[K]) Stage(key []byte, k *K, old []byte, was, marks bool) error {
	var val []byte
	if !ks.codec.Empty(k) {
		ks.enc = ks.codec.Encode(k, ks.enc[:0])
		val = ks.enc
	}
	tx := ks.step.Tx
	if !bytes.Equal(val, old) || (val != nil && marks != was) { // the mark is kept with the value
		if err := tx.Put(key, val, marks); err != nil {
			return err
		}
	}
	if marks != was {
		return tx.Mark(key, marks)
	}
	return nil
}

// Each calls fn with every key that has a state, decoded into k (valid
// only during the call).
func (ks *Keys[K]) Each(k *K, fn func(key []byte, k *K) error) error {
	return ks.step.Reader.Values(func(key, val []byte) error {
		if err := ks.codec.Decode(val, k); err != nil {
			return fmt.Errorf("reconcile: the state of key %s: %w", engine.KeyRef(key), err)
		}
		return fn(key, k)
	})
}

// Marked calls fn with every marked key (valid only during the call).
func (ks *Keys[K]) Marked(fn func(key []byte) error) error { return ks.step.Reader.Marked(fn) }
