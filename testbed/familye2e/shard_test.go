package familye2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/report"
	"github.com/lossaudit/lossaudit/audit/shard/shardtest"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/e2e"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
	"github.com/lossaudit/lossaudit/testbed/poll"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// shardedAudit runs the testbed's selectKey -> reduce -> leftJoin
// application on real brokers twice at once, on one cluster with distinct
// application ids and topics: clean, and losing one key's updates of input
// b before its store and one key's joined results before the output. Once
// each application has committed all its input at both hops and stopped,
// lossaudit audit in one process must report exactly the injected losses
// (the ledger's, as testbed/e2e derives them), and the sharded audit
// (docs/scale.md) of 1, 2, 3 and 4 shards (4 on topics of 3 partitions:
// one index owns no task partition), its indexes run at once with one
// of them killed at its first map entry and another at the first record
// its reduce reads, each run again under a new attempt, must give the same
// rows, CSV, JSON (timings aside) and verdict.
func shardedAudit(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cases := []struct {
		name string
		dbs  map[string][]string
		dbo  []string
	}{
		{name: "clean"},
		{name: "lossy", dbs: map[string][]string{"b": {"cust-005"}}, dbo: []string{"cust-007"}},
	}
	// Both at once, not t.Parallel (see tableJoinTypes): most of a run is
	// waiting for the application.
	var wg sync.WaitGroup
	for _, tc := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(tc.name, func(t *testing.T) { shardScenario(ctx, t, c, adm, "shard-"+tc.name, tc.dbs, tc.dbo) })
		}()
	}
	wg.Wait()
}

// shardScenario runs the left-join application as group with the given
// drops, loads it, waits until it has committed everything and stopped,
// and checks the single audit against the ledger and the sharded audits
// against the single one.
func shardScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, dbs map[string][]string, dbo []string) {
	t0, phases := time.Now(), ""
	phase := func(name string) { phases += fmt.Sprintf(" %s %.1fs", name, time.Since(t0).Seconds()) }
	p := leftJoinPipeline(ctx, t, c, adm, group, 0, dbs, dbo, loadgen.Config{Customers: 30, Records: 300, Rate: 150})
	cfg := p.cfg
	// Kafka Streams does not leave its group on close: the member stays
	// until its session times out. Until then an audit describes the group
	// Stable with one member, and one after it Empty: every run of this
	// phase is compared with every other, so they all start after it.
	waitGroupLeft(ctx, t, adm, group)
	phase("stopped")
	single, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	phase("single audit")
	want := e2e.Injected(p.ledger, dbs, dbo)
	if g, w := discrepancies(e2e.FromAudit(single)), discrepancies(want); g != w {
		t.Fatalf("the single audit reports\n%s\nwant exactly the injected\n%s", g, w)
	}
	if len(dbs)+len(dbo) > 0 && len(want) != len(dbs["b"])+len(dbo) {
		t.Fatalf("the ledger gives %d injected losses %v, want one per dropped key", len(want), want)
	}
	if len(single.Summary.Partitions) != 0 || len(single.Summary.Inconclusive) != 0 {
		t.Fatalf("partitions %+v, inconclusive %+v; want none", single.Summary.Partitions, single.Summary.Inconclusive)
	}
	wantCSV, wantJSON := normalReports(t, single)
	for n := 1; n <= 4; n++ {
		// The last index is killed at its first map entry (mid-map: its
		// buckets half written, no marker) and, with more than one, index
		// 0 at the first record its reduce reads of its task partitions;
		// each is run again.
		kills := map[int]string{n - 1: "map-entry"}
		if n > 1 {
			kills[0] = "reduce-read"
		}
		res := shardIndexes(ctx, t, cfg, filepath.Join(p.dir, fmt.Sprintf("n%d", n)), n, kills)
		gotCSV, gotJSON := normalReports(t, res)
		if gotCSV != wantCSV {
			t.Errorf("%d shards: the CSV differs from the single audit's:\n got %s\nwant %s", n, gotCSV, wantCSV)
		}
		if gotJSON != wantJSON {
			t.Errorf("%d shards: the JSON differs from the single audit's:\n got %s\nwant %s", n, gotJSON, wantJSON)
		}
		if g, w := report.Verdict(res), report.Verdict(single); g != w {
			t.Errorf("%d shards: verdict %s, the single audit's %s", n, g, w)
		}
		if g, w := discrepancies(e2e.FromAudit(res)), discrepancies(want); g != w {
			t.Errorf("%d shards: the rows say\n%s\nwant\n%s", n, g, w)
		}
		phase(fmt.Sprintf("%d shards", n))
	}
	shardSteps(ctx, t, c, p, 3)
	phase("reconcile steps")
	t.Logf("%s: %d rows (%s), verdict %s; phases:%s", group, len(single.Rows), discrepancies(want), report.Verdict(single), phases)
}

