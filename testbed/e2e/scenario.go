// Package e2e runs end-to-end scenarios of the user story's pipeline on real
// Apache Kafka brokers with the real Kafka Streams application, and checks
// the outcome against the load generator's ledger and the application's
// ground truth. RunScenario also hands back a ready lossaudit configuration,
// so audit assertions can be added next to the ledger-based ones.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// Topic names used by every scenario.
const (
	ApplicationID = "lossaudit-tb"
	Output        = "joined"
	SchemasTopic  = "_schemas"
)

// Kafka4 lists the 4.x releases TestKafka4 runs (brokers and Kafka Streams
// of the same release): the 4.1 line and the newest release served.
var Kafka4 = []string{"4.1.2", "4.4.0"}

// Inputs are the input topics in join order (a, b, c).
var Inputs = [3]string{"in-a", "in-b", "in-c"}

// Scenario describes one end-to-end run.
type Scenario struct {
	// KafkaVersion and StreamsVersion override LOSSAUDIT_KAFKA_VERSION and
	// LOSSAUDIT_STREAMS_VERSION (defaults 3.9.2 and 3.6.2).
	KafkaVersion, StreamsVersion string
	Records                      int // per input; default 600
	Rate                         int // records per second per input; default 100
	Customers                    int // distinct "cust-NNN" selected keys; default 40 (plus loadgen.NotUTF8Customers and loadgen.HugeCustomer)
	// DropBeforeStore and DropBeforeOutput inject loss in the application (see streamsapp.Options).
	DropBeforeStore  map[string][]string
	DropBeforeOutput []string
	// OnStart, if set, runs once the application is running, before the
	// load starts (to start watching the pipeline).
	OnStart func(ctx context.Context, env *Env) error
	// FaultAfter is how long after the load starts Fault runs (concurrently with the load).
	FaultAfter time.Duration
	// Fault, if set, injects a failure (kill brokers, kill the app, ...).
	Fault func(ctx context.Context, env *Env) error
	// KeepRunning leaves the application running after the load; by default
	// it is stopped cleanly once caught up, so the topics are quiescent.
	KeepRunning bool
	// NoCatchUp skips waiting for the application to process everything
	// (for scenarios that stop it on purpose).
	NoCatchUp bool
	// PurgeInterval is the application's repartition.purge.interval.ms; 0 keeps Kafka's 30 s.
	PurgeInterval time.Duration
	// GroupProtocol is the application's group.protocol ("streams": a
	// KIP-1071 streams group; "" the classic protocol).
	GroupProtocol string
}

// Env is the running testbed of one scenario.
type Env struct {
	T       testing.TB
	Dir     string
	Cluster *kafka.Cluster
	Admin   *kafka.Admin
	App     *streamsapp.App
	// Ledger is the load's ledger, filled while the load runs.
	Ledger *loadgen.Ledger
	// Timings of the phases, for the report.
	Timings []Timing
}

// Timing is the wall time of one phase.
type Timing struct {
	Phase string
	D     time.Duration
}

func (e *Env) timed(phase string, start time.Time) {
	e.Timings = append(e.Timings, Timing{phase, time.Since(start)})
}

// Result is what a scenario hands to assertions.
type Result struct {
	Env    *Env
	Ledger *loadgen.Ledger
	Truth  *streamsapp.GroundTruth
	// Config is a ready lossaudit configuration of the pipeline (also written to ConfigFile).
	Config     *config.Config
	ConfigFile string
	// Stages maps input name to its repartition topic and changelog, parsed from the topology file.
	Stages map[string]Stage
}

// Stage is what the testbed derived for one input from Topology#describe().
type Stage struct {
	Input, Topic, Store, Repartition, Changelog string
}

// Skip skips t when tests against real Kafka are turned off
// (LOSSAUDIT_REAL_KAFKA=0) or Java or Maven are not installed.
func Skip(t testing.TB) {
	t.Helper()
	kafka.SkipUnlessAvailable(t)
}

