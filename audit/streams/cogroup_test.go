package streams

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// cogroupPipeline is a cogroup over the fake: input a grouped on its own
// record key (no repartition topic), input b re-keyed through a
// repartition topic (values "key|payload"), both aggregated into one
// store whose changelog and the output carry max(record ts, old ts).
type cogroupPipeline struct {
	f      *fakeKafka
	opt    Options
	newest map[string]int64 // the store's timestamp per key
}

func newCogroupPipeline(t *testing.T) *cogroupPipeline {
	f := newFake()
	for _, tp := range []string{"inA", "inB", "app-rep-repartition", "app-agg-changelog", "out"} {
		f.topic(tp, 2)
	}
	store, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	own := func(rec *kread.Record) ([]byte, int64, SelectStatus, error) {
		return rec.Key, rec.Timestamp, Selected, nil
	}
	field := func(rec *kread.Record) ([]byte, int64, SelectStatus, error) {
		k, _, _ := strings.Cut(string(rec.Value), "|")
		return []byte(k), rec.Timestamp, Selected, nil
	}
	inputs := []Input{
		{Name: "a", Topic: "inA", ChangelogTopic: "app-agg-changelog", Select: own, Operator: "cogroup"},
		{Name: "b", Topic: "inB", RepartitionTopic: "app-rep-repartition", ChangelogTopic: "app-agg-changelog", Select: field, Operator: "cogroup"},
	}
	return &cogroupPipeline{f: f, newest: map[string]int64{}, opt: Options{Kafka: f, Store: store, Group: "app", Inputs: inputs, Output: "out", Cogroup: true,
		SettleTimeout: 50 * time.Millisecond, SettlePoll: time.Millisecond}}
}

// fate says what the application does with one record.
type fate int

const (
	processed     fate = iota
	loseChangelog      // processed, its changelog and output writes lost
	loseOutput         // processed, its output write lost
	linkPending        // b only: its repartition copy not processed yet
)

// process runs one record of input x (0: a, 1: b) through the cogroup.
func (cp *cogroupPipeline) process(x int, key string, ts int64, f fate) {
	p := partitionFor([]byte(key), 2)
	if x == 0 {
		off := cp.f.add("inA", p, []byte(key), []byte("v"), ts, kread.Committed)
		cp.f.group[kread.TP{Topic: "inA", Partition: p}] = off + 1
	} else {
		v := []byte(key + "|v")
		off := cp.f.add("inB", 0, []byte("orig"), v, ts, kread.Committed)
		cp.f.group[kread.TP{Topic: "inB", Partition: 0}] = off + 1
		roff := cp.f.add("app-rep-repartition", p, []byte(key), v, ts, kread.Committed)
		if f == linkPending {
			return
		}
		cp.f.group[kread.TP{Topic: "app-rep-repartition", Partition: p}] = roff + 1
	}
	if f == loseChangelog {
		return
	}
	agg := max(ts, cp.newest[key])
	cp.newest[key] = agg
	cp.f.add("app-agg-changelog", p, []byte(key), []byte("agg"), agg, kread.Committed)
	if f != loseOutput {
		cp.f.add("out", p, []byte(key), []byte("agg"), agg, kread.Committed)
	}
}

