package detect

import (
	"github.com/lossaudit/lossaudit/audit/finding"
)

// PairSpec names one compared pair (lossaudit compare) for its rows.
type PairSpec struct {
	Name, Source, Sink string
	// ReportUnexpected asks for unexpected rows (sink records with no
	// source record); without it they are only counted.
	ReportUnexpected bool
}

// Record locates one record of an identity in a topic the caller names,
// with its timestamp (Unix ms) and record key (nil for a null key).
type Record struct {
	Partition int32
	Offset    int64
	TS        int64
	Key       []byte
	// Pair is, in a per-record stream stage (StreamCopies), the index of
	// the input the record was read from; 0 otherwise.
	Pair int
}

// CopyEvidence is what one pair's source and sink hold of one record
// identity (compare.match). Facts arrive in the index's order: every sink
// copy before any due source record, each side by partition and offset.
// It keeps counts, the first few sink copies and the due source records
// that have no copy, so its memory grows with the rows it will report, not
// with the copies. Reset reuses the value for the next identity.
type CopyEvidence struct {
	// Sink counts the sink copies; SinkAt and FirstSink are the first ones.
	Sink      int64
	SinkAt    []finding.Coord
	FirstSink Record
	// Pending and Due count the source records; FirstSource is the first
	// source record (due or pending, by partition and offset).
	Pending, Due int64
	FirstSource  Record
	hasSource    bool
	// Uncopied are the due source records beyond the first Sink ones.
	Uncopied []Record
	// Link counts copies found in the unprocessed tail of an internal
	// topic between the source and the sink (a per-record stream stage's
	// repartition topic, AddLink): the records they copy are pending.
	Link int64
}

// Reset forgets everything, for the next identity.
func (e *CopyEvidence) Reset() {
	e.Sink, e.SinkAt, e.Pending, e.Due, e.hasSource, e.Link = 0, e.SinkAt[:0], 0, 0, false, 0
	e.FirstSink, e.FirstSource = Record{}, Record{}
	e.Uncopied = e.Uncopied[:0]
}

// AddSink records one sink copy (its key is copied).
func (e *CopyEvidence) AddSink(r Record) {
	if e.Sink == 0 {
		e.FirstSink = own(r)
	}
	e.Sink++
	if len(e.SinkAt) < finding.MaxCoords {
		e.SinkAt = append(e.SinkAt, finding.Coord{Partition: r.Partition, Offset: r.Offset})
	}
}

// AddPending records a source record that is not due yet.
func (e *CopyEvidence) AddPending(r Record) {
	e.Pending++
	e.noteSource(r)
}

// AddLink records a copy in an unprocessed link tail; like sink copies,
// link copies arrive before any due source record.
func (e *CopyEvidence) AddLink(Record) { e.Link++ }

// AddDue records a due source record. Sink copies are attributed to the due
// records in the order they arrive; the ones beyond the sink's copies are
// kept as uncopied.
func (e *CopyEvidence) AddDue(r Record) {
	e.Due++
	e.noteSource(r)
	if e.Due > e.Sink+e.Link {
		e.Uncopied = append(e.Uncopied, own(r))
	}
}

func (e *CopyEvidence) noteSource(r Record) {
	if !e.hasSource || r.Partition < e.FirstSource.Partition ||
		(r.Partition == e.FirstSource.Partition && r.Offset < e.FirstSource.Offset) {
		e.FirstSource, e.hasSource = own(r), true
	}
}

// own copies r's key, which the index owns only during the callback.
func own(r Record) Record {
	if r.Key != nil {
		r.Key = append([]byte{}, r.Key...)
	}
	return r
}

// CopyCounts are what one identity adds to a pair's counters.
type CopyCounts struct {
	// Checked is 1 when the source holds the identity.
	Checked int64
	// Unexplained counts sink copies with no source record.
	Unexplained int64
}

// Copies reports what one identity's copies prove, appending to rows:
//
//   - missing, one row per due source record without a copy: the source
//     holds Due due records of the identity and the sink fewer. Copies are
//     indistinguishable under the match, so the sink's Sink copies are
//     taken to be those of the first Sink due records (by partition and
//     offset) and the rows name the others. A copy that reaches the sink
//     after the sink's snapshot is never of a due record (the snapshot
//     order of lossaudit compare proves it), so a missing row is a record
//     the sink lost, not one still on its way.
//   - duplicated, one row per identity: the sink holds more copies than
//     the source has records (due and pending); the row names the first
//     source record.
//   - unexpected, one row per identity and only when spec asks for it:
//     the sink holds copies and the source no record; the row names the
//     first sink copy. Otherwise such copies are only counted.
//
// Pending source records are never reported: they may still be copied.
func Copies(spec *PairSpec, e *CopyEvidence, rows []finding.Row) ([]finding.Row, CopyCounts) {
	var c CopyCounts
	source := e.Due + e.Pending
	ev := func() *finding.SinkEvidence {
		return &finding.SinkEvidence{Topic: spec.Sink, Copies: e.Sink, SourceCopies: source, Due: e.Due,
			At: append([]finding.Coord(nil), e.SinkAt...)}
	}
	if source == 0 {
		c.Unexplained = e.Sink
		if e.Sink > 0 && spec.ReportUnexpected {
			r := e.FirstSink
			rows = append(rows, finding.Row{Kind: finding.Unexpected, Stage: finding.StageSink, Input: spec.Name,
				Key: r.Key, Topic: spec.Sink, Partition: r.Partition, Offset: r.Offset, Timestamp: r.TS, ExpectedTS: r.TS,
				ObservedTS: r.TS, HasObserved: true, Evidence: ev()})
		}
		return rows, c
	}
	c.Checked = 1
	return copyRows(e, ev, func(Record) *PairSpec { return spec }, rows), c
}

// copyRows appends the missing rows of e's uncopied records and, when the
// sink holds more copies than the source records, the duplicated row;
// in names the input each record was read from.
func copyRows(e *CopyEvidence, ev func() *finding.SinkEvidence, in func(Record) *PairSpec, rows []finding.Row) []finding.Row {
	for _, r := range e.Uncopied {
		p := in(r)
		row := finding.Row{Kind: finding.Missing, Stage: finding.StageSink, Input: p.Name, Key: r.Key,
			Topic: p.Source, Partition: r.Partition, Offset: r.Offset, Timestamp: r.TS, ExpectedTS: r.TS, Evidence: ev()}
		if e.Sink > 0 {
			row.ObservedTS, row.HasObserved = e.FirstSink.TS, true
		}
		rows = append(rows, row)
	}
	if e.Sink > e.Due+e.Pending {
		r := e.FirstSource
		p := in(r)
		rows = append(rows, finding.Row{Kind: finding.Duplicated, Stage: finding.StageSink, Input: p.Name, Key: r.Key,
			Topic: p.Source, Partition: r.Partition, Offset: r.Offset, Timestamp: r.TS, ExpectedTS: r.TS,
			ObservedTS: e.FirstSink.TS, HasObserved: true, Evidence: ev()})
	}
	return rows
}
