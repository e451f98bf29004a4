package streams

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// suppressPipeline is a one-input reduce with
// suppress(untilTimeLimit(limit)) before the output over the fake: the
// buffer holds each key's newest update from its first buffering until
// stream time passes it by limit; a commit logs the buffered keys as
// values and the evicted ones as tombstones, as
// InMemoryTimeOrderedKeyValueChangeBuffer#flush does.
type suppressPipeline struct {
	*testPipeline
	limit      int64
	streamTime int64
	buffered   map[string]int64 // key -> buffer time (first buffering)
	newest     map[string]int64 // key -> newest buffered timestamp
	order      []string
}

const bufferTopic = "app-KTABLE-SUPPRESS-STATE-STORE-0000000008-changelog"

func newSuppressPipeline(t *testing.T, limit int64) *suppressPipeline {
	tp := newTestPipeline(t)
	tp.opt.Inputs = tp.opt.Inputs[:1]
	tp.f.topic(bufferTopic, 2)
	tp.opt.Inputs[0].BufferTopic = bufferTopic
	return &suppressPipeline{testPipeline: tp, limit: limit, buffered: map[string]int64{}, newest: map[string]int64{}}
}

// process is the application processing one input record through the
// reduce and the suppress; dropEmit loses the records this update's
// evictions emit (the buffer still logs their tombstones).
func (sp *suppressPipeline) process(p int32, key string, ts int64, dropEmit bool) {
	in := sp.opt.Inputs[0]
	v := []byte(key + "|x")
	off := sp.f.add(in.Topic, p, []byte("orig"), v, ts, kread.Committed)
	sp.f.group[kread.TP{Topic: in.Topic, Partition: p}] = off + 1
	rp := partitionFor([]byte(key), 2)
	roff := sp.f.add(in.RepartitionTopic, rp, []byte(key), v, ts, kread.Committed)
	sp.f.group[kread.TP{Topic: in.RepartitionTopic, Partition: rp}] = roff + 1
	sp.f.add(in.ChangelogTopic, rp, []byte(key), v, ts, kread.Committed)
	// suppress: buffer, then evict what the time limit passed.
	sp.streamTime = max(sp.streamTime, ts)
	if _, ok := sp.buffered[key]; !ok {
		sp.buffered[key] = ts
		sp.order = append(sp.order, key)
	}
	sp.newest[key] = max(sp.newest[key], ts)
	dirty := map[string]bool{key: true}
	var keep []string
	for _, k := range sp.order {
		if sp.buffered[k] <= sp.streamTime-sp.limit {
			if !dropEmit {
				sp.f.add("out", partitionFor([]byte(k), 2), []byte(k), []byte(k+"|x"), sp.newest[k], kread.Committed)
			}
			delete(sp.buffered, k)
			delete(sp.newest, k)
			dirty[k] = true
			continue
		}
		keep = append(keep, k)
	}
	sp.order = keep
	// The commit: the buffer's flush logs every dirty key.
	for k := range dirty {
		var val []byte
		if _, ok := sp.buffered[k]; ok {
			val = []byte("buffered")
		}
		sp.f.add(bufferTopic, partitionFor([]byte(k), 2), []byte(k), val, 0, kread.Committed)
	}
}

