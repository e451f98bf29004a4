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
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/config"
)

// rec is a record to write: key ("" for null) and timestamp (Unix ms).
type rec struct {
	key string
	ts  int64
}

// writeRecs writes recs to partition 0 of topic, in order.
func writeRecs(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, recs ...rec) {
	t.Helper()
	for _, r := range recs {
		kr := &kgo.Record{Topic: topic, Value: []byte("v"), Timestamp: time.UnixMilli(r.ts)}
		if r.key != "" {
			kr.Key = []byte(r.key)
		}
		if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// commit commits group's offsets on partition 0 of each topic, as the
// application's commits would.
func commit(ctx context.Context, t *testing.T, cl *kgo.Client, group string, offsets map[string]int64) {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	for topic, off := range offsets {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("committing %s: error code %d", rt.Topic, rp.ErrorCode)
			}
		}
	}
}

// TestStreamStage audits per-record stream stages on an in-process
// cluster: the rows name exactly the processed input records whose
// (key, timestamp) the output lacks, each from its own input (merge), an
// extra copy is duplicated, records still in a repartition topic's
// unprocessed tail are pending, and null keys a repartition drops are
// counted, not reported.
func TestStreamStage(t *testing.T) {
	const link = "app-KSTREAM-REPARTITION-0000000002-repartition"
	tests := []struct {
		name   string
		file   string
		inputs []config.Input
		write  func(ctx context.Context, t *testing.T, cl *kgo.Client)
		want   []string
		counts string
	}{
		{
			name: "mapValues and merge", file: "stream-merge", inputs: []config.Input{{Name: "a", Topic: "events-a", KeyFormat: "bytes"}, {Name: "b", Topic: "events-b", KeyFormat: "bytes"}},
			write: func(ctx context.Context, t *testing.T, cl *kgo.Client) {
				writeRecs(ctx, t, cl, "events-a", rec{"k1", 100}, rec{"k2", 200}, rec{"k3", 300})
				writeRecs(ctx, t, cl, "events-b", rec{"k1", 100}, rec{"k4", 400}, rec{"k5", 500})
				// k1@100 is owed twice and written once; k3 twice; k5 is
				// not processed yet, its copy is there already.
				writeRecs(ctx, t, cl, "merged", rec{"k1", 100}, rec{"k2", 200}, rec{"k3", 300}, rec{"k3", 300}, rec{"k4", 400}, rec{"k5", 500})
				commit(ctx, t, cl, "app", map[string]int64{"events-a": 3, "events-b": 2})
			},
			want:   []string{"duplicated sink a k3 events-a[0]@2", "missing sink b k1 events-b[0]@0"},
			counts: "a: 3 audited, 0 pending, 0 null keys; b: 2 audited, 1 pending, 0 null keys",
		},
		{
			name: "repartition(): tail pending, null key dropped", file: "stream-repartition", inputs: []config.Input{{Name: "a", Topic: "events", KeyFormat: "bytes"}},
			write: func(ctx context.Context, t *testing.T, cl *kgo.Client) {
				writeRecs(ctx, t, cl, "events", rec{"k1", 1}, rec{"k2", 2}, rec{"k3", 3}, rec{"", 4}, rec{"k4", 5})
				// k2 was lost before the repartition topic; k3 waits in
				// its unprocessed tail; k4 is processed and lost after it.
				writeRecs(ctx, t, cl, link, rec{"k1", 1}, rec{"k4", 5}, rec{"k3", 3})
				writeRecs(ctx, t, cl, "out", rec{"k1", 1})
				commit(ctx, t, cl, "app", map[string]int64{"events": 5, link: 2})
			},
			want:   []string{"missing sink a k2 events[0]@1", "missing sink a k4 events[0]@4"},
			counts: "a: 4 audited, 0 pending, 1 null keys",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events-a", "events-b", "merged", "events", "out", link))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			brokers := cluster.ListenAddrs()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MaxVersions(kversion.V3_6_0())) // OffsetCommit by topic name
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			tt.write(ctx, t, cl)
			cfg := &config.Config{
				Kafka:    config.Kafka{Brokers: brokers, FetchMaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20, Concurrency: 2, Timeout: 10 * time.Second},
				Store:    config.Store{Dir: filepath.Join(t.TempDir(), "index")},
				Audit:    config.Audit{SettleTimeout: 5 * time.Second},
				Pipeline: config.Pipeline{ApplicationID: "app", TopologyFile: filepath.Join("..", "streams", "topology", "testdata", tt.file+".txt"), Inputs: tt.inputs},
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
			if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			var counts []string
			for _, in := range res.Summary.InputOrder {
				c := res.Summary.Inputs[in]
				counts = append(counts, fmt.Sprintf("%s: %d audited, %d pending, %d null keys", in, c.Audited, c.Pending, c.NullKey))
			}
			if g := strings.Join(counts, "; "); g != tt.counts {
				t.Errorf("counts %q, want %q", g, tt.counts)
			}
			// A stream stage is not sharded: refused before anything is written.
			_, _, _, err = app.Shard(ctx, cfg, app.Options{}, app.ShardOptions{Dir: t.TempDir(), Shards: 2})
			var ce *config.Error
			if !errors.As(err, &ce) || ce.Flag != "shards" || !strings.Contains(ce.Msg, "stream stage") {
				t.Errorf("sharded stream stage: %v, want a config error on --shards naming the stream stage", err)
			}
		})
	}
}
