package streams

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// countPipeline is a one-input count by a new key over the fake: input a's
// values "key|payload" are counted by key; the changelog and the output
// (toStream) hold the count as a Long.
type countPipeline struct {
	*testPipeline
	counts map[string]int64
}

func newCountPipeline(t *testing.T) *countPipeline {
	tp := newTestPipeline(t)
	tp.opt.Inputs = tp.opt.Inputs[:1]
	tp.opt.Inputs[0].Count = true
	return &countPipeline{testPipeline: tp, counts: map[string]int64{}}
}

func long(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// process is the application counting one input record; lose drops the
// update from the store (the count is not incremented, nothing written):
// the next update of the key writes a count one short.
func (cp *countPipeline) process(p int32, key string, ts int64, lose bool) {
	in := cp.opt.Inputs[0]
	v := []byte(key + "|x")
	off := cp.f.add(in.Topic, p, []byte("orig"), v, ts, kread.Committed)
	cp.f.group[kread.TP{Topic: in.Topic, Partition: p}] = off + 1
	rp := partitionFor([]byte(key), 2)
	roff := cp.f.add(in.RepartitionTopic, rp, []byte(key), v, ts, kread.Committed)
	cp.f.group[kread.TP{Topic: in.RepartitionTopic, Partition: rp}] = roff + 1
	if lose {
		return
	}
	cp.counts[key]++
	cp.f.add(in.ChangelogTopic, rp, []byte(key), long(cp.counts[key]), ts, kread.Committed)
	cp.f.add("out", rp, []byte(key), long(cp.counts[key]), ts, kread.Committed)
}

func TestRunCount(t *testing.T) {
	cases := []struct {
		name string
		lose map[int]bool // the records (by index) whose update is lost
		// pendingLast leaves the last record's repartition copy in the
		// tail (processed at the first hop only).
		pendingLast bool
		want        []string // key: count/processed
	}{
		{name: "clean"},
		{name: "clean with a pending tail", pendingLast: true},
		{name: "two updates of k1 lost", lose: map[int]bool{1: true, 4: true}, want: []string{"k1: 3/5"}},
		{name: "one update of k0 and one of k2 lost", lose: map[int]bool{0: true, 5: true}, want: []string{"k0: 4/5", "k2: 4/5"}},
	}
	for _, tc := range cases {
		for _, tails := range []int{0, 1} {
			// tails 1: too many tail records to hold, so pending candidates
			// are indexed and found pending key by key.
			t.Run(fmt.Sprintf("%s/maxTails=%d", tc.name, tails), func(t *testing.T) {
				cp := newCountPipeline(t)
				cp.opt.maxTails = tails
				const n = 15 // keys k0, k1, k2, five records each, the last of each key never lost
				for i := range n {
					key := fmt.Sprintf("k%d", i%3)
					cp.process(int32(i%2), key, int64(1000+i), tc.lose[i])
				}
				if tc.pendingLast {
					in := cp.opt.Inputs[0]
					off := cp.f.add(in.Topic, 0, []byte("orig"), []byte("k0|x"), 2000, kread.Committed)
					cp.f.group[kread.TP{Topic: in.Topic, Partition: 0}] = off + 1
					cp.f.add(in.RepartitionTopic, partitionFor([]byte("k0"), 2), []byte("k0"), []byte("k0|x"), 2000, kread.Committed)
					// A second tail record, so that one is too many to hold.
					off = cp.f.add(in.Topic, 1, []byte("orig"), []byte("k1|x"), 2001, kread.Committed)
					cp.f.group[kread.TP{Topic: in.Topic, Partition: 1}] = off + 1
					cp.f.add(in.RepartitionTopic, partitionFor([]byte("k1"), 2), []byte("k1"), []byte("k1|x"), 2001, kread.Committed)
				}
				res := cp.run(t)
				var got []string
				for _, r := range res.Rows {
					ev, _ := r.Evidence.(*finding.CountEvidence)
					if r.Kind != finding.Undercount || r.Stage != finding.StageCount || ev == nil {
						t.Fatalf("row %+v: want only undercounts", r)
					}
					got = append(got, fmt.Sprintf("%s: %d/%d", r.Key, ev.Count, ev.Processed))
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("undercounts %v, want %v", got, tc.want)
				}
				st := res.Summary.Stages[finding.StageCount]
				if st == nil || st.KeysChecked != 3 || st.Findings[finding.Undercount] != int64(len(tc.want)) {
					t.Errorf("count stage %+v, want 3 keys checked and %d undercounts", st, len(tc.want))
				}
				if c := res.Summary.Stages[finding.StageChangelog]; c.Findings[finding.Missing]+c.Findings[finding.Stale] != 0 {
					t.Errorf("changelog findings %+v: the newest update of every key reached it", c.Findings)
				}
			})
		}
	}
}

// TestRunCountWithoutCountFlag: the same lost updates pass the table rule
// (each key's newest update arrived): only the count rule sees them.
func TestRunCountWithoutCountFlag(t *testing.T) {
	cp := newCountPipeline(t)
	cp.opt.Inputs[0].Count = false
	for i := range 15 {
		cp.process(int32(i%2), fmt.Sprintf("k%d", i%3), int64(1000+i), i == 1)
	}
	res := cp.run(t)
	if len(res.Rows) != 0 || res.Summary.Stages[finding.StageCount] != nil {
		t.Fatalf("rows %v, count stage %+v: a reduce-like table rule cannot see a lost count update", rowsString(res.Rows), res.Summary.Stages[finding.StageCount])
	}
}

// TestStepRecount: reconcile steps recount a count from the processed
// records their state counted per key, so a lost update is an undercount
// in the step that reads it, as in a full audit; after an application
// reset (committed offsets moved back, the store counting again from
// zero while no step reads the old records again) the counts kept no
// longer bound the changelog's, and no step recounts until a new
// baseline, instead of reporting every reprocessed key short.
func TestStepRecount(t *testing.T) {
	cp := newCountPipeline(t)
	s := newStepper(t, cp.testPipeline)
	for i := range 6 {
		cp.process(int32(i%2), fmt.Sprintf("k%d", i%3), int64(1000+i), false)
	}
	if r := s.stepLikeAudit(t); len(r.Rows) != 0 {
		t.Fatalf("baseline rows %q, want none", rowsString(r.Rows))
	}
	cp.process(0, "k1", 1010, true) // lost: k1 counts 2 of 3
	cp.process(1, "k1", 1011, false)
	r := s.stepLikeAudit(t)
	if got := rowsString(r.Rows); len(r.Rows) != 1 || r.Rows[0].Kind != finding.Undercount ||
		r.Rows[0].Evidence.(*finding.CountEvidence).Lost() != 1 {
		t.Fatalf("step 2 rows %q, want k1's one lost update", got)
	}
	// The application is reset: offsets back to the start, a new store
	// counting from zero, reprocessing the first two records.
	in := cp.opt.Inputs[0]
	for p := range int32(2) {
		cp.f.group[kread.TP{Topic: in.Topic, Partition: p}] = 0
	}
	clear(cp.counts)
	for _, k := range []string{"k0", "k1"} {
		cp.counts[k]++
		cp.f.add(in.ChangelogTopic, partitionFor([]byte(k), 2), []byte(k), long(cp.counts[k]), 2000, kread.Committed)
	}
	for i := range 3 {
		r = s.step(t)
		for _, row := range r.Rows {
			if row.Kind == finding.Undercount {
				t.Errorf("step %d after the reset: %s %q reported, but the counts kept are void", s.n, row.Kind, row.Key)
			}
		}
		cp.process(int32(i%2), "k2", int64(3000+i), false)
	}
}
