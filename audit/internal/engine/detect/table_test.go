package detect

import (
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestTableMax(t *testing.T) {
	cases := []struct {
		name     string
		st       StageState
		expected int64
		kind     finding.Kind
		bad      bool
	}{
		{"absent", StageState{}, 10, finding.Missing, true},
		{"as new", StageState{Has: true, TS: 10}, 10, "", false},
		{"newer", StageState{Has: true, TS: 11}, 10, "", false},
		{"older", StageState{Has: true, TS: 9}, 10, finding.Stale, true},
		{"tombstone as new counts", StageState{Has: true, TS: 10, Tombstone: true}, 10, "", false},
		{"only aborted, as new", StageState{HasAborted: true, AbortedTS: 10}, 10, finding.Aborted, true},
		{"only aborted, older", StageState{HasAborted: true, AbortedTS: 9}, 10, finding.Missing, true},
		{"older committed, newer aborted", StageState{Has: true, TS: 5, HasAborted: true, AbortedTS: 12}, 10, finding.Aborted, true},
		{"older committed, older aborted", StageState{Has: true, TS: 5, HasAborted: true, AbortedTS: 6}, 10, finding.Stale, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind, bad := TableMax(tc.st, tc.expected)
			if kind != tc.kind || bad != tc.bad {
				t.Errorf("TableMax(%+v, %d) = %q, %v; want %q, %v", tc.st, tc.expected, kind, bad, tc.kind, tc.bad)
			}
		})
	}
}
