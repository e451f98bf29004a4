package app_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/poll"
)

// TestCompareRefusesAShareGroup: compare.group naming a share group
// (KIP-932), which has no committed offsets, is a configuration error
// naming the key, not a comparison that calls every record pending.
func TestCompareRefusesAShareGroup(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "src", "copy"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	share, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("src"), kgo.ShareGroup("sg"))
	if err != nil {
		t.Fatal(err)
	}
	defer share.Close()
	go share.PollFetches(ctx)
	r, err := kread.New(kread.Options{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := poll.Until(ctx, 30*time.Second, 100*time.Millisecond, "the share group", func() bool {
		g, err := r.DescribeGroup(ctx, "sg")
		return err == nil && g.Type == kread.GroupShare
	}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := &config.Config{
		Kafka:   config.Kafka{Brokers: brokers, FetchMaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20, Concurrency: 2, Timeout: 10 * time.Second},
		Store:   config.Store{Dir: filepath.Join(dir, "index")},
		Compare: config.Compare{Match: "record", Group: "sg", Pairs: []config.Pair{{Name: "p", Source: "src", Sink: "copy"}}},
	}
	_, err = app.Compare(ctx, cfg, app.Options{})
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Key != "compare.group" || !strings.Contains(err.Error(), "is a share group") {
		t.Fatalf("compare with a share group: %v, want a configuration error on compare.group", err)
	}
}
