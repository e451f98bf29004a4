package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// compareResult is a comparison of two pairs with a ledger, with one row of
// every compare kind.
func compareResult() *finding.Result {
	s := finding.Summary{
		Started: started, Finished: finished,
		InputOrder: []string{"orders", "payments"},
		Inputs: map[string]*finding.InputCounts{
			"orders":   {Scanned: 120000, Audited: 119000, Pending: 1000},
			"payments": {Scanned: 5000, Audited: 5000, DecodeErrors: 2},
		},
		Stages: map[finding.Stage]*finding.StageCounts{
			finding.StageSink:   {KeysChecked: 124998, Findings: map[finding.Kind]int64{finding.Missing: 2, finding.Duplicated: 1, finding.Unexpected: 1}},
			finding.StageLedger: {KeysChecked: 5000, Findings: map[finding.Kind]int64{finding.AckedMissing: 2, finding.UnackedPresent: 1, finding.UnackedMissing: 1, finding.Duplicated: 1}},
		},
		Timings: map[string]time.Duration{"snapshot": time.Second, "read": 20 * time.Second, "check": 2 * time.Second},
		Sections: []finding.Section{&finding.CompareSummary{Match: "record", Grace: 5 * time.Minute,
			Pairs: []finding.CompareCounts{
				{Name: "orders", Source: "orders", Sink: "dr.orders", SinkRecords: 119002, Identities: 119998, Unexplained: 1},
				{Name: "payments", Source: "payments", Sink: "dr.payments", SourceNoIdentity: 3, SinkRecords: 5000, SinkNoIdentity: 3, Identities: 5000},
			},
			Ledger: &finding.LedgerCounts{Lines: 5004, Acked: 5001, Failed: 3, Verified: 4998, Expired: 1, Skipped: 2},
		}},
	}
	rows := []finding.Row{
		{Kind: finding.Missing, Stage: finding.StageSink, Input: "orders", Key: []byte("o-17"), Topic: "orders", Partition: 2, Offset: 4711,
			Timestamp: ms(10, 15, 0, 0), ExpectedTS: ms(10, 15, 0, 0), Evidence: &finding.SinkEvidence{Topic: "dr.orders", SourceCopies: 1, Due: 1}},
		{Kind: finding.Missing, Stage: finding.StageSink, Input: "orders", Key: []byte("o-18"), Topic: "orders", Partition: 0, Offset: 9,
			Timestamp: ms(10, 15, 0, 0), ExpectedTS: ms(10, 15, 0, 0), ObservedTS: ms(10, 15, 0, 0), HasObserved: true,
			Evidence: &finding.SinkEvidence{Topic: "dr.orders", Copies: 1, SourceCopies: 2, Due: 2, At: []finding.Coord{{Partition: 0, Offset: 8}}}},
		{Kind: finding.Duplicated, Stage: finding.StageSink, Input: "orders", Key: []byte("o-20"), Topic: "orders", Partition: 1, Offset: 30,
			Timestamp: ms(10, 16, 0, 0), ExpectedTS: ms(10, 16, 0, 0), ObservedTS: ms(10, 16, 0, 0), HasObserved: true,
			Evidence: &finding.SinkEvidence{Topic: "dr.orders", Copies: 5, SourceCopies: 1, Due: 1,
				At: []finding.Coord{{Partition: 1, Offset: 29}, {Partition: 1, Offset: 31}, {Partition: 1, Offset: 40}}}},
		{Kind: finding.Unexpected, Stage: finding.StageSink, Input: "payments", Key: nil, Topic: "dr.payments", Partition: 0, Offset: 3,
			Timestamp: ms(9, 0, 0, 0), ExpectedTS: ms(9, 0, 0, 0), ObservedTS: ms(9, 0, 0, 0), HasObserved: true,
			Evidence: &finding.SinkEvidence{Topic: "dr.payments", Copies: 1, At: []finding.Coord{{Partition: 0, Offset: 3}}}},
		{Kind: finding.AckedMissing, Stage: finding.StageLedger, Input: "payments", Key: []byte("p-1"), Topic: "payments", Partition: 0, Offset: 800,
			Timestamp: ms(10, 0, 0, 0), ExpectedTS: ms(10, 0, 0, 0), Evidence: &finding.LedgerEvidence{Line: 801, Acked: true, Sends: 1, LogStart: 0, LogEnd: 790}},
		{Kind: finding.AckedMissing, Stage: finding.StageLedger, Input: "payments", Key: []byte("p-2"), Topic: "payments", Partition: 0, Offset: 700,
			Timestamp: ms(10, 0, 0, 0), ExpectedTS: ms(10, 0, 0, 0), Evidence: &finding.LedgerEvidence{Line: 701, Acked: true, Sends: 1, Copies: 1, LogEnd: 790,
				Elsewhere: 1, At: []finding.Coord{{Partition: 1, Offset: 12}}}},
		{Kind: finding.UnackedPresent, Stage: finding.StageLedger, Input: "payments", Key: []byte("p-3"), Topic: "payments", Partition: 2, Offset: 55,
			Timestamp: ms(10, 0, 1, 0), ExpectedTS: ms(10, 0, 1, 0), ObservedTS: ms(10, 0, 1, 0), HasObserved: true,
			Evidence: &finding.LedgerEvidence{Line: 900, Sends: 1, Copies: 1, At: []finding.Coord{{Partition: 2, Offset: 55}}}},
		{Kind: finding.UnackedMissing, Stage: finding.StageLedger, Input: "payments", Key: []byte("p-4"), Topic: "payments", Partition: -1, Offset: -1,
			Timestamp: ms(10, 0, 2, 0), ExpectedTS: ms(10, 0, 2, 0), Evidence: &finding.LedgerEvidence{Line: 901, Sends: 1}},
		{Kind: finding.Duplicated, Stage: finding.StageLedger, Input: "payments", Key: []byte("p-5"), Topic: "payments", Partition: 1, Offset: 77,
			Timestamp: ms(10, 0, 3, 0), ExpectedTS: ms(10, 0, 3, 0), ObservedTS: ms(10, 0, 3, 0), HasObserved: true,
			Evidence: &finding.LedgerEvidence{Line: 950, Sends: 1, Copies: 2, At: []finding.Coord{{Partition: 1, Offset: 77}}}},
	}
	finding.SortRows(rows, s.InputOrder)
	return &finding.Result{Summary: s, Rows: rows}
}

