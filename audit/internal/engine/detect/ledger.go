package detect

import (
	"github.com/lossaudit/lossaudit/audit/finding"
)

// Bounds are one partition's offsets at the snapshot.
type Bounds struct {
	LogStart, LSO, HighWatermark int64
}

// LedgerSpec names the topic a producer ledger describes.
type LedgerSpec struct {
	// Input is the rows' input column: the name of the pair whose source
	// the topic is, or the topic.
	Input string
	Topic string
	// Partitions are the topic's partitions at the snapshot.
	Partitions map[int32]Bounds
}

// LedgerLine is one send of a producer ledger: Acked with the partition
// and offset the broker acknowledged, or failed.
type LedgerLine struct {
	Line      int64
	TS        int64
	Key       []byte
	Acked     bool
	Partition int32
	Offset    int64
}

// maxFree bounds the coordinates kept of copies no acknowledged line
// claims; further ones are counted only.
const maxFree = 4096

// LedgerEvidence is what a ledger and its topic hold of one record
// identity. Facts arrive in the index's order: the topic's copies and the
// ledger's acknowledged lines together, by partition and offset, a copy
// before a line claiming the same offset; then the failed lines, by line
// number. Its memory grows with the rows it will report (and at most
// maxFree copies), not with the copies. Reset reuses it.
type LedgerEvidence struct {
	Copies, Sends int64
	// FirstLine is the first line sending the identity.
	FirstLine int64
	// Verified, Expired and Unsettled count acknowledged lines: at their
	// offset; below the log start; in a transaction open at the snapshot.
	Verified, Expired, Unsettled int64
	// Unverified are the other acknowledged lines; Failed the failed ones.
	Unverified, Failed []LedgerLine

	last     Record
	lastKey  []byte
	lastFree bool
	free     int64
	freeAt   []Record
}

// Reset forgets everything, for the next identity.
func (e *LedgerEvidence) Reset() {
	*e = LedgerEvidence{Unverified: e.Unverified[:0], Failed: e.Failed[:0], freeAt: e.freeAt[:0], lastKey: e.lastKey[:0]}
}

// AddCopy records a record of the topic with this identity.
func (e *LedgerEvidence) AddCopy(r Record) {
	e.flush()
	e.Copies++
	if r.Key != nil {
		// The key is the caller's only until the next fact: keep it.
		e.lastKey = append(e.lastKey[:0], r.Key...)
		r.Key = e.lastKey
	}
	e.last, e.lastFree = r, true
}

// flush counts the last copy as unclaimed when no line claimed it.
func (e *LedgerEvidence) flush() {
	if !e.lastFree {
		return
	}
	e.free++
	if len(e.freeAt) < maxFree {
		e.freeAt = append(e.freeAt, own(e.last))
	}
	e.lastFree = false
}

// AddLine records one ledger line; spec gives the partition bounds.
func (e *LedgerEvidence) AddLine(spec *LedgerSpec, l LedgerLine) {
	e.Sends++
	if e.FirstLine == 0 || l.Line < e.FirstLine {
		e.FirstLine = l.Line
	}
	if l.Key != nil {
		l.Key = append([]byte{}, l.Key...)
	}
	if !l.Acked {
		e.Failed = append(e.Failed, l)
		return
	}
	if e.lastFree && e.last.Partition == l.Partition && e.last.Offset == l.Offset {
		e.lastFree = false
		e.Verified++
		return
	}
	b, ok := spec.Partitions[l.Partition]
	switch {
	case ok && l.Offset < b.LogStart:
		e.Expired++
	case ok && l.Offset >= b.LSO && l.Offset < b.HighWatermark:
		e.Unsettled++
	default:
		e.Unverified = append(e.Unverified, l)
	}
}

