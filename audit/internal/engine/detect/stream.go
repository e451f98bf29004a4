package detect

import (
	"github.com/lossaudit/lossaudit/audit/finding"
)

// StreamSpec names a per-record stream stage for its rows: the inputs
// whose processed records must each reach the output (a pass-through,
// mapValues, peek, merge, repartition(), a KStream-KTable left join), in
// configured order; Record.Pair indexes them.
type StreamSpec struct {
	Inputs []PairSpec
	// Output is the output topic.
	Output string
}

// StreamCopies reports what one (key, timestamp) identity of a per-record
// stream stage proves, appending to rows. Every processed record (Due:
// below the application's committed offset on its input, not dropped by
// design) yields exactly one output record with its key and timestamp
// (docs/topology.md, "Per-record stream stages"), so the multiset of the
// due records' identities must be contained in the output's:
//
//   - missing, one row per due record beyond the output's copies and the
//     copies pending in a link's unprocessed tail (e.Link): the row names
//     the input record, to replay. Copies of one identity are
//     indistinguishable, so they are taken to be those of the first due
//     records by partition and offset, as Copies does. A link copy may be
//     that of a record not yet due (at-least-once); counting it as
//     pending can hide a loss of the same identity, never invent one.
//   - duplicated, one row per identity: the output holds more copies than
//     the inputs hold records (due and pending), which only an
//     application writing at-least-once does; the row names the first
//     input record.
//
// Output records with no input record (written by something else, or of
// input records deleted by retention) are only counted, never reported.
func StreamCopies(spec *StreamSpec, e *CopyEvidence, rows []finding.Row) ([]finding.Row, CopyCounts) {
	var c CopyCounts
	source := e.Due + e.Pending
	if source == 0 {
		c.Unexplained = e.Sink
		return rows, c
	}
	c.Checked = 1
	ev := func() *finding.SinkEvidence {
		return &finding.SinkEvidence{Topic: spec.Output, Copies: e.Sink, SourceCopies: source, Due: e.Due,
			At: append([]finding.Coord(nil), e.SinkAt...)}
	}
	in := func(r Record) *PairSpec {
		if r.Pair >= 0 && r.Pair < len(spec.Inputs) {
			return &spec.Inputs[r.Pair]
		}
		return &PairSpec{Name: "?", Source: "?"}
	}
	return copyRows(e, ev, in, rows), c
}
