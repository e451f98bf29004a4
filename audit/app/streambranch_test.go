package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// TestStreamBranch audits split() on a per-record stream stage on an
// in-process cluster (stream-split-named-4.4.0.txt: topicA split into
// route-big and route-medium, each mapped, merged into joined, and the
// default branch route-rest to another topic): a record is expected in
// the output when the first predicate accepts it, or the first rejects it
// and the second accepts it; records of the default branch are filtered;
// a predicate that cannot be evaluated makes the record uncertain, unless
// an earlier branch took it (KStreamBranch never evaluates the later
// predicates then).
func TestStreamBranch(t *testing.T) {
	dir := t.TempDir()
	for id, js := range map[int]string{1: eventSchema, 2: noAmountEvent} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.avsc", id)), []byte(js), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(amount int64) []byte {
		return avroValue(t, 1, eventSchema, map[string]any{"customer": map[string]any{"string": "c"}, "amount": amount})
	}
	input := []struct {
		key   string
		value []byte
		ts    int64
	}{
		{"k0", ev(150), 1}, // route-big
		{"k1", ev(70), 2},  // route-medium
		{"k2", ev(20), 3},  // route-rest: not audited, filtered
		{"k3", avroValue(t, 2, noAmountEvent, map[string]any{"customer": map[string]any{"string": "c"}}), 4}, // no amount: uncertain
		{"k4", nil, 5},     // a null value: uncertain
		{"k5", ev(300), 6}, // route-big, lost
		{"k6", ev(60), 7},  // route-medium, lost
	}
	tests := []struct {
		name   string
		medium string // route-medium's predicate
		want   []string
		counts string
	}{
		{name: "two branches merged", medium: "value.amount > 50",
			want:   []string{"missing sink a k5 topicA[0]@5", "missing sink a k6 topicA[0]@6"},
			counts: "4 audited, 1 filtered, 2 uncertain"},
		{name: "the second predicate fails where it is evaluated", medium: `value.note == "x"`,
			want:   []string{"missing sink a k5 topicA[0]@5"},
			counts: "2 audited, 0 filtered, 5 uncertain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "topicA", "joined", "others"))
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
			for _, r := range input {
				kr := &kgo.Record{Topic: "topicA", Key: []byte(r.key), Value: r.value, Timestamp: time.UnixMilli(r.ts)}
				if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			writeRecs(ctx, t, cl, "joined", rec{"k0", 1}, rec{"k1", 2})
			writeRecs(ctx, t, cl, "others", rec{"k2", 3})
			commit(ctx, t, cl, "app", map[string]int64{"topicA": int64(len(input))})
			cfg := &config.Config{
				Kafka:  config.Kafka{Brokers: brokers, FetchMaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20, Concurrency: 2, Timeout: 10 * time.Second},
				Store:  config.Store{Dir: filepath.Join(t.TempDir(), "index")},
				Audit:  config.Audit{SettleTimeout: 5 * time.Second},
				Schema: config.Schema{AvscDir: dir},
				Pipeline: config.Pipeline{ApplicationID: "app", Output: "joined",
					TopologyFile: filepath.Join("..", "streams", "topology", "testdata", "stream-split-named-4.4.0.txt"),
					Inputs:       []config.Input{{Name: "a", Topic: "topicA", KeyFormat: "string"}},
					Nodes: []config.Node{{Name: "route-", Kind: "branch", Branches: []config.NodeBranch{
						{Name: "route-big", Predicate: "value.amount > 100"}, {Name: "route-medium", Predicate: tt.medium}, {Name: "route-rest", Default: true}}}}},
			}
			if err := cfg.ValidatePipeline(); err != nil {
				t.Fatal(err)
			}
			res, m, err := app.Run(ctx, cfg, app.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Stream == nil {
				t.Fatal("not audited as a stream stage")
			}
			if w := strings.Join(m.Warnings, "; "); !strings.Contains(w, "the default branch of route- (route-rest) reaches topic others, which is not audited") {
				t.Errorf("warnings %q", w)
			}
			var got []string
			for _, r := range res.Rows {
				got = append(got, fmt.Sprintf("%s %s %s %s %s[%d]@%d", r.Kind, r.Stage, r.Input, r.Key, r.Topic, r.Partition, r.Offset))
			}
			slices.Sort(got)
			if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			c := c0(res)
			if g := fmt.Sprintf("%d audited, %d filtered, %d uncertain", c.Audited, c.Filtered, c.Uncertain); g != tt.counts {
				t.Errorf("counts %q, want %q", g, tt.counts)
			}
			// reconcile (and watch, its steps) refuse a branch as every
			// per-record stream stage: audit only, for now.
			if st, err := app.Reconcile(ctx, cfg, app.Options{}); err == nil {
				st.Close()
				t.Error("reconcile accepted a per-record stream stage with a branch")
			} else if ce := (*config.Error)(nil); !errors.As(err, &ce) || ce.Key != "pipeline.topology_file" {
				t.Errorf("reconcile: %v, want an error naming pipeline.topology_file", err)
			}
		})
	}
}
