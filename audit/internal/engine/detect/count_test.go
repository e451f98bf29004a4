package detect

import (
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestUndercount(t *testing.T) {
	count := func(n int64) StageState { return StageState{Has: true, TS: 10, HasCount: true, Count: n} }
	cases := []struct {
		name                string
		st                  StageState
		processed           int64
		lost                int64
		checked, undercount bool
	}{
		{"exact", count(5), 5, 0, true, false},
		{"higher: duplicates, not loss", count(7), 5, 0, true, false},
		{"two lost", count(3), 5, 2, true, true},
		{"all but one lost", count(1), 5, 4, true, true},
		{"absent: the table rule reports it", StageState{}, 5, 0, false, false},
		{"tombstone", StageState{Has: true, Tombstone: true}, 5, 0, false, false},
		{"not a Long", StageState{Has: true, TS: 10}, 5, 0, false, false},
		{"nothing processed", count(0), 0, 0, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lost, checked, bad := Undercount(tc.st, tc.processed)
			if lost != tc.lost || checked != tc.checked || bad != tc.undercount {
				t.Errorf("Undercount(%+v, %d) = %d, %v, %v; want %d, %v, %v", tc.st, tc.processed, lost, checked, bad, tc.lost, tc.checked, tc.undercount)
			}
		})
	}
}

// TestCountNewestRecord: the count is the newest committed record's; a
// newer record that is no count (a tombstone) clears it.
func TestCountNewestRecord(t *testing.T) {
	e := NewKeyEvidence(1)
	e.Reset([]byte("k"))
	e.AddChangelogCount(0, 0, 10, 4, 3)
	e.AddChangelogCount(0, 0, 9, 2, 2) // older: ignored
	if st := e.Changelogs[0]; !st.HasCount || st.Count != 3 || st.Offset != 4 {
		t.Fatalf("state %+v, want count 3 at offset 4", st)
	}
	e.AddChangelog(0, 0, 11, 5, true)
	if st := e.Changelogs[0]; st.HasCount || !st.Tombstone {
		t.Fatalf("state %+v, want the tombstone without a count", st)
	}
}

func TestKeysUndercount(t *testing.T) {
	spec := &KeySpec{Inputs: []InputSpec{{Name: "a", Topic: "in", RepartitionTopic: "rep", ChangelogTopic: "cl", Count: true}}}
	e := NewKeyEvidence(1)
	e.Reset([]byte("k"))
	e.AddTail(0, 7, 70) // pending at the second hop: not counted yet
	for i := range int64(5) {
		e.AddCandidate(0, InputRecord{TS: 3 + i, Offset: i, FP: uint64(100 + i)})
	}
	e.AddCandidate(0, InputRecord{TS: 7, Offset: 9, FP: 70})
	e.AddChangelogCount(0, 1, 7, 12, 3)
	e.AddOutput(1, 7, 20, false)
	rows, kc := Keys(spec, e, nil)
	if len(rows) != 1 || kc.CheckedCount != 1 {
		t.Fatalf("rows %+v, counts %+v; want one undercount", rows, kc)
	}
	r := rows[0]
	ev, _ := r.Evidence.(*finding.CountEvidence)
	if r.Kind != finding.Undercount || r.Stage != finding.StageCount || ev == nil || ev.Processed != 5 || ev.Count != 3 || ev.Lost() != 2 || ev.Offset != 12 || ev.Changelog != "cl" {
		t.Fatalf("row %+v evidence %+v; want undercount of 2 (5 processed, count 3 at cl@12)", r, ev)
	}
	spec.Inputs[0].Count = false
	if rows, kc := Keys(spec, e, nil); len(rows) != 0 || kc.CheckedCount != 0 {
		t.Fatalf("without Count: rows %+v, counts %+v", rows, kc)
	}
}
