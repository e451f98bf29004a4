package familye2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// suppressStore finds the suppress buffer's store in the describe() text
// of the count-with-suppress application (TOPOLOGY=count-suppress).
var suppressStore = regexp.MustCompile(`Processor: KTABLE-SUPPRESS-\d{10} \(stores: \[(\S+)\]\)`)

// countSuppress runs the count by a new key with
// suppress(untilTimeLimit(1 min)) before the output (CountSuppress.java)
// on real brokers: clean and dropping every emitted count of two words
// (at once, on one cluster with distinct application ids and topics), then
// clean again while all three brokers are killed mid-load and restarted.
// The words carry timestamps 2 s apart at most, so they wait in the
// suppress buffer until 30 "tick" keys, ten minutes later, advance stream
// time in every task: the words are then emitted, the ticks stay buffered
// (pending). The truth is read from the output and the buffer's changelog
// with franz-go; the audit must report exactly the dropped words, and
// nothing for the ticks or the clean runs.
func countSuppress(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	t.Run("clean and lossy", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			drop []string
		}{{name: "clean"}, {name: "lossy", drop: []string{"word-4", "word-11"}}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				suppressScenario(ctx, t, c, adm, "suppress-"+tc.name, tc.drop, nil)
			})
		}
	})
	t.Run("all brokers down", func(t *testing.T) {
		suppressScenario(ctx, t, c, adm, "suppress-outage", nil, func() { allBrokersDown(ctx, t, c) })
	})
}

func suppressScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, drop []string, fault func()) {
	in, out := group+"-words", group+"-counts"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: in, Partitions: 3}, kafka.TopicSpec{Name: out, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{in},
		Output: out, Dir: dir, Count: true, Suppress: time.Minute, DropBeforeOutput: drop, SessionTimeout: 6 * time.Second})
	const total, words, ticks = 2000, 20, 30
	// In the past: brokers refuse timestamps too far in the future.
	base := time.Now().Add(-30 * time.Minute)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(in))
	if err != nil {
		t.Fatal(err)
	}
	recs := func(from, to int) []*kgo.Record {
		var rs []*kgo.Record
		for j := from; j < to; j++ {
			w := fmt.Appendf(nil, "word-%d", j%words)
			rs = append(rs, &kgo.Record{Key: w, Value: w, Timestamp: base.Add(time.Duration(j) * time.Millisecond)})
		}
		return rs
	}
	if fault == nil {
		if err := cl.ProduceSync(ctx, recs(0, total)...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := cl.ProduceSync(ctx, recs(0, total/2)...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cl.ProduceSync(ctx, recs(total/2, total)...).FirstErr() }()
		fault()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// The ticks, after every word: 30 keys reach each of the 3 tasks but
	// with probability 3*(2/3)^30 (about 1.5e-5).
	var tick []*kgo.Record
	for j := range ticks {
		k := fmt.Appendf(nil, "tick-%02d", j)
		tick = append(tick, &kgo.Record{Key: k, Value: k, Timestamp: base.Add(10 * time.Minute)})
	}
	if err := cl.ProduceSync(ctx, tick...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	text, node := drainCount(ctx, t, adm, sa, group, in)
	st := suppressStore.FindSubmatch(text)
	if st == nil {
		t.Fatalf("no suppress store in the topology:\n%s", text)
	}

	// The truth, from the topics: a key is owed to the output unless its
	// last record in the buffer's changelog is a value (still buffered).
	newest := func(topic string) map[string]*kgo.Record {
		ranges, err := adm.Ranges(ctx, true, topic)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*kgo.Record{}
		rctx, cancel := context.WithTimeout(ctx, truthTimeout)
		defer cancel()
		if err := kafka.Consume(rctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
			if old, ok := m[string(r.Key)]; !ok || r.Offset > old.Offset {
				m[string(r.Key)] = r
			}
			return nil
		}); err != nil {
			t.Fatalf("reading %s: %v", topic, err)
		}
		return m
	}
	buffer, output := newest(group+"-"+string(st[1])+"-changelog"), newest(out)
	var lost, buffered []string
	for j := range words + ticks {
		k, want := fmt.Sprintf("word-%d", j), fmt.Sprint(total/words)
		if j >= words {
			k, want = fmt.Sprintf("tick-%02d", j-words), "1"
		}
		if b, ok := buffer[k]; ok && b.Value != nil {
			buffered = append(buffered, k)
			continue
		}
		if o, ok := output[k]; !ok || string(o.Value) != want {
			lost = append(lost, k)
		}
	}
	slices.Sort(lost)
	want := slices.Clone(drop)
	slices.Sort(want)
	if strings.Join(lost, ",") != strings.Join(want, ",") {
		t.Errorf("the topics say %q are owed and not in the output, want exactly the dropped %q", lost, want)
	}
	if fault == nil && len(buffered) != ticks {
		t.Errorf("buffered %q: want the %d ticks only (every word evicted by them)", buffered, ticks)
	}

	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store: config.Store{Dir: filepath.Join(dir, "index")},
		Audit: config.Audit{SettleTimeout: 30 * time.Second},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(), Output: out,
			Nodes:  []config.Node{{Name: node, Kind: "count"}},
			Inputs: []config.Input{{Name: "words", Topic: in, KeyFormat: config.KeyFormatString}}},
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the count with suppress is refused: %v", err)
	}
	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		if r.Stage != finding.StageOutput || r.Kind != finding.Missing {
			t.Errorf("row %+v: only missing outputs are injected", r)
			continue
		}
		got = append(got, string(r.Key))
	}
	slices.Sort(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the audit reports %q, want exactly the dropped %q", got, want)
	}
	if len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 {
		t.Errorf("partitions %+v, inconclusive %+v: want none", res.Summary.Partitions, res.Summary.Inconclusive)
	}
	pending := res.Summary.Stages[finding.StageOutput].KeysPending
	if (fault == nil && pending != int64(len(buffered))) || pending > int64(len(buffered)) {
		t.Errorf("%d keys pending in the buffer, the topics say %d buffered", pending, len(buffered))
	}
	t.Logf("%s: %d records audited, %d keys buffered (pending), rows %q", group, res.Summary.Inputs["words"].Audited, len(buffered), got)

	// A reconcile baseline reads the same topics, the buffer's changelog
	// with them, and must say the same.
	step, err := app.Reconcile(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatalf("reconcile of a count with suppress: %v", err)
	}
	defer step.Close()
	sr := step.Result
	if g, w := rowsOf(sr.Rows), rowsOf(res.Rows); strings.Join(g, ",") != strings.Join(w, ",") ||
		sr.Summary.Stages[finding.StageOutput].KeysPending != pending || len(sr.Summary.Partitions) != 0 {
		t.Errorf("reconcile baseline rows %q, %d keys pending, partitions %+v; the audit %q, %d, none",
			g, sr.Summary.Stages[finding.StageOutput].KeysPending, sr.Summary.Partitions, w, pending)
	}
	if err := step.Commit(); err != nil {
		t.Fatal(err)
	}
}
