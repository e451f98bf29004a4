// Package familye2e runs the Kafka Streams operator families beyond the
// selectKey -> reduce -> leftJoin family (a count by a new key; KTable
// inner and outer joins) against real brokers: one cluster for the package,
// each scenario with its own application id and topics. It is a package of
// its own so that `go test ./...` runs it beside testbed/e2e.
package familye2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// TestOperatorFamilies starts one 3-node cluster and runs, on it, the join
// types (four applications at once), then the count by a new key (whose
// last phase kills and restarts every broker, so it comes last).
func TestOperatorFamilies(t *testing.T) {
	kafka.SkipUnlessAvailable(t)
	c := kafka.StartForTest(t, 3)
	adm, err := kafka.NewAdmin(c.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	t.Run("TableJoinTypes", func(t *testing.T) { tableJoinTypes(t, c, adm) })
	t.Run("StreamStages", func(t *testing.T) { streamStages(t, c, adm) })
	t.Run("StreamFilter", func(t *testing.T) { streamFilter(t, c, adm) })
	t.Run("TableSource", func(t *testing.T) { tableSource(t, c, adm) })
	t.Run("CountSuppress", func(t *testing.T) { countSuppress(t, c, adm) })
	t.Run("AggregateInnerJoin", func(t *testing.T) { aggregateInnerJoin(t, c, adm) })
	t.Run("CountChangelogOnly", func(t *testing.T) { countChangelogOnly(t, c, adm) })
	t.Run("ShardedAudit", func(t *testing.T) { shardedAudit(t, c, adm) })
	t.Run("WindowedCount", func(t *testing.T) { windowedCount(t, c, adm) })
	t.Run("WindowedFinal", func(t *testing.T) { windowedFinal(t, c, adm) })
	t.Run("WindowOnClose", func(t *testing.T) { windowOnClose(t, c, adm) })
	t.Run("StreamBranch", func(t *testing.T) { streamBranch(t, c, adm) })
	t.Run("TableGroupBy", func(t *testing.T) { tableGroupBy(t, c, adm) })
	t.Run("Cogroup", func(t *testing.T) { cogroupPhase(t, c, adm) })
	t.Run("GlobalJoin", func(t *testing.T) { globalJoin(t, c, adm) })
	t.Run("CountByNewKey", func(t *testing.T) { countByNewKey(t, c, adm) })
}

// truthTimeout bounds one read of the truth from the topics.
const truthTimeout = 2 * time.Minute

// lastByOffset reads topic with franz-go (read_committed) and returns each
// key's last record by offset.
func lastByOffset(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, topic string) map[string]*kgo.Record {
	t.Helper()
	ranges, err := adm.Ranges(ctx, true, topic)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*kgo.Record{}
	rctx, cancel := context.WithTimeout(ctx, truthTimeout)
	defer cancel()
	err = kafka.Consume(rctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		if old, ok := m[string(r.Key)]; !ok || r.Offset > old.Offset {
			m[string(r.Key)] = r
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", topic, err)
	}
	return m
}

// quoteList writes ss as a YAML flow list's items: each quoted.
func quoteList(ss []string) string {
	var b strings.Builder
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", s)
	}
	return b.String()
}

// startApp builds and starts the application, waits until it runs, and
// kills it when the test ends (logging its tail when the test failed).
func startApp(ctx context.Context, t *testing.T, o streamsapp.Options) *streamsapp.App {
	t.Helper()
	sa, err := streamsapp.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("streams app log tail:\n%s", sa.LogTail(30))
		}
		_ = sa.Kill()
	})
	if err := sa.Start(); err != nil {
		t.Fatal(err)
	}
	if err := sa.WaitRunning(ctx); err != nil {
		t.Fatal(err)
	}
	return sa
}

// allBrokersDown kills every broker of c, keeps them down a while and
// restarts them, waiting until the cluster is ready again.
func allBrokersDown(ctx context.Context, t *testing.T, c *kafka.Cluster) {
	t.Helper()
	if err := c.KillAll(); err != nil {
		t.Fatal(err)
	}
	// The outage's length is the fault itself (what the application rides
	// through), not a wait for a state: the state waited for is the
	// cluster ready again, and every assertion after it polls.
	time.Sleep(8 * time.Second)
	if err := c.StartAll(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
}
