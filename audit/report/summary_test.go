package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestWriteSummaryGolden(t *testing.T) {
	many := findingsResult()
	for i := range 25 {
		many.Rows = append(many.Rows, finding.Row{Kind: finding.Missing, Stage: finding.StageOutput, Input: "c",
			Key: fmt.Appendf(nil, "bulk-%02d", i), Topic: "topicC", Partition: 4, Offset: int64(1000 + i),
			Timestamp: ms(11, 0, i, 0), ExpectedTS: ms(11, 0, i, 0)})
	}
	finding.SortRows(many.Rows, many.Summary.InputOrder)
	tests := []struct {
		name   string
		res    *finding.Result
		opt    SummaryOptions
		golden string
	}{
		{"clean", cleanResult(), SummaryOptions{CSVPath: "loss-report.csv"}, "summary-clean.txt"},
		{"findings", findingsResult(), SummaryOptions{CSVPath: "loss-report.csv", JSONPath: "report.json"}, "summary-findings.txt"},
		{"findings truncated", many, SummaryOptions{CSVPath: "loss-report.csv"}, "summary-findings-truncated.txt"},
		{"findings no csv", many, SummaryOptions{MaxRows: 3}, "summary-findings-nocsv.txt"},
		{"partial", partialResult(), SummaryOptions{CSVPath: "loss-report.csv.partial"}, "summary-partial.txt"},
		{"partitions", partitionsResult(), SummaryOptions{}, "summary-partitions.txt"},
		{"inconclusive", inconclusiveResult(), SummaryOptions{CSVPath: "loss-report.csv.partial"}, "summary-inconclusive.txt"},
		{"step", stepResult(), SummaryOptions{CSVPath: "loss-report.csv"}, "summary-step.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteSummary(&buf, tt.res, tt.opt); err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(buf.Bytes(), []byte("\x1b")) {
				t.Error("escape sequence in summary without Color")
			}
			golden(t, tt.golden, buf.Bytes())
		})
	}
}

func TestWriteSummaryVerdict(t *testing.T) {
	tests := []struct {
		name   string
		res    *finding.Result
		prefix string
		colour string
	}{
		{"clean", cleanResult(), "NO LOSS FOUND: 3 inputs, 1,234,557 records audited, 0 findings", ansiGreen},
		{"findings", findingsResult(), "LOSS FOUND: 7 keys lost an update (4 missing, 2 stale, 1 aborted); 3 inputs, 1,234,557 records audited", ansiRed},
		{"partitions", partitionsResult(), "LOSS SUSPECTED: no key reported lost, but 2 partition findings (1 purged_past_commit, 1 stuck_lso);", ansiYellow},
		{"partial", partialResult(), "PARTIAL AUDIT: results are incomplete; so far 3 inputs", ansiYellow},
		{"inconclusive", inconclusiveResult(), "INCONCLUSIVE: input b could not be checked; so far 3 inputs", ansiYellow},
		{"single input", &finding.Result{Summary: finding.Summary{InputOrder: []string{"a"},
			Inputs: map[string]*finding.InputCounts{"a": {Audited: 1}}}}, "NO LOSS FOUND: 1 input, 1 record audited, 0 findings", ansiGreen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var plain, col bytes.Buffer
			if err := WriteSummary(&plain, tt.res, SummaryOptions{}); err != nil {
				t.Fatal(err)
			}
			para := verdictParagraph(plain.String())
			if got := strings.Join(strings.Fields(para), " "); !strings.HasPrefix(got, tt.prefix) {
				t.Errorf("verdict %q, want prefix %q", got, tt.prefix)
			}
			for _, line := range strings.Split(para, "\n") {
				if len([]rune(line)) > lineWidth {
					t.Errorf("verdict line of %d columns: %q", len([]rune(line)), line)
				}
			}
			if err := WriteSummary(&col, tt.res, SummaryOptions{Color: true}); err != nil {
				t.Fatal(err)
			}
			wantCol := tt.colour + para + ansiReset + "\n"
			if !strings.HasPrefix(col.String(), wantCol) {
				t.Errorf("coloured verdict %q, want %q", col.String()[:min(len(col.String()), len(wantCol))], wantCol)
			}
			if strings.Count(col.String(), "\x1b[") != 2 {
				t.Error("colour used beyond the verdict line")
			}
		})
	}
}

