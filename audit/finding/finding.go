// Package finding holds the vocabulary of an audit result: the kinds of
// anomaly lossaudit can report, the per-(input, key) rows of the loss
// report with their structured evidence, the partition-level findings, the
// reasons a verdict is inconclusive and the run summary. The vocabulary is
// open: evidence is one interface (Evidence) that each mode implements
// with its own types, and what only one mode knows of a run is its Section
// in Summary.Sections. The detectors produce these values and the reports
// render them; the words a user reads are written only by the reports. Besides naming, the package owns one
// behaviour: the order of rows and partition findings (SortRows,
// SortPartitions), so that every report lists them alike.
package finding

import "time"

// Kind names what is wrong with one (input, key) at one stage.
type Kind string

// The per-key finding kinds, as they appear in the CSV `finding` column.
const (
	// Missing: the key is absent at the stage.
	Missing Kind = "missing"
	// Stale: the key is present at the stage, but older than the newest
	// processed input update.
	Stale Kind = "stale"
	// Aborted: the newer update reached the stage only inside aborted
	// transactions.
	Aborted Kind = "aborted"
	// Undercount: a count's changelog holds the key at a count lower than
	// the number of processed input records of the key: that many updates
	// were lost (StageCount, with a *CountEvidence).
	Undercount Kind = "undercount"
)

// Kinds lists the per-key finding kinds of the Kafka Streams audit, in the
// order reports list them.
var Kinds = []Kind{Missing, Stale, Aborted}

// Stage names where along the pipeline an update went missing.
type Stage string

// The stages, in pipeline order, as they appear in the CSV `stage` column.
const (
	// StageChangelog is between an input and its reduce store's changelog.
	StageChangelog Stage = "changelog"
	// StageOutput is between the reduce stores and the output topic.
	StageOutput Stage = "output"
	// StageSink is between a compared source topic and its sink topic
	// (lossaudit compare).
	StageSink Stage = "sink"
	// StageLedger is between what a producer's ledger says it sent and
	// what the topic holds (lossaudit compare with a ledger).
	StageLedger Stage = "ledger"
	// StageCount is a count's value in its changelog, recomputed from the
	// processed input records (pipelines whose table is a count).
	StageCount Stage = "count"
)

// CountKinds are the kinds StageCount reports.
var CountKinds = []Kind{Undercount}

// Order returns the position of a stage along the pipeline, for sorting.
func (s Stage) Order() int {
	switch s {
	case StageChangelog:
		return 0
	case StageOutput:
		return 1
	case StageSink:
		return 2
	case StageLedger:
		return 3
	case StageCount:
		return 4
	}
	return 5
}

// Kinds returns the finding kinds a stage can report, in the order reports
// list them; nil for an unknown stage.
func (s Stage) Kinds() []Kind {
	switch s {
	case StageChangelog, StageOutput:
		return Kinds
	case StageSink:
		return SinkKinds
	case StageLedger:
		return LedgerKinds
	case StageCount:
		return CountKinds
	}
	return nil
}

// Row is one line of the loss report: the newest processed update of one
// (input, selected key) did not arrive at Stage. Topic/Partition/Offset name
// the input record carrying that update, i.e. what to replay.
type Row struct {
	Kind      Kind
	Stage     Stage
	Input     string
	Key       []byte
	Topic     string
	Partition int32
	Offset    int64
	// Timestamp is the input record's timestamp in Unix milliseconds.
	Timestamp int64
	// ExpectedTS is the timestamp the stage should have reached (Unix ms).
	ExpectedTS int64
	// ObservedTS is the newest timestamp the stage holds (Unix ms); only
	// meaningful when HasObserved is true.
	ObservedTS  int64
	HasObserved bool
	// Evidence proves the row, in the type of its stage: a *Witness on
	// changelog rows (whether the repartition topic still holds a
	// processed copy of the lost update), a *SinkEvidence on sink rows, a
	// *LedgerEvidence on ledger rows; nil when there is none (output
	// rows).
	Evidence Evidence
	// FirstSeen is when a reconciliation first reported the finding; zero
	// for an audit's rows.
	FirstSeen time.Time
	// Window is the window of a windowed aggregation's row (Key is then
	// the plain key); nil for any other row.
	Window *WindowRef
}

