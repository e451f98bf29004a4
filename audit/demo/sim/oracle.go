package sim

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// Window bounds the audited input records by timestamp (unix ms); a zero
// bound is unbounded. It mirrors config.Window for the oracle.
type Window struct {
	From, To int64
}

// Expectation is what a correct audit of the simulated cluster reports.
type Expectation struct {
	// Rows are the per-(input, key) findings, sorted by stage, input
	// (join order), key.
	Rows []finding.Row
	// Partitions are the partition-level findings, sorted by topic and
	// partition.
	Partitions []finding.PartitionFinding
	// Counts are the per-input counters, by input name.
	Counts map[string]finding.InputCounts
	// Partial is set when a stuck_lso finding withheld rows.
	Partial bool
}

// detailPurged and detailSeen render a changelog row's witness for
// comparisons and test failures (witnessSig).
const detailPurged = "repartition purged or not readable"

func detailSeen(topic string, p int32, off int64) string {
	return fmt.Sprintf("seen in repartition topic %s[%d]@%d, lost before the store", topic, p, off)
}

// witnessSig renders what a row says about the repartition copy of its
// lost update: "" for rows without a witness (output rows).
func witnessSig(r finding.Row) string {
	switch w := r.Witness; {
	case w == nil:
		return ""
	case w.Seen:
		return detailSeen(w.Topic, w.Partition, w.Offset)
	}
	return detailPurged
}

