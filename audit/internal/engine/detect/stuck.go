package detect

import (
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
)

// StuckLSO reports the partitions of a settled changelog or output topic
// whose last stable offset is still below the high watermark it had when
// the group offsets were read (startHW), after waiting for waited.
//
// Proof: every transaction open when the group offsets were read has an
// offset below that high watermark; an LSO still below it means one of
// them has not ended (a hanging transaction, KIP-890), so records of the
// partition that the group's offsets already count as processed may still
// be invisible. Per-key findings that depend on the partition must be
// withheld (see Withheld). holders names, by partition, the open
// transaction holding the LSO where it was asked (holderErr: why it could
// not be named).
func StuckLSO(settled snapshot.Topic, startHW map[int32]int64, waited time.Duration, holders map[int32]*finding.TxnHolder, holderErr map[int32]string) []finding.PartitionFinding {
	var out []finding.PartitionFinding
	for _, p := range settled.Parts {
		of := settled.Offsets[p]
		if start := startHW[p]; of.LSO < start {
			out = append(out, finding.PartitionFinding{
				Kind: finding.StuckLSO, Topic: settled.Name, Partition: p,
				Evidence: &finding.StuckEvidence{LSO: of.LSO, StartHighWatermark: start, HighWatermark: of.HighWatermark, Waited: waited,
					Holder: holders[p], HolderError: holderErr[p]},
			})
		}
	}
	return out
}