// WindowRef names one window of a windowed aggregation: its start and
// size in milliseconds.
type WindowRef struct {
	Start, Size int64
}

// CountEvidence proves an undercount: the changelog's newest record for
// the key (at Partition/Offset of Changelog) holds Count, while Processed
// input records of the key were processed (below the group's committed
// offsets at both hops); Processed-Count updates were lost.
type CountEvidence struct {
	Changelog string
	Partition int32
	Offset    int64
	Count     int64
	Processed int64
}

// Lost is the number of lost updates.
func (e *CountEvidence) Lost() int64 { return e.Processed - e.Count }

// TableEvidence proves a lost update of a table source's table: the
// input record of the row is the key's last processed record by offset,
// and the changelog's last record for the key in the same partition
// (Changelog, Partition, Offset, at TS, a tombstone or not; Has false when
// it holds none) is neither that record nor a later one of the key: when
// Has, it is the put of the key's earlier input record at InputOffset (of
// the row's topic and partition).
type TableEvidence struct {
	Changelog   string
	Partition   int32
	Has         bool
	Offset      int64
	TS          int64
	Tombstone   bool
	InputOffset int64
}

// Witness is what the repartition topic holds of a lost update: when Seen,
// the copy at Partition/Offset of Topic proves the update crossed the first
// hop and was lost before the store; otherwise the topic no longer holds it
// (purged) or never did.
type Witness struct {
	Topic     string
	Seen      bool
	Partition int32
	Offset    int64
}

// PartitionKind names a partition-level anomaly.
type PartitionKind string

// The partition-level finding kinds.
const (
	// PurgedPastCommit: a repartition partition's log start offset is above
	// the group's committed offset (the KAFKA-17635 signature): records
	// between the two were deleted before the application processed them.
	PurgedPastCommit PartitionKind = "purged_past_commit"
	// StuckLSO: the last stable offset stayed below the high watermark the
	// partition had when the audit started, for longer than the settle
	// timeout (a hanging transaction). Per-key findings that depend on this
	// partition are withheld.
	StuckLSO PartitionKind = "stuck_lso"
	// OffsetReset: the group's committed offset is below what an earlier
	// run recorded, or has disappeared.
	OffsetReset PartitionKind = "offset_reset"
	// Truncated: a partition's log end moved backwards between runs
	// (unclean leader election, last-replica-standing shutdown).
	Truncated PartitionKind = "truncated"
	// PoisonPill: the group's committed offset on an input partition points
	// at a record that does not decode, so an application failing on
	// deserialization errors is stuck there.
	PoisonPill PartitionKind = "poison_pill"
	// OffsetOutOfRange: the group's committed offset on an input or
	// repartition partition is below its log start or above its high
	// watermark (a truncation, retention, a recreated topic).
	OffsetOutOfRange PartitionKind = "offset_out_of_range"
	// UnprocessedPartition: an input partition holds records older than
	// audit.unprocessed_after and the group, which has committed offsets on
	// the topic's other partitions, has none on it.
	UnprocessedPartition PartitionKind = "unprocessed_partition"
)

// PartitionKinds lists every partition-level kind, in the order reports
// list them.
var PartitionKinds = []PartitionKind{PurgedPastCommit, StuckLSO, OffsetReset, Truncated, PoisonPill, OffsetOutOfRange, UnprocessedPartition}

// PartitionFinding is an anomaly of one topic partition.
type PartitionFinding struct {
	Kind      PartitionKind
	Topic     string
	Partition int32
	// Evidence proves the finding, in the type of its kind:
	// *PurgeEvidence, *StuckEvidence, *ResetEvidence, *TruncationEvidence,
	// *PoisonEvidence, *OutOfRangeEvidence or *UnprocessedEvidence.
	Evidence Evidence
}

// OutOfRangeEvidence proves offset_out_of_range: the group's committed
// offset is below LogStart or above HighWatermark.
type OutOfRangeEvidence struct {
	Group         string
	Committed     int64
	LogStart      int64
	HighWatermark int64
}

