package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/schema"
)

// Problem is something about the configured pipeline that would leave an
// audit inconclusive, found before reading the data: Key is the
// configuration key to fix.
type Problem struct {
	Key string
	Msg string
}

// Preflight checks, cheaply, what an audit would otherwise find only
// after reading everything: that each input's rekey and timestamp_field
// paths exist in the writer schema of the input's first decodable value
// (reg may be nil when no input needs schemas), and that the group has
// committed offsets on every input that holds records.
func Preflight(ctx context.Context, cfg *config.Config, c *kread.Client, reg *schema.Registry, m *topology.Model) ([]Problem, error) {
	var out []Problem
	var topics []string
	for _, st := range m.Stages {
		in := cfg.Pipeline.Inputs[st.Index]
		topics = append(topics, in.Topic)
		base := fmt.Sprintf("pipeline.inputs[%d].", st.Index)
		for _, f := range []struct{ key, path string }{{"rekey", in.Rekey}, {"timestamp_field", in.TimestampField}} {
			if f.path == "" || reg == nil {
				continue
			}
			w, err := firstSchema(ctx, c, reg, in.Topic)
			var de *schema.DecodeError
			switch {
			case errors.As(err, &de):
				out = append(out, Problem{Key: "schema", Msg: fmt.Sprintf("input %s: the schema sources cannot give the writer schema of topic %s's values: %v", in.Name, in.Topic, err)})
				continue
			case err != nil:
				return nil, err
			case w == nil:
				continue // no decodable value to check against
			}
			paths, err := reg.FieldPaths(ctx, w.ID)
			if err != nil {
				return nil, err
			}
			if !slices.Contains(paths, f.path) {
				near := reg.NearestFields(ctx, w.ID, f.path, 3)
				out = append(out, Problem{Key: base + f.key, Msg: fmt.Sprintf("input %s: %q is not a field of schema %d, the writer schema of topic %s (nearest: %s)",
					in.Name, f.path, w.ID, in.Topic, strings.Join(near, ", "))})
			}
		}
	}
	group, err := c.GroupOffsets(ctx, m.ApplicationID, topics)
	if err != nil {
		return nil, err
	}
	for _, st := range m.Stages {
		in := cfg.Pipeline.Inputs[st.Index]
		offs, err := c.Offsets(ctx, in.Topic)
		if err != nil {
			return nil, err
		}
		hasRecords, committed := false, false
		for p, of := range offs {
			hasRecords = hasRecords || of.LSO > of.LogStart
			if _, ok := group[kread.TP{Topic: in.Topic, Partition: p}]; ok {
				committed = true
			}
		}
		if hasRecords && !committed {
			out = append(out, Problem{Key: "pipeline.application_id", Msg: fmt.Sprintf("input %s: group %s has no committed offset on topic %s, so an audit could check nothing (list the groups with kafka-consumer-groups.sh --bootstrap-server HOST:PORT --list)",
				in.Name, m.ApplicationID, in.Topic)})
		}
	}
	return out, nil
}
