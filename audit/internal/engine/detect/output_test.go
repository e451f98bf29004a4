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

func TestOutputInnerJoin(t *testing.T) {
	v := StageState{Has: true, TS: 10}
	tomb := StageState{Has: true, TS: 12, Tombstone: true}
	cases := []struct {
		name         string
		tables       []StageState
		out          StageState
		kind         finding.Kind
		checked, bad bool
	}{
		{"only the left table holds it", []StageState{v, {}}, StageState{}, "", false, false},
		{"only the right table holds it", []StageState{{}, v}, StageState{}, "", false, false},
		{"one side deleted", []StageState{v, tomb}, StageState{}, "", false, false},
		{"both hold it, output as new", []StageState{v, v}, StageState{Has: true, TS: 10}, "", true, false},
		{"both hold it, output missing", []StageState{v, v}, StageState{}, finding.Missing, true, true},
		{"both hold it, output stale", []StageState{v, v}, StageState{Has: true, TS: 9}, finding.Stale, true, true},
		{"three tables, one lacks it", []StageState{v, v, {}}, StageState{}, "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind, checked, bad := OutputInnerJoin(tc.tables, tc.out, 10)
			if kind != tc.kind || checked != tc.checked || bad != tc.bad {
				t.Errorf("OutputInnerJoin = %q, %v, %v; want %q, %v, %v", kind, checked, bad, tc.kind, tc.checked, tc.bad)
			}
		})
	}
}

func TestOutputOuterJoin(t *testing.T) {
	cases := []struct {
		name         string
		own, out     StageState
		kind         finding.Kind
		checked, bad bool
	}{
		{"own table lacks it", StageState{}, StageState{}, "", false, false},
		{"own table deleted it", StageState{Has: true, TS: 12, Tombstone: true}, StageState{}, "", false, false},
		{"own table holds it, output as new", StageState{Has: true, TS: 10}, StageState{Has: true, TS: 10}, "", true, false},
		{"own table holds it, output missing", StageState{Has: true, TS: 10}, StageState{}, finding.Missing, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			kind, checked, bad := OutputOuterJoin(tc.own, tc.out, 10)
			if kind != tc.kind || checked != tc.checked || bad != tc.bad {
				t.Errorf("OutputOuterJoin = %q, %v, %v; want %q, %v, %v", kind, checked, bad, tc.kind, tc.checked, tc.bad)
			}
		})
	}
}
