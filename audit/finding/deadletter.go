package finding

// DeadLetters is the section of a run that read the application's
// dead-letter queue (Kafka Streams 4.2+, KIP-1034,
// errors.dead.letter.queue.topic.name): the input records the application
// dropped on purpose, which are not loss and are not audited. It is
// informational: nothing in it makes a verdict.
type DeadLetters struct {
	// Topic is the dead-letter topic (pipeline.dead_letter_topic).
	Topic string
	// Missing says the topic does not exist: nothing was dead-lettered
	// (the application's first dead-letter record would have created it,
	// or failed the application).
	Missing bool
	// Read counts the committed records read from the topic.
	Read int64
	// ByInput counts the dead-lettered input records per input, in
	// InputOrder.
	ByInput []InputDeadLetters
	// Records lists the dead-lettered input records in input order, then
	// by topic, partition and offset; at most MaxDeadLettered.
	Records []DeadLettered
	// Unlisted counts the dead-lettered input records past
	// MaxDeadLettered, counted in ByInput but not listed.
	Unlisted int64
	// Unreadable counts records of the topic without the source
	// coordinates in their __streams.errors.* headers (not written by
	// Kafka Streams' dead-letter queue, or garbled); they exempt nothing.
	Unreadable int64
	// Unmatched counts records naming a source record the run did not
	// count as dead-lettered: on another topic, not processed yet (at or
	// above the group's committed offset: the application did not skip
	// it, e.g. LogAndFail with a dead-letter queue), outside the window,
	// or a repartition copy no input record matches.
	Unmatched int64
}

// MaxDeadLettered bounds DeadLetters.Records.
const MaxDeadLettered = 10000

// SectionName implements Section: the key of the JSON block.
func (*DeadLetters) SectionName() string { return "dead_lettered" }

// InputDeadLetters counts one input's dead-lettered records.
type InputDeadLetters struct {
	Input string
	Count int64
}

// DeadLettered is one input record the application sent to its
// dead-letter queue.
type DeadLettered struct {
	// Input is the input's configured name; Topic, Partition and Offset
	// the input record; Timestamp its timestamp (Unix ms).
	Input     string
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64
	// ViaTopic, when not "", with ViaPartition and ViaOffset is the
	// repartition record the dead-letter record names: the application
	// failed at the second hop, processing the input record's copy.
	ViaTopic     string
	ViaPartition int32
	ViaOffset    int64
	// DLQPartition and DLQOffset locate the dead-letter record.
	DLQPartition int32
	DLQOffset    int64
	// Exception and Message are the error the application recorded
	// (__streams.errors.exception, __streams.errors.message).
	Exception string
	Message   string
}
