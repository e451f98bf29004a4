package familye2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// groupByProfile is TableGroupByCount.java's PROFILE, written as schema id 1.
const groupByProfile = `{"type":"record","name":"Profile","namespace":"lossaudit.testbed","fields":[` +
	`{"name":"id","type":"string"},{"name":"region","type":"string"}]}`

// groupByAgg finds the grouped table's aggregation node and its store in
// the describe() text of TOPOLOGY=table-groupby: the count's or
// aggregate's generated KTABLE-AGGREGATE-, the reduce's KTABLE-REDUCE-, or
// the aggregate's Named.as name.
var groupByAgg = regexp.MustCompile(`Processor: (KTABLE-AGGREGATE-\d{10}|KTABLE-REDUCE-\d{10}|members-by-region) \(stores: \[(\S+)\]\)`)

// groupByOp is one aggregation of the table groupBy phase: TABLE_GROUPBY_OP
// and the kind declared for its node ("" for none: a KTABLE-REDUCE- shows
// its kind by its name).
type groupByOp struct{ name, op, kind string }

// tableGroupBy runs the test bed's table groupBy (TableGroupByCount.java:
// table(profiles) --groupBy(value.region)--> count, toStream, to; then the
// same groupBy's reduce with generated names, then its aggregate of the
// members' keys named by Named.as and Materialized.as, whose subtractor
// returns null when the last member leaves) on real brokers: clean and
// losing the last update of two keys before the table (records the
// application skips), both at once, then clean while every broker is
// killed and restarted; the three aggregations one after the other. Every
// key moves between regions from round to round, some are deleted, one
// region is emptied and taken again by an older update, and the
// timestamps run out of offset order. Once the application has
// committed all its input at both hops and stopped, the
// truth is read from the topics with franz-go (a key's last record by
// offset per partition whose region's newest value in the changelog is
// older than it: lost), and lossaudit audit, the aggregation declared
// (table-count, table-aggregate; the reduce by its name) and the group key
// rekey: region, must name exactly those records: none for the clean and
// outage runs. The aggregate's runs are reconciled too: a baseline
// mid-run and two steps at the end, each with the audit's rows.
func tableGroupBy(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	t.Cleanup(cancel)
	for _, op := range []groupByOp{{"count", "", "table-count"}, {"reduce", "reduce", ""}, {"aggregate", "aggregate", "table-aggregate"}} {
		group := "tgb-"
		if op.op != "" {
			group += op.op + "-"
		}
		t.Run(op.name+": clean and lossy", func(t *testing.T) {
			for _, tc := range []struct {
				name string
				drop []string
			}{{name: "clean"}, {name: "lossy", drop: []string{"p-04", "p-17"}}} {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					groupByScenario(ctx, t, c, adm, op, group+tc.name, tc.drop, nil)
				})
			}
		})
		// After the other two, not beside them: their own admin calls
		// (creating topics, reading the truth) do not ride through an
		// outage.
		t.Run(op.name+": all brokers down", func(t *testing.T) {
			groupByScenario(ctx, t, c, adm, op, group+"outage", nil, func() { allBrokersDown(ctx, t, c) })
		})
	}
}

