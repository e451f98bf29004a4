package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// TestWindowedReports: a windowed aggregation's row names its window in
// the summary, the CSV, the JSON and the HTML report, and its section's
// counts are in the summary and the JSON block "windows".
func TestWindowedReports(t *testing.T) {
	start := time.Date(2026, 11, 29, 10, 5, 0, 0, time.UTC).UnixMilli()
	res := &finding.Result{
		Summary: finding.Summary{
			InputOrder: []string{"a"},
			Inputs:     map[string]*finding.InputCounts{"a": {Scanned: 30, Audited: 21}},
			Stages: map[finding.Stage]*finding.StageCounts{
				finding.StageChangelog: {KeysChecked: 9, Findings: map[finding.Kind]int64{finding.Missing: 1}},
				finding.StageOutput:    {KeysChecked: 8, Findings: map[finding.Kind]int64{}},
			},
			Sections: []finding.Section{&finding.Windows{Input: "a", Repartition: "app-rep-repartition", Size: 60_000, Grace: 30_000,
				OnTime: 21, LateOrUncertain: 9}},
		},
		Rows: []finding.Row{{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "a", Key: []byte("k0"), Topic: "app-rep-repartition",
			Timestamp: start + 5, ExpectedTS: start + 5, Window: &finding.WindowRef{Start: start, Size: 60_000}}},
	}
	const want = "k0 @ 2026-11-29T10:05:00Z/1m"
	var b bytes.Buffer
	if err := WriteSummary(&b, res, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, want) || !strings.Contains(s, "LATE OR UNCERTAIN") || !strings.Contains(s, "tumbling window 1m, grace 30s") {
		t.Errorf("summary lacks the window:\n%s", s)
	}
	b.Reset()
	if err := WriteResultCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), ","+want+",") {
		t.Errorf("CSV lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	if err := WriteJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.Contains(s, `"key": "`+want+`"`) || !strings.Contains(s, `"late_or_uncertain": 9`) {
		t.Errorf("JSON lacks the window or the windows block:\n%s", s)
	}
	b.Reset()
	if err := WriteHTML(&b, res, HTMLOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), want) {
		t.Errorf("HTML lacks %q", want)
	}
}

// TestWindowedFinalReports: the section of windows emitted final says so
// in the summary, with its open, buffered and expired windows, and in the
// JSON block's "final"; eager windows print neither.
func TestWindowedFinalReports(t *testing.T) {
	for _, final := range []bool{false, true} {
		res := &finding.Result{Summary: finding.Summary{
			InputOrder: []string{"a"},
			Inputs:     map[string]*finding.InputCounts{"a": {Scanned: 30, Audited: 21}},
			Stages:     map[finding.Stage]*finding.StageCounts{finding.StageOutput: {KeysChecked: 8, Findings: map[finding.Kind]int64{}}},
			Sections: []finding.Section{&finding.Windows{Input: "a", Repartition: "rep", Size: 60_000, Grace: 10_000, OnTime: 21,
				Final: final, FinalOpen: 3, FinalBuffered: 1}},
		}}
		var b bytes.Buffer
		if err := WriteSummary(&b, res, SummaryOptions{}); err != nil {
			t.Fatal(err)
		}
		const note = "emitted final (suppress(untilWindowCloses)): the output is checked for each window certainly closed; pending, not checked: 3 windows not certainly closed, 1 window closed and still held by the suppress buffer; 0 windows expired"
		if strings.Contains(b.String(), note) != final {
			t.Errorf("final %v: summary:\n%s", final, b.String())
		}
		b.Reset()
		if err := WriteJSON(&b, res); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), `"final": {`) != final || (final && !strings.Contains(b.String(), `"buffered": 1`)) {
			t.Errorf("final %v: JSON:\n%s", final, b.String())
		}
	}
}
