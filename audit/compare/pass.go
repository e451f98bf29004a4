package compare

import (
	"context"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// modePass is the comparison's part in one pass of the engine
// (pass.Mode): the ledger before the snapshot, the snapshot in one phase
// (due offsets, settled sinks, then the sources' bounds), every topic
// read, then the check identity by identity. A reconcile step (step not
// nil) reads what its plan says and judges with what earlier steps kept.
type modePass struct {
	o       Options
	step    *stepRun
	started time.Time
	w       entryWriter
	col     *collector
	led     *ledgerState
	snap    *compareSnapshot
	stuck   []bool
	chk     *checked
}

func (p *modePass) Start(w *index.Writer, started time.Time) {
	h := newHasher()
	if p.step != nil {
		h = p.step.hasher
	}
	p.started, p.w = started, entryWriter{w: w}
	p.col = newCollector(p.o, p.w, h)
	p.led = &ledgerState{index: map[string]int{}}
}

// Prelude reads the ledger, before the snapshot.
func (p *modePass) Prelude() (string, func(context.Context) error) {
	if p.o.Ledger == nil {
		return "", nil
	}
	return "ledger", func(context.Context) (err error) { p.led, err = p.col.readLedger(); return err }
}

func (p *modePass) Snapshot(ctx context.Context) (err error) {
	var tails func(context.Context, *compareSnapshot) error
	if p.o.Stream != nil {
		tails = p.col.readLinkTails
	}
	p.snap, err = takeSnapshot(ctx, p.o, p.led.topics, tails)
	p.col.snap = p.snap
	return err
}

func (p *modePass) Read(ctx context.Context) error {
	if p.step != nil {
		if err := p.step.plan(); err != nil {
			return err
		}
	}
	if err := p.col.readAll(ctx, p.led); err != nil {
		return err
	}
	if p.step != nil {
		return p.step.touch()
	}
	return nil
}

func (p *modePass) Partitions() []finding.PartitionFinding {
	parts, stuck := stuckSinks(p.o, p.snap)
	p.stuck = stuck
	return parts
}

func (p *modePass) Check([]finding.PartitionFinding) (err error) {
	var j pairJudge
	if p.step != nil {
		j = p.step.visitor()
	}
	p.chk, err = check(p.o, p.snap, p.led, p.stuck, j)
	return err
}

func (p *modePass) Assemble(_ context.Context, parts []finding.PartitionFinding) (*finding.Result, error) {
	if p.step != nil {
		return p.step.assemble(parts), nil
	}
	return assemble(p.o, p.snap, p.col, runTotals(p.col, p.chk), p.led, p.chk, parts), nil
}

func (p *modePass) Stats() *collect.Stats { return &p.col.stats }
