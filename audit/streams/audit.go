// Package streams is lossaudit's engine for Kafka Streams pipelines: it
// snapshots the pipeline's topics in a sound order, reads them with
// read_committed semantics into the on-disk index, and checks key by key
// that the newest processed update of every input reached its reduce
// store's changelog and the joined output (docs/design.md, "The core
// check"). Its phases each live in their own file: options.go (what a run
// needs), snapshot.go, collect.go (reading, with classify.go deciding what
// each input record is), check.go (the per-key check), window.go (what a
// windowed audit looks up before its window) and result.go (assembling
// the result from the detectors' findings). The detectors themselves are
// in audit/internal/engine/detect.
package streams

import (
	"context"
	"fmt"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/phase"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// Run performs one audit and returns its result. An error means the audit
// could not complete; the result is then nil.
func Run(ctx context.Context, o Options) (*finding.Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	started := o.Now()
	timer := phase.New(o.Now)
	timed, timings := timer.Run, timer.Timings

	// 1. Snapshot, first half: committed offsets, the bounds of the inputs
	// and repartition topics.
	var snap *pipelineSnapshot
	if err := timed("snapshot", func() (err error) { snap, err = takeSnapshot(ctx, o); return err }); err != nil {
		return nil, err
	}
	var prev map[kread.TP]history.Entry
	if o.History != nil {
		if prev, err = o.History.Load(o.Group); err != nil {
			return nil, err
		}
	}

	// 2. Collect: the repartition tails, then the second half of the
	// snapshot (the downstream partitions, settled), then every other
	// topic, into the index, classifying input records.
	if err := o.Store.Reset(); err != nil {
		return nil, err
	}
	w := o.Store.NewWriter()
	col := newCollector(o, snap, nil, entryWriter{w})
	err = timed("read", func() error { return col.readTails(ctx) })
	if err == nil {
		err = timed("snapshot", func() error { return snap.settleDownstream(ctx, o) })
	}
	if err == nil {
		err = timed("read", func() error { return col.readRest(ctx) })
	}
	if err != nil {
		w.Cancel()
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}

	// 3. Detect: partition-level findings from the snapshot and the
	// history, then the per-key check over the index.
	parts := partitionFindings(o, snap, col, prev)
	var chk *checked
	if err := timed("check", func() (err error) { chk, err = check(o, snap, stuckPartitions(parts), col.timeline, nil); return err }); err != nil {
		return nil, err
	}
	if !o.From.IsZero() && len(chk.rows) > 0 {
		if err := timed("lookup", func() error { return lookBeforeWindow(ctx, o, snap, chk.rows) }); err != nil {
			return nil, err
		}
	}

	// 4. Assemble the result, and remember this snapshot for the next run.
	res := assemble(ctx, o, snap, col, chk, parts, auditCounts(col, chk))
	res.Summary.Index = finding.IndexStats{RecordsRead: col.stats.Records(), Entries: w.Entries()}
	res.Summary.Started, res.Summary.Timings = started, timings
	res.Summary.Finished = o.Now()
	if o.History != nil {
		if err := o.History.Record(o.Group, snap.partitions(), started); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
	}
	return res, nil
}
