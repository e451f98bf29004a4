package finding

import "time"

// The per-record finding kinds of lossaudit compare, as they appear in the
// CSV `finding` column (besides Missing, shared with the audit).
const (
	// Duplicated: the sink (or the topic a ledger describes) holds more
	// copies of a record than the source (or the ledger) has.
	Duplicated Kind = "duplicated"
	// Unexpected: the sink holds a record with no source record (reported
	// only when asked for).
	Unexpected Kind = "unexpected"
	// AckedMissing: the ledger says the record was acknowledged at an
	// offset that is gone or holds another record.
	AckedMissing Kind = "acked_missing"
	// UnackedPresent: the ledger says the send failed, yet the record is in
	// the topic (resending it duplicates it).
	UnackedPresent Kind = "unacked_present"
	// UnackedMissing: the ledger says the send failed and the record is not
	// in the topic (it must be resent).
	UnackedMissing Kind = "unacked_missing"
)

// SinkKinds lists the kinds of the sink stage, in the order reports list
// them.
var SinkKinds = []Kind{Missing, Duplicated, Unexpected}

// LedgerKinds lists the kinds of the ledger stage, in the order reports
// list them.
var LedgerKinds = []Kind{AckedMissing, UnackedPresent, UnackedMissing, Duplicated}

// CompareStages lists the stages of lossaudit compare, in report order.
var CompareStages = []Stage{StageSink, StageLedger}

// Coord locates one record of a topic named elsewhere (by the row or the
// evidence holding it).
type Coord struct {
	Partition int32
	Offset    int64
}

// MaxCoords bounds the coordinates an evidence value lists; the counts say
// how many there are in all.
const MaxCoords = 3

// SinkEvidence proves a sink row: of one record identity (compare.match),
// the source holds SourceCopies records (Due of them due, the rest
// pending) and the sink Copies.
//
//   - missing: Due > Copies; the row names one due source record without
//     a copy (the due records beyond the first Copies, by partition and
//     offset, are the ones reported).
//   - duplicated: Copies > SourceCopies; one row per identity, naming the
//     first source record.
//   - unexpected: SourceCopies == 0 and Copies > 0; the row names the first
//     sink copy instead of a source record.
type SinkEvidence struct {
	// Topic is the sink topic.
	Topic        string
	Copies       int64
	SourceCopies int64
	Due          int64
	// At lists the first sink copies (at most MaxCoords), by partition
	// and offset.
	At []Coord
}

// LedgerEvidence proves a ledger row: what line Line of the ledger says of
// one record, and what the topic holds of it.
//
//   - acked_missing: the line says acknowledged at the row's partition and
//     offset, and the topic holds no copy there. LogStart and LogEnd are
//     the partition's bounds at the snapshot (an offset at or above LogEnd
//     was truncated away; one below LogStart would have been counted as
//     expired instead). Elsewhere counts copies of the same record at
//     other offsets that no other line accounts for.
//   - unacked_present: the send failed, yet a copy not accounted for by
//     another line is in the topic, at the row's coordinates.
//   - unacked_missing: the send failed and no copy is left for it.
//   - duplicated: the topic holds Copies records with this identity while
//     the ledger sent it Sends times; the row names the first extra copy.
type LedgerEvidence struct {
	// Line is the 1-based line number in the ledger file (for duplicated:
	// the first line sending the record).
	Line   int64
	Acked  bool
	Sends  int64
	Copies int64
	// LogStart and LogEnd are set on acked_missing rows.
	LogStart, LogEnd int64
	Elsewhere        int64
	// At lists copies in the topic (at most MaxCoords): the extra copies
	// of a duplicated row, the copies elsewhere of an acked_missing row.
	At []Coord
}

// CompareCounts are the counters of one compared pair (lossaudit compare).
// The source side's counters are the pair's InputCounts.
type CompareCounts struct {
	Name, Source, Sink string
	// SourceNoIdentity counts source records the match could not identify
	// (a null key under match key, a missing header or field): they cannot
	// be followed to the sink.
	SourceNoIdentity int64
	// SinkRecords are the sink records read; SinkNoIdentity those the
	// match could not identify, SinkDecodeErrors those that did not decode.
	SinkRecords, SinkNoIdentity, SinkDecodeErrors int64
	// Identities are the distinct source identities checked.
	Identities int64
	// Unexplained counts sink records with no source record (reported as
	// unexpected rows only when asked for).
	Unexplained int64
}

// LedgerCounts are the counters of a ledger check.
type LedgerCounts struct {
	// Lines are the ledger's send lines, Acked and Failed by outcome.
	Lines, Acked, Failed int64
	// Verified acknowledged records are at their offsets; Expired ones are
	// below the log start offset (retention), not lost; Unsettled ones are
	// at offsets of a transaction still open at the snapshot.
	Verified, Expired, Unsettled int64
	// Skipped counts ledger lines that were not sends (other events).
	Skipped int64
}

// CompareSummary is what a comparison reports besides the per-source
// counters (Summary.Inputs, one per pair) and the stage counters.
type CompareSummary struct {
	// Match is the identity rule (compare.match).
	Match string
	// Group is the consumer group whose committed offsets made source
	// records due; "" when Grace did: records older than the snapshot
	// time minus Grace were due.
	Group string
	Grace time.Duration
	Pairs []CompareCounts
	// Ledger is nil without a ledger.
	Ledger *LedgerCounts
}
