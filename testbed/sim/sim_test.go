package sim

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// newCluster starts an in-process 3-broker kfake cluster.
func newCluster(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func TestDescribeMatchesKafkaStreams(t *testing.T) {
	want, err := os.ReadFile("../../audit/pipeline/testdata/order-abc-3.6.2.txt")
	if err != nil {
		t.Skipf("real describe() output not available: %v", err)
	}
	got := describe(newNames(Scenario{AppID: "app", TopicPrefix: "topic", Output: "joined"}))
	if strings.TrimRight(got, "\n") != strings.TrimRight(string(want), "\n") {
		t.Errorf("describe() differs from Kafka Streams 3.6.2 output:\n%s", got)
	}
}

func TestDemoRun(t *testing.T) {
	brokers := newCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, err := Run(ctx, brokers, DemoScenario(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v", tr.Stats)
	for _, in := range tr.Injected {
		t.Logf("%+v", in)
	}
	t.Logf("rows %d partitions %d counts %+v", len(tr.Rows), len(tr.Partitions), tr.Counts)
}

func TestDebugRows(t *testing.T) {
	brokers := newCluster(t)
	tr, err := Run(context.Background(), brokers, DemoScenario(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tr.Rows {
		t.Logf("%s %s %s %s %d@%d ts=%d exp=%d obs=%d %s", r.Stage, r.Kind, r.Input, r.Key, r.Partition, r.Offset, r.Timestamp, r.ExpectedTS, r.ObservedTS, r.Detail)
	}
}
