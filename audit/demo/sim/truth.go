package sim

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/twmb/franz-go/pkg/kgo"
)

// FaultKind names an injected fault or disturbance.
type FaultKind string

// The injections. Keyed losses (lost_*, aborted_*, purged_record) and the
// partition faults (purged_past_commit, hanging_transaction) are reported
// by an audit; healthy retries and lag must not be.
const (
	KindBeforeRepartition FaultKind = "lost_before_repartition"
	KindBeforeStore       FaultKind = "lost_before_store"
	KindBeforeOutput      FaultKind = "lost_before_output"
	KindAbortedChangelog  FaultKind = "aborted_changelog"
	KindAbortedOutput     FaultKind = "aborted_output"
	// KindPurged17635 is the partition-level KAFKA-17635 purge;
	// KindPurgedRecord one record it deleted before it was processed.
	KindPurged17635    FaultKind = "purged_past_commit"
	KindPurgedRecord   FaultKind = "purged_record"
	KindHealthyRetry   FaultKind = "healthy_retry"
	KindInputLag       FaultKind = "input_lag"
	KindRepartitionLag FaultKind = "repartition_lag"
	// KindHangingTxn is a transaction left open on an output partition
	// (stuck_lso; Loss is set because the audit reports it).
	KindHangingTxn FaultKind = "hanging_transaction"
)

// Injection is one fault as injected. For keyed faults Input/Key name the
// (input, selected key) and Topic/Partition/Offset/Timestamp the input
// record hit; for partition faults Topic/Partition name the partition and
// Offset the first offset concerned.
type Injection struct {
	Kind      FaultKind
	Input     string
	Key       string
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64
	Round     int
	Detail    string
	// Loss says the audit must report it: a row with Stage and Finding,
	// whose evidence is this input record (keyed faults), or a partition
	// finding (KindPurged17635).
	Loss    bool
	Stage   finding.Stage
	Finding finding.Kind
}

// InputSpec is one input of the simulated pipeline, in join order.
type InputSpec struct {
	Name, Topic string
	// Rekey is the Avro field path selectKey uses ("customerId").
	Rekey string
	// KeyFormat of the record keys ("string").
	KeyFormat                               string
	Store, RepartitionTopic, ChangelogTopic string
}

// Stats are numbers about one run.
type Stats struct {
	// InputRecords produced to the three inputs.
	InputRecords int64
	// Written records by the application (repartition, changelog, output),
	// committed or aborted.
	Written int64
	// Transactions ended, and how many of them aborted.
	Transactions, Aborted int
	// DryRuns used to place demo faults.
	DryRuns int
	// Elapsed wall time of Run; Produce of the input production.
	Elapsed, Produce time.Duration
}

// Truth is what the simulator did and what a correct audit must find.
type Truth struct {
	// Scenario as run, defaults filled in.
	Scenario Scenario
	AppID    string
	// Rows, Partitions and Counts are the oracle's expectation for an
	// audit without window (see Expect for windows).
	Rows       []finding.Row
	Partitions []finding.PartitionFinding
	Counts     map[string]finding.InputCounts
	// Partial is set when stuck_lso findings withhold rows
	// (Faults.HangingTxns).
	Partial bool
	// Injected lists the faults and disturbances in injection order.
	Injected []Injection
	// Topology is the application's Topology#describe() text (Kafka
	// Streams 3.6.2 format and naming).
	Topology string
	Inputs   []InputSpec
	Output   string
	// SchemasTopic holds the registered schemas (Confluent format).
	SchemasTopic string
	Stats        Stats

	n   names
	log *simLog
}

// Expect recomputes the expectation for an audit limited to window w.
func (t *Truth) Expect(w Window) Expectation {
	return oracle(t.Scenario, t.n, t.log, w)
}

// Config returns an audit configuration for the simulated pipeline: the
// brokers, the _schemas topic, the inputs with explicit store,
// repartition and changelog names, and the defaults of docs/configuration.md. Clear
// the three overrides and set Pipeline.TopologyFile to a file holding
// t.Topology to exercise the describe() parser instead.
func (t *Truth) Config(brokers []string, storeDir string) *config.Config {
	c := &config.Config{
		Kafka: config.Kafka{Brokers: brokers, FetchMaxBytes: 52428800, PartitionMaxBytes: 4194304,
			Concurrency: 8, Timeout: 30 * time.Second, ConnectTimeout: 10 * time.Second, RetryTimeout: time.Minute},
		Schema:   config.Schema{SchemasTopic: t.SchemasTopic},
		Pipeline: config.Pipeline{ApplicationID: t.AppID, Output: t.Output, Join: "left", Reduce: "plain"},
		Store:    config.Store{Dir: storeDir},
		Audit:    config.Audit{SettleTimeout: 60 * time.Second},
	}
	for _, in := range t.Inputs {
		c.Pipeline.Inputs = append(c.Pipeline.Inputs, config.Input{Name: in.Name, Topic: in.Topic, Rekey: in.Rekey,
			KeyFormat: in.KeyFormat, Store: in.Store, RepartitionTopic: in.RepartitionTopic, ChangelogTopic: in.ChangelogTopic})
	}
	return c
}

