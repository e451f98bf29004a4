package main

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoCompare runs `lossaudit demo compare` as a user would and checks
// what the user checks: exit 0 (the comparison matched what was injected),
// the MATCH line, and a CSV whose every row names a record the story lists
// as injected, with one row of each kind the demo injects.
func TestDemoCompare(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := testRun([]string{"demo", "compare", "--dir", dir, "-q"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code = %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	out := stdout.String()
	if !strings.Contains(out, "MATCH: the comparison reported exactly the") || strings.Contains(out, "MISMATCH") {
		t.Errorf("output lacks the MATCH verdict:\n%s", out)
	}
	f, err := os.Open(filepath.Join(dir, "compare-report.csv"))
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
	kinds := map[string]bool{}
	for _, r := range rows[1:] {
		kinds[r[0]+"@"+r[1]] = true
		coord := r[4] + "[" + r[5] + "]@" + r[6]
		if !strings.Contains(out, coord) {
			t.Errorf("CSV row %v names %s, which the demo did not inject", r, coord)
		}
	}
	for _, k := range []string{"missing@sink", "duplicated@sink", "acked_missing@ledger", "unacked_present@ledger", "unacked_missing@ledger", "duplicated@ledger"} {
		if !kinds[k] {
			t.Errorf("the CSV has no %s row", k)
		}
	}
}
