package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/poll"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// lossyScenario is a small pipeline that loses updates at every stage
// along the way, with lag at both hops, processed over several rounds.
func lossyScenario(seed int64, app string) sim.Scenario {
	sc := sim.RandomScenario(seed)
	sc.AppID, sc.TopicPrefix, sc.Output = app, app+"-topic", app+"-joined"
	sc.Rounds, sc.RecordsPerInput, sc.Keys = 16, 300, 100
	sc.Faults.BeforeStore, sc.Faults.BeforeOutput, sc.Faults.AbortedChangelog, sc.Faults.AbortedOutput = 8, 8, 3, 3
	sc.Faults.InputLagPartitions, sc.Faults.InputLag = 1, 5
	sc.Faults.RepartitionLagPartitions, sc.Faults.RepartitionLagRounds = 1, 2
	return sc
}

// liveFixture is a growing simulated pipeline on an in-process cluster.
type liveFixture struct {
	pipelineFixture
	cluster *kfake.Cluster
	live    *sim.Live
}

func newLiveFixture(t *testing.T, sc sim.Scenario) *liveFixture {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	live, err := sim.Start(context.Background(), cluster.ListenAddrs(), sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(live.Close)
	return &liveFixture{pipelineFixture: pipelineFixture{brokers: cluster.ListenAddrs(), truth: live.Truth}, cluster: cluster, live: live}
}

func (f *liveFixture) advance(t *testing.T, rounds int) {
	t.Helper()
	if err := f.live.Advance(context.Background(), rounds); err != nil {
		t.Fatal(err)
	}
}

// store is one store.dir with its configuration and reports.
type store struct {
	yaml, csv, json string
}

func (f *liveFixture) store(t *testing.T) store {
	t.Helper()
	var s store
	s.yaml = f.yaml(t, func(c *config.Config) {
		c.Report.JSON = filepath.Join(filepath.Dir(c.Report.CSV), "report.json")
		s.csv, s.json = c.Report.CSV, c.Report.JSON
	})
	return s
}

// stepReport is what a step's JSON report says, with first_seen left out
// (it is the wall clock of the step that first reported a finding).
type stepReport struct {
	Verdict  string           `json:"verdict"`
	Inputs   []map[string]any `json:"inputs"`
	Parts    []map[string]any `json:"partition_findings"`
	Step     map[string]any   `json:"step"`
	Resolved []map[string]any `json:"resolved"`
	Rows     []map[string]any `json:"rows"`
}

func readReport(t *testing.T, s store) stepReport {
	t.Helper()
	b, err := os.ReadFile(s.json)
	if err != nil {
		t.Fatal(err)
	}
	var r stepReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	for _, rows := range [][]map[string]any{r.Rows, r.Resolved} {
		for _, row := range rows {
			if row["first_seen"] == "" || row["first_seen"] == nil {
				t.Errorf("row without first_seen: %v", row)
			}
			delete(row, "first_seen")
		}
	}
	return r
}

func rowsText(rows []map[string]any) string {
	var out []string
	for _, r := range rows {
		b, _ := json.Marshal(r)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// sameStep fails when two step reports of the same moment differ in what
// they report: verdict, counters, partition findings, open and resolved
// findings.
func sameStep(t *testing.T, label string, got, want stepReport) {
	t.Helper()
	if got.Verdict != want.Verdict {
		t.Errorf("%s: verdict %s, want %s", label, got.Verdict, want.Verdict)
	}
	for _, pair := range [][2]string{
		{rowsText(got.Rows), rowsText(want.Rows)},
		{rowsText(got.Resolved), rowsText(want.Resolved)},
		{rowsText(got.Inputs), rowsText(want.Inputs)},
		{rowsText(got.Parts), rowsText(want.Parts)},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: got\n%s\nwant\n%s", label, pair[0], pair[1])
		}
	}
}

// lossauditBinary builds lossaudit once for the tests that run it as a process.
var lossauditBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lossaudit-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "lossaudit")
	if out, err := exec.Command("go", "build", "-tags", "testbed", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// runProcess runs `lossaudit reconcile` as a child process and returns its
// exit code, or the signal that killed it.
func runProcess(t *testing.T, s store, env ...string) (int, syscall.Signal, string) {
	t.Helper()
	bin, err := lossauditBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "reconcile", "-q", "-c", s.yaml)
	cmd.Env = append(testbedenv.Strip(os.Environ()), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	code, sig := processExit(t, cmd.Run())
	return code, sig, stderr.String()
}

// step runs a normal step and returns its report.
func (s store) step(t *testing.T, label string) stepReport {
	t.Helper()
	code, sig, stderr := runProcess(t, s)
	if sig != 0 || (code != 0 && code != 1) {
		t.Fatalf("%s: exit %d signal %v\n%s", label, code, sig, stderr)
	}
	return readReport(t, s)
}

// TestReconcileInterruptedAnywhere is the no-gap, no-double-count
// property: a `lossaudit reconcile` process killed with SIGKILL at every
// point of a step (while reading, after judging, after the reports, at
// each point of the state's commit), interrupted by SIGINT, or cut off by
// the broker going down mid-read, leaves a store whose next step reports
// exactly what a step on a store that never saw the interruption reports.
// Before the commit point the interrupted step never happened; after it,
// it happened completely (its reports equal the reference step's, and the
// next step finds nothing new to read).
func TestReconcileInterruptedAnywhere(t *testing.T) {
	clearEnv(t)
	f := newLiveFixture(t, lossyScenario(7, "intr"))
	var down atomic.Bool
	f.cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		f.cluster.KeepControl()
		if down.Load() {
			return nil, errors.New("broker down"), true
		}
		return nil, nil, false
	})
	ref, tst := f.store(t), f.store(t)
	f.advance(t, 2)
	sameStep(t, "baseline", tst.step(t, "baseline"), ref.step(t, "reference baseline"))

	type interruption struct {
		name string
		env  []string
		// committed: the interrupted step's state is in force afterwards.
		committed bool
		code      int            // exit code, or
		sig       syscall.Signal // the signal that ends the process
		during    func()         // set up before, undone after
	}
	kill := func(point string, committed bool) interruption {
		return interruption{name: "kill -9 " + point, env: []string{"LOSSAUDIT_TESTBED_CRASH_AT=" + point}, committed: committed, sig: syscall.SIGKILL}
	}
	cases := []interruption{
		kill("reading", false), kill("stepped", false), kill("reported", false), kill("staged", false),
		kill("committed", true), kill("applying", true), kill("applied", true),
		{name: "Ctrl-C while reading", env: []string{"LOSSAUDIT_TESTBED_INTERRUPT_AT=reading"}, code: 130},
		{name: "Ctrl-C after the reports", env: []string{"LOSSAUDIT_TESTBED_INTERRUPT_AT=reported"}, committed: true, code: -2},
		{name: "broker down while reading", env: []string{"LOSSAUDIT_KAFKA_TIMEOUT=1s", "LOSSAUDIT_KAFKA_RETRY_TIMEOUT=5s"}, code: 3,
			during: func() { down.Store(true) }},
	}
	for _, tc := range cases {
		if f.live.Done() {
			t.Fatal("the scenario ran out of rounds: give it more")
		}
		f.advance(t, 1)
		if tc.during != nil {
			tc.during()
		}
		code, sig, stderr := runProcess(t, tst, tc.env...)
		down.Store(false)
		switch {
		case tc.sig != 0 && sig != tc.sig:
			t.Fatalf("%s: exit %d signal %v, want killed by %v\n%s", tc.name, code, sig, tc.sig, stderr)
		case tc.sig == 0 && tc.code == -2 && (sig != 0 || code > 1):
			t.Fatalf("%s: exit %d signal %v, want the step's verdict (0 or 1)\n%s", tc.name, code, sig, stderr)
		case tc.sig == 0 && tc.code >= 0 && code != tc.code:
			t.Fatalf("%s: exit %d signal %v, want %d\n%s", tc.name, code, sig, tc.code, stderr)
		}
		want := ref.step(t, "reference "+tc.name)
		if tc.committed {
			// The interrupted step is the reference step; the next finds
			// nothing new.
			sameStep(t, tc.name+": the interrupted step's reports", readReport(t, tst), want)
			next := tst.step(t, tc.name+": next step")
			want.Resolved = nil
			sameStep(t, tc.name+": the step after", next, want)
			if r := next.Step["read"].(map[string]any); r["input"] != 0.0 || r["changelog"] != 0.0 || r["output"] != 0.0 {
				t.Errorf("%s: the step after read %v, want nothing new", tc.name, r)
			}
		} else {
			sameStep(t, tc.name+": the next step", tst.step(t, tc.name+": next step"), want)
		}
	}
	// Both stores go on alike.
	f.advance(t, 2)
	sameStep(t, "afterwards", tst.step(t, "afterwards"), ref.step(t, "reference afterwards"))
	if logs, _ := filepath.Glob(filepath.Join(filepath.Dir(tst.csv), "store", "reconcile", "redo-*.log")); len(logs) > 0 {
		t.Errorf("redo logs left behind: %v", logs)
	}
}

