package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
)

// cleanPipeline is one simulated healthy pipeline on an in-process
// cluster, shared by the tests of this file (they only read it).
var cleanPipeline = sync.OnceValues(func() (*pipelineFixture, error) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, err
	}
	sc := sim.CleanScenario(3)
	truth, err := sim.Run(context.Background(), cluster.ListenAddrs(), sc)
	if err != nil {
		cluster.Close()
		return nil, err
	}
	return &pipelineFixture{brokers: cluster.ListenAddrs(), truth: truth}, nil
})

type pipelineFixture struct {
	brokers []string
	truth   *sim.Truth
}

// yaml renders the audit configuration of the fixture, with edit applied
// to the configuration first, as a user's audit.yaml.
func (f *pipelineFixture) yaml(t *testing.T, edit func(c *config.Config)) string {
	t.Helper()
	dir := t.TempDir()
	c := f.truth.Config(f.brokers, filepath.Join(dir, "store"))
	c.Report.CSV = filepath.Join(dir, "loss-report.csv")
	if edit != nil {
		edit(c)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\nschema:\n  schemas_topic: %q\n", strings.Join(c.Kafka.Brokers, ", "), c.Schema.SchemasTopic)
	fmt.Fprintf(&b, "pipeline:\n  application_id: %q\n  output: %q\n", c.Pipeline.ApplicationID, c.Pipeline.Output)
	if c.Pipeline.TopologyFile != "" {
		fmt.Fprintf(&b, "  topology_file: %q\n", c.Pipeline.TopologyFile)
	}
	if c.Pipeline.Join != "" {
		fmt.Fprintf(&b, "  join: %s\n", c.Pipeline.Join)
	}
	if c.Pipeline.Reduce != "" {
		fmt.Fprintf(&b, "  reduce: %s\n", c.Pipeline.Reduce)
	}
	b.WriteString("  inputs:\n")
	for _, in := range c.Pipeline.Inputs {
		fmt.Fprintf(&b, "    - {name: %q, topic: %q, rekey: %q, key_format: %q", in.Name, in.Topic, in.Rekey, in.KeyFormat)
		if in.ChangelogTopic != "" {
			fmt.Fprintf(&b, ", store: %q, repartition_topic: %q, changelog_topic: %q", in.Store, in.RepartitionTopic, in.ChangelogTopic)
		}
		b.WriteString("}\n")
	}
	fmt.Fprintf(&b, "store:\n  dir: %q\nreport:\n  csv: %q\n  json: %q\n", c.Store.Dir, c.Report.CSV, c.Report.JSON)
	p := filepath.Join(dir, "audit.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func fixture(t *testing.T) *pipelineFixture {
	t.Helper()
	f, err := cleanPipeline()
	if err != nil {
		t.Fatalf("simulating the pipeline: %v", err)
	}
	return f
}

// TestAuditVerdicts runs `lossaudit audit` as a user would, on a healthy
// pipeline, with the configuration mistakes that used to end in a clean
// verdict: none of them may exit 0.
func TestAuditVerdicts(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	tests := []struct {
		name   string
		edit   func(c *config.Config)
		args   []string
		code   int
		stdout []string // substrings of stdout
		stderr []string // substrings of stderr
	}{
		{name: "healthy pipeline", code: 0, stdout: []string{"NO LOSS FOUND: 3 inputs,", "records pending"}},
		{name: "rekey typo", edit: func(c *config.Config) { c.Pipeline.Inputs[1].Rekey = "customerID" }, code: 3,
			stdout: []string{"INCONCLUSIVE: input b could not be checked", `check the field path "customerID" (the writer schema has "customerId"`}},
		{name: "wrong application id, internal topics from the topology file", edit: func(c *config.Config) {
			topo := filepath.Join(filepath.Dir(c.Store.Dir), "topology.txt")
			if err := os.WriteFile(topo, []byte(f.truth.Topology), 0o600); err != nil {
				t.Fatal(err)
			}
			c.Pipeline.TopologyFile = topo
			for i := range c.Pipeline.Inputs {
				in := &c.Pipeline.Inputs[i]
				in.Store, in.RepartitionTopic, in.ChangelogTopic = "", "", ""
			}
			c.Pipeline.ApplicationID = "typo-app"
		}, code: 2, stderr: []string{"pipeline.application_id:", "does not exist", "lossaudit topology"}},
		{name: "a group without committed offsets", edit: func(c *config.Config) { c.Pipeline.ApplicationID = "no-such-group" }, code: 3,
			stdout: []string{"INCONCLUSIVE:", "group no-such-group has no committed offset"}},
		{name: "a window after the data", args: []string{"--from", "2030-01-01T00:00:00Z"}, code: 3,
			stdout: []string{"INCONCLUSIVE: the pipeline could not be checked", "no input record falls inside the window 2030-01-01T00:00:00.000Z to now; the inputs' records span 2026-11-29T"}},
		{name: "a report directory that does not exist", edit: func(c *config.Config) { c.Report.CSV = "/nonexistent-dir/loss.csv" }, code: 2,
			stderr: []string{"report.csv: cannot write a report in /nonexistent-dir"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := f.yaml(t, tt.edit)
			var stdout, stderr bytes.Buffer
			code := testRun(append([]string{"audit", "-q", "-c", cfg}, tt.args...), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, s := range tt.stdout {
				if !strings.Contains(oneLine(stdout.String()), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(oneLine(stderr.String()), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
		})
	}
}

func TestAuditCSVToStdout(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	cfg := f.yaml(t, nil)
	var stdout, stderr bytes.Buffer
	if code := testRun([]string{"audit", "-q", "-c", cfg, "--csv", "-"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	recs, err := csv.NewReader(&stdout).ReadAll()
	if err != nil || len(recs) != 1 || recs[0][0] != "finding" {
		t.Errorf("stdout is not the CSV (header only for a clean run): %v %q", err, stdout.String())
	}
	if !strings.Contains(stderr.String(), "NO LOSS FOUND") {
		t.Errorf("the summary did not go to stderr:\n%s", stderr.String())
	}
}

// TestAuditKeepsTheVerdictWhenAReportCannotBeWritten: the audit
// completed, so its summary is printed even though the report is lost.
func TestAuditKeepsTheVerdictWhenAReportCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	res := cleanResultForFinish()
	cfg := &config.Config{Report: config.Report{CSV: filepath.Join(dir, "gone", "loss.csv")}}
	var stdout, stderr bytes.Buffer
	err := finish(&stdout, &stderr, cfg, res)
	if exitCode(err) != exitIncomplete || !strings.Contains(err.Error(), "the CSV report could not be written") {
		t.Errorf("finish = %v (exit %d), want exit 3 saying the CSV is missing", err, exitCode(err))
	}
	if !strings.Contains(stdout.String(), "NO LOSS FOUND") {
		t.Errorf("summary not printed:\n%s", stdout.String())
	}
}

// TestAuditInterrupted: an audit stopped by Ctrl-C exits 130 with one line
// saying so, writes no report, and leaves the store for the next run.
func TestAuditInterrupted(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	cfg := f.yaml(t, nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&interrupted{sig: syscall.SIGINT})
	var stdout, stderr bytes.Buffer
	code := execute(ctx, newTestRootCmd(&stdout, &stderr), []string{"audit", "-q", "-c", cfg}, &stderr)
	if code != 130 || !strings.Contains(stderr.String(), "interrupted by SIGINT: stopped") {
		t.Fatalf("exit %d, stderr %q; want 130 and the interrupted line", code, stderr.String())
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(cfg), "loss-report.csv*")); len(matches) != 0 {
		t.Errorf("reports written by an interrupted audit: %v", matches)
	}
	stdout.Reset()
	stderr.Reset()
	if code := testRun([]string{"audit", "-q", "-c", cfg}, &stdout, &stderr); code != 0 {
		t.Errorf("the next audit on the same store exits %d:\n%s%s", code, stdout.String(), stderr.String())
	}
}

// cleanResultForFinish is a complete audit of one input that found nothing.
func cleanResultForFinish() *finding.Result {
	return &finding.Result{Summary: finding.Summary{InputOrder: []string{"a"},
		Inputs: map[string]*finding.InputCounts{"a": {Scanned: 3, Audited: 3}}}}
}

// TestTopologyFindsWhatWouldMakeAnAuditInconclusive: `topology` checks the
// rekey paths against the inputs' schemas and the group's offsets.
func TestTopologyFindsWhatWouldMakeAnAuditInconclusive(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	tests := []struct {
		name string
		edit func(c *config.Config)
		code int
		want string
	}{
		{"healthy", nil, 0, ""},
		{"rekey typo", func(c *config.Config) { c.Pipeline.Inputs[1].Rekey = "customerID" }, 2,
			`problem: pipeline.inputs[1].rekey: input b: "customerID" is not a field of schema`},
		{"no committed offsets", func(c *config.Config) { c.Pipeline.ApplicationID = "no-such-group" }, 2,
			"problem: pipeline.application_id: input a: group no-such-group has no committed offset on topic topicA"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := testRun([]string{"topology", "-c", f.yaml(t, tt.edit)}, &stdout, &stderr)
			if code != tt.code || !strings.Contains(oneLine(stdout.String()), tt.want) {
				t.Errorf("exit %d (want %d), stdout lacks %q:\n%s\n%s", code, tt.code, tt.want, stdout.String(), stderr.String())
			}
		})
	}
}

// oneLine joins text wrapped for the terminal back into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestScanShowsTheGroupsLag: with pipeline.application_id, scan shows the
// group's committed offset and lag per consumed partition, like
// kafka-consumer-groups --describe.
func TestScanShowsTheGroupsLag(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	cfg := f.yaml(t, nil)
	var stdout, stderr bytes.Buffer
	if code := testRun([]string{"scan", "-q", "-c", cfg, "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lagging := 0
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var r struct {
			Topic       string `json:"topic"`
			LSO         int64  `json:"lso"`
			GroupOffset *int64 `json:"group_offset"`
			Lag         *int64 `json:"lag"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		consumed := strings.HasPrefix(r.Topic, "topic") || strings.HasSuffix(r.Topic, "-repartition")
		if consumed != (r.GroupOffset != nil) {
			t.Errorf("%s: group offset %v, want one exactly on the inputs and repartition topics", r.Topic, r.GroupOffset)
			continue
		}
		if r.GroupOffset != nil {
			if *r.Lag != r.LSO-*r.GroupOffset {
				t.Errorf("%s: lag %d, want LSO %d - committed %d", r.Topic, *r.Lag, r.LSO, *r.GroupOffset)
			}
			if *r.Lag > 0 {
				lagging++
			}
		}
	}
	if lagging == 0 {
		t.Error("no partition shows lag, but the scenario leaves some unprocessed")
	}
	stdout.Reset()
	if code := testRun([]string{"scan", "-q", "-c", cfg}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "GROUP_OFFSET  LAG") {
		t.Errorf("table lacks the group columns (exit %d):\n%s", code, stdout.String())
	}
	// The group's type, state and members follow the table.
	t.Logf("%s", stdout.String()[strings.LastIndex(stdout.String(), "\ngroup "):])
	if !regexp.MustCompile(`\ngroup [^:]+: (classic|consumer|streams|share) group, \w+, \d+ members? \(\w+ v\d+\)\n$`).MatchString(stdout.String()) {
		t.Errorf("no group line after the table:\n%s", stdout.String())
	}
}

// TestCommandsNameASilentListener: a port that accepts connections but does
// not speak Kafka (a registry port by mistake) is named within the
// configured bounds, by every command, instead of a silent hang.
func TestCommandsNameASilentListener(t *testing.T) {
	clearEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // hold it open, say nothing
		}
	}()
	addr := l.Addr().String()
	cfg := writeConfig(t, fmt.Sprintf(`kafka:
  brokers: [%q]
  connect_timeout: 1s
  retry_timeout: 3s
pipeline:
  application_id: app
  output: out
  reduce: plain
  inputs: [{name: a, topic: in}]
`, addr))
	for _, args := range [][]string{{"scan", "-q", "--topic", "t"}, {"topology"}, {"audit", "-q"}} {
		t.Run(args[0], func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := testRun(append(args, "-c", cfg), &stdout, &stderr)
			took := time.Since(start)
			want := addr + " accepted a connection but did not answer a Kafka request within 1s: is it a Kafka listener?"
			if code != exitIncomplete || !strings.Contains(stderr.String(), want) {
				t.Errorf("exit %d after %s, stderr:\n%s\nwant exit 3 and %q", code, took, stderr.String(), want)
			}
			if strings.Contains(stderr.String(), "finished") {
				t.Errorf("a finished line on failure:\n%s", stderr.String())
			}
			if took > 2*time.Minute {
				t.Errorf("took %s with a 3 s retry budget", took)
			}
		})
	}
}

// TestAuditMetricsFile: --metrics-file writes the audit's metrics for
// node_exporter's textfile collector; an audit that does not complete
// leaves the previous file as it was.
func TestAuditMetricsFile(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	cfg := f.yaml(t, nil)
	prom := filepath.Join(t.TempDir(), "lossaudit.prom")
	if code := testRun([]string{"audit", "-q", "-c", cfg, "--metrics-file", prom}, &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`lossaudit_findings{kind="missing",stage="changelog"} 0`, "lossaudit_step_number 0",
		`lossaudit_records_audited_total{input="a"} `, "lossaudit_last_success_timestamp_seconds "} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics file lacks %q:\n%s", want, b)
		}
	}
	t.Setenv("LOSSAUDIT_KAFKA_RETRY_TIMEOUT", "2s")
	if code := testRun([]string{"audit", "-q", "-c", cfg, "--metrics-file", prom, "--brokers", "127.0.0.1:1"},
		&bytes.Buffer{}, &bytes.Buffer{}); code == 0 {
		t.Fatal("an audit of an unreachable cluster exited 0")
	}
	if after, _ := os.ReadFile(prom); string(after) != string(b) {
		t.Error("a failed audit rewrote the metrics file")
	}
}
