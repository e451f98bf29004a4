package detect

import (
	"bytes"
	"slices"
	"testing"
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
