package detect

import (
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// OffsetOutOfRange reports the input and repartition partitions whose
// committed offset lies outside the partition's log: below its log start
// (inputs only; on a repartition topic that is PurgedPastCommit) or above
// its high watermark.
//
// Proof. Above: a group commits only offsets it has read, so a committed
// offset is at most the high watermark when it was committed; the high
// watermark was read after the offsets and only a truncation (unclean
// leader election, a last-replica-standing shutdown) or a recreated topic
// moves it back. The records the application processed beyond it are gone,
// and when the log grows again its records up to the committed offset will
// be skipped. Below: the records between the committed offset and the log
// start were deleted (retention, DeleteRecords, a recreated topic) before
// the application processed them. The log start is read after the offsets,
// and the application may process records in between, so a partition below
// its log start is reported only when the committed offset read again after
// the log start (recheck) is still below it; without a recheck value it
// proves nothing. Partitions without a committed offset prove nothing.
func OffsetOutOfRange(group string, inputs, reparts []snapshot.Partition, recheck map[kread.TP]int64) []finding.PartitionFinding {
	var out []finding.PartitionFinding
	add := func(p snapshot.Partition, committed int64) {
		out = append(out, finding.PartitionFinding{
			Kind: finding.OffsetOutOfRange, Topic: p.Topic, Partition: p.Partition,
			Evidence: &finding.OutOfRangeEvidence{Group: group, Committed: committed, LogStart: p.LogStart, HighWatermark: p.HighWatermark},
		})
	}
	for _, p := range reparts {
		if p.HasCommitted && p.Committed > p.HighWatermark {
			add(p, p.Committed)
		}
	}
	for _, p := range inputs {
		switch {
		case !p.HasCommitted:
		case p.Committed > p.HighWatermark:
			add(p, p.Committed)
		case p.Committed < p.LogStart:
			if c, ok := recheck[kread.TP{Topic: p.Topic, Partition: p.Partition}]; ok && c < p.LogStart {
				add(p, c)
			}
		}
	}
	return out
}

// BelowLogStart lists the input partitions whose committed offset is below
// the log start: the ones OffsetOutOfRange needs the committed offset of
// again, read after the log start.
func BelowLogStart(inputs []snapshot.Partition) []kread.TP {
	var out []kread.TP
	for _, p := range inputs {
		if p.HasCommitted && p.Committed < p.LogStart {
			out = append(out, kread.TP{Topic: p.Topic, Partition: p.Partition})
		}
	}
	return out
}

// FirstRecord is the timestamp of the first committed record of an input
// partition (Unix ms); Has is false when it has none.
type FirstRecord struct {
	Timestamp int64
	Has       bool
}

// UnprocessedPartition reports the input partitions that hold committed
// records while the group has no committed offset on them but has one on
// another partition of the same topic, and whose first record is older
// than age at now.
//
// Proof, as far as the cluster can give one: the application consumes the
// topic (it committed on its other partitions), yet in all that time it has
// never committed on this one. Kafka Streams commits the offsets of every
// partition it processed records of; a partition it was never assigned,
// or that it started reading at the end of (auto.offset.reset=latest, e.g.
// after partitions were added to the topic), has none. The records there
// count as pending, not processed, so the per-key check cannot see them;
// the age keeps a partition that just received its first records, or an
// application still starting, from being reported.
func UnprocessedPartition(group string, inputs []snapshot.Partition, first map[kread.TP]FirstRecord, now time.Time, age time.Duration) []finding.PartitionFinding {
	var out []finding.PartitionFinding
	for _, p := range WithoutCommit(inputs) {
		f := first[kread.TP{Topic: p.Topic, Partition: p.Partition}]
		if !f.Has || now.Sub(time.UnixMilli(f.Timestamp)) < age {
			continue
		}
		out = append(out, finding.PartitionFinding{
			Kind: finding.UnprocessedPartition, Topic: p.Topic, Partition: p.Partition,
			Evidence: &finding.UnprocessedEvidence{Group: group, LogStart: p.LogStart, LSO: p.LSO,
				FirstTimestamp: f.Timestamp, Age: age},
		})
	}
	return out
}

// WithoutCommit lists the input partitions UnprocessedPartition needs the
// first record of: with records, no committed offset, on a topic the group
// has committed on.
func WithoutCommit(inputs []snapshot.Partition) []snapshot.Partition {
	consumed := map[string]bool{}
	for _, p := range inputs {
		if p.HasCommitted {
			consumed[p.Topic] = true
		}
	}
	var out []snapshot.Partition
	for _, p := range inputs {
		if !p.HasCommitted && consumed[p.Topic] && p.LSO > p.LogStart {
			out = append(out, p)
		}
	}
	return out
}
