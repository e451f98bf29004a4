package app

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// tableInput checks the configuration of an input read by a table source
// (builder.table, toTable), or by one grouped into a count, reduce or
// aggregate (table-count, table-reduce, table-aggregate): its records are audited with their own
// timestamps, the ones KTableSource stores and logs under the default
// timestamp extractor, so timestamp_field, which names another, is
// refused (a null value, a delete, has no field to read it from).
func tableInput(key string, in config.Input, st topology.Stage) error {
	if !(topology.IsTableSource(st.Operator) || topology.IsTableGroupBy(st.Operator)) || in.TimestampField == "" {
		return nil
	}
	return &config.Error{Key: key + ".timestamp_field", Msg: fmt.Sprintf("is %q, but input %s is read by a table source (%s), which lossaudit audits with the records' own timestamps: remove it", in.TimestampField, in.Name, st.Operator)}
}

// missingTableChangelog explains a table source's derived changelog that
// does not exist: under topology.optimization=all (reuse.ktable.source.topics)
// Kafka Streams restores the table from its input topic and creates no
// changelog (TableSourceNode#writeToTopology), which describe() does not
// show.
func missingTableChangelog(i int, topic string, st topology.Stage) error {
	return &config.Error{Key: fmt.Sprintf("pipeline.inputs[%d].changelog_topic", i), Msg: fmt.Sprintf("the changelog topic of input %s's table (store %s), %q, does not exist: is the application running? With topology.optimization=all (or reuse.ktable.source.topics) Kafka Streams restores a builder.table store from its input topic and writes no changelog, which describe() does not show: then set this key to the input topic, %q",
		st.Input.Name, st.Store, topic, st.Input.Topic)}
}

// stepRefusesTables refuses a sharded reconcile step (sharded) of a
// pipeline with a table source (builder.table, toTable) or a table
// groupBy's aggregation (table-count, table-reduce, table-aggregate): the
// sharded audit splits its inputs by partition, not the keys a table's
// check needs whole. A single step checks both: it reads a table source's
// input whole, and every topic of a table groupBy whole
// (docs/reconcile.md).
func stepRefusesTables(m *topology.Model, sharded bool) error {
	if !sharded {
		return nil
	}
	for _, st := range m.Stages {
		if topology.IsTableGroupBy(st.Operator) {
			return &config.Error{Flag: "shards", Msg: fmt.Sprintf("input %s is read by a table whose groupBy (%s) feeds an aggregation (%s, store %s): a sharded reconciliation does not audit it yet (its check needs each input key's last record by offset, whichever shard reads it); run lossaudit reconcile without --shards",
				st.Input.Name, st.GroupBy, st.Operator, st.Store)}
		}
		if topology.IsTableSource(st.Operator) {
			return &config.Error{Flag: "shards", Msg: fmt.Sprintf("input %s is read by a table source (%s, store %s): a sharded reconciliation does not audit table sources yet; run lossaudit reconcile without --shards",
				st.Input.Name, st.Operator, st.Store)}
		}
	}
	return nil
}

// TableChangelogHint is what `lossaudit topology` adds when derived topics
// are missing: for each builder.table input whose changelog is among
// missing, that topology.optimization=all restores the table from its
// input topic and how to declare it; "" otherwise.
func TableChangelogHint(m *topology.Model, missing []string) string {
	var b strings.Builder
	for _, st := range m.Stages {
		if st.Operator == topology.KindTableSource && slices.Contains(missing, st.ChangelogTopic) {
			fmt.Fprintf(&b, "; %s is the changelog of input %s's table source: under topology.optimization=all (or reuse.ktable.source.topics) Kafka Streams restores it from its input topic and creates no changelog, so set pipeline.inputs[%d].changelog_topic to %q",
				st.ChangelogTopic, st.Input.Name, st.Index, st.Input.Topic)
		}
	}
	return b.String()
}
