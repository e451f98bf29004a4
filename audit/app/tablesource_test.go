package app

import (
	"errors"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// TestTableSourceConfig: what the configuration may say of an input read
// by a table source, and the words of the errors that concern one.
func TestTableSourceConfig(t *testing.T) {
	table := topology.Stage{Input: topology.InputSpec{Name: "profiles", Topic: "profiles"}, Index: 0, Operator: topology.KindTableSource,
		Store: "profiles-STATE-STORE-0000000000", ChangelogTopic: "app-profiles-STATE-STORE-0000000000-changelog"}
	reduce := topology.Stage{Input: topology.InputSpec{Name: "clicks", Topic: "clicks"}, Index: 1, Operator: topology.KindReduce, ChangelogTopic: "app-r-changelog"}
	m := &topology.Model{ApplicationID: "app", Stages: []topology.Stage{table, reduce}}
	key := func(err error) string {
		var ce *config.Error
		if !errors.As(err, &ce) {
			return ""
		}
		return ce.Key
	}

	if err := tableInput("pipeline.inputs[0]", config.Input{Name: "profiles", TimestampField: "ts"}, table); key(err) != "pipeline.inputs[0].timestamp_field" {
		t.Errorf("timestamp_field on a table source: %v", err)
	}
	if err := tableInput("pipeline.inputs[1]", config.Input{Name: "clicks", TimestampField: "ts"}, reduce); err != nil {
		t.Errorf("timestamp_field on a reduce: %v", err)
	}
	if err := stepRefusesTables(m, false); err != nil {
		t.Errorf("a step of a pipeline with a table source: %v", err)
	}
	var ce *config.Error
	if err := stepRefusesTables(m, true); !errors.As(err, &ce) || ce.Flag != "shards" || !strings.Contains(err.Error(), "without --shards") {
		t.Errorf("a sharded step of a pipeline with a table source: %v", err)
	}
	if err := stepRefusesTables(&topology.Model{Stages: []topology.Stage{reduce}}, true); err != nil {
		t.Errorf("a sharded step without a table source: %v", err)
	}
	err := runError(m, &engine.MissingTopicError{Topic: table.ChangelogTopic, Role: engine.RoleChangelog, Index: 0})
	if key(err) != "pipeline.inputs[0].changelog_topic" || !strings.Contains(err.Error(), `set this key to the input topic, "profiles"`) {
		t.Errorf("a missing table changelog: %v", err)
	}
	if h := TableChangelogHint(m, []string{table.ChangelogTopic, "app-r-changelog"}); !strings.Contains(h, `pipeline.inputs[0].changelog_topic to "profiles"`) || strings.Contains(h, "clicks") {
		t.Errorf("hint %q", h)
	}
}

// TestTableGroupByConfig: an input grouped by a table groupBy into a count,
// reduce or aggregate refuses timestamp_field; reconcile and watch check
// it, a sharded reconciliation refuses it.
func TestTableGroupByConfig(t *testing.T) {
	key := func(err error) string {
		var ce *config.Error
		if errors.As(err, &ce) {
			return ce.Key
		}
		return ""
	}
	for _, op := range []topology.Kind{topology.KindTableCount, topology.KindTableReduce, topology.KindTableAggregate} {
		st := topology.Stage{Input: topology.InputSpec{Name: "profiles", Topic: "profiles", Rekey: "region"}, Operator: op,
			GroupBy: "KTABLE-SELECT-0000000002", Store: "counts", RepartitionTopic: "app-counts-repartition", ChangelogTopic: "app-counts-changelog"}
		if err := tableInput("pipeline.inputs[0]", config.Input{Name: "profiles", TimestampField: "ts"}, st); key(err) != "pipeline.inputs[0].timestamp_field" {
			t.Errorf("%s: timestamp_field on a table groupBy: %v", op, err)
		}
		m := &topology.Model{Stages: []topology.Stage{st}}
		if err := stepRefusesTables(m, false); err != nil {
			t.Errorf("%s: a step of a table groupBy: %v", op, err)
		}
		var ce *config.Error
		err := stepRefusesTables(m, true)
		if !errors.As(err, &ce) || ce.Flag != "shards" || !strings.Contains(err.Error(), "KTABLE-SELECT-0000000002") || !strings.Contains(err.Error(), string(op)) ||
			!strings.Contains(err.Error(), "store counts") || !strings.Contains(err.Error(), "without --shards") {
			t.Errorf("%s: a sharded step of a table groupBy: %v", op, err)
		}
	}
}
