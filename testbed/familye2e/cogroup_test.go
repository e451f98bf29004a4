package familye2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// cogroupAgg and cogroupStore find, in the describe() text of the
// cogroup application (TOPOLOGY=cogroup), its aggregates and their store.
var (
	cogroupAgg   = regexp.MustCompile(`Processor: (COGROUPKSTREAM-AGGREGATE-\d{10}) `)
	cogroupStore = regexp.MustCompile(`stores: \[(COGROUPKSTREAM-AGGREGATE-STATE-STORE-\d{10})\]`)
)

// cogroupPhase runs the cogroup application of the testbed (input direct
// grouped on its own key, input rekeyed grouped by its value through a
// repartition topic, one aggregate, toStream to the output; exactly-once
// v2) on real brokers: two applications at once, clean and lossy, then one
// clean while all three brokers are killed and restarted mid-load. Once the application has
// committed everything at both hops and stopped, lossaudit audit, with both
// aggregates declared cogroup, must report exactly what the truth read
// from the topics with franz-go shows, and that must be exactly what was
// injected: nothing, or the changelog lagging behind the lost newest
// update of two keys of the direct input, and every output record of one
// key lost (owed to both inputs). A reconcile baseline reports the audit's rows.
func cogroupPhase(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute) // the pair, then the outage run
	t.Cleanup(cancel)
	t.Run("clean and lossy", func(t *testing.T) {
		t.Run("clean", func(t *testing.T) {
			t.Parallel()
			cogroupScenario(ctx, t, c, adm, "cogroup-clean", false, nil)
		})
		t.Run("lossy", func(t *testing.T) {
			t.Parallel()
			cogroupScenario(ctx, t, c, adm, "cogroup-lossy", true, nil)
		})
	})
	// After the other two, not beside them: their own admin calls
	// (creating topics, reading the truth) do not ride through an outage.
	t.Run("all brokers down", func(t *testing.T) {
		cogroupScenario(ctx, t, c, adm, "cogroup-outage", false, func() { allBrokersDown(ctx, t, c) })
	})
}