// TestRunCogroup: each input of a cogroup is checked against the one
// shared changelog and the output with the table rule: a clean run reports
// nothing, a lost update is reported for the input whose newest update it
// was (and only at the first stage it is missing from), a record still in
// b's repartition tail is pending, and an update older than the key's
// aggregate is covered by the other input's newer one.
func TestRunCogroup(t *testing.T) {
	type rec struct {
		x    int
		key  string
		ts   int64
		fate fate
	}
	var clean []rec
	for i := range 40 {
		clean = append(clean, rec{i % 2, fmt.Sprintf("k%d", i%5), int64(1000 + i), processed})
	}
	cases := []struct {
		name    string
		extra   []rec
		want    []string
		pending int64
	}{
		{name: "clean"},
		{name: "a's newest update lost at the changelog", extra: []rec{{0, "k1", 5000, loseChangelog}}, want: []string{"stale changelog a k1"}},
		{name: "b's newest update lost at the changelog", extra: []rec{{1, "k2", 5000, loseChangelog}}, want: []string{"stale changelog b k2"}},
		{name: "an older update lost is covered by the aggregate", extra: []rec{{1, "k2", 500, loseChangelog}}},
		{name: "output lost: both inputs' updates", extra: []rec{{0, "k3", 5000, loseOutput}, {1, "k3", 5001, loseOutput}}, want: []string{"stale output a k3", "stale output b k3"}},
		{name: "a new key lost everywhere", extra: []rec{{1, "k9", 5000, loseChangelog}}, want: []string{"missing changelog b k9"}},
		{name: "b pending in the repartition tail", extra: []rec{{1, "k4", 5000, linkPending}}, pending: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp := newCogroupPipeline(t)
			for _, r := range append(append([]rec(nil), clean...), tc.extra...) {
				cp.process(r.x, r.key, r.ts, r.fate)
			}
			res, err := Run(context.Background(), cp.opt)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res.Rows {
				got = append(got, fmt.Sprintf("%s %s %s %s", r.Kind, r.Stage, r.Input, r.Key))
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("rows %q, want %q", got, tc.want)
			}
			if p := res.Summary.Inputs["b"].Pending; p != tc.pending {
				t.Errorf("b pending %d, want %d", p, tc.pending)
			}
			// Every key of the clean load is checked for both inputs at the
			// changelog, and at the output.
			if c := res.Summary.Stages[finding.StageChangelog]; c == nil || c.KeysChecked < 10 {
				t.Errorf("changelog stage %+v, want the 10 (input, key) pairs checked", c)
			}
		})
	}
}

// TestCogroupOptions: an input without a repartition topic is refused
// unless the inputs feed a cogroup, and a cogroup may end in its changelog
// with several inputs.
func TestCogroupOptions(t *testing.T) {
	cp := newCogroupPipeline(t)
	o := cp.opt
	if _, err := o.withDefaults(); err != nil {
		t.Fatalf("cogroup: %v", err)
	}
	o.Output = ""
	if _, err := o.withDefaults(); err != nil {
		t.Fatalf("cogroup ending in its changelog: %v", err)
	}
	o.Cogroup = false
	if _, err := o.withDefaults(); err == nil {
		t.Fatal("two inputs without output or cogroup accepted")
	}
	o.Output = "out"
	if _, err := o.withDefaults(); err == nil || !strings.Contains(err.Error(), "input 0 (a) lacks a topic, repartition topic") {
		t.Fatalf("err %v, want input a refused for its missing repartition topic", err)
	}
}

// cogroupModel drives the fake cogroup one hop at a time, as Kafka Streams
// does: input a's records go straight to the aggregate (a committed
// offset on inA), input b's through the repartition topic (two hops);
// every processed update puts max(ts, the store's) into the one store,
// its changelog and the output, unless a loss skips the changelog (and
// so the output) or the output alone.
type cogroupModel struct {
	cp *cogroupPipeline
	// writtenB[p] is how far hop1 has written inB's partition p.
	writtenB [2]int64
}

func (m *cogroupModel) produce(x int, key string, ts int64) {
	if x == 0 {
		m.cp.f.add("inA", partitionFor([]byte(key), 2), []byte(key), []byte("v"), ts, kread.Committed)
		return
	}
	m.cp.f.add("inB", int32(ts%2), []byte("orig"), []byte(key+"|v"), ts, kread.Committed)
}

