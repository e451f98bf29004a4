package app

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// fakeConfigs maps a topic to "policy[;retention.ms;retention.bytes]";
// "denied" refuses.
type fakeConfigs map[string]string

func (f fakeConfigs) TopicConfig(_ context.Context, topic string, _ ...string) (map[string]string, error) {
	switch p := f[topic]; p {
	case "denied":
		return nil, &kread.TopicConfigError{Topic: topic, Denied: true, Err: errors.New("TOPIC_AUTHORIZATION_FAILED")}
	case "":
		return map[string]string{}, nil
	default:
		parts := strings.Split(p, ";")
		out := map[string]string{"cleanup.policy": parts[0], "retention.ms": "604800000", "retention.bytes": "-1"}
		if len(parts) == 3 {
			out["retention.ms"], out["retention.bytes"] = parts[1], parts[2]
		}
		return out, nil
	}
}

// TestCheckChangelogPolicies: a reduce changelog whose cleanup.policy has
// delete and a finite retention (a window store's default, or a plain
// store losing keys to retention) stops the audit naming pipeline.reduce,
// the store, the topic and the policy; compact, and delete with infinite
// retention, pass; an unreadable policy is a warning naming the
// permission; a cancelled context stops the check.
func TestCheckChangelogPolicies(t *testing.T) {
	m := &topology.Model{Stages: []topology.Stage{
		{Input: topology.InputSpec{Name: "a"}, Store: "sa", ChangelogTopic: "app-sa-changelog"},
		{Input: topology.InputSpec{Name: "b"}, Store: "sb", ChangelogTopic: "app-sb-changelog"},
	}}
	cases := []struct {
		name, a, b string
		msg, warn  string
	}{
		{"compact", "compact", "compact", "", ""},
		{"not returned", "", "compact", "", ""},
		{"windowed default", "compact", "compact,delete", "input b: store sb is audited as a plain reduce, but its changelog topic app-sb-changelog has cleanup.policy=compact,delete with retention.ms=604800000 and retention.bytes=-1", ""},
		{"delete", "delete", "compact", "input a: store sa is audited as a plain reduce, but its changelog topic app-sa-changelog has cleanup.policy=delete with retention.ms=604800000", ""},
		{"delete with infinite retention", "compact,delete;-1;-1", "delete;-1;-1", "", ""},
		{"infinite time, finite size", "compact,delete;-1;1073741824", "compact", "input a: store sa is audited as a plain reduce, but its changelog topic app-sa-changelog has cleanup.policy=compact,delete with retention.ms=-1 and retention.bytes=1073741824", ""},
		{"denied", "denied", "compact", "", "warning: input a: the cleanup.policy of changelog topic app-sa-changelog (store sa) was not checked against pipeline.reduce: describing the configs of topic app-sa-changelog: not authorized (DESCRIBE_CONFIGS on the topic is needed)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var warn bytes.Buffer
			err := checkChangelogPolicies(context.Background(), fakeConfigs{"app-sa-changelog": tc.a, "app-sb-changelog": tc.b}, m, &warn)
			if tc.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else {
				var ce *config.Error
				if !errors.As(err, &ce) || ce.Key != "pipeline.reduce" || !strings.HasPrefix(ce.Msg, tc.msg) {
					t.Fatalf("error %v, want pipeline.reduce: %s", err, tc.msg)
				}
			}
			if strings.TrimSpace(warn.String()) != tc.warn {
				t.Errorf("warnings %q, want %q", warn.String(), tc.warn)
			}
		})
	}
}

func TestCheckChangelogPoliciesCancelled(t *testing.T) {
	m := &topology.Model{Stages: []topology.Stage{{Input: topology.InputSpec{Name: "a"}, Store: "sa", ChangelogTopic: "app-sa-changelog"}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var warn bytes.Buffer
	err := checkChangelogPolicies(ctx, fakeConfigs{"app-sa-changelog": "denied"}, m, &warn)
	if !errors.Is(err, context.Canceled) || warn.Len() != 0 {
		t.Errorf("error %v, warnings %q; want context.Canceled and no warning", err, warn.String())
	}
}

// TestCheckChangelogPoliciesCount: a count declared in pipeline.nodes
// whose changelog's policy has delete names pipeline.nodes and the count.
func TestCheckChangelogPoliciesCount(t *testing.T) {
	m := &topology.Model{Stages: []topology.Stage{{Input: topology.InputSpec{Name: "w"}, Store: "s", ChangelogTopic: "app-s-changelog", Operator: topology.KindCount}}}
	err := checkChangelogPolicies(context.Background(), fakeConfigs{"app-s-changelog": "compact,delete"}, m, &bytes.Buffer{})
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Key != "pipeline.nodes" || !strings.HasPrefix(ce.Msg, "input w: store s is audited as a plain count, but its changelog topic app-s-changelog has cleanup.policy=compact,delete") ||
		!strings.Contains(ce.Msg, "if the count is windowed") {
		t.Fatalf("error %v, want pipeline.nodes naming the count", err)
	}
}

// TestCheckChangelogPoliciesCogroup: a cogroup's shared changelog with
// delete and a finite retention (a windowed cogroup's default) stops the
// audit naming pipeline.nodes, where the cogroup is declared plain.
func TestCheckChangelogPoliciesCogroup(t *testing.T) {
	st := topology.Stage{Input: topology.InputSpec{Name: "a"}, Store: "agg", ChangelogTopic: "app-agg-changelog", Operator: topology.KindCogroup, Cogroup: "m"}
	st2 := st
	st2.Input.Name = "b"
	m := &topology.Model{Stages: []topology.Stage{st, st2}}
	err := checkChangelogPolicies(context.Background(), fakeConfigs{"app-agg-changelog": "compact,delete"}, m, nil)
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Key != "pipeline.nodes" || !strings.HasPrefix(ce.Msg, "input a: store agg is audited as a plain cogroup, but its changelog topic app-agg-changelog has cleanup.policy=compact,delete") {
		t.Fatalf("error %v, want pipeline.nodes naming the cogroup's changelog", err)
	}
	if err := checkChangelogPolicies(context.Background(), fakeConfigs{"app-agg-changelog": "compact"}, m, nil); err != nil {
		t.Fatal(err)
	}
}

// TestCheckChangelogPoliciesTableGroupBy: a grouped table's reduce or
// aggregate (never windowed) whose changelog deletes by retention names
// the input's changelog_topic and the operator, not pipeline.reduce.
func TestCheckChangelogPoliciesTableGroupBy(t *testing.T) {
	for _, op := range []topology.Kind{topology.KindTableReduce, topology.KindTableAggregate} {
		m := &topology.Model{Stages: []topology.Stage{{Input: topology.InputSpec{Name: "p"}, Index: 0, Store: "s", ChangelogTopic: "app-s-changelog", Operator: op}}}
		err := checkChangelogPolicies(context.Background(), fakeConfigs{"app-s-changelog": "compact,delete"}, m, &bytes.Buffer{})
		var ce *config.Error
		if !errors.As(err, &ce) || ce.Key != "pipeline.inputs[0].changelog_topic" || !strings.HasPrefix(ce.Msg, "input p: changelog topic app-s-changelog of the grouped table's "+string(op)+" (store s) has cleanup.policy=compact,delete") {
			t.Fatalf("%s: error %v, want the changelog topic named", op, err)
		}
		if err := checkChangelogPolicies(context.Background(), fakeConfigs{"app-s-changelog": "compact"}, m, nil); err != nil {
			t.Fatal(err)
		}
	}
}
