package detect

import (
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestOutputLeftJoin(t *testing.T) {
	value := StageState{Has: true, TS: 10}
	cases := []struct {
		name         string
		left, out    StageState
		expected     int64
		kind         finding.Kind
		checked, bad bool
	}{
		{"left table lacks the key", StageState{}, StageState{}, 10, "", false, false},
		{"left table deleted the key", StageState{Has: true, TS: 12, Tombstone: true}, StageState{}, 10, "", false, false},
		{"output as new", value, StageState{Has: true, TS: 10}, 10, "", true, false},
		{"output newer (the other side's update)", value, StageState{Has: true, TS: 20}, 10, "", true, false},
		{"output missing", value, StageState{}, 10, finding.Missing, true, true},
		{"output stale", value, StageState{Has: true, TS: 9}, 10, finding.Stale, true, true},
		{"output only aborted", value, StageState{HasAborted: true, AbortedTS: 10}, 10, finding.Aborted, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind, checked, bad := OutputLeftJoin(tc.left, tc.out, tc.expected)
			if kind != tc.kind || checked != tc.checked || bad != tc.bad {
				t.Errorf("OutputLeftJoin = %q, %v, %v; want %q, %v, %v", kind, checked, bad, tc.kind, tc.checked, tc.bad)
			}
		})
	}
}
