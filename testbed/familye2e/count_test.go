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
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// countNames finds, in the describe() text of the count application
// (TOPOLOGY=count), the count's node and the repartition topic (generated
// names).
var (
	countNode        = regexp.MustCompile(`Processor: (KSTREAM-AGGREGATE-\d{10}) `)
	countRepartition = regexp.MustCompile(`Sink: \S+ \(topic: (\S+-repartition)\)`)
)

// countByNewKey runs the count-by-a-new-key application of the
// testbed (selectKey -> groupByKey -> count -> toStream -> mapValues ->
// to) on real brokers twice, on one cluster with distinct application ids
// and topics: clean, and losing the first update of two keys inside the
// count (an aggregate that leaves their count at 0 once: describe() prints
// it exactly like count()). Once each application has committed all its
// input at both hops and stopped, lossaudit audit, with the count declared
// in pipeline.nodes, must report nothing for the clean run and exactly one
// undercount of one lost update per injected key for the other. Then, on
// the same cluster, a third instance runs while all three brokers are
// killed mid-load and restarted: nothing is lost, and the audit must say so.
func countByNewKey(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	// Cleanups, not defers: they run after the parallel subtests.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	cases := []struct {
		name string
		drop []string
	}{
		{name: "clean"},
		{name: "lossy", drop: []string{"word-3", "word-7"}},
	}
	t.Run("clean and lossy", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				countScenario(ctx, t, c, adm, "count-"+tc.name, tc.drop, nil, false)
			})
		}
	})
	t.Run("all brokers down", func(t *testing.T) {
		countScenario(ctx, t, c, adm, "count-outage", nil, func() {
			// All three brokers die while the load runs, stay down a while
			// and come back: exactly-once keeps every count exact.
			allBrokersDown(ctx, t, c)
		}, false)
	})
}

// countScenario runs one count application as group, produces 2,000 words
// (20 distinct, keyed by themselves) to its input and audits it. fault,
// when set, runs once half of the words are produced, while the rest are.
// With changelogOnly the application's table leads nowhere
// (TOPOLOGY=count-changelog) and the audit has no output.
func countScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, drop []string, fault func(), changelogOnly bool) {
	in, out := group+"-words", group+"-counts"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: in, Partitions: 3}, kafka.TopicSpec{Name: out, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{in},
		Output: out, Dir: dir, Count: true, DropCount: drop, SessionTimeout: 6 * time.Second, ChangelogOnly: changelogOnly})
	const total, words = 2000, 20
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(in))
	if err != nil {
		t.Fatal(err)
	}
	produce := func(from, to int) {
		var recs []*kgo.Record
		for j := from; j < to; j++ {
			w := fmt.Appendf(nil, "word-%d", j%words)
			recs = append(recs, &kgo.Record{Key: w, Value: w})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if fault == nil {
		produce(0, total)
	} else {
		produce(0, total/2)
		// The second half is sent while the brokers are down: the
		// producer retries until they are back.
		done := make(chan error, 1)
		go func() {
			var recs []*kgo.Record
			for j := total / 2; j < total; j++ {
				w := fmt.Appendf(nil, "word-%d", j%words)
				recs = append(recs, &kgo.Record{Key: w, Value: w})
			}
			done <- cl.ProduceSync(ctx, recs...).FirstErr()
		}()
		fault()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	_, node := drainCount(ctx, t, adm, sa, group, in)

	if changelogOnly {
		out = "" // the topology file shows no output
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
		t.Fatalf("the count's topology is refused: %v", err)
	}
	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		ev, _ := r.Evidence.(*finding.CountEvidence)
		if r.Kind != finding.Undercount || ev == nil {
			t.Errorf("row %+v: only undercounts are injected", r)
			continue
		}
		got = append(got, fmt.Sprintf("%s lost %d of %d", r.Key, ev.Lost(), ev.Processed))
	}
	var want []string
	for _, w := range drop {
		want = append(want, fmt.Sprintf("%s lost 1 of %d", w, total/words))
	}
	slices.Sort(got)
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("undercounts %q, want exactly the injected %q", got, want)
	}
	st := res.Summary.Stages[finding.StageCount]
	if st == nil || st.KeysChecked != words || len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 {
		t.Errorf("count stage %+v, partitions %+v, inconclusive %+v; want %d keys recounted and nothing else", st, res.Summary.Partitions, res.Summary.Inconclusive, words)
	}
	t.Logf("%s: %d records, %d keys recounted, rows %q", group, res.Summary.Inputs["words"].Audited, st.KeysChecked, got)
	// A reconcile baseline reads the same records and recounts them
	// from its own per-key counts: the audit's rows exactly, with or
	// without an output topic.
	step, err := app.Reconcile(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatalf("reconcile of the count: %v", err)
	}
	defer step.Close()
	sr := step.Result
	if g, w := rowsOf(sr.Rows), rowsOf(res.Rows); strings.Join(g, "; ") != strings.Join(w, "; ") || len(sr.Summary.Partitions) != 0 ||
		sr.Summary.Inputs["words"].Audited != res.Summary.Inputs["words"].Audited {
		t.Errorf("reconcile baseline rows %q, partitions %+v, %d audited; the audit's %q, none, %d", g, sr.Summary.Partitions,
			sr.Summary.Inputs["words"].Audited, w, res.Summary.Inputs["words"].Audited)
	}
	if err := step.Commit(); err != nil {
		t.Fatal(err)
	}
}