// xp is an (input, partition) pair.
type xp struct {
	x int
	p int32
}

// plan is every random choice of a run besides the data.
type plan struct {
	lagIn, lagRP, purge []xp
	healthy             []int
	faults              map[*inRec]FaultKind
}

func (pl *plan) apply(e *engine) {
	for _, l := range pl.lagIn {
		lim := len(e.log.in[l.x][l.p]) - e.sc.Faults.InputLag
		if lim < 0 {
			lim = 0
		}
		e.hop1Limit[l.x][l.p] = lim
	}
	for _, l := range pl.lagRP {
		e.hop2Stop[l.x][l.p] = e.totalRounds() - e.sc.Faults.RepartitionLagRounds
	}
	for _, r := range pl.healthy {
		e.healthy[r] = true
	}
	for r, k := range pl.faults {
		e.faults[r] = k
	}
}

// basePlan draws the lag, retries and purges.
func basePlan(sc Scenario, rng *rand.Rand) *plan {
	pl := &plan{faults: map[*inRec]FaultKind{}}
	var all []xp
	for x := 0; x < 3; x++ {
		for p := 0; p < sc.Partitions; p++ {
			all = append(all, xp{x, int32(p)})
		}
	}
	pick := func(n int) []xp {
		c := append([]xp(nil), all...)
		rng.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		if n > len(c) {
			n = len(c)
		}
		return c[:n]
	}
	pl.lagIn = pick(sc.Faults.InputLagPartitions)
	pl.lagRP = pick(sc.Faults.RepartitionLagPartitions)
	pl.purge = pl.lagRP[:min(sc.Faults.Purged17635, len(pl.lagRP))]
	rounds := rng.Perm(sc.Rounds + 1)
	pl.healthy = rounds[:min(sc.Faults.HealthyRetries, len(rounds))]
	sort.Ints(pl.healthy)
	return pl
}

// keyedKinds lists the keyed loss faults with their counts.
func keyedKinds(f Faults) []struct {
	k FaultKind
	n int
} {
	return []struct {
		k FaultKind
		n int
	}{
		{KindBeforeRepartition, f.BeforeRepartition}, {KindBeforeStore, f.BeforeStore},
		{KindAbortedChangelog, f.AbortedChangelog}, {KindBeforeOutput, f.BeforeOutput},
		{KindAbortedOutput, f.AbortedOutput},
	}
}

// stageOf is the stage a keyed fault loses the update at.
func stageOf(k FaultKind) finding.Stage {
	if k == KindBeforeOutput || k == KindAbortedOutput {
		return finding.StageOutput
	}
	return finding.StageChangelog
}

// randomFaults hits random processed records (random mode).
func randomFaults(sc Scenario, e *engine, rng *rand.Rand, pl *plan) {
	var cands []*inRec
	for x := 0; x < 3; x++ {
		for p := range e.log.in[x] {
			for _, r := range e.log.in[x][p] {
				if !r.dropped() && e.hop2Round(r) >= 0 {
					cands = append(cands, r)
				}
			}
		}
	}
	rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	i := 0
	for _, kk := range keyedKinds(sc.Faults) {
		for j := 0; j < kk.n && i < len(cands); j++ {
			pl.faults[cands[i]] = kk.k
			i++
		}
	}
}

// dryRun runs the engine without a cluster and returns the expectation.
func dryRun(ctx context.Context, sc Scenario, c *codecs, in [][][]*inRec, pl *plan) (*engine, Expectation, error) {
	e := newEngine(sc, c, in, &drySink{next: map[tp]int64{}}, false)
	pl.apply(e)
	if err := e.run(ctx); err != nil {
		return nil, Expectation{}, err
	}
	if _, err := e.finish(ctx, pl.purge, nil); err != nil {
		return nil, Expectation{}, err
	}
	return e, oracle(sc, e.n, e.log, Window{}), nil
}

// rowKey identifies a row by stage, input and key.
type rowKey struct {
	stage finding.Stage
	input string
	key   string
}