// TestReconcileReportsAndSecondStepAtOnce: a step's CSV has the audit's
// columns and first_seen; its JSON the step and the resolved findings; a
// second step on the same store.dir while one runs says so and exits 3.
func TestReconcileReportsAndSecondStepAtOnce(t *testing.T) {
	clearEnv(t)
	f := newLiveFixture(t, lossyScenario(11, "rep"))
	s := f.store(t)
	f.advance(t, 16)
	var stdout, stderr bytes.Buffer
	code := testRun([]string{"reconcile", "-q", "-c", s.yaml, "--metrics-file", filepath.Join(filepath.Dir(s.csv), "lossaudit.prom")}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (findings)\n%s\n%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "Reconcile step 1: the baseline") {
		t.Errorf("summary does not say it is the baseline:\n%s", stdout.String())
	}
	fh, err := os.Open(s.csv)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(fh).ReadAll()
	fh.Close()
	if err != nil || len(recs) < 2 {
		t.Fatalf("CSV: %v, %d records", err, len(recs))
	}
	want := "finding,stage,input,key,topic,partition,offset,timestamp,expected_ts,observed_ts,detail,first_seen"
	if got := strings.Join(recs[0], ","); got != want {
		t.Errorf("CSV header %s, want %s", got, want)
	}
	for _, r := range recs[1:] {
		if _, err := time.Parse("2006-01-02T15:04:05.000Z", r[11]); err != nil {
			t.Errorf("first_seen %q: %v", r[11], err)
		}
	}
	prom, err := os.ReadFile(filepath.Join(filepath.Dir(s.csv), "lossaudit.prom"))
	if err != nil || !strings.Contains(string(prom), `lossaudit_findings{kind="missing",stage="changelog"}`) {
		t.Errorf("metrics file: %v\n%s", err, prom)
	}
	// A second step while another holds the store.
	st, err := app.OpenState(filepath.Join(filepath.Dir(s.csv), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	code, sig, errText := runProcess(t, s)
	if code != 3 || sig != 0 || !strings.Contains(errText, "in use by another lossaudit run") {
		t.Errorf("a second step on a store in use: exit %d signal %v\n%s", code, sig, errText)
	}
}

// TestWatchServesTheLastStep runs `lossaudit watch` in-process: it steps,
// serves the last step's reports, metrics and health, and stops cleanly
// on a signal with the store reusable.
func TestWatchServesTheLastStep(t *testing.T) {
	clearEnv(t)
	f := newLiveFixture(t, lossyScenario(13, "wat"))
	s := f.store(t)
	f.advance(t, 16)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, newTestRootCmd(&stdout, &stderr), []string{"watch", "-c", s.yaml, "--interval", "200ms", "--listen", addr, "--log-format", "json"}, &stderr)
	}()
	get := func(path string) (int, string) { return httpGet("http://" + addr + path) }
	var code int
	var body string
	if err := poll.Until(context.Background(), 90*time.Second, 50*time.Millisecond, "watch at step 3", func() bool {
		code, body = get("/metrics")
		return code == 200 && strings.Contains(body, "lossaudit_step_number 3")
	}); err != nil {
		t.Fatalf("%v: /metrics %d\n%s\nstderr:\n%s", err, code, body, stderr.String())
	}
	// Healthy once a step has succeeded within three intervals: polled,
	// since on a loaded machine the step after the third can take longer
	// than three intervals of 200ms.
	if err := poll.Until(context.Background(), 90*time.Second, 50*time.Millisecond, "/healthz 200", func() bool {
		code, body = get("/healthz")
		return code == 200
	}); err != nil {
		t.Errorf("%v: /healthz %d %s", err, code, body)
	}
	code, body = get("/report.json")
	if code != 200 || !strings.Contains(body, `"resolved": [`) || !strings.Contains(body, `"first_seen"`) {
		t.Errorf("/report.json %d:\n%s", code, body)
	}
	if code, body := get("/"); code != 200 || !strings.Contains(body, "<html") || !strings.Contains(body, `href="loss-report.csv"`) {
		t.Errorf("/ %d:\n%.300s", code, body)
	}
	if code, body := get("/loss-report.csv"); code != 200 || !strings.HasPrefix(body, "finding,stage,") || !strings.Contains(strings.SplitN(body, "\n", 2)[0], "first_seen") {
		t.Errorf("/loss-report.csv %d:\n%s", code, body)
	}
	cancel(&interrupted{sig: syscall.SIGTERM})
	select {
	case code := <-done:
		if code != 143 {
			t.Errorf("watch exited %d after SIGTERM, want 143\n%s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("watch did not stop after SIGTERM")
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err == nil && m["msg"] == "step" {
			lines = append(lines, m)
		}
	}
	if len(lines) < 3 || lines[0]["baseline"] != true || lines[0]["verdict"] != "findings" {
		t.Errorf("step log lines %v, want one JSON line per step, the first the baseline", lines)
	}
	// The store is reusable: a reconcile step continues from watch's.
	var out bytes.Buffer
	if code := testRun([]string{"reconcile", "-q", "-c", s.yaml}, &out, &bytes.Buffer{}); code != 1 || !strings.Contains(out.String(), "Reconcile step") {
		t.Errorf("reconcile after watch: exit %d\n%s", code, out.String())
	}
}

// TestReconcileRefusesALedger: reconcile and watch compare pairs; on a
// configuration with a producer ledger they say that the ledger is
// compare's (exit 2, naming the key and where it is set) before
// connecting.
func TestReconcileRefusesALedger(t *testing.T) {
	clearEnv(t)
	for _, tt := range []struct{ name, yaml string }{
		{"ledger", "kafka:\n  brokers: [127.0.0.1:1]\ncompare:\n  ledger: sends.jsonl\n"},
		{"pairs and ledger", "kafka:\n  brokers: [127.0.0.1:1]\ncompare:\n  pairs:\n    - {name: orders, source: orders, sink: backup.orders}\n  ledger: sends.jsonl\n"},
	} {
		for _, args := range [][]string{{"reconcile", "-q"}, {"watch"}} {
			t.Run(tt.name+" "+args[0], func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := testRun(append(args, "-c", writeConfig(t, tt.yaml)), &stdout, &stderr)
				if code != 2 || !strings.Contains(stderr.String(), "audit.yaml:") || !strings.Contains(stderr.String(), "compare.ledger: ") || !strings.Contains(stderr.String(), "a producer ledger is checked by `lossaudit compare`") {
					t.Errorf("exit %d, stderr:\n%s\nwant exit 2 naming compare.ledger", code, stderr.String())
				}
			})
		}
	}
}
