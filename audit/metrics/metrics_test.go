package metrics

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func stepResult() *finding.Result {
	started := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	return &finding.Result{
		Summary: finding.Summary{
			Started: started, Finished: started.Add(1500 * time.Millisecond),
			InputOrder: []string{"a", "b"},
			Inputs:     map[string]*finding.InputCounts{"a": {Audited: 900, Pending: 7}, "b": {Audited: 40}},
			Partitions: []finding.PartitionFinding{{Kind: finding.PurgedPastCommit, Topic: "r", Partition: 1}},
			Step:       &finding.Step{Number: 4, Read: map[string]int64{"input": 100, "repartition": 120, "changelog": 80, "output": 60}},
		},
		Rows: []finding.Row{
			{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "a", Key: []byte("secret-customer-1")},
			{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "b", Key: []byte("secret-customer-2")},
			{Kind: finding.Stale, Stage: finding.StageOutput, Input: "a", Key: []byte("secret-customer-3")},
		},
		Resolved: []finding.Row{{Kind: finding.Missing, Stage: finding.StageOutput, Key: []byte("secret-customer-4")}},
	}
}

func TestMetricsOfAStep(t *testing.T) {
	s := New()
	res := stepResult()
	s.Completed(res, res.Summary.Started)
	s.Failed(res.Summary.Started.Add(time.Minute))
	var buf bytes.Buffer
	if err := s.Write(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{
		`lossaudit_findings{kind="missing",stage="changelog"} 2`,
		`lossaudit_findings{kind="stale",stage="output"} 1`,
		`lossaudit_findings{kind="aborted",stage="output"} 0`,
		`lossaudit_partition_findings{kind="purged_past_commit"} 1`,
		`lossaudit_partition_findings{kind="truncated"} 0`,
		`lossaudit_records_audited_total{input="a"} 900`,
		"# TYPE lossaudit_records_audited_total counter",
		`lossaudit_pending_records{input="a"} 7`,
		"lossaudit_last_success_timestamp_seconds 1.7959464e+09",
		"lossaudit_last_run_timestamp_seconds 1.79594646e+09",
		"lossaudit_step_duration_seconds 1.5",
		`lossaudit_runs_total{result="failed"} 1`,
		"lossaudit_resolved_findings_total 1",
		`lossaudit_records_read_total{role="repartition"} 120`,
		"lossaudit_step_number 4",
		"lossaudit_partial 0",
	} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "secret-customer") {
		t.Error("a key appears in the metrics")
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	// A later run with fewer findings leaves no stale series behind.
	res.Rows = res.Rows[:1]
	s.Completed(res, res.Summary.Started.Add(2*time.Minute))
	buf.Reset()
	_ = s.Write(&buf)
	if !strings.Contains(buf.String(), `lossaudit_findings{kind="stale",stage="output"} 0`+"\n") {
		t.Errorf("the output finding was not reset:\n%s", buf.String())
	}
}

// TestMetricsOfAComparisonStep: a mode's own stages and read roles get
// their series (zeros included) from the result, not from a list of the
// Kafka Streams audit's.
func TestMetricsOfAComparisonStep(t *testing.T) {
	s := New()
	res := &finding.Result{Summary: finding.Summary{
		Stages: map[finding.Stage]*finding.StageCounts{finding.StageSink: {KeysChecked: 5, Findings: map[finding.Kind]int64{finding.Duplicated: 1}}},
		Step:   &finding.Step{Number: 2, Read: map[string]int64{"source": 30, "sink": 31}},
	}, Rows: []finding.Row{{Kind: finding.Duplicated, Stage: finding.StageSink, Input: "p"}}}
	s.Completed(res, time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	if err := s.Write(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`lossaudit_findings{kind="duplicated",stage="sink"} 1`,
		`lossaudit_findings{kind="unexpected",stage="sink"} 0`,
		`lossaudit_records_read_total{role="sink"} 31`,
		`lossaudit_records_read_total{role="source"} 30`,
	} {
		if !strings.Contains(buf.String(), want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, buf.String())
		}
	}
}

func TestWriteFileIsAtomicTextFormat(t *testing.T) {
	s := New()
	res := stepResult()
	s.Completed(res, res.Summary.Started)
	path := filepath.Join(t.TempDir(), "lossaudit.prom")
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "# TYPE lossaudit_findings gauge") {
		t.Fatalf("metrics file: %v\n%s", err, b)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