func TestWriteSummaryRowLimit(t *testing.T) {
	res := findingsResult()
	tests := []struct {
		max      int
		listed   int
		trailer  bool
		noneLine bool
	}{
		{0, 7, false, false}, // default 20 > 7 rows
		{3, 3, true, false},  // first 3, pointer to the rest
		{7, 7, false, false}, // exactly all
		{-1, 0, false, true}, // none listed
		{100, 7, false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteSummary(&buf, res, SummaryOptions{MaxRows: tt.max, CSVPath: "x.csv"}); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			listed := strings.Count(out, "\n  missing ") + strings.Count(out, "\n  stale ") + strings.Count(out, "\n  aborted ")
			if listed != tt.listed {
				t.Errorf("listed %d rows, want %d\n%s", listed, tt.listed, out)
			}
			if got := strings.Contains(out, "more, all in x.csv"); got != tt.trailer {
				t.Errorf("pointer to the rest present=%v, want %v", got, tt.trailer)
			}
			if got := strings.Contains(out, "Key findings (7): all in x.csv"); got != tt.noneLine {
				t.Errorf("'all in x.csv' line present=%v, want %v", got, tt.noneLine)
			}
		})
	}
}

func TestWriteSummaryEscapesData(t *testing.T) {
	res := findingsResult()
	res.Rows[0].Key = []byte("\x1b]0;pwned\x07")
	res.Rows[0].Topic = "evil\x1b[2J"
	res.Summary.Partitions = []finding.PartitionFinding{{Kind: finding.PurgedPastCommit, Topic: "t\x1b[31m", Evidence: &finding.PurgeEvidence{Group: "e\rX"}}}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, res, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if bytes.ContainsAny(buf.Bytes(), "\x1b\x07\r") {
		t.Fatalf("raw control characters reached the terminal:\n%q", buf.String())
	}
	for _, want := range []string{`\x1b]0;pwned\a`, `evil\x1b[2J`, `t\x1b[31m`, `e\rX`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks escaped %q", want)
		}
	}
}

func TestWriteSummaryLongKeyTruncated(t *testing.T) {
	res := findingsResult()
	res.Rows = res.Rows[:1]
	res.Rows[0].Key = []byte(strings.Repeat("k", 100))
	var buf bytes.Buffer
	if err := WriteSummary(&buf, res, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), strings.Repeat("k", maxKeyWidth-1)+"… ") || strings.Contains(buf.String(), strings.Repeat("k", maxKeyWidth)) {
		t.Errorf("key not cut to %d characters:\n%s", maxKeyWidth, buf.String())
	}
}

// TestZeroAndNilResults: an empty result renders, a nil one is an error,
// neither panics.
func TestZeroAndNilResults(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSummary(&buf, &finding.Result{}, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "NO LOSS FOUND: 0 inputs, 0 records audited, 0 findings\n") {
		t.Errorf("empty result summary starts %q", strings.SplitN(buf.String(), "\n", 2)[0])
	}
	buf.Reset()
	if err := WriteJSON(&buf, &finding.Result{}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("null")) {
		t.Errorf("empty result JSON has null lists:\n%s", buf.String())
	}
	if err := WriteSummary(&buf, nil, SummaryOptions{}); err == nil {
		t.Error("WriteSummary(nil) did not fail")
	}
	if err := WriteJSON(&buf, nil); err == nil {
		t.Error("WriteJSON(nil) did not fail")
	}
	if err := WriteResultCSV(&buf, nil); err == nil {
		t.Error("WriteResultCSV(nil) did not fail")
	}
}

// verdictParagraph returns the verdict at the top of a summary: its first
// line and the continuation lines under it, without the trailing newline.
func verdictParagraph(summary string) string {
	lines := strings.Split(summary, "\n")
	n := 1
	for n < len(lines) && strings.HasPrefix(lines[n], "  ") && !strings.HasPrefix(lines[n], "  why:") && !strings.HasPrefix(lines[n], "  next:") {
		n++
	}
	return strings.Join(lines[:n], "\n")
}

// TestPendingLine: the summary says how many keys the output lacks while
// a suppress buffer still holds them, and nothing when there are none.
func TestPendingLine(t *testing.T) {
	for _, tc := range []struct {
		pending int64
		want    string
	}{
		{0, ""},
		{1, "1 key not yet at the output is pending in the suppress buffer (emitted when its time limit passes): not lost"},
		{1200, "1,200 keys not yet at the output are pending in the suppress buffer (emitted when its time limit passes): not lost"},
	} {
		s := &finding.Summary{Stages: map[finding.Stage]*finding.StageCounts{finding.StageOutput: {KeysChecked: 5000, KeysPending: tc.pending}}}
		if got := pendingLine(s); got != tc.want {
			t.Errorf("pending %d: %q, want %q", tc.pending, got, tc.want)
		}
	}
	if got := pendingLine(&finding.Summary{}); got != "" {
		t.Errorf("no output stage: %q", got)
	}
}
