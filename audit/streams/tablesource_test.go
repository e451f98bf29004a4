package streams

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// tablePipeline is input a read by a table source (no repartition topic;
// its table keeps each key's last record by offset), left-joined with the
// reduce of input b, over the fake.
type tablePipeline struct{ *testPipeline }

func newTablePipeline(t *testing.T, sourceTopicChangelog bool) *tablePipeline {
	tp := newTestPipeline(t)
	a := &tp.opt.Inputs[0]
	a.Table, a.RepartitionTopic = true, ""
	if sourceTopicChangelog {
		a.ChangelogTopic = ""
	}
	tp.opt.Join = "left"
	return &tablePipeline{tp}
}

// put is the application processing one record of the table's input at
// partition p: unless lose, the store keeps it whatever its timestamp, and
// the changelog and the output (the join result) get it.
func (tp *tablePipeline) put(p int32, key string, ts int64, payload string, lose bool) int64 {
	in := tp.opt.Inputs[0]
	var v []byte
	if payload != "" {
		v = []byte(key + "|" + payload)
	}
	off := tp.f.add(in.Topic, p, []byte(key), v, ts, kread.Committed)
	tp.f.group[kread.TP{Topic: in.Topic, Partition: p}] = off + 1
	if !lose {
		if in.ChangelogTopic != "" {
			tp.f.add(in.ChangelogTopic, p, []byte(key), v, ts, kread.Committed)
		}
		tp.f.add("out", partitionFor([]byte(key), 2), []byte(key), v, ts, kread.Committed)
	}
	return off
}

// TestRunTableSource: the table of a table source is judged by each key's
// last record by offset (detect.TableLast), not by the newest timestamp.
func TestRunTableSource(t *testing.T) {
	cases := []struct {
		name   string
		noCL   bool
		load   func(tp *tablePipeline) []string // the rows expected
		counts string
	}{
		{name: "out-of-order updates, clean", load: func(tp *tablePipeline) []string {
			for i := range 20 {
				tp.put(int32(i%2), fmt.Sprintf("k%d", i%4), int64(5000-100*i), "v", false) // every update older than the last
			}
			return nil
		}},
		{name: "the last update of k1 lost", load: func(tp *tablePipeline) []string {
			tp.put(0, "k1", 900, "v1", false)
			off := tp.put(0, "k1", 100, "v2", true) // older, and lost: the table keeps 900
			tp.put(1, "k2", 100, "v1", false)
			return []string{fmt.Sprintf("stale changelog a k1 inA[0]@%d", off)}
		}},
		{name: "a delete lost", load: func(tp *tablePipeline) []string {
			tp.put(0, "k1", 100, "v1", false)
			off := tp.put(0, "k1", 200, "", true)
			return []string{fmt.Sprintf("stale changelog a k1 inA[0]@%d", off)}
		}},
		{name: "a delete kept, its tombstone compacted", load: func(tp *tablePipeline) []string {
			tp.put(0, "k1", 100, "", true)
			return nil
		}},
		{name: "the application's own timestamps: not judged", load: func(tp *tablePipeline) []string {
			// A timestamp extractor the audit does not know: every put
			// carries another timestamp than its record's.
			in := tp.opt.Inputs[0]
			for i := range 4 {
				off := tp.f.add(in.Topic, 0, []byte("k1"), []byte("k1|v"), int64(100+i), kread.Committed)
				tp.f.group[kread.TP{Topic: in.Topic, Partition: 0}] = off + 1
				tp.f.add(in.ChangelogTopic, 0, []byte("k1"), []byte("k1|v"), int64(5000+i), kread.Committed)
				tp.f.add("out", 0, []byte("k1"), []byte("k1|v"), int64(5000+i), kread.Committed)
			}
			return nil
		}},
		{name: "a dead-lettered update is not owed", load: func(tp *tablePipeline) []string {
			tp.f.topic("app-dlq", 1)
			tp.opt.DeadLetterTopic = "app-dlq"
			tp.put(0, "k1", 900, "v1", false)
			off := tp.put(0, "k1", 100, "v2", true) // the application gave up on it
			tp.f.addDLQ("app-dlq", []byte("k1"), []byte("k1|v2"), 100, dlqHeaders(tp.opt.Inputs[0].Topic, 0, off, "java.lang.IllegalStateException"))
			return nil
		}},
		{name: "the first update lost", load: func(tp *tablePipeline) []string {
			off := tp.put(1, "k3", 100, "v1", true)
			return []string{fmt.Sprintf("missing changelog a k3 inA[1]@%d", off)}
		}},
		{name: "processed while the audit ran", load: func(tp *tablePipeline) []string {
			tp.put(0, "k1", 900, "v1", false)
			done := false
			tp.f.beforeRead = func(topic string) {
				// Between the snapshot's halves: an older update of k1 is
				// written, processed and committed to the changelog after
				// the input's bounds were read.
				if topic == "app-repB-repartition" && !done {
					done = true
					in := tp.opt.Inputs[0]
					tp.f.add(in.Topic, 0, []byte("k1"), []byte("k1|v2"), 50, kread.Committed)
					tp.f.add(in.ChangelogTopic, 0, []byte("k1"), []byte("k1|v2"), 50, kread.Committed)
				}
			}
			tp.process(1, 0, "k1", 10, "b", false, true)
			return nil
		}, counts: "1 audited, 1 scanned"},
		{name: "source-topic changelog: the output only", noCL: true, load: func(tp *tablePipeline) []string {
			tp.put(0, "k1", 900, "v1", false)
			tp.put(0, "k1", 100, "v2", true) // the output holds k1 at 900 already: nothing newer is owed
			off := tp.put(1, "k5", 100, "v1", true)
			return []string{fmt.Sprintf("missing output a k5 inA[1]@%d", off)}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := newTablePipeline(t, tc.noCL)
			want := tc.load(tp)
			res := tp.run(t)
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

// TestRunTableSourcePoisonPill: the record a stopped application would read
// next on a table source's partition is checked like any input's: one that
// does not decode is a poison_pill.
func TestRunTableSourcePoisonPill(t *testing.T) {
	tp := newTablePipeline(t, false)
	tp.put(0, "k1", 100, "v1", false)
	in := tp.opt.Inputs[0]
	bad := tp.f.add(in.Topic, 0, []byte("k1"), []byte("!undecodable"), 200, kread.Committed) // not processed: the group waits at it
	tp.f.add(in.Topic, 0, nil, []byte("k1|v"), 300, kread.Committed)
	res := tp.run(t)
	if len(res.Rows) != 0 || len(res.Summary.Partitions) != 1 {
		t.Fatalf("rows %q, partitions %+v; want one poison_pill", rowsString(res.Rows), res.Summary.Partitions)
	}
	p := res.Summary.Partitions[0]
	if ev, _ := p.Evidence.(*finding.PoisonEvidence); p.Topic != in.Topic || p.Partition != 0 || ev == nil || ev.Offset != bad {
		t.Errorf("partition finding %+v (%+v), want a poison_pill at %s[0]@%d", p, p.Evidence, in.Topic, bad)
	}
}
