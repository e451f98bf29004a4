package detect

import (
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
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
	got := sig(StuckLSO(settled, startHW, time.Minute, nil, nil))
	if want := "stuck_lso out[1] {LSO:7 StartHighWatermark:8 HighWatermark:12 Waited:1m0s Holder:<nil> HolderError:}"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// The holder named where it was asked, or why it could not be.
	h := &finding.TxnHolder{Leader: 2, ProducerID: 4001, ProducerEpoch: 3, StartOffset: 7, TransactionalID: "app-1", State: "Ongoing"}
	fs := StuckLSO(settled, startHW, time.Minute, map[int32]*finding.TxnHolder{1: h, 2: h}, nil)
	if len(fs) != 1 || fs[0].Evidence.(*finding.StuckEvidence).Holder != h {
		t.Errorf("with a holder: %+v, want out[1] held by %+v", fs, *h)
	}
	fs = StuckLSO(settled, startHW, time.Minute, nil, map[int32]string{1: "no leader"})
	if len(fs) != 1 || fs[0].Evidence.(*finding.StuckEvidence).Holder != nil || fs[0].Evidence.(*finding.StuckEvidence).HolderError != "no leader" {
		t.Errorf("holder unknown: %+v", fs)
	}
}
