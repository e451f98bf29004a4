package sim

import (
	"context"
	"fmt"
	"sort"
)

// tp names a topic partition.
type tp struct {
	topic string
	p     int32
}

// rpRec is a record written to a repartition topic.
type rpRec struct {
	X         int
	P         int32
	Off       int64
	Key       string
	TS        int64
	FP        uint64
	Src       *inRec
	Committed bool
	Round     int
}

// kvRec is a record written to a changelog or the output.
type kvRec struct {
	P         int32
	Off       int64
	Key       string
	TS        int64
	Tomb      bool
	Committed bool
	// Open marks a record of a transaction still open (neither committed
	// nor aborted): above the LSO.
	Open  bool
	Round int
}

// hang is an output partition held by an open transaction.
type hang struct {
	p       int32
	lso, hw int64
}

// simLog is the simulator's own record of everything it produced and
// committed: the input of the oracle. Offsets are the brokers' (or, in a
// dry run, simulated ones).
type simLog struct {
	in  [][][]*inRec  // [input][partition], offset order
	rp  [3][][]*rpRec // [input][partition], offset order, committed and aborted
	cl  [3][]*kvRec   // [input], write order
	out []*kvRec      // write order
	// group offsets of the application, -1 = never committed
	inCommit, rpCommit [3][]int64
	// rpStart is each repartition partition's log start offset.
	rpStart [3][]int64
	// hangs are the output partitions with an open transaction.
	hangs []hang
	// produced[x][p] is how many of in[x][p] are in the topic (Live);
	// nil when all are.
	produced [3][]int
}

// inputs returns the records of input x's partition p that are in the
// topic.
func (l *simLog) inputs(x int, p int) []*inRec {
	if l.produced[x] == nil {
		return l.in[x][p]
	}
	return l.in[x][p][:l.produced[x][p]]
}

// outRec is one record to produce inside a transaction; off, when set,
// receives the offset the broker assigned.
type outRec struct {
	topic      string
	p          int32
	key, value []byte
	ts         int64
	off        *int64
}

// sink is where the engine's transactions go: real Kafka or a dry run.
type sink interface {
	// transact produces recs and commits offsets to the application's
	// group in one transaction, then commits it (or aborts it). Every
	// rec.off is filled in.
	transact(ctx context.Context, recs []*outRec, offsets map[tp]int64, commit bool) error
	// purge deletes the records of topic[p] below before (DeleteRecords).
	purge(ctx context.Context, topic string, p int32, before int64) error
}

// agg is a reduce store value with its timestamp.
type agg struct {
	Amount  int64
	TS      int64
	OrderID string
}

// names holds the topic names of a scenario.
type names struct {
	inputs, stores, repart, changelog [3]string
	output                            string
}

// inputName is the configured name of input x (join order a, b, c).
func inputName(x int) string { return string(rune('a' + x)) }

func newNames(sc Scenario) names {
	var n names
	for x, store := range []string{"KSTREAM-REDUCE-STATE-STORE-0000000002", "KSTREAM-REDUCE-STATE-STORE-0000000009", "KSTREAM-REDUCE-STATE-STORE-0000000016"} {
		n.inputs[x] = sc.TopicPrefix + string(rune('A'+x))
		n.stores[x] = store
		n.repart[x] = sc.AppID + "-" + store + "-repartition"
		n.changelog[x] = sc.AppID + "-" + store + "-changelog"
	}
	n.output = sc.Output
	return n
}

// engine simulates the application: one stream thread under
// exactly_once_v2, whose every commit is one transaction covering the
// first hop (inputs -> repartition topics) and the second hop
// (repartition topics -> reduce stores -> changelogs, left joins -> output).
type engine struct {
	sc     Scenario
	n      names
	c      *codecs
	encode bool // encode changelog/output values (false in dry runs)
	sink   sink
	log    *simLog
	faults map[*inRec]FaultKind
	// healthy marks rounds whose first attempt is aborted and retried.
	healthy map[int]bool
	// hop1Limit[x][p] is how many records of the input partition the first
	// hop ever processes; hop2Stop[x][p] the round from which the second hop
	// stops consuming the repartition partition.
	hop1Limit, hop2Stop [3][]int
	batch               [3][]int // records per round per input partition

	// mutable state
	hop1Pos [3][]int
	rpAvail [3][][]*rpRec // committed repartition records, offset order
	rpPos   [3][]int
	stores  [3]map[string]agg
	// events are noted for Truth.Injected (healthy retries).
	events []Injection
	// drain makes the first hop process every input record up to its
	// limit in one round (after a replay).
	drain bool
}