// RunScenario starts a 3-node cluster, creates the topics, starts the Kafka
// Streams application, produces the load (running the fault meanwhile),
// waits until the application has processed everything and returns the
// ledger, the ground truth and a ready audit configuration. Processes are
// cleaned up when the test ends; logs are printed when it failed.
func RunScenario(t *testing.T, sc Scenario) *Result {
	t.Helper()
	Skip(t)
	if sc.Records == 0 {
		sc.Records = 600
	}
	if sc.Rate == 0 {
		sc.Rate = 100
	}
	if sc.Customers == 0 {
		sc.Customers = 40
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	env := &Env{T: t, Dir: scenarioDir(t)}
	t0 := time.Now()
	t.Cleanup(func() {
		t.Logf("scenario phases: %v, total %v", env.Timings, time.Since(t0).Round(time.Millisecond))
	})

	start := time.Now()
	c, err := kafka.Start(ctx, kafka.Options{Version: sc.KafkaVersion, Dir: filepath.Join(env.Dir, "kafka")})
	if err != nil {
		t.Fatal(err)
	}
	env.Cluster = c
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("kafka node %d log tail (%s):\n%s", n.ID, n.LogFile, c.LogTail(n.ID, 25))
			}
		}
		c.Close()
	})
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	env.timed("kafka "+c.Version()+" up", start)

	adm, err := kafka.NewAdmin(c.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adm.Close)
	env.Admin = adm

	specs := []kafka.TopicSpec{{Name: Output, Partitions: 3},
		{Name: SchemasTopic, Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}}}
	for _, in := range Inputs {
		specs = append(specs, kafka.TopicSpec{Name: in, Partitions: 3})
	}
	if err := adm.CreateTopics(ctx, specs...); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	// Every scenario includes customerIds that are not valid UTF-8: the
	// application keys them as Java decodes them, and the audit must too.
	gen, err := loadgen.New(ctx, loadgen.Config{Brokers: c.Bootstrap(), Topics: Inputs, SchemasTopic: SchemasTopic,
		Customers: sc.Customers, ExtraCustomers: append(loadgen.NotUTF8Customers(), loadgen.HugeCustomer()), Records: sc.Records, Rate: sc.Rate})
	if err != nil {
		t.Fatal(err)
	}
	app, err := streamsapp.New(ctx, streamsapp.Options{Version: sc.StreamsVersion, Bootstrap: c.Bootstrap(), ApplicationID: ApplicationID,
		Inputs: Inputs, Output: Output, SchemasTopic: SchemasTopic, Dir: filepath.Join(env.Dir, "app"),
		DropBeforeStore: sc.DropBeforeStore, DropBeforeOutput: sc.DropBeforeOutput, SessionTimeout: 10 * time.Second,
		PurgeInterval: sc.PurgeInterval, GroupProtocol: sc.GroupProtocol})
	if err != nil {
		t.Fatal(err)
	}
	env.App = app
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("streams app warnings and errors (%s):\n%s", app.LogFile(), app.LogGrep(60, " WARN ", " ERROR ", "ground-truth:", "state "))
			t.Logf("streams app log tail:\n%s", app.LogTail(20))
		}
		_ = app.Kill()
	})
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	if err := app.WaitRunning(ctx); err != nil {
		t.Fatal(err)
	}
	env.timed("streams "+app.Version()+" running", start)
	env.Ledger = gen.Ledger()
	if sc.OnStart != nil {
		if err := sc.OnStart(ctx, env); err != nil {
			t.Fatal(err)
		}
	}

	start = time.Now()
	loadErr := make(chan error, 1)
	go func() { loadErr <- gen.Run(ctx) }()
	if sc.Fault != nil {
		select {
		case <-time.After(sc.FaultAfter):
		case <-ctx.Done():
		}
		fs := time.Now()
		if err := sc.Fault(ctx, env); err != nil {
			t.Fatalf("injecting fault: %v", err)
		}
		env.timed("fault", fs)
	}
	if err := <-loadErr; err != nil {
		t.Fatalf("load: %v", err)
	}
	env.timed(fmt.Sprintf("load %d records x 3 inputs", sc.Records), start)
	if err := gen.Ledger().WriteFile(filepath.Join(env.Dir, "ledger.jsonl")); err != nil {
		t.Fatal(err)
	}

	start = time.Now()
	stages, err := ParseStages(app.TopologyFile())
	if err != nil {
		t.Fatal(err)
	}
	if !sc.NoCatchUp {
		if err := WaitCaughtUp(ctx, env, stages); err != nil {
			t.Fatal(err)
		}
		env.timed("caught up", start)
	}
	if !sc.KeepRunning {
		if err := app.Stop(); err != nil {
			t.Fatal(err)
		}
	}

	truth, err := streamsapp.ReadGroundTruth(app.GroundTruthFile())
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(env.Dir, "audit.yaml")
	if err := os.WriteFile(cfgFile, []byte(AuditYAML(c.Bootstrap(), app.TopologyFile(), filepath.Join(env.Dir, "lossaudit-data"))), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{IgnoreEnv: testbedenv.Is, File: cfgFile})
	if err != nil {
		t.Fatalf("loading generated %s: %v", cfgFile, err)
	}
	return &Result{Env: env, Ledger: gen.Ledger(), Truth: truth, Config: cfg, ConfigFile: cfgFile, Stages: stages}
}

