package loadgen

import (
	"reflect"
	"testing"
)

func TestNewest(t *testing.T) {
	l := FromEntries([]Entry{
		{Input: "a", Key: "k1", Seq: 0, Timestamp: 100},
		{Input: "a", Key: "k1", Seq: 2, Timestamp: 100}, // same ms, produced later: wins
		{Input: "a", Key: "k1", Seq: 1, Timestamp: 90},
		{Input: "b", Key: "k1", Seq: 0, Timestamp: 50},
	})
	got := l.Newest()
	want := map[InputKey]Entry{
		{"a", "k1"}: {Input: "a", Key: "k1", Seq: 2, Timestamp: 100},
		{"b", "k1"}: {Input: "b", Key: "k1", Seq: 0, Timestamp: 50},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}

func TestCustomerVisitsEveryKeyFirst(t *testing.T) {
	extra := NotUTF8Customers()
	g := &Generator{cfg: Config{Customers: 40, ExtraCustomers: extra}}
	n := 40 + len(extra)
	for i := range 3 {
		seen := map[string]bool{}
		for seq := int64(0); seq < int64(n); seq++ {
			seen[g.customer(i, seq, nil)] = true
		}
		if len(seen) != n {
			t.Errorf("input %d: first %d records cover %d customers, want %d", i, n, len(seen), n)
		}
		for _, c := range extra {
			if !seen[c] {
				t.Errorf("input %d: customer %q not visited", i, c)
			}
		}
	}
}

// TestSelectedKey pins the keys the application selects for the
// customerIds that are not UTF-8 (checked against Java in testbed/javastring
// and through the real application in testbed/e2e): all distinct, so no
// two customers merge into one key.
func TestSelectedKey(t *testing.T) {
	want := []string{"\uFFFD\uFFFD-notutf8", "lone-\uFFFD-continuation", "cut-\uFFFD-short", "cesu-\uFFFD-surrogate"}
	for i, c := range NotUTF8Customers() {
		if got := SelectedKey(c); got != want[i] {
			t.Errorf("SelectedKey(%q) = %q, want %q", c, got, want[i])
		}
	}
	if got := SelectedKey(Key(7)); got != "cust-007" {
		t.Errorf("SelectedKey(%q) = %q, want it unchanged", Key(7), got)
	}
}
