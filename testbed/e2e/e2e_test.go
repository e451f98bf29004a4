package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// verify reads the stages and compares them with the ledger, failing on any
// difference from want; it returns the observation for further assertions.
func verify(t *testing.T, res *Result, want []Discrepancy) *Observed {
	t.Helper()
	return verifyWith(t, res, res.Ledger, want, nil)
}

// verifyWith is verify against the processed part l of the ledger; when
// pending is not nil the audit must count exactly that many pending records per input.
func verifyWith(t *testing.T, res *Result, l *loadgen.Ledger, want []Discrepancy, pending map[string]int64) *Observed {
	t.Helper()
	return verifyFull(t, res, l, want, pending, nil)
}

// verifyFull is verifyWith that also expects purged_past_commit findings on exactly purged.
func verifyFull(t *testing.T, res *Result, l *loadgen.Ledger, want []Discrepancy, pending map[string]int64, purged []kafka.TP) *Observed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	obs, err := Observe(ctx, res.Env, res.Stages)
	if err != nil {
		t.Fatal(err)
	}
	res.Env.timed("observe", start)
	got, problems := Check(l, obs)
	for _, p := range problems {
		t.Error(p)
	}
	if len(got) == 0 {
		got = nil
	}
	if len(want) == 0 {
		want = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("discrepancies:\n got %v\nwant %v", got, want)
	}
	auditAgrees(t, res, want, pending, purged)
	keys := 0
	for _, m := range obs.Changelog {
		keys += len(m)
	}
	t.Logf("ledger %d records; changelog keys %d, output keys %d; committed %v; aborted %v",
		len(res.Ledger.Entries()), keys, len(obs.Output), obs.Committed, obs.Aborted)
	return obs
}

// auditAgrees runs lossaudit's audit on the scenario's cluster and checks
// that it reports exactly the (stage, input, key, kind) the ledger says, with
// the same expected timestamps and no partition-level findings.
func auditAgrees(t *testing.T, res *Result, want []Discrepancy, pending map[string]int64, purged []kafka.TP) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	ar, _, err := app.Run(ctx, res.Config, app.Options{})
	if err != nil {
		t.Errorf("audit: %v", err)
		return
	}
	res.Env.timed("audit", start)
	got := FromAudit(ar)
	strip := func(ds []Discrepancy) []string {
		var out []string
		for _, d := range ds {
			out = append(out, fmt.Sprintf("%s/%s/%s %s want_ts=%d", d.Stage, d.Input, d.Key, d.Kind, d.Want))
		}
		return out
	}
	if g, w := strings.Join(strip(got), "\n"), strings.Join(strip(want), "\n"); g != w {
		t.Errorf("audit findings differ from the ledger:\n got:\n%s\nwant:\n%s", g, w)
	}
	var wantParts, gotParts []string
	for _, tp := range purged {
		wantParts = append(wantParts, fmt.Sprintf("%s %s[%d]", finding.PurgedPastCommit, tp.Topic, tp.Partition))
	}
	for _, pf := range ar.Summary.Partitions {
		gotParts = append(gotParts, fmt.Sprintf("%s %s[%d]", pf.Kind, pf.Topic, pf.Partition))
	}
	if g, w := strings.Join(sorted(gotParts), "\n"), strings.Join(sorted(wantParts), "\n"); g != w {
		t.Errorf("audit partition findings:\n got:\n%s\nwant:\n%s\n(%+v)", g, w, ar.Summary.Partitions)
	}
	for in, c := range ar.Summary.Inputs {
		t.Logf("audit input %s: %+v", in, *c)
		if pending != nil && c.Pending != pending[in] {
			t.Errorf("audit counts %d pending records of input %s, the ledger and group offsets say %d", c.Pending, in, pending[in])
		}
		if pending == nil && c.Pending != 0 {
			t.Errorf("audit counts %d pending records of input %s after the application caught up", c.Pending, in)
		}
	}
}

func abortedTotal(obs *Observed) int64 {
	n := int64(0)
	for _, a := range obs.Aborted {
		n += a
	}
	return n
}

