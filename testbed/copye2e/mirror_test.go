package copye2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
)

// produce writes records from to to-1 (unique values, keys by key) to
// topic at about rate records a second, counting them in sent; it returns
// the first error.
func produce(ctx context.Context, brokers []string, topic string, from, to, rate int, key func(j int) []byte, sent *atomic.Int64) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return err
	}
	defer cl.Close()
	const batch = 20
	tick := time.NewTicker(time.Second * batch / time.Duration(rate))
	defer tick.Stop()
	for i := from; i < to; i += batch {
		var rs []*kgo.Record
		for j := i; j < min(i+batch, to); j++ {
			rs = append(rs, &kgo.Record{Key: key(j), Value: fmt.Appendf(nil, "order %d: %d items", j, j%7)})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			return fmt.Errorf("producing to %s: %w", topic, err)
		}
		sent.Add(int64(len(rs)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// customer keys records by one of 500 customers: keys repeat.
func customer(j int) []byte { return fmt.Appendf(nil, "customer-%d", j%500) }

// recordID identifies a record by its key and value, as compare.match
// record does.
func recordID(r Record) string { return fmt.Sprintf("%q/%q", r.Key, r.Value) }

// TestMirrorMakerOutage replicates a topic with MirrorMaker 2 (the
// connect-mirror-maker of Apache Kafka) from one 3-broker cluster to
// another while the target cluster's brokers are all killed for 20 s and
// restarted; MirrorMaker's tasks restart from their last committed offsets,
// which copies records again. Once the mirror has caught up (or given up)
// and is stopped, lossaudit compare across the two clusters must report
// exactly the records a plain consumer finds missing or duplicated in the
// copy.
func TestMirrorMakerOutage(t *testing.T) {
	src := kafka.StartForTest(t, 3)
	dst := kafka.StartForTest(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	adm, err := kafka.NewAdmin(src.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	const topic, copyTopic, total = "orders", "source.orders", 12000
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: topic, Partitions: 3, RF: 3}); err != nil {
		t.Fatal(err)
	}
	mm, err := MirrorMaker(ctx, t.TempDir(), src.Version(), src.Bootstrap(), dst.Bootstrap(), []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	defer mm.Kill()
	var sent atomic.Int64
	if err := produce(ctx, src.Bootstrap(), topic, 0, 1000, 2000, customer, &sent); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)

	copied := func() int64 {
		offs, err := copiesEnd(ctx, dst.Bootstrap(), copyTopic)
		if err != nil {
			return 0
		}
		return offs
	}
	alive := func() (bool, string) { return mm.Running(), "MirrorMaker's log:\n" + kafka.Tail(mm.Log, 40) }
	waitFor := func(what string, cond func() bool) { t.Helper(); pollUntil(ctx, t, what, alive, cond) }
	waitFor("the mirror to start copying", func() bool { return copied() >= 500 })
	go func() { done <- produce(ctx, src.Bootstrap(), topic, 1000, total, 400, customer, &sent) }()
	waitFor("2,500 copies", func() bool { return copied() >= 2500 })
	// A scheduled reconciliation of the same pair steps along: its
	// baseline now, a step after the outage, its last step once the
	// mirror has stopped, which must report what the full comparison does.
	// Grace 0 (the configuration is the state's, so it is the last
	// step's): an intermediate step reports what is not copied yet as
	// missing, until the copy arrives.
	rcfg := Config(src.Bootstrap(), filepath.Join(t.TempDir(), "store"))
	rcfg.HasSinkKafka, rcfg.SinkKafka.Brokers = true, dst.Bootstrap()
	rcfg.Compare.Pairs = append(rcfg.Compare.Pairs, configPair(topic, topic, copyTopic))
	rcfg.Compare.Grace = 0
	steps := 0
	reconcile := func(what string) *finding.Result {
		t.Helper()
		steps++
		st, err := app.Reconcile(ctx, rcfg, app.Options{})
		if err != nil {
			t.Fatalf("reconcile step %d (%s): %v", steps, what, err)
		}
		defer st.Close()
		if err := st.Commit(); err != nil {
			t.Fatalf("reconcile step %d (%s): commit: %v", steps, what, err)
		}
		s := st.Result.Summary.Step
		t.Logf("reconcile step %d (%s): %d findings open, %d resolved, read %v", s.Number, what, len(st.Result.Rows), len(st.Result.Resolved), s.Read)
		return st.Result
	}
	reconcile("the baseline, mid-copy")
	t.Logf("killing the target cluster at %d records sent, %d copied", sent.Load(), copied())
	if err := dst.KillAll(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-time.After(20 * time.Second): // the outage
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	if err := dst.StartAll(); err != nil {
		t.Fatal(err)
	}
	if err := dst.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("target cluster back at %d records sent", sent.Load())
	reconcile("after the outage")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	source, err := ReadTopic(ctx, src.Bootstrap(), topic)
	if err != nil {
		t.Fatal(err)
	}
	// Caught up: a copy of every source record, or a minute without progress.
	want := map[string]bool{}
	for _, r := range source.Records {
		want[recordID(r)] = true
	}
	last, still := int64(-1), time.Now()
	waitFor("the mirror to catch up", func() bool {
		n := copied()
		if n != last {
			last, still = n, time.Now()
		}
		if n < int64(len(want)) {
			return time.Since(still) > time.Minute
		}
		sink, err := ReadTopic(ctx, dst.Bootstrap(), copyTopic)
		if err != nil {
			return false
		}
		have := map[string]bool{}
		for _, r := range sink.Records {
			have[recordID(r)] = true
		}
		for id := range want {
			if !have[id] {
				return time.Since(still) > time.Minute
			}
		}
		return true
	})
	if err := mm.Kill(); err != nil {
		t.Fatal(err)
	}

	sink, err := ReadTopic(ctx, dst.Bootstrap(), copyTopic)
	if err != nil {
		t.Fatal(err)
	}
	truth := Copies(source, sink, recordID)
	cfg := Config(src.Bootstrap(), filepath.Join(t.TempDir(), "index"))
	cfg.HasSinkKafka, cfg.SinkKafka.Brokers = true, dst.Bootstrap()
	cfg.Compare.Pairs = append(cfg.Compare.Pairs, configPair(topic, topic, copyTopic))
	cfg.Compare.Grace = 0 // the mirror is stopped: nothing is on its way
	kinds := checkCopies(ctx, t, cfg, truth)
	t.Logf("%d source records, %d copies; the truth and the comparison: %v", len(source.Records), len(sink.Records), kinds)
	res := reconcile("the mirror stopped")
	for _, d := range Diff(Rows(res), truth) {
		t.Errorf("the last reconcile step: %s", d)
	}
	if !res.Complete() || res.Summary.Step.Number != 3 || res.Summary.Step.Read["sink"] >= int64(len(sink.Records)) {
		t.Errorf("the last reconcile step: complete %v, step %+v (the sink holds %d records)", res.Complete(), res.Summary.Step, len(sink.Records))
	}
}

// checkCopies runs the comparison cfg configures and requires its rows to
// equal truth and its verdict to be complete; it returns the truth's
// findings by kind.
func checkCopies(ctx context.Context, t *testing.T, cfg *config.Config, truth []Row) map[finding.Kind]int {
	t.Helper()
	res, err := app.Compare(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Diff(Rows(res), truth) {
		t.Error(d)
	}
	if !res.Complete() {
		t.Errorf("the comparison is partial or inconclusive: %+v", res.Summary.Inconclusive)
	}
	kinds := map[finding.Kind]int{}
	for _, r := range truth {
		kinds[r.Kind]++
	}
	return kinds
}

// pollUntil polls cond every 250 ms until it holds, failing t when alive
// says the process under test exited, or ctx ends.
func pollUntil(ctx context.Context, t *testing.T, what string, alive func() (bool, string), cond func() bool) {
	t.Helper()
	for !cond() {
		if ok, log := alive(); !ok {
			t.Fatalf("exited while waiting for %s:\n%s", what, log)
		}
		select {
		case <-ctx.Done():
			_, log := alive()
			t.Fatalf("waiting for %s: %v\n%s", what, ctx.Err(), log)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
