package streams

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// groupByStepModel drives the fake table groupBy pipeline
// (groupByPipeline) one hop at a time, as Kafka Streams does: records are
// produced to the input; hop1 processes an input partition from the
// group's committed offset on (KTableSource keeps each key's last record,
// KTableRepartitionMap writes the Change copies to the repartition
// topic); hop2 processes a repartition partition from its committed
// offset on (the aggregation adds and subtracts, writing the group to its
// changelog and the output). Losses drop a copy at the first hop, an
// add's effect or an output write at the second.
type groupByStepModel struct {
	gp *groupByPipeline
	// copies are, per repartition partition and offset, what the copy
	// carries: its group, and whether it adds and subtracts.
	copies map[int32]map[int64]groupByCopy
}

type groupByCopy struct {
	group    string
	add, sub bool
}

func (m *groupByStepModel) produce(p int32, key string, ts int64, group string, tombstone, undecodable bool) {
	in := m.gp.opt.Inputs[0]
	var v []byte
	switch {
	case undecodable:
		v = []byte("!" + key)
	case !tombstone:
		v = []byte(group + "|" + key)
	}
	m.gp.f.add(in.Topic, p, []byte(key), v, ts, kread.Committed)
}

// hop1 processes input partition p from its committed offset (or its log
// start, past a purge) on; lostCopy names a key whose adds are never
// written to the repartition topic ("" for none).
func (m *groupByStepModel) hop1(p int32, lostCopy string) {
	in := m.gp.opt.Inputs[0]
	tp := kread.TP{Topic: in.Topic, Partition: p}
	part := m.gp.f.parts[in.Topic][p]
	for _, r := range part.recs[max(m.gp.f.group[tp], part.logStart):] {
		v := string(r.Value)
		if len(v) > 0 && v[0] == '!' {
			continue // undecodable: skipped (LogAndContinueExceptionHandler)
		}
		key := string(r.Key)
		tk := fmt.Sprintf("%d/%s", p, key)
		old, group := m.gp.table[tk], ""
		if r.Value != nil {
			group = v[:len(v)-len(key)-1]
		}
		m.gp.table[tk] = group
		var cs []groupByCopy
		switch {
		case old != "" && old == group:
			cs = append(cs, groupByCopy{group: group, add: true, sub: true})
		default:
			if old != "" {
				cs = append(cs, groupByCopy{group: old, sub: true})
			}
			if group != "" {
				cs = append(cs, groupByCopy{group: group, add: true})
			}
		}
		for _, c := range cs {
			if c.add && key == lostCopy {
				continue
			}
			var newV, oldV []byte
			if c.add {
				newV = r.Value
			}
			if c.sub {
				oldV = []byte(old + "|" + key)
			}
			rp := partitionFor([]byte(c.group), 2)
			off := m.gp.f.add(in.RepartitionTopic, rp, []byte(c.group), change(newV, oldV), r.Timestamp, kread.Committed)
			if m.copies[rp] == nil {
				m.copies[rp] = map[int64]groupByCopy{}
			}
			m.copies[rp][off] = c
		}
	}
	m.gp.f.group[tp] = int64(len(part.recs))
}

// hop2 processes repartition partition rp from its committed offset (or
// its log start) on; lostAgg names a group whose adds have no effect,
// lostOut one whose output writes are lost ("" for none).
func (m *groupByStepModel) hop2(rp int32, lostAgg, lostOut string) {
	in := m.gp.opt.Inputs[0]
	tp := kread.TP{Topic: in.RepartitionTopic, Partition: rp}
	part := m.gp.f.parts[in.RepartitionTopic][rp]
	for _, r := range part.recs[max(m.gp.f.group[tp], part.logStart):] {
		c := m.copies[rp][r.Offset]
		if c.add && c.group == lostAgg {
			continue
		}
		a, has := m.gp.agg[c.group]
		nts := r.Timestamp
		if has {
			nts = max(nts, a[1])
		}
		if c.sub && has {
			a[0]--
		}
		if c.add {
			a[0]++
		}
		a[1] = nts
		m.gp.agg[c.group] = a
		val := binary.BigEndian.AppendUint64(nil, uint64(a[0]))
		if m.gp.nullOnEmpty && a[0] <= 0 {
			delete(m.gp.agg, c.group) // the subtractor's null: a delete, and the group starts again
			val = nil
		}
		m.gp.f.add(in.ChangelogTopic, rp, []byte(c.group), val, nts, kread.Committed)
		if c.group != lostOut {
			m.gp.f.add("out", rp, []byte(c.group), val, nts, kread.Committed)
		}
	}
	m.gp.f.group[tp] = int64(len(part.recs))
}

