package detect

import (
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

func TestStuckLSO(t *testing.T) {
	settled := snapshot.Topic{Name: "out", Parts: []int32{0, 1, 2}, Offsets: map[int32]kread.Offsets{
		0: {LSO: 10, HighWatermark: 10}, // settled
		1: {LSO: 7, HighWatermark: 12},  // an open transaction at 7, started before the group offsets were read
		2: {LSO: 9, HighWatermark: 15},  // open transaction at 9, but it started after: startHW is 9
	}}
	startHW := map[int32]int64{0: 10, 1: 8, 2: 9}
	got := sig(StuckLSO(settled, startHW, time.Minute))
	if want := "stuck_lso out[1] {LSO:7 StartHighWatermark:8 HighWatermark:12 Waited:1m0s}"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
