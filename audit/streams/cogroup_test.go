package streams

import (
	"context"
	"fmt"
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
