package detect

import (
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestBufferPending(t *testing.T) {
	type rec struct {
		offset    int64
		tombstone bool
	}
	cases := []struct {
		name    string
		recs    []rec
		pending bool
	}{
		{"never buffered: the output rule stands", nil, false},
		{"buffered", []rec{{4, false}}, true},
		{"evicted: a tombstone", []rec{{4, false}, {7, true}}, false},
		{"buffered again after an eviction", []rec{{4, false}, {7, true}, {9, false}}, true},
		{"the last by offset wins, in any order", []rec{{9, true}, {4, false}}, false},
		{"an older value after a newer tombstone is ignored", []rec{{7, true}, {5, false}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var b BufferState
			for _, r := range tc.recs {
				b.add(0, r.offset, r.tombstone)
			}
			if got := BufferPending(b); got != tc.pending {
				t.Errorf("BufferPending(%+v) = %v, want %v", b, got, tc.pending)
			}
			var c BufferState // folded from an earlier step's state
			c.Add(b)
			if got := BufferPending(c); got != tc.pending {
				t.Errorf("BufferPending of the folded %+v = %v, want %v", c, got, tc.pending)
			}
		})
	}
}

// TestKeysBuffered: with a suppress buffer between the table and the
// output, a key the buffer holds is pending at the output; a key evicted
// (a tombstone) or never buffered must be in the output; the table rule
// is unchanged.
func TestKeysBuffered(t *testing.T) {
	spec := &KeySpec{Inputs: []InputSpec{{Name: "a", Topic: "ta", RepartitionTopic: "r", Buffered: true}}}
	cases := []struct {
		name      string
		changelog StageState
		buffer    *BufferState
		out       StageState
		kind      finding.Kind
		stage     finding.Stage
		pending   int
	}{
		{"in the output", StageState{Has: true, TS: 10}, nil, StageState{Has: true, TS: 10}, "", "", 0},
		{"buffered, not yet emitted", StageState{Has: true, TS: 10}, &BufferState{Has: true, Offset: 3}, StageState{}, "", "", 1},
		{"buffered, an older output", StageState{Has: true, TS: 10}, &BufferState{Has: true, Offset: 3}, StageState{Has: true, TS: 5}, "", "", 1},
		{"evicted, output missing", StageState{Has: true, TS: 10}, &BufferState{Has: true, Offset: 3, Tombstone: true}, StageState{}, finding.Missing, finding.StageOutput, 0},
		{"never buffered, output stale", StageState{Has: true, TS: 10}, nil, StageState{Has: true, TS: 5}, finding.Stale, finding.StageOutput, 0},
		{"table missing: the buffer does not excuse it", StageState{}, &BufferState{Has: true, Offset: 3}, StageState{}, finding.Missing, finding.StageChangelog, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := NewKeyEvidence(1)
			e.Reset([]byte("k"))
			e.AddCandidate(0, InputRecord{TS: 10, Offset: 1})
			e.Changelogs[0] = tc.changelog
			if tc.buffer != nil {
				e.AddBuffer(0, 0, tc.buffer.Offset, tc.buffer.Tombstone)
			}
			e.Output = tc.out
			rows, kc := Keys(spec, e, nil)
			if kc.BufferPending != tc.pending {
				t.Errorf("BufferPending = %d, want %d", kc.BufferPending, tc.pending)
			}
			if tc.kind == "" {
				if len(rows) != 0 {
					t.Fatalf("rows %+v, want none", rows)
				}
				return
			}
			if len(rows) != 1 || rows[0].Kind != tc.kind || rows[0].Stage != tc.stage {
				t.Fatalf("rows %+v, want one %s at %s", rows, tc.kind, tc.stage)
			}
		})
	}
	// Without Buffered the buffer's evidence is not used.
	e := NewKeyEvidence(1)
	e.Reset([]byte("k"))
	e.AddCandidate(0, InputRecord{TS: 10, Offset: 1})
	e.Changelogs[0] = StageState{Has: true, TS: 10}
	e.AddBuffer(0, 0, 3, false)
	if rows, _ := Keys(&KeySpec{Inputs: []InputSpec{{Name: "a"}}}, e, nil); len(rows) != 1 || rows[0].Kind != finding.Missing {
		t.Fatalf("unbuffered rows %+v, want one missing", rows)
	}
}