// groupByLoad is what groupByScenario writes: rounds of one update per key
// (each key in another region every round, timestamps out of offset
// order, every seventh key deleted in round 3; p-29 alone in region
// r-solo in round 1, out of it in round 2), then for each dropped key
// an update into a region of its own that the application skips, then one
// more update of every key not dropped (so each partition commits past the
// drops; p-28's into r-solo, a second older than p-29's was).
func groupByLoad(t *testing.T, codec *goavro.Codec, drop []string) [][]*kgo.Record {
	const keys, rounds, regions = 30, 5, 4
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	perm := []int{3, 1, 4, 0, 2}
	val := func(id, region string) []byte {
		v, err := codec.BinaryFromNative([]byte{0, 0, 0, 0, 1}, map[string]any{"id": id, "region": region})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	key := func(k int) string { return fmt.Sprintf("p-%02d", k) }
	var load [][]*kgo.Record
	for j := range rounds {
		var rs []*kgo.Record
		for k := range keys {
			ts := base.Add(time.Duration(perm[j])*time.Second + time.Duration(k)*time.Millisecond)
			r := &kgo.Record{Key: []byte(key(k)), Timestamp: ts}
			region := fmt.Sprintf("r-%d", (k+j)%regions)
			if j == 1 && k == 29 {
				region = "r-solo"
			}
			if j != 3 || k%7 != 0 {
				r.Value = val(fmt.Sprintf("u-%d-%s", j, key(k)), region)
			}
			rs = append(rs, r)
		}
		load = append(load, rs)
	}
	var last []*kgo.Record
	for _, d := range drop {
		last = append(last, &kgo.Record{Key: []byte(d), Value: val("drop-"+d, "r-only-"+d), Timestamp: base.Add(10 * time.Second)})
	}
	for k := range keys {
		if !slices.Contains(drop, key(k)) {
			region := fmt.Sprintf("r-%d", k%regions)
			if k == 28 {
				region = "r-solo"
			}
			last = append(last, &kgo.Record{Key: []byte(key(k)), Value: val("last-"+key(k), region), Timestamp: base.Add(-time.Second)})
		}
	}
	return append(load, last)
}

// groupByScenario runs one table groupBy application (op) as group on its
// own topics, loads it (fault, when set, runs after the first half of the
// load, while the rest is sent; rounds 1 and 2 are each committed at both
// hops before the next is sent, so that r-solo is taken and emptied in
// separate flushes), waits until it has committed everything, and checks
// the audit against the truth read from the topics.
func groupByScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, op groupByOp, group string, drop []string, fault func()) {
	in, out := group+"-profiles", group+"-counts"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: in, Partitions: 3}, kafka.TopicSpec{Name: out, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	codec, avsc := schemaDir(t, dir, groupByProfile)
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{in},
		Output: out, Dir: dir, TableGroupBy: true, TableGroupByOp: op.op, SessionTimeout: 6 * time.Second})
	text, err := os.ReadFile(sa.TopologyFile())
	if err != nil {
		t.Fatal(err)
	}
	cm, rp := groupByAgg.FindSubmatch(text), tableRepartition.FindSubmatch(text)
	if cm == nil || rp == nil {
		t.Fatalf("no grouped aggregation or repartition topic in the topology:\n%s", text)
	}
	node, changelog := string(cm[1]), group+"-"+string(cm[2])+"-changelog"
	hops := []string{in, group + "-" + string(rp[1])}
	cfg := &config.Config{
		Kafka:  config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store:  config.Store{Dir: filepath.Join(dir, "index")},
		Audit:  config.Audit{SettleTimeout: 30 * time.Second},
		Schema: config.Schema{AvscDir: avsc},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(), Output: out,
			Inputs: []config.Input{{Name: "profiles", Topic: in, KeyFormat: config.KeyFormatString, Rekey: "region"}},
		},
	}
	if op.kind != "" {
		cfg.Pipeline.Nodes = []config.Node{{Name: node, Kind: op.kind}}
	}
	if err := cfg.ValidatePipeline(); err != nil {
		t.Fatal(err)
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the table groupBy's %s (%s) is refused: %v", op.name, node, err)
	}
	// The aggregate's runs are also reconciled (reconcile and watch read
	// every topic of a table groupBy whole at each step): a baseline
	// while the application runs, once rounds 1 and 2 are committed, and
	// two steps once it has stopped, each with the audit's rows. The state
	// has a store.dir of its own, apart from the audit's history.
	rcfg := *cfg
	rcfg.Store.Dir = filepath.Join(dir, "reconcile")
	var open []string // the rows open after the last step: stage and group key
	reconcile := func(n int) *app.Step {
		start := time.Now()
		step, err := app.Reconcile(ctx, &rcfg, app.Options{})
		if err != nil {
			t.Fatalf("reconcile step %d of the %s: %v", n, op.name, err)
		}
		if err := step.Commit(); err != nil {
			step.Close()
			t.Fatalf("committing reconcile step %d: %v", n, err)
		}
		step.Close()
		// The findings gone since the last step are exactly its resolved.
		now, gone, resolved := map[string]bool{}, []string(nil), []string(nil)
		for _, r := range step.Result.Rows {
			now[fmt.Sprintf("%s %s", r.Stage, r.Key)] = true
		}
		for _, k := range open {
			if !now[k] {
				gone = append(gone, k)
			}
		}
		for _, r := range step.Result.Resolved {
			resolved = append(resolved, fmt.Sprintf("%s %s", r.Stage, r.Key))
		}
		slices.Sort(gone)
		slices.Sort(resolved)
		if !slices.Equal(gone, resolved) {
			t.Errorf("reconcile step %d resolved %q, want the findings gone since the last step %q", n, resolved, gone)
		}
		open = slices.Sorted(maps.Keys(now))
		t.Logf("%s: reconcile step %d in %v: %d rows, %d resolved, %d records read", group, n, time.Since(start).Round(time.Millisecond),
			len(step.Result.Rows), len(step.Result.Resolved), step.Result.Summary.Inputs["profiles"].Scanned)
		return step
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(in))
	if err != nil {
		t.Fatal(err)
	}
	load := groupByLoad(t, codec, drop)
	produce := func(from, to int) error {
		for j, rs := range load[from:to] {
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				return err
			}
			if from+j == 1 || from+j == 2 {
				waitAllCommitted(ctx, t, adm, group, hops, sa.Running) // r-solo taken, then emptied, in flushes of their own
			}
			if from+j == 2 && op.op == "aggregate" {
				reconcile(1) // the baseline, mid-run: its rows are not the final audit's
			}
		}
		return nil
	}
	if fault == nil {
		if err := produce(0, len(load)); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := produce(0, len(load)/2); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- produce(len(load)/2, len(load)) }() // retried until the brokers are back
		fault()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	waitAllCommitted(ctx, t, adm, group, hops, sa.Running)
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}

	truth := groupByTruth(ctx, t, c, adm, codec, in, changelog)
	if op.op == "aggregate" {
		groupBySoloRestart(ctx, t, c, adm, out)
	}
	var lostKeys []string
	for _, l := range truth {
		k, _, _ := strings.Cut(l, "@")
		lostKeys = append(lostKeys, k)
	}
	want := slices.Sorted(slices.Values(drop))
	if strings.Join(lostKeys, ",") != strings.Join(want, ",") {
		t.Fatalf("the topics show %q lost at the %s, want the injected %q", truth, op.name, want)
	}

	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	keyAt := groupByKeys(ctx, t, c, adm, in)
	var got []string
	for _, r := range res.Rows {
		if r.Stage != finding.StageChangelog || r.Kind != finding.Missing || r.Topic != in {
			t.Errorf("row %+v: only groups missing from the %s are injected", r, op.name)
			continue
		}
		got = append(got, fmt.Sprintf("%s@%d", keyAt[fmt.Sprintf("%d/%d", r.Partition, r.Offset)], r.Offset))
	}
	slices.Sort(got)
	if strings.Join(got, ",") != strings.Join(truth, ",") {
		t.Errorf("rows for %q, want exactly the records the topics show lost: %q", got, truth)
	}
	if res.Summary.Partial || len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 {
		t.Errorf("partial %v, partitions %+v, inconclusive %+v; want a complete audit", res.Summary.Partial, res.Summary.Partitions, res.Summary.Inconclusive)
	}
	if op.op == "aggregate" {
		for n := 2; n <= 3; n++ {
			step := reconcile(n)
			if g, w := rowsOf(step.Result.Rows), rowsOf(res.Rows); strings.Join(g, "; ") != strings.Join(w, "; ") || len(step.Result.Summary.Partitions) != 0 {
				t.Errorf("reconcile step %d rows %q, partitions %+v; the audit's %q, none", n, g, step.Result.Summary.Partitions, w)
			}
		}
	}
	t.Logf("%s: %d last records audited, %d records read, rows %q", group, res.Summary.Inputs["profiles"].Audited, res.Summary.Inputs["profiles"].Scanned, got)
}