// KeepEnv names the environment variable that, when set to a directory,
// makes scenarios keep their working directory (logs, data, ledger) there.
const KeepEnv = "LOSSAUDIT_TESTBED_KEEP"

func scenarioDir(t *testing.T) string {
	root := os.Getenv(KeepEnv)
	if root == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.MkdirTemp(root, strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("keeping the scenario's files in %s", d)
	return d
}

// AuditYAML returns a lossaudit configuration of the testbed pipeline.
func AuditYAML(brokers []string, topologyFile, storeDir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n", quoteJoin(brokers))
	fmt.Fprintf(&b, "schema:\n  schemas_topic: %q\n", SchemasTopic)
	fmt.Fprintf(&b, "pipeline:\n  application_id: %q\n  topology_file: %q\n  output: %q\n  join: left\n  reduce: plain\n  inputs:\n", ApplicationID, topologyFile, Output)
	for i, in := range Inputs {
		fmt.Fprintf(&b, "    - {name: %s, topic: %q, rekey: customerId, key_format: string}\n", loadgen.InputNames[i], in)
	}
	fmt.Fprintf(&b, "store:\n  dir: %q\nreport:\n  csv: \"\"\n", storeDir)
	return b.String()
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

var (
	sourceRe = regexp.MustCompile(`Source: \S+ \(topics: \[([^\]]*)\]\)`)
	sinkRe   = regexp.MustCompile(`Sink: \S+ \(topic: (\S+)\)`)
)

// ParseStages derives each input's repartition topic, store and changelog
// from the Topology#describe() text: the sub-topology reading input X sinks
// to "<store>-repartition".
func ParseStages(topologyFile string) (map[string]Stage, error) {
	b, err := os.ReadFile(topologyFile)
	if err != nil {
		return nil, fmt.Errorf("reading topology: %w", err)
	}
	out := map[string]Stage{}
	for _, block := range strings.Split(string(b), "Sub-topology:") {
		src := sourceRe.FindStringSubmatch(block)
		sink := sinkRe.FindStringSubmatch(block)
		if src == nil || sink == nil || !strings.HasSuffix(sink[1], "-repartition") {
			continue
		}
		for i, in := range Inputs {
			if strings.TrimSpace(src[1]) == in {
				store := strings.TrimSuffix(sink[1], "-repartition")
				out[loadgen.InputNames[i]] = Stage{Input: loadgen.InputNames[i], Topic: in, Store: store,
					Repartition: ApplicationID + "-" + sink[1], Changelog: ApplicationID + "-" + store + "-changelog"}
			}
		}
	}
	if len(out) != 3 {
		return nil, fmt.Errorf("topology %s: found stages for %d of 3 inputs: %v", topologyFile, len(out), out)
	}
	return out, nil
}

// Lag returns, for every partition of the inputs and repartition topics, the
// committed offset's distance to the last stable offset (absent commit = whole log).
func Lag(ctx context.Context, adm *kafka.Admin, stages map[string]Stage) (map[kafka.TP]int64, error) {
	var topics []string
	for _, s := range stages {
		topics = append(topics, s.Topic, s.Repartition)
	}
	sort.Strings(topics)
	committed, err := groupOffsets(ctx, adm, topics)
	if err != nil {
		return nil, err
	}
	ranges, err := adm.Ranges(ctx, true, topics...)
	if err != nil {
		return nil, err
	}
	lag := map[kafka.TP]int64{}
	for _, r := range ranges {
		tp := kafka.TP{Topic: r.Topic, Partition: r.Partition}
		c, ok := committed[tp]
		if !ok {
			c = r.From
		}
		lag[tp] = r.To - c
	}
	return lag, nil
}

// WaitCaughtUp waits until the application's committed offsets reach the last
// stable offset of every input and repartition partition.
func WaitCaughtUp(ctx context.Context, env *Env, stages map[string]Stage) error {
	var last map[kafka.TP]int64
	for {
		lag, err := Lag(ctx, env.Admin, stages)
		if err == nil {
			total := int64(0)
			for _, l := range lag {
				total += l
			}
			if total == 0 {
				return nil
			}
			last = lag
		}
		if !env.App.Running() {
			return fmt.Errorf("streams app exited before catching up (lag %v)", last)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the app to catch up: %w (lag %v, last error %v)", ctx.Err(), last, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// WaitProgress waits until the application has processed at least n records
// through both hops: the group's committed offsets on the repartition topics
// (the second hop) sum to n or more.
func WaitProgress(ctx context.Context, env *Env, n int64) error {
	stages, err := ParseStages(env.App.TopologyFile())
	if err != nil {
		return err
	}
	var topics []string
	for _, s := range stages {
		topics = append(topics, s.Repartition)
	}
	for {
		c, err := groupOffsets(ctx, env.Admin, topics)
		sum := int64(0)
		if err == nil {
			for _, o := range c {
				sum += o
			}
			if sum >= n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the app to process %d records through both hops (at %d, last error %v): %w", n, sum, err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// WaitOpenTransaction waits until the application has a transaction open
// on one of its output, changelog or repartition partitions (last stable
// offset below the high watermark), so that a fault injected right after
// it strikes in the middle of a transaction instead of between two.
func WaitOpenTransaction(ctx context.Context, env *Env) error {
	stages, err := ParseStages(env.App.TopologyFile())
	if err != nil {
		return err
	}
	topics := []string{Output}
	for _, s := range stages {
		topics = append(topics, s.Changelog, s.Repartition)
	}
	for {
		for _, t := range topics {
			lso, err := env.Admin.ListOffsets(ctx, t, -1, kafka.ReadCommitted)
			if err != nil {
				continue
			}
			hw, err := env.Admin.ListOffsets(ctx, t, -1, kafka.ReadUncommitted)
			if err != nil {
				continue
			}
			for p, o := range lso {
				if o < hw[p] {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the app to have a transaction open: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// WaitTail waits until the application is behind on its inputs and has
// committed repartition records that its second hop has not processed yet:
// stopped then, it leaves an unprocessed repartition tail behind.
func WaitTail(ctx context.Context, env *Env) error {
	stages, err := ParseStages(env.App.TopologyFile())
	if err != nil {
		return err
	}
	var topics []string
	for _, s := range stages {
		topics = append(topics, s.Repartition)
	}
	topics = append(topics, Inputs[:]...)
	behind := func(committed map[kafka.TP]int64, topic string) bool {
		lso, err := env.Admin.ListOffsets(ctx, topic, -1, kafka.ReadCommitted)
		if err != nil {
			return false
		}
		for p, o := range lso {
			if c, ok := committed[kafka.TP{Topic: topic, Partition: p}]; !ok || o > c {
				if o > 0 {
					return true
				}
			}
		}
		return false
	}
	for {
		committed, err := groupOffsets(ctx, env.Admin, topics)
		if err == nil {
			tail, lag := false, false
			for _, s := range stages {
				tail = tail || behind(committed, s.Repartition)
			}
			for _, in := range Inputs {
				lag = lag || behind(committed, in)
			}
			if tail && lag {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for an unprocessed repartition tail while inputs still flow: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WaitTasksMoved waits until a member of the application's group whose
// client id is not in before (a new instance's) has been assigned
// partitions: tasks have moved to it.
func WaitTasksMoved(ctx context.Context, env *Env, before map[string][]kafka.TP) error {
	var last map[string][]kafka.TP
	for {
		now, err := Assignments(ctx, env.Admin)
		if err == nil {
			last = now
			for id, tps := range now {
				if _, old := before[id]; !old && len(tps) > 0 {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for tasks to move to the new instance: %w (members before %v, now %v, last error %v)", ctx.Err(), before, last, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