// demoFaults places every keyed fault on the newest update of a distinct
// (input, key), chosen from a fault-free dry run so that it surely becomes
// exactly one finding, then validates the whole set with dry runs, dropping
// faults whose key shows anything else, until the expectation is exactly
// the baseline (KAFKA-17635 losses) plus the injected faults.
func demoFaults(ctx context.Context, sc Scenario, c *codecs, in [][][]*inRec, pl *plan, rng *rand.Rand, stats *Stats) error {
	e0, base, err := dryRun(ctx, sc, c, in, pl)
	if err != nil {
		return err
	}
	stats.DryRuns++
	busy := map[string]bool{}
	baseRows := map[rowKey]bool{}
	for _, r := range base.Rows {
		busy[string(r.Key)] = true
		baseRows[rowKey{r.Stage, r.Input, string(r.Key)}] = true
	}
	// Evidence of every audited (input, key), and whether its timestamp is
	// unique among them.
	type xk struct {
		x int
		k string
	}
	ev := map[xk]*inRec{}
	tie := map[xk]bool{}
	for x := 0; x < 3; x++ {
		for p := range in[x] {
			for _, r := range in[x][p] {
				if r.dropped() || e0.hop2Round(r) < 0 {
					continue
				}
				k := xk{x, r.Key}
				switch o := ev[k]; {
				case o == nil || r.TS > o.TS:
					ev[k], tie[k] = r, false
				case r.TS == o.TS:
					tie[k] = true
				}
			}
		}
	}
	// Output writes per key, and the left table at the end.
	outs := map[string][]*kvRec{}
	for _, o := range e0.log.out {
		if o.Committed {
			outs[o.Key] = append(outs[o.Key], o)
		}
	}
	left := map[string]*kvRec{}
	for _, r := range e0.log.cl[0] {
		if r.Committed {
			left[r.Key] = r
		}
	}
	keys := make([]xk, 0, len(ev))
	for k := range ev {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].x != keys[j].x {
			return keys[i].x < keys[j].x
		}
		return keys[i].k < keys[j].k
	})
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	outputOK := func(k xk) bool {
		if l := left[k.k]; l == nil || l.Tomb {
			return false
		}
		r := ev[k]
		round := e0.hop2Round(r)
		os := outs[k.k]
		if len(os) == 0 || os[len(os)-1].Round != round {
			return false
		}
		earlier := int64(-1)
		for _, o := range os {
			if o.Round != round && o.TS > earlier {
				earlier = o.TS
			}
		}
		if earlier >= r.TS {
			return false
		}
		for y := 0; y < 3; y++ {
			if y == k.x {
				continue
			}
			if o := ev[xk{y, k.k}]; o != nil && o.TS > earlier {
				return false
			}
		}
		return true
	}
	chosen := map[*inRec]FaultKind{}
	next := 0
	for _, kk := range keyedKinds(sc.Faults) {
		for j := 0; j < kk.n; j++ {
			for ; next < len(keys); next++ {
				k := keys[next]
				if busy[k.k] || tie[k] || (stageOf(kk.k) == finding.StageOutput && !outputOK(k)) {
					continue
				}
				busy[k.k] = true
				chosen[ev[k]] = kk.k
				next++
				break
			}
		}
		next = 0
	}
	for attempt := 0; attempt < 5; attempt++ {
		pl.faults = chosen
		_, exp, err := dryRun(ctx, sc, c, in, pl)
		if err != nil {
			return err
		}
		stats.DryRuns++
		want := map[rowKey]*inRec{}
		for r, k := range chosen {
			want[rowKey{stageOf(k), inputName(r.X), r.Key}] = r
		}
		bad := map[string]bool{}
		got := map[rowKey]bool{}
		for _, row := range exp.Rows {
			rk := rowKey{row.Stage, row.Input, string(row.Key)}
			got[rk] = true
			if baseRows[rk] {
				continue
			}
			r := want[rk]
			aborted := row.Kind == finding.Aborted
			if r == nil || r.Off != row.Offset || r.P != row.Partition ||
				aborted != (chosen[r] == KindAbortedChangelog || chosen[r] == KindAbortedOutput) {
				bad[string(row.Key)] = true
			}
		}
		for rk := range want {
			if !got[rk] {
				bad[rk.key] = true
			}
		}
		for rk := range baseRows {
			if !got[rk] {
				return fmt.Errorf("placing demo faults: baseline finding %v disappeared", rk)
			}
		}
		if len(bad) == 0 {
			return nil
		}
		for r := range chosen {
			if bad[r.Key] {
				delete(chosen, r)
			}
		}
	}
	return fmt.Errorf("placing demo faults: no stable set after 5 dry runs")
}

