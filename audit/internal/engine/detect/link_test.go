package detect

import "testing"

func TestLinkPending(t *testing.T) {
	cases := []struct {
		name    string
		tail    []recID // on input 0
		rec     InputRecord
		x       int
		pending bool
	}{
		{"empty tail", nil, InputRecord{TS: 5, FP: 1}, 0, false},
		{"copy in the tail", []recID{{5, 1}}, InputRecord{TS: 5, FP: 1, Partition: 2, Offset: 7}, 0, true},
		{"same timestamp, other value", []recID{{5, 2}}, InputRecord{TS: 5, FP: 1}, 0, false},
		{"same value, other timestamp", []recID{{6, 1}}, InputRecord{TS: 5, FP: 1}, 0, false},
		{"another input's tail", []recID{{5, 1}}, InputRecord{TS: 5, FP: 1}, 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := NewKeyEvidence(2)
			e.Reset([]byte("k"))
			for _, id := range tc.tail {
				e.AddTail(0, id.ts, id.fp)
			}
			if got := e.linkPending(tc.x, tc.rec); got != tc.pending {
				t.Errorf("linkPending(%d, %+v) = %v, want %v", tc.x, tc.rec, got, tc.pending)
			}
		})
	}
}
