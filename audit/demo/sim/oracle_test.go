package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// oracleLog builds a one-partition log: input a holds the given records at
// offsets 0.., the group committed every input offset and nothing of the
// repartition topics.
func oracleLog(recs ...*inRec) *simLog {
	l := &simLog{in: [][][]*inRec{{nil}, {nil}, {nil}}}
	for x := 0; x < 3; x++ {
		l.rp[x] = [][]*rpRec{nil}
		l.inCommit[x] = []int64{-1}
		l.rpCommit[x] = []int64{-1}
		l.rpStart[x] = []int64{0}
	}
	for i, r := range recs {
		r.Off = int64(i)
		l.in[0][0] = append(l.in[0][0], r)
	}
	l.inCommit[0][0] = int64(len(recs))
	return l
}

func rec(key string, ts int64) *inRec {
	return &inRec{Key: key, TS: ts, FP: uint64(ts) * 31, Value: []byte{0}}
}

func kv(key string, ts int64, committed bool) *kvRec {
	return &kvRec{Key: key, TS: ts, Committed: committed}
}

// rowString renders a row compactly for comparison.
func rowString(r finding.Row) string {
	obs := "-"
	if r.HasObserved {
		obs = fmt.Sprint(r.ObservedTS)
	}
	return fmt.Sprintf("%s %s %s %s @%d exp=%d obs=%s %s", r.Stage, r.Kind, r.Input, r.Key, r.Offset, r.ExpectedTS, obs, witnessSig(r))
}

