package report

import (
	"fmt"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// streamsView renders the Kafka Streams audit's section: its words, the
// per-input table, and the pipeline and timeline cards of the HTML report.
type streamsView struct{ sec *finding.Streams }

func (streamsView) checkedHeader() string { return "KEYS CHECKED" }

// inconclusiveText: the audit's words are InconclusiveText's own.
func (streamsView) inconclusiveText(*finding.Inconclusive) string { return "" }

// stages: the changelog and output stages are always listed.
func (streamsView) stages() []finding.Stage { return finding.Stages }

func (streamsView) verdictWords(res *finding.Result) verdictWords {
	s := &res.Summary
	var audited int64
	for _, c := range s.Inputs {
		if c != nil {
			audited += c.Audited
		}
	}
	nrows := int64(len(res.Rows))
	return verdictWords{
		scope:       fmt.Sprintf("%s, %s audited", plural(int64(len(inputNames(s))), "input", "inputs"), plural(audited, "record", "records")),
		pending:     [3]string{"record", "records", "not yet processed"},
		rows:        plural(nrows, "key finding", "key findings"),
		found:       fmt.Sprintf("LOSS FOUND: %s lost an update", plural(nrows, "key", "keys")),
		partial:     "PARTIAL AUDIT",
		nothingRows: "no key reported lost",
	}
}

func (streamsView) rowWords() rowWords {
	return rowWords{
		title: "Key findings",
		legend: "  (REPLAY is the input record carrying the lost update: topic[partition]@offset;\n" +
			"  under each row its timestamp, what the stage holds, and the evidence)\n",
		next:      "names the input record to replay (topic, partition, offset)",
		htmlTitle: "Records to replay",
		htmlHint:  "Each row is the newest processed update of one key that did not reach the stage; replay the input record in the replay column (topic[partition]@offset); observed is the newest timestamp the stage holds for the key",
		htmlNone:  "No key lost an update.",
	}
}

// rowNote says when the update was, what the stage holds, and whether the
// repartition topic still holds a copy.
func (streamsView) rowNote(r *finding.Row) string {
	note := "at " + FormatTS(r.Timestamp) + "; the stage holds "
	if r.HasObserved {
		note += FormatTS(r.ObservedTS)
	} else {
		note += "nothing for the key"
	}
	if c, _ := r.Evidence.(*finding.CountEvidence); c != nil {
		note += fmt.Sprintf("; the changelog counts %d of %d processed records: %s lost", c.Count, c.Processed, updates(c.Lost()))
	}
	if w, _ := r.Evidence.(*finding.Witness); w != nil && w.Seen {
		note += fmt.Sprintf("; in the repartition topic at [%d]@%d: lost before the store", w.Partition, w.Offset)
	} else if w != nil {
		note += "; not in the repartition topic (purged, or never written)"
	}
	if !r.FirstSeen.IsZero() {
		note += "; first seen " + formatTime(r.FirstSeen)
	}
	return note
}

// counts is the per-input table, with notes on what its DROPPED and
// OUTSIDE columns count.
func (streamsView) counts(s *finding.Summary) []countsBlock {
	in, total := inputTable(s, inputNames(s))
	return []countsBlock{{title: "Inputs", table: &in, notes: inputNotes(&total)}}
}

// cards are the picture of the pipeline (when the section names it) and
// the timeline of the audited records and lost updates.
func (v streamsView) cards(res *finding.Result) []htmlCard {
	var out []htmlCard
	if pv := newPipelineView(res, v.sec.Pipeline); pv != nil {
		out = append(out, htmlCard{Template: "pipeline", Data: pv})
	}
	return append(out, htmlCard{Template: "timeline", Data: newTimelineView(res, v.sec.Timeline)})
}

// inputTable is the per-input counts table of the summary, with a total
// row when there are several inputs, and the total.
func inputTable(s *finding.Summary, names []string) (table, finding.InputCounts) {
	in := table{
		header: []string{"INPUT", "SCANNED", "AUDITED", "PENDING", "DROPPED", "UNDECODABLE", "OUTSIDE"},
		right:  []bool{false, true, true, true, true, true, true},
	}
	var total finding.InputCounts
	for _, n := range names {
		c := s.Inputs[n]
		if c == nil {
			c = &finding.InputCounts{}
		}
		total.Scanned += c.Scanned
		total.Audited += c.Audited
		total.Pending += c.Pending
		total.NullKey += c.NullKey
		total.NullValue += c.NullValue
		total.Filtered += c.Filtered
		total.Uncertain += c.Uncertain
		total.DecodeErrors += c.DecodeErrors
		total.OutsideWindow += c.OutsideWindow
		in.add(inputCells(safe(n), c)...)
	}
	if len(names) > 1 {
		in.add(inputCells("total", &total)...)
	}
	return in, total
}

func inputCells(name string, c *finding.InputCounts) []string {
	return []string{name, Thousands(c.Scanned), Thousands(c.Audited), Thousands(c.Pending), Thousands(c.NullKey + c.NullValue + c.Filtered),
		Thousands(c.DecodeErrors), Thousands(c.OutsideWindow)}
}

// inputNotes explain the input table's DROPPED and OUTSIDE columns when
// they count something.
func inputNotes(total *finding.InputCounts) []string {
	var notes []string
	switch {
	case total.Filtered > 0:
		notes = append(notes, fmt.Sprintf("DROPPED by design: %s with a null selected key, %s with a null value, %s by a declared filter", plural(total.NullKey, "record", "records"), Thousands(total.NullValue), Thousands(total.Filtered)))
	case total.NullKey+total.NullValue > 0:
		notes = append(notes, fmt.Sprintf("DROPPED by design: %s with a null selected key, %s with a null value", plural(total.NullKey, "record", "records"), Thousands(total.NullValue)))
	}
	if total.Uncertain > 0 {
		notes = append(notes, fmt.Sprintf("UNCERTAIN: %s whose declared predicate or re-key could not be evaluated (undecodable value, missing field, evaluation error): neither expected nor reported", plural(total.Uncertain, "record", "records")))
	}
	if total.OutsideWindow > 0 {
		notes = append(notes, "OUTSIDE: records whose timestamp is outside the audit window")
	}
	return notes
}
