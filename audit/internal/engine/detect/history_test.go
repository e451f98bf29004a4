package detect

import (
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/kread"
)

func TestTruncatedAndOffsetReset(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	prev := map[kread.TP]history.Entry{}
	for _, p := range []snapshot.Partition{
		{Topic: "in", Partition: 0, HighWatermark: 100, LSO: 100, Committed: 80, HasCommitted: true},
		{Topic: "in", Partition: 1, HighWatermark: 50, LSO: 50, Committed: 50, HasCommitted: true},
		{Topic: "out", Partition: 0, HighWatermark: 70, LSO: 70},
	} {
		prev[kread.TP{Topic: p.Topic, Partition: p.Partition}] = history.Entry{Partition: p, At: at}
	}
	tests := []struct {
		name            string
		now             []snapshot.Partition
		truncated, rset string
	}{
		{"progress is no finding", []snapshot.Partition{
			{Topic: "in", Partition: 0, HighWatermark: 120, LSO: 120, Committed: 110, HasCommitted: true},
			{Topic: "in", Partition: 1, HighWatermark: 50, LSO: 50, Committed: 50, HasCommitted: true},
			{Topic: "out", Partition: 0, HighWatermark: 90, LSO: 90},
		}, "", ""},
		{"log end moved back", []snapshot.Partition{{Topic: "out", Partition: 0, HighWatermark: 65, LSO: 65}},
			"truncated out[0] prev=70 now=65", ""},
		{"committed offset moved back", []snapshot.Partition{{Topic: "in", Partition: 0, HighWatermark: 100, LSO: 100, Committed: 10, HasCommitted: true}},
			"", "offset_reset in[0] prev=80 now=10 has=true"},
		{"committed offset vanished", []snapshot.Partition{{Topic: "in", Partition: 1, HighWatermark: 60, LSO: 60}},
			"", "offset_reset in[1] prev=50 now=0 has=false"},
		{"a partition not consumed before cannot be reset", []snapshot.Partition{{Topic: "out", Partition: 0, HighWatermark: 90, Committed: 3, HasCommitted: true}},
			"", ""},
		{"both at once", []snapshot.Partition{
			{Topic: "in", Partition: 0, HighWatermark: 90, LSO: 90, Committed: 70, HasCommitted: true},
		}, "truncated in[0] prev=100 now=90", "offset_reset in[0] prev=80 now=70 has=true"},
		{"a partition never seen before", []snapshot.Partition{{Topic: "in", Partition: 7, HighWatermark: 1, LSO: 1}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := Truncated(prev, tt.now)
			if got := sig(tr); got != tt.truncated {
				t.Errorf("truncated: got %q, want %q", got, tt.truncated)
			}
			rs := OffsetReset("app", prev, tt.now)
			if got := sig(rs); got != tt.rset {
				t.Errorf("offset_reset: got %q, want %q", got, tt.rset)
			}
			for _, f := range append(tr, rs...) {
				if (f.Truncation != nil && !f.Truncation.PrevRun.Equal(at)) || (f.Reset != nil && (!f.Reset.PrevRun.Equal(at) || f.Reset.Group != "app")) {
					t.Errorf("%s evidence does not name the previous run and group: %+v", f.Kind, f)
				}
			}
		})
	}
}
