package snapshot

import (
	"context"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
)

// NameHolders asks, for every partition of the settled topic t whose LSO
// stayed below its mark in startHW, which open transaction holds it
// (DescribeProducers on the leader, ListTransactions), so that a stuck_lso
// finding names it and the command that aborts it. It returns the holders
// by partition and, for partitions where asking failed, why; nil maps when
// there are none. Not knowing is no failure: the finding stands on the
// offsets alone.
func NameHolders(ctx context.Context, k engine.Kafka, t Topic, startHW map[int32]int64) (map[int32]*finding.TxnHolder, map[int32]string) {
	var holders map[int32]*finding.TxnHolder
	var errs map[int32]string
	for _, p := range t.Parts {
		if t.Offsets[p].LSO >= startHW[p] {
			continue
		}
		h, err := k.TransactionHolder(ctx, t.Name, p)
		switch {
		case err != nil:
			if errs == nil {
				errs = map[int32]string{}
			}
			errs[p] = err.Error()
		case h != nil:
			if holders == nil {
				holders = map[int32]*finding.TxnHolder{}
			}
			holders[p] = &finding.TxnHolder{Leader: h.Leader, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
				StartOffset: h.StartOffset, TransactionalID: h.TransactionalID, State: h.State}
		}
	}
	return holders, errs
}
