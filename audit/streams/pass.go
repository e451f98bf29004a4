package streams

import (
	"context"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// modePass is the Kafka Streams mode's part in one pass of the engine
// (pass.Mode): an audit's, or with a stepMode, a reconcile step's.
type modePass struct {
	o       Options
	started time.Time
	w       entryWriter
	snap    *pipelineSnapshot
	col     *collector
	chk     *checked
	// prev is the previous run's snapshot, for the history detectors.
	prev map[kread.TP]history.Entry
	// step, when set, makes the pass a reconcile step.
	step stepMode
}

// stepMode is what turns an audit's pass into a reconcile step: its read
// plan (what to read from where) and its key visitor (the state's part in
// the check). It sees the pass's snapshot, collector and check as they
// are made.
type stepMode interface {
	// plan returns what to read of every partition; complete says the
	// snapshot's downstream half is in.
	plan(complete bool) *readPlan
	// history returns the last step's snapshot, nil for the baseline.
	history() map[kread.TP]history.Entry
	// touch makes the check visit the keys the state marks, before the
	// rest is read.
	touch() error
	// visitor returns the state's part in the check of every key.
	visitor() keyVisitor
	// needsLookup and lookup complete the step's new findings that need
	// the stages before the window (windowed steps).
	needsLookup() bool
	lookup(ctx context.Context) error
	// assemble builds the step's result.
	assemble(ctx context.Context, parts []finding.PartitionFinding) *finding.Result
}

func (p *modePass) Start(w *index.Writer, started time.Time) {
	p.w, p.started = newEntryWriter(w), started
}

// Snapshot takes the first half of the snapshot: committed offsets, the
// bounds of the inputs and repartition topics.
func (p *modePass) Snapshot(ctx context.Context) error {
	snap, err := takeSnapshot(ctx, p.o)
	if err != nil {
		return err
	}
	p.snap = snap
	var plan *readPlan
	switch {
	case p.step != nil:
		p.prev = p.step.history()
		plan = p.step.plan(false)
	case p.o.History != nil:
		if p.prev, err = p.o.History.Load(p.o.Group); err != nil {
			return err
		}
	}
	p.col = newCollector(p.o, snap, plan, p.w)
	return nil
}

// Tails reads the repartition tails, between the snapshot's halves.
func (p *modePass) Tails(ctx context.Context) error { return p.col.readTails(ctx) }

// Settle takes the second half: the downstream partitions, settled.
func (p *modePass) Settle(ctx context.Context) error {
	if err := p.snap.settleDownstream(ctx, p.o); err != nil {
		return err
	}
	if err := p.col.dlq.settle(ctx, p.o, p.snap); err != nil {
		return err
	}
	if p.step != nil {
		p.col.plan = p.step.plan(true)
	}
	return nil
}

// Read reads every other topic (a step: what is new since the last one).
func (p *modePass) Read(ctx context.Context) error {
	if p.step == nil {
		return p.col.readRest(ctx)
	}
	if err := p.step.touch(); err != nil {
		return err
	}
	if err := p.col.readRest(ctx); err != nil {
		return err
	}
	if !p.snap.groupActive && p.o.From.IsZero() {
		return p.col.readNext(ctx)
	}
	return nil
}

func (p *modePass) Partitions() []finding.PartitionFinding {
	return partitionFindings(p.o, p.snap, p.col, p.prev)
}

func (p *modePass) Check(parts []finding.PartitionFinding) error {
	var v keyVisitor
	if p.step != nil {
		v = p.step.visitor()
	}
	chk, err := check(p.o, p.snap, stuckPartitions(parts), p.col.timeline, v, p.col.finalPlace())
	p.chk = chk
	if err != nil {
		return err
	}
	if err := windowMismatch(p.o, p.col, chk); err != nil {
		return err
	}
	windowRows(p.o, chk.rows)
	return nil
}

func (p *modePass) NeedsLookup() bool {
	if p.step != nil {
		return p.step.needsLookup()
	}
	return !p.o.From.IsZero() && len(p.chk.rows) > 0
}

func (p *modePass) Lookup(ctx context.Context) error {
	if p.step != nil {
		return p.step.lookup(ctx)
	}
	return lookBeforeWindow(ctx, p.o, p.snap, p.chk.rows)
}

func (p *modePass) Assemble(ctx context.Context, parts []finding.PartitionFinding) (*finding.Result, error) {
	if p.step != nil {
		return p.step.assemble(ctx, parts), nil
	}
	return assemble(ctx, p.o, p.snap, p.col, p.chk, parts, auditCounts(p.col, p.chk)), nil
}

func (p *modePass) Stats() *collect.Stats { return &p.col.stats }
