package familye2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
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

// windowedCount runs the tumbling windowed count of the testbed
// (TOPOLOGY=windowed-count: selectKey -> groupByKey -> windowedBy(1m,
// grace 10m) -> count -> toStream -> to, with the windowed key serde) on
// real brokers twice, clean and losing the first update of two keys, both
// at once. The load holds late records (an hour older than the rest, sent
// last): Kafka Streams drops them by design, and the audit must count them
// as late or uncertain and never report them. lossaudit audit, with the
// node declared windowed-count and its window, must report nothing for the
// clean run and exactly one undercount per injected key, on the window of
// its first record, for the other; a third, losing every output record of
// word-6 (DROP_BEFORE_OUTPUT), must report its five windows missing at the
// output and nothing else. Then the same clean and lossy runs with hopping
// windows (size 1m, advance 20s: three windows per record, the first
// update lost only in the oldest window of the key's first record). Then
// an instance runs while all
// three brokers are killed mid-load and restarted: nothing is lost (a task
// revived after the outage keeps its stream time: the audit's bound covers
// it), and the audit must say so.
func windowedCount(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	t.Run("clean and lossy", func(t *testing.T) {
		for _, tc := range []struct {
			name             string
			drop, dropOutput []string
		}{{name: "clean"}, {name: "lossy", drop: []string{"word-3", "word-14"}}, {name: "lossy-output", dropOutput: []string{"word-6"}}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				windowScenario(ctx, t, c, adm, "window-"+tc.name, 0, tc.drop, tc.dropOutput, nil)
			})
		}
	})
	t.Run("hopping", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			drop []string
		}{{name: "clean"}, {name: "lossy", drop: []string{"word-5", "word-17"}}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				windowScenario(ctx, t, c, adm, "hopping-"+tc.name, 20*time.Second, tc.drop, nil, nil)
			})
		}
	})
	t.Run("all brokers down", func(t *testing.T) {
		windowScenario(ctx, t, c, adm, "window-outage", 0, nil, nil, func() { allBrokersDown(ctx, t, c) })
	})
}

