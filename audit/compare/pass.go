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
// read, then the check identity by identity.
type modePass struct {
	o     Options
	col   *collector
	led   *ledgerState
	snap  *compareSnapshot
	stuck []bool
	chk   *checked
}

func (p *modePass) Start(w *index.Writer, _ time.Time) {
	p.col = newCollector(p.o, entryWriter{w}, newHasher())
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
	p.snap, err = takeSnapshot(ctx, p.o, p.led.topics)
	p.col.snap = p.snap
	return err
}

func (p *modePass) Read(ctx context.Context) error { return p.col.readAll(ctx, p.led) }

func (p *modePass) Partitions() []finding.PartitionFinding {
	parts, stuck := stuckSinks(p.o, p.snap)
	p.stuck = stuck
	return parts
}

func (p *modePass) Check([]finding.PartitionFinding) (err error) {
	p.chk, err = check(p.o, p.snap, p.led, p.stuck)
	return err
}

func (p *modePass) Assemble(_ context.Context, parts []finding.PartitionFinding) (*finding.Result, error) {
	return assemble(p.o, p.snap, p.col, p.led, p.chk, parts), nil
}

func (p *modePass) Stats() *collect.Stats { return &p.col.stats }