// UnprocessedEvidence proves unprocessed_partition: the partition holds
// records [LogStart, LSO), the first of them at FirstTimestamp (Unix ms),
// older than Age, and the group has no committed offset on it.
type UnprocessedEvidence struct {
	Group          string
	LogStart, LSO  int64
	FirstTimestamp int64
	Age            time.Duration
}

// PurgeEvidence proves purged_past_commit: the log starts above the offset
// the group committed.
type PurgeEvidence struct {
	Group     string
	LogStart  int64
	Committed int64
}

// StuckEvidence proves stuck_lso: the LSO stayed below the high watermark
// seen when the group offsets were read for the whole settle timeout.
type StuckEvidence struct {
	LSO                int64
	StartHighWatermark int64
	HighWatermark      int64
	Waited             time.Duration
	// Holder is the open transaction holding the LSO; nil when it could
	// not be named (HolderError says why, "" when nothing was asked).
	Holder      *TxnHolder
	HolderError string
}

// TxnHolder is the open transaction holding a partition's LSO, from
// DescribeProducers on the partition's leader and ListTransactions.
type TxnHolder struct {
	Leader        int32
	ProducerID    int64
	ProducerEpoch int32
	StartOffset   int64
	// TransactionalID and State are "" when no transaction coordinator
	// lists the producer (a hanging transaction, KIP-890).
	TransactionalID string
	State           string
}

// ResetEvidence proves offset_reset: the group had committed PrevCommitted
// at PrevRun and now has Committed (HasCommitted false: none at all).
type ResetEvidence struct {
	Group         string
	PrevCommitted int64
	PrevRun       time.Time
	Committed     int64
	HasCommitted  bool
}

// TruncationEvidence proves truncated: the high watermark was
// PrevHighWatermark at PrevRun and is lower now.
type TruncationEvidence struct {
	PrevHighWatermark int64
	PrevRun           time.Time
	HighWatermark     int64
}

// PoisonEvidence names the undecodable record the group's committed offset
// points at.
type PoisonEvidence struct {
	Group string
	// Offset is the record's offset (the committed offset).
	Offset int64
	// Error is the decoder's description of the problem.
	Error string
}

// InputCounts are the per-input counters of the summary.
type InputCounts struct {
	Scanned       int64
	Audited       int64
	Pending       int64
	NullKey       int64
	NullValue     int64
	DecodeErrors  int64
	OutsideWindow int64
	// Filtered are the records a declared filter of a per-record stream
	// stage drops by design, Uncertain those whose declared predicate or
	// re-key could not be evaluated (neither expected nor reported).
	Filtered  int64
	Uncertain int64
}

// StageCounts are the per-stage counters of the summary.
type StageCounts struct {
	KeysChecked int64
	Findings    map[Kind]int64
	// KeysPending counts, at the output of a pipeline with a suppress
	// buffer, the (input, key) pairs the output lacks while the buffer
	// still holds the key: not yet emitted, so not lost.
	KeysPending int64
}

// PartialReason says why a run is partial.
type PartialReason string

// The reasons a run is partial.
const (
	// PartialStuck: some changelog or output partitions have a hanging
	// transaction; findings that depend on them are withheld.
	PartialStuck PartialReason = "stuck_lso"
)

// InconclusiveReason says why an input could not be checked.
type InconclusiveReason string

// The reasons a verdict is inconclusive.
const (
	// NoCommittedOffsets: the group has no committed offset on any
	// partition of the input, so nothing counts as processed.
	NoCommittedOffsets InconclusiveReason = "no_committed_offsets"
	// MostlyUndecodable: most processed records of the input could not be
	// decoded or their key could not be selected.
	MostlyUndecodable InconclusiveReason = "mostly_undecodable"
	// NothingAudited: the input had records, but none of them could be
	// audited (all pending, dropped or outside the window).
	NothingAudited InconclusiveReason = "nothing_audited"
	// EmptyWindow: no input record falls inside the audit window.
	EmptyWindow InconclusiveReason = "empty_window"
	// NoRecords: no audit window, and no input holds any record.
	NoRecords InconclusiveReason = "no_records"
)

// InconclusiveReasons lists every reason, in the order reports list them.
var InconclusiveReasons = []InconclusiveReason{NoCommittedOffsets, MostlyUndecodable, NothingAudited, EmptyWindow, NoRecords}

