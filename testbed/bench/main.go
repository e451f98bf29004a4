// Command bench is lossaudit's performance harness. In one run,
// against the same three real Apache Kafka brokers (testbed/kafka, on
// loopback) and the same data, it loads a consistent pipeline of the user story's shape of
// N input records (realistic Avro values, changelogs and output of matching
// size, group offsets committed: an audit must find nothing), then times
// a raw read of the audited topics by kcat and by a minimal franz-go
// consumer, `lossaudit audit` over everything, and `lossaudit audit` over
// the newest 5% (--from), each as a child process whose wall time and peak
// RSS (wait4 ru_maxrss) it measures. It prints the table and writes it as
// markdown.
//
//	go run ./testbed/bench -n 10000000 -dir /tmp/lossaudit-bench -reuse
//
// See docs/performance.md for every flag. Subcommands used by the harness
// itself: `rawread` (the franz-go consumer, run as a child) and `profile`
// (an in-process audit with pprof profiles).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	tk "github.com/lossaudit/lossaudit/testbed/kafka"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "rawread":
		err = rawReadMain(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "profile":
		err = profileMain(ctx, os.Args[2:], os.Stdout)
	default:
		var opts benchOptions
		fs := opts.flags()
		if err := fs.Parse(os.Args[1:]); err != nil {
			os.Exit(2)
		}
		_, err = bench(ctx, opts, os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func rawReadMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rawread", flag.ContinueOnError)
	brokers := fs.String("brokers", "", "comma-separated brokers")
	want := fs.Int64("want", 0, "records to read before stopping")
	var topics stringList
	fs.Var(&topics, "topic", "topic to read (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return rawRead(ctx, strings.Split(*brokers, ","), topics, *want, os.Stdout)
}

// benchOptions are the harness's flags.
type benchOptions struct {
	Records       int64
	Dir           string
	Reuse         bool
	Out           string
	Partitions    int
	RF            int
	Compression   string
	CommitRecords int
	Repeat        int
	Skip          string  // comma-separated: kcat, franz, audit, window, compare, reconcile
	StepShare     float64 // reconcile: input records added before the step, as a share of -n
	KafkaVersion  string
	Heap          string
	Lossaudit     string // prebuilt binary; empty builds ./cmd/lossaudit
	Profile       string // directory for pprof profiles of in-process audits
	Hold          bool   // keep the brokers running at the end until interrupted
	DistinctKeys  bool   // every input record a key of its own
	AuditEnv      stringList
}

func (o *benchOptions) flags() *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Int64Var(&o.Records, "n", 10_000_000, "input records to load, over the three inputs")
	fs.StringVar(&o.Dir, "dir", filepath.Join(os.TempDir(), "lossaudit-bench"), "working directory: cluster data, audit stores, reports, results")
	fs.BoolVar(&o.Reuse, "reuse", false, "reuse the brokers and data of a run still holding them (-hold) in -dir when it loaded the same -n, -partitions, -rf and -compression, instead of starting brokers and loading")
	fs.BoolVar(&o.Hold, "hold", false, "after the measurements keep the brokers running (their addresses in <dir>/brokers.txt) until interrupted, for -reuse by later runs")
	fs.StringVar(&o.Out, "out", "", "markdown file for the results table (default <dir>/results-<n>.md)")
	fs.IntVar(&o.Partitions, "partitions", 6, "partitions per topic")
	fs.IntVar(&o.RF, "rf", 3, "replication factor")
	fs.StringVar(&o.Compression, "compression", "zstd", "producer compression: none, gzip, snappy, lz4, zstd")
	fs.IntVar(&o.CommitRecords, "commit-records", 20000, "input records per input per simulated commit (one transaction downstream)")
	fs.IntVar(&o.Repeat, "repeat", 1, "measure every reader this many times, interleaved")
	fs.StringVar(&o.Skip, "skip", "", "readers to skip, comma-separated: kcat, franz, audit, window, compare, reconcile")
	fs.Float64Var(&o.StepShare, "step-share", 0.01, "reconcile: input records added after the baseline and before the timed step, as a share of -n")
	fs.StringVar(&o.KafkaVersion, "kafka-version", "", "Apache Kafka version (default: testbed/kafka's)")
	fs.StringVar(&o.Heap, "heap", "1g", "broker JVM heap")
	fs.StringVar(&o.Lossaudit, "lossaudit", "", "lossaudit binary to time (default: go build ./cmd/lossaudit into -dir)")
	fs.StringVar(&o.Profile, "profile", "", "after the measurements, run the full and the windowed audit in a child with pprof CPU and allocation profiles written to this directory")
	fs.BoolVar(&o.DistinctKeys, "distinct-keys", false, "give every input record a key of its own (record i of each input has key i) instead of one key per ten records: the audit's state as large as the data")
	fs.Var(&o.AuditEnv, "audit-env", "KEY=VALUE added to the environment of lossaudit audit only (repeatable), e.g. GOMEMLIMIT=384MiB or LOSSAUDIT_KAFKA_PARTITION_MAX_BYTES=1048576")
	return fs
}

func (o *benchOptions) skips(name string) bool {
	for _, s := range strings.Split(o.Skip, ",") {
		if strings.TrimSpace(s) == name {
			return true
		}
	}
	return false
}

// report is the outcome of one harness run.
type report struct {
	Manifest *manifest
	Results  []result
	Findings []int // rows + partition findings of each audit run
	// Step is the reconcile step measured after the baseline, if any.
	Step     *stepCost
	Markdown string
}

func bench(ctx context.Context, o benchOptions, stdout, stderr io.Writer) (*report, error) {
	logf := func(format string, args ...any) {
		fmt.Fprintf(stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	if o.StepShare <= 0 {
		o.StepShare = 0.01
	}
	spec := loadSpec{Records: o.Records, Partitions: o.Partitions, RF: o.RF, Compression: o.Compression,
		CommitRecords: o.CommitRecords, RepartTail: 0.01, NullKeyRate: 0.001, Seed: 1, DistinctKeys: o.DistinctKeys}
	if _, err := codec(spec.Compression); err != nil {
		return nil, err
	}
	clusterDir := filepath.Join(o.Dir, "cluster")
	manifestPath := filepath.Join(o.Dir, "manifest.json")
	brokersPath := filepath.Join(o.Dir, "brokers.txt")
	n := pipelineNames()
	var man *manifest
	var brokers []string
	if o.Reuse {
		m, err := readManifest(manifestPath)
		b, berr := os.ReadFile(brokersPath)
		switch {
		case err != nil || berr != nil:
			logf("no held cluster in %s: starting one and loading", o.Dir)
		case m.Spec != spec:
			logf("the held cluster in %s holds other data (%+v): starting one and loading", o.Dir, m.Spec)
		default:
			bs := strings.Split(strings.TrimSpace(string(b)), ",")
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			err := checkLoaded(cctx, bs, n, m)
			cancel()
			if err != nil {
				logf("the held cluster in %s does not answer (%v): starting one and loading", o.Dir, err)
			} else {
				man, brokers = m, bs
				logf("reusing the held cluster %s with the data loaded at %s", b, m.Loaded.Format(time.RFC3339))
			}
		}
	}
	if man == nil {
		if err := os.RemoveAll(clusterDir); err != nil {
			return nil, err
		}
		_ = os.Remove(manifestPath)
		_ = os.Remove(brokersPath)
		logf("starting 3 brokers in %s", clusterDir)
		cl, err := tk.Start(ctx, tk.Options{Dir: clusterDir, Version: o.KafkaVersion, Heap: o.Heap,
			Props: map[string]string{"log.retention.hours": "168", "num.io.threads": "4", "num.network.threads": "3"}})
		if err != nil {
			return nil, err
		}
		defer stopCluster(cl, logf)
		if o.Hold {
			defer func() {
				logf("holding the brokers %s for -reuse; interrupt to stop them", strings.Join(brokers, ","))
				<-ctx.Done()
				_ = os.Remove(brokersPath)
			}()
		}
		readyCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		err = cl.WaitReady(readyCtx)
		cancel()
		if err != nil {
			return nil, err
		}
		brokers = cl.Bootstrap()
		logf("loading %d input records (%d partitions, rf %d, %s)", spec.Records, spec.Partitions, spec.RF, spec.Compression)
		if man, err = load(ctx, brokers, spec, logf); err != nil {
			return nil, err
		}
		if err := man.write(manifestPath); err != nil {
			return nil, err
		}
		if err := os.WriteFile(brokersPath, []byte(strings.Join(brokers, ",")+"\n"), 0o644); err != nil {
			return nil, err
		}
		logf("loaded in %.0fs", man.LoadSeconds)
	}
	bin := o.Lossaudit
	if bin == "" {
		bin = filepath.Join(o.Dir, "lossaudit")
		if err := buildLossaudit(ctx, bin); err != nil {
			return nil, err
		}
	}
	cfgPath := filepath.Join(o.Dir, "audit.yaml")
	if err := os.WriteFile(cfgPath, []byte(auditYAML(brokers, n, o.Dir)), 0o644); err != nil {
		return nil, err
	}
	topics := n.audited()
	all := man.total(topics)
	bstr := strings.Join(brokers, ",")
	rep := &report{Manifest: man}
	for round := 1; round <= max(o.Repeat, 1); round++ {
		tag := ""
		if o.Repeat > 1 {
			tag = fmt.Sprintf(" #%d", round)
		}
		if !o.skips("kcat") {
			if _, err := exec.LookPath("kcat"); err != nil {
				logf("kcat not installed (apt-get install -y kcat): skipping it")
			} else {
				logf("kcat%s", tag)
				wall, rss, cpu, err := kcatRead(ctx, bstr, topics, all.Records)
				if err != nil {
					return nil, err
				}
				rep.Results = append(rep.Results, result{Name: "kcat" + tag, Wall: wall, MaxRSS: rss, CPU: cpu, Records: all.Records, Bytes: all.Bytes,
					Command: "kcat -C -b B -t T -o beginning -e -q -X isolation.level=read_committed -f '%S\\n' (per topic, in turn)"})
			}
		}
		if !o.skips("franz") {
			logf("franz-go%s", tag)
			wall, rss, cpu, got, err := selfRead(ctx, bstr, topics, all.Records)
			if err != nil {
				return nil, err
			}
			if got.Records != all.Records || got.Bytes != all.Bytes {
				return nil, fmt.Errorf("franz-go consumer read %+v, loaded %+v", got, all)
			}
			rep.Results = append(rep.Results, result{Name: "franz-go" + tag, Wall: wall, MaxRSS: rss, CPU: cpu, Records: all.Records, Bytes: all.Bytes,
				Command: "bench rawread: one kgo client, all topics, read_committed, default fetch sizes"})
		}
		for _, windowed := range []bool{false, true} {
			name := "lossaudit audit"
			if windowed {
				name += " --from (newest 5%)"
			}
			if (!windowed && o.skips("audit")) || (windowed && o.skips("window")) {
				continue
			}
			logf("%s%s", name, tag)
			res, findings, err := runAudit(ctx, bin, cfgPath, o.Dir, man, windowed, o.AuditEnv)
			if err != nil {
				return nil, err
			}
			res.Name += tag
			rep.Results = append(rep.Results, res)
			rep.Findings = append(rep.Findings, findings)
		}
		if !o.skips("compare") {
			logf("lossaudit compare%s", tag)
			res, findings, err := runCompare(ctx, bin, brokers, n, o.Dir, man, o.AuditEnv)
			if err != nil {
				return nil, err
			}
			res.Name += tag
			rep.Results = append(rep.Results, res)
			rep.Findings = append(rep.Findings, findings)
		}
	}
	if !o.skips("reconcile") {
		step, err := measureStep(ctx, o, bin, cfgPath, brokers, man, manifestPath, logf)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, step.Baseline, step.Step)
		rep.Findings = append(rep.Findings, step.Findings...)
		rep.Step = step
	}
	if o.Profile != "" {
		if err := profileRuns(ctx, o.Profile, cfgPath, man, logf); err != nil {
			return nil, err
		}
	}
	rep.Markdown = markdown(o, man, rep.Results, rep.Step)
	fmt.Fprint(stdout, rep.Markdown)
	out := o.Out
	if out == "" {
		out = filepath.Join(o.Dir, fmt.Sprintf("results-%d.md", o.Records))
	}
	if err := os.WriteFile(out, []byte(rep.Markdown), 0o644); err != nil {
		return nil, err
	}
	logf("results written to %s", out)
	for _, f := range rep.Findings {
		if f != 0 {
			return rep, fmt.Errorf("the audit reported %d findings on a consistent pipeline", f)
		}
	}
	return rep, nil
}

// stopCluster stops every broker cleanly (so reused data needs no log
// recovery), then kills whatever is left.
func stopCluster(cl *tk.Cluster, logf func(string, ...any)) {
	logf("stopping brokers")
	var wg sync.WaitGroup
	for _, nd := range cl.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = cl.StopNode(nd.ID)
		}()
	}
	wg.Wait()
	cl.Close()
}