func TestCompareReportsGolden(t *testing.T) {
	res := compareResult()
	var sum, csv, js bytes.Buffer
	if err := WriteSummary(&sum, res, SummaryOptions{CSVPath: "compare.csv"}); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary-compare.txt", sum.Bytes())
	if err := WriteResultCSV(&csv, res); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.csv", csv.Bytes())
	if err := WriteJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.json", js.Bytes())
}

func TestCompareDetail(t *testing.T) {
	rows := compareResult().Rows
	want := map[finding.Kind][]string{
		finding.Missing:        {"no copy in sink dr.orders", "sink dr.orders holds 1 copy of 2 due source records with this identity (at dr.orders[0]@8)"},
		finding.Duplicated:     {"sink dr.orders holds 5 copies of a record the source holds once (at dr.orders[1]@29, dr.orders[1]@31, dr.orders[1]@40, ...)", "the topic holds 2 copies of a record the ledger sent once (first at line 950); extra copies at payments[1]@77"},
		finding.Unexpected:     {"in sink dr.payments (1 copy, at dr.payments[0]@3) with no source record"},
		finding.AckedMissing:   {"ledger line 801: acknowledged at this offset, which is past the log end 790 (truncated); the record is nowhere else in the topic: resend it", "ledger line 701: acknowledged at this offset, which holds another record or none; the same record is at payments[1]@12: do not resend it"},
		finding.UnackedPresent: {"ledger line 900: the send failed, yet the record is at payments[2]@55: resending it duplicates it"},
		finding.UnackedMissing: {"ledger line 901: the send failed and the record is not in the topic: resend it"},
	}
	for _, r := range rows {
		d := Detail(&r)
		found := false
		for _, w := range want[r.Kind] {
			found = found || strings.HasPrefix(d, w)
		}
		if !found {
			t.Errorf("%s row %s[%d]@%d: detail %q, want one starting with one of %q", r.Kind, r.Topic, r.Partition, r.Offset, d, want[r.Kind])
		}
	}
}

func TestCompareLedgerOnlySummary(t *testing.T) {
	res := &finding.Result{
		Summary: finding.Summary{
			Stages:   map[finding.Stage]*finding.StageCounts{finding.StageLedger: {KeysChecked: 10, Findings: map[finding.Kind]int64{finding.AckedMissing: 1}}},
			Sections: []finding.Section{&finding.CompareSummary{Match: "record", Grace: time.Minute, Ledger: &finding.LedgerCounts{Lines: 10, Acked: 10, Verified: 9}}},
		},
		Rows: []finding.Row{{Kind: finding.AckedMissing, Stage: finding.StageLedger, Input: "t", Topic: "t", Offset: 9,
			Evidence: &finding.LedgerEvidence{Line: 10, Acked: true, Sends: 1, LogEnd: 5}}},
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, res, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if first := strings.SplitN(out, "\n", 2)[0]; first != "LOSS FOUND: 1 record finding (1 acked_missing); a ledger of 10 sends" {
		t.Errorf("verdict %q", first)
	}
	if strings.Contains(out, "\n  sink ") {
		t.Errorf("a ledger-only comparison lists a sink stage:\n%s", out)
	}
}
