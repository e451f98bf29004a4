package sim

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
)

// Live runs a scenario on a cluster a few rounds at a time, for the
// tests of scheduled reconciliation: between two calls of Advance the
// application is paused and the cluster settled, so an audit and a
// reconcile step see the same pipeline, and Expect says what a correct
// audit reports at that moment. The inputs are produced as the rounds
// need them, one round ahead (so there is lag at the first hop), faults
// land in whatever round processes their record, and Replay produces
// reported records again, as an operator replaying the loss report does.
// Hanging transactions are not simulated.
type Live struct {
	// Truth describes the pipeline (names, inputs, topology, config);
	// its expectation fields are not kept up to date: use Expect.
	Truth *Truth

	brokers  []string
	e        *engine
	pl       *plan
	app, up  *kgo.Client
	round    int
	finished bool
}

// Start creates the scenario's topics and schemas and readies the
// application; no record is produced yet.
func Start(ctx context.Context, brokers []string, sc Scenario) (*Live, error) {
	t, c, in, err := newTruth(sc)
	if err != nil {
		return nil, err
	}
	sc, n := t.Scenario, t.n
	if sc.LastUpdateOnly || sc.Faults.HangingTxns > 0 {
		return nil, fmt.Errorf("scenario: a live run places faults at random and simulates no hanging transactions")
	}
	rng := newRand(sc.Seed)
	pl := basePlan(sc, rng)
	{
		e := newEngine(sc, c, in, nil, false)
		pl.apply(e)
		randomFaults(sc, e, rng, pl)
	}
	if err := createPipeline(ctx, brokers, sc, n); err != nil {
		return nil, err
	}
	up, err := newInputClient(brokers, sc)
	if err != nil {
		return nil, err
	}
	txid := sc.AppID + "-sim-thread-1"
	app, err := newClient(brokers, kgo.TransactionalID(txid), kgo.TransactionTimeout(60*time.Second), kgo.ProducerLinger(0))
	if err != nil {
		up.Close()
		return nil, err
	}
	e := newEngine(sc, c, in, &kafkaSink{cl: app, group: sc.AppID, txid: txid, stats: &t.Stats}, true)
	pl.apply(e)
	for x := 0; x < 3; x++ {
		e.log.produced[x] = make([]int, sc.Partitions)
	}
	t.log = e.log
	return &Live{Truth: t, brokers: brokers, e: e, pl: pl, app: app, up: up}, nil
}

// Close releases the clients.
func (l *Live) Close() {
	l.app.Close()
	l.up.Close()
}

// Done reports whether every round of the scenario has run.
func (l *Live) Done() bool { return l.round >= l.e.totalRounds() }

// Round returns the number of rounds run so far.
func (l *Live) Round() int { return l.round }

// Advance runs up to rounds more rounds (producing the inputs they need,
// and the next round's), applies the end-of-run faults after the last
// round, and waits for the cluster to settle.
func (l *Live) Advance(ctx context.Context, rounds int) error {
	sc := l.e.sc
	for i := 0; i < rounds && !l.Done(); i++ {
		r := l.round
		for x := 0; x < 3; x++ {
			for p := 0; p < sc.Partitions; p++ {
				end := min(len(l.e.log.in[x][p]), (r+2)*l.e.batch[x][p])
				if sc.InputTxnSize > 0 {
					end = min(len(l.e.log.in[x][p]), (end+sc.InputTxnSize-1)/sc.InputTxnSize*sc.InputTxnSize)
				}
				from := l.e.log.produced[x][p]
				if end > from {
					if err := produceRecs(ctx, l.up, sc, l.e.n.inputs[x], l.e.log.in[x][p][from:end]); err != nil {
						return err
					}
					l.e.log.produced[x][p] = end
				}
			}
		}
		if err := l.e.round(ctx, r); err != nil {
			return err
		}
		l.round++
	}
	if l.Done() && !l.finished {
		l.finished = true
		if _, err := l.e.finish(ctx, l.pl.purge, nil); err != nil {
			return err
		}
	}
	return l.e.settle(ctx, l.brokers)
}

// Expect returns what a correct audit without window reports now.
func (l *Live) Expect() Expectation { return oracle(l.e.sc, l.e.n, l.e.log, Window{}) }

// Replay produces again, after the last round, the input record each row
// names (same key, value and timestamp, to the same partition), then lets
// the application process everything it has not yet (lag included) in two
// more rounds, as an operator replaying the loss report and an
// application catching up would; the replayed records are not faulted.
func (l *Live) Replay(ctx context.Context, rows []finding.Row) error {
	if !l.Done() {
		return fmt.Errorf("replay: the scenario has %d rounds left", l.e.totalRounds()-l.round)
	}
	cl, err := newClient(l.brokers, kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	log := l.e.log
	for _, row := range rows {
		x := int(row.Input[0] - 'a')
		if x < 0 || x > 2 || int(row.Partition) >= len(log.in[x]) {
			return fmt.Errorf("replay: no input %s[%d]", row.Input, row.Partition)
		}
		var src *inRec
		for _, r := range log.in[x][row.Partition] {
			if r.Off == row.Offset {
				src = r
			}
		}
		if src == nil {
			return fmt.Errorf("replay: no record %s[%d]@%d", row.Topic, row.Partition, row.Offset)
		}
		rec := &kgo.Record{Topic: l.e.n.inputs[x], Partition: src.P, Key: src.RKey, Value: src.Value, Timestamp: time.UnixMilli(src.TS)}
		if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return fmt.Errorf("replaying %s[%d]@%d: %w", row.Topic, row.Partition, row.Offset, err)
		}
		cp := *src
		cp.Idx, cp.Off, cp.Aborted = len(log.in[x][src.P]), rec.Offset, false
		log.in[x][src.P] = append(log.in[x][src.P], &cp)
		log.produced[x][src.P] = len(log.in[x][src.P])
	}
	l.e.drain = true
	for x := 0; x < 3; x++ {
		for p := range l.e.hop1Limit[x] {
			l.e.hop1Limit[x][p] = len(log.in[x][p])
			l.e.hop2Stop[x][p] = math.MaxInt
			// A task whose records were purged past its commit resumes at
			// the log start, as Kafka Streams does (KAFKA-17635).
			for avail := l.e.rpAvail[x][p]; l.e.rpPos[x][p] < len(avail) && avail[l.e.rpPos[x][p]].Off < log.rpStart[x][p]; {
				l.e.rpPos[x][p]++
			}
		}
	}
	for range 2 {
		if err := l.e.round(ctx, l.round); err != nil {
			return err
		}
		l.round++
	}
	return l.e.settle(ctx, l.brokers)
}

// Config returns the audit configuration of the pipeline (Truth.Config).
func (l *Live) Config(brokers []string, storeDir string) *config.Config {
	return l.Truth.Config(brokers, storeDir)
}