// aggregate processes the records of topic's partition p from the group's
// committed offset on, and commits it; lose says which keys' updates are
// lost and where.
func (m *cogroupModel) aggregate(topic string, p int32, lose func(key string) fate) {
	tp := kread.TP{Topic: topic, Partition: p}
	recs := m.cp.f.parts[topic][p].recs
	for _, r := range recs[m.cp.f.group[tp]:] {
		k := string(r.Key)
		f := processed
		if lose != nil {
			f = lose(k)
		}
		if f == loseChangelog {
			continue
		}
		agg := max(r.Timestamp, m.cp.newest[k])
		m.cp.newest[k] = agg
		kp := partitionFor(r.Key, 2)
		m.cp.f.add("app-agg-changelog", kp, r.Key, []byte("agg"), agg, kread.Committed)
		if f != loseOutput {
			m.cp.f.add("out", kp, r.Key, []byte("agg"), agg, kread.Committed)
		}
	}
	m.cp.f.group[tp] = int64(len(recs))
}

// hop1 writes inB's partition p's new records to the repartition topic
// and commits it.
func (m *cogroupModel) hop1(p int32) {
	recs := m.cp.f.parts["inB"][p].recs
	for _, r := range recs[m.writtenB[p]:] {
		k, _, _ := strings.Cut(string(r.Value), "|")
		m.cp.f.add("app-rep-repartition", partitionFor([]byte(k), 2), []byte(k), r.Value, r.Timestamp, kread.Committed)
	}
	m.writtenB[p] = int64(len(recs))
	m.cp.f.group[kread.TP{Topic: "inB", Partition: p}] = int64(len(recs))
}

// TestStepEqualsFullAuditOnAGrowingCogroup is the equivalence property of
// reconcile steps on a cogroup: on a cogroup that grows between steps
// (random records and keys, lag at both of b's hops and a's one, losses at
// the changelog or the output, purges of b's repartition topic; every
// third seed with a window start, every fourth ending in its changelog),
// every step's open findings, partition findings, counters and verdict
// equal a full audit's at the same moment, and the findings that disappear
// between two steps are exactly the step's resolved ones.
func TestStepEqualsFullAuditOnAGrowingCogroup(t *testing.T) {
	for seed := uint64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 19))
			cp := newCogroupPipeline(t)
			if seed%4 == 0 {
				cp.opt.Output = "" // the cogroup's table leads nowhere
			}
			if seed%3 == 0 {
				cp.opt.From = time.UnixMilli(1060)
			}
			m := &cogroupModel{cp: cp}
			s := newStepper(t, &testPipeline{f: cp.f, opt: cp.opt})
			ts := int64(1000)
			var prev []finding.Row
			kinds := map[finding.Kind]int{}
			for step := 0; step < 12; step++ {
				for range 1 + rng.IntN(25) {
					ts += int64(rng.IntN(20)) - 5 // out of order at times
					m.produce(rng.IntN(2), fmt.Sprintf("k%d", rng.IntN(12)), ts)
				}
				for p := range int32(2) {
					var lose func(string) fate
					if rng.IntN(3) == 0 {
						lost, f := fmt.Sprintf("k%d", rng.IntN(12)), fate(1+rng.IntN(2))
						lose = func(k string) fate {
							if k == lost {
								return f
							}
							return processed
						}
					}
					if rng.IntN(4) > 0 {
						m.aggregate("inA", p, lose)
					}
					if rng.IntN(4) > 0 {
						m.hop1(p)
					}
					if rng.IntN(4) > 0 {
						m.aggregate("app-rep-repartition", p, lose)
					}
					if rng.IntN(5) == 0 {
						m.cp.f.parts["app-rep-repartition"][p].logStart = m.cp.f.group[kread.TP{Topic: "app-rep-repartition", Partition: p}]
					}
				}
				res := s.stepLikeAudit(t)
				s.checkResolved(t, prev, res)
				prev = res.Rows
				for _, r := range res.Rows {
					kinds[r.Kind]++
				}
			}
			t.Logf("seed %d: %d findings open at the end, %v over the steps", seed, len(prev), kinds)
		})
	}
}
