package detect

import (
	"bytes"
	"testing"
)

func TestTumblingWindowPlace(t *testing.T) {
	w := TumblingWindow{Size: 60_000, Grace: 30_000}
	cases := []struct {
		name         string
		ts, max      int64
		known        bool
		retainedFrom int64
		start        int64
		place        WindowPlace
	}{
		{"first record", 65_000, 65_000, true, 0, 60_000, WindowOnTime},
		{"start of window", 120_000, 120_000, true, 0, 120_000, WindowOnTime},
		{"last ms of window", 119_999, 119_999, true, 0, 60_000, WindowOnTime},
		{"out of order within grace", 65_000, 149_999, true, 0, 60_000, WindowOnTime},
		// streamMax is the partition's greatest timestamp, records after
		// this one included (a revived task keeps its stream time).
		{"on time when processed, uncertain by the partition's end", 65_000, 200_000, true, 0, 60_000, WindowLateOrUncertain},
		// end 120000 <= 150000 - 30000: dropped as late.
		{"at the grace boundary", 65_000, 150_000, true, 0, 60_000, WindowLateOrUncertain},
		{"far behind", 5_000, 400_000, true, 0, 0, WindowLateOrUncertain},
		{"stream time unknown", 65_000, 65_000, false, 0, 60_000, WindowLateOrUncertain},
		{"record at the retention bound", 65_000, 65_000, true, 65_000, 60_000, WindowExpired},
		{"record after the retention bound", 65_000, 65_000, true, 64_999, 60_000, WindowOnTime},
		{"negative timestamp", -1, 0, true, 0, 0, WindowBadTimestamp},
		{"zero, no retention", 0, 0, true, -1, 0, WindowOnTime},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start, place := w.Place(tc.ts, tc.max, tc.known, tc.retainedFrom)
			if start != tc.start || place != tc.place {
				t.Errorf("Place(%d, %d, %v, %d) = %d, %d; want %d, %d", tc.ts, tc.max, tc.known, tc.retainedFrom, start, place, tc.start, tc.place)
			}
		})
	}
	if _, p := (TumblingWindow{}).Place(5, 5, true, 0); p != WindowBadTimestamp {
		t.Errorf("a zero size placed a record: %d", p)
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
