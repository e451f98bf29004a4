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

// tableSourceStore finds, in the describe() text of the table application
// (TOPOLOGY=table), the table source's store, and the reduce's repartition
// topic (generated names).
var (
	tableSourceStore = regexp.MustCompile(`Processor: KTABLE-SOURCE-\d{10} \(stores: \[(\S+)\]\)`)
	tableRepartition = regexp.MustCompile(`Sink: \S+ \(topic: (\S+-repartition)\)`)
)

// tableSource runs the testbed's table application (a table source
// left-joined with a reduced stream: table(profiles) leftJoin
// clicks -> selectKey -> groupByKey -> reduce, toStream, to) on real
// brokers, on one cluster with distinct application ids and topics: clean,
// and losing the last update of two keys of the table (the application
// skips a record whose value starts with "drop:"), both at once; then a
// third instance, built with topology.optimization=all (the table restored
// from its input topic, no changelog), runs while all three brokers are
// killed mid-load and restarted. The table's updates carry timestamps out
// of offset order: its last record by offset is often older than an
// earlier one, so a max-timestamp rule would report every such key stale.
// Once each application has committed all its input at both hops and
// stopped, the truth is read from the topics with franz-go (a key is lost
// at the table when the changelog's last record of it is not the input's
// last by timestamp), and lossaudit audit must report exactly the injected
// records: none for the clean and outage runs; two reconcile steps report
// the audit's rows.
func tableSource(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	t.Run("clean and lossy", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			drop []string
		}{{name: "clean"}, {name: "lossy", drop: []string{"p-03", "p-17"}}} {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				tableScenario(ctx, t, c, adm, "table-"+tc.name, tc.drop, false, nil)
			})
		}
	})
	t.Run("all brokers down, optimized", func(t *testing.T) {
		tableScenario(ctx, t, c, adm, "table-outage", nil, true, func() { allBrokersDown(ctx, t, c) })
	})
}

// tableLoad is what tableScenario writes: rounds of one update per
// profile key (timestamps out of offset order), one click per key after
// each round, the drops, then one more update of every key not dropped.
func tableLoad(drop []string) (profiles, clicks [][]*kgo.Record) {
	const keys, rounds = 30, 5
	base := time.Now().Add(-time.Hour)
	// Round j's timestamps: offsets later, timestamps earlier (3, 1, 4, 0, 2 s).
	perm := []int{3, 1, 4, 0, 2}
	key := func(k int) []byte { return fmt.Appendf(nil, "p-%02d", k) }
	for j := range rounds {
		var ps, cs []*kgo.Record
		for k := range keys {
			ts := base.Add(time.Duration(perm[j])*time.Second + time.Duration(k)*time.Millisecond)
			ps = append(ps, &kgo.Record{Key: key(k), Value: fmt.Appendf(nil, "profile %d of p-%02d", j, k), Timestamp: ts})
			cs = append(cs, &kgo.Record{Key: key(k), Value: key(k)})
		}
		profiles, clicks = append(profiles, ps), append(clicks, cs)
	}
	var last []*kgo.Record
	for _, d := range drop {
		last = append(last, &kgo.Record{Key: []byte(d), Value: []byte("drop: the last update of " + d), Timestamp: base.Add(10 * time.Second)})
	}
	// Every key not dropped gets a last update, older than its first: each
	// partition then processes records after the drops (Kafka Streams
	// commits past a skipped record only with a processed one after it).
	for k := range keys {
		if !slices.Contains(drop, string(key(k))) {
			last = append(last, &kgo.Record{Key: key(k), Value: fmt.Appendf(nil, "profile last of p-%02d", k), Timestamp: base.Add(-time.Second)})
		}
	}
	return append(profiles, last), clicks
}

