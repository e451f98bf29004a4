package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/lossaudit/lossaudit/audit/compare"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams/predicate"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/schema"
)

// prepareStream builds the check of a per-record stream stage
// (p.model.Stream): a comparison of every input with the output, under
// the application's group, by (key, timestamp), with the stage's
// repartition topics as links (compare.Stream), and the declared filters
// and re-keys of each input's path replayed on its records (replay). The
// audit window, a custom timestamp and a dead-letter queue are not
// supported there yet.
func (p *prepared) prepareStream(ctx context.Context, cfg *config.Config, o Options) error {
	sp := p.model.Stream
	switch {
	case !cfg.Window.From.IsZero() || !cfg.Window.To.IsZero():
		return &config.Error{Key: "window.from", Msg: "a per-record stream stage is audited on whole topics: an audit window is not supported there yet"}
	case cfg.Pipeline.DeadLetterTopic != "":
		return &config.Error{Key: "pipeline.dead_letter_topic", Msg: "is not supported for a per-record stream stage yet"}
	}
	st := &compare.Stream{}
	var pairs []compare.Pair
	links := map[string]bool{}
	for i, s := range p.model.Stages {
		in := cfg.Pipeline.Inputs[i]
		if in.TimestampField != "" {
			return &config.Error{Key: fmt.Sprintf("pipeline.inputs[%d].timestamp_field", i), Msg: "a per-record stream stage is checked by the records' own timestamps, which the output keeps; a custom timestamp extractor is not supported there yet"}
		}
		pairs = append(pairs, compare.Pair{Name: s.Input.Name, Source: s.Input.Topic, Sink: p.model.Output})
		st.DropNullKey = append(st.DropNullKey, sp.Inputs[i].DropNullKey)
		st.DropNullValue = append(st.DropNullValue, sp.Inputs[i].DropNullValue)
		r, err := replay(ctx, fmt.Sprintf("pipeline.inputs[%d]", i), in, sp.Inputs[i], p.reg)
		if err != nil {
			return err
		}
		if r != nil && st.Replay == nil {
			st.Replay = make([]compare.Replay, len(p.model.Stages))
		}
		if r != nil {
			st.Replay[i] = r
		}
		for _, l := range sp.Inputs[i].Links {
			if !links[l] {
				links[l] = true
				st.Links = append(st.Links, l)
			}
		}
	}
	store, err := index.Open(cfg.Store.Dir, index.Options{})
	if err != nil {
		return err
	}
	p.closes = append(p.closes, store.Close)
	p.stream = &compare.Options{
		Source: p.client, Sink: p.client, Store: store, Pairs: pairs,
		Match: compare.StreamMatch, Identify: compare.StreamIdentify,
		Group: p.model.ApplicationID, Stream: st,
		SettleTimeout: cfg.Audit.SettleTimeout, Progress: o.Progress,
	}
	return nil
}

// streamRunError turns what the user can fix among a stream stage's
// errors into a *config.Error: a topic that does not exist.
func streamRunError(p *prepared, err error) error {
	var mt *engine.MissingTopicError
	if errors.As(err, &mt) {
		switch mt.Role {
		case engine.RoleSource:
			return &config.Error{Key: fmt.Sprintf("pipeline.inputs[%d].topic", mt.Index), Msg: fmt.Sprintf("topic %q does not exist", mt.Topic)}
		case engine.RoleSink:
			return &config.Error{Key: "pipeline.output", Msg: fmt.Sprintf("topic %q does not exist", mt.Topic)}
		}
	}
	return runError(p.model, err)
}

