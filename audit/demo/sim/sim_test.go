package sim

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/twmb/franz-go/pkg/kfake"
)

// newCluster starts an in-process 3-broker kfake cluster.
func newCluster(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

func run(t *testing.T, brokers []string, sc Scenario) *Truth {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr, err := Run(ctx, brokers, sc)
	if err != nil {
		t.Fatalf("Run(seed %d): %v", sc.Seed, err)
	}
	return tr
}

func TestDescribeMatchesKafkaStreams(t *testing.T) {
	want, err := os.ReadFile("../../streams/topology/testdata/order-abc-3.6.2.txt")
	if err != nil {
		t.Skipf("real describe() output not available: %v", err)
	}
	got := describe(newNames(Scenario{AppID: "app", TopicPrefix: "topic", Output: "joined"}))
	if strings.TrimRight(got, "\n") != strings.TrimRight(string(want), "\n") {
		t.Errorf("describe() differs from Kafka Streams 3.6.2 output:\n%s", got)
	}
}

// rowID identifies a row by everything but the observed values and detail.
type rowID struct {
	stage     finding.Stage
	input     string
	key       string
	partition int32
	offset    int64
	aborted   bool
}

// TestDemoFindingsAreTheInjectedLosses runs the demo scenario and checks
// that the oracle's findings are exactly the injected losses (each at its
// stage, with its input record as evidence), that the benign disturbances
// are there but produce nothing, and that the cluster holds what the
// simulator says it wrote.
func TestDemoFindingsAreTheInjectedLosses(t *testing.T) {
	brokers := newCluster(t)
	start := time.Now()
	tr := run(t, brokers, DemoScenario(1))
	t.Logf("demo: %v total, %+v", time.Since(start), tr.Stats)

	want := map[rowID]bool{}
	kinds := map[FaultKind]int{}
	var wantParts []finding.PartitionFinding
	for _, in := range tr.Injected {
		kinds[in.Kind]++
		switch in.Kind {
		case KindPurged17635:
			wantParts = append(wantParts, finding.PartitionFinding{Kind: finding.PurgedPastCommit, Topic: in.Topic, Partition: in.Partition})
		case KindHangingTxn:
			t.Errorf("the demo leaves no transaction open: %+v", in)
		case KindHealthyRetry, KindInputLag, KindRepartitionLag:
			if in.Loss {
				t.Errorf("benign %s marked as loss: %+v", in.Kind, in)
			}
		default:
			if !in.Loss {
				t.Errorf("injected loss has no finding: %+v", in)
				continue
			}
			stage := stageOf(in.Kind)
			if in.Kind == KindPurgedRecord {
				stage = finding.StageChangelog
			}
			if in.Stage != stage {
				t.Errorf("injected %s found at stage %s: %+v", in.Kind, in.Stage, in)
			}
			aborted := in.Kind == KindAbortedChangelog || in.Kind == KindAbortedOutput
			if (in.Finding == finding.Aborted) != aborted {
				t.Errorf("injected %s found as %s", in.Kind, in.Finding)
			}
			want[rowID{in.Stage, in.Input, in.Key, in.Partition, in.Offset, aborted}] = true
		}
	}
	for _, k := range []FaultKind{KindBeforeRepartition, KindBeforeStore, KindBeforeOutput, KindAbortedChangelog,
		KindAbortedOutput, KindPurged17635, KindPurgedRecord, KindHealthyRetry, KindInputLag, KindRepartitionLag} {
		if kinds[k] == 0 {
			t.Errorf("demo injected no %s", k)
		}
	}
	got := map[rowID]bool{}
	for _, r := range tr.Rows {
		id := rowID{r.Stage, r.Input, string(r.Key), r.Partition, r.Offset, r.Kind == finding.Aborted}
		got[id] = true
		if !want[id] {
			t.Errorf("finding not injected: %+v", id)
		}
		if r.ExpectedTS != r.Timestamp || (r.HasObserved && r.ObservedTS >= r.ExpectedTS) {
			t.Errorf("row %+v: expected %d, observed %d (%v)", id, r.ExpectedTS, r.ObservedTS, r.HasObserved)
		}
	}
	for id := range want {
		if !got[id] {
			t.Errorf("injected loss not in the findings: %+v", id)
		}
	}
	if len(tr.Partitions) != len(wantParts) {
		t.Fatalf("partition findings %+v, want %+v", tr.Partitions, wantParts)
	}
	for i, p := range tr.Partitions {
		if p.Kind != wantParts[i].Kind || p.Topic != wantParts[i].Topic || p.Partition != wantParts[i].Partition {
			t.Errorf("partition finding %+v, want %+v", p, wantParts[i])
		}
	}
	for x, name := range []string{"a", "b", "c"} {
		c := tr.Counts[name]
		aborted := int64(0)
		for _, part := range tr.log.in[x] {
			for _, r := range part {
				if r.Aborted {
					aborted++
				}
			}
		}
		if aborted == 0 {
			t.Errorf("input %s: no record in an aborted upstream transaction", name)
		}
		if c.Scanned != 20000-aborted || c.Audited+c.Pending+c.NullKey+c.NullValue+c.DecodeErrors+c.OutsideWindow != c.Scanned {
			t.Errorf("input %s counts do not add up (%d aborted): %+v", name, aborted, c)
		}
		if c.NullKey == 0 || c.NullValue == 0 || c.DecodeErrors == 0 {
			t.Errorf("input %s has no record dropped by design: %+v", name, c)
		}
	}
	checkTopics(t, brokers, tr)
	checkSchemas(t, brokers, tr)
	checkInjectedInTopics(t, brokers, tr)
}

// checkInjectedInTopics reads the changelogs and output back and checks the
// injected keys from the topics' point of view: the newest committed
// timestamp is below the lost update's, and aborted kinds have an aborted
// record at least as new.
func checkInjectedInTopics(t *testing.T, brokers []string, tr *Truth) {
	t.Helper()
	n := tr.n
	topics := []string{n.changelog[0], n.changelog[1], n.changelog[2], n.output}
	com := readBack(t, brokers, topics, true)
	all := readBack(t, brokers, topics, false)
	newest := func(m map[tp][]seen, topic, key string) int64 {
		best := int64(-1)
		for k, recs := range m {
			if k.topic != topic {
				continue
			}
			for _, r := range recs {
				if r.key == key && r.ts > best {
					best = r.ts
				}
			}
		}
		return best
	}
	idx := map[string]int{"a": 0, "b": 1, "c": 2}
	for _, in := range tr.Injected {
		if !in.Loss || in.Key == "" {
			continue
		}
		topic := n.output
		if in.Stage == finding.StageChangelog {
			topic = n.changelog[idx[in.Input]]
		}
		if c := newest(com, topic, in.Key); c >= in.Timestamp {
			t.Errorf("%s %s/%s: %s holds committed ts %d >= lost update %d", in.Kind, in.Input, in.Key, topic, c, in.Timestamp)
		}
		if in.Kind == KindAbortedChangelog || in.Kind == KindAbortedOutput {
			if a := newest(all, topic, in.Key); a < in.Timestamp {
				t.Errorf("%s %s/%s: no aborted record >= %d in %s", in.Kind, in.Input, in.Key, in.Timestamp, topic)
			}
		}
	}
}

func TestCleanScenarioHasNoFindings(t *testing.T) {
	brokers := newCluster(t)
	tr := run(t, brokers, CleanScenario(7))
	if len(tr.Rows) != 0 || len(tr.Partitions) != 0 {
		t.Errorf("clean pipeline: %d rows, %d partition findings: %+v", len(tr.Rows), len(tr.Partitions), tr.Rows)
	}
	var pending, dropped int64
	for _, c := range tr.Counts {
		pending += c.Pending
		dropped += c.NullKey + c.NullValue + c.DecodeErrors
	}
	if pending == 0 || dropped == 0 {
		t.Errorf("clean scenario should have lag and drops by design: %+v", tr.Counts)
	}
	if tr.Stats.Aborted == 0 {
		t.Errorf("clean scenario should retry aborted transactions: %+v", tr.Stats)
	}
	checkTopics(t, brokers, tr)
}

// TestRandomScenarios runs random pipelines on one cluster: the topics hold
// what the simulator says, and every finding is on a key some fault hit.
func TestRandomScenarios(t *testing.T) {
	brokers := newCluster(t)
	for seed := int64(1); seed <= 8; seed++ {
		sc := RandomScenario(seed)
		tr := run(t, brokers, sc)
		hit := map[string]bool{}
		for _, in := range tr.Injected {
			hit[in.Key] = true
		}
		for _, r := range tr.Rows {
			if !hit[string(r.Key)] {
				t.Errorf("seed %d: finding on a key no fault hit: %+v", seed, r)
			}
		}
		t.Logf("seed %d: %d partitions, %d records/input, %d rows, %d partition findings, %d injections",
			seed, tr.Scenario.Partitions, tr.Scenario.RecordsPerInput, len(tr.Rows), len(tr.Partitions), len(tr.Injected))
		checkTopics(t, brokers, tr)
	}
}

func TestDeterministic(t *testing.T) {
	a := run(t, newCluster(t), RandomScenario(42))
	b := run(t, newCluster(t), RandomScenario(42))
	if len(a.Rows) != len(b.Rows) || len(a.Injected) != len(b.Injected) {
		t.Fatalf("two runs of one seed differ: %d/%d rows, %d/%d injections", len(a.Rows), len(b.Rows), len(a.Injected), len(b.Injected))
	}
	for i := range a.Rows {
		x, y := a.Rows[i], b.Rows[i]
		if x.Input != y.Input || string(x.Key) != string(y.Key) || x.Offset != y.Offset || x.Kind != y.Kind || witnessSig(x) != witnessSig(y) {
			t.Errorf("row %d differs: %+v vs %+v", i, x, y)
		}
	}
}

func TestConfigValidates(t *testing.T) {
	brokers := newCluster(t)
	tr := run(t, brokers, CleanScenario(3))
	cfg := tr.Config(brokers, t.TempDir())
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if err := cfg.ValidatePipeline(); err != nil {
		t.Errorf("ValidatePipeline: %v", err)
	}
	if got := cfg.Pipeline.Inputs[2].ChangelogTopic; got != tr.AppID+"-KSTREAM-REDUCE-STATE-STORE-0000000016-changelog" {
		t.Errorf("input c changelog %q", got)
	}
	if !strings.Contains(tr.Topology, "(topics: ["+tr.Inputs[0].Topic+"])") || !strings.Contains(tr.Topology, "(topic: "+tr.Output+")") {
		t.Errorf("topology does not name the topics:\n%s", tr.Topology)
	}
}

// TestWindowExpectation checks Truth.Expect with a window on a demo-sized
// run: the counts partition the scanned records, fewer are scanned, the
// records outside the window are counted, and every windowed finding is on
// an (input, key) the whole run reports (a window only lowers expected_ts).
func TestWindowExpectation(t *testing.T) {
	brokers := newCluster(t)
	sc := DemoScenario(5)
	sc.RecordsPerInput, sc.Keys, sc.RightOnlyKeys = 4000, 400, 20
	tr := run(t, brokers, sc)
	var lo, hi int64
	for _, in := range tr.log.in[0] {
		for _, r := range in {
			if lo == 0 || r.TS < lo {
				lo = r.TS
			}
			if r.TS > hi {
				hi = r.TS
			}
		}
	}
	w := Window{From: lo + (hi-lo)/3, To: lo + 2*(hi-lo)/3}
	exp := tr.Expect(w)
	full := map[string]bool{}
	for _, r := range tr.Rows {
		full[r.Input+"/"+string(r.Key)] = true
	}
	for _, r := range exp.Rows {
		if r.ExpectedTS < w.From || r.ExpectedTS > w.To {
			t.Errorf("windowed finding outside the window: %s", rowString(r))
		}
		if !full[r.Input+"/"+string(r.Key)] {
			t.Errorf("windowed finding on a key the whole run does not report: %s", rowString(r))
		}
	}
	for name, c := range exp.Counts {
		if c.OutsideWindow == 0 || c.Scanned >= tr.Counts[name].Scanned {
			t.Errorf("input %s: windowed counts %+v vs full %+v", name, c, tr.Counts[name])
		}
		if c.Audited+c.Pending+c.NullKey+c.NullValue+c.DecodeErrors+c.OutsideWindow != c.Scanned {
			t.Errorf("input %s counts do not add up: %+v", name, c)
		}
	}
	if len(exp.Rows) > len(tr.Rows) {
		t.Errorf("window found %d rows, the whole run %d", len(exp.Rows), len(tr.Rows))
	}
}

// TestHangingTransaction leaves a transaction open on an output partition:
// the expectation has a stuck_lso finding, is partial, and withholds the
// output rows of that partition's keys (and only those).
func TestHangingTransaction(t *testing.T) {
	brokers := newCluster(t)
	sc := CleanScenario(11)
	sc.Faults.BeforeOutput, sc.Faults.BeforeStore, sc.Faults.HangingTxns = 9, 4, 1
	sc.LastUpdateOnly = true
	tr := run(t, brokers, sc)
	if !tr.Partial || len(tr.Partitions) != 1 || tr.Partitions[0].Kind != finding.StuckLSO ||
		tr.Partitions[0].Topic != tr.Output || tr.Partitions[0].Partition != 0 {
		t.Fatalf("partial %v, partition findings %+v", tr.Partial, tr.Partitions)
	}
	var outRows, changelogRows int
	for _, r := range tr.Rows {
		if r.Stage == finding.StageOutput {
			outRows++
			if partitionFor(r.Key, sc.Partitions) == 0 {
				t.Errorf("output row on the stuck partition not withheld: %+v", r)
			}
		} else {
			changelogRows++
		}
	}
	if outRows == 0 || changelogRows == 0 {
		t.Errorf("want rows at both stages besides the stuck partition: %d output, %d changelog", outRows, changelogRows)
	}
	// The stuck partition really is stuck: its LSO is below its high watermark.
	cl, err := newClient(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	hw := listOffsets(t, cl, tr.Output, sc.Partitions, -1, 0)
	lso := listOffsets(t, cl, tr.Output, sc.Partitions, -1, 1)
	f := tr.Partitions[0].Stuck
	if hw[0] != f.HighWatermark || lso[0] != f.LSO || lso[0] >= hw[0] {
		t.Errorf("%s[0]: LSO %d, high watermark %d; finding says %+v", tr.Output, lso[0], hw[0], *f)
	}
	for p := 1; p < sc.Partitions; p++ {
		if lso[p] != hw[p] {
			t.Errorf("%s[%d]: LSO %d below high watermark %d", tr.Output, p, lso[p], hw[p])
		}
	}
	checkTopics(t, brokers, tr)
}

// TestResumedPurge plays KAFKA-17635 to its end: the task resets to the new
// log start and goes on. No partition finding remains; the purged records
// that were their key's newest update are changelog findings whose
// repartition evidence is gone.
func TestResumedPurge(t *testing.T) {
	brokers := newCluster(t)
	sc := CleanScenario(5)
	sc.Faults.RepartitionLagPartitions, sc.Faults.Purged17635, sc.Faults.PurgedRecords = 1, 1, 8
	sc.Faults.Resume17635 = true
	tr := run(t, brokers, sc)
	if len(tr.Partitions) != 0 {
		t.Errorf("resumed task still shows %+v", tr.Partitions)
	}
	purged := map[string]bool{}
	for _, in := range tr.Injected {
		if in.Kind == KindPurgedRecord {
			purged[in.Input+"/"+in.Key] = true
		}
		if in.Kind == KindPurged17635 && in.Loss {
			t.Errorf("resumed purge marked as a partition finding: %+v", in)
		}
	}
	if len(purged) == 0 {
		t.Fatal("nothing purged")
	}
	for _, r := range tr.Rows {
		if r.Stage != finding.StageChangelog || witnessSig(r) != detailPurged || !purged[r.Input+"/"+string(r.Key)] {
			t.Errorf("unexpected finding: %s", rowString(r))
		}
	}
	if len(tr.Rows) == 0 {
		t.Error("no purged record was its key's newest update; pick another seed")
	}
	checkTopics(t, brokers, tr)
}