// tableScenario runs one table application as group on its own topics,
// loads it (fault, when set, runs after the first half of the load, while
// the rest is sent), waits until it has committed everything, and checks
// the audit against the truth read from the topics.
func tableScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, drop []string, optimize bool, fault func()) {
	profiles, clicks, out := group+"-profiles", group+"-clicks", group+"-out"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: profiles, Partitions: 3}, kafka.TopicSpec{Name: clicks, Partitions: 3}, kafka.TopicSpec{Name: out, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{profiles, clicks},
		Output: out, Dir: dir, Table: true, Optimize: optimize, SessionTimeout: 6 * time.Second})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	ps, cs := tableLoad(drop)
	produce := func(from, to int) error {
		for j := from; j < to; j++ {
			var recs []*kgo.Record
			for _, r := range ps[j] {
				r.Topic = profiles
				recs = append(recs, r)
			}
			if j < len(cs) {
				for _, r := range cs[j] {
					r.Topic = clicks
					recs = append(recs, r)
				}
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				return err
			}
		}
		return nil
	}
	if fault == nil {
		if err := produce(0, len(ps)); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := produce(0, len(ps)/2); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- produce(len(ps)/2, len(ps)) }() // retried until the brokers are back
		fault()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	cl.Close()
	text, err := os.ReadFile(sa.TopologyFile())
	if err != nil {
		t.Fatal(err)
	}
	st, rp := tableSourceStore.FindSubmatch(text), tableRepartition.FindSubmatch(text)
	if st == nil || rp == nil {
		t.Fatalf("no table source store or repartition topic in the topology:\n%s", text)
	}
	store := string(st[1])
	waitAllCommitted(ctx, t, adm, group, []string{profiles, clicks, group + "-" + string(rp[1])}, sa.Running)
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}

	in := []config.Input{{Name: "profiles", Topic: profiles, KeyFormat: config.KeyFormatString}, {Name: "clicks", Topic: clicks, KeyFormat: config.KeyFormatString}}
	changelog := group + "-" + store + "-changelog"
	if optimize {
		in[0].ChangelogTopic, changelog = profiles, profiles // the table is restored from its input topic
	}
	cfg := &config.Config{
		Kafka:    config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store:    config.Store{Dir: filepath.Join(dir, "index")},
		Audit:    config.Audit{SettleTimeout: 30 * time.Second},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(), Output: out, Join: "left", Reduce: "plain", Inputs: in},
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the table's topology is refused: %v", err)
	}
	truth := tableTruth(ctx, t, c, adm, profiles, changelog)
	var lostKeys []string
	for _, l := range truth {
		k, _, _ := strings.Cut(l, "@")
		lostKeys = append(lostKeys, k)
	}
	want := slices.Clone(drop)
	slices.Sort(want)
	if strings.Join(lostKeys, ",") != strings.Join(want, ",") {
		t.Fatalf("the topics show %q lost at the table, want the injected %q", truth, want)
	}
	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		if r.Stage != finding.StageChangelog || r.Input != "profiles" || r.Kind != finding.Stale {
			t.Errorf("row %+v: only stale table updates are injected", r)
			continue
		}
		got = append(got, fmt.Sprintf("%s@%d", r.Key, r.Offset))
	}
	slices.Sort(got)
	if strings.Join(got, ",") != strings.Join(truth, ",") {
		t.Errorf("rows for %q, want exactly the records the topics show lost: %q", got, truth)
	}
	if len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 {
		t.Errorf("partitions %+v, inconclusive %+v; want none", res.Summary.Partitions, res.Summary.Inconclusive)
	}
	t.Logf("%s: %d profile records audited, %d clicks, rows %q", group, res.Summary.Inputs["profiles"].Audited, res.Summary.Inputs["clicks"].Audited, got)
	// Two reconcile steps (the baseline, then one that reads the table's
	// input again and its changelog from the state): the audit's rows
	// exactly, each time.
	for n := 1; n <= 2; n++ {
		step, err := app.Reconcile(ctx, cfg, app.Options{})
		if err != nil {
			t.Fatalf("reconcile step %d of the table source: %v", n, err)
		}
		if g, w := rowsOf(step.Result.Rows), rowsOf(res.Rows); strings.Join(g, "; ") != strings.Join(w, "; ") || len(step.Result.Summary.Partitions) != 0 {
			t.Errorf("reconcile step %d rows %q, partitions %+v; the audit's %q, none", n, g, step.Result.Summary.Partitions, w)
		}
		err = step.Commit()
		step.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// tableTruth reads the table source's input and its changelog with
// franz-go and returns, sorted, as key@offset, the input's last record of
// each key whose changelog does not end with it (by timestamp and value):
// lost at the table.
// Under the source-topic optimization the changelog is the input, and
// nothing is lost between them.
func tableTruth(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, input, changelog string) []string {
	t.Helper()
	ins, tab := lastByOffset(ctx, t, c, adm, input), lastByOffset(ctx, t, c, adm, changelog)
	var lost []string
	for k, r := range ins {
		cl, ok := tab[k]
		if !ok || !cl.Timestamp.Equal(r.Timestamp) || string(cl.Value) != string(r.Value) {
			lost = append(lost, fmt.Sprintf("%s@%d", k, r.Offset))
		}
	}
	slices.Sort(lost)
	return lost
}