func TestCleanRun(t *testing.T) {
	res := RunScenario(t, Scenario{})
	if len(res.Truth.Drops) != 0 || len(res.Truth.ThreadsReplaced) != 0 {
		t.Errorf("ground truth of a clean run: drops %v, threads replaced %v", res.Truth.Drops, res.Truth.ThreadsReplaced)
	}
	if n := len(res.Ledger.Entries()); n != 3*600 {
		t.Errorf("ledger has %d records, want %d", n, 3*600)
	}
	obs := verify(t, res, nil)
	notUTF8Keys(t, obs)
}

// notUTF8Keys checks that the customerIds that are not UTF-8 went through
// the application, keyed as Java decodes them (so verify's clean audit
// covered them): each is in every changelog and in the output under its
// U+FFFD form, never under its raw bytes. So did the 100,000-byte one.
func notUTF8Keys(t *testing.T, obs *Observed) {
	t.Helper()
	// Issue 10's example, as kcat showed it: EF BF BD EF BF BD -notutf8.
	if k := loadgen.SelectedKey("\xff\xfe-notutf8"); k != "\xef\xbf\xbd\xef\xbf\xbd-notutf8" {
		t.Errorf("selected key of ff fe -notutf8 is %x", k)
	}
	huge := loadgen.HugeCustomer()
	for _, in := range loadgen.InputNames {
		if _, ok := obs.Changelog[in][huge]; !ok {
			t.Errorf("changelog of %s lacks the %d-byte key", in, len(huge))
		}
	}
	if _, ok := obs.Output[huge]; !ok {
		t.Errorf("output lacks the %d-byte key", len(huge))
	}
	for _, c := range loadgen.NotUTF8Customers() {
		k := loadgen.SelectedKey(c)
		for _, in := range loadgen.InputNames {
			if _, ok := obs.Changelog[in][k]; !ok {
				t.Errorf("changelog of %s has no key %x (customerId %x as Java decodes it)", in, k, c)
			}
			if _, ok := obs.Changelog[in][c]; ok {
				t.Errorf("changelog of %s holds customerId %x under its raw bytes", in, c)
			}
		}
		if _, ok := obs.Output[k]; !ok {
			t.Errorf("output has no key %x (customerId %x as Java decodes it)", k, c)
		}
	}
}

// TestKafka4 runs the clean scenario on each 4.x release of Kafka4
// (brokers and Kafka Streams of that release) whatever the environment
// selects, so every run covers the 3.x line, 4.1 and the newest 4.x.
func TestKafka4(t *testing.T) {
	for _, v := range Kafka4 {
		t.Run(v, func(t *testing.T) {
			res := RunScenario(t, Scenario{KafkaVersion: v, StreamsVersion: v})
			if got := res.Env.Cluster.Version(); got != v {
				t.Fatalf("cluster runs %s, want %s", got, v)
			}
			if len(res.Truth.StreamsVersions) != 1 || res.Truth.StreamsVersions[0] != v {
				t.Fatalf("app reported Kafka Streams %v, want %s", res.Truth.StreamsVersions, v)
			}
			notUTF8Keys(t, verify(t, res, nil))
		})
	}
}