// Stages lists the stages of the Kafka Streams audit, in pipeline order.
var Stages = []Stage{StageChangelog, StageOutput}

// Inconclusive is one reason the run cannot vouch for an input.
type Inconclusive struct {
	Reason InconclusiveReason
	// Input is the input's name; "" for a reason about the whole run
	// (EmptyWindow, NoRecords).
	Input string
	// Group is the consumer group (NoCommittedOffsets).
	Group string
	// Key, set by lossaudit compare, is the configuration key deciding
	// what is due (compare.group or compare.grace); Input is then a
	// pair's name, and Topic, for MostlyUndecodable, the pair's topic
	// (source or sink) whose records mostly did not decode.
	Key   string
	Topic string
	// Counts are the input's counters when the verdict was reached.
	Counts InputCounts
	// Field is the configured field path that failed to decode and
	// Nearest the writer schema's field paths closest to it
	// (MostlyUndecodable, when the errors are missing fields).
	Field   string
	Nearest []string
	// TopError is the most frequent decode error class.
	TopError string
	// Window is the audit window and DataFrom/DataTo the time range of
	// the data found (EmptyWindow); a zero DataFrom means no data.
	Window           Window
	DataFrom, DataTo time.Time
}

// ReadIssue is what reading one partition met that the user should know:
// offsets skipped because retention or a purge passed them while reading
// (Gaps), and failed fetches that were retried (Retries).
type ReadIssue struct {
	Topic     string
	Partition int32
	Gaps      int64
	Retries   int64
}

// SchemaSource says how a schema source fared: Down with the error when it
// failed, ServedBy naming the source that answered instead.
type SchemaSource struct {
	Source   string
	Error    string
	ServedBy string
}

// Window is the audit window; zero times are unbounded.
type Window struct {
	From, To time.Time
}

// Summary is everything a run reports besides the per-key rows.
type Summary struct {
	Started  time.Time
	Finished time.Time
	// KeysRedacted says the rows' keys are keyed hashes
	// (report.RedactKeys), not the records' keys.
	KeysRedacted bool
	// Partial is set when findings were withheld; Reason says why and
	// Withheld how many rows.
	Partial       bool
	PartialReason PartialReason
	Withheld      int64
	// Inconclusive lists why some inputs (or the run) could not be checked.
	Inconclusive []Inconclusive
	Inputs       map[string]*InputCounts
	// InputOrder lists input names in configured (join) order.
	InputOrder []string
	Stages     map[Stage]*StageCounts
	// Partitions are in report order (SortPartitions).
	Partitions []PartitionFinding
	// Reads lists partitions whose reads met gaps or retries.
	Reads []ReadIssue
	// SchemaSources lists schema sources that failed during the run.
	SchemaSources []SchemaSource
	// Window is the audit window.
	Window Window
	// DecodeErrorsBySchema counts decode/extract errors per schema id and kind.
	DecodeErrorsBySchema map[string]int64
	// DecodeErrorSamples quotes the first few decode errors with the
	// coordinates of their records.
	DecodeErrorSamples []DecodeErrorSample
	// Timings are the durations of the run's phases.
	Timings map[string]time.Duration
	// Sections are the mode's own parts of the summary (Section): the
	// Kafka Streams audit's *Streams, a comparison's *CompareSummary; a
	// result without one is rendered as a Kafka Streams audit's.
	Sections []Section
	// Index says how much evidence the run kept: the records it read and
	// the index entries it wrote for them.
	Index IndexStats
	// Step describes a reconciliation step (of any mode); nil for an
	// audit.
	Step *Step
	// Group is what the application's group coordinator said of the group
	// when its offsets were read; nil when the run did not ask.
	Group *Group
}

// Group is a group as its coordinator described it (Kafka 4.x has several
// types: classic, consumer, streams, share).
type Group struct {
	ID string
	// Type is "classic", "consumer" (KIP-848), "streams" (KIP-1071) or
	// "share" (KIP-932); "" when the coordinator does not know the group.
	Type string
	// State is the state the type's describe API answered.
	State string
	// Members counts its members; -1 when unknown.
	Members int
	// Via names the request that described it (DescribeGroups v5,
	// StreamsGroupDescribe v0, ...).
	Via string
	// Error is set when the group could not be described; the run then
	// judges nothing stopped.
	Error string
}