// Ledger reports what one identity's ledger lines and copies prove,
// appending to rows. Each line accounts for at most one copy:
//
//   - an acknowledged line whose partition and offset hold a copy is
//     verified; one whose offset is below the log start is expired
//     (retention deleted it), and one in a transaction still open at the
//     snapshot unsettled: both only counted;
//   - acked_missing: any other acknowledged line. The offset the broker
//     acknowledged is past the log end (truncated) or holds another record,
//     so the acknowledged write is gone from where it was acknowledged; a
//     copy at another offset no other line accounts for is named in the
//     evidence (Elsewhere), since resending would duplicate it;
//   - unacked_present, unacked_missing: failed sends take the copies no
//     acknowledged line claims, in line order; those that find one are
//     present (resending duplicates them), the rest missing;
//   - duplicated, one row per identity: copies left over after every line
//     took its one, naming the first extra copy.
func Ledger(spec *LedgerSpec, e *LedgerEvidence, rows []finding.Row) ([]finding.Row, finding.LedgerCounts) {
	e.flush()
	c := finding.LedgerCounts{Verified: e.Verified, Expired: e.Expired, Unsettled: e.Unsettled}
	if e.Sends == 0 {
		return rows, c
	}
	coords := func(rs []Record) []finding.Coord {
		var out []finding.Coord
		for _, r := range rs[:min(len(rs), finding.MaxCoords)] {
			out = append(out, finding.Coord{Partition: r.Partition, Offset: r.Offset})
		}
		return out
	}
	// freeRec returns the i-th unclaimed copy, when its coordinates were kept.
	freeRec := func(i int64) (Record, bool) {
		if i < int64(len(e.freeAt)) {
			return e.freeAt[i], true
		}
		return Record{Partition: -1, Offset: -1}, false
	}
	present := min(e.free, int64(len(e.Failed)))
	left := e.free - present
	elsewhere := min(left, int64(len(e.Unverified)))
	var elsewhereAt []finding.Coord
	if elsewhere > 0 && present < int64(len(e.freeAt)) {
		elsewhereAt = coords(e.freeAt[present:])
	}
	for _, l := range e.Unverified {
		b := spec.Partitions[l.Partition]
		rows = append(rows, finding.Row{Kind: finding.AckedMissing, Stage: finding.StageLedger, Input: spec.Input, Key: l.Key,
			Topic: spec.Topic, Partition: l.Partition, Offset: l.Offset, Timestamp: l.TS, ExpectedTS: l.TS,
			Ledger: &finding.LedgerEvidence{Line: l.Line, Acked: true, Sends: e.Sends, Copies: e.Copies,
				LogStart: b.LogStart, LogEnd: b.HighWatermark, Elsewhere: elsewhere, At: elsewhereAt}})
	}
	for i, l := range e.Failed {
		row := finding.Row{Stage: finding.StageLedger, Input: spec.Input, Key: l.Key, Topic: spec.Topic,
			Timestamp: l.TS, ExpectedTS: l.TS,
			Ledger: &finding.LedgerEvidence{Line: l.Line, Sends: e.Sends, Copies: e.Copies}}
		if int64(i) < present {
			r, ok := freeRec(int64(i))
			row.Kind, row.Partition, row.Offset = finding.UnackedPresent, r.Partition, r.Offset
			if ok {
				row.ObservedTS, row.HasObserved = r.TS, true
				row.Ledger.At = []finding.Coord{{Partition: r.Partition, Offset: r.Offset}}
			}
		} else {
			row.Kind, row.Partition, row.Offset = finding.UnackedMissing, -1, -1
		}
		rows = append(rows, row)
	}
	if extra := left - elsewhere; extra > 0 {
		first := present + elsewhere
		r, ok := freeRec(first)
		row := finding.Row{Kind: finding.Duplicated, Stage: finding.StageLedger, Input: spec.Input, Key: r.Key,
			Topic: spec.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.TS, ExpectedTS: r.TS,
			Ledger: &finding.LedgerEvidence{Line: e.FirstLine, Sends: e.Sends, Copies: e.Copies}}
		if ok {
			row.ObservedTS, row.HasObserved = r.TS, true
			row.Ledger.At = coords(e.freeAt[first:])
		}
		rows = append(rows, row)
	}
	return rows, c
}
