package streams

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// tableModel drives the fake table pipeline (tablePipeline) one partition
// at a time, as Kafka Streams does: records of input a are produced, then
// processed from the group's committed offset on (the table keeps each
// key's last record by offset, its changelog and the join's output get
// it), unless a loss drops a key's changelog (and output) write.
type tableModel struct{ tp *tablePipeline }

func (m *tableModel) produce(key string, ts int64, tombstone, undecodable bool) {
	in := m.tp.opt.Inputs[0]
	var v []byte
	switch {
	case undecodable:
		v = []byte("!" + key)
	case !tombstone:
		v = []byte(key + "|v")
	}
	m.tp.f.add(in.Topic, partitionFor([]byte(key), 2)^int32(ts%5/4), []byte(key), v, ts, kread.Committed)
}

// process processes input a's partition p from its committed offset on;
// lost names a key whose writes are lost ("" for none).
func (m *tableModel) process(p int32, lost string) {
	in := m.tp.opt.Inputs[0]
	tp := kread.TP{Topic: in.Topic, Partition: p}
	recs := m.tp.f.parts[in.Topic][p].recs
	for _, r := range recs[m.tp.f.group[tp]:] {
		if string(r.Key) == lost {
			continue
		}
		m.tp.f.add(in.ChangelogTopic, p, r.Key, r.Value, r.Timestamp, kread.Committed)
		m.tp.f.add("out", partitionFor(r.Key, 2), r.Key, r.Value, r.Timestamp, kread.Committed)
	}
	m.tp.f.group[tp] = int64(len(recs))
}

// TestStepEqualsFullAuditOnAGrowingTableSource is the equivalence property
// of reconcile steps on a table source (detect.TableLast): on a table whose
// input grows between steps (random keys, out-of-order timestamps,
// tombstones, undecodable values, keys in both partitions at times), with
// lag, lost changelog
// writes (missing and stale), application resets (the committed offset
// moving back), purges of the input and of the changelog,
// changelog-only records
// (a put of an earlier record's timestamp: stale with a witness; of no
// record's: not judged), every step's open findings, partition findings
// and counters equal a full audit's at the same moment, and the findings
// that disappear between two steps are exactly the step's resolved ones.
// Odd seeds audit the table alone (ending in its changelog), even ones
// left-joined into an output; every third seed has a window start.
func TestStepEqualsFullAuditOnAGrowingTableSource(t *testing.T) {
	kinds := map[finding.Kind]int{}
	resolved := 0
	for seed := uint64(1); seed <= 60; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 23))
			tp := newTablePipeline(t, false)
			if seed%2 == 1 {
				// The table alone, ending in its changelog.
				tp.opt.Inputs, tp.opt.Output, tp.opt.Join = tp.opt.Inputs[:1], "", ""
			}
			if seed%3 == 0 {
				tp.opt.From = time.UnixMilli(1060)
			}
			m := &tableModel{tp: tp}
			s := newStepper(t, tp.testPipeline)
			in := tp.opt.Inputs[0]
			ts := int64(1000)
			var prev []finding.Row
			for step := 0; step < 12; step++ {
				for range 1 + rng.IntN(20) {
					ts += int64(rng.IntN(30)) - 10 // out of order at times
					m.produce(fmt.Sprintf("k%d", rng.IntN(10)), ts, rng.IntN(6) == 0, rng.IntN(15) == 0)
				}
				for p := range int32(2) {
					lost := ""
					if rng.IntN(3) == 0 {
						lost = fmt.Sprintf("k%d", rng.IntN(10))
					}
					if rng.IntN(4) > 0 {
						m.process(p, lost)
					}
					if rng.IntN(6) == 0 {
						// A changelog-only put: an earlier record's
						// timestamp (stale, with a witness) or none's.
						recs := tp.f.parts[in.Topic][p].recs
						if len(recs) > 0 {
							r := recs[rng.IntN(len(recs))]
							cts := r.Timestamp
							if rng.IntN(3) == 0 {
								cts = 99999
							}
							tp.f.add(in.ChangelogTopic, p, r.Key, r.Value, cts, kread.Committed)
						}
					}
					if rng.IntN(10) == 0 {
						// An application reset: the committed offset moves
						// back, and those records are processed again.
						g := kread.TP{Topic: in.Topic, Partition: p}
						tp.f.group[g] = max(0, tp.f.group[g]-int64(rng.IntN(5)))
					}
					for _, topic := range []string{in.Topic, in.ChangelogTopic} {
						if rng.IntN(6) == 0 {
							part := tp.f.parts[topic][p]
							part.logStart = max(part.logStart, min(int64(len(part.recs)), part.logStart+int64(rng.IntN(8))))
						}
					}
				}
				res := s.stepLikeAudit(t)
				resolved += s.checkResolved(t, prev, res)
				prev = res.Rows
				for _, r := range res.Rows {
					kinds[r.Kind]++
				}
			}
		})
	}
	t.Logf("findings over the steps: %v, %d resolved", kinds, resolved)
	if kinds[finding.Missing] == 0 || kinds[finding.Stale] == 0 || resolved == 0 {
		t.Errorf("the seeds did not exercise missing, stale and resolutions: %v, %d resolved", kinds, resolved)
	}
}

// TestStepTableSourceDeadLetters: a table source's update the application
// dead-lettered is not owed at any later step either, though each step
// reads the input again and the dead-letter record only once.
func TestStepTableSourceDeadLetters(t *testing.T) {
	tp := newTablePipeline(t, false)
	tp.f.topic("app-dlq", 1)
	tp.opt.DeadLetterTopic = "app-dlq"
	s := newStepper(t, tp.testPipeline)
	tp.put(0, "k1", 900, "v1", false)
	off := tp.put(0, "k1", 100, "v2", true) // the application gave up on it
	tp.f.addDLQ("app-dlq", []byte("k1"), []byte("k1|v2"), 100, dlqHeaders(tp.opt.Inputs[0].Topic, 0, off, "java.lang.IllegalStateException"))
	for range 3 {
		if res := s.stepLikeAudit(t); len(res.Rows) != 0 {
			t.Fatalf("step %d: rows %q, want none", s.n, rowsString(res.Rows))
		}
		tp.put(1, "k2", 100, "v", false)
	}
}