// checkLoaded verifies reused data is still all there.
func checkLoaded(ctx context.Context, brokers []string, n names, m *manifest) error {
	adm, err := tk.NewAdmin(brokers)
	if err != nil {
		return err
	}
	defer adm.Close()
	g, err := adm.GroupOffsets(ctx, n.app, []string{n.inputs[0]})
	if err != nil {
		return err
	}
	if _, ok := m.Topics[n.copied]; !ok {
		return fmt.Errorf("reused data has no %s (loaded by an older harness): reload without -reuse", n.copied)
	}
	if len(g[n.inputs[0]]) != m.Spec.Partitions {
		return fmt.Errorf("reused data: group %s has commits for %d partitions of %s, want %d: reload without -reuse",
			n.app, len(g[n.inputs[0]]), n.inputs[0], m.Spec.Partitions)
	}
	return nil
}

// moduleRoot finds the directory holding go.mod, from the working directory up.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("not inside the lossaudit module (no go.mod above the working directory)")
		}
		d = up
	}
}

func buildLossaudit(ctx context.Context, bin string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/lossaudit")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building lossaudit: %w\n%s", err, out)
	}
	return nil
}

func auditYAML(brokers []string, n names, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n", strings.Join(brokers, ", "))
	fmt.Fprintf(&b, "schema:\n  schemas_topic: _schemas\n")
	fmt.Fprintf(&b, "pipeline:\n  application_id: %s\n  output: %s\n  join: left\n  reduce: plain\n  inputs:\n", n.app, n.output)
	for x := range 3 {
		fmt.Fprintf(&b, "    - {name: %c, topic: %s, rekey: customerId, store: %s, repartition_topic: %s, changelog_topic: %s}\n",
			'a'+x, n.inputs[x], n.stores[x], n.repart[x], n.changelog[x])
	}
	fmt.Fprintf(&b, "store:\n  dir: %s\n", filepath.Join(dir, "store"))
	fmt.Fprintf(&b, "report:\n  csv: %s\n  json: %s\n", filepath.Join(dir, "loss-report.csv"), filepath.Join(dir, "report.json"))
	return b.String()
}

