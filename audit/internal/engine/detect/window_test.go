package detect

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestTimeWindowsPlace(t *testing.T) {
	w := TimeWindows{Size: 60_000, Advance: 60_000, Grace: 30_000}
	cases := []struct {
		name         string
		ts, max      int64
		known        bool
		retainedFrom int64
		start        int64
		place        WindowPlace
	}{
		{"first record", 65_000, 65_000, true, -1, 60_000, WindowOnTime},
		{"start of window", 120_000, 120_000, true, -1, 120_000, WindowOnTime},
		{"last ms of window", 119_999, 119_999, true, -1, 60_000, WindowOnTime},
		{"out of order within grace", 65_000, 149_999, true, -1, 60_000, WindowOnTime},
		// streamMax is the partition's greatest timestamp, records after
		// this one included (a revived task keeps its stream time).
		{"on time when processed, uncertain by the partition's end", 65_000, 200_000, true, -1, 60_000, WindowLateOrUncertain},
		// end 120000 <= 150000 - 30000: dropped as late.
		{"at the grace boundary", 65_000, 150_000, true, -1, 60_000, WindowLateOrUncertain},
		{"far behind", 5_000, 400_000, true, -1, 0, WindowLateOrUncertain},
		{"stream time unknown", 65_000, 65_000, false, -1, 60_000, WindowLateOrUncertain},
		{"record at the retention bound", 65_000, 65_000, true, 65_000, 60_000, WindowExpired},
		{"record after the retention bound", 65_000, 65_000, true, 64_999, 60_000, WindowOnTime},
		{"zero, no retention", 0, 0, true, -1, 0, WindowOnTime},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			starts := w.Starts(tc.ts)
			if len(starts) != 1 || starts[0] != tc.start {
				t.Fatalf("Starts(%d) = %v, want [%d]", tc.ts, starts, tc.start)
			}
			if place := w.Place(tc.start, tc.ts, tc.max, tc.known, tc.retainedFrom); place != tc.place {
				t.Errorf("Place(%d, %d, %d, %v, %d) = %d, want %d", tc.start, tc.ts, tc.max, tc.known, tc.retainedFrom, place, tc.place)
			}
		})
	}
	if p := w.Place(0, -1, 0, true, -1); p != WindowBadTimestamp {
		t.Errorf("a negative timestamp placed: %d", p)
	}
	for _, bad := range []TimeWindows{{}, {Size: 10, Advance: 0}, {Size: 10, Advance: 11}} {
		if s, p := bad.Starts(5), bad.Place(0, 5, 5, true, -1); s != nil || p != WindowBadTimestamp {
			t.Errorf("%+v placed a record: %v, %d", bad, s, p)
		}
	}
}

// TestHoppingStarts: a record belongs to size/advance windows (fewer near
// zero), as TimeWindows#windowsFor computes them; each is placed on its
// own.
func TestHoppingStarts(t *testing.T) {
	w := TimeWindows{Size: 60_000, Advance: 20_000, Grace: 0}
	cases := []struct {
		ts   int64
		want []int64
	}{
		{0, []int64{0}},
		{19_999, []int64{0}},
		{20_000, []int64{0, 20_000}},
		{65_000, []int64{20_000, 40_000, 60_000}},
		{80_000, []int64{40_000, 60_000, 80_000}},
	}
	for _, tc := range cases {
		if got := w.Starts(tc.ts); !slices.Equal(got, tc.want) {
			t.Errorf("Starts(%d) = %v, want %v", tc.ts, got, tc.want)
		}
	}
	// At stream time 100000 with no grace, windows ending at or before it
	// are late: of 65000's windows, [20000, 80000) and [40000, 100000)
	// are, [60000, 120000) is not.
	var places []WindowPlace
	for _, s := range w.Starts(65_000) {
		places = append(places, w.Place(s, 65_000, 100_000, true, -1))
	}
	if want := []WindowPlace{WindowLateOrUncertain, WindowLateOrUncertain, WindowOnTime}; !slices.Equal(places, want) {
		t.Errorf("places %v, want %v", places, want)
	}
}