// TestLagDraining stops the application cleanly in the middle of the load:
// what it processed must be complete and everything else counted as pending.
func TestLagDraining(t *testing.T) {
	res := RunScenario(t, Scenario{FaultAfter: time.Second, NoCatchUp: true,
		Fault: func(ctx context.Context, env *Env) error {
			if err := WaitProgress(ctx, env, 100); err != nil {
				return err
			}
			return env.App.Stop()
		}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	processed, pending, err := Split(ctx, res.Env, res.Stages, res.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, n := range pending {
		total += n
	}
	t.Logf("processed %d, pending %v", len(processed.Entries()), pending)
	if total == 0 || len(processed.Entries()) == 0 {
		t.Fatalf("stopping the app after it processed 100 records through both hops of a 6 s load should leave both processed and pending records: processed %d, pending %v",
			len(processed.Entries()), pending)
	}
	verifyWith(t, res, processed, nil, pending)
}

// TestPurgedPastCommit deletes the repartition topics' unprocessed tails while
// the application is stopped (what KAFKA-17635 does): the input records behind
// them count as processed, never reach the stores, and the audit must report
// exactly the (input, key) pairs whose newest update was among them, plus
// purged_past_commit on exactly the purged partitions.
func TestPurgedPastCommit(t *testing.T) {
	var purged []Purged
	var parts []kafka.TP
	// 20 s of load, so that the application is still busy with its inputs
	// when it is stopped even on a slow, shared machine.
	res := RunScenario(t, Scenario{Records: 2000, FaultAfter: time.Second, NoCatchUp: true,
		Fault: func(ctx context.Context, env *Env) error {
			if err := WaitProgress(ctx, env, 100); err != nil {
				return err
			}
			// Stop while records sit committed in the repartition topics
			// and unprocessed by the second hop: that tail is what
			// KAFKA-17635 deletes.
			if err := WaitTail(ctx, env); err != nil {
				return err
			}
			if err := env.App.Stop(); err != nil {
				return err
			}
			stages, err := ParseStages(env.App.TopologyFile())
			if err != nil {
				return err
			}
			purged, parts, err = PurgePastCommit(ctx, env, stages)
			return err
		}})
	if len(purged) == 0 {
		t.Fatal("the stopped application left no unprocessed repartition records to purge")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	processed, pending, err := Split(ctx, res.Env, res.Stages, res.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	lost := map[loadgen.InputKey]bool{}
	bySeq := map[string]map[int64]bool{}
	for _, p := range purged {
		if bySeq[p.Input] == nil {
			bySeq[p.Input] = map[int64]bool{}
		}
		bySeq[p.Input][p.Seq] = true
	}
	for ik, e := range processed.Newest() {
		if bySeq[ik.Input][e.Seq] {
			lost[ik] = true
		}
	}
	// The kinds (missing or stale) come from the observed changelogs; the
	// pairs must be exactly the lost ones.
	obs, err := Observe(ctx, res.Env, res.Stages)
	if err != nil {
		t.Fatal(err)
	}
	found, _ := Check(processed, obs)
	var want []Discrepancy
	for _, d := range found {
		if d.Stage == "changelog" && lost[loadgen.InputKey{Input: d.Input, Key: d.Key}] {
			want = append(want, d)
		}
	}
	if len(want) != len(lost) {
		t.Errorf("ledger check found %d of the %d lost (input, key) pairs: %v", len(want), len(lost), found)
	}
	t.Logf("purged %d repartition records on %d partitions; lost newest updates of %d (input, key) pairs; pending %v",
		len(purged), len(parts), len(lost), pending)
	verifyFull(t, res, processed, want, pending, parts)
	windowedAgrees(t, res, processed)
}

// windowedAgrees audits the scenario's cluster twice, in full and through
// a window starting at the median timestamp of the processed records, and
// requires the windowed audit to name each of its rows with the kind,
// observed timestamp and replay record of the full audit: a stage holding
// a key only from before the window is stale, never missing. At least one
// row must prove the look before the window (stale, observed before it).
func windowedAgrees(t *testing.T, res *Result, processed *loadgen.Ledger) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var ts []int64
	for _, e := range processed.Entries() {
		ts = append(ts, e.Timestamp)
	}
	slices.Sort(ts)
	if len(ts) == 0 {
		t.Fatal("no processed records")
	}
	from := time.UnixMilli(ts[len(ts)/2])
	run := func(cfg config.Config) map[string]finding.Row {
		ar, _, err := app.Run(ctx, &cfg, app.Options{})
		if err != nil {
			t.Fatalf("audit: %v", err)
		}
		out := map[string]finding.Row{}
		for _, r := range ar.Rows {
			out[fmt.Sprintf("%s/%s/%q", r.Stage, r.Input, r.Key)] = r
		}
		return out
	}
	full := *res.Config
	full.Store.Dir = filepath.Join(res.Env.Dir, "store-full")
	windowed := full
	windowed.Store.Dir = filepath.Join(res.Env.Dir, "store-windowed")
	windowed.Window.From = from
	fr, wr := run(full), run(windowed)
	looked := 0
	for k, w := range wr {
		f, ok := fr[k]
		switch {
		case !ok:
			t.Errorf("windowed audit reports %s, the full audit does not", k)
		case f.Kind != w.Kind || f.HasObserved != w.HasObserved || f.ObservedTS != w.ObservedTS || f.Offset != w.Offset:
			t.Errorf("%s: windowed %s observed %d (%v) @%d, full %s observed %d (%v) @%d", k,
				w.Kind, w.ObservedTS, w.HasObserved, w.Offset, f.Kind, f.ObservedTS, f.HasObserved, f.Offset)
		}
		if w.Kind == finding.Stale && w.ObservedTS < from.UnixMilli() {
			looked++
		}
	}
	t.Logf("windowed audit from %s: %d rows (full: %d), %d stale from before the window", from.UTC().Format(time.RFC3339Nano), len(wr), len(fr), looked)
	if looked == 0 {
		t.Error("no windowed row is stale with a value from before the window: the look before it went untested")
	}
}

// secondInstanceLife is how long the second instance of TestSecondInstance
// processes once tasks have moved to it, before it is killed: a scenario
// parameter, nothing is asserted on it.
const secondInstanceLife = 3 * time.Second

// TestSecondInstance starts a second instance with the same application.id
// during the load (a deploy) and kills it a few seconds after tasks moved to
// it (the rollback story): the tasks move back, zombies are fenced, and
// exactly-once holds.
func TestSecondInstance(t *testing.T) {
	var second *streamsapp.App
	res := RunScenario(t, Scenario{Records: 900, FaultAfter: 2 * time.Second,
		Fault: func(ctx context.Context, env *Env) error {
			before, err := Assignments(ctx, env.Admin)
			if err != nil {
				return err
			}
			if len(before) == 0 {
				return fmt.Errorf("group %s has no members while the first instance runs", ApplicationID)
			}
			second, err = streamsapp.New(ctx, streamsapp.Options{Bootstrap: env.Cluster.Bootstrap(), ApplicationID: ApplicationID,
				Inputs: Inputs, Output: Output, SchemasTopic: SchemasTopic, Dir: filepath.Join(env.Dir, "app2"),
				SessionTimeout: 10 * time.Second})
			if err != nil {
				return err
			}
			env.T.Cleanup(func() { _ = second.Kill() })
			if err := second.Start(); err != nil {
				return err
			}
			if err := second.WaitRunning(ctx); err != nil {
				return err
			}
			if err := WaitTasksMoved(ctx, env, before); err != nil {
				return err
			}
			time.Sleep(secondInstanceLife)
			return second.Kill()
		}})
	verify(t, res, nil)
	t.Logf("first instance:\n%s", res.Env.App.LogGrep(8, "ProducerFenced", "TaskMigrated", "lossaudit-streamsapp: state"))
	t.Logf("second instance:\n%s", second.LogGrep(8, "ProducerFenced", "TaskMigrated", "lossaudit-streamsapp: state"))
}

// outage is how long TestAllBrokersKilled keeps every broker down: a
// scenario parameter, longer than the 10 s transaction timeout Kafka Streams
// sets under exactly-once, so that the struck transaction may time out while
// the brokers are down. Nothing is asserted on it; after it the test waits
// for the cluster to be ready.
const outage = 25 * time.Second

func TestAllBrokersKilled(t *testing.T) {
	// A 10 min purge interval keeps the aborted repartition records in the log
	// until they are counted (with Kafka's 30 s they are usually purged first).
	res := RunScenario(t, Scenario{Records: 900, FaultAfter: 3 * time.Second, PurgeInterval: 10 * time.Minute,
		Fault: func(ctx context.Context, env *Env) error {
			// Strike in the middle of a transaction, as the user story's
			// outage did; at a random instant a slow machine may still be
			// starting the application.
			if err := WaitOpenTransaction(ctx, env); err != nil {
				return err
			}
			if err := env.Cluster.KillAll(); err != nil {
				return err
			}
			time.Sleep(outage)
			if err := env.Cluster.StartAll(); err != nil {
				return err
			}
			return env.Cluster.WaitReady(ctx)
		}})
	obs := verify(t, res, nil)
	// The kill struck a transaction that was open (WaitOpenTransaction saw
	// it). Kafka then decides its fate in one of three ways, all of which
	// keep exactly-once (verify above found nothing lost or duplicated):
	// it outlived its timeout during the outage and the restarted
	// coordinator aborted it (the scan shows aborted records); the commit
	// had been decided (PrepareCommit) before the kill and the restarted
	// coordinator completed it (its log says so); or the Streams producer
	// reconnected and committed it before the coordinator's timeout sweep
	// ran. Which one happened is reported, not required: it is a race
	// inside Kafka.
	completed := completedOnLoad(t, res.Env)
	switch {
	case abortedTotal(obs) > 0:
		t.Logf("outcome: aborted by the restarted coordinator (%d aborted records)", abortedTotal(obs))
	case len(completed) > 0:
		t.Logf("outcome: decided before the kill, completed by the restarted coordinator: %v", completed)
	default:
		t.Logf("outcome: committed by the Streams producer after the brokers returned (no aborted records)")
	}
	t.Logf("threads replaced: %v", res.Truth.ThreadsReplaced)
}

// completedOnLoad returns the "Sending txn markers" log lines of the brokers
// since their last start: transactions decided before the kill and completed
// by the coordinator after loading its state.
func completedOnLoad(t *testing.T, env *Env) []string {
	var out []string
	for _, n := range env.Cluster.Nodes {
		log, err := env.Cluster.LogSinceLastStart(n.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, "Sending txn markers for") {
				for _, res := range []string{",COMMIT,", ",ABORT,"} {
					if strings.Contains(line, res) {
						out = append(out, fmt.Sprintf("node %d: %s", n.ID, strings.Trim(res, ",")))
					}
				}
			}
		}
	}
	return out
}

func TestAppKilled(t *testing.T) {
	res := RunScenario(t, Scenario{Records: 900, FaultAfter: 3 * time.Second,
		Fault: func(ctx context.Context, env *Env) error {
			if err := env.App.Kill(); err != nil {
				return err
			}
			if err := env.App.Start(); err != nil {
				return err
			}
			return env.App.WaitRunning(ctx)
		}})
	obs := verify(t, res, nil)
	if len(res.Truth.StreamsVersions) != 2 {
		t.Errorf("app started %d times, want 2", len(res.Truth.StreamsVersions))
	}
	t.Logf("aborted records after kill -9 of the app: %d", abortedTotal(obs))
}

func TestInjectedLoss(t *testing.T) {
	dbs := map[string][]string{"a": {"cust-003"}, "b": {"cust-005", "cust-006"}, "c": {"cust-003"}}
	dbo := []string{"cust-007"}
	res := RunScenario(t, Scenario{DropBeforeStore: dbs, DropBeforeOutput: dbo})
	want := Injected(res.Ledger, dbs, dbo)
	if len(want) != 5 {
		t.Fatalf("injection should cause 5 discrepancies (every key is in every input), got %v", want)
	}
	verify(t, res, want)
	// The ground truth names exactly the injected (stage, input, key) triples.
	seen := map[string]bool{}
	for _, d := range res.Truth.Drops {
		seen[fmt.Sprintf("%s/%s/%s", d.Stage, d.Input, d.Key)] = true
	}
	var got []string
	for k := range seen {
		got = append(got, k)
	}
	wantTruth := []string{"before_output/output/cust-007", "before_store/a/cust-003", "before_store/b/cust-005",
		"before_store/b/cust-006", "before_store/c/cust-003"}
	if strings.Join(sorted(got), " ") != strings.Join(wantTruth, " ") {
		t.Errorf("ground truth drops %v, want %v", sorted(got), wantTruth)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