// shardSteps takes three reconcile steps of the stopped application, each
// in one process and as n indexes at once (docs/scale.md#sharded-reconcile-steps),
// and compares their reports (when they ran aside): the baseline; a step
// after more input records were written that the stopped application
// does not process (lag, pending); and a step with nothing new (the
// findings judged again from each index's state). At the second step,
// index 1 is killed after judging its keys, before committing its state,
// and index 0 after committing, before marking its reduce; both run again.
func shardSteps(ctx context.Context, t *testing.T, c *kafka.Cluster, p *leftJoin, n int) {
	t.Helper()
	single := *p.cfg
	single.Store.Dir = filepath.Join(p.dir, "reconcile-single")
	dir := filepath.Join(p.dir, fmt.Sprintf("reconcile-n%d", n))
	for step := 1; step <= 3; step++ {
		if step == 2 {
			gen, err := loadgen.New(ctx, loadgen.Config{Brokers: c.Bootstrap(), Topics: [3]string{p.cfg.Pipeline.Inputs[0].Topic, p.cfg.Pipeline.Inputs[1].Topic, p.cfg.Pipeline.Inputs[2].Topic},
				SchemasTopic: p.cfg.Schema.SchemasTopic, Customers: 30, Records: 40, Rate: -1, Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			if err := gen.Run(ctx); err != nil {
				t.Fatalf("more load: %v", err)
			}
		}
		st, err := app.Reconcile(ctx, &single, app.Options{})
		if err != nil {
			t.Fatalf("step %d, one process: %v", step, err)
		}
		want := st.Result
		if err := st.Commit(); err != nil {
			t.Fatal(err)
		}
		st.Close()
		kills := map[int]string{}
		if step == 2 {
			kills = map[int]string{0: "reduce-committed", 1: "reduce-judged"}
		}
		got := shardStepIndexes(ctx, t, p.cfg, dir, n, kills)
		wantCSV, wantJSON := normalStep(t, want)
		gotCSV, gotJSON := normalStep(t, got)
		if gotCSV != wantCSV {
			t.Errorf("step %d, %d indexes: the CSV differs from the single step's:\n got %s\nwant %s", step, n, gotCSV, wantCSV)
		}
		if gotJSON != wantJSON {
			t.Errorf("step %d, %d indexes: the JSON differs from the single step's:\n got %s\nwant %s", step, n, gotJSON, wantJSON)
		}
		var pending int64
		for _, in := range want.Summary.Inputs {
			pending += in.Pending
		}
		if step == 2 && pending < 3*40 {
			t.Errorf("step 2: %d records pending, want at least the %d written while the application is stopped", pending, 3*40)
		}
		t.Logf("step %d: %d rows, %d resolved, %d pending, verdict %s: %d indexes equal", step, len(want.Rows), len(want.Resolved), pending, report.Verdict(want), n)
	}
}

// shardStepIndexes runs the n indexes of a sharded reconcile step of cfg
// at once, each with its own store dir/store-<i> (kept from step to
// step), the shard directory dir/shards; the first attempt of each index
// of kills is stopped at its hook point and run again. Index 0's step is
// committed and returned.
func shardStepIndexes(ctx context.Context, t *testing.T, cfg *config.Config, dir string, n int, kills map[int]string) *finding.Result {
	t.Helper()
	var wg sync.WaitGroup
	var res *finding.Result
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := *cfg
			c.Store.Dir = filepath.Join(dir, fmt.Sprintf("store-%d", i))
			so := app.ShardOptions{Dir: filepath.Join(dir, "shards"), Shards: n, Index: i, Poll: 50 * time.Millisecond, Wait: 2 * time.Minute}
			if at, ok := kills[i]; ok {
				so.Hook = func(point string) error {
					if point == at {
						return errKilled
					}
					return nil
				}
				if _, _, err := app.ShardReconcile(ctx, &c, app.Options{}, so, 0); !errors.Is(err, errKilled) {
					errs[i] = fmt.Errorf("index %d of %d, killed at %s: %v, want it killed there", i, n, at, err)
					return
				}
				so.Hook = nil
			}
			st, _, err := app.ShardReconcile(ctx, &c, app.Options{}, so, 0)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("index %d of %d: %w", i, n, err)
			case (st.Result != nil) != (i == 0):
				errs[i] = fmt.Errorf("index %d of %d: a result %t, want one from index 0 only", i, n, st.Result != nil)
			case i == 0:
				res = st.Result
				errs[i] = st.Commit(ctx)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// normalStep renders a reconcile step's reports without what depends on
// when it ran (shardtest.StepReports).
func normalStep(t *testing.T, res *finding.Result) (csv, js string) {
	t.Helper()
	csv, js, err := shardtest.StepReports(res)
	if err != nil {
		t.Fatal(err)
	}
	return csv, js
}

// leftJoin is a run of the left-join application, stopped once it
// committed everything.
type leftJoin struct {
	dir, cfgFile string
	cfg          *config.Config
	ledger       *loadgen.Ledger
}

// leftJoinPipeline runs the testbed's selectKey -> reduce -> leftJoin
// application as group on its own topics (parts partitions each, 0: 3)
// with the given drops, writes load (its brokers, topics and schemas topic set
// here), waits until the application has committed all of it at both hops,
// stops it and returns its audit configuration (the store under the run's
// directory, "single").
func leftJoinPipeline(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, parts int32, dbs map[string][]string, dbo []string, load loadgen.Config) *leftJoin {
	t.Helper()
	if parts == 0 {
		parts = 3
	}
	inputs := [3]string{group + "-a", group + "-b", group + "-c"}
	out, schemas := group+"-out", group+"-schemas"
	specs := []kafka.TopicSpec{{Name: out, Partitions: parts}, {Name: schemas, Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}}}
	for _, in := range inputs {
		specs = append(specs, kafka.TopicSpec{Name: in, Partitions: parts})
	}
	if err := adm.CreateTopics(ctx, specs...); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: inputs, Output: out,
		SchemasTopic: schemas, Dir: dir, DropBeforeStore: dbs, DropBeforeOutput: dbo, SessionTimeout: 6 * time.Second})
	load.Brokers, load.Topics, load.SchemasTopic = c.Bootstrap(), inputs, schemas
	gen, err := loadgen.New(ctx, load)
	if err != nil {
		t.Fatal(err)
	}
	if err := gen.Run(ctx); err != nil {
		t.Fatalf("load: %v", err)
	}
	text, err := os.ReadFile(sa.TopologyFile())
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, m := range joinStore.FindAllSubmatch(text, -1) {
		topics = append(topics, group+"-"+string(m[1])+"-repartition")
	}
	if len(topics) != 3 {
		t.Fatalf("want 3 repartition topics in the topology, found %q:\n%s", topics, text)
	}
	waitAllCommitted(ctx, t, adm, group, append(topics, inputs[:]...), sa.Running)
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "audit.yaml")
	var y strings.Builder
	fmt.Fprintf(&y, "kafka:\n  brokers: [%s]\n", quoteList(c.Bootstrap()))
	fmt.Fprintf(&y, "schema:\n  schemas_topic: %q\n", schemas)
	fmt.Fprintf(&y, "pipeline:\n  application_id: %q\n  topology_file: %q\n  output: %q\n  join: left\n  reduce: plain\n  inputs:\n", group, sa.TopologyFile(), out)
	for i, in := range inputs {
		fmt.Fprintf(&y, "    - {name: %s, topic: %q, rekey: customerId, key_format: string}\n", loadgen.InputNames[i], in)
	}
	fmt.Fprintf(&y, "store:\n  dir: %q\nreport:\n  csv: \"\"\n", filepath.Join(dir, "single"))
	if err := os.WriteFile(cfgFile, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{IgnoreEnv: testbedenv.Is, File: cfgFile})
	if err != nil {
		t.Fatalf("loading %s: %v", cfgFile, err)
	}
	return &leftJoin{dir: dir, cfgFile: cfgFile, cfg: cfg, ledger: gen.Ledger()}
}

