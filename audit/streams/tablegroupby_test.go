package streams

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/kread"
)

// groupByPipeline is input a read by a table source, grouped by the group
// key its value names ("group|payload") and counted: the application is
// simulated as KTableSource, KTableRepartitionMap and KTableAggregate with
// count's adder and subtractor (detect.GroupByLast states the rule), or,
// with nullOnEmpty, an aggregate whose subtractor returns null when it
// removes the group's last member (a tombstone; the next add starts the
// group again at its record's own timestamp).
type groupByPipeline struct {
	*testPipeline
	// table is the source table per partition and key: the group of its
	// value ("" for none); agg the count and its timestamp per group.
	table       map[string]string
	agg         map[string][2]int64
	nullOnEmpty bool
}

func newGroupByPipeline(t *testing.T) *groupByPipeline {
	tp := newTestPipeline(t)
	tp.opt.Inputs = tp.opt.Inputs[:1]
	tp.opt.Inputs[0].GroupBy = true
	return &groupByPipeline{testPipeline: tp, table: map[string]string{}, agg: map[string][2]int64{}}
}

// change encodes a Change as ChangedSerializer does.
func change(newV, oldV []byte) []byte {
	switch {
	case newV != nil && oldV != nil:
		b := binary.AppendVarint(nil, int64(len(newV)))
		return append(append(append(b, newV...), oldV...), 2)
	case newV != nil:
		return append(append([]byte{}, newV...), 1)
	}
	return append(append([]byte{}, oldV...), 0)
}

// The ways an update goes missing.
const (
	kept    = iota
	lostAgg // the count never applies the update's add (its copy processed, its effect lost)
	inTail  // the add's copy waits in the repartition topic's unprocessed tail
	lostOut // the count's update never reaches the output
)

// put is the application processing one record of the input at partition
// p: group "" is a null group key, tombstone a delete.
func (gp *groupByPipeline) put(p int32, key string, ts int64, group string, tombstone bool, how int) int64 {
	in := gp.opt.Inputs[0]
	var v []byte
	if !tombstone {
		v = []byte(group + "|" + key)
	}
	off := gp.f.add(in.Topic, p, []byte(key), v, ts, kread.Committed)
	gp.f.group[kread.TP{Topic: in.Topic, Partition: p}] = off + 1
	tk := fmt.Sprintf("%d/%s", p, key)
	old := gp.table[tk]
	gp.table[tk] = ""
	if !tombstone {
		gp.table[tk] = group
	}
	type cp struct {
		g          string
		newV, oldV []byte
	}
	var copies []cp
	switch {
	case old != "" && group != "" && !tombstone && old == group:
		copies = append(copies, cp{group, v, []byte(old + "|" + key)})
	default:
		if old != "" {
			copies = append(copies, cp{old, nil, []byte(old + "|" + key)})
		}
		if group != "" && !tombstone {
			copies = append(copies, cp{group, v, nil})
		}
	}
	for _, c := range copies {
		rp := partitionFor([]byte(c.g), 2)
		roff := gp.f.add(in.RepartitionTopic, rp, []byte(c.g), change(c.newV, c.oldV), ts, kread.Committed)
		add := c.newV != nil
		if add && how == inTail {
			continue // not processed: the group's offset stays below it
		}
		gp.f.group[kread.TP{Topic: in.RepartitionTopic, Partition: rp}] = roff + 1
		if add && how == lostAgg {
			continue
		}
		a, has := gp.agg[c.g]
		nts := ts
		if has {
			nts = max(ts, a[1])
		}
		if c.oldV != nil && has {
			a[0]--
		}
		if add {
			a[0]++
		}
		a[1] = nts
		gp.agg[c.g] = a
		var cnt [8]byte
		binary.BigEndian.PutUint64(cnt[:], uint64(a[0]))
		val := cnt[:]
		if gp.nullOnEmpty && a[0] == 0 {
			delete(gp.agg, c.g) // the subtractor's null: a delete at nts
			val = nil
		}
		gp.f.add(in.ChangelogTopic, rp, []byte(c.g), val, nts, kread.Committed)
		if how != lostOut {
			gp.f.add("out", rp, []byte(c.g), val, nts, kread.Committed)
		}
	}
	return off
}