// groupByKeys maps partition/offset of every record of topic to its key.
func groupByKeys(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, topic string) map[string]string {
	t.Helper()
	ranges, err := adm.Ranges(ctx, true, topic)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	rctx, cancel := context.WithTimeout(ctx, truthTimeout)
	defer cancel()
	if err := kafka.Consume(rctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		m[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = string(r.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// groupByTruth reads the table's input and the count's changelog with
// franz-go and returns, sorted, as key@offset, each key's last record by
// offset whose value names a region that the changelog does not hold at a
// timestamp at least the record's: lost before the count.
func groupByTruth(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, codec *goavro.Codec, input, changelog string) []string {
	t.Helper()
	ins := lastByOffset(ctx, t, c, adm, input) // one partition per key: the producer's key hash
	ranges, err := adm.Ranges(ctx, true, changelog)
	if err != nil {
		t.Fatal(err)
	}
	newest := map[string]time.Time{}
	rctx, cancel := context.WithTimeout(ctx, truthTimeout)
	defer cancel()
	if err := kafka.Consume(rctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		if r.Value != nil && r.Timestamp.After(newest[string(r.Key)]) {
			newest[string(r.Key)] = r.Timestamp
		}
		return nil
	}); err != nil {
		t.Fatalf("reading %s: %v", changelog, err)
	}
	var lost []string
	for k, r := range ins {
		if r.Value == nil {
			continue // a delete: its group is owed nothing
		}
		if len(r.Value) < 5 || binary.BigEndian.Uint32(r.Value[1:5]) != 1 {
			t.Fatalf("%s[%d]@%d: not a framed Profile", r.Topic, r.Partition, r.Offset)
		}
		d, _, err := codec.NativeFromBinary(r.Value[5:])
		if err != nil {
			t.Fatal(err)
		}
		region := d.(map[string]any)["region"].(string)
		if ts, ok := newest[region]; !ok || ts.Before(r.Timestamp) {
			lost = append(lost, fmt.Sprintf("%s@%d", k, r.Offset))
		}
	}
	slices.Sort(lost)
	return lost
}

// groupBySoloRestart checks, in the aggregate's output read with franz-go,
// that the Kafka Streams behaviour the phase means to exercise happened:
// the subtractor emptied r-solo (a null value: a tombstone) and p-28 then
// took it again at its own, older, timestamp (the group restarted below
// its earlier timestamp). The audit must still report nothing for r-solo.
func groupBySoloRestart(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, output string) {
	t.Helper()
	ranges, err := adm.Ranges(ctx, true, output)
	if err != nil {
		t.Fatal(err)
	}
	var solo []*kgo.Record
	rctx, cancel := context.WithTimeout(ctx, truthTimeout)
	defer cancel()
	if err := kafka.Consume(rctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		if string(r.Key) == "r-solo" {
			solo = append(solo, r)
		}
		return nil
	}); err != nil {
		t.Fatalf("reading %s: %v", output, err)
	}
	slices.SortFunc(solo, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
	var seq []string
	for _, r := range solo {
		seq = append(seq, fmt.Sprintf("%q@%d", r.Value, r.Timestamp.UnixMilli()))
	}
	if len(solo) != 3 || string(solo[0].Value) != "p-29" || solo[1].Value != nil || string(solo[2].Value) != "p-28" || !solo[2].Timestamp.Before(solo[1].Timestamp) {
		t.Fatalf("output records of r-solo %s: want p-29, a tombstone, then p-28 older than both", strings.Join(seq, " "))
	}
}