// totalRounds is the number of commit rounds: the first hop's plus one
// that drains the repartition topics.
func (e *engine) totalRounds() int { return e.sc.Rounds + 1 }

func newEngine(sc Scenario, c *codecs, in [][][]*inRec, s sink, encode bool) *engine {
	e := &engine{sc: sc, n: newNames(sc), c: c, encode: encode, sink: s,
		log: &simLog{in: in}, faults: map[*inRec]FaultKind{}, healthy: map[int]bool{}}
	P := sc.Partitions
	for x := 0; x < 3; x++ {
		e.hop1Limit[x] = make([]int, P)
		e.hop2Stop[x] = make([]int, P)
		e.batch[x] = make([]int, P)
		e.hop1Pos[x] = make([]int, P)
		e.rpAvail[x] = make([][]*rpRec, P)
		e.rpPos[x] = make([]int, P)
		e.stores[x] = map[string]agg{}
		e.log.rp[x] = make([][]*rpRec, P)
		e.log.inCommit[x] = make([]int64, P)
		e.log.rpCommit[x] = make([]int64, P)
		e.log.rpStart[x] = make([]int64, P)
		for p := 0; p < P; p++ {
			n := len(in[x][p])
			e.hop1Limit[x][p] = n
			e.hop2Stop[x][p] = e.totalRounds()
			e.batch[x][p] = (n + sc.Rounds - 1) / sc.Rounds
			e.log.inCommit[x][p] = -1
			e.log.rpCommit[x][p] = -1
		}
	}
	return e
}

// hop1Round is the round in which the first hop processes r, or -1.
func (e *engine) hop1Round(r *inRec) int {
	idx := r.Idx
	if idx >= e.hop1Limit[r.X][r.P] || e.batch[r.X][r.P] == 0 {
		return -1
	}
	return idx / e.batch[r.X][r.P]
}

// hop2Round is the round in which the second hop consumes r's repartition
// copy, or -1 when it never does (dropped, lag).
func (e *engine) hop2Round(r *inRec) int {
	h := e.hop1Round(r)
	if h < 0 || r.dropped() {
		return -1
	}
	rp := partitionFor([]byte(r.Key), e.sc.Partitions)
	if h+1 >= e.hop2Stop[r.X][rp] {
		return -1
	}
	return h + 1
}

// state is a saved copy of the mutable state, restored after an abort.
type state struct {
	hop1Pos, rpPos [3][]int
	rpAvailLen     [3][]int
	stores         [3]map[string]agg
}

func (e *engine) save() state {
	var s state
	for x := 0; x < 3; x++ {
		s.hop1Pos[x] = append([]int(nil), e.hop1Pos[x]...)
		s.rpPos[x] = append([]int(nil), e.rpPos[x]...)
		s.rpAvailLen[x] = make([]int, len(e.rpAvail[x]))
		for p := range e.rpAvail[x] {
			s.rpAvailLen[x][p] = len(e.rpAvail[x][p])
		}
		s.stores[x] = make(map[string]agg, len(e.stores[x]))
		for k, v := range e.stores[x] {
			s.stores[x][k] = v
		}
	}
	return s
}

func (e *engine) restore(s state) {
	for x := 0; x < 3; x++ {
		e.hop1Pos[x] = s.hop1Pos[x]
		e.rpPos[x] = s.rpPos[x]
		for p := range e.rpAvail[x] {
			e.rpAvail[x][p] = e.rpAvail[x][p][:s.rpAvailLen[x][p]]
		}
		e.stores[x] = s.stores[x]
	}
}