// oracle implements the audit semantics of docs/checks.md directly over the
// simulator's own record of what it produced, processed and wrote
// (committed or aborted), never over the topics. It assumes every
// transaction has ended (LSO = high watermark everywhere), as it has when
// Run returns, except the open transactions of Faults.HangingTxns: those
// output partitions get a stuck_lso finding and the output-stage rows of
// their keys are withheld (changelog rows do not depend on them). Input
// topics hold only non-transactional records. A repartition partition
// without a committed offset has its whole readable log as tail.
//
// With a window, the inputs are read from the first offset whose timestamp
// is >= From (records before it are not scanned at all), as the audit does
// with OffsetsForTime; downstream topics are considered whole.
func oracle(sc Scenario, n names, l *simLog, w Window) Expectation {
	exp := Expectation{Counts: map[string]finding.InputCounts{}}
	type key struct {
		x int
		k string
	}
	evidence := map[key]*inRec{}
	// Readable unprocessed tail of every repartition partition:
	// (key, ts, fp) of committed records in [max(commit, logStart), end).
	type sig struct {
		k  string
		ts int64
		fp uint64
	}
	tail := [3][]map[sig]bool{}
	for x := 0; x < 3; x++ {
		tail[x] = make([]map[sig]bool, sc.Partitions)
		for p := range tail[x] {
			tail[x][p] = map[sig]bool{}
			from := l.rpCommit[x][p]
			if from < l.rpStart[x][p] {
				from = l.rpStart[x][p]
			}
			for _, r := range l.rp[x][p] {
				if r.Committed && r.Off >= from {
					tail[x][p][sig{r.Key, r.TS, r.FP}] = true
				}
			}
		}
	}
	for x := 0; x < 3; x++ {
		var c finding.InputCounts
		for p := 0; p < sc.Partitions; p++ {
			recs := l.inputs(x, p)
			start := 0
			if w.From != 0 {
				start = len(recs)
				for i, r := range recs {
					if r.TS >= w.From {
						start = i
						break
					}
				}
			}
			commit := l.inCommit[x][p]
			for _, r := range recs[start:] {
				if r.Aborted {
					continue // not read with read_committed
				}
				c.Scanned++
				switch {
				case (w.From != 0 && r.TS < w.From) || (w.To != 0 && r.TS > w.To):
					c.OutsideWindow++
				case commit < 0 || r.Off >= commit:
					c.Pending++
				case r.NullValue:
					c.NullValue++
				case r.Corrupt:
					c.DecodeErrors++
				case r.KeyNil:
					c.NullKey++
				case tail[x][partitionFor([]byte(r.Key), sc.Partitions)][sig{r.Key, r.TS, r.FP}]:
					c.Pending++
				default:
					c.Audited++
					k := key{x, r.Key}
					if e := evidence[k]; e == nil || r.TS > e.TS || (r.TS == e.TS && (r.P > e.P || (r.P == e.P && r.Off > e.Off))) {
						evidence[k] = r
					}
				}
			}
		}
		exp.Counts[inputName(x)] = c
	}
	// Newest committed/aborted timestamps per key downstream.
	type tsPair struct {
		c, ab       int64
		hasC, hasAb bool
	}
	summarize := func(recs []*kvRec) map[string]*tsPair {
		m := map[string]*tsPair{}
		for _, r := range recs {
			if r.Open {
				continue // above the LSO: not read
			}
			t := m[r.Key]
			if t == nil {
				t = &tsPair{}
				m[r.Key] = t
			}
			if r.Committed {
				if !t.hasC || r.TS > t.c {
					t.c, t.hasC = r.TS, true
				}
			} else if !t.hasAb || r.TS > t.ab {
				t.ab, t.hasAb = r.TS, true
			}
		}
		return m
	}
	var cl [3]map[string]*tsPair
	for x := 0; x < 3; x++ {
		cl[x] = summarize(l.cl[x])
	}
	out := summarize(l.out)
	// The left table: keys whose newest committed changelog record of input
	// a (highest offset) is a value, not a tombstone.
	leftNewest := map[string]*kvRec{}
	for _, r := range l.cl[0] {
		if r.Committed {
			if o := leftNewest[r.Key]; o == nil || r.Off > o.Off {
				leftNewest[r.Key] = r
			}
		}
	}
	stuck := map[int32]bool{}
	for _, h := range l.hangs {
		stuck[h.p] = true
		exp.Partial = true
		exp.Partitions = append(exp.Partitions, finding.PartitionFinding{
			Kind: finding.StuckLSO, Topic: n.output, Partition: h.p,
			Stuck: &finding.StuckEvidence{LSO: h.lso, HighWatermark: h.hw},
		})
	}
	judge := func(t *tsPair, e int64) (finding.Kind, bool, int64, bool) {
		switch {
		case t == nil || !t.hasC:
			if t != nil && t.hasAb && t.ab >= e {
				return finding.Aborted, false, 0, true
			}
			return finding.Missing, false, 0, true
		case t.c < e:
			if t.hasAb && t.ab >= e {
				return finding.Aborted, true, t.c, true
			}
			return finding.Stale, true, t.c, true
		}
		return "", true, t.c, false
	}
	for k, ev := range evidence {
		e := ev.TS
		row := finding.Row{Input: inputName(k.x), Key: []byte(k.k), Topic: n.inputs[k.x], Partition: ev.P,
			Offset: ev.Off, Timestamp: ev.TS, ExpectedTS: e}
		if kind, has, obs, bad := judge(cl[k.x][k.k], e); bad {
			row.Kind, row.Stage, row.HasObserved, row.ObservedTS = kind, finding.StageChangelog, has, obs
			row.Witness = &finding.Witness{Topic: n.repart[k.x]}
			p := partitionFor([]byte(k.k), sc.Partitions)
			commit := l.rpCommit[k.x][p]
			for _, r := range l.rp[k.x][p] {
				if r.Committed && r.Off >= l.rpStart[k.x][p] && r.Off < commit && r.Key == k.k && r.TS == ev.TS && r.FP == ev.FP {
					row.Witness = &finding.Witness{Topic: n.repart[k.x], Seen: true, Partition: p, Offset: r.Off}
					break
				}
			}
			exp.Rows = append(exp.Rows, row)
			continue
		}
		if ln := leftNewest[k.k]; ln == nil || ln.Tomb {
			continue
		}
		if stuck[partitionFor([]byte(k.k), sc.Partitions)] {
			continue // withheld: the output partition's LSO is stuck
		}
		if kind, has, obs, bad := judge(out[k.k], e); bad {
			row.Kind, row.Stage, row.HasObserved, row.ObservedTS = kind, finding.StageOutput, has, obs
			exp.Rows = append(exp.Rows, row)
		}
	}
	SortRows(exp.Rows)
	// Poison pills: the application (stopped when the audit runs) left its
	// committed offset at an undecodable record. Unwindowed audits only.
	for x := 0; x < 3 && w.From == 0; x++ {
		for p := 0; p < sc.Partitions; p++ {
			commit := l.inCommit[x][p]
			if commit < 0 {
				continue
			}
			for _, r := range l.inputs(x, p) {
				if r.Aborted || r.Off < commit {
					continue
				}
				if r.Corrupt {
					exp.Partitions = append(exp.Partitions, finding.PartitionFinding{
						Kind: finding.PoisonPill, Topic: n.inputs[x], Partition: int32(p),
						Poison: &finding.PoisonEvidence{Offset: r.Off},
					})
				}
				break
			}
		}
	}
	for x := 0; x < 3; x++ {
		for p := 0; p < sc.Partitions; p++ {
			ls, c := l.rpStart[x][p], l.rpCommit[x][p]
			if ls > c && ls > 0 {
				exp.Partitions = append(exp.Partitions, finding.PartitionFinding{
					Kind: finding.PurgedPastCommit, Topic: n.repart[x], Partition: int32(p),
					Purge: &finding.PurgeEvidence{LogStart: ls, Committed: c},
				})
			}
		}
	}
	sort.Slice(exp.Partitions, func(i, j int) bool {
		a, b := exp.Partitions[i], exp.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return exp
}

// SortRows sorts rows the way the loss report does: by stage, input name,
// key bytes.
func SortRows(rows []finding.Row) {
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Stage != b.Stage {
			return a.Stage.Order() < b.Stage.Order()
		}
		if a.Input != b.Input {
			return a.Input < b.Input
		}
		return bytes.Compare(a.Key, b.Key) < 0
	})
}