// discrepancies is ds one per line, without the timestamps seen.
func discrepancies(ds []e2e.Discrepancy) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s/%s/%s %s want_ts=%d\n", d.Stage, d.Input, d.Key, d.Kind, d.Want)
	}
	return b.String()
}

// errKilled stops a shard as a killed process would.
var errKilled = errors.New("killed by the test")

// shardIndexes runs the n indexes of a sharded audit of cfg at once, in
// this process, each with its own store under dir and the shard directory
// dir/shards; the first attempt of each index of kills is stopped at its
// hook point (audit/shard's Options.Hook) and run again. It returns index
// 0's result.
func shardIndexes(ctx context.Context, t *testing.T, cfg *config.Config, dir string, n int, kills map[int]string) *finding.Result {
	t.Helper()
	var wg sync.WaitGroup
	var res *finding.Result
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := *cfg
			c.Store.Dir = filepath.Join(dir, fmt.Sprintf("store-%d", i))
			so := app.ShardOptions{Dir: filepath.Join(dir, "shards"), Shards: n, Index: i, Poll: 50 * time.Millisecond, Wait: 2 * time.Minute}
			if at, ok := kills[i]; ok {
				// The hook runs on a read's goroutine at reduce-read.
				var killed atomic.Bool
				so.Hook = func(point string) error {
					if point == at {
						killed.Store(true)
						return errKilled
					}
					return nil
				}
				if _, _, _, err := app.Shard(ctx, &c, app.Options{}, so); !errors.Is(err, errKilled) || !killed.Load() {
					errs[i] = fmt.Errorf("index %d of %d, killed at %s: %v, want it killed there", i, n, at, err)
					return
				}
				so.Hook = nil
			}
			r, _, _, err := app.Shard(ctx, &c, app.Options{}, so)
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("index %d of %d: %w", i, n, err)
			case (r != nil) != (i == 0):
				errs[i] = fmt.Errorf("index %d of %d: a result %t, want one from index 0 only", i, n, r != nil)
			case i == 0:
				res = r
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// normalReports renders res as the CSV and JSON reports, the JSON without
// what differs between two audits of the same snapshot (when they ran, how
// long each phase took, which decode errors were read first).
func normalReports(t *testing.T, res *finding.Result) (csv, js string) {
	t.Helper()
	var c, j bytes.Buffer
	if err := report.WriteResultCSV(&c, res); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteJSON(&j, res); err != nil {
		t.Fatal(err)
	}
	return c.String(), normalJSON(t, j.Bytes())
}

// normalJSON is the JSON report js without what differs between two
// audits of the same snapshot.
func normalJSON(t *testing.T, js []byte) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"started", "finished", "timings"} {
		delete(v, k)
	}
	if ds, ok := v["decode_error_samples"].([]any); ok {
		v["decode_error_samples"] = len(ds)
	}
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestShardedAuditMeasure (LOSSAUDIT_SHARD_MEASURE=records per input, e.g.
// 100000; skipped without it) measures the sharded audit on real brokers
// (docs/scale.md, "Measured"): a cluster of its own, the left-join
// application run over that many records per input (6 partitions, a
// tenth as many customers), then `lossaudit audit` as one process and as 1 and 2
// processes at once (JOB_COMPLETION_INDEX): each process's wall time,
// peak RSS and what it read and shuffled are logged, and the reports must
// equal the single audit's.
func TestShardedAuditMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LOSSAUDIT_SHARD_MEASURE"))
	if n <= 0 {
		t.Skip("LOSSAUDIT_SHARD_MEASURE (records per input) is not set")
	}
	c := kafka.StartForTest(t, 3)
	adm, err := kafka.NewAdmin(c.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	began := time.Now()
	p := leftJoinPipeline(ctx, t, c, adm, "shard-measure", 6, nil, nil, loadgen.Config{Customers: max(n/10, 1), Records: n, Rate: -1, Timeout: 20 * time.Minute})
	t.Logf("application: %d records per input, %d customers, loaded and processed in %s", n, max(n/10, 1), time.Since(began).Round(time.Second))
	bin := filepath.Join(t.TempDir(), "lossaudit")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/lossaudit/lossaudit/cmd/lossaudit").CombinedOutput(); err != nil {
		t.Fatalf("building lossaudit: %v\n%s", err, out)
	}
	run := func(label string, env []string, args ...string) (string, time.Duration, int64) {
		cmd := exec.CommandContext(ctx, bin, append([]string{"audit", "-q", "-c", p.cfgFile}, args...)...)
		cmd.Env = append(testbedenv.Strip(os.Environ()), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		hwm := peakRSS(cmd.Process.Pid)
		err := cmd.Wait()
		took := time.Since(start)
		kb := hwm()
		if code := cmd.ProcessState.ExitCode(); err != nil && code != 1 {
			t.Errorf("%s: %v\n%s", label, err, stderr.String())
		}
		return stderr.String(), took, kb
	}
	report := func(name string) []string {
		return []string{"--csv", filepath.Join(p.dir, name+".csv"), "--json", filepath.Join(p.dir, name+".json")}
	}
	var want []byte
	// Three rounds, each a single audit and 1 and 2 shards in turn: the
	// machine is shared, one round's figures can be another's load.
	for round := range 3 {
		single := fmt.Sprintf("single-%d", round)
		_, took, kb := run("single audit", nil, append(report(single), "--store-dir", filepath.Join(p.dir, single))...)
		t.Logf("round %d: single audit: wall %s, peak RSS %d MiB (load average %s)", round, took.Round(time.Millisecond), kb>>10, loadAverage())
		js, err := os.ReadFile(filepath.Join(p.dir, single+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if want == nil {
			want = js
		} else if g, w := normalJSON(t, js), normalJSON(t, want); g != w {
			t.Errorf("round %d: the single audit's JSON differs from the first's:\n got %s\nwant %s", round, g, w)
		}
		for _, shards := range []int{1, 2} {
			name := fmt.Sprintf("n%d-%d", shards, round)
			var wg sync.WaitGroup
			lines := make([]string, shards)
			start := time.Now()
			for i := range shards {
				wg.Add(1)
				go func() {
					defer wg.Done()
					stderr, took, kb := run(fmt.Sprintf("%d shards, index %d", shards, i), []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)},
						append(report(name), "--shards", strconv.Itoa(shards), "--shard-poll", "100ms", "--shard-dir", filepath.Join(p.dir, name), "--store-dir", filepath.Join(p.dir, fmt.Sprintf("%s-s%d", name, i)))...)
					var last string
					if ls := strings.Split(strings.TrimSpace(stderr), "\n"); len(ls) > 0 {
						last = ls[len(ls)-1]
					}
					lines[i] = fmt.Sprintf("index %d: wall %s, peak RSS %d MiB; %s", i, took.Round(time.Millisecond), kb>>10, last)
				}()
			}
			wg.Wait()
			t.Logf("round %d: %d shards: wall %s (load average %s)\n  %s", round, shards, time.Since(start).Round(time.Millisecond), loadAverage(), strings.Join(lines, "\n  "))
			got, err := os.ReadFile(filepath.Join(p.dir, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := normalJSON(t, got), normalJSON(t, want); g != w {
				t.Errorf("round %d, %d shards: the JSON differs from the single audit's:\n got %s\nwant %s", round, shards, g, w)
			}
		}
	}
	if l1, l2 := p.ledger.Entries(), 3*n; len(l1) != l2 {
		t.Errorf("the ledger holds %d records, want %d", len(l1), l2)
	}
}

// loadAverage is the machine's load average over the last minute.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// peakRSS samples the peak RSS (VmHWM) of process pid every 20 ms until
// the function it returns is called (after the process was waited for),
// which returns the largest value seen, in KiB.
func peakRSS(pid int) func() int64 {
	var hwm atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		status := fmt.Sprintf("/proc/%d/status", pid)
		for {
			if b, err := os.ReadFile(status); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						if v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64); err == nil && v > hwm.Load() {
							hwm.Store(v)
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(done)
		<-stopped
		return hwm.Load()
	}
}

// waitGroupLeft waits until the group has no member (the stopped
// application's session timed out).
func waitGroupLeft(ctx context.Context, t *testing.T, adm *kafka.Admin, group string) {
	t.Helper()
	var last string
	err := poll.Until(ctx, 2*time.Minute, 200*time.Millisecond, "the stopped application's member to leave group "+group, func() bool {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, adm.Client())
		if err != nil {
			last = err.Error()
			return false
		}
		for _, g := range resp.Groups {
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				last = err.Error()
				return false
			}
			if len(g.Members) > 0 {
				last = fmt.Sprintf("%s with %d members", g.State, len(g.Members))
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("%v (last: %s)", err, last)
	}
}