func TestWindowKeys(t *testing.T) {
	wk := WindowedKey([]byte("k1"), 0x0102030405060708)
	if want := []byte{'k', '1', 1, 2, 3, 4, 5, 6, 7, 8}; !bytes.Equal(wk, want) {
		t.Fatalf("WindowedKey = %v, want %v", wk, want)
	}
	cases := []struct {
		name  string
		b     []byte
		store bool
		key   string
		start int64
		ok    bool
	}{
		{"output key", wk, false, "k1", 0x0102030405060708, true},
		{"store key", append(append([]byte(nil), wk...), 0, 0, 0, 7), true, "k1", 0x0102030405060708, true},
		{"empty key, output", make([]byte, 8), false, "", 0, true},
		{"empty key, store", make([]byte, 12), true, "", 0, true},
		{"output too short", []byte{1, 2, 3, 4, 5, 6, 7}, false, "", 0, false},
		{"store too short", make([]byte, 11), true, "", 0, false},
		{"nil", nil, true, "", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			split := SplitWindowedKey
			if tc.store {
				split = SplitWindowStoreKey
			}
			key, start, ok := split(tc.b)
			if ok != tc.ok || string(key) != tc.key || start != tc.start {
				t.Errorf("split(%v) = %q, %d, %v; want %q, %d, %v", tc.b, key, start, ok, tc.key, tc.start, tc.ok)
			}
		})
	}
}

// TestWindowFinal: the output rule of a window emitted final
// (suppress(untilWindowCloses)), and Closed's bound: a window closed whose
// changelog holds a value is owed at least the changelog's timestamp
// (missing, stale, aborted), unless the buffer holds it as a value; a
// window not certainly closed, or expired, or with a tombstone, owes
// nothing.
func TestWindowFinal(t *testing.T) {
	w := TimeWindows{Size: 60_000, Advance: 60_000, Grace: 10_000}
	// Window [0, 60s) closes when stream time reaches 70s.
	if got := w.Closed(0, 50_000, 70_000, true, -1); got != FinalClosed {
		t.Errorf("end+grace = bound: %v, want closed", got)
	}
	if got := w.Closed(0, 50_000, 69_999, true, -1); got != FinalOpen {
		t.Errorf("end+grace past the bound: %v, want open", got)
	}
	if got := w.Closed(0, 50_000, 1_000_000, false, -1); got != FinalOpen {
		t.Errorf("bound unknown: %v, want open", got)
	}
	if got := w.Closed(0, 50_000, 1_000_000, true, 50_000); got != FinalExpired {
		t.Errorf("changelog record at the retention bound: %v, want expired", got)
	}
	// Hopping (advance 20s): window [20s, 80s) closes at 90s.
	hop := TimeWindows{Size: 60_000, Advance: 20_000, Grace: 10_000}
	if a, b := hop.Closed(20_000, 70_000, 90_000, true, -1), hop.Closed(40_000, 70_000, 90_000, true, -1); a != FinalClosed || b != FinalOpen {
		t.Errorf("hopping: [20s, 80s) %v, [40s, 100s) %v at 90s, want closed and open", a, b)
	}
	val := StageState{Has: true, TS: 50_000, Offset: 7}
	cases := []struct {
		name                  string
		cl, out               StageState
		buf                   BufferState
		place                 FinalPlace
		kind                  finding.Kind
		checked, pending, bad bool
	}{
		{"closed and in the output", val, StageState{Has: true, TS: 50_000}, BufferState{Has: true, Tombstone: true}, FinalClosed, "", true, false, false},
		{"closed, output newer", val, StageState{Has: true, TS: 55_000}, BufferState{}, FinalClosed, "", true, false, false},
		{"closed and missing", val, StageState{}, BufferState{Has: true, Tombstone: true}, FinalClosed, finding.Missing, true, false, true},
		{"closed, never buffered (compacted), missing", val, StageState{}, BufferState{}, FinalClosed, finding.Missing, true, false, true},
		{"closed and stale", val, StageState{Has: true, TS: 40_000}, BufferState{}, FinalClosed, finding.Stale, true, false, true},
		{"closed, only aborted", val, StageState{HasAborted: true, AbortedTS: 50_000}, BufferState{}, FinalClosed, finding.Aborted, true, false, true},
		{"closed, still a value in the buffer", val, StageState{}, BufferState{Has: true}, FinalClosed, "", true, true, false},
		{"not closed", val, StageState{}, BufferState{Has: true, Tombstone: true}, FinalOpen, "", false, false, false},
		{"expired", val, StageState{}, BufferState{}, FinalExpired, "", false, false, false},
		{"changelog tombstone", StageState{Has: true, TS: 50_000, Tombstone: true}, StageState{}, BufferState{}, FinalClosed, "", false, false, false},
		{"no changelog record", StageState{}, StageState{}, BufferState{}, FinalClosed, "", false, false, false},
	}
	for _, tc := range cases {
		kind, checked, pending, bad := WindowFinal(tc.cl, tc.out, tc.buf, tc.place)
		if kind != tc.kind || checked != tc.checked || pending != tc.pending || bad != tc.bad {
			t.Errorf("%s: got %q checked %v pending %v bad %v, want %q %v %v %v", tc.name, kind, checked, pending, bad, tc.kind, tc.checked, tc.pending, tc.bad)
		}
	}
}