// cogroupScenario runs one cogroup application as group: 600 records per
// input over 20 keys (the rekeyed input's key is its value, so the record
// key is the group key), then audits it. With lossy, the direct input also
// gets one "drop:" record (skipped by the application) for word-3 and
// word-7, newer than every other record of those keys, followed on every
// partition by a trailing round of older records; and the application
// drops every output record of word-5. fault, when set, runs once half of
// the records are produced, while the rest are.
func cogroupScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, lossy bool, fault func()) {
	direct, rekeyed, out := group+"-direct", group+"-rekeyed", group+"-out"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: direct, Partitions: 3}, kafka.TopicSpec{Name: rekeyed, Partitions: 3}, kafka.TopicSpec{Name: out, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	var dropOut, dropIn []string
	if lossy {
		dropOut, dropIn = []string{"word-5"}, []string{"word-3", "word-7"}
	}
	dir := t.TempDir()
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{direct, rekeyed},
		Output: out, Dir: dir, Cogroup: true, DropBeforeOutput: dropOut, SessionTimeout: 6 * time.Second})
	const total, words = 600, 20
	base := time.Now().Add(-time.Hour) // within every broker's timestamp bounds
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	load := func(from, to int) []*kgo.Record {
		var recs []*kgo.Record
		for j := from; j < to; j++ {
			w := fmt.Appendf(nil, "word-%d", j%words)
			ts := base.Add(time.Duration(2*j) * time.Millisecond)
			recs = append(recs, &kgo.Record{Topic: direct, Key: w, Value: []byte("v"), Timestamp: ts},
				&kgo.Record{Topic: rekeyed, Key: w, Value: w, Timestamp: ts.Add(time.Millisecond)})
		}
		return recs
	}
	produce := func(recs []*kgo.Record) {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if fault == nil {
		produce(load(0, total))
	} else {
		produce(load(0, total/2))
		// The second half is sent while the brokers are down: the producer
		// retries until they are back.
		done := make(chan error, 1)
		go func() { done <- cl.ProduceSync(ctx, load(total/2, total)...).FirstErr() }()
		fault()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if lossy {
		var recs []*kgo.Record
		for _, w := range dropIn {
			recs = append(recs, &kgo.Record{Topic: direct, Key: []byte(w), Value: []byte("drop:" + w), Timestamp: base.Add(30 * time.Minute)})
		}
		// Every key again, older: each partition's position moves past the
		// skipped records once these are processed.
		for j := range words {
			recs = append(recs, &kgo.Record{Topic: direct, Key: fmt.Appendf(nil, "word-%d", j), Value: []byte("v"), Timestamp: base})
		}
		produce(recs)
	}
	cl.Close()

	text, err := os.ReadFile(sa.TopologyFile())
	if err != nil {
		t.Fatal(err)
	}
	aggs, st, rp := cogroupAgg.FindAllSubmatch(text, -1), cogroupStore.FindSubmatch(text), countRepartition.FindSubmatch(text)
	if len(aggs) != 2 || st == nil || rp == nil {
		t.Fatalf("not two cogroup aggregates, their store and a repartition topic in the topology:\n%s", text)
	}
	waitAllCommitted(ctx, t, adm, group, []string{direct, rekeyed, group + "-" + string(rp[1])}, sa.Running)
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}

	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store: config.Store{Dir: filepath.Join(dir, "index")},
		Audit: config.Audit{SettleTimeout: 30 * time.Second},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(), Output: out,
			Nodes: []config.Node{{Name: string(aggs[0][1]), Kind: "cogroup"}, {Name: string(aggs[1][1]), Kind: "cogroup"}},
			Inputs: []config.Input{{Name: "direct", Topic: direct, KeyFormat: config.KeyFormatString},
				{Name: "rekeyed", Topic: rekeyed, KeyFormat: config.KeyFormatString}}},
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the cogroup's topology is refused: %v", err)
	}
	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, fmt.Sprintf("%s %s %s %s", r.Kind, r.Stage, r.Input, r.Key))
	}
	slices.Sort(got)
	truth := cogroupTruth(ctx, t, c, adm, map[string]string{"direct": direct, "rekeyed": rekeyed}, group+"-"+string(st[1])+"-changelog", out)
	var want []string
	for _, w := range dropIn {
		want = append(want, "stale changelog direct "+w)
	}
	for _, w := range dropOut {
		want = append(want, "missing output direct "+w, "missing output rekeyed "+w)
	}
	slices.Sort(want)
	if strings.Join(truth, "; ") != strings.Join(want, "; ") {
		t.Errorf("the topics show %q, want exactly the injected %q", truth, want)
	}
	if strings.Join(got, "; ") != strings.Join(truth, "; ") {
		t.Errorf("audit rows %q, the topics show %q", got, truth)
	}
	if len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 || res.Summary.Inputs["direct"].Pending != 0 || res.Summary.Inputs["rekeyed"].Pending != 0 {
		t.Errorf("partitions %+v, inconclusive %+v, inputs %+v: want none and nothing pending", res.Summary.Partitions, res.Summary.Inconclusive, res.Summary.Inputs)
	}
	t.Logf("%s: %d + %d records audited, rows %q", group, res.Summary.Inputs["direct"].Audited, res.Summary.Inputs["rekeyed"].Audited, got)
	// A reconcile baseline reads the same records: the audit's rows
	// exactly.
	step, err := app.Reconcile(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatalf("reconcile of the cogroup: %v", err)
	}
	defer step.Close()
	if g, w := rowsOf(step.Result.Rows), rowsOf(res.Rows); strings.Join(g, "; ") != strings.Join(w, "; ") || len(step.Result.Summary.Partitions) != 0 {
		t.Errorf("reconcile baseline rows %q, partitions %+v; the audit's %q, none", g, step.Result.Summary.Partitions, w)
	}
	if err := step.Commit(); err != nil {
		t.Fatal(err)
	}
}

// cogroupTruth reads the inputs, the changelog and the output with
// franz-go (read_committed) and returns, sorted, what each (input, key)
// lacks: the changelog, then the output, must hold the key at a timestamp
// at least the input's newest record of it (the application has
// processed every record; a skipped one counts, as the audit counts it).
func cogroupTruth(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, inputs map[string]string, changelog, out string) []string {
	t.Helper()
	newest := func(topic string) map[string]int64 { return allByKey(ctx, t, c, adm, topic) }
	cl, o := newest(changelog), newest(out)
	var rows []string
	for name, topic := range inputs {
		for k, ts := range newest(topic) {
			switch c, ok := cl[k]; {
			case !ok:
				rows = append(rows, "missing changelog "+name+" "+k)
			case c < ts:
				rows = append(rows, "stale changelog "+name+" "+k)
			default:
				switch v, ok := o[k]; {
				case !ok:
					rows = append(rows, "missing output "+name+" "+k)
				case v < ts:
					rows = append(rows, "stale output "+name+" "+k)
				}
			}
		}
	}
	slices.Sort(rows)
	return rows
}

// allByKey reads topic with franz-go (read_committed) and returns each
// key's greatest timestamp (Unix ms) among its records with a value.
func allByKey(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, topic string) map[string]int64 {
	t.Helper()
	ranges, err := adm.Ranges(ctx, true, topic)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	rctx, cancel := context.WithTimeout(ctx, truthTimeout)
	defer cancel()
	err = kafka.Consume(rctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		if r.Value == nil {
			return nil
		}
		if ts := r.Timestamp.UnixMilli(); ts > m[string(r.Key)] {
			m[string(r.Key)] = ts
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading %s: %v", topic, err)
	}
	return m
}
