package typo

import "testing"

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"abc", "", 3},
		{"customerId", "customerId", 0},
		{"customerID", "customerId", 0}, // case is free
		{"KAFKA.BROKERS", "kafka.brokers", 0},
		{"kafka.broker", "kafka.brokers", 1},  // one insertion
		{"kafak.brokers", "kafka.brokers", 2}, // a transposition is two edits
		{"sotre.dir", "store.dir", 2},
		{"window.form", "window.from", 2},
		{"abc", "xyz", 3},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := Distance(tc.b, tc.a); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d (not symmetric)", tc.b, tc.a, got, tc.want)
		}
	}
}
