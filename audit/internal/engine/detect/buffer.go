package detect

// BufferState is what a suppress buffer's changelog holds for a key: its
// last committed record by offset (one key's records are in one
// partition, so offsets order them; the buffer's changelog records carry
// the producer's wall clock, not the buffered record's timestamp).
type BufferState struct {
	// Has is true when the changelog holds a committed record of the key;
	// Offset, Partition and Tombstone describe the last one.
	Has       bool
	Offset    int64
	Partition int32
	Tombstone bool
}

// add folds a committed record in: the later offset wins.
func (b *BufferState) add(partition int32, offset int64, tombstone bool) {
	if !b.Has || offset > b.Offset {
		b.Has, b.Offset, b.Tombstone = true, offset, tombstone
	}
	b.Partition = partition
}

// Add folds st (what is known of the buffer from elsewhere) into b.
func (b *BufferState) Add(st BufferState) {
	if st.Has {
		b.add(st.Partition, st.Offset, st.Tombstone)
	}
}

// BufferPending is the rule of a buffer stage, a KTable#suppress with
// Suppressed.untilTimeLimit between a table and its output: a key the
// output lacks (or holds older than expected) is pending, not lost, when
// the last committed record of the key in the buffer's changelog is a
// value; absent or a tombstone, the output rule stands (OutputLeftJoin with
// one table).
//
// Proof, from Kafka Streams (3.6.2 and 4.0, apache/kafka at 1eb7644):
//   - KTableSuppressProcessorSupplier's KTableSuppressProcessor puts every
//     update it receives into the buffer (the newest value and record
//     context per key) and emits a key only by evicting it (time limit
//     passed, or emitEarlyWhenFull's overCapacity), forwarding the
//     buffered record at its own record context's timestamp: the newest
//     update's, a count's or aggregate's max(ts), so at least expected.
//     Under untilTimeLimit safeToDropTombstones is false: nothing evicted is
//     dropped. shutDownWhenFull throws instead of evicting: the
//     application stops, offsets are not committed, that is lag.
//   - InMemoryTimeOrderedKeyValueChangeBuffer marks a key dirty on put and
//     on eviction, and its flush writes each dirty key to the changelog:
//     the buffered value (logValue) or, when evicted, a tombstone
//     (logTombstone), with a null timestamp (the producer's clock).
//   - ProcessorStateManager#flushCache, called by StreamTask#flush before
//     the offsets are committed, flushes each store's cache and then each
//     buffer in registration order; the aggregate's store is registered
//     before the buffer (InternalTopologyBuilder builds nodes in the order
//     they were added), so the updates the cache flush forwards reach the
//     buffer before the buffer is logged in the same commit.
//
// So once an update of K is processed (its offset committed), the commit
// that committed it logged K's buffer entry as a value, or as a tombstone
// with the eviction's output in the same transaction; every later
// tombstone of K comes with an eviction that emitted a value at least as
// new. If the last record is a tombstone, an output at least expected was
// written in that record's transaction: the output must hold it. If it is
// a value, K waits in the buffer for stream time to pass its time limit
// (which only new records advance): pending. The audit reads the buffer's
// changelog to a mark taken and settled before the output's mark
// (streams' settleDownstream), so every tombstone it sees belongs to a
// transaction whose output write is below the output's mark. A buffer
// whose logging is disabled has no changelog: the topic is missing and the
// audit stops. Suppressed.untilWindowCloses only applies to windowed
// tables, which the audit refuses.
func BufferPending(b BufferState) bool { return b.Has && !b.Tombstone }
