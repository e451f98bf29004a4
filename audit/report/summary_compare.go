package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// writeCompareTables writes what lossaudit compare read: per pair, the
// source's and the sink's counters, then the ledger's.
func writeCompareTables(b *strings.Builder, s *finding.Summary) {
	title, pairs, ledger := compareTables(s)
	fmt.Fprintf(b, "\n%s\n", title)
	if pairs != nil {
		pairs.write(b, "  ")
	} else {
		b.WriteString("  none (a ledger only)\n")
	}
	if ledger != nil {
		b.WriteString("\nLedger\n")
		ledger.write(b, "  ")
	}
}

// compareTables returns the counts tables of a comparison: the title of
// the pairs table (the match and what made records due), the pairs table
// (nil without pairs) and the ledger table (nil without a ledger).
func compareTables(s *finding.Summary) (title string, pairs, ledger *table) {
	cs := s.Compare
	due := "due: below the committed offsets of group " + safe(cs.Group)
	if cs.Group == "" {
		due = "due: older than " + cs.Grace.String() + " at the snapshot"
	}
	title = fmt.Sprintf("Pairs (match %s; %s)", safe(cs.Match), due)
	if len(cs.Pairs) > 0 {
		pairs = &table{
			header: []string{"PAIR", "SOURCE", "SINK", "SOURCE RECORDS", "DUE", "PENDING", "NO IDENTITY", "DECODE ERRORS", "SINK RECORDS", "SINK NO IDENTITY", "NO SOURCE RECORD"},
			right:  []bool{false, false, false, true, true, true, true, true, true, true, true},
		}
		for _, p := range cs.Pairs {
			c := s.Inputs[p.Name]
			if c == nil {
				c = &finding.InputCounts{}
			}
			pairs.add(safe(p.Name), safe(p.Source), safe(p.Sink), Thousands(c.Scanned), Thousands(c.Audited), Thousands(c.Pending),
				Thousands(p.SourceNoIdentity), Thousands(c.DecodeErrors+p.SinkDecodeErrors), Thousands(p.SinkRecords),
				Thousands(p.SinkNoIdentity), Thousands(p.Unexplained))
		}
	}
	if l := cs.Ledger; l != nil {
		ledger = &table{header: []string{"SENDS", "ACKED", "FAILED", "VERIFIED", "EXPIRED", "UNSETTLED", "OTHER LINES"},
			right: []bool{true, true, true, true, true, true, true}}
		ledger.add(Thousands(l.Lines), Thousands(l.Acked), Thousands(l.Failed), Thousands(l.Verified), Thousands(l.Expired),
			Thousands(l.Unsettled), Thousands(l.Skipped))
	}
	return title, pairs, ledger
}

// lossKinds are the kinds that mean a record is missing somewhere.
var lossKinds = []finding.Kind{finding.Missing, finding.AckedMissing, finding.UnackedMissing}

// compareWords are the verdict's words for lossaudit compare.
func compareWords(res *finding.Result) verdictWords {
	s := &res.Summary
	var due int64
	for _, c := range s.Inputs {
		if c != nil {
			due += c.Audited
		}
	}
	var parts []string
	if len(s.Compare.Pairs) > 0 {
		parts = append(parts, fmt.Sprintf("%s, %s compared", plural(int64(len(s.Compare.Pairs)), "pair", "pairs"), plural(due, "due source record", "due source records")))
	}
	if l := s.Compare.Ledger; l != nil {
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
