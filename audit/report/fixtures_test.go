package report

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update to accept)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// ms is a Unix-millisecond timestamp on the day of the seeds' outage.
func ms(h, m, s, milli int) int64 {
	return time.Date(2026, 11, 29, h, m, s, milli*int(time.Millisecond), time.UTC).UnixMilli()
}

var (
	started  = time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	finished = started.Add(3*time.Minute + 25*time.Second + 250*time.Millisecond)
)

func baseSummary() finding.Summary {
	return finding.Summary{
		Started:    started,
		Finished:   finished,
		InputOrder: []string{"a", "b", "c"},
		Inputs: map[string]*finding.InputCounts{
			"a": {Scanned: 1000000, Audited: 990000, Pending: 9000, NullKey: 500, NullValue: 400, DecodeErrors: 0, OutsideWindow: 100},
			"b": {Scanned: 200000, Audited: 199990, Pending: 10},
			"c": {Scanned: 44567, Audited: 44567},
		},
		Stages: map[finding.Stage]*finding.StageCounts{
			finding.StageChangelog: {KeysChecked: 123456, Findings: map[finding.Kind]int64{}},
			finding.StageOutput:    {KeysChecked: 45678, Findings: map[finding.Kind]int64{}},
		},
		Timings: map[string]time.Duration{"check": 13700 * time.Millisecond, "snapshot": 1012 * time.Millisecond,
			"read": 190500 * time.Millisecond, "a later phase": 12 * time.Millisecond},
	}
}

// cleanResult is a complete audit that found nothing.
func cleanResult() *finding.Result {
	s := baseSummary()
	s.Group = &finding.Group{ID: "lossaudit-tb", Type: "streams", State: "Stable", Members: 2, Via: "StreamsGroupDescribe v0"}
	return &finding.Result{Summary: s}
}

// findingRows are deliberately out of report order and exercise every
// rendering rule: each kind, both stages, text and base64 keys, a key that
// looks like base64 text, CSV quoting, missing observed timestamps.
func findingRows() []finding.Row {
	return []finding.Row{
		{Kind: finding.Stale, Stage: finding.StageOutput, Input: "a", Key: []byte("cust-2"), Topic: "topicA", Partition: 1, Offset: 77,
			Timestamp: ms(10, 15, 2, 123), ExpectedTS: ms(10, 15, 2, 123), ObservedTS: ms(10, 14, 59, 0), HasObserved: true,
		},
		{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "c", Key: []byte("cust-1"), Topic: "topicC", Partition: 0, Offset: 5,
			Timestamp: ms(10, 15, 3, 0), ExpectedTS: ms(10, 15, 3, 0), Evidence: &finding.Witness{Topic: "app-C-repartition"}},
		{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "a", Key: []byte("cust-10"), Topic: "topicA", Partition: 2, Offset: 1234567,
			Timestamp: ms(10, 15, 2, 5), ExpectedTS: ms(10, 15, 2, 5), Evidence: &finding.Witness{Topic: "app-A-repartition", Seen: true, Partition: 2, Offset: 88}},
		{Kind: finding.Aborted, Stage: finding.StageChangelog, Input: "b", Key: []byte{0xff, 0x00, 0x10}, Topic: "topicB", Partition: 3, Offset: 9,
			Timestamp: ms(10, 16, 0, 999), ExpectedTS: ms(10, 16, 0, 999), ObservedTS: ms(10, 1, 0, 0), HasObserved: true,
			Evidence: &finding.Witness{Topic: "app-B-repartition, \"quoted\""}},
		{Kind: finding.Stale, Stage: finding.StageChangelog, Input: "a", Key: []byte("cust-1"), Topic: "topicA", Partition: 0, Offset: 42,
			Timestamp: ms(10, 15, 1, 0), ExpectedTS: ms(10, 15, 1, 0), ObservedTS: ms(10, 0, 0, 0), HasObserved: true,
			Evidence: &finding.Witness{Topic: "app-A-repartition", Seen: true, Partition: 0, Offset: 7}},
		{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "a", Key: []byte("b64:not-really"), Topic: "topicA", Partition: 0, Offset: 3,
			Timestamp: ms(10, 15, 0, 0), ExpectedTS: ms(10, 15, 0, 0), Evidence: &finding.Witness{Topic: "app-A-repartition"}},
		{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "a", Key: []byte("Zürich, \"HQ\"\nline2"), Topic: "topicA", Partition: 1, Offset: 8,
			Timestamp: ms(10, 15, 0, 0), ExpectedTS: ms(10, 15, 0, 0), Evidence: &finding.Witness{Topic: "app-A-repartition"}},
	}
}