// runAudit times `lossaudit audit` on a fresh store directory and returns
// the number of findings (rows plus partition findings) it reported.
func runAudit(ctx context.Context, bin, cfgPath, dir string, m *manifest, windowed bool, env []string) (result, int, error) {
	store := filepath.Join(dir, "store")
	if err := os.RemoveAll(store); err != nil {
		return result{}, 0, err
	}
	args := []string{"audit", "-c", cfgPath, "-q"}
	res := result{Name: "lossaudit audit", Command: envPrefix() + strings.Join(append(env, ""), " ") + "lossaudit audit -c audit.yaml -q"}
	n := pipelineNames()
	res.Records, res.Bytes = m.total(n.audited()).Records, m.total(n.audited()).Bytes
	if windowed {
		from := m.windowFrom().Format("2006-01-02T15:04:05.000Z07:00")
		args = append(args, "--from", from)
		res.Name = "lossaudit audit --from (newest 5%)"
		res.Command += " --from " + from
		res.Note = "records/MB columns: the whole topics"
	}
	var out bytes.Buffer
	wall, rss, cpu, err := timedCPU(ctx, &out, env, bin, args...)
	res.Wall, res.MaxRSS, res.CPU = wall, rss, cpu
	if err != nil {
		return res, 0, fmt.Errorf("%w\n%s", err, out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		return res, 0, err
	}
	var rj struct {
		RowCount   int               `json:"row_count"`
		Partitions []json.RawMessage `json:"partition_findings"`
		Partial    bool              `json:"partial"`
		Index      indexStats        `json:"index"`
	}
	if err := json.Unmarshal(b, &rj); err != nil {
		return res, 0, fmt.Errorf("reading report.json: %w", err)
	}
	res.Index = rj.Index
	if rj.Partial {
		return res, 0, errors.New("the audit was partial")
	}
	return res, rj.RowCount + len(rj.Partitions), nil
}

// profileRuns runs the profile subcommand for the full and the windowed audit.
func profileRuns(ctx context.Context, dir, cfgPath string, m *manifest, logf func(string, ...any)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, w := range []string{"full", "window"} {
		args := []string{"profile", "-c", cfgPath, "-cpuprofile", filepath.Join(dir, "cpu-"+w+".out"),
			"-memprofile", filepath.Join(dir, "mem-"+w+".out")}
		if w == "window" {
			args = append(args, "-from", m.windowFrom().Format(time.RFC3339Nano))
		}
		var out bytes.Buffer
		wall, rss, err := timed(ctx, &out, nil, self, args...)
		if err != nil {
			return err
		}
		logf("profile %s: %s wall, peak RSS %.0f MiB: %s", w, wall.Round(time.Millisecond), mib(rss), strings.TrimSpace(out.String()))
	}
	return nil
}

// envPrefix lists the environment that changes how the audit runs
// (LOSSAUDIT_* configuration, Go runtime memory settings), so the table
// says which settings were measured.
func envPrefix() string {
	var b strings.Builder
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LOSSAUDIT_") || strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "GOGC=") {
			b.WriteString(kv + " ")
		}
	}
	return b.String()
}
