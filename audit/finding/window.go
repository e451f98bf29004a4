package finding

// Windows is a time-windowed aggregation's section of an audit: its
// declared windows and what its records were, beside the input counts
// (whose audited records are those with at least one window checked). The
// counters count (record, window) pairs: a record of hopping windows
// belongs to several. Informational: nothing in it makes a verdict.
type Windows struct {
	// Input is the windowed input's name, Repartition the topic its
	// records were read from (the input topic when the aggregation reads
	// it without repartitioning).
	Input, Repartition string
	// Size, Advance and Grace are the declared windows, in milliseconds
	// (Advance equals Size for tumbling windows).
	Size, Advance, Grace int64
	// OnTime counts the processed records certainly added to their
	// window: checked.
	OnTime int64
	// LateOrUncertain counts the processed records the aggregation may
	// have dropped as late (their window ends at or before the
	// partition's greatest timestamp minus grace), or whose partition was
	// not read from offset 0: counted, never reported.
	LateOrUncertain int64
	// Expired counts the processed records older than the changelog's or
	// output's retention: their windows may be gone. BadTimestamp counts
	// records with a negative timestamp.
	Expired, BadTimestamp int64
	// UnknownPartitions counts the repartition partitions whose read did
	// not start at offset 0 (purged by the application): their stream
	// time is unknown and none of their records is checked.
	UnknownPartitions int64
	// BadChangelogKeys and BadOutputKeys count records whose key is too
	// short to hold a window (12 and 8 bytes): not windowed keys, skipped.
	BadChangelogKeys, BadOutputKeys int64
	// Final says that the windows are emitted final
	// (suppress(untilWindowCloses)): the output is checked per window
	// certainly closed. FinalOpen counts the windows the changelog holds
	// as a value that are not certainly closed, FinalBuffered the closed
	// ones the buffer's changelog still holds as a value, FinalExpired
	// the closed ones old enough for retention to have deleted their
	// result: pending or expired, never reported.
	Final                                  bool
	FinalOpen, FinalBuffered, FinalExpired int64
}

// SectionName implements Section: the key of the JSON block "windows".
func (*Windows) SectionName() string { return "windows" }
