package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// compareView renders lossaudit compare's section: its words, the pairs
// and ledger tables, and the "compare" block of the JSON report.
type compareView struct{ cs *finding.CompareSummary }

func (compareView) checkedHeader() string { return "RECORDS CHECKED" }

// stages: a comparison lists the stages it checked, none always.
func (compareView) stages() []finding.Stage { return nil }

func (compareView) rowWords() rowWords {
	return rowWords{
		title: "Record findings",
		legend: "  (REPLAY is the source record, topic[partition]@offset, or the offset a ledger\n" +
			"  claims; under each row its timestamp and the copies found)\n",
		next:      "names the source record (or the offset a ledger claims) and, in detail, the copies found",
		htmlTitle: "Record findings",
		htmlHint:  "Each row is one record the comparison found: the source record (or the offset a ledger claims) in the replay column (topic[partition]@offset), and in detail the copies found",
		htmlNone:  "No record findings: nothing missing or duplicated.",
	}
}

// rowNote says when the record was and, from the evidence, the copies
// found.
func (compareView) rowNote(r *finding.Row) string {
	return "at " + FormatTS(r.Timestamp) + "; " + safe(Detail(r))
}

// counts are what lossaudit compare read: per pair, the source's and the
// sink's counters (titled with the match and what made records due), then
// the ledger's.
func (v compareView) counts(s *finding.Summary) []countsBlock {
	cs := v.cs
	due := "due: below the committed offsets of group " + safe(cs.Group)
	if cs.Group == "" {
		due = "due: older than " + cs.Grace.String() + " at the snapshot"
	}
	title := fmt.Sprintf("Pairs (match %s; %s)", safe(cs.Match), due)
	pairs := countsBlock{title: title, htmlTitle: title, empty: "none (a ledger only)", htmlEmpty: "No pairs: a ledger only."}
	if len(cs.Pairs) > 0 {
		pairs.table = &table{
			header: []string{"PAIR", "SOURCE", "SINK", "SOURCE RECORDS", "DUE", "PENDING", "NO IDENTITY", "DECODE ERRORS", "SINK RECORDS", "SINK NO IDENTITY", "NO SOURCE RECORD"},
			right:  []bool{false, false, false, true, true, true, true, true, true, true, true},
		}
		for _, p := range cs.Pairs {
			c := s.Inputs[p.Name]
			if c == nil {
				c = &finding.InputCounts{}
			}
			pairs.table.add(safe(p.Name), safe(p.Source), safe(p.Sink), Thousands(c.Scanned), Thousands(c.Audited), Thousands(c.Pending),
				Thousands(p.SourceNoIdentity), Thousands(c.DecodeErrors+p.SinkDecodeErrors), Thousands(p.SinkRecords),
				Thousands(p.SinkNoIdentity), Thousands(p.Unexplained))
		}
	}
	// A per-record stream stage's declared filters and re-keys: what
	// they dropped by design and what they could not decide.
	var filtered, uncertain, nulls int64
	for _, p := range cs.Pairs {
		if c := s.Inputs[p.Name]; c != nil {
			filtered, uncertain, nulls = filtered+c.Filtered, uncertain+c.Uncertain, nulls+c.NullKey+c.NullValue
		}
	}
	if filtered > 0 {
		pairs.notes = append(pairs.notes, fmt.Sprintf("DROPPED by design: %s by a declared filter, %s with a null key or value",
			plural(filtered, "record", "records"), Thousands(nulls)))
	}
	if uncertain > 0 {
		pairs.notes = append(pairs.notes, fmt.Sprintf("UNCERTAIN: %s whose declared predicate or re-key could not be evaluated (undecodable value, missing field, evaluation error): neither expected nor reported", plural(uncertain, "record", "records")))
	}
	out := []countsBlock{pairs}
	if l := cs.Ledger; l != nil {
		ledger := &table{header: []string{"SENDS", "ACKED", "FAILED", "VERIFIED", "EXPIRED", "UNSETTLED", "OTHER LINES"},
			right: []bool{true, true, true, true, true, true, true}}
		ledger.add(Thousands(l.Lines), Thousands(l.Acked), Thousands(l.Failed), Thousands(l.Verified), Thousands(l.Expired),
			Thousands(l.Unsettled), Thousands(l.Skipped))
		out = append(out, countsBlock{title: "Ledger", htmlTitle: "Ledger", table: ledger})
	}
	return out
}

