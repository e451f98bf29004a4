package detect

import (
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
)

// PurgedPastCommit reports the repartition partitions whose log start
// offset is above the group's committed offset: the KAFKA-17635
// signature.
//
// Proof: Kafka Streams purges a repartition topic only up to the offset it
// has committed, so records below the log start were deleted; when the log
// starts above the committed offset, records in between were deleted
// before the application processed them. Partitions the group has no
// committed offset for prove nothing and are skipped.
func PurgedPastCommit(group string, reparts []snapshot.Partition) []finding.PartitionFinding {
	var out []finding.PartitionFinding
	for _, p := range reparts {
		if p.HasCommitted && p.LogStart > p.Committed {
			out = append(out, finding.PartitionFinding{
				Kind: finding.PurgedPastCommit, Topic: p.Topic, Partition: p.Partition,
				Purge: &finding.PurgeEvidence{Group: group, LogStart: p.LogStart, Committed: p.Committed},
			})
		}
	}
	return out
}
