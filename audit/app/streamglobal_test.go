package app_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/config"
)

// TestStreamGlobalJoin audits a KStream-GlobalKTable left join declared
// global-left-join on an in-process cluster (the text kafka-streams 4.4.0
// prints): a processed record with a null key is owed (the join forwards
// it), one with a null value is dropped by design and counted, the rows
// name exactly the processed records the output lacks, and reconcile
// refuses the stage as every per-record stream stage.
func TestStreamGlobalJoin(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders", "customers", "joined"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// orders: k1@1, (null key)@2, k2@3 with a null value, k3@4, k4@5 (not
	// processed yet); the join wrote k1 and the null-key record, lost k3.
	writeRecs(ctx, t, cl, "orders", rec{"k1", 1}, rec{"", 2})
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte("k2"), Timestamp: time.UnixMilli(3)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	writeRecs(ctx, t, cl, "orders", rec{"k3", 4}, rec{"k4", 5})
	writeRecs(ctx, t, cl, "customers", rec{"c1", 1})
	writeRecs(ctx, t, cl, "joined", rec{"k1", 1}, rec{"", 2})
	commit(ctx, t, cl, "app", map[string]int64{"orders": 4})
	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: brokers, FetchMaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20, Concurrency: 2, Timeout: 10 * time.Second},
		Store: config.Store{Dir: filepath.Join(t.TempDir(), "index")},
		Audit: config.Audit{SettleTimeout: 5 * time.Second},
		Pipeline: config.Pipeline{ApplicationID: "app", TopologyFile: filepath.Join("..", "streams", "topology", "testdata", "stream-global-leftjoin-4.4.0.txt"),
			Inputs: []config.Input{{Name: "orders", Topic: "orders", KeyFormat: "bytes"}},
			Nodes:  []config.Node{{Name: "KSTREAM-LEFTJOIN-0000000004", Kind: "global-left-join", NullMappedKey: "joined"}}},
	}
	res, m, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Stream == nil {
		t.Fatal("not audited as a stream stage")
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, fmt.Sprintf("%s %s %s %s %s[%d]@%d", r.Kind, r.Stage, r.Input, r.Key, r.Topic, r.Partition, r.Offset))
	}
	slices.Sort(got)
	if want := "missing sink orders k3 orders[0]@3"; strings.Join(got, "; ") != want {
		t.Errorf("rows %q, want %q", got, want)
	}
	c := res.Summary.Inputs["orders"]
	if g := fmt.Sprintf("%d audited, %d pending, %d null keys, %d null values", c.Audited, c.Pending, c.NullKey, c.NullValue); g != "3 audited, 1 pending, 0 null keys, 1 null values" {
		t.Errorf("counts %q", g)
	}
	if st, err := app.Reconcile(ctx, cfg, app.Options{}); err == nil {
		st.Close()
		t.Error("reconcile accepted a per-record stream stage with a GlobalKTable join")
	} else if ce := (*config.Error)(nil); !errors.As(err, &ce) || ce.Key != "pipeline.topology_file" {
		t.Errorf("reconcile: %v, want an error naming pipeline.topology_file", err)
	}
}