// TestKeysFinal: Keys applies WindowFinal to a window of an input emitted
// final, with or without a processed record certainly in it: a closed
// window the output lacks is one missing row naming the changelog record
// (or the input record when there is one), an open one is pending, a
// buffered one is pending, and a lost changelog update is reported at the
// changelog as before, without an output row.
func TestKeysFinal(t *testing.T) {
	key := WindowedKey([]byte("k"), 0)
	spec := func(place FinalPlace) *KeySpec {
		return &KeySpec{Inputs: []InputSpec{{Name: "a", Topic: "rep", RepartitionTopic: "rep", ChangelogTopic: "cl", Buffered: true,
			Final: func(k []byte, p int32, ts int64) FinalPlace { return place }}}}
	}
	cases := []struct {
		name      string
		place     FinalPlace
		input     bool
		changelog int64 // ts of the changelog's value, 0 for none
		buffer    bool  // the buffer's last record is a value
		output    int64 // ts in the output, 0 for none
		want      string
		open, buf int
	}{
		{"closed, output holds it", FinalClosed, false, 50_000, false, 50_000, "", 0, 0},
		{"closed, output lacks it", FinalClosed, false, 50_000, false, 0, "missing output cl[2]@9 ts 50000", 0, 0},
		{"closed, output older", FinalClosed, false, 50_000, false, 40_000, "stale output cl[2]@9 ts 50000", 0, 0},
		{"closed, buffered", FinalClosed, false, 50_000, true, 0, "", 0, 1},
		{"open", FinalOpen, false, 50_000, false, 0, "", 1, 0},
		{"open, a certain record in it", FinalOpen, true, 50_000, true, 0, "", 1, 0},
		{"certain record lost at the changelog", FinalOpen, true, 0, true, 0, "missing changelog rep[0]@3 ts 45000", 0, 0},
		{"closed, a record in it, output lacks it", FinalClosed, true, 50_000, false, 0, "missing output rep[0]@3 ts 50000", 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := NewKeyEvidence(1)
			e.Reset(key)
			if tc.input {
				e.AddCandidate(0, InputRecord{TS: 45_000, Partition: 0, Offset: 3})
			}
			if tc.changelog > 0 {
				e.AddChangelog(0, 2, tc.changelog, 9, false)
			}
			e.AddBuffer(0, 2, 4, !tc.buffer)
			if tc.output > 0 {
				e.AddOutput(2, tc.output, 11, false)
			}
			rows, kc := Keys(spec(tc.place), e, nil)
			var got []string
			for _, r := range rows {
				got = append(got, fmt.Sprintf("%s %s %s[%d]@%d ts %d", r.Kind, r.Stage, r.Topic, r.Partition, r.Offset, r.ExpectedTS))
			}
			if strings.Join(got, "; ") != tc.want || kc.FinalOpen != tc.open || kc.BufferPending != tc.buf {
				t.Fatalf("rows %q open %d buffered %d, want %q %d %d", got, kc.FinalOpen, kc.BufferPending, tc.want, tc.open, tc.buf)
			}
		})
	}
}