// Run simulates the scenario on the cluster at brokers: creates the topics
// (they must not exist), registers the schemas, produces the inputs, runs
// the application with the injected faults, and returns what it did and
// what a correct audit must report. It is deterministic for a given
// scenario, except for broker-assigned offsets of internal topics (which
// the Truth records).
func Run(ctx context.Context, brokers []string, sc Scenario) (*Truth, error) {
	start := time.Now()
	t, c, in, err := newTruth(sc)
	if err != nil {
		return nil, err
	}
	sc, n := t.Scenario, t.n
	rng := newRand(sc.Seed)
	pl := basePlan(sc, rng)
	if sc.LastUpdateOnly {
		if err := demoFaults(ctx, sc, c, in, pl, rng, &t.Stats); err != nil {
			return nil, err
		}
	} else {
		e := newEngine(sc, c, in, nil, false)
		pl.apply(e)
		randomFaults(sc, e, rng, pl)
	}

	p0 := time.Now()
	if t.Stats.InputRecords, err = produceInputs(ctx, brokers, sc, n, in); err != nil {
		return nil, err
	}
	t.Stats.Produce = time.Since(p0)
	txid := sc.AppID + "-sim-thread-1"
	cl, err := newClient(brokers, kgo.TransactionalID(txid), kgo.TransactionTimeout(60*time.Second), kgo.ProducerLinger(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	e := newEngine(sc, c, in, &kafkaSink{cl: cl, group: sc.AppID, txid: txid, stats: &t.Stats}, true)
	pl.apply(e)
	if err := e.run(ctx); err != nil {
		return nil, err
	}
	purged, err := e.finish(ctx, pl.purge, &t.Injected)
	if err != nil {
		return nil, err
	}
	if err := hangTxns(ctx, brokers, sc, n, c, e, &t.Injected); err != nil {
		return nil, err
	}
	if err := e.settle(ctx, brokers); err != nil {
		return nil, err
	}
	t.log = e.log
	exp := oracle(sc, n, e.log, Window{})
	t.Partial = exp.Partial
	t.Rows, t.Partitions, t.Counts = exp.Rows, exp.Partitions, exp.Counts
	t.Injected = append(t.Injected, injections(sc, n, e, pl, purged, exp)...)
	t.Stats.Elapsed = time.Since(start)
	return t, nil
}

// newTruth checks the scenario (defaults filled in), generates its input
// records and describes the pipeline.
func newTruth(sc Scenario) (*Truth, *codecs, [][][]*inRec, error) {
	sc = sc.withDefaults()
	if err := sc.validate(); err != nil {
		return nil, nil, nil, err
	}
	c, err := newCodecs()
	if err != nil {
		return nil, nil, nil, err
	}
	in, err := generate(sc, c)
	if err != nil {
		return nil, nil, nil, err
	}
	n := newNames(sc)
	t := &Truth{Scenario: sc, AppID: sc.AppID, Output: n.output, SchemasTopic: SchemasTopic, n: n,
		Topology: describe(n)}
	for x := 0; x < 3; x++ {
		t.Inputs = append(t.Inputs, InputSpec{Name: inputName(x), Topic: n.inputs[x], Rekey: "customerId",
			KeyFormat: "string", Store: n.stores[x], RepartitionTopic: n.repart[x], ChangelogTopic: n.changelog[x]})
	}
	return t, c, in, nil
}

// injections lists the keyed faults, purged records, lag and retries, each
// matched with the row the oracle expects for it (if any).
func injections(sc Scenario, n names, e *engine, pl *plan, purged []*rpRec, exp Expectation) []Injection {
	rows := map[rowKey]finding.Row{}
	for _, r := range exp.Rows {
		rows[rowKey{r.Stage, r.Input, string(r.Key)}] = r
	}
	var out []Injection
	keyed := func(kind FaultKind, r *inRec, round int, detail string) {
		inj := Injection{Kind: kind, Input: inputName(r.X), Key: r.Key, Topic: n.inputs[r.X], Partition: r.P,
			Offset: r.Off, Timestamp: r.TS, Round: round, Detail: detail}
		for _, st := range []finding.Stage{finding.StageChangelog, finding.StageOutput} {
			if row, ok := rows[rowKey{st, inj.Input, r.Key}]; ok && row.Partition == r.P && row.Offset == r.Off {
				inj.Loss, inj.Stage, inj.Finding = true, st, row.Kind
			}
		}
		out = append(out, inj)
	}
	var recs []*inRec
	for r := range pl.faults {
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool {
		a, b := recs[i], recs[j]
		if a.X != b.X {
			return a.X < b.X
		}
		if a.P != b.P {
			return a.P < b.P
		}
		return a.Off < b.Off
	})
	for _, r := range recs {
		round := e.hop2Round(r)
		if pl.faults[r] == KindBeforeRepartition {
			round = e.hop1Round(r)
		}
		keyed(pl.faults[r], r, round, describeFault(pl.faults[r]))
	}
	for _, rp := range purged {
		keyed(KindPurgedRecord, rp.Src, -1, fmt.Sprintf("repartition record %s[%d]@%d deleted before it was processed",
			n.repart[rp.X], rp.P, rp.Off))
	}
	for _, l := range pl.lagIn {
		lim := e.hop1Limit[l.x][l.p]
		out = append(out, Injection{Kind: KindInputLag, Input: inputName(l.x), Topic: n.inputs[l.x], Partition: l.p,
			Offset: int64(lim), Detail: fmt.Sprintf("%d records not yet processed by the first hop",
				len(e.log.in[l.x][l.p])-lim)})
	}
	for _, l := range pl.lagRP {
		tail := len(e.rpAvail[l.x][l.p]) - e.rpPos[l.x][l.p]
		out = append(out, Injection{Kind: KindRepartitionLag, Input: inputName(l.x), Topic: n.repart[l.x], Partition: l.p,
			Offset: e.log.rpCommit[l.x][l.p], Detail: fmt.Sprintf("%d repartition records not yet processed by the second hop", tail)})
	}
	out = append(out, e.events...)
	return out
}

func describeFault(k FaultKind) string {
	switch k {
	case KindBeforeRepartition:
		return "input offset committed, repartition record never written"
	case KindBeforeStore:
		return "repartition record consumed and committed, never applied to the store"
	case KindBeforeOutput:
		return "store and changelog updated, output write lost"
	case KindAbortedChangelog:
		return "update written to changelog and output only in an aborted transaction; the retry skipped it"
	case KindAbortedOutput:
		return "update written to the output only in an aborted transaction; the retry lost the output write"
	}
	return string(k)
}

// hangTxns leaves one open transaction on each of the first
// Faults.HangingTxns output partitions: a separate transactional producer
// writes one join result and is closed without ending its transaction.
func hangTxns(ctx context.Context, brokers []string, sc Scenario, n names, c *codecs, e *engine, inj *[]Injection) error {
	for p := int32(0); p < int32(sc.Faults.HangingTxns); p++ {
		key := ""
		for k := 0; k < sc.Keys; k++ {
			if partitionFor([]byte(keyName(k)), sc.Partitions) == p {
				key = keyName(k)
				break
			}
		}
		if key == "" {
			return fmt.Errorf("hanging transaction: no key of %d maps to output partition %d", sc.Keys, p)
		}
		ts := int64(0) // newer than every input record: the open join result
		for x := range e.log.in {
			for _, part := range e.log.in[x] {
				for _, r := range part {
					ts = max(ts, r.TS+1000)
				}
			}
		}
		val, err := c.encodeJoined(key, 1, nil, nil, ts)
		if err != nil {
			return err
		}
		txid := fmt.Sprintf("%s-sim-hanging-%d", sc.AppID, p)
		cl, err := newClient(brokers, kgo.TransactionalID(txid), kgo.TransactionTimeout(sc.Faults.HangingTimeout))
		if err != nil {
			return err
		}
		if err := cl.BeginTransaction(); err != nil {
			cl.Close()
			return fmt.Errorf("hanging transaction on %s[%d]: %w", n.output, p, err)
		}
		r := &kgo.Record{Topic: n.output, Partition: p, Key: []byte(key), Value: val, Timestamp: time.UnixMilli(ts)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			cl.Close()
			return fmt.Errorf("hanging transaction on %s[%d]: %w", n.output, p, err)
		}
		cl.Close() // without EndTransaction: the transaction stays open
		e.log.out = append(e.log.out, &kvRec{P: p, Off: r.Offset, Key: key, TS: ts, Open: true, Round: -1})
		e.log.hangs = append(e.log.hangs, hang{p: p, lso: r.Offset, hw: r.Offset + 1})
		*inj = append(*inj, Injection{Kind: KindHangingTxn, Key: key, Topic: n.output, Partition: p, Offset: r.Offset,
			Timestamp: ts, Round: -1, Loss: true,
			Detail: fmt.Sprintf("transaction %s left open for %s: LSO held at %d", txid, sc.Faults.HangingTimeout, r.Offset)})
	}
	return nil
}

// newRand is the random source of a run's plan (the data has its own).
func newRand(seed int64) *rand.Rand { return rand.New(rand.NewSource(seed + 1)) }
