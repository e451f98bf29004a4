// Package finding holds the vocabulary of an audit result: the kinds of
// anomaly lossaudit can report, the per-(input, key) rows of the loss
// report, the partition-level findings and the run summary. It is shared by
// the check that produces findings and the reports that print them, and has
// no behaviour of its own beyond naming and ordering.
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
)

// Stage names where along the pipeline an update went missing.
type Stage string

// The stages, in pipeline order, as they appear in the CSV `stage` column.
const (
	// StageChangelog is between an input and its reduce store's changelog.
	StageChangelog Stage = "changelog"
	// StageOutput is between the reduce stores and the output topic.
	StageOutput Stage = "output"
)

// Order returns the position of a stage along the pipeline, for sorting.
func (s Stage) Order() int {
	switch s {
	case StageChangelog:
		return 0
	case StageOutput:
		return 1
	}
	return 2
}

// Row is one line of the loss report: the newest processed update of one
// (input, selected key) did not arrive at Stage. Topic/Partition/Offset name
// the input record carrying that update, i.e. what to replay.
type Row struct {
	Kind      Kind   `json:"finding"`
	Stage     Stage  `json:"stage"`
	Input     string `json:"input"`
	Key       []byte `json:"-"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Timestamp is the input record's timestamp in Unix milliseconds.
	Timestamp int64 `json:"-"`
	// ExpectedTS is the timestamp the stage should have reached (Unix ms).
	ExpectedTS int64 `json:"-"`
	// ObservedTS is the newest timestamp the stage holds (Unix ms); only
	// meaningful when HasObserved is true.
	ObservedTS  int64  `json:"-"`
	HasObserved bool   `json:"-"`
	Detail      string `json:"detail"`
}

// PartitionKind names a partition-level anomaly.
type PartitionKind string

// The partition-level finding kinds of CONTRACT.md.
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
	// run recorded, or the application restarted from earliest/latest.
	OffsetReset PartitionKind = "offset_reset"
	// Truncated: a partition's log end moved backwards between runs
	// (unclean leader election, last-replica-standing shutdown).
	Truncated PartitionKind = "truncated"
)

// PartitionFinding is an anomaly of one topic partition, with its evidence
// as human-readable text plus the offsets involved.
type PartitionFinding struct {
	Kind      PartitionKind    `json:"kind"`
	Topic     string           `json:"topic"`
	Partition int32            `json:"partition"`
	Evidence  string           `json:"evidence"`
	Offsets   map[string]int64 `json:"offsets,omitempty"`
}

// InputCounts are the per-input counters of the summary.
type InputCounts struct {
	Scanned       int64 `json:"scanned"`
	Audited       int64 `json:"audited"`
	Pending       int64 `json:"pending"`
	NullKey       int64 `json:"dropped_null_key"`
	NullValue     int64 `json:"dropped_null_value"`
	DecodeErrors  int64 `json:"decode_errors"`
	OutsideWindow int64 `json:"outside_window"`
}

// StageCounts are the per-stage counters of the summary.
type StageCounts struct {
	KeysChecked int64          `json:"keys_checked"`
	Findings    map[Kind]int64 `json:"findings"`
}

// Summary is everything a run reports besides the per-key rows.
type Summary struct {
	Started    time.Time               `json:"started"`
	Finished   time.Time               `json:"finished"`
	Partial    bool                    `json:"partial"`
	PartialWhy string                  `json:"partial_reason,omitempty"`
	Inputs     map[string]*InputCounts `json:"inputs"`
	// InputOrder lists input names in configured (join) order.
	InputOrder []string               `json:"input_order"`
	Stages     map[Stage]*StageCounts `json:"stages"`
	Partitions []PartitionFinding     `json:"partition_findings"`
	// DecodeErrorsBySchema counts decode/extract errors per schema id and kind.
	DecodeErrorsBySchema map[string]int64 `json:"decode_errors_by_schema,omitempty"`
	// DecodeErrorSamples quotes the first few decode errors with the
	// coordinates of their records.
	DecodeErrorSamples []DecodeErrorSample `json:"decode_error_samples,omitempty"`
	Timings            map[string]string   `json:"timings,omitempty"`
}

// Result is the whole outcome of one audit.
type Result struct {
	Summary Summary
	Rows    []Row
}

// HasFindings reports whether the result has any per-key or partition-level
// finding, which makes the audit exit with code 1.
func (r *Result) HasFindings() bool {
	return len(r.Rows) > 0 || len(r.Summary.Partitions) > 0
}

// DecodeErrorSample is one undecodable input record and why.
type DecodeErrorSample struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error"`
}