// lossKinds are the kinds that mean a record is missing somewhere.
var lossKinds = []finding.Kind{finding.Missing, finding.AckedMissing, finding.UnackedMissing}

// verdictWords are the verdict's words for lossaudit compare.
func (v compareView) verdictWords(res *finding.Result) verdictWords {
	s := &res.Summary
	var due int64
	for _, c := range s.Inputs {
		if c != nil {
			due += c.Audited
		}
	}
	var parts []string
	if len(v.cs.Pairs) > 0 {
		parts = append(parts, fmt.Sprintf("%s, %s compared", plural(int64(len(v.cs.Pairs)), "pair", "pairs"), plural(due, "due source record", "due source records")))
	}
	if l := v.cs.Ledger; l != nil {
		parts = append(parts, fmt.Sprintf("a ledger of %s", plural(l.Lines, "send", "sends")))
	}
	scope := strings.Join(parts, ", ")
	nrows := int64(len(res.Rows))
	head := "DUPLICATES FOUND"
	for _, r := range res.Rows {
		if slices.Contains(lossKinds, r.Kind) {
			head = "LOSS FOUND"
			break
		}
	}
	return verdictWords{
		scope:       scope,
		pending:     [3]string{"source record", "source records", "not yet due"},
		rows:        plural(nrows, "record finding", "record findings"),
		found:       head + ": " + plural(nrows, "record finding", "record findings"),
		partial:     "PARTIAL COMPARISON",
		nothingRows: "no record reported",
	}
}

type jsonCompare struct {
	Match  string            `json:"match"`
	Group  string            `json:"group"`
	Grace  string            `json:"grace"`
	Pairs  []jsonComparePair `json:"pairs"`
	Ledger *jsonLedger       `json:"ledger,omitempty"`
}

type jsonComparePair struct {
	Name             string `json:"name"`
	Source           string `json:"source"`
	Sink             string `json:"sink"`
	SourceNoIdentity int64  `json:"source_no_identity"`
	SinkRecords      int64  `json:"sink_records"`
	SinkNoIdentity   int64  `json:"sink_no_identity"`
	SinkDecodeErrors int64  `json:"sink_decode_errors"`
	Identities       int64  `json:"identities"`
	Unexplained      int64  `json:"no_source_record"`
}

type jsonLedger struct {
	Sends     int64 `json:"sends"`
	Acked     int64 `json:"acked"`
	Failed    int64 `json:"failed"`
	Verified  int64 `json:"verified"`
	Expired   int64 `json:"expired"`
	Unsettled int64 `json:"unsettled"`
	Other     int64 `json:"other_lines"`
}

// jsonBlock is the "compare" block: the comparison's own counters.
func (v compareView) jsonBlock() any {
	cs := v.cs
	out := &jsonCompare{Match: cs.Match, Group: cs.Group, Grace: cs.Grace.String(), Pairs: []jsonComparePair{}}
	for _, p := range cs.Pairs {
		out.Pairs = append(out.Pairs, jsonComparePair{Name: p.Name, Source: p.Source, Sink: p.Sink,
			SourceNoIdentity: p.SourceNoIdentity, SinkRecords: p.SinkRecords, SinkNoIdentity: p.SinkNoIdentity,
			SinkDecodeErrors: p.SinkDecodeErrors, Identities: p.Identities, Unexplained: p.Unexplained})
	}
	if l := cs.Ledger; l != nil {
		out.Ledger = &jsonLedger{Sends: l.Lines, Acked: l.Acked, Failed: l.Failed, Verified: l.Verified,
			Expired: l.Expired, Unsettled: l.Unsettled, Other: l.Skipped}
	}
	return out
}
