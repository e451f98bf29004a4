package copye2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// waitCommitted polls until group's committed offsets on topic reach the
// topic's end offsets, or ctx ends.
func waitCommitted(ctx context.Context, adm *kafka.Admin, brokers []string, group, topic string) error {
	var last string
	for {
		ends, err := copiesEnds(ctx, brokers, topic)
		if err == nil {
			var got map[string]map[int32]int64
			if got, err = adm.GroupOffsets(ctx, group, []string{topic}); err == nil {
				last = ""
				for p, e := range ends {
					if got[topic][p] != e {
						last = fmt.Sprintf("%s[%d] committed %d of %d", topic, p, got[topic][p], e)
					}
				}
				if last == "" {
					return nil
				}
			}
		}
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for group %s to commit the end of %s: %w (last: %s)", group, topic, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// TestStreamsAtLeastOnceDuplicates runs a stateless Kafka Streams
// application (map and to) first under exactly_once_v2, then, as after a
// rollback that switched exactly-once off, under at_least_once, and kills
// it with kill -9 between two commits: its successor processes again what
// the killed instance had written but not committed. Once the application has
// committed the whole input and stopped, lossaudit compare (match key,
// due by the application's committed offsets) must report as duplicated
// exactly the records a plain read_committed consumer finds more than once
// in the output, and nothing missing.
func TestStreamsAtLeastOnceDuplicates(t *testing.T) {
	c := kafka.StartForTest(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	adm, err := kafka.NewAdmin(c.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	const in, out, group, total = "events", "events-copied", "copier", 9000
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: in, Partitions: 3, RF: 3}, kafka.TopicSpec{Name: out, Partitions: 3, RF: 3}); err != nil {
		t.Fatal(err)
	}
	app, err := streamsapp.New(ctx, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{in},
		Output: out, Dir: t.TempDir(), Copy: true, SessionTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Kill()
	var sent atomic.Int64
	done := make(chan error, 1)
	eventKey := func(j int) []byte { return fmt.Appendf(nil, "event-%d", j) }
	go func() { done <- produce(ctx, c.Bootstrap(), in, 0, total, 200, eventKey, &sent) }()

	outputs := func() int64 {
		n, _ := copiesEnd(ctx, c.Bootstrap(), out)
		return n
	}
	alive := func() (bool, string) { return app.Running(), "the application's log:\n" + app.LogTail(40) }
	waitFor := func(what string, cond func() bool) { t.Helper(); pollUntil(ctx, t, what, alive, cond) }
	start := func() {
		t.Helper()
		if err := app.Start(); err != nil {
			t.Fatal(err)
		}
		if err := app.WaitRunning(ctx); err != nil {
			t.Fatal(err)
		}
	}
	start() // exactly_once_v2
	waitFor("1,000 outputs under exactly_once_v2", func() bool { return outputs() >= 1000 })
	if err := app.Stop(); err != nil {
		t.Fatal(err)
	}
	app.SetGuarantee("at_least_once", 20*time.Second)
	start()
	before := outputs()
	waitFor("1,000 outputs under at_least_once", func() bool { return outputs() >= before+1000 })
	t.Logf("kill -9 at %d records sent, end offsets of the output %d", sent.Load(), outputs())
	if err := app.Kill(); err != nil {
		t.Fatal(err)
	}
	start()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := waitCommitted(ctx, adm, c.Bootstrap(), group, in); err != nil {
		t.Fatal(err)
	}
	if err := app.Stop(); err != nil {
		t.Fatal(err)
	}

	source, err := ReadTopic(ctx, c.Bootstrap(), in)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := ReadTopic(ctx, c.Bootstrap(), out)
	if err != nil {
		t.Fatal(err)
	}
	// The application keeps the key and changes the value: every record
	// has a key of its own, so the key identifies it on both sides.
	truth := Copies(source, sink, func(r Record) string { return string(r.Key) })
	cfg := Config(c.Bootstrap(), filepath.Join(t.TempDir(), "index"))
	cfg.Compare.Match, cfg.Compare.Group = config.MatchKey, group
	cfg.Compare.Pairs = append(cfg.Compare.Pairs, configPair(in, in, out))
	kinds := checkCopies(ctx, t, cfg, truth)
	t.Logf("%d input records, %d outputs; the truth and the comparison: %v", len(source.Records), len(sink.Records), kinds)
	if kinds[finding.Duplicated] == 0 {
		t.Fatal("kill -9 under at_least_once duplicated nothing: the scenario proves nothing")
	}
}
