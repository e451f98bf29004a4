// Package streams is lossaudit's engine for Kafka Streams pipelines: it
// snapshots the pipeline's topics in a sound order, reads them with
// read_committed semantics into the on-disk index, and checks key by key
// that the newest processed update of every input reached its reduce
// store's changelog and the joined output (docs/design.md, "The core
// check"). Its phases each live in their own file: options.go (what a run
// needs), snapshotplan.go (the order in which it takes the engine's
// snapshot), collect.go (reading, with classify.go deciding what
// each input record is), check.go (the per-key check), window.go (what a
// windowed audit looks up before its window) and result.go (assembling
// the result from the detectors' findings); pass.go is the mode's part in
// the engine's pass (audit/internal/engine/pass), which an audit (Run) and
// a reconcile step (Step, with its read plan and key visitor) both run.
// The detectors themselves are in audit/internal/engine/detect.
package streams

import (
	"context"
	"fmt"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/pass"
)

// Run performs one audit and returns its result. An error means the audit
// could not complete; the result is then nil.
func Run(ctx context.Context, o Options) (*finding.Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	p := &modePass{o: o}
	res, err := pass.Run(ctx, pass.Config{Store: o.Store, Now: o.Now}, p)
	if err != nil {
		return nil, err
	}
	// Remember this snapshot for the next run.
	if o.History != nil {
		if err := o.History.Record(o.Group, p.snap.partitions(), res.Summary.Started); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
	}
	return res, nil
}
