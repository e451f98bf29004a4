package copysim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
)

// Live is a copy pipeline that grows in rounds, for scheduled
// reconciliation (lossaudit reconcile on a comparison): every round each
// source gets a new batch of records (Scenario.Pairs' Records each, with
// the scenario's faults), the records pending in the last round become due
// (the group commits past them; their copies are written or lost now),
// some lost copies arrive late (a mirror catching up), and the sinks get
// their copies. Truth is, after any round, what a full comparison of that
// moment must report. Ledgers are not simulated (Scenario.Ledger must be
// nil); without a group nothing is pending (a pending record is one with a
// future timestamp, which would hold back every later record's due
// offset).
type Live struct {
	w      *world
	cl     *kgo.Client
	r      *rand.Rand
	rounds int
	round  int
}

// StartLive creates the topics of sc on the cluster at brokers, for rounds
// rounds; Advance writes them.
func StartLive(ctx context.Context, brokers []string, sc Scenario, rounds int) (*Live, error) {
	if sc.Ledger != nil {
		return nil, errors.New("copysim: a live pipeline keeps no ledger")
	}
	if sc.Group == "" {
		sc.PendingRate = 0
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.RetryTimeout(30*time.Second), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		return nil, fmt.Errorf("copysim: creating client: %w", err)
	}
	l := &Live{w: &world{sc: sc, prefix: fmt.Sprintf("cl%d-", sc.Seed), now: time.Now()}, cl: cl,
		r: rand.New(rand.NewPCG(uint64(sc.Seed), 0x11fe)), rounds: rounds}
	l.w.sources = make([][]*rec, len(sc.Pairs))
	l.w.sinks = make([][]*copyRec, len(sc.Pairs))
	l.w.seq = make([]int, len(sc.Pairs))
	if err := l.w.createTopics(ctx, cl); err != nil {
		cl.Close()
		return nil, err
	}
	return l, nil
}

// Close releases the client.
func (l *Live) Close() { l.cl.Close() }

// Done says whether every round was written.
func (l *Live) Done() bool { return l.round >= l.rounds }

// Round is the number of rounds written.
func (l *Live) Round() int { return l.round }

// Advance writes one round.
func (l *Live) Advance(ctx context.Context) error {
	w, r := l.w, l.r
	for x := range w.sc.Pairs {
		var copyNow []*rec
		for _, rc := range w.sources[x] {
			switch {
			case rc.pending:
				// Due from this round on: its copy was written while it
				// was pending, or is written now, or is lost.
				rc.pending = false
				if rc.copies == 0 && identified(w.sc.Match, rc) && r.Float64() >= w.sc.LossRate {
					rc.copies = 1
					copyNow = append(copyNow, rc)
				}
			case rc.copies == 0 && identified(w.sc.Match, rc) && r.IntN(4) == 0:
				// A lost copy arrives late.
				rc.copies = 1
				copyNow = append(copyNow, rc)
			}
		}
		batch := w.generate(r, x)
		w.seq[x] += w.sc.Pairs[x].Records
		if err := w.produceRecords(ctx, l.cl, x, batch); err != nil {
			return err
		}
		w.sources[x] = append(w.sources[x], batch...)
		late, err := w.produceCopies(ctx, l.cl, r, x, copyNow, false)
		if err != nil {
			return err
		}
		copies, err := w.produceCopies(ctx, l.cl, r, x, batch, true)
		if err != nil {
			return err
		}
		w.sinks[x] = append(append(w.sinks[x], late...), copies...)
	}
	if w.sc.Group != "" {
		w.committed = nil
		if err := w.commit(ctx, l.cl); err != nil {
			return err
		}
	}
	l.round++
	return nil
}

// Replay writes a copy of the source record each missing row names (as
// an operator replays what a report lists), so that the next comparison
// finds them copied.
func (l *Live) Replay(ctx context.Context, rows []finding.Row) error {
	w := l.w
	for x, ps := range w.sc.Pairs {
		var again []*rec
		for _, row := range rows {
			if row.Kind != finding.Missing || row.Input != ps.Name {
				continue
			}
			for _, rc := range w.sources[x] {
				if rc.partition == row.Partition && rc.offset == row.Offset {
					rc.copies++
					c := *rc
					c.copies = 1
					again = append(again, &c)
				}
			}
		}
		copies, err := w.produceCopies(ctx, l.cl, l.r, x, again, false)
		if err != nil {
			return err
		}
		for i, c := range copies {
			c.of = findRec(w.sources[x], again[i])
		}
		w.sinks[x] = append(w.sinks[x], copies...)
	}
	return nil
}

// findRec returns the record of recs at c's coordinates.
func findRec(recs []*rec, c *rec) *rec {
	for _, rc := range recs {
		if rc.partition == c.partition && rc.offset == c.offset {
			return rc
		}
	}
	return c
}

// Truth is what a full comparison of the pipeline as written so far must
// report.
func (l *Live) Truth() *Truth {
	t := &Truth{Scenario: l.w.sc, Prefix: l.w.prefix}
	l.w.truth(t)
	return t
}

// Config returns the configuration that compares the pipeline's pairs on
// the cluster at brokers, with store.dir storeDir.
func (l *Live) Config(brokers []string, storeDir string) *config.Config {
	return l.Truth().Config(brokers, storeDir)
}
