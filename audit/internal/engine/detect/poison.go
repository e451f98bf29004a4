package detect

import (
	"github.com/lossaudit/lossaudit/audit/finding"
)

// NextRecord is the first committed record at or after the group's
// committed offset on one input partition: the record the application
// reads next. DecodeError is "" when it decodes.
type NextRecord struct {
	Topic       string
	Partition   int32
	Offset      int64
	DecodeError string
}

// PoisonPill reports the input partitions where the group waits at a
// record that does not decode, while the group has no active member.
//
// Proof, as far as the cluster can give one: an application that stops on
// deserialization errors (Kafka Streams' LogAndFailExceptionHandler, the
// default) crashes on such a record without committing past it, and its
// group is left without members; the group's committed offset then points
// at the record for as long as nobody skips it. A running group (members
// present) is not stuck on it, so nothing is reported then; a stopped
// application that would skip the record (LogAndContinue) looks the same
// from the cluster, so the finding is a suspicion to check, with the
// record's coordinates.
func PoisonPill(group string, groupActive bool, next []NextRecord) []finding.PartitionFinding {
	if groupActive {
		return nil
	}
	var out []finding.PartitionFinding
	for _, n := range next {
		if n.DecodeError == "" {
			continue
		}
		out = append(out, finding.PartitionFinding{
			Kind: finding.PoisonPill, Topic: n.Topic, Partition: n.Partition,
			Poison: &finding.PoisonEvidence{Group: group, Offset: n.Offset, Error: n.DecodeError},
		})
	}
	return out
}
