package familye2e

import (
	"context"
	"encoding/binary"
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

// windowedFinal runs the tumbling windowed count of the testbed emitted
// final (TOPOLOGY=windowed-count, WINDOW_EMIT=final: selectKey ->
// groupByKey -> windowedBy(1m, grace 10s) -> count ->
// suppress(untilWindowCloses) -> toStream -> to) on real brokers: two
// instances at once, clean and losing the final results of word-6
// (DROP_BEFORE_OUTPUT: its closed windows never reach the output), then
// one whose three brokers are all killed mid-load and restarted. The load
// spans five minutes of event time, so each word's first four windows
// close and its fifth stays open (held by the suppress buffer). lossaudit
// audit, with the count declared windowed-count and its window emit:
// final, must report nothing for the clean and the outage runs (the open
// windows pending), and exactly word-6's four closed windows missing at
// the output for the lossy one, as the output topic read with franz-go
// says.
func windowedFinal(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute) // the pair, then the outage run
	t.Cleanup(cancel)
	t.Run("clean and lossy", func(t *testing.T) {
		for _, tc := range []struct {
			name       string
			dropOutput []string
		}{{name: "clean"}, {name: "lossy", dropOutput: []string{"word-6"}}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				finalScenario(ctx, t, c, adm, "final-"+tc.name, tc.dropOutput, nil)
			})
		}
	})
	// After the other two, not beside them: their own admin calls
	// (creating topics, reading the truth) do not ride through an outage.
	t.Run("outage", func(t *testing.T) {
		finalScenario(ctx, t, c, adm, "final-outage", nil, func() { allBrokersDown(ctx, t, c) })
	})
}

// finalScenario runs one windowed count emitted final as group: 1,200
// records of 20 words, one every 250 ms of event time over five minutes
// starting ten minutes ago (minute-aligned: windows of 12 records per
// word), then 40 late records an hour older (dropped by design), and
// audits it. fault, when set, runs once half of the on-time records are
// produced, while the rest are.
func finalScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, dropOutput []string, fault func()) {
	in, out := group+"-words", group+"-counts"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: in, Partitions: 3}, kafka.TopicSpec{Name: out, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const size, grace = time.Minute, 10 * time.Second
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{in},
		Output: out, Dir: dir, Count: true, Window: size, WindowGrace: grace, WindowFinal: true, DropBeforeOutput: dropOutput, SessionTimeout: 6 * time.Second,
		PurgeInterval: time.Hour}) // the audit bounds stream time from the repartition topic's offset 0
	const total, words, late = 1200, 20, 40
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Minute)
	var recs []*kgo.Record
	for j := range total {
		w := fmt.Sprintf("word-%d", j%words)
		recs = append(recs, &kgo.Record{Key: []byte(w), Value: []byte(w), Timestamp: base.Add(time.Duration(j) * 250 * time.Millisecond)})
	}
	for j := range late {
		w := fmt.Sprintf("word-%d", j%words)
		recs = append(recs, &kgo.Record{Key: []byte(w), Value: []byte(w), Timestamp: base.Add(-time.Hour + time.Duration(j)*time.Second)})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(in))
	if err != nil {
		t.Fatal(err)
	}
	if fault == nil {
		if err := cl.ProduceSync(ctx, recs[:total]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := cl.ProduceSync(ctx, recs[:total/2]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cl.ProduceSync(ctx, recs[total/2:total]...).FirstErr() }()
		fault()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, recs[total:]...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	text, node := drainCount(ctx, t, adm, sa, group, in)
	store := regexp.MustCompile(`KTABLE-SUPPRESS-STATE-STORE-\d+`).Find(text)
	if store == nil {
		t.Fatalf("no suppress buffer store in the topology:\n%s", text)
	}
	// The buffer's changelog is keyed as the output, [word][8-byte window
	// start] (what the audit reads it as): each word's open window is
	// held as a value, the closed ones evicted (a tombstone, or
	// compacted away).
	buffer := lastByOffset(ctx, t, c, adm, group+"-"+string(store)+"-changelog")

	// Every partition's newest record is within 5 s of the load's end
	// (the 20 words take turns every 250 ms), so windows starting at
	// minutes 0 to 3 closed (end + 10 s <= 4m55s) and minute 4 did not.
	// The truth, from the output topic: each closed window whose final
	// count is absent.
	outputs := lastByOffset(ctx, t, c, adm, out)
	var truth []string
	for w := range words {
		word := fmt.Sprintf("word-%d", w)
		for m := range 5 {
			start := base.Add(time.Duration(m) * time.Minute)
			id := fmt.Sprintf("%s @ %s", word, start.UTC().Format(time.RFC3339))
			wk := word + string(binary.BigEndian.AppendUint64(nil, uint64(start.UnixMilli())))
			if b := buffer[wk]; (m == 4) != (b != nil && b.Value != nil) {
				t.Errorf("the buffer changelog's last record of %s is %v, want a value exactly for the open window", id, b)
			}
			r := outputs[wk]
			switch {
			case m == 4 && r != nil:
				t.Errorf("the output holds %s, a window still open", id)
			case m == 4:
			case r == nil:
				truth = append(truth, id+" missing at the output")
			case len(r.Value) != 8 || binary.BigEndian.Uint64(r.Value) != 12:
				t.Errorf("the output's final count of %s is %x, want 12", id, r.Value)
			}
		}
	}

	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store: config.Store{Dir: filepath.Join(dir, "index")},
		Audit: config.Audit{SettleTimeout: 30 * time.Second},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(),
			Nodes:  []config.Node{{Name: node, Kind: "windowed-count", Window: &config.NodeWindow{Size: size, Grace: grace, Emit: "final"}}},
			Inputs: []config.Input{{Name: "words", Topic: in, KeyFormat: config.KeyFormatString}}},
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the windowed count emitted final is refused: %v", err)
	}
	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		if r.Window == nil || r.Kind != finding.Missing || r.Stage != finding.StageOutput {
			t.Errorf("row %+v: only windows missing at the output are lost", r)
			continue
		}
		got = append(got, fmt.Sprintf("%s @ %s missing at the output", r.Key, time.UnixMilli(r.Window.Start).UTC().Format(time.RFC3339)))
	}
	var want []string
	for _, word := range dropOutput {
		for m := range 4 {
			want = append(want, fmt.Sprintf("%s @ %s missing at the output", word, base.Add(time.Duration(m)*time.Minute).UTC().Format(time.RFC3339)))
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	slices.Sort(truth)
	if strings.Join(got, "; ") != strings.Join(want, "; ") || strings.Join(truth, "; ") != strings.Join(want, "; ") {
		t.Errorf("rows %q, truth from the output %q, want exactly the injected %q", got, truth, want)
	}
	ws, ok := finding.SectionOf[*finding.Windows](&res.Summary)
	switch {
	case !ok || !ws.Final || ws.UnknownPartitions != 0:
		t.Errorf("windows %+v, want emitted final, every partition read from offset 0", ws)
	case fault == nil && (ws.FinalOpen != words || ws.FinalBuffered != 0):
		t.Errorf("windows %+v, want the %d windows of minute 4 open, none closed and buffered", ws, words)
	}
	if n := res.Summary.Stages[finding.StageOutput].KeysChecked; n < 4*words {
		t.Errorf("the output rule checked %d windows, want at least the %d closed ones", n, 4*words)
	}
	if len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 {
		t.Errorf("partitions %+v, inconclusive %+v; want none", res.Summary.Partitions, res.Summary.Inconclusive)
	}
	t.Logf("%s: windows %+v, rows %q", group, ws, got)
}
