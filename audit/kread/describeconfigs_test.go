package kread

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// TestTopicConfig: the cleanup.policy of a topic as the broker describes
// it, set or by default.
func TestTopicConfig(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for topic, policy := range map[string]string{"kv-changelog": "compact", "win-changelog": "compact,delete"} {
		if err := c.CreateTopic(topic, 1, map[string]string{"cleanup.policy": policy}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CreateTopic("plain", 1, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := New(Options{Brokers: c.ListenAddrs(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if got, err := cl.TopicConfig(context.Background(), "no-such-topic", "cleanup.policy"); err != nil || len(got) != 0 {
		t.Errorf("no-such-topic: %v %v, want no configs", got, err)
	}
	for topic, want := range map[string]string{"kv-changelog": "compact", "win-changelog": "compact,delete", "plain": "delete"} {
		got, err := cl.TopicConfig(context.Background(), topic, "cleanup.policy")
		if err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		if got["cleanup.policy"] != want {
			t.Errorf("%s: cleanup.policy %q, want %q", topic, got["cleanup.policy"], want)
		}
	}
}