// replay builds the replay of an input's path (compare.Replay): its ops in
// path order on each record, the value decoded once (schema.DecodePlain)
// for the filters' predicates, the new key taken with the rekey field path
// as the table family's selectKey takes it (the bytes Java's String serde
// writes). nil when the path has no filter and no re-key. A record whose
// value cannot be decoded, or whose predicate or key cannot be evaluated,
// is compare.Uncertain; schema sources that cannot answer at all stop the
// run. When branches part the input's paths (si.Alternatives), each path
// is replayed in turn (pick): they are exclusive, so the first that
// passes the record is the one it took.
func replay(ctx context.Context, key string, in config.Input, si topology.StreamInput, reg *schema.Registry) (compare.Replay, error) {
	if !si.Filtered() && si.RekeyNode == "" {
		return nil, nil
	}
	if reg == nil {
		return nil, &config.Error{Key: "schema", Msg: fmt.Sprintf("input %s has a declared filter or re-key on its path, which reads the Avro value: set schema.registry_url, schema.schemas_topic or schema.avsc_dir", in.Name)}
	}
	type step struct {
		op   topology.StreamOpKind
		pred *predicate.Predicate
	}
	var alts [][]step
	var keyEx *schema.Extractor
	for _, ops := range si.Paths() {
		var steps []step
		for _, op := range ops {
			s := step{op: op.Op}
			switch op.Op {
			case topology.OpFilter:
				pr, err := predicate.Compile(op.Predicate, op.Negate)
				if err != nil { // validated with the configuration
					return nil, fmt.Errorf("predicate of %s: %w", op.Node, err)
				}
				s.pred = pr
			case topology.OpRekey:
				if keyEx == nil {
					var err error
					if keyEx, err = reg.Extractor(in.Rekey); err != nil {
						return nil, &config.Error{Key: key + ".rekey", Msg: err.Error()}
					}
				}
			}
			steps = append(steps, s)
		}
		alts = append(alts, steps)
	}
	// fail sorts an error of the schema sources: one record's problem
	// makes it uncertain, sources that cannot answer stop the run.
	fail := func(err error) ([]byte, compare.Fate, error) {
		var de *schema.DecodeError
		if errors.As(err, &de) {
			return nil, compare.Uncertain, err
		}
		return nil, compare.ReplayFailed, err
	}
	// decodedValue is a record's value, decoded once for all its paths.
	type decodedValue struct {
		value   any
		decoded bool
	}
	// path replays one path on rec.
	path := func(rec *kread.Record, steps []step, dv *decodedValue) ([]byte, compare.Fate, error) {
		k := rec.Key
		for _, s := range steps {
			switch s.op {
			case topology.OpFilter:
				if rec.Value == nil {
					return nil, compare.Uncertain, errors.New("a null value: the predicate is user code")
				}
				if !dv.decoded {
					v, err := reg.DecodePlain(ctx, rec.Value)
					if err != nil {
						return fail(err)
					}
					dv.value, dv.decoded = v, true
				}
				pk := k // the key as Java's String serde gives it to the predicate
				if pk != nil {
					pk = schema.JavaStringBytes(pk)
				}
				ok, err := s.pred.Eval(pk, dv.value)
				if err != nil {
					return nil, compare.Uncertain, err
				}
				if !ok {
					return nil, compare.FilteredOut, nil
				}
			case topology.OpRekey:
				if rec.Value == nil {
					return nil, compare.Uncertain, errors.New("a null value: the key selector is user code")
				}
				nk, isNull, err := keyEx.ExtractContext(ctx, rec.Value)
				if err != nil {
					return fail(err)
				}
				k = []byte(nk)
				if isNull {
					k = nil
				}
			case topology.OpDropNullKey:
				if k == nil {
					return nil, compare.DroppedNullKey, nil
				}
			case topology.OpDropNullValue:
				if rec.Value == nil {
					return nil, compare.DroppedNullValue, nil
				}
			case topology.OpDropNull:
				if k == nil {
					return nil, compare.DroppedNullKey, nil
				}
				if rec.Value == nil {
					return nil, compare.DroppedNullValue, nil
				}
			}
		}
		return k, compare.Passes, nil
	}
	if len(alts) == 1 {
		return func(rec *kread.Record) ([]byte, compare.Fate, error) {
			return path(rec, alts[0], &decodedValue{})
		}, nil
	}
	return func(rec *kread.Record) ([]byte, compare.Fate, error) {
		dv := &decodedValue{}
		return pick(func(i int) ([]byte, compare.Fate, error) { return path(rec, alts[i], dv) }, len(alts))
	}, nil
}

// pick combines the replays of n exclusive paths (run(i) replays path i):
// the first that passes the record gives its key. Else the record is
// uncertain when one path could not be evaluated (the application would
// have stopped at the same predicate, or dropped the record by its
// processing exception handler), dropped for a null key or value when a
// path dropped it so (it took that path: every branch predicate before
// the drop accepted it), and filtered otherwise. A path that fails stops
// the run.
func pick(run func(i int) ([]byte, compare.Fate, error), n int) ([]byte, compare.Fate, error) {
	fate, why := compare.FilteredOut, error(nil)
	for i := 0; i < n; i++ {
		k, f, err := run(i)
		switch f {
		case compare.Passes, compare.ReplayFailed:
			return k, f, err
		case compare.Uncertain:
			fate, why = f, err
		case compare.DroppedNullKey, compare.DroppedNullValue:
			if fate == compare.FilteredOut {
				fate = f
			}
		}
	}
	return nil, fate, why
}
