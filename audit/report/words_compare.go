package report

import (
	"fmt"
	"strings"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// The words of lossaudit compare's rows, from their structured evidence.

// coordsText renders up to finding.MaxCoords copies of topic, with "..."
// when count says there are more.
func coordsText(topic string, at []finding.Coord, count int64) string {
	var parts []string
	for _, c := range at {
		parts = append(parts, fmt.Sprintf("%s[%d]@%d", topic, c.Partition, c.Offset))
	}
	s := strings.Join(parts, ", ")
	if count > int64(len(at)) && len(at) > 0 {
		s += ", ..."
	}
	return s
}

func times(n int64) string {
	if n == 1 {
		return "once"
	}
	return Thousands(n) + " times"
}

// sinkDetail is the detail of a sink row.
func sinkDetail(r *finding.Row, e *finding.SinkEvidence) string {
	switch r.Kind {
	case finding.Missing:
		if e.Copies == 0 {
			s := "no copy in sink " + e.Topic
			if e.SourceCopies > 1 {
				s += fmt.Sprintf(" of any of the %s source records with this identity (%s due)", Thousands(e.SourceCopies), Thousands(e.Due))
			}
			return s
		}
		return fmt.Sprintf("sink %s holds %s of %s due source records with this identity (at %s); this one is counted without a copy",
			e.Topic, plural(e.Copies, "copy", "copies"), Thousands(e.Due), coordsText(e.Topic, e.At, e.Copies))
	case finding.Duplicated:
		return fmt.Sprintf("sink %s holds %s of a record the source holds %s (at %s)",
			e.Topic, plural(e.Copies, "copy", "copies"), times(e.SourceCopies), coordsText(e.Topic, e.At, e.Copies))
	case finding.Unexpected:
		return fmt.Sprintf("in sink %s (%s, at %s) with no source record", e.Topic, plural(e.Copies, "copy", "copies"), coordsText(e.Topic, e.At, e.Copies))
	}
	return ""
}

// ledgerDetail is the detail of a ledger row.
func ledgerDetail(r *finding.Row, e *finding.LedgerEvidence) string {
	switch r.Kind {
	case finding.AckedMissing:
		s := fmt.Sprintf("ledger line %d: acknowledged at this offset, ", e.Line)
		if r.Offset >= e.LogEnd {
			s += fmt.Sprintf("which is past the log end %d (truncated)", e.LogEnd)
		} else {
			s += "which holds another record or none"
		}
		if e.Elsewhere > 0 {
			s += "; the same record is at " + coordsText(r.Topic, e.At, e.Elsewhere) + ": do not resend it"
		} else {
			s += "; the record is nowhere else in the topic: resend it"
		}
		return s
	case finding.UnackedPresent:
		where := "in the topic"
		if len(e.At) > 0 {
			where = "at " + coordsText(r.Topic, e.At, 1)
		}
		return fmt.Sprintf("ledger line %d: the send failed, yet the record is %s: resending it duplicates it", e.Line, where)
	case finding.UnackedMissing:
		return fmt.Sprintf("ledger line %d: the send failed and the record is not in the topic: resend it", e.Line)
	case finding.Duplicated:
		return fmt.Sprintf("the topic holds %s of a record the ledger sent %s (first at line %d); extra copies at %s",
			plural(e.Copies, "copy", "copies"), times(e.Sends), e.Line, coordsText(r.Topic, e.At, e.Copies-e.Sends))
	}
	return ""
}

// inconclusiveText says why a comparison cannot vouch for a pair; "" when
// the audit's words fit.
func (compareView) inconclusiveText(i *finding.Inconclusive) string {
	c := i.Counts
	switch i.Reason {
	case finding.NoCommittedOffsets:
		return fmt.Sprintf("pair %s: group %s has no committed offset on its source, so no record is due (%s records pending): check %s",
			i.Input, i.Group, Thousands(c.Pending), i.Key)
	case finding.NothingAudited:
		return fmt.Sprintf("pair %s: none of its %s source records could be compared (%s pending, %s undecodable, the rest without an identity under the match): wait for them to be due, or check %s",
			i.Input, Thousands(c.Scanned), Thousands(c.Pending), Thousands(c.DecodeErrors), i.Key)
	case finding.MostlyUndecodable:
		return fmt.Sprintf("pair %s: %s of %s records of %s could not be decoded (mostly %s): check compare.match and the schema sources",
			i.Input, Thousands(c.DecodeErrors), Thousands(c.Scanned), i.Topic, i.TopError)
	case finding.NoRecords:
		return "no source topic holds any record and there is no ledger: nothing to compare"
	}
	return ""
}
