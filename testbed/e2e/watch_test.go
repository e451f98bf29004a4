package e2e

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
	"github.com/lossaudit/lossaudit/testbed/poll"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// watchInterval is the interval of the watched runs: a scenario parameter.
const watchInterval = 10 * time.Second

// lossauditBin builds lossaudit once for the tests that run `watch`.
var lossauditBin = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lossaudit-e2e-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "lossaudit")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/lossaudit/lossaudit/cmd/lossaudit").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// stepSeen is one completed step of a watch, as its /report.json said.
type stepSeen struct {
	Number   int64
	Started  time.Time
	Verdict  string
	Pending  int64
	Rows     []string // stage/input/key (input empty for output rows)
	Resolved []string
	Parts    []string
	CSV      [][]string // the rows of /loss-report.csv, header first
}

// watching is a `lossaudit watch` process on a scenario's pipeline, with
// a poller that records every step it completes.
type watching struct {
	t      *testing.T
	cmd    *exec.Cmd
	addr   string
	log    string
	done   chan error
	cancel context.CancelFunc

	mu    sync.Mutex
	steps map[int64]*stepSeen
}

// startWatch starts `lossaudit watch` on env's pipeline, reporting under
// dir, every watchInterval.
func startWatch(ctx context.Context, t *testing.T, env *Env) (*watching, error) {
	bin, err := lossauditBin()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := filepath.Join(env.Dir, "watch")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	y := AuditYAML(env.Cluster.Bootstrap(), env.App.TopologyFile(), filepath.Join(dir, "store"))
	y = strings.Replace(y, "report:\n  csv: \"\"\n", fmt.Sprintf("report:\n  csv: %q\n  json: %q\n", filepath.Join(dir, "loss-report.csv"),
		filepath.Join(dir, "report.json")), 1)
	y += "audit:\n  settle_timeout: 20s\n"
	cfg := filepath.Join(dir, "audit.yaml")
	if err := os.WriteFile(cfg, []byte(y), 0o644); err != nil {
		return nil, err
	}
	w := &watching{t: t, addr: addr, log: filepath.Join(dir, "watch.log"), done: make(chan error, 1), steps: map[int64]*stepSeen{}}
	logf, err := os.Create(w.log)
	if err != nil {
		return nil, err
	}
	w.cmd = exec.Command(bin, "watch", "-c", cfg, "--interval", watchInterval.String(), "--listen", addr, "--log-format", "json")
	w.cmd.Stdout, w.cmd.Stderr = logf, logf
	// A step against brokers that are all down fails within 20 s.
	w.cmd.Env = append(testbedenv.Strip(os.Environ()), config.EnvName("kafka.retry_timeout")+"=20s")
	if err := w.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() { w.done <- w.cmd.Wait(); logf.Close() }()
	pctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.poll(pctx)
	t.Cleanup(func() {
		w.stop()
		if t.Failed() {
			b, _ := os.ReadFile(w.log)
			t.Logf("watch log:\n%s", b)
		}
	})
	return w, nil
}

