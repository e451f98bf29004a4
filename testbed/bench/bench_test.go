package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	tk "github.com/lossaudit/lossaudit/testbed/kafka"
)

// TestMain lets the test binary serve as the harness's child readers: the
// harness re-executes itself (os.Executable) with "rawread".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "rawread" {
		if err := rawReadMain(context.Background(), os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "rawread:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSmoke runs the whole harness on a small load (30k input records)
// against real brokers: every reader must read everything, and the audit
// (full and windowed) and the comparison of input a with its copy must find
// nothing on the consistent pipeline.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three Kafka brokers")
	}
	tk.SkipUnlessAvailable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := benchOptions{Records: 30000, Dir: t.TempDir(), Partitions: 3, RF: 3, Compression: "zstd",
		CommitRecords: 2000, Repeat: 1, Heap: "384m"}
	var logs strings.Builder
	rep, err := bench(ctx, o, io.Discard, &logs)
	if err != nil {
		t.Fatalf("harness: %v\n%s", err, logs.String())
	}
	if got := rep.Manifest.Spec.Records; got != 30000 {
		t.Errorf("manifest says %d records loaded, want 30000", got)
	}
	var inputs int64
	for _, in := range pipelineNames().inputs {
		inputs += rep.Manifest.Topics[in].Records
	}
	if inputs != 30000+rep.Manifest.Appended || rep.Manifest.Appended != 300 {
		t.Errorf("inputs hold %d records, %d appended for the reconcile step, want 30000 + 300", inputs, rep.Manifest.Appended)
	}
	names := map[string]bool{}
	for _, r := range rep.Results {
		names[r.Name] = true
		if r.Wall <= 0 || r.MaxRSS <= 0 {
			t.Errorf("%s: wall %v, peak RSS %d: not measured", r.Name, r.Wall, r.MaxRSS)
		}
	}
	for _, want := range []string{"franz-go", "lossaudit audit", "lossaudit audit --from (newest 5%)", "lossaudit compare (a and its copy)",
		"lossaudit reconcile (baseline)", "lossaudit reconcile (step after +1%)"} {
		if !names[want] {
			t.Errorf("no result for %s (have %v)", want, names)
		}
	}
	if len(rep.Findings) != 5 {
		t.Errorf("findings of the audits, the comparison and the reconcile runs = %v, want [0 0 0 0 0]", rep.Findings)
	}
	for i, f := range rep.Findings {
		if f != 0 {
			t.Errorf("run %d reported %d findings on a consistent pipeline (all: %v)", i, f, rep.Findings)
		}
	}
	if copies := rep.Manifest.Topics[pipelineNames().copied].Records; copies != rep.Manifest.Topics[pipelineNames().inputs[0]].Records {
		t.Errorf("the copy of input a holds %d records, input a %d", copies, rep.Manifest.Topics[pipelineNames().inputs[0]].Records)
	}
	// The step reads what was added (300 input records and their
	// downstream writes), not the 30,000 of the baseline.
	if st := rep.Step; st == nil || st.New["input"] != 300 || st.Read["input"] != 300 || st.readRecords() > 2*st.newRecords() {
		t.Errorf("reconcile step: %+v, want it to read the 300 new input records and at most twice the new records", st)
	}
	if !strings.Contains(rep.Markdown, "| lossaudit audit |") {
		t.Errorf("markdown table lacks the audit row:\n%s", rep.Markdown)
	}
}
