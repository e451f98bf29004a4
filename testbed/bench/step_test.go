package main

import (
	"reflect"
	"testing"
)

// TestStepPhases: a step's phases come from its JSON report's timings and
// its summary's reports, commit and close, in run order.
func TestStepPhases(t *testing.T) {
	summary := "Timings\n  PHASE     TOOK\n  snapshot  127ms\n  read      780ms\n  reports   2ms\n  commit    441ms\n  close     1.2s\n  total     1.732s\n"
	for _, tc := range []struct {
		name    string
		timings map[string]string
		stdout  string
		want    [][2]string
	}{
		{"both", map[string]string{"read": "780ms", "start": "40ms", "check": "1s", "state": "24ms"}, summary,
			[][2]string{{"start", "40ms"}, {"state", "24ms"}, {"read", "780ms"}, {"check", "1s"}, {"reports", "2ms"}, {"commit", "441ms"}, {"close", "1.2s"}}},
		{"no summary", map[string]string{"snapshot": "1ms"}, "", [][2]string{{"snapshot", "1ms"}}},
		{"nothing", nil, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stepPhases(tc.timings, tc.stdout); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
