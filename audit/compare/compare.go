// Package compare is lossaudit's record-level comparison (lossaudit
// compare): every due record of a source topic must have a copy in its
// sink topic, possibly on another cluster (MirrorMaker 2, a Connect
// pipeline, a stateless Kafka Streams application), and every send a
// producer's ledger records must be in its topic as the ledger says. It
// runs on the engine's phases like the Kafka Streams audit: options.go,
// snapshotplan.go (the order in which it takes the engine's snapshot),
// collect.go (reading into the index), check.go (the
// detectors of audit/internal/engine/detect, records.go and ledger.go) and
// result.go; pass.go is its part in the engine's pass
// (audit/internal/engine/pass).
//
// # Identity
//
// A record's identity is what compare.match compares (Identify): its key
// and value bytes, its key, an Avro field or a header. The index keys
// every record by a 128-bit digest of its identity (see digest for the
// collision argument), so memory stays bounded however many records there
// are: one index entry per record read, grouped by identity in one sorted
// pass. Per identity, the source's due records and the sink's copies are
// counted: more due records than copies is missing (one row per record
// without a copy), more copies than source records is duplicated (one row
// per identity, the count in the evidence).
//
// # What is due, and why the snapshot order is sound
//
// A source record is due when the pipeline must have copied it by the
// time of the snapshot: with compare.group, when its offset is below the
// group's committed offset (the application commits an offset only after
// the records before it are written, under at_least_once after the
// producer's flush, under exactly_once in the same transaction); without
// a group, when its offset is below the one ListOffsets returns for the
// snapshot time minus compare.grace (the pipeline copies a record within
// the grace of it being written). The rest are pending: counted, never
// reported.
//
// The snapshot is taken in this order: (1) the due offsets of every
// source (the group's committed offsets, which kread reads once the
// transactions committing them are decided; or the offsets for the time
// t0 - grace, with t0 read first); (2) the high watermark of every sink,
// then each sink again once its LSO has reached that high watermark
// (every transaction open at (2) has ended, or the settle timeout
// passed); (3) the bounds of every source and ledger topic.
//
//   - No false missing: a due record's copy was written before (1) read
//     its due offset (that is what due means), so it is below the sink's
//     high watermark read in (2); after the settle its transaction, if
//     any, is decided, so the sink's read_committed range [log start,
//     LSO) holds it unless the copy was lost or aborted. A copy that
//     reaches the sink after (2) is of a record that was not due.
//     A sink partition still short of its high watermark at the deadline
//     is reported as stuck_lso, and the pair's missing rows are withheld.
//   - No false duplicated: every copy in the sink's snapshot was written
//     before (2) ended, so its source record was written before (3) read
//     the source's bounds, and is counted on the source side (due or
//     pending). Taking the source bounds first would let a record
//     written, and copied, between the two snapshots look like an extra
//     copy. What this order cannot see are source records below the
//     source's log start (deleted by retention, or never there): their
//     copies have no source record (counted, reported as unexpected only
//     with compare.report_unexpected), and with an identity that repeats
//     (match key, a field or a header) they also count as extra copies of
//     the identity's later records. Compare topics whose sink keeps
//     nothing the source has deleted, or match whole records.
//
// # Reconciliation
//
// Step is one step of a scheduled reconciliation (lossaudit reconcile and
// watch on a comparison): the same pass, reading each sink from the LSO
// the last step read to and each source from the last due offset, with
// what earlier steps kept per identity (stepstate.go) merged into the
// evidence before the same detector runs (stepjudge.go). A record due
// once stays due, and every offset below an LSO is decided, so each due
// record and each copy is counted once: a step reports what a full
// comparison of the same moment reports (docs/reconcile.md). Its digests
// are keyed by a seed kept with the state, so they agree across steps.
//
// # Ledgers
//
// A ledger is read into the index before the snapshot, so every offset it
// acknowledges existed before (3) read the topic's bounds: an
// acknowledged offset at or above the high watermark was truncated away,
// one below the log start expired, and one that holds no copy of the
// identity lost what was acknowledged there.
package compare

import (
	"context"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/pass"
)

// Run performs one comparison and returns its result. An error means it
// could not complete; the result is then nil.
func Run(ctx context.Context, o Options) (*finding.Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	return pass.Run(ctx, pass.Config{Store: o.Store, Now: o.Now}, &modePass{o: o})
}
