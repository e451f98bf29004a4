package detect

import (
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// Truncated reports the partitions whose high watermark is below the one
// an earlier run saw.
//
// Proof: a high watermark only moves forward while the log keeps its
// acknowledged records; lower than before means acknowledged records are
// gone (an unclean leader election, a last-replica-standing shutdown, or
// the topic was deleted and recreated). Partitions without an earlier
// snapshot prove nothing.
func Truncated(prev map[kread.TP]history.Entry, now []snapshot.Partition) []finding.PartitionFinding {
	var out []finding.PartitionFinding
	for _, p := range now {
		e, ok := prev[kread.TP{Topic: p.Topic, Partition: p.Partition}]
		if ok && p.HighWatermark < e.HighWatermark {
			out = append(out, finding.PartitionFinding{
				Kind: finding.Truncated, Topic: p.Topic, Partition: p.Partition,
				Truncation: &finding.TruncationEvidence{PrevHighWatermark: e.HighWatermark, PrevRun: e.At, HighWatermark: p.HighWatermark},
			})
		}
	}
	return out
}

// OffsetReset reports the partitions whose committed offset of group is
// below the one an earlier run saw, or has disappeared.
//
// Proof: a consumer group's committed offset only moves forward while the
// application makes progress; a lower one means the application was reset
// (records are or will be processed again), and a vanished one means the
// group's offsets were deleted or expired (it restarts from
// auto.offset.reset, which may skip records).
func OffsetReset(group string, prev map[kread.TP]history.Entry, now []snapshot.Partition) []finding.PartitionFinding {
	var out []finding.PartitionFinding
	for _, p := range now {
		e, ok := prev[kread.TP{Topic: p.Topic, Partition: p.Partition}]
		if !ok || !e.HasCommitted {
			continue
		}
		if !p.HasCommitted || p.Committed < e.Committed {
			out = append(out, finding.PartitionFinding{
				Kind: finding.OffsetReset, Topic: p.Topic, Partition: p.Partition,
				Reset: &finding.ResetEvidence{Group: group, PrevCommitted: e.Committed, PrevRun: e.At, Committed: p.Committed, HasCommitted: p.HasCommitted},
			})
		}
	}
	return out
}
