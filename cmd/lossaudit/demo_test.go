package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemo runs `lossaudit demo` as a user would and checks what the user
// checks: exit 0 (the audit matched the injected loss exactly), the MATCH
// line, and a CSV report whose rows are the losses the demo says it
// injected (one row per lost update, with the header of docs/reference.md).
func TestDemo(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	// Twice in the same directory, as a user trying it again would: the
	// second run must not be confused by what the first left behind.
	for i := range 2 {
		stdout.Reset()
		stderr.Reset()
		code := testRun([]string{"demo", "--dir", dir, "-q"}, &stdout, &stderr)
		if code != 0 {
			t.Fatalf("demo run %d exit code = %d, want 0\nstdout:\n%s\nstderr:\n%s", i+1, code, stdout.String(), stderr.String())
		}
	}
	out := stdout.String()
	if !strings.Contains(out, "MATCH: the audit reported exactly the") || strings.Contains(out, "MISMATCH") {
		t.Errorf("demo output lacks the MATCH verdict:\n%s", out)
	}
	f, err := os.Open(filepath.Join(dir, "loss-report.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) < 2 || strings.Join(rows[0], ",") != "finding,stage,input,key,topic,partition,offset,timestamp,expected_ts,observed_ts,detail" {
		t.Fatalf("CSV header/rows = %v", rows)
	}
	// Every replay coordinate in the CSV must be one the story lists as an
	// injected loss.
	for _, r := range rows[1:] {
		coord := r[4] + "[" + r[5] + "]@" + r[6]
		if !strings.Contains(out, coord) {
			t.Errorf("CSV row %v replays %s, which the demo did not inject", r, coord)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
		t.Errorf("JSON report not written: %v", err)
	}
}
