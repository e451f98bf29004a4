package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// topicConfigs describes a topic's configs; *kread.Client satisfies it.
type topicConfigs interface {
	TopicConfig(ctx context.Context, topic string, names ...string) (map[string]string, error)
}

// checkChangelogPolicies cross-checks the declared reduce type against
// each reduce changelog's cleanup.policy. Kafka Streams creates a window
// store's changelog with compact,delete and a key-value store's with
// compact (WindowedChangelogTopicConfig, UnwindowedUnversionedChangelogTopicConfig);
// the application's topic.* settings or Materialized.withLoggingEnabled can
// override either, so the policy proves nothing on its own and the type is
// declared (pipeline.reduce). But a policy with delete and a finite
// retention (retention.ms or retention.bytes not -1) contradicts a plain
// reduce the audit can check: either the store is windowed, or retention
// deletes keys that the audit would report as lost. Both stop the audit
// (a *config.Error on pipeline.reduce, exit 2). compact,delete with
// infinite retention (a common hardening) deletes nothing and passes. A
// policy that cannot be read is a warning naming the permission: the
// declaration stands.
func checkChangelogPolicies(ctx context.Context, tc topicConfigs, m *topology.Model, warn io.Writer) error {
	for _, st := range m.Stages {
		if st.SourceTopicChangelog() {
			continue // the input topic itself: its retention is the input's
		}
		if st.Window != nil {
			continue // a window store's changelog deletes old windows: windowRetentions
		}
		cfg, err := tc.TopicConfig(ctx, st.ChangelogTopic, "cleanup.policy", "retention.ms", "retention.bytes")
		if ctx.Err() != nil {
			return fmt.Errorf("describing the configs of changelog topic %s: %w", st.ChangelogTopic, context.Cause(ctx))
		}
		var te *kread.TopicConfigError
		if errors.As(err, &te) {
			if warn != nil {
				fmt.Fprintf(warn, "warning: input %s: the cleanup.policy of changelog topic %s (store %s) was not checked against pipeline.reduce: %v\n", st.Input.Name, st.ChangelogTopic, st.Store, te)
			}
			continue
		}
		if err != nil {
			return err
		}
		policy, ok := cfg["cleanup.policy"]
		if !ok || !strings.Contains(policy, "delete") {
			continue
		}
		ms, bytes := cfg["retention.ms"], cfg["retention.bytes"]
		if ms == "-1" && (bytes == "-1" || bytes == "") {
			continue // delete with infinite retention deletes nothing
		}
		if topology.IsTableSource(st.Operator) {
			return &config.Error{Key: fmt.Sprintf("pipeline.inputs[%d].changelog_topic", st.Index), Msg: fmt.Sprintf("input %s: changelog topic %s of table store %s has cleanup.policy=%s with retention.ms=%s and retention.bytes=%s: retention deletes keys from it that the audit would report as lost (set retention.ms=-1 and retention.bytes=-1, or cleanup.policy=compact)",
				st.Input.Name, st.ChangelogTopic, st.Store, policy, orUnset(ms), orUnset(bytes))}
		}
		if st.Operator == topology.KindTableReduce || st.Operator == topology.KindTableAggregate {
			// a grouped table's reduce or aggregate is never windowed
			return &config.Error{Key: fmt.Sprintf("pipeline.inputs[%d].changelog_topic", st.Index), Msg: fmt.Sprintf("input %s: changelog topic %s of the grouped table's %s (store %s) has cleanup.policy=%s with retention.ms=%s and retention.bytes=%s: retention deletes groups from it that the audit would report as lost (set retention.ms=-1 and retention.bytes=-1, or cleanup.policy=compact)",
				st.Input.Name, st.ChangelogTopic, st.Operator, st.Store, policy, orUnset(ms), orUnset(bytes))}
		}
		key, op := "pipeline.reduce", "reduce"
		if st.Operator == topology.KindCount || st.Operator == topology.KindAggregate || st.Operator == topology.KindTableCount || st.Operator == topology.KindCogroup {
			key, op = "pipeline.nodes", string(st.Operator) // declared there
		}
		return &config.Error{Key: key, Msg: fmt.Sprintf("input %s: store %s is audited as a plain %s, but its changelog topic %s has cleanup.policy=%s with retention.ms=%s and retention.bytes=%s; Kafka Streams gives a window store's changelog compact,delete and a key-value store's compact: if the %s is windowed, declare it windowed (not audited yet); if it is plain, retention deletes keys from its changelog that the audit would report as lost (set retention.ms=-1 and retention.bytes=-1, or cleanup.policy=compact)",
			st.Input.Name, st.Store, op, st.ChangelogTopic, policy, orUnset(ms), orUnset(bytes), op)}
	}
	return nil
}

// orUnset is v, or "(unset)" when the broker did not return it.
func orUnset(v string) string {
	if v == "" {
		return "(unset)"
	}
	return v
}
