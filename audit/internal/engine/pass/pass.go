// Package pass is the skeleton of one run of the engine, which every mode
// (the Kafka Streams audit and its reconcile steps, the comparison) fills
// in: reset the index, take the snapshot (in two halves with a read
// between them for a mode that needs one), read into the index, flush it,
// run the partition-level detectors, check the index key by key, look up
// what the check asks for, and assemble the result, each phase timed by
// one phase.Timer. The order of the snapshot's parts within a phase is the
// mode's (docs/design.md, "Snapshot order"); the pass keeps the phases in
// the order that makes every mode's snapshot sound: nothing downstream is
// read before Settle returns.
package pass

import (
	"context"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/phase"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// Mode is a mode's part in one pass. The pass calls Start, then (each
// optional part only when the mode has it) Prelude, Snapshot, Tails and
// Settle, Read, Partitions, Check, Lookup and Assemble, in this order,
// and stops at the first error.
type Mode interface {
	// Start hands the mode the index writer of the pass and the time the
	// pass started.
	Start(w *index.Writer, started time.Time)
	// Snapshot takes the snapshot (with Tailed, its first half). Timed as
	// "snapshot".
	Snapshot(ctx context.Context) error
	// Read reads into the index what the snapshot bounds, once it is
	// complete. Timed as "read".
	Read(ctx context.Context) error
	// Partitions runs the partition-level detectors; untimed.
	Partitions() []finding.PartitionFinding
	// Check judges the index, key by key. Timed as "check".
	Check(parts []finding.PartitionFinding) error
	// Assemble builds the result; the pass adds the index statistics,
	// the start, the timings and the end.
	Assemble(ctx context.Context, parts []finding.PartitionFinding) (*finding.Result, error)
	// Stats are the statistics of every read of the pass.
	Stats() *collect.Stats
}

// Prelude is a mode that reads something into the index before the
// snapshot (the comparison's ledger). Phase names the phase ("" when there
// is nothing to read; it is then not timed).
type Prelude interface {
	Prelude() (phase string, run func(ctx context.Context) error)
}

// Tailed is a mode whose snapshot has two halves with a read between them
// (the Kafka Streams mode's repartition tails, read before the downstream
// high watermarks).
type Tailed interface {
	// Tails reads what must be read between the halves. Timed as "read".
	Tails(ctx context.Context) error
	// Settle takes the second half. Timed as "snapshot".
	Settle(ctx context.Context) error
}

// Lookup is a mode whose check can ask for more reads (a windowed audit:
// the stages before the window for the keys it would report missing).
type Lookup interface {
	// NeedsLookup says, after the check, whether there is anything to
	// look up.
	NeedsLookup() bool
	// Lookup looks it up. Timed as "lookup".
	Lookup(ctx context.Context) error
}

// Config is what a pass needs besides the mode.
type Config struct {
	// Store is the index the pass writes and the check reads.
	Store *index.Store
	// Now is the clock.
	Now func() time.Time
}

// Run performs one pass of m and returns its result. An error means the
// pass could not complete; the result is then nil. What the mode did
// before the error is the caller's to undo.
func Run(ctx context.Context, c Config, m Mode) (*finding.Result, error) {
	started := c.Now()
	timer := phase.New(c.Now)
	timed := timer.Run
	if err := c.Store.Reset(); err != nil {
		return nil, err
	}
	w := c.Store.NewWriter()
	m.Start(w, started)
	err := func() error {
		if p, ok := m.(Prelude); ok {
			if name, run := p.Prelude(); name != "" {
				if err := timed(name, func() error { return run(ctx) }); err != nil {
					return err
				}
			}
		}
		if err := timed("snapshot", func() error { return m.Snapshot(ctx) }); err != nil {
			return err
		}
		if t, ok := m.(Tailed); ok {
			if err := timed("read", func() error { return t.Tails(ctx) }); err != nil {
				return err
			}
			if err := timed("snapshot", func() error { return t.Settle(ctx) }); err != nil {
				return err
			}
		}
		return timed("read", func() error { return m.Read(ctx) })
	}()
	if err != nil {
		w.Cancel()
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	parts := m.Partitions()
	if err := timed("check", func() error { return m.Check(parts) }); err != nil {
		return nil, err
	}
	if l, ok := m.(Lookup); ok && l.NeedsLookup() {
		if err := timed("lookup", func() error { return l.Lookup(ctx) }); err != nil {
			return nil, err
		}
	}
	res, err := m.Assemble(ctx, parts)
	if err != nil {
		return nil, err
	}
	res.Summary.Index = finding.IndexStats{RecordsRead: m.Stats().Records(), Entries: w.Entries()}
	res.Summary.Started, res.Summary.Timings = started, timer.Timings
	res.Summary.Finished = c.Now()
	return res, nil
}
