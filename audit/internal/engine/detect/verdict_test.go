package detect

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestInconclusive(t *testing.T) {
	ok := finding.InputCounts{Scanned: 100, Audited: 90, Pending: 5, DecodeErrors: 5}
	win := finding.Window{From: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	tests := []struct {
		name   string
		window finding.Window
		inputs []InputOutcome
		want   string
	}{
		{"every input checked", finding.Window{}, []InputOutcome{
			{Name: "a", Counts: ok, Committed: true},
			{Name: "b", Counts: finding.InputCounts{}, Committed: false}, // an empty input has nothing to check
		}, ""},
		{"no input holds a record", finding.Window{}, []InputOutcome{{Name: "a"}, {Name: "b"}}, "no_records -"},
		{"the window holds no record", win, []InputOutcome{
			{Name: "a", Counts: finding.InputCounts{Scanned: 4, OutsideWindow: 4}, Committed: true},
			{Name: "b", Committed: true},
		}, "empty_window -"},
		{"the group has no committed offsets on an input", finding.Window{}, []InputOutcome{
			{Name: "a", Counts: ok, Committed: true},
			{Name: "c", Counts: finding.InputCounts{Scanned: 31500, Pending: 31500}},
		}, "no_committed_offsets c"},
		{"most records undecodable (a rekey typo)", finding.Window{}, []InputOutcome{
			{Name: "a", Counts: finding.InputCounts{Scanned: 10500, DecodeErrors: 10500}, Committed: true, Field: "customerID", TopError: "schema 1: field_missing", Nearest: []string{"customerId"}},
		}, "mostly_undecodable a customerID [customerId]"},
		{"exactly half undecodable is not most", finding.Window{}, []InputOutcome{
			{Name: "a", Counts: finding.InputCounts{Scanned: 10, Audited: 5, DecodeErrors: 5}, Committed: true},
		}, ""},
		{"nothing audited: all pending", finding.Window{}, []InputOutcome{
			{Name: "a", Counts: finding.InputCounts{Scanned: 7, Pending: 7}, Committed: true},
		}, "nothing_audited a"},
		{"nothing audited: all dropped by design", finding.Window{}, []InputOutcome{
			{Name: "a", Counts: finding.InputCounts{Scanned: 7, NullKey: 3, NullValue: 4}, Committed: true},
		}, "nothing_audited a"},
		{"an input whose records are all outside the window, beside one that has records in it", win, []InputOutcome{
			{Name: "a", Counts: ok, Committed: true},
			{Name: "b", Counts: finding.InputCounts{Scanned: 3, OutsideWindow: 3}, Committed: true},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Inconclusive(RunOutcome{Group: "app", Window: tt.window, Inputs: tt.inputs})
			var gs []string
			for _, g := range got {
				s := string(g.Reason) + " " + g.Input
				if g.Input == "" {
					s += "-"
				}
				if g.Field != "" {
					s += fmt.Sprintf(" %s %v", g.Field, g.Nearest)
				}
				if g.Group != "app" {
					t.Errorf("%s: group %q, want app", g.Reason, g.Group)
				}
				gs = append(gs, s)
			}
			if strings.Join(gs, "; ") != tt.want {
				t.Errorf("got %q, want %q", strings.Join(gs, "; "), tt.want)
			}
		})
	}
}
