package finding

// Section is one mode's part of a run's summary: the evidence only that
// mode gathers (the Kafka Streams audit's pipeline and timeline, a
// comparison's identity rule and pair counters), beside the parts every
// mode shares (verdict, per-input and per-stage counters, partition
// findings, read issues, decode errors, timings). A mode hands its sections
// to the report in Summary.Sections; the report renders each in its place
// (the counts, its own tables and cards, its JSON block) without asking
// which mode ran. A new family adds a Section type here (or a field to its
// mode's) and its rendering in the report, not a field to Summary.
type Section interface {
	// SectionName names the section; for a section with a JSON block it
	// is the block's key ("compare").
	SectionName() string
}

// SectionOf returns the first section of s of type T, and whether there is
// one: a test or a caller that knows the mode reads its evidence with it,
// e.g. SectionOf[*CompareSummary](&res.Summary).
func SectionOf[T Section](s *Summary) (T, bool) {
	for _, sec := range s.Sections {
		if t, ok := sec.(T); ok {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// Streams is the Kafka Streams audit's section: the pipeline it audited,
// for a picture of it, and the timeline of its input records.
type Streams struct {
	// Pipeline names the audited pipeline's topics; nil when unknown.
	Pipeline *Pipeline
	// Timeline counts the audited and pending input records by
	// timestamp; nil when the run did not keep one.
	Timeline *Timeline
}

// SectionName implements Section.
func (*Streams) SectionName() string { return "streams" }

// SectionName implements Section: the key of the JSON block "compare".
func (*CompareSummary) SectionName() string { return "compare" }

// Evidence is the structured proof of one finding (Row.Evidence,
// PartitionFinding.Evidence): what a detector saw, in numbers and names,
// never in words. Each mode contributes its own types; the report words
// each type (report.Detail, report.Evidence). EvidenceKind names the type
// for logs and tests.
type Evidence interface {
	EvidenceKind() string
}

// EvidenceKind implements Evidence.
func (*Witness) EvidenceKind() string { return "witness" }

// EvidenceKind implements Evidence.
func (*SinkEvidence) EvidenceKind() string { return "sink" }

// EvidenceKind implements Evidence.
func (*CountEvidence) EvidenceKind() string { return "count" }

// EvidenceKind implements Evidence.
func (*TableEvidence) EvidenceKind() string { return "table" }

// EvidenceKind implements Evidence.
func (*LedgerEvidence) EvidenceKind() string { return "ledger" }

// EvidenceKind implements Evidence.
func (*PurgeEvidence) EvidenceKind() string { return string(PurgedPastCommit) }

// EvidenceKind implements Evidence.
func (*StuckEvidence) EvidenceKind() string { return string(StuckLSO) }

// EvidenceKind implements Evidence.
func (*ResetEvidence) EvidenceKind() string { return string(OffsetReset) }

// EvidenceKind implements Evidence.
func (*TruncationEvidence) EvidenceKind() string { return string(Truncated) }

// EvidenceKind implements Evidence.
func (*PoisonEvidence) EvidenceKind() string { return string(PoisonPill) }

// EvidenceKind implements Evidence.
func (*OutOfRangeEvidence) EvidenceKind() string { return string(OffsetOutOfRange) }

// EvidenceKind implements Evidence.
func (*UnprocessedEvidence) EvidenceKind() string { return string(UnprocessedPartition) }