func TestRunSuppress(t *testing.T) {
	cases := []struct {
		name string
		drop map[int]bool // the updates whose evictions lose their output
		want []string
		// pending: the keys the output lacks that the buffer holds.
		pending int64
	}{
		// k1 and k2, buffered since 1007 and 1008, are pending.
		{name: "clean: the keys still buffered are pending", pending: 2},
		// k2's eviction at 1007 is lost, but k2 is buffered again since:
		// its newest update is pending, the loss unseen (not invented).
		{name: "an eviction's output lost, the key buffered again", drop: map[int]bool{7: true}, pending: 2},
		// k0's second eviction (its update at 1009) is lost: the output
		// holds its first (1003), the buffer a tombstone.
		{name: "the last eviction's output lost", drop: map[int]bool{11: true}, want: []string{"k0 stale output"}, pending: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := newSuppressPipeline(t, 5)
			// k0..k2 round robin at 1000..1011: k0 (first buffered at 1000)
			// is evicted at stream time 1005, k1 at 1006, k2 at 1007,
			// k0 again at 1008 (buffered since 1003)...; the last
			// ones stay buffered.
			for i := range 12 {
				sp.process(int32(i%2), fmt.Sprintf("k%d", i%3), int64(1000+i), tc.drop[i])
			}
			res := sp.run(t)
			var got []string
			for _, r := range res.Rows {
				got = append(got, fmt.Sprintf("%s %s %s", r.Key, r.Kind, r.Stage))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
			if p := res.Summary.Stages[finding.StageOutput].KeysPending; p != tc.pending {
				t.Errorf("%d keys pending in the buffer, want %d", p, tc.pending)
			}
		})
	}
	t.Run("without the buffer every buffered key is missing", func(t *testing.T) {
		sp := newSuppressPipeline(t, 5)
		for i := range 12 {
			sp.process(int32(i%2), fmt.Sprintf("k%d", i%3), int64(1000+i), false)
		}
		sp.opt.Inputs[0].BufferTopic = ""
		if res := sp.run(t); len(res.Rows) == 0 {
			t.Fatal("no rows: the buffered keys should look missing to an audit that ignores the buffer")
		}
	})
	t.Run("a stuck buffer partition withholds the output rows it decides", func(t *testing.T) {
		sp := newSuppressPipeline(t, 5)
		for i := range 12 {
			sp.process(int32(i%2), fmt.Sprintf("k%d", i%3), int64(1000+i), i == 7)
		}
		for _, fp := range sp.f.parts[bufferTopic] {
			fp.lso = 0 // an open transaction from the start
		}
		res := sp.run(t)
		if len(res.Rows) != 0 || !res.Summary.Partial || res.Summary.Withheld == 0 {
			t.Fatalf("rows %v, partial %v, withheld %d: want every output row withheld", rowsString(res.Rows), res.Summary.Partial, res.Summary.Withheld)
		}
	})
}

// TestStepSuppressEqualsFullAudit: reconcile steps over a pipeline with a
// suppress buffer keep each key's last buffer record in their state, so
// that every step equals a full audit at the same moment (sameAsAudit:
// rows, partition findings, counters, verdict): a key the buffer holds is
// pending, an eviction whose output was lost is found once its tombstone
// is read, whichever step read the records; and the findings that
// disappear between two steps are exactly the step's resolved ones.
func TestStepSuppressEqualsFullAudit(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			sp := newSuppressPipeline(t, 5)
			s := newStepper(t, sp.testPipeline)
			ts, found, pendingSeen := int64(1000), 0, int64(0)
			var prev []finding.Row
			for step := 0; step < 10; step++ {
				for range 1 + rng.IntN(6) {
					ts += int64(rng.IntN(4))
					sp.process(int32(rng.IntN(2)), fmt.Sprintf("k%d", rng.IntN(5)), ts, rng.IntN(8) == 0)
				}
				res := s.stepLikeAudit(t)
				s.checkResolved(t, prev, res)
				full := s.audit(t)
				if g, w := res.Summary.Stages[finding.StageOutput].KeysPending, full.Summary.Stages[finding.StageOutput].KeysPending; g != w {
					t.Errorf("step %d: %d keys pending in the buffer, a full audit %d", s.n, g, w)
				}
				pendingSeen += full.Summary.Stages[finding.StageOutput].KeysPending
				found += len(res.Rows)
				prev = res.Rows
			}
			if pendingSeen == 0 {
				t.Error("no key was ever pending in the buffer: the property tested nothing")
			}
			t.Logf("seed %d: %d rows over the steps, %d open at the end, %d keys pending over the steps", seed, found, len(prev), pendingSeen)
		})
	}
}