// windowScenario runs one windowed count application as group: 1,200
// records of 20 words, one every 250 ms of event time over five minutes
// starting ten minutes ago (minute-aligned: windows of 12 records per word),
// then 40 late records an hour older, and audits it. advance, when set,
// makes the windows hopping. fault, when set, runs once half of the
// on-time records are produced, while the rest are.
func windowScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, advance time.Duration, drop, dropOutput []string, fault func()) {
	in, out := group+"-words", group+"-counts"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: in, Partitions: 3}, kafka.TopicSpec{Name: out, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const size, grace = time.Minute, 10 * time.Minute
	step := size
	if advance > 0 {
		step = advance
	}
	// starts are the window starts of a record at ts, oldest first
	// (TimeWindows#windowsFor).
	starts := func(ts time.Time) []time.Time {
		ms, sz, adv := ts.UnixMilli(), size.Milliseconds(), step.Milliseconds()
		var out []time.Time
		for s := max(0, ms-sz+adv) / adv * adv; s <= ms; s += adv {
			out = append(out, time.UnixMilli(s))
		}
		return out
	}
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{in},
		Output: out, Dir: dir, Count: true, Window: size, WindowAdvance: advance, WindowGrace: grace, DropCount: drop, DropBeforeOutput: dropOutput, SessionTimeout: 6 * time.Second,
		// Kafka Streams purges the repartition topic after commits; the
		// audit needs it from offset 0 to bound stream time.
		PurgeInterval: time.Hour})
	const total, words, late = 1200, 20, 40
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Minute)
	first := map[string]time.Time{} // each word's first record: the window a dropped update belongs to
	var recs []*kgo.Record
	for j := range total {
		w := fmt.Sprintf("word-%d", j%words)
		ts := base.Add(time.Duration(j) * 250 * time.Millisecond)
		if _, ok := first[w]; !ok {
			first[w] = ts
		}
		recs = append(recs, &kgo.Record{Key: []byte(w), Value: []byte(w), Timestamp: ts})
	}
	for j := range late {
		w := fmt.Sprintf("word-%d", j%words)
		recs = append(recs, &kgo.Record{Key: []byte(w), Value: []byte(w), Timestamp: base.Add(-time.Hour + time.Duration(j)*time.Second)})
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(in))
	if err != nil {
		t.Fatal(err)
	}
	// The late records are sent once the others are: each partition's
	// stream time is past them by then.
	if fault == nil {
		if err := cl.ProduceSync(ctx, recs[:total]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := cl.ProduceSync(ctx, recs[:total/2]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		// The second half is sent while the brokers are down: the
		// producer retries until they are back.
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
	_, node := drainCount(ctx, t, adm, sa, group, in)

	// The truth, from the output topic: each (word, window) whose last
	// count is below the number of its records sent on time.
	sent := map[string]int64{}
	var pairs int64
	for _, r := range recs[:total] {
		for _, s := range starts(r.Timestamp) {
			sent[fmt.Sprintf("%s @ %s", r.Key, s.UTC().Format(time.RFC3339))]++
			pairs++
		}
	}
	var latePairs int64
	for _, r := range recs[total:] {
		latePairs += int64(len(starts(r.Timestamp)))
	}
	perWord := len(sent) / words
	var truth []string
	outputs := lastByOffset(ctx, t, c, adm, out)
	for id, n := range sent {
		word, start, _ := strings.Cut(id, " @ ")
		ts, _ := time.Parse(time.RFC3339, start)
		r := outputs[word+string(binary.BigEndian.AppendUint64(nil, uint64(ts.UnixMilli())))]
		switch {
		case r == nil:
			truth = append(truth, id+" missing at the output")
		case len(r.Value) != 8:
			t.Fatalf("the output's count of %s is %d bytes", id, len(r.Value))
		case int64(binary.BigEndian.Uint64(r.Value)) < n:
			truth = append(truth, fmt.Sprintf("%s lost %d of %d", id, n-int64(binary.BigEndian.Uint64(r.Value)), n))
		}
	}
	if len(outputs) != len(sent)-perWord*len(dropOutput) {
		t.Errorf("the output holds %d windows, want %d: a late record opened a window", len(outputs), len(sent)-perWord*len(dropOutput))
	}

	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store: config.Store{Dir: filepath.Join(dir, "index")},
		Audit: config.Audit{SettleTimeout: 30 * time.Second},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(),
			Nodes:  []config.Node{{Name: node, Kind: "windowed-count", Window: &config.NodeWindow{Size: size, Advance: advance, Grace: grace, Emit: "eager"}}},
			Inputs: []config.Input{{Name: "words", Topic: in, KeyFormat: config.KeyFormatString}}},
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the windowed count's topology is refused: %v", err)
	}
	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		if r.Window == nil {
			t.Errorf("row %+v names no window", r)
			continue
		}
		id := fmt.Sprintf("%s @ %s", r.Key, time.UnixMilli(r.Window.Start).UTC().Format(time.RFC3339))
		ev, _ := r.Evidence.(*finding.CountEvidence)
		switch {
		case r.Kind == finding.Undercount && ev != nil:
			got = append(got, fmt.Sprintf("%s lost %d of %d", id, ev.Lost(), ev.Processed))
		case r.Kind == finding.Missing && r.Stage == finding.StageOutput:
			got = append(got, id+" missing at the output")
		default:
			t.Errorf("row %+v: only undercounts and outputs are lost", r)
		}
	}
	var want []string
	for _, w := range drop {
		// The aggregator loses its first call for the key: the oldest
		// window of the key's first record.
		id := fmt.Sprintf("%s @ %s", w, starts(first[w])[0].UTC().Format(time.RFC3339))
		want = append(want, fmt.Sprintf("%s lost 1 of %d", id, sent[id]))
	}
	for id := range sent {
		if word, _, _ := strings.Cut(id, " @ "); slices.Contains(dropOutput, word) {
			want = append(want, id+" missing at the output")
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	slices.Sort(truth)
	if strings.Join(got, "; ") != strings.Join(want, "; ") || strings.Join(truth, "; ") != strings.Join(want, "; ") {
		t.Errorf("undercounts %q, truth from the output %q, want exactly the injected %q", got, truth, want)
	}
	ws, ok := finding.SectionOf[*finding.Windows](&res.Summary)
	if !ok || ws.OnTime != pairs || ws.LateOrUncertain != latePairs || ws.Expired != 0 || ws.UnknownPartitions != 0 {
		t.Errorf("windows %+v, want %d (record, window) pairs on time and the %d of the late records uncertain", ws, pairs, latePairs)
	}
	st := res.Summary.Stages[finding.StageCount]
	if st == nil || st.KeysChecked != int64(len(sent)) || len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 {
		t.Errorf("count stage %+v, partitions %+v, inconclusive %+v; want %d windows recounted and nothing else", st, res.Summary.Partitions, res.Summary.Inconclusive, len(sent))
	}
	for _, s := range []finding.Stage{finding.StageChangelog, finding.StageOutput} {
		if n := res.Summary.Stages[s].KeysChecked; n != int64(len(sent)) {
			t.Errorf("stage %s checked %d windows, want %d", s, n, len(sent))
		}
	}
	t.Logf("%s: %d on time, %d late or uncertain, rows %q", group, ws.OnTime, ws.LateOrUncertain, got)
}
