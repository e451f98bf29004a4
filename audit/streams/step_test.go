package streams

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/incremental"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/internal/store/state"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// stepper runs reconcile steps on a test pipeline with its own state and
// index, and full audits of the same moment on a fresh index.
type stepper struct {
	tp *testPipeline
	st *state.Store
	n  int // steps run
	// at is the clock of the steps: one minute per step.
	at time.Time
}

func newStepper(t *testing.T, tp *testPipeline) *stepper {
	st, err := state.Open(t.TempDir(), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &stepper{tp: tp, st: st, at: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
}

// step runs one step and commits it.
func (s *stepper) step(t *testing.T) *finding.Result {
	t.Helper()
	s.n++
	o := s.tp.opt
	at, base := s.at.Add(time.Duration(s.n)*time.Minute), time.Now()
	o.Now = func() time.Time { return at.Add(time.Since(base)) }
	sp, err := Step(context.Background(), o, StepOptions{State: s.st})
	if err != nil {
		t.Fatalf("step %d: %v", s.n, err)
	}
	if err := sp.Commit(); err != nil {
		t.Fatalf("step %d: commit: %v", s.n, err)
	}
	return sp.Result
}

// stepLikeAudit runs one step and fails unless it equals a full audit
// (sameAsAudit).
func (s *stepper) stepLikeAudit(t *testing.T) *finding.Result {
	t.Helper()
	res := s.step(t)
	sameAsAudit(t, fmt.Sprintf("step %d", s.n), res, s.audit(t))
	return res
}

// checkResolved fails unless the findings open at the last step (prev) and
// not at this one (res) are exactly res's resolved ones; it returns how
// many were resolved.
func (s *stepper) checkResolved(t *testing.T, prev []finding.Row, res *finding.Result) int {
	t.Helper()
	open := map[string]bool{}
	for _, r := range res.Rows {
		open[fmt.Sprintf("%s %s %s", r.Stage, r.Input, r.Key)] = true
	}
	var gone, resolved []string
	for _, r := range prev {
		if k := fmt.Sprintf("%s %s %s", r.Stage, r.Input, r.Key); !open[k] {
			gone = append(gone, k)
		}
	}
	for _, r := range res.Resolved {
		resolved = append(resolved, fmt.Sprintf("%s %s %s", r.Stage, r.Input, r.Key))
	}
	slices.Sort(gone)
	slices.Sort(resolved)
	if !slices.Equal(gone, resolved) {
		t.Errorf("step %d: resolved %v, want the findings gone since the last step %v", s.n, resolved, gone)
	}
	return len(resolved)
}

// audit runs a full audit of the pipeline as it is now, on a fresh index.
func (s *stepper) audit(t *testing.T) *finding.Result {
	t.Helper()
	o := s.tp.opt
	store, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	o.Store = store
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// fullRows renders rows with every field a user reads.
func fullRows(rows []finding.Row) []string {
	var out []string
	for _, r := range rows {
		w := ""
		if e, ok := r.Evidence.(*finding.Witness); ok {
			w = fmt.Sprintf(" witness=%v@%d:%d", e.Seen, e.Partition, e.Offset)
		}
		out = append(out, fmt.Sprintf("%s %s %s %q %s[%d]@%d ts=%d exp=%d obs=%v:%d%s", r.Kind, r.Stage, r.Input, r.Key,
			r.Topic, r.Partition, r.Offset, r.Timestamp, r.ExpectedTS, r.HasObserved, r.ObservedTS, w))
	}
	return out
}

func partsOf(res *finding.Result) []string {
	var out []string
	for _, p := range res.Summary.Partitions {
		if p.Kind == finding.OffsetReset || p.Kind == finding.Truncated {
			continue // compared with the previous step, not in an audit without history
		}
		out = append(out, fmt.Sprintf("%s %s[%d]", p.Kind, p.Topic, p.Partition))
	}
	return out
}

// sameAsAudit fails when the step's open findings, partition findings,
// counters or verdict differ from the full audit's.
func sameAsAudit(t *testing.T, label string, step, full *finding.Result) {
	t.Helper()
	if g, w := fullRows(step.Rows), fullRows(full.Rows); !slices.Equal(g, w) {
		t.Errorf("%s: step rows\n  %s\nfull audit rows\n  %s", label, strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	if g, w := partsOf(step), partsOf(full); !slices.Equal(g, w) {
		t.Errorf("%s: step partition findings %v, full audit %v", label, g, w)
	}
	for _, in := range full.Summary.InputOrder {
		g, w := *step.Summary.Inputs[in], *full.Summary.Inputs[in]
		if !full.Summary.Window.From.IsZero() {
			// A windowed step counts the records not yet processed by
			// their offsets, whatever their timestamps: only the
			// processed records' counters are the windowed audit's.
			g.Scanned, g.Pending, g.OutsideWindow = 0, 0, 0
			w.Scanned, w.Pending, w.OutsideWindow = 0, 0, 0
		}
		if g != w {
			t.Errorf("%s: input %s counters %+v, full audit %+v", label, in, g, w)
		}
	}
	if step.Summary.Partial != full.Summary.Partial {
		t.Errorf("%s: step partial %v, full audit %v", label, step.Summary.Partial, full.Summary.Partial)
	}
	if !full.Summary.Window.From.IsZero() {
		return
	}
	if len(step.Summary.Inconclusive) != len(full.Summary.Inconclusive) {
		t.Errorf("%s: step partial %v inconclusive %v, full audit %v %v", label, step.Summary.Partial, step.Summary.Inconclusive,
			full.Summary.Partial, full.Summary.Inconclusive)
	}
}

// model drives the fake pipeline the way Kafka Streams does, one hop at a
// time: produce appends input records, hop1 processes an input partition
// (repartition copies, committed input offset), hop2 processes a
// repartition partition (reduce: the changelog takes the newest timestamp,
// the output too for keys in the left table; lost updates are skipped).
type model struct {
	tp *testPipeline
	// written[x][p] is how far hop1 has written input x's partition p.
	written [2][2]int64
	// store[x][key] is the reduce store's timestamp.
	store [2]map[string]int64
	// ins are the pipeline's two inputs, whether audited or not.
	ins []Input
	// count makes input a's table a count: its changelog values are the
	// key's count as a Long (counts), a lost update not counted.
	count  bool
	counts map[string]int64
}

func newModel(tp *testPipeline) *model {
	return &model{tp: tp, store: [2]map[string]int64{{}, {}}, ins: slices.Clone(tp.opt.Inputs)}
}

func (m *model) produce(x int, p int32, key string, ts int64, payload string) {
	m.tp.f.add(m.ins[x].Topic, p, []byte("orig"), []byte(key+"|"+payload), ts, kread.Committed)
}

func (m *model) hop1(x int, p int32) { m.hop1Skip(x, p, nil) }

// hop1Skip is hop1 writing no copy of the records whose key skip says
// (nil: none).
func (m *model) hop1Skip(x int, p int32, skip func(string) bool) {
	in := m.ins[x]
	recs := m.tp.f.parts[in.Topic][p].recs
	for _, r := range recs[m.written[x][p]:] {
		k, _, _ := strings.Cut(string(r.Value), "|")
		if k == "" || strings.HasPrefix(k, "!") || (skip != nil && skip(k)) {
			continue
		}
		m.tp.f.add(in.RepartitionTopic, partitionFor([]byte(k), 2), []byte(k), r.Value, r.Timestamp, kread.Committed)
	}
	m.written[x][p] = int64(len(recs))
	m.tp.f.group[kread.TP{Topic: in.Topic, Partition: p}] = int64(len(recs))
}

// purge purges input x's repartition partition p up to the group's
// committed offset, as Kafka Streams does.
func (m *model) purge(x int, p int32) {
	in := m.ins[x]
	m.tp.f.parts[in.RepartitionTopic][p].logStart = m.tp.f.group[kread.TP{Topic: in.RepartitionTopic, Partition: p}]
}

func (m *model) hop2(x int, p int32, lose func(key string) bool) {
	in := m.ins[x]
	tp := kread.TP{Topic: in.RepartitionTopic, Partition: p}
	recs := m.tp.f.parts[in.RepartitionTopic][p].recs
	for _, r := range recs[m.tp.f.group[tp]:] {
		k := string(r.Key)
		if lose != nil && lose(k) {
			continue
		}
		ts := max(r.Timestamp, m.store[x][k])
		m.store[x][k] = ts
		val := r.Value
		if m.count && x == 0 {
			m.counts[k]++
			val = long(m.counts[k])
		}
		m.tp.f.add(in.ChangelogTopic, p, r.Key, val, ts, kread.Committed)
		if _, left := m.store[0][k]; left {
			out := max(m.store[0][k], m.store[1][k])
			m.tp.f.add("out", p, r.Key, r.Value, out, kread.Committed)
		}
	}
	m.tp.f.group[tp] = int64(len(recs))
}

// TestStepEqualsFullAuditOnAGrowingPipeline is the engine's equivalence
// property: on a pipeline that grows between steps (random records, random
// keys, lag at both hops, random losses, purges; every third seed with a
// window start), every step's open
// findings, partition findings, counters and verdict equal a full audit's
// at the same moment, and the findings that disappear between two steps
// are exactly the step's resolved ones.
func TestStepEqualsFullAuditOnAGrowingPipeline(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			tp := newTestPipeline(t)
			m := newModel(tp)
			switch seed % 4 {
			case 1:
				// Input a's table is the pipeline's end: no output
				// (input b's topics are written but not audited).
				tp.opt.Output, tp.opt.Inputs = "", tp.opt.Inputs[:1]
			case 3:
				// Input a's table is a count, recounted by every
				// step from the counts its state keeps.
				tp.opt.Inputs = tp.opt.Inputs[:1]
				tp.opt.Inputs[0].Count = true
				m.count, m.counts = true, map[string]int64{}
			}
			if seed%3 == 0 {
				// A windowed baseline: every step audits what the
				// window holds, as a windowed audit does.
				tp.opt.From = time.UnixMilli(1060)
			}
			s := newStepper(t, tp)
			ts := int64(1000)
			var prev []finding.Row
			resolvedSeen := 0
			for step := 0; step < 12; step++ {
				for range 1 + rng.IntN(25) {
					ts += int64(rng.IntN(20)) - 5 // out of order at times
					x, p := rng.IntN(2), int32(rng.IntN(2))
					key := fmt.Sprintf("k%d", rng.IntN(12))
					switch rng.IntN(20) {
					case 0:
						key = "" // a null selected key
					case 1:
						key = "!bad"
					}
					m.produce(x, p, key, ts, fmt.Sprint(ts))
				}
				for x := range 2 {
					for p := range int32(2) {
						if rng.IntN(4) > 0 {
							m.hop1(x, p)
						}
						if rng.IntN(4) > 0 {
							var lose func(string) bool
							if (m.count && rng.IntN(3) == 0) || rng.IntN(6) == 0 {
								lost := fmt.Sprintf("k%d", rng.IntN(12))
								lose = func(k string) bool { return k == lost }
							}
							m.hop2(x, p, lose)
						}
						if rng.IntN(5) == 0 {
							m.purge(x, p)
						}
					}
				}
				res := s.stepLikeAudit(t)
				resolvedSeen += s.checkResolved(t, prev, res)
				prev = res.Rows
			}
			kinds := map[finding.Kind]int{}
			for _, r := range prev {
				kinds[r.Kind]++
			}
			t.Logf("seed %d: %d findings open at the end %v, %d resolved on the way", seed, len(prev), kinds, resolvedSeen)
		})
	}
}

// TestStepFirstSeenAndReplay: a finding keeps the time it was first seen
// while it stays open, and a replay of the reported record resolves it.
func TestStepFirstSeenAndReplay(t *testing.T) {
	tp := newTestPipeline(t)
	s := newStepper(t, tp)
	tp.process(0, 0, "k1", 100, "1", false, false)
	lost := tp.process(0, 1, "k2", 200, "1", true, true)
	r1 := s.step(t)
	if got := fullRows(r1.Rows); len(got) != 1 || !strings.Contains(got[0], `missing changelog a "k2"`) {
		t.Fatalf("baseline rows %v, want k2 missing at the changelog", got)
	}
	first := r1.Rows[0].FirstSeen
	if first.Truncate(time.Minute) != s.at.Add(time.Minute) || r1.Summary.Step == nil || !r1.Summary.Step.Baseline {
		t.Errorf("baseline: first_seen %v step %+v, want the baseline's time and a baseline step", first, r1.Summary.Step)
	}
	tp.process(1, 0, "k1", 300, "2", false, false) // unrelated progress
	r2 := s.step(t)
	if len(r2.Rows) != 1 || !r2.Rows[0].FirstSeen.Equal(first) || len(r2.Resolved) != 0 {
		t.Fatalf("step 2: rows %v first_seen %v resolved %v, want k2 still open since %v", fullRows(r2.Rows), r2.Rows[0].FirstSeen, r2.Resolved, first)
	}
	if r2.Summary.Step.Read[string(engine.RoleInput)] != 1 || r2.Summary.Step.KeysJudged != 2 {
		t.Errorf("step 2 read %v and judged %d keys, want 1 input record and 2 keys (k1 new, k2 open)", r2.Summary.Step.Read, r2.Summary.Step.KeysJudged)
	}
	// Replay the record the report names: same value, same timestamp.
	rec := tp.f.parts["inA"][1].recs[lost]
	k, payload, _ := strings.Cut(string(rec.Value), "|")
	tp.process(0, 1, k, rec.Timestamp, payload, false, false)
	r3 := s.step(t)
	if len(r3.Rows) != 0 || len(r3.Resolved) != 1 || string(r3.Resolved[0].Key) != "k2" || !r3.Resolved[0].FirstSeen.Equal(first) {
		t.Fatalf("after the replay: rows %v resolved %v, want k2 resolved (first seen %v)", fullRows(r3.Rows), fullRows(r3.Resolved), first)
	}
	if r3.Summary.Step.Resolved != 1 {
		t.Errorf("step counts %d resolved, want 1", r3.Summary.Step.Resolved)
	}
}

// TestStepLagIsNeverLoss: records above the committed offset and records
// pending at the second hop are neither findings nor forgotten: a later
// step judges them once processed.
func TestStepLagIsNeverLoss(t *testing.T) {
	tp := newTestPipeline(t)
	m := newModel(tp)
	s := newStepper(t, tp)
	m.produce(0, 0, "k", 100, "1")
	m.hop1(0, 0)
	m.hop2(0, 0, nil)
	m.hop2(0, 1, nil)
	m.produce(0, 0, "k", 200, "2") // lag at the first hop
	m.produce(0, 1, "j", 150, "1")
	m.hop1(0, 1) // j pending at the second hop
	r := s.step(t)
	if len(r.Rows) != 0 || r.Summary.Inputs["a"].Pending != 2 {
		t.Fatalf("with lag: rows %v pending %d, want none and 2 pending", fullRows(r.Rows), r.Summary.Inputs["a"].Pending)
	}
	// The application processes both, losing k's update before the store.
	m.hop1(0, 0)
	loseK := func(k string) bool { return k == "k" }
	m.hop2(0, 0, loseK)
	m.hop2(0, 1, loseK)
	r = s.step(t)
	if got := fullRows(r.Rows); len(got) != 1 || !strings.Contains(got[0], `stale changelog a "k"`) || r.Summary.Inputs["a"].Pending != 0 {
		t.Fatalf("after processing: rows %v pending %d, want k stale and nothing pending", got, r.Summary.Inputs["a"].Pending)
	}
	sameAsAudit(t, "after processing", r, s.audit(t))
}

// TestStepTailPurgedWhileReading: between the step's read of the group
// offsets and its read of a repartition tail, the application processes
// the tail at the second hop and purges it: the step judges the records
// with what that commit wrote, like a full audit would, and reports
// nothing.
func TestStepTailPurgedWhileReading(t *testing.T) {
	tp := newTestPipeline(t)
	m := newModel(tp)
	s := newStepper(t, tp)
	m.produce(0, 0, "k", 100, "1")
	m.hop1(0, 0)
	m.hop2(0, partitionFor([]byte("k"), 2), nil)
	if r := s.step(t); len(r.Rows) != 0 {
		t.Fatalf("baseline: rows %v", fullRows(r.Rows))
	}
	m.produce(0, 0, "k", 200, "2")
	m.produce(0, 0, "j", 150, "1")
	m.hop1(0, 0) // both copies are in the tails now
	in := tp.opt.Inputs[0]
	done := false
	tp.f.beforeRead = func(topic string) {
		if topic != in.RepartitionTopic || done {
			return
		}
		done = true
		for p := range int32(2) {
			m.hop2(0, p, nil)
			tp.f.parts[in.RepartitionTopic][p].logStart = tp.f.group[kread.TP{Topic: in.RepartitionTopic, Partition: p}]
		}
	}
	r := s.step(t)
	tp.f.beforeRead = nil
	if !done {
		t.Fatal("the step never read the repartition topic")
	}
	if len(r.Rows) != 0 || r.Summary.Inputs["a"].Pending != 0 {
		t.Fatalf("rows %v pending %d, want none: the second hop committed before the tails were read", fullRows(r.Rows), r.Summary.Inputs["a"].Pending)
	}
	sameAsAudit(t, "after the purge", r, s.audit(t))
}

// TestStepOffsetResetNeitherReauditsNorSkips: committed offsets moving
// back are reported once, the records already audited are not read again,
// and what comes after is read once the application is past them.
func TestStepOffsetResetNeitherReauditsNorSkips(t *testing.T) {
	tp := newTestPipeline(t)
	s := newStepper(t, tp)
	for i := range 6 {
		tp.process(0, 0, fmt.Sprintf("k%d", i), int64(100+i), "1", false, false)
	}
	s.step(t)
	tp.f.group[kread.TP{Topic: "inA", Partition: 0}] = 2 // the application was reset
	r := s.step(t)
	if got := r.Summary.Partitions; len(got) != 1 || got[0].Kind != finding.OffsetReset || got[0].Topic != "inA" {
		t.Fatalf("after the reset: partition findings %+v, want offset_reset on inA[0]", got)
	}
	if r.Summary.Step.Read[string(engine.RoleInput)] != 0 {
		t.Errorf("after the reset the step read %d input records, want none (already audited)", r.Summary.Step.Read[string(engine.RoleInput)])
	}
	// The application reprocesses, then goes on: one new record is lost.
	tp.f.group[kread.TP{Topic: "inA", Partition: 0}] = 6
	tp.process(0, 0, "new", 300, "1", true, true)
	r = s.step(t)
	if r.Summary.Step.Read[string(engine.RoleInput)] != 1 || len(r.Summary.Partitions) != 0 {
		t.Errorf("next step read %d input records with partition findings %+v, want 1 and none", r.Summary.Step.Read[string(engine.RoleInput)], r.Summary.Partitions)
	}
	if got := fullRows(r.Rows); len(got) != 1 || !strings.Contains(got[0], `"new"`) {
		t.Errorf("rows %v, want the new record missing", got)
	}
	if a := r.Summary.Inputs["a"]; a.Audited != 7 || a.Scanned != 7 {
		t.Errorf("counters %+v, want 7 scanned and audited (each record once)", *a)
	}
}

// TestStepTruncatedDownstreamIsRebuilt: a changelog partition whose log
// end moved below what a step read is reported truncated and read again
// from its start, so a key whose only changelog record vanished is missing.
func TestStepTruncatedDownstreamIsRebuilt(t *testing.T) {
	tp := newTestPipeline(t)
	s := newStepper(t, tp)
	tp.process(0, 0, "a", 100, "1", false, false)
	tp.process(0, 0, "b", 100, "1", false, false)
	if r := s.step(t); len(r.Rows) != 0 {
		t.Fatalf("baseline rows %v, want none", fullRows(r.Rows))
	}
	p := partitionFor([]byte("b"), 2)
	cl := tp.f.parts["app-storeA-changelog"][p]
	var kept []kread.Record
	for _, rec := range cl.recs {
		if string(rec.Key) != "b" {
			kept = append(kept, rec)
		}
	}
	if len(kept) == len(cl.recs) || len(kept) > 0 && kept[len(kept)-1].Offset != int64(len(kept)-1) {
		t.Fatalf("fixture: b's changelog record must be the last of partition %d", p)
	}
	cl.recs = kept // an unclean leader election cut the log
	r := s.step(t)
	var kinds []string
	for _, pf := range r.Summary.Partitions {
		kinds = append(kinds, fmt.Sprintf("%s %s[%d]", pf.Kind, pf.Topic, pf.Partition))
	}
	if !slices.Contains(kinds, fmt.Sprintf("truncated app-storeA-changelog[%d]", p)) {
		t.Errorf("partition findings %v, want the changelog truncated", kinds)
	}
	if got := fullRows(r.Rows); len(got) != 1 || !strings.Contains(got[0], `missing changelog a "b"`) {
		t.Errorf("rows %v, want b missing at the changelog", got)
	}
	if !slices.Equal(r.Summary.Step.Rebuilt, []string{fmt.Sprintf("app-storeA-changelog[%d]", p)}) {
		t.Errorf("rebuilt %v", r.Summary.Step.Rebuilt)
	}
}

// TestStepInterruptedLeavesThePreviousCheckpoint: a step that is not
// committed (the process stopped after computing it) changes nothing: the
// next step equals one taken as if it had never run.
func TestStepInterruptedLeavesThePreviousCheckpoint(t *testing.T) {
	tp := newTestPipeline(t)
	s := newStepper(t, tp)
	tp.process(0, 0, "k", 100, "1", false, false)
	s.step(t)
	tp.process(0, 1, "j", 200, "1", true, true)
	sp, err := Step(context.Background(), tp.opt, StepOptions{State: s.st})
	if err != nil {
		t.Fatal(err)
	}
	sp.Abort()
	r := s.step(t)
	if r.Summary.Step.Number != 2 || r.Summary.Step.Read[string(engine.RoleInput)] != 1 || len(r.Rows) != 1 {
		t.Errorf("after an aborted step: step %d read %v rows %v, want step 2 reading j once and reporting it", r.Summary.Step.Number,
			r.Summary.Step.Read, fullRows(r.Rows))
	}
}

func TestStepRefusesAnotherPipelinesState(t *testing.T) {
	tp := newTestPipeline(t)
	s := newStepper(t, tp)
	tp.process(0, 0, "k", 100, "1", false, false)
	s.step(t)
	o := tp.opt
	o.Inputs = slices.Clone(o.Inputs)
	o.Inputs[1].Field = "otherField"
	_, err := Step(context.Background(), o, StepOptions{State: s.st})
	if _, ok := err.(*incremental.StateMismatchError); !ok {
		t.Errorf("step with another rekey: %v, want a StateMismatchError", err)
	}
}

// TestStepStuckLSOWithholdsThenJudges: a step that meets a hanging
// transaction withholds the findings depending on it (partial) and the
// next step, once the transaction ended, judges them.
func TestStepStuckLSOWithholdsThenJudges(t *testing.T) {
	tp := newTestPipeline(t)
	s := newStepper(t, tp)
	tp.process(0, 0, "k", 100, "1", false, false)
	p := partitionFor([]byte("k"), 2)
	s.step(t)
	// The next update reaches the changelog, and its output write is in
	// a transaction that stays open.
	tp.process(0, 0, "k", 200, "2", false, false)
	out := tp.f.parts["out"][p]
	out.lso = int64(len(out.recs)) - 1
	r := s.step(t)
	if !r.Summary.Partial || len(r.Rows) != 0 || r.Summary.Withheld != 1 {
		t.Fatalf("with a hanging transaction: partial %v rows %v withheld %d, want partial, no rows, 1 withheld", r.Summary.Partial, fullRows(r.Rows), r.Summary.Withheld)
	}
	sameAsAudit(t, "stuck", r, s.audit(t))
	// The transaction aborts: the update never reaches the output.
	out.recs[len(out.recs)-1].Kind = kread.Aborted
	out.lso = -1
	r = s.step(t)
	if got := fullRows(r.Rows); len(got) != 1 || !strings.Contains(got[0], `aborted output a "k"`) || r.Summary.Partial {
		t.Fatalf("after the abort: rows %v partial %v, want k aborted at the output", got, r.Summary.Partial)
	}
	sameAsAudit(t, "aborted", r, s.audit(t))
}

// TestStepHugeKey: a selected key far larger than Badger takes as a key
// (the testbed's 100,000-byte customerId) keeps its state across steps.
func TestStepHugeKey(t *testing.T) {
	tp := newTestPipeline(t)
	s := newStepper(t, tp)
	big := strings.Repeat("k", 100_000)
	tp.process(0, 0, big, 100, "1", false, false)
	tp.process(0, 1, big+"-lost", 200, "1", true, true)
	if r := s.step(t); len(r.Rows) != 1 || string(r.Rows[0].Key) != big+"-lost" {
		t.Fatalf("baseline rows %d, want the lost huge key", len(r.Rows))
	}
	tp.process(0, 0, big, 300, "2", false, true) // its output write lost
	r := s.step(t)
	if len(r.Rows) != 2 || r.Rows[0].Stage != finding.StageChangelog || r.Rows[1].Stage != finding.StageOutput || string(r.Rows[1].Key) != big {
		t.Fatalf("step 2: %d rows, want the open changelog finding and the huge key's output", len(r.Rows))
	}
	sameAsAudit(t, "huge keys", r, s.audit(t))
}