// poll records every step /report.json shows, until ctx ends.
func (w *watching) poll(ctx context.Context) {
	for ctx.Err() == nil {
		if s, err := w.fetch(); err == nil && s != nil {
			w.mu.Lock()
			if w.steps[s.Number] == nil {
				w.steps[s.Number] = s
			}
			w.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *watching) get(path string) ([]byte, int, error) {
	resp, err := http.Get("http://" + w.addr + path)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

// fetch reads the last step's reports; nil before the first step.
func (w *watching) fetch() (*stepSeen, error) {
	b, code, err := w.get("/report.json")
	if err != nil || code != http.StatusOK {
		return nil, err
	}
	var r struct {
		Verdict string `json:"verdict"`
		Started string `json:"started"`
		Inputs  []struct {
			Pending int64 `json:"pending"`
		} `json:"inputs"`
		Parts []struct {
			Kind      string `json:"kind"`
			Topic     string `json:"topic"`
			Partition int32  `json:"partition"`
		} `json:"partition_findings"`
		Step struct {
			Number int64 `json:"number"`
		} `json:"step"`
		Rows, Resolved []struct {
			Stage string `json:"stage"`
			Input string `json:"input"`
			Key   string `json:"key"`
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	s := &stepSeen{Number: r.Step.Number, Verdict: r.Verdict}
	if s.Started, err = time.Parse(time.RFC3339Nano, r.Started); err != nil {
		return nil, err
	}
	for _, in := range r.Inputs {
		s.Pending += in.Pending
	}
	pair := func(stage, input, key string) string {
		if stage == "output" {
			input = ""
		}
		return stage + "/" + input + "/" + key
	}
	for _, row := range r.Rows {
		s.Rows = append(s.Rows, pair(row.Stage, row.Input, row.Key))
	}
	for _, row := range r.Resolved {
		s.Resolved = append(s.Resolved, pair(row.Stage, row.Input, row.Key))
	}
	for _, p := range r.Parts {
		s.Parts = append(s.Parts, fmt.Sprintf("%s %s[%d]", p.Kind, p.Topic, p.Partition))
	}
	s.Rows, s.Resolved = dedup(s.Rows), dedup(s.Resolved)
	if b, code, err := w.get("/loss-report.csv"); err == nil && code == http.StatusOK {
		s.CSV, _ = csv.NewReader(strings.NewReader(string(b))).ReadAll()
	}
	return s, nil
}

func dedup(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

// waitFor waits until a step satisfies ok, failing the test at the deadline.
func (w *watching) waitFor(what string, d time.Duration, ok func(s *stepSeen) bool) *stepSeen {
	w.t.Helper()
	var found *stepSeen
	err := poll.Until(context.Background(), d, 200*time.Millisecond, "a step "+what, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, s := range w.steps {
			if ok(s) {
				found = s
				return true
			}
		}
		return false
	})
	if err != nil {
		w.t.Fatalf("watch: %v; steps seen: %v", err, w.numbers())
	}
	return found
}

func (w *watching) numbers() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var ns []int64
	for n := range w.steps {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// all returns the steps seen, in order.
func (w *watching) all() []*stepSeen {
	var out []*stepSeen
	for _, n := range w.numbers() {
		w.mu.Lock()
		out = append(out, w.steps[n])
		w.mu.Unlock()
	}
	return out
}

// stop ends watch with SIGTERM: it must exit 143 (stopped by the signal).
func (w *watching) stop() {
	if w.cancel == nil {
		return
	}
	w.cancel()
	w.cancel = nil
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-w.done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 143 {
			w.t.Errorf("watch ended with %v after SIGTERM, want exit 143", err)
		}
	case <-time.After(2 * time.Minute):
		_ = w.cmd.Process.Kill()
		w.t.Error("watch did not stop within 2 minutes of SIGTERM")
	}
}

// logLines returns watch's log lines with the given message.
func (w *watching) logLines(msg string) []map[string]any {
	f, err := os.Open(w.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// noFindingAtAnyStep checks that every step of w reported no finding and
// that the last one, taken after the application caught up, is clean.
func noFindingAtAnyStep(t *testing.T, w *watching, caughtUp time.Time) {
	t.Helper()
	last := w.waitFor("started after the application caught up", 3*time.Minute, func(s *stepSeen) bool {
		return s.Started.After(caughtUp)
	})
	for _, s := range w.all() {
		if len(s.Rows) > 0 || len(s.Parts) > 0 || (s.Verdict != "clean" && s.Verdict != "inconclusive") {
			t.Errorf("step %d (%s): verdict %s, findings %v, partition findings %v", s.Number, s.Started.Format(time.RFC3339), s.Verdict, s.Rows, s.Parts)
		}
	}
	if last.Verdict != "clean" || last.Pending != 0 {
		t.Errorf("step %d after catching up: verdict %s, %d pending, want clean with nothing pending", last.Number, last.Verdict, last.Pending)
	}
	if len(w.all()) < 3 {
		t.Errorf("only %d steps completed during the run", len(w.all()))
	}
	t.Logf("%d steps, %d failed steps logged", len(w.all()), len(w.logLines("step failed")))
}

// TestWatchCleanRun: `lossaudit watch` every 10 s while the application
// processes the load reports no finding at any step.
func TestWatchCleanRun(t *testing.T) {
	var w *watching
	RunScenario(t, Scenario{Records: 3000, OnStart: func(ctx context.Context, env *Env) (err error) {
		w, err = startWatch(ctx, t, env)
		return err
	}})
	noFindingAtAnyStep(t, w, time.Now())
	w.stop()
}

// TestWatchAllBrokersKilled: watch through the all-brokers outage: steps
// fail while the brokers are down and none reports a finding.
//
// A real Prometheus scrapes the watch with deploy/prometheus's rules:
// LossauditRunsStale fires while the brokers are down (they stay down
// until it does) and resolves once steps complete again.
func TestWatchAllBrokersKilled(t *testing.T) {
	var w *watching
	var prom *prometheus
	var down, up, staleFiring time.Time
	RunScenario(t, Scenario{Records: 3000, FaultAfter: 12 * time.Second, PurgeInterval: 10 * time.Minute,
		OnStart: func(ctx context.Context, env *Env) (err error) {
			if w, err = startWatch(ctx, t, env); err != nil {
				return err
			}
			prom, err = startPrometheus(t, env.Dir, w.addr)
			return err
		},
		Fault: func(ctx context.Context, env *Env) error {
			if err := WaitOpenTransaction(ctx, env); err != nil {
				return err
			}
			down = time.Now()
			if err := env.Cluster.KillAll(); err != nil {
				return err
			}
			// The brokers stay down for the outage, until a step has
			// failed against them (the retry timeout, 20 s here, bounds
			// how long that takes), and until Prometheus says the runs
			// are stale (no step completed for three intervals).
			if err := poll.Until(ctx, 3*time.Minute, 200*time.Millisecond, "a step failed and LossauditRunsStale fired while the brokers were down", func() bool {
				if time.Since(down) < outage || len(w.linesSince("step failed", down)) == 0 {
					return false
				}
				if prom != nil && staleFiring.IsZero() {
					as, err := prom.alerts("LossauditRunsStale", "firing")
					if err != nil || len(as) != 1 || as[0].Labels["instance"] != w.addr || as[0].Labels["severity"] != "warning" {
						return false
					}
					staleFiring = time.Now()
				}
				return true
			}); err != nil {
				return err
			}
			if err := env.Cluster.StartAll(); err != nil {
				return err
			}
			up = time.Now()
			return env.Cluster.WaitReady(ctx)
		}})
	noFindingAtAnyStep(t, w, time.Now())
	if prom != nil {
		prom.waitAlerts("LossauditRunsStale", time.Minute, stageKind, map[string]string{})
		t.Logf("LossauditRunsStale fired %s after the brokers went down, and resolved", staleFiring.Sub(down).Round(time.Millisecond))
	}
	w.stop()
	t.Logf("%d steps failed while the brokers were down (%s to %s)", len(w.linesSince("step failed", down))-len(w.linesSince("step failed", up)),
		down.Format(time.RFC3339), up.Format(time.RFC3339))
}

// linesSince returns the log lines with message msg written after t.
func (w *watching) linesSince(msg string, t time.Time) []map[string]any {
	var out []map[string]any
	for _, l := range w.logLines(msg) {
		if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(l["time"])); err == nil && at.After(t) {
			out = append(out, l)
		}
	}
	return out
}

// TestWatchInjectedLoss: watch while the application drops the injected
// updates: at every step only injected pairs are reported; each appears
// in the first step that started after the application had processed one
// of its updates through both hops, and stays (first_seen unchanged)
// until the records the loss report names are replayed to the application
// without the fault, after which the steps resolve them all.
//
// A real Prometheus scrapes the watch with deploy/prometheus's rules:
// LossauditLossFound fires for exactly the stages and kinds of the loss
// report, with its number of rows, and resolves after the replay.
func TestWatchInjectedLoss(t *testing.T) {
	dbs := map[string][]string{"a": {"cust-003"}, "b": {"cust-005", "cust-006"}, "c": {"cust-003"}}
	dbo := []string{"cust-007"}
	pairs := map[string]loadgen.InputKey{
		"changelog/a/cust-003": {Input: "a", Key: "cust-003"}, "changelog/b/cust-005": {Input: "b", Key: "cust-005"},
		"changelog/b/cust-006": {Input: "b", Key: "cust-006"}, "changelog/c/cust-003": {Input: "c", Key: "cust-003"},
		"output//cust-007": {Input: "a", Key: "cust-007"},
	}
	var w *watching
	var prom *prometheus
	var mu sync.Mutex
	processedAt := map[string]time.Time{} // pair -> when the test saw an update of it processed
	stopPoll := make(chan struct{})
	pollDone := make(chan struct{})
	res := RunScenario(t, Scenario{Records: 3000, DropBeforeStore: dbs, DropBeforeOutput: dbo,
		OnStart: func(ctx context.Context, env *Env) (err error) {
			if w, err = startWatch(ctx, t, env); err != nil {
				return err
			}
			if prom, err = startPrometheus(t, env.Dir, w.addr); err != nil {
				return err
			}
			stages, err := ParseStages(env.App.TopologyFile())
			if err != nil {
				return err
			}
			go func() {
				defer close(pollDone)
				for {
					select {
					case <-stopPoll:
						return
					case <-time.After(500 * time.Millisecond):
					}
					processed, _, err := Split(ctx, env, stages, env.Ledger)
					if err != nil {
						continue
					}
					at := time.Now()
					newest := processed.Newest()
					mu.Lock()
					for p, ik := range pairs {
						if _, ok := newest[ik]; ok && processedAt[p].IsZero() {
							processedAt[p] = at
						}
					}
					mu.Unlock()
				}
			}()
			return nil
		}})
	close(stopPoll)
	<-pollDone
	want := slices.Sorted(func(yield func(string) bool) {
		for p := range pairs {
			if !yield(p) {
				return
			}
		}
	})
	end := w.waitFor("with every injected pair", 3*time.Minute, func(s *stepSeen) bool { return slices.Equal(s.Rows, want) && s.Pending == 0 })
	firstSeen := map[string]string{}
	for _, s := range w.all() {
		for _, r := range s.Rows {
			if _, ok := pairs[r]; !ok {
				t.Errorf("step %d reports %s, which was not injected", s.Number, r)
			}
		}
		for p, at := range processedAt {
			if s.Started.After(at) && !slices.Contains(s.Rows, p) && s.Number <= end.Number {
				t.Errorf("step %d started at %s, after %s was processed (%s), and does not report it: %v", s.Number,
					s.Started.Format(time.RFC3339Nano), p, at.Format(time.RFC3339Nano), s.Rows)
			}
		}
		if len(s.CSV) == 0 {
			continue
		}
		for _, row := range s.CSV[1:] {
			k := row[1] + "/" + row[2] + "/" + row[3] // one row per input, also at the output
			if old, ok := firstSeen[k]; ok && old != row[11] {
				t.Errorf("step %d: first_seen of %s moved from %s to %s", s.Number, k, old, row[11])
			}
			firstSeen[k] = row[11]
		}
	}
	if len(processedAt) != len(pairs) {
		t.Errorf("the test saw only %v of the injected pairs processed", processedAt)
	}
	if prom != nil {
		prom.waitAlerts("LossauditLossFound", time.Minute, stageKind, lossAlerts(end.CSV))
		t.Logf("LossauditLossFound firing: %v", lossAlerts(end.CSV))
	}

	// Replay what the loss report names to the application without the
	// fault, as an operator would.
	env := res.Env
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fixed, err := streamsapp.New(ctx, streamsapp.Options{Bootstrap: env.Cluster.Bootstrap(), ApplicationID: ApplicationID,
		Inputs: Inputs, Output: Output, SchemasTopic: SchemasTopic, Dir: filepath.Join(env.Dir, "app"), SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fixed.Kill() })
	if err := fixed.Start(); err != nil {
		t.Fatal(err)
	}
	if err := fixed.WaitRunning(ctx); err != nil {
		t.Fatal(err)
	}
	if err := replayCSV(ctx, env.Cluster.Bootstrap(), end.CSV); err != nil {
		t.Fatal(err)
	}
	env.App = fixed
	if err := WaitCaughtUp(ctx, env, res.Stages); err != nil {
		t.Fatal(err)
	}
	replayed := time.Now()
	after := w.waitFor("clean after the replay", 3*time.Minute, func(s *stepSeen) bool {
		return s.Started.After(replayed) && s.Verdict == "clean"
	})
	var resolved []string
	for _, s := range w.all() {
		if s.Number > end.Number && s.Number <= after.Number {
			resolved = append(resolved, s.Resolved...)
		}
	}
	if resolved = dedup(resolved); !slices.Equal(resolved, want) {
		t.Errorf("steps after the replay resolved %v, want every injected pair %v", resolved, want)
	}
	if prom != nil {
		prom.waitAlerts("LossauditLossFound", time.Minute, stageKind, map[string]string{})
	}
	w.stop()
	t.Logf("steps: %d; the injected pairs were processed at %v; resolved by step %d", len(w.all()), processedAt, after.Number)
}

// replayCSV produces again, to the same topic and partition, the input
// record every row of a loss report names (header first).
func replayCSV(ctx context.Context, brokers []string, rows [][]string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for _, row := range rows[1:] {
		topic := row[4]
		p, err1 := strconv.ParseInt(row[5], 10, 32)
		off, err2 := strconv.ParseInt(row[6], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("loss report row %v: %w", row, err)
		}
		rec, err := readRecord(ctx, brokers, topic, int32(p), off)
		if err != nil {
			return err
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Key: rec.Key, Value: rec.Value,
			Timestamp: rec.Timestamp, Headers: rec.Headers}).FirstErr(); err != nil {
			return fmt.Errorf("replaying %s[%d]@%d: %w", topic, p, off, err)
		}
	}
	return nil
}

// readRecord reads the record at topic[p]@off.
func readRecord(ctx context.Context, brokers []string, topic string, p int32, off int64) (*kgo.Record, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().At(off)}}))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("reading %s[%d]@%d: %w", topic, p, off, err)
		}
		for _, r := range fs.Records() {
			if r.Offset == off {
				return r, nil
			}
			if r.Offset > off {
				return nil, fmt.Errorf("reading %s[%d]@%d: no record there (next is at %d)", topic, p, off, r.Offset)
			}
		}
	}
}
