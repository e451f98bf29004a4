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
	g := &Generator{cfg: Config{Customers: 40}}
	for i := range 3 {
		seen := map[string]bool{}
		for seq := int64(0); seq < 40; seq++ {
			seen[g.customer(i, seq, nil)] = true
		}
		if len(seen) != 40 {
			t.Errorf("input %d: first 40 records cover %d customers, want 40", i, len(seen))
		}
	}
}
