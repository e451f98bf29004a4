package familye2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// streamStage is one per-record stream stage application of the test bed
// (StreamStages.java) and what its lossy run drops.
type streamStage struct {
	stage string
	// inputs are the topic suffixes: the audited inputs, then, for
	// enrich, the table.
	inputs []string
	// audited is how many of inputs lossaudit audits (the table is not).
	audited int
	drop    []string
}

var streamStagesUnderTest = []streamStage{
	{stage: "enrich", inputs: []string{"events", "customers"}, audited: 1, drop: []string{"e-17", "e-242"}},
	{stage: "passthrough", inputs: []string{"a", "b"}, audited: 2, drop: []string{"e-5", "f-123"}},
}

// streamStages runs the per-record stream stages of the test bed on real
// brokers: an enrichment (a stream left-joined with a table) and a
// pass-through (mapValues on two inputs, merged), each clean and losing
// two known records before the output (all four at once), then both
// while every broker is killed and restarted. Once an application has
// committed all its input and stopped, the truth is read from the topics
// (every input record's key and timestamp in the output, null keys and
// values of the enrichment excepted), and lossaudit audit must name
// exactly the records the truth lacks: none, or the injected ones.
func streamStages(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	t.Run("clean and lossy", func(t *testing.T) {
		for _, s := range streamStagesUnderTest {
			for _, lossy := range []bool{false, true} {
				name := s.stage + "-clean"
				var drop []string
				if lossy {
					name, drop = s.stage+"-lossy", s.drop
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					streamStageScenario(ctx, t, c, adm, "stage-"+name, s, drop, nil)
				})
			}
		}
	})
	t.Run("all brokers down", func(t *testing.T) {
		// Both applications run through the same outage: all three
		// brokers die while the second half of the load is sent, stay
		// down a while and come back; exactly-once loses nothing.
		var once sync.Once
		halfway := make(chan struct{}, len(streamStagesUnderTest))
		outage := func(t *testing.T) { // t: the application's test, which waits for the outage
			halfway <- struct{}{}
			once.Do(func() {
				for range streamStagesUnderTest { // both halfway, or the deadline
					select {
					case <-halfway:
					case <-ctx.Done():
						t.Error(ctx.Err())
						return
					}
				}
				allBrokersDown(ctx, t, c)
			})
		}
		for _, s := range streamStagesUnderTest {
			t.Run(s.stage, func(t *testing.T) {
				t.Parallel()
				streamStageScenario(ctx, t, c, adm, "stage-outage-"+s.stage, s, nil, outage)
			})
		}
	})
}