// TestRunTableGroupBy: a table groupBy's count is judged per group key
// against each input key's last processed record by offset: an update
// moving a key to another group owes the new group only, a delete owes
// nothing, an out-of-order update is owed as it is, and an add still in
// the repartition tail is pending.
func TestRunTableGroupBy(t *testing.T) {
	cases := []struct {
		name   string
		load   func(gp *groupByPipeline) []string // the rows expected
		counts string
		// nullOnEmpty: an aggregate whose subtractor returns null for an
		// emptied group (table-aggregate, table-reduce)
		nullOnEmpty bool
	}{
		{name: "clean, keys moving between groups, out of order", load: func(gp *groupByPipeline) []string {
			for i := range 40 {
				gp.put(int32(i%2), fmt.Sprintf("k%d", i%5), int64(5000-37*i), fmt.Sprintf("g%d", i%3), i%11 == 10, kept)
			}
			return nil
		}},
		{name: "a key moved, its new group's add lost", load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 100, "g1", false, kept)
			off := gp.put(0, "k1", 200, "g2", false, lostAgg)
			return []string{fmt.Sprintf("missing changelog a g2 inA[0]@%d", off)}
		}, counts: "1 audited, 2 scanned"},
		{name: "a key moved back and forth: only its last group is owed", load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 100, "g1", false, kept)
			gp.put(0, "k1", 200, "g2", false, lostAgg) // coalesced away by a cache, as far as the audit knows
			gp.put(0, "k1", 300, "g1", false, kept)
			return nil
		}},
		{name: "an update lost in a group that holds others", load: func(gp *groupByPipeline) []string {
			gp.put(1, "k2", 100, "g1", false, kept)
			off := gp.put(0, "k1", 300, "g1", false, lostAgg)
			return []string{fmt.Sprintf("stale changelog a g1 inA[0]@%d", off)}
		}},
		{name: "a delete owes nothing, even lost", load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 100, "g1", false, kept)
			gp.put(0, "k1", 200, "", true, lostAgg)
			return nil
		}, counts: "0 audited, 2 scanned"},
		{name: "out of order: the older last update is owed", load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 900, "g1", false, kept)
			off := gp.put(0, "k1", 100, "g2", false, lostAgg)
			return []string{fmt.Sprintf("missing changelog a g2 inA[0]@%d", off)}
		}},
		{name: "out of order within one group: satisfied by the maximum", load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 900, "g1", false, kept)
			gp.put(0, "k1", 100, "g1", false, kept)
			return nil
		}},
		{name: "a null group key owes nothing", load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 100, "g1", false, kept)
			gp.put(0, "k1", 200, "", false, kept)
			return nil
		}},
		{name: "an add still in the repartition tail is pending", load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 100, "g1", false, kept)
			gp.put(0, "k1", 200, "g3", false, inTail)
			return nil
		}, counts: "0 audited, 2 scanned"},
		{name: "a lost output", load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 100, "g1", false, kept)
			off := gp.put(0, "k2", 200, "g1", false, lostOut)
			return []string{fmt.Sprintf("stale output a g1 inA[0]@%d", off)}
		}},
		{name: "aggregate: an emptied group restarts older, owing its new member its own timestamp only", nullOnEmpty: true, load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 900, "g1", false, kept)
			gp.put(0, "k1", 950, "g2", false, kept) // g1 emptied: a tombstone at 950
			gp.put(1, "k2", 100, "g1", false, kept) // g1 again, at 100
			gp.put(1, "k3", 50, "g3", false, kept)
			gp.put(1, "k3", 60, "", true, kept) // g3 emptied by a delete
			return nil
		}},
		{name: "aggregate: clean, keys moving between groups and emptying them, out of order", nullOnEmpty: true, load: func(gp *groupByPipeline) []string {
			for i := range 40 {
				gp.put(int32(i%2), fmt.Sprintf("k%d", i%5), int64(5000-37*i), fmt.Sprintf("g%d", i%7), i%11 == 10, kept)
			}
			return nil
		}},
		{name: "aggregate: an update lost in a group that holds others", nullOnEmpty: true, load: func(gp *groupByPipeline) []string {
			gp.put(1, "k2", 100, "g1", false, kept)
			off := gp.put(0, "k1", 300, "g1", false, lostAgg)
			return []string{fmt.Sprintf("stale changelog a g1 inA[0]@%d", off)}
		}},
		{name: "aggregate: an add lost into a group deleted earlier at a newer timestamp is not seen", nullOnEmpty: true, load: func(gp *groupByPipeline) []string {
			gp.put(0, "k1", 900, "g1", false, kept)
			gp.put(0, "k1", 950, "g2", false, kept)    // g1's tombstone at 950
			gp.put(1, "k2", 100, "g1", false, lostAgg) // lost, but the tombstone is newer: the blind spot topology.md states
			return nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gp := newGroupByPipeline(t)
			gp.nullOnEmpty = tc.nullOnEmpty
			want := tc.load(gp)
			res := gp.run(t)
			if got := rowsString(res.Rows); strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Fatalf("rows %q, want %q", got, want)
			}
			if len(res.Summary.Partitions) != 0 {
				t.Errorf("partitions %+v", res.Summary.Partitions)
			}
			if a := res.Summary.Inputs["a"]; tc.counts != "" && fmt.Sprintf("%d audited, %d scanned", a.Audited, a.Scanned) != tc.counts {
				t.Errorf("input a counts %+v, want %s", *a, tc.counts)
			}
		})
	}
}

// TestTableGroupByRefusals: what the check cannot do stops the audit.
func TestTableGroupByRefusals(t *testing.T) {
	gp := newGroupByPipeline(t)
	gp.opt.DeadLetterTopic = "dlq"
	if _, err := gp.opt.withDefaults(); err == nil || !strings.Contains(err.Error(), "dead-letter") {
		t.Errorf("dead-letter queue: %v", err)
	}
	gp = newGroupByPipeline(t)
	gp.opt.Inputs = append(gp.opt.Inputs, gp.opt.Inputs[0])
	gp.opt.Inputs[1].GroupBy = false
	gp.opt.Join = "left"
	if _, err := gp.opt.withDefaults(); err == nil || !strings.Contains(err.Error(), "audited alone") {
		t.Errorf("joined: %v", err)
	}
}