// TestStepEqualsFullAuditOnAGrowingTableGroupBy is the equivalence
// property of reconcile steps on a table groupBy's aggregation
// (detect.GroupByLast): on a table whose input grows between steps
// (random keys moving between groups, out-of-order timestamps, deletes,
// null group keys, undecodable values, a key in both partitions at times),
// with lag at both hops, lost repartition copies, lost adds and lost
// output writes (missing and stale), aborted changelog writes, emptied
// groups deleted and restarting older (reduce, aggregate), a changelog
// partition stuck behind an open transaction (partial steps withholding
// rows), purges of every
// topic (the repartition topic's also past the committed offset,
// KAFKA-17635), and application resets (the input's committed offset
// moving back), every step's open findings, partition findings and
// counters equal a full audit's at the same moment, and the findings that
// disappear between two steps are exactly the step's resolved ones; the
// state holds the groups with open findings and nothing else. Seeds
// cycle through count, reduce and aggregate; odd ones end in the
// changelog alone.
func TestStepEqualsFullAuditOnAGrowingTableGroupBy(t *testing.T) {
	kinds := map[finding.Kind]int{}
	resolved, steps, partials := 0, 0, 0
	var withheld int64
	ops := []string{"table-count", "table-reduce", "table-aggregate"}
	for seed := uint64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 19))
			gp := newGroupByPipeline(t)
			gp.opt.Inputs[0].Operator = ops[seed%3]
			gp.nullOnEmpty = seed%3 != 0
			if seed%2 == 1 {
				gp.opt.Output = ""
			}
			m := &groupByStepModel{gp: gp, copies: map[int32]map[int64]groupByCopy{}}
			s := newStepper(t, gp.testPipeline)
			in := gp.opt.Inputs[0]
			group := func() string { return fmt.Sprintf("g%d", rng.IntN(5)) }
			ts := int64(1000)
			var prev []finding.Row
			partial := false
			for step := 0; step < 12; step++ {
				for p := range int32(2) {
					part := gp.f.parts[in.ChangelogTopic][p]
					part.lso = -1
					if rng.IntN(10) == 0 {
						// A transaction left open: the partition's LSO
						// stays here while the application writes on.
						part.lso = int64(len(part.recs))
					}
				}
				for range 1 + rng.IntN(15) {
					ts += int64(rng.IntN(30)) - 10 // out of order at times
					key := fmt.Sprintf("k%d", rng.IntN(8))
					g := group()
					if rng.IntN(10) == 0 {
						g = "" // a null group key
					}
					m.produce(partitionFor([]byte(key), 2)^int32(ts%7/6), key, ts, g, rng.IntN(6) == 0, rng.IntN(15) == 0)
				}
				for p := range int32(2) {
					if rng.IntN(4) > 0 {
						lost := ""
						if rng.IntN(8) == 0 {
							lost = fmt.Sprintf("k%d", rng.IntN(8))
						}
						m.hop1(p, lost)
					}
				}
				for rp := range int32(2) {
					if rng.IntN(4) > 0 {
						lostAgg, lostOut := "", ""
						if rng.IntN(4) == 0 {
							lostAgg = group()
						}
						if rng.IntN(6) == 0 {
							lostOut = group()
						}
						m.hop2(rp, lostAgg, lostOut)
					}
					if rng.IntN(10) == 0 {
						// An aborted write of a group, newer than anything.
						gp.f.add(in.ChangelogTopic, rp, []byte(group()), []byte{0, 0, 0, 0, 0, 0, 0, 1}, ts+50, kread.Aborted)
					}
				}
				for p := range int32(2) {
					if rng.IntN(10) == 0 {
						// An application reset: the input's committed
						// offset moves back, and the table is processed
						// again from there.
						tp := kread.TP{Topic: in.Topic, Partition: p}
						part := gp.f.parts[in.Topic][p]
						if c := gp.f.group[tp]; c > part.logStart {
							gp.f.group[tp] = part.logStart + rng.Int64N(c-part.logStart)
						}
					}
					for _, topic := range []string{in.Topic, in.ChangelogTopic, "out"} {
						if rng.IntN(8) == 0 {
							part := gp.f.parts[topic][p]
							part.logStart = max(part.logStart, min(int64(len(part.recs)), part.logStart+int64(rng.IntN(8))))
						}
					}
					rpart := gp.f.parts[in.RepartitionTopic][p]
					switch c := gp.f.group[kread.TP{Topic: in.RepartitionTopic, Partition: p}]; rng.IntN(12) {
					case 0, 1, 2:
						rpart.logStart = max(rpart.logStart, c) // purged up to the committed offset, as Kafka Streams does
					case 3:
						rpart.logStart = max(rpart.logStart, min(int64(len(rpart.recs)), c+1)) // past it (KAFKA-17635)
					}
				}
				res := s.stepLikeAudit(t)
				if !partial && !res.Summary.Partial {
					// A partial step withholds rows, neither open nor
					// resolved, until the partition settles.
					resolved += s.checkResolved(t, prev, res)
				}
				partial = res.Summary.Partial
				if partial {
					partials++
					withheld += res.Summary.Withheld
				}
				if !partial {
					// The state keeps the groups with open findings, and
					// nothing else (a partial step's also the withheld).
					groups, stored := map[string]bool{}, 0
					for _, r := range res.Rows {
						groups[string(r.Key)] = true
					}
					rd := s.st.NewReader()
					err := rd.Values(func(_, _ []byte) error { stored++; return nil })
					rd.Close()
					if err != nil || stored != len(groups) {
						t.Errorf("step %d: the state holds %d keys (%v), want the %d groups with open findings", s.n, stored, err, len(groups))
					}
				}
				prev = res.Rows
				steps++
				for _, r := range res.Rows {
					kinds[r.Kind]++
				}
			}
		})
	}
	t.Logf("%d steps (%d partial, %d rows withheld), findings over the steps: %v, %d resolved", steps, partials, withheld, kinds, resolved)
	if kinds[finding.Missing] == 0 || kinds[finding.Stale] == 0 || kinds[finding.Aborted] == 0 || resolved == 0 || withheld == 0 {
		t.Errorf("the seeds did not exercise missing, stale, aborted and resolutions: %v, %d resolved", kinds, resolved)
	}
}
