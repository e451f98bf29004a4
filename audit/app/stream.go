package app

import (
	"errors"
	"fmt"

	"github.com/lossaudit/lossaudit/audit/compare"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/config"
)

// prepareStream builds the check of a per-record stream stage
// (p.model.Stream): a comparison of every input with the output, under
// the application's group, by (key, timestamp), with the stage's
// repartition topics as links (compare.Stream). The audit window, a
// custom timestamp and a dead-letter queue are not supported there yet.
func (p *prepared) prepareStream(cfg *config.Config, o Options) error {
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