// run processes every round.
func (e *engine) run(ctx context.Context) error {
	for r := 0; r < e.totalRounds(); r++ {
		if err := e.round(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// round runs round r: its transaction (aborted and retried when it is a
// healthy retry's), then the purge when one is due.
func (e *engine) round(ctx context.Context, r int) error {
	saved := e.save()
	abort, err := e.attempt(ctx, r, 0)
	if err != nil {
		return err
	}
	if abort {
		e.restore(saved)
		if e.healthy[r] {
			e.events = append(e.events, Injection{Kind: KindHealthyRetry, Round: r,
				Detail: fmt.Sprintf("transaction of round %d aborted after writing, then retried successfully", r)})
		}
		if _, err := e.attempt(ctx, r, 1); err != nil {
			return err
		}
	}
	if e.sc.PurgeEvery > 0 && (r+1)%e.sc.PurgeEvery == 0 {
		return e.purgeCommitted(ctx)
	}
	return nil
}

// purgeCommitted deletes repartition records below the committed offsets,
// as Kafka Streams does every repartition.purge.interval.ms.
func (e *engine) purgeCommitted(ctx context.Context) error {
	for x := 0; x < 3; x++ {
		for p := range e.log.rpCommit[x] {
			c := e.log.rpCommit[x][p]
			if c > e.log.rpStart[x][p] {
				if err := e.sink.purge(ctx, e.n.repart[x], int32(p), c); err != nil {
					return err
				}
				e.log.rpStart[x][p] = c
			}
		}
	}
	return nil
}

// attempt runs one attempt of round r (n = 0 first, 1 retry) as one
// transaction and reports whether it was aborted.
func (e *engine) attempt(ctx context.Context, r, n int) (bool, error) {
	var (
		outs    []*outRec
		offsets = map[tp]int64{}
		abort   = n == 0 && e.healthy[r]
		dirty   [3]map[string]bool
		tomb    [3]map[string]int64
		noOut   = map[string]bool{}
		newRP   []*rpRec
		newKV   []*kvRec
		newOut  []*kvRec
		clX     []int
	)
	for x := 0; x < 3; x++ {
		dirty[x] = map[string]bool{}
		tomb[x] = map[string]int64{}
	}
	// Second hop: repartition records committed by earlier rounds.
	for x := 0; x < 3; x++ {
		for p := 0; p < e.sc.Partitions; p++ {
			if r >= e.hop2Stop[x][p] {
				continue
			}
			avail := e.rpAvail[x][p]
			for e.rpPos[x][p] < len(avail) {
				rec := avail[e.rpPos[x][p]]
				e.rpPos[x][p]++
				offsets[tp{e.n.repart[x], int32(p)}] = rec.Off + 1
				apply := true
				switch e.faults[rec.Src] {
				case KindBeforeStore:
					apply = false
				case KindAbortedChangelog:
					if n == 0 {
						abort = true
					} else {
						apply = false
					}
				case KindAbortedOutput:
					if n == 0 {
						abort = true
					} else {
						noOut[rec.Key] = true
					}
				case KindBeforeOutput:
					noOut[rec.Key] = true
				}
				if !apply {
					continue
				}
				e.reduce(x, rec.Src, tomb[x])
				dirty[x][rec.Key] = true
			}
		}
	}
	// Cache flush at commit: the latest value per key to the changelogs.
	for x := 0; x < 3; x++ {
		for _, k := range sortedKeys(dirty[x]) {
			p := partitionFor([]byte(k), e.sc.Partitions)
			kv := &kvRec{P: p, Key: k, Round: r}
			o := &outRec{topic: e.n.changelog[x], p: p, key: []byte(k), off: &kv.Off}
			if v, ok := e.stores[x][k]; ok {
				kv.TS = v.TS
				if e.encode {
					val, err := e.c.encodeOrder(&k, v.OrderID, v.Amount, v.TS, false)
					if err != nil {
						return false, err
					}
					o.value = val
				}
			} else {
				kv.TS = tomb[x][k]
				kv.Tomb = true
			}
			o.ts = kv.TS
			outs = append(outs, o)
			newKV = append(newKV, kv)
			clX = append(clX, x)
		}
	}
	// The left joins, one coalesced result per changed key.
	union := map[string]bool{}
	for x := 0; x < 3; x++ {
		for k := range dirty[x] {
			union[k] = true
		}
	}
	for _, k := range sortedKeys(union) {
		if noOut[k] {
			continue
		}
		a, okA := e.stores[0][k]
		b, okB := e.stores[1][k]
		c, okC := e.stores[2][k]
		var ts int64
		var val []byte
		switch {
		case okA:
			ts = a.TS
		case dirty[0][k]:
			ts = tomb[0][k] // the left side was deleted: a tombstone
		default:
			continue // no left value: a left join emits nothing
		}
		if okB && b.TS > ts {
			ts = b.TS
		}
		if okC && c.TS > ts {
			ts = c.TS
		}
		// A right side deleted in this commit forwards its tombstone, whose
		// timestamp the join result carries too.
		for x := 1; x < 3; x++ {
			if t, ok := tomb[x][k]; ok && dirty[x][k] && t > ts {
				if _, still := e.stores[x][k]; !still {
					ts = t
				}
			}
		}
		if okA && e.encode {
			var bp, cp *int64
			if okB {
				bp = &b.Amount
			}
			if okC {
				cp = &c.Amount
			}
			v, err := e.c.encodeJoined(k, a.Amount, bp, cp, ts)
			if err != nil {
				return false, err
			}
			val = v
		}
		p := partitionFor([]byte(k), e.sc.Partitions)
		kv := &kvRec{P: p, Key: k, TS: ts, Tomb: !okA, Round: r}
		outs = append(outs, &outRec{topic: e.n.output, p: p, key: []byte(k), value: val, ts: ts, off: &kv.Off})
		newOut = append(newOut, kv)
	}
	// First hop: the next batch of every input partition (after a replay,
	// everything up to the limit).
	if r < e.sc.Rounds || e.drain {
		for x := 0; x < 3; x++ {
			for p := 0; p < e.sc.Partitions; p++ {
				end := (r + 1) * e.batch[x][p]
				if e.drain {
					end = len(e.log.in[x][p])
				}
				if lim := e.hop1Limit[x][p]; end > lim {
					end = lim
				}
				recs := e.log.in[x][p]
				for e.hop1Pos[x][p] < end {
					rec := recs[e.hop1Pos[x][p]]
					e.hop1Pos[x][p]++
					if rec.Aborted {
						continue // read_committed never returns it
					}
					offsets[tp{e.n.inputs[x], int32(p)}] = rec.Off + 1
					if rec.dropped() || e.faults[rec] == KindBeforeRepartition {
						continue
					}
					rp := &rpRec{X: x, P: partitionFor([]byte(rec.Key), e.sc.Partitions), Key: rec.Key,
						TS: rec.TS, FP: rec.FP, Src: rec, Round: r}
					outs = append(outs, &outRec{topic: e.n.repart[x], p: rp.P, key: []byte(rec.Key),
						value: rec.Value, ts: rec.TS, off: &rp.Off})
					newRP = append(newRP, rp)
				}
			}
		}
	}
	if err := e.sink.transact(ctx, outs, offsets, !abort); err != nil {
		return false, fmt.Errorf("round %d attempt %d: %w", r, n, err)
	}
	committed := !abort
	for _, rp := range newRP {
		rp.Committed = committed
		e.log.rp[rp.X][rp.P] = append(e.log.rp[rp.X][rp.P], rp)
		if committed {
			e.rpAvail[rp.X][rp.P] = append(e.rpAvail[rp.X][rp.P], rp)
		}
	}
	for i, kv := range newKV {
		kv.Committed = committed
		e.log.cl[clX[i]] = append(e.log.cl[clX[i]], kv)
	}
	for _, kv := range newOut {
		kv.Committed = committed
		e.log.out = append(e.log.out, kv)
	}
	if committed {
		for x := 0; x < 3; x++ {
			for p := 0; p < e.sc.Partitions; p++ {
				if off, ok := offsets[tp{e.n.inputs[x], int32(p)}]; ok {
					e.log.inCommit[x][p] = off
				}
				if off, ok := offsets[tp{e.n.repart[x], int32(p)}]; ok {
					e.log.rpCommit[x][p] = off
				}
			}
		}
	}
	return abort, nil
}

// reduce applies one record to store x the way KStreamReduce does: the
// first value of a key is taken as is (the reducer is not called); later
// ones are reduced (amounts summed), the timestamp is max(record, old);
// the reducer returns null for a DELETE, which deletes the key and logs a
// tombstone carrying the record's timestamp.
func (e *engine) reduce(x int, r *inRec, tomb map[string]int64) {
	old, ok := e.stores[x][r.Key]
	switch {
	case !ok:
		e.stores[x][r.Key] = agg{Amount: r.Amount, TS: r.TS, OrderID: r.OrderID}
	case r.Delete:
		delete(e.stores[x], r.Key)
		tomb[r.Key] = r.TS
	default:
		ts := old.TS
		if r.TS > ts {
			ts = r.TS
		}
		e.stores[x][r.Key] = agg{Amount: old.Amount + r.Amount, TS: ts, OrderID: r.OrderID}
	}
}

// purge17635 deletes the first `count` unprocessed records of a lagging
// repartition partition: log start moves past the committed offset.
func (e *engine) purge17635(ctx context.Context, x int, p int32, count int) ([]*rpRec, error) {
	tail := e.rpAvail[x][p][e.rpPos[x][p]:]
	if count > len(tail) {
		count = len(tail)
	}
	if count == 0 {
		return nil, nil
	}
	before := tail[count-1].Off + 1
	if err := e.sink.purge(ctx, e.n.repart[x], p, before); err != nil {
		return nil, err
	}
	e.log.rpStart[x][p] = before
	return tail[:count], nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// drySink simulates offsets: consecutive per partition, plus one for the
// transaction marker of every partition a transaction wrote to.
type drySink struct{ next map[tp]int64 }

func (d *drySink) transact(_ context.Context, recs []*outRec, _ map[tp]int64, _ bool) error {
	touched := map[tp]bool{}
	for _, r := range recs {
		k := tp{r.topic, r.p}
		*r.off = d.next[k]
		d.next[k]++
		touched[k] = true
	}
	for k := range touched {
		d.next[k]++
	}
	return nil
}

func (d *drySink) purge(context.Context, string, int32, int64) error { return nil }

// finish applies the end-of-run faults: KAFKA-17635 purges of the given
// lagging repartition partitions and, with Faults.Resume17635, one more
// commit in which their tasks, reset to the new log start, process what is
// left (the purged records are skipped for good and the partition finding
// disappears). It returns the purged records and, when inj is not nil,
// records the purges there.
func (e *engine) finish(ctx context.Context, purge []xp, inj *[]Injection) ([]*rpRec, error) {
	var all []*rpRec
	type noted struct {
		i int
		l xp
	}
	var notes []noted
	for _, l := range purge {
		commit := e.log.rpCommit[l.x][l.p]
		recs, err := e.purge17635(ctx, l.x, l.p, e.sc.Faults.PurgedRecords)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			continue
		}
		all = append(all, recs...)
		if inj != nil {
			detail := fmt.Sprintf("KAFKA-17635: deleted %d unprocessed records, log start %d > committed offset %d",
				len(recs), e.log.rpStart[l.x][l.p], commit)
			if e.sc.Faults.Resume17635 {
				detail += "; the task then reset to the log start and skipped them"
			}
			*inj = append(*inj, Injection{Kind: KindPurged17635, Input: inputName(l.x), Topic: e.n.repart[l.x], Partition: l.p,
				Offset: recs[0].Off, Round: e.totalRounds(), Loss: true, Detail: detail})
			notes = append(notes, noted{len(*inj) - 1, l})
		}
		if e.sc.Faults.Resume17635 {
			e.rpPos[l.x][l.p] += len(recs)
			e.hop2Stop[l.x][l.p] = e.totalRounds() + 1
		}
	}
	if e.sc.Faults.Resume17635 && len(all) > 0 {
		if _, err := e.attempt(ctx, e.totalRounds(), 0); err != nil {
			return nil, err
		}
	}
	for _, nt := range notes {
		// Reported only while the log start is still above the commit
		// (a resumed task with nothing left to process commits nothing).
		(*inj)[nt.i].Loss = e.log.rpStart[nt.l.x][nt.l.p] > e.log.rpCommit[nt.l.x][nt.l.p]
	}
	return all, nil
}

// settle waits for the cluster to show the run's end state (see settle in
// kafka.go): the group offsets the log records, every transaction but the
// hanging ones ended.
func (e *engine) settle(ctx context.Context, brokers []string) error {
	want := map[tp]int64{}
	topics := map[string]int32{e.n.output: int32(e.sc.Partitions)}
	for x := 0; x < 3; x++ {
		topics[e.n.repart[x]] = int32(e.sc.Partitions)
		topics[e.n.changelog[x]] = int32(e.sc.Partitions)
		for p := 0; p < e.sc.Partitions; p++ {
			if off := e.log.inCommit[x][p]; off >= 0 {
				want[tp{e.n.inputs[x], int32(p)}] = off
			}
			if off := e.log.rpCommit[x][p]; off >= 0 {
				want[tp{e.n.repart[x], int32(p)}] = off
			}
		}
	}
	open := map[tp]bool{}
	for _, h := range e.log.hangs {
		open[tp{e.n.output, h.p}] = true
	}
	return settle(ctx, brokers, e.sc.AppID, want, topics, open)
}