// Pipeline describes the audited Kafka Streams pipeline: each input with
// its repartition topic and its store's changelog, joined in input order
// into the output topic.
type Pipeline struct {
	Inputs []PipelineInput
	Output string
	// Join is the type of the KTable-KTable joins: "" (left), "inner" or
	// "outer"; "cogroup" when the inputs feed one cogroup's table instead.
	Join string
}

// PipelineInput is one input of a Pipeline.
type PipelineInput struct {
	Name             string
	Topic            string
	RepartitionTopic string
	ChangelogTopic   string
	// Count says the input's table is a count (recounted).
	Count bool
	// Table says the input is read by a table source (builder.table,
	// toTable): no repartition topic, its table checked by the last
	// record by offset; ChangelogTopic is "" when the table is restored
	// from the input topic.
	Table bool
	// Operator is the operator that writes the input's table ("reduce",
	// "count", "aggregate", "table-source", "to-table"; "" reads as
	// "reduce").
	Operator string
	// BufferTopic is the changelog of the suppress buffer between the
	// input's table and the output, "" for none.
	BufferTopic string
}

// Timeline is a histogram of input records by their timestamp (the one the
// application sees, as in Row.Timestamp): per input, how many records were
// audited and how many were pending in each bucket. Buckets are Bucket wide
// and start at multiples of Bucket since the Unix epoch; a bucket absent
// from the map counts nothing.
type Timeline struct {
	Bucket time.Duration
	// Inputs maps an input's name to its counts by bucket start (Unix ms).
	Inputs map[string]map[int64]BucketCounts
}

// BucketCounts are the records of one input in one Timeline bucket.
type BucketCounts struct {
	Audited int64
	Pending int64
}

// IndexStats measures the on-disk evidence of a run.
type IndexStats struct {
	RecordsRead int64
	Entries     int64
}

// Step is what one step of a scheduled reconciliation did. Its per-input
// counters (Summary.Inputs) are totals since the baseline, so that they
// mean what one full audit's would; Read says what this step itself read.
type Step struct {
	// Number counts the steps on the state, 1 for the baseline.
	Number int64
	// Baseline is set on the first step of an empty state (a full audit,
	// or the window's).
	Baseline bool
	// BaselineAt is when the baseline ran; Previous when the last
	// committed step ran (zero on the baseline).
	BaselineAt, Previous time.Time
	// Read counts the records (committed and aborted) this step read, by
	// the role of the topic (the Kafka Streams audit's input, repartition,
	// changelog and output; a mode lists every role it reads, zeros
	// included).
	Read map[string]int64
	// KeysJudged counts the keys this step judged: those its reads touched,
	// those pending at the second hop, and those with open findings.
	KeysJudged int64
	// Resolved counts the findings this step found fixed (Result.Resolved).
	Resolved int64
	// Rebuilt lists the downstream partitions read again from their log
	// start because they were truncated.
	Rebuilt []string
}

// Result is the whole outcome of one audit.
type Result struct {
	Summary Summary
	// Rows are in report order (SortRows). For a reconciliation step they
	// are the findings open after it, new or not, with FirstSeen.
	Rows []Row
	// Resolved are the findings of earlier steps that this step found
	// fixed (a later update or a replay arrived), as last reported, in
	// report order; always empty for an audit.
	Resolved []Row
}

// HasFindings reports whether the result has any per-key or partition-level
// finding, which makes the audit exit with code 1.
func (r *Result) HasFindings() bool {
	return len(r.Rows) > 0 || len(r.Summary.Partitions) > 0
}

// Complete reports whether the run may vouch for its findings being all
// there is: neither partial nor inconclusive.
func (r *Result) Complete() bool {
	return !r.Summary.Partial && len(r.Summary.Inconclusive) == 0
}

// Pending returns the records of all inputs that are not yet processed.
func (s *Summary) Pending() int64 {
	var n int64
	for _, c := range s.Inputs {
		if c != nil {
			n += c.Pending
		}
	}
	return n
}

// DecodeErrorSample is one undecodable input record and why.
type DecodeErrorSample struct {
	Topic     string
	Partition int32
	Offset    int64
	Error     string
}