// TestOracleSemantics checks the oracle against the audit semantics of
// docs/checks.md ("Per key"), one rule per case.
func TestOracleSemantics(t *testing.T) {
	sc := Scenario{Partitions: 1, AppID: "app", TopicPrefix: "t", Output: "out"}
	n := newNames(sc)
	rp0 := n.repart[0]
	cases := []struct {
		name   string
		build  func() *simLog
		w      Window
		rows   []string
		counts finding.InputCounts
		parts  int
	}{
		{
			name: "pending at and above the committed offset, and without commit",
			build: func() *simLog {
				l := oracleLog(rec("k", 10), rec("k", 20))
				l.inCommit[0][0] = 1
				l.inCommit[1][0] = -1
				l.in[1][0] = []*inRec{rec("k", 5)}
				l.cl[0] = []*kvRec{kv("k", 10, true)}
				l.out = []*kvRec{kv("k", 10, true)}
				return l
			},
			counts: finding.InputCounts{Scanned: 2, Audited: 1, Pending: 1},
		},
		{
			name: "dropped by design in precedence order",
			build: func() *simLog {
				nv := &inRec{Key: "", KeyNil: true, NullValue: true, TS: 1}
				bad := &inRec{Key: "x", Corrupt: true, TS: 1, Value: []byte{0}}
				nk := &inRec{KeyNil: true, TS: 1, Value: []byte{0}}
				return oracleLog(nv, bad, nk)
			},
			counts: finding.InputCounts{Scanned: 3, NullValue: 1, DecodeErrors: 1, NullKey: 1},
		},
		{
			name: "a copy in the unprocessed repartition tail is pending; an aborted copy is not",
			build: func() *simLog {
				a, b := rec("k", 10), rec("j", 11)
				l := oracleLog(a, b)
				l.rp[0][0] = []*rpRec{
					{Off: 0, Key: "k", TS: 10, FP: a.FP, Committed: true},
					{Off: 1, Key: "j", TS: 11, FP: b.FP, Committed: false},
				}
				return l
			},
			rows:   []string{"changelog missing a j @1 exp=11 obs=- repartition purged or not readable"},
			counts: finding.InputCounts{Scanned: 2, Audited: 1, Pending: 1},
		},
		{
			name: "lost before the store: seen in the repartition topic, or purged",
			build: func() *simLog {
				a, b := rec("k", 10), rec("j", 11)
				l := oracleLog(a, b)
				l.rp[0][0] = []*rpRec{
					{Off: 3, Key: "k", TS: 10, FP: a.FP, Committed: true},
					{Off: 4, Key: "j", TS: 11, FP: b.FP, Committed: true},
				}
				l.rpCommit[0][0] = 6
				l.rpStart[0][0] = 4
				l.cl[0] = []*kvRec{kv("j", 9, true)}
				return l
			},
			rows: []string{
				"changelog stale a j @1 exp=11 obs=9 " + detailSeen(rp0, 0, 4),
				"changelog missing a k @0 exp=10 obs=- repartition purged or not readable",
			},
			counts: finding.InputCounts{Scanned: 2, Audited: 2},
		},
		{
			name: "aborted only when the aborted record is at least as new",
			build: func() *simLog {
				l := oracleLog(rec("k", 10), rec("j", 10), rec("m", 10), rec("q", 10))
				l.cl[0] = []*kvRec{kv("k", 10, false), kv("j", 9, false), kv("m", 8, true), kv("m", 10, false), kv("q", 12, true), kv("q", 20, false)}
				return l
			},
			rows: []string{
				"changelog missing a j @1 exp=10 obs=- repartition purged or not readable",
				"changelog aborted a k @0 exp=10 obs=- repartition purged or not readable",
				"changelog aborted a m @2 exp=10 obs=8 repartition purged or not readable",
				"output missing a q @3 exp=10 obs=- ",
			},
			counts: finding.InputCounts{Scanned: 4, Audited: 4},
		},
		{
			name: "evidence is the newest by (ts, partition, offset); equal timestamps pass",
			build: func() *simLog {
				l := oracleLog(rec("k", 30), rec("k", 10), rec("k", 30))
				l.cl[0] = []*kvRec{kv("k", 30, true)}
				l.out = []*kvRec{kv("k", 20, true), kv("k", 40, false)}
				return l
			},
			rows:   []string{"output aborted a k @2 exp=30 obs=20 "},
			counts: finding.InputCounts{Scanned: 3, Audited: 3},
		},
		{
			name: "output checked only for keys in the left table (newest a changelog record not a tombstone)",
			build: func() *simLog {
				l := oracleLog(rec("gone", 10))
				l.in[1][0] = []*inRec{rec("gone", 5), rec("right", 7)}
				l.in[1][0][1].Off = 1
				l.inCommit[1][0] = 2
				l.cl[0] = []*kvRec{kv("gone", 10, true), {Key: "gone", TS: 10, Off: 5, Tomb: true, Committed: true}}
				l.cl[0][0].Off = 4
				l.cl[1] = []*kvRec{kv("gone", 5, true), kv("right", 7, true)}
				return l
			},
			counts: finding.InputCounts{Scanned: 1, Audited: 1},
		},
		{
			name: "window: records before the start offset unread, others outside the window counted",
			build: func() *simLog {
				l := oracleLog(rec("k", 5), rec("k", 100), rec("k", 50), rec("k", 300))
				l.cl[0] = []*kvRec{kv("k", 90, true)}
				return l
			},
			w:      Window{From: 60, To: 200},
			rows:   []string{"changelog stale a k @1 exp=100 obs=90 repartition purged or not readable"},
			counts: finding.InputCounts{Scanned: 3, Audited: 1, OutsideWindow: 2},
		},
		{
			name: "purged past the committed offset",
			build: func() *simLog {
				l := oracleLog()
				l.rpCommit[2][0] = 7
				l.rpStart[2][0] = 9
				return l
			},
			parts: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exp := oracle(sc, n, c.build(), c.w)
			var got []string
			for _, r := range exp.Rows {
				got = append(got, rowString(r))
			}
			if strings.Join(got, "\n") != strings.Join(c.rows, "\n") {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.rows, "\n"))
			}
			if !reflect.DeepEqual(exp.Counts["a"], c.counts) {
				t.Errorf("counts of a %+v, want %+v", exp.Counts["a"], c.counts)
			}
			if len(exp.Partitions) != c.parts {
				t.Errorf("partition findings %+v, want %d", exp.Partitions, c.parts)
			}
		})
	}
}