// findingsResult is a complete audit with per-key findings.
func findingsResult() *finding.Result {
	s := baseSummary()
	s.Stages[finding.StageChangelog].Findings = map[finding.Kind]int64{finding.Missing: 4, finding.Stale: 1, finding.Aborted: 1}
	s.Stages[finding.StageOutput].Findings = map[finding.Kind]int64{finding.Stale: 1}
	s.DecodeErrorsBySchema = map[string]int64{"schema 7: missing field customerId": 3}
	s.DecodeErrorSamples = []finding.DecodeErrorSample{
		{Topic: "topicA", Partition: 2, Offset: 17, Error: "schema 7: field customerId: missing"},
		{Topic: "topicA", Partition: 0, Offset: 99, Error: "schema 7: field customerId: missing\x1b[0m"},
	}
	rows := findingRows()
	finding.SortRows(rows, s.InputOrder)
	return &finding.Result{Summary: s, Rows: rows}
}

// partitionsResult is a complete audit with partition-level findings only.
func partitionsResult() *finding.Result {
	s := baseSummary()
	s.Partitions = []finding.PartitionFinding{
		{Kind: finding.PurgedPastCommit, Topic: "myapp-KSTREAM-REDUCE-STATE-STORE-0000000002-repartition", Partition: 1,
			Evidence: &finding.PurgeEvidence{Group: "myapp", LogStart: 1200, Committed: 1000}},
		{Kind: finding.StuckLSO, Topic: "myapp-KSTREAM-REDUCE-STATE-STORE-0000000009-changelog", Partition: 2,
			Evidence: &finding.StuckEvidence{LSO: 5000, StartHighWatermark: 5210, HighWatermark: 5300, Waited: time.Minute}},
	}
	return &finding.Result{Summary: s}
}

// partialResult is an audit that stopped early with some findings.
func partialResult() *finding.Result {
	s := baseSummary()
	s.Partial = true
	s.PartialReason = finding.PartialStuck
	s.Inputs["c"] = &finding.InputCounts{Scanned: 1000}
	s.Finished = time.Time{}
	s.Stages[finding.StageChangelog].Findings = map[finding.Kind]int64{finding.Missing: 1}
	delete(s.Stages, finding.StageOutput)
	rows := findingRows()[2:3]
	return &finding.Result{Summary: s, Rows: rows}
}

// inconclusiveResult is an audit that could not check an input, read
// through gaps and retries, with the registry down.
func inconclusiveResult() *finding.Result {
	s := baseSummary()
	s.Inputs["b"] = &finding.InputCounts{Scanned: 10500, DecodeErrors: 10500}
	s.Inconclusive = []finding.Inconclusive{{Reason: finding.MostlyUndecodable, Input: "b", Group: "myapp", Counts: *s.Inputs["b"],
		Field: "customerID", TopError: "schema 1: field_missing", Nearest: []string{"customerId", "orderId"}}}
	s.Reads = []finding.ReadIssue{{Topic: "topicA", Partition: 3, Gaps: 12, Retries: 4}}
	s.SchemaSources = []finding.SchemaSource{{Source: "schema registry http://registry:8081", Error: "connection refused", ServedBy: "schemas topic _schemas"}}
	return &finding.Result{Summary: s}
}

// stepResult is a reconciliation step with open findings (some first seen
// at earlier steps), resolved ones and a rebuilt partition.
func stepResult() *finding.Result {
	res := findingsResult()
	base := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for i := range res.Rows {
		res.Rows[i].FirstSeen = base.Add(time.Duration(i%3) * 10 * time.Minute)
	}
	res.Resolved = []finding.Row{
		{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "a", Key: []byte("cust-7"), Topic: "topicA", Partition: 2, Offset: 11,
			Timestamp: ms(9, 0, 1, 0), ExpectedTS: ms(9, 0, 1, 0), Evidence: &finding.Witness{Topic: "app-A-repartition"}, FirstSeen: base},
	}
	res.Summary.Step = &finding.Step{Number: 7, BaselineAt: base, Previous: started.Add(-time.Minute), KeysJudged: 812, Resolved: 1,
		Read:    map[string]int64{"input": 10234, "repartition": 10400, "changelog": 5120, "output": 4096},
		Rebuilt: []string{"myapp-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog[1]"}}
	return res
}