// rowsOf renders rows as kind, stage and key, with an undercount's lost
// updates, for comparing runs.
func rowsOf(rows []finding.Row) []string {
	var out []string
	for _, r := range rows {
		s := fmt.Sprintf("%s %s %s", r.Kind, r.Stage, r.Key)
		if ev, ok := r.Evidence.(*finding.CountEvidence); ok {
			s += fmt.Sprintf(" lost %d of %d", ev.Lost(), ev.Processed)
		}
		out = append(out, s)
	}
	return out
}

// drainCount waits until the count application sa (application id group,
// reading topic in) has committed everything in its input and repartition
// topics, then stops it; it returns the topology the application printed
// and its count node's name (countNode: a count, plain or windowed).
func drainCount(ctx context.Context, t *testing.T, adm *kafka.Admin, sa *streamsapp.App, group, in string) (text []byte, node string) {
	t.Helper()
	text, err := os.ReadFile(sa.TopologyFile())
	if err != nil {
		t.Fatal(err)
	}
	n, rp := countNode.FindSubmatch(text), countRepartition.FindSubmatch(text)
	if n == nil || rp == nil {
		t.Fatalf("no count node or repartition topic in the topology:\n%s", text)
	}
	waitAllCommitted(ctx, t, adm, group, []string{in, group + "-" + string(rp[1])}, sa.Running)
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}
	return text, string(n[1])
}

// waitAllCommitted polls until group's committed offsets reach the last
// stable offset of every partition of topics, failing the test when the
// application stops first or ctx ends.
func waitAllCommitted(ctx context.Context, t *testing.T, adm *kafka.Admin, group string, topics []string, running func() bool) {
	t.Helper()
	last := "nothing read yet"
	for {
		committed, err := adm.GroupOffsets(ctx, group, topics)
		var ranges []kafka.Range
		if err == nil {
			ranges, err = adm.Ranges(ctx, true, topics...)
		}
		if err == nil {
			last = ""
			for _, r := range ranges {
				if got := committed[r.Topic][r.Partition]; got < r.To {
					last += fmt.Sprintf(" %s[%d] %d/%d", r.Topic, r.Partition, got, r.To)
				}
			}
			if last == "" && len(ranges) > 0 {
				return
			}
		} else {
			last = err.Error()
		}
		if !running() {
			t.Fatalf("the application stopped before committing everything:%s", last)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for group %s to commit everything: %v (behind:%s)", group, ctx.Err(), last)
		case <-time.After(300 * time.Millisecond):
		}
	}
}