// streamStageScenario runs one stream stage application as group,
// produces its load and audits it. fault, when set, runs (with the
// scenario's t) once half of the load is produced, while the rest is.
func streamStageScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, s streamStage, drop []string, fault func(*testing.T)) {
	var topics []string
	var specs []kafka.TopicSpec
	for _, in := range s.inputs {
		topics = append(topics, group+"-"+in)
		specs = append(specs, kafka.TopicSpec{Name: group + "-" + in, Partitions: 3})
	}
	out := group + "-out"
	specs = append(specs, kafka.TopicSpec{Name: out, Partitions: 3})
	if err := adm.CreateTopics(ctx, specs...); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{topics[0], topics[1]},
		Output: out, Dir: dir, Stage: s.stage, DropValues: drop, SessionTimeout: 6 * time.Second})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(recs []*kgo.Record) error { return cl.ProduceSync(ctx, recs...).FirstErr() }
	// The load: 300 records per audited input, keyed by ten keys, values
	// e-N (first input) and f-N (second); the enrichment's events also
	// carry three null keys and three null values (dropped by the join by
	// design), and its table the values of eight of its twelve keys.
	// Each record has a timestamp of its own, so that its key and
	// timestamp name it: records sharing both are indistinguishable to the
	// check (and to anyone replaying them).
	const n = 300
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	load := func(from, to int) []*kgo.Record {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			for x := 0; x < s.audited; x++ {
				v := fmt.Sprintf("%c-%d", 'e'+x, i)
				r := &kgo.Record{Topic: topics[x], Key: fmt.Appendf(nil, "k-%d", i%12), Value: []byte(v),
					Timestamp: base.Add(time.Duration(2*i+x) * time.Millisecond)}
				if s.stage == "enrich" && i%100 == 50 {
					r.Key = nil
				}
				if s.stage == "enrich" && i%100 == 60 {
					r.Value = nil
				}
				recs = append(recs, r)
			}
		}
		return recs
	}
	if s.stage == "enrich" {
		var table []*kgo.Record
		for k := 0; k < 8; k++ {
			table = append(table, &kgo.Record{Topic: topics[1], Key: fmt.Appendf(nil, "k-%d", k), Value: fmt.Appendf(nil, "name-%d", k),
				Timestamp: base.Add(-time.Minute)}) // older than the events: joined first
		}
		if err := produce(table); err != nil {
			t.Fatal(err)
		}
	}
	if fault == nil {
		if err := produce(load(0, n)); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := produce(load(0, n/2)); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- produce(load(n/2, n)) }()
		fault(t)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	waitAllCommitted(ctx, t, adm, group, topics, sa.Running)
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}

	// The truth, from the topics: the input records (of the audited
	// inputs, those the stage does not drop by design) whose key and
	// timestamp the output lacks, matched as a multiset.
	type id struct {
		key string
		ts  int64
	}
	owed := map[id][]string{} // identity -> input values, in read order
	var byCoord = map[string]string{}
	tctx, tcancel := context.WithTimeout(ctx, truthTimeout)
	defer tcancel()
	ranges, err := adm.Ranges(tctx, true, append(append([]string(nil), topics[:s.audited]...), out)...)
	if err != nil {
		t.Fatal(err)
	}
	have := map[id]int{}
	err = kafka.Consume(tctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		k := id{string(r.Key), r.Timestamp.UnixMilli()}
		if r.Key == nil {
			k.key = "\x00null"
		}
		if r.Topic == out {
			have[k]++
			return nil
		}
		byCoord[fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)] = string(r.Value)
		if s.stage == "enrich" && (r.Key == nil || r.Value == nil) {
			return nil
		}
		owed[k] = append(owed[k], string(r.Value))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var truth []string
	for k, vs := range owed {
		if lack := len(vs) - have[k]; lack > 0 {
			truth = append(truth, vs[len(vs)-lack:]...)
		}
	}
	slices.Sort(truth)
	want := slices.Sorted(slices.Values(drop))
	if strings.Join(truth, ",") != strings.Join(want, ",") {
		t.Fatalf("the topics lack %q, want exactly the injected %q", truth, want)
	}

	var inputs []config.Input
	for x := 0; x < s.audited; x++ {
		inputs = append(inputs, config.Input{Name: s.inputs[x], Topic: topics[x], KeyFormat: config.KeyFormatString})
	}
	cfg := &config.Config{
		Kafka:    config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store:    config.Store{Dir: filepath.Join(dir, "index")},
		Audit:    config.Audit{SettleTimeout: 30 * time.Second},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(), Output: out, Inputs: inputs},
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the %s topology is refused: %v", s.stage, err)
	}
	res, m, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Stream == nil {
		t.Fatalf("%s was not audited as a per-record stream stage", s.stage)
	}
	var got []string
	for _, r := range res.Rows {
		if r.Kind != finding.Missing {
			t.Errorf("row %+v: only missing records are injected", r)
			continue
		}
		got = append(got, byCoord[fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)])
	}
	slices.Sort(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the audit names %q, want exactly the injected %q", got, want)
	}
	if res.Summary.Partial || len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 {
		t.Errorf("partial %v, partitions %+v, inconclusive %+v: want a complete audit", res.Summary.Partial, res.Summary.Partitions, res.Summary.Inconclusive)
	}
	var audited, nulls int64
	for _, in := range res.Summary.Inputs {
		audited += in.Audited
		nulls += in.NullKey + in.NullValue
	}
	wantAudited, wantNulls := int64(n*s.audited), int64(0)
	if s.stage == "enrich" {
		wantAudited, wantNulls = n-6, 6
	}
	if audited != wantAudited || nulls != wantNulls {
		t.Errorf("%d records audited, %d null keys and values counted; want %d and %d", audited, nulls, wantAudited, wantNulls)
	}
	t.Logf("%s: %d records audited, %d dropped by design, rows %q", group, audited, nulls, got)
}
