package detect

import (
	"encoding/binary"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// TimeWindows are time windows (TimeWindows.ofSizeAndGrace(size, grace),
// advanceBy(advance)) in milliseconds: tumbling when Advance is Size,
// hopping when it is less (0 < Advance <= Size).
type TimeWindows struct {
	Size, Advance, Grace int64
}

// WindowPlace is where a processed record of a windowed aggregation stands
// for one of its windows.
type WindowPlace int

// The places of WindowPlace.
const (
	// WindowOnTime: the record was certainly added to the window: the
	// window must hold it.
	WindowOnTime WindowPlace = iota
	// WindowLateOrUncertain: the aggregation may have dropped the record
	// from the window as late (or its stream time is unknown); counted,
	// never reported.
	WindowLateOrUncertain
	// WindowExpired: the window may be gone from the changelog or the
	// output by retention; counted, never reported.
	WindowExpired
	// WindowBadTimestamp: the record's timestamp is negative (or the
	// windows are malformed): Kafka Streams would not window it as
	// computed here; counted.
	WindowBadTimestamp
)

// valid says whether the windows are well formed (0 < Advance <= Size).
func (w TimeWindows) valid() bool { return w.Size > 0 && w.Advance > 0 && w.Advance <= w.Size }

// Starts returns the starts of the windows a record at ts (ts >= 0)
// belongs to, oldest first, as TimeWindows#windowsFor computes them: from
// max(0, ts - size + advance) rounded down to a multiple of advance, every
// advance up to ts. A tumbling window gives one, ts - ts mod size; nil for
// a negative ts or malformed windows.
func (w TimeWindows) Starts(ts int64) []int64 {
	if ts < 0 || !w.valid() {
		return nil
	}
	var out []int64
	for start := max(0, ts-w.Size+w.Advance) / w.Advance * w.Advance; start <= ts; start += w.Advance {
		out = append(out, start)
	}
	return out
}

// Place decides whether the processed record at ts of a windowed
// aggregation was certainly added to its window starting at start (one of
// Starts(ts)). streamMax is the greatest timestamp of the records in the
// partition the aggregation reads, from that partition's first offset to
// its end when the group's offsets had been read; known is false when the
// read did not start at the partition's first offset (the records before
// it are unknown, and so is stream time). retainedFrom is the newest
// record time whose windows the audited topics may have deleted by
// retention: a record at or before it is WindowExpired.
//
// Proof: KStreamWindowAggregate#process (Kafka Streams 3.3 to 4.x, in
// AbstractKStreamTimeWindowAggregateProcessor) keeps observedStreamTime
// in the processor instance, raised to the timestamp of every record with
// a non-null key before the window test; for each window of
// TimeWindows#windowsFor(ts) on its own, the record is added to window
// [start, end) only when end > observedStreamTime - grace, and otherwise
// skipped as expired. The field starts at -1 (NO_TIMESTAMP) in a new
// instance (a new task: a restart, a task moved to this thread), but
// init() does not reset it: a task revived in place (TaskCorruptedException:
// StreamTask#revive, closeTopology then initializeTopology on the same
// processors) or suspended and resumed keeps it, and then reprocesses from
// its committed offset with the stream time of records it processed
// beyond that offset. So the maximum timestamp of the records before a
// record is not a bound; the maximum over the whole partition is: the
// processor reads one partition of one topic (the caller checks that the
// sub-topology has a single source topic), every record it processed
// before the commit that covers this one lies below the partition's end
// when the group's offsets were read (read before the partition's end),
// and a committed record is not processed again. With end > streamMax -
// grace the record was added to the window, at every processing of it.
// The window store's retention is at least size + grace
// (WindowStoreMaterializer refuses less), so a window accepting records is
// never expired from the store; the changelog and output topics may delete
// old records by time (a broker deletes a segment whose newest timestamp
// is older than its retention), which retainedFrom covers: the window's
// changelog and output records carry a timestamp at least ts.
func (w TimeWindows) Place(start, ts, streamMax int64, known bool, retainedFrom int64) WindowPlace {
	if ts < 0 || !w.valid() {
		return WindowBadTimestamp
	}
	if !known || start+w.Size <= streamMax-w.Grace {
		return WindowLateOrUncertain
	}
	if ts <= retainedFrom {
		return WindowExpired
	}
	return WindowOnTime
}

// WindowedKey returns key followed by the 8-byte big-endian window start:
// the form TimeWindowedSerializer writes (WindowKeySchema#toBinary) and
// the unit a windowed aggregation's check is keyed by.
func WindowedKey(key []byte, start int64) []byte {
	out := make([]byte, len(key)+8)
	copy(out, key)
	binary.BigEndian.PutUint64(out[len(key):], uint64(start))
	return out
}

// SplitWindowedKey splits a key written by TimeWindowedSerializer,
// [key][8-byte window start], into the key and the start; ok is false for
// a key too short to hold a window start.
func SplitWindowedKey(b []byte) (key []byte, start int64, ok bool) {
	if len(b) < 8 {
		return nil, 0, false
	}
	n := len(b) - 8
	return b[:n], int64(binary.BigEndian.Uint64(b[n:])), true
}

// SplitWindowStoreKey splits the key of a window store's changelog record,
// [key][8-byte window start][4-byte sequence number]
// (WindowKeySchema#toStoreKeyBinary), into the key and the start; ok is
// false for a key too short.
func SplitWindowStoreKey(b []byte) (key []byte, start int64, ok bool) {
	if len(b) < 12 {
		return nil, 0, false
	}
	return SplitWindowedKey(b[:len(b)-4])
}

// FinalPlace is where a window of a windowed aggregation emitted final
// (suppress(untilWindowCloses)) stands for the output rule (WindowFinal).
type FinalPlace int

// The places of FinalPlace.
const (
	// FinalOpen: the window is not certainly closed: its final result may
	// not be due yet; pending, never reported.
	FinalOpen FinalPlace = iota
	// FinalClosed: the window is certainly closed: its final result is
	// due, unless the buffer still holds it.
	FinalClosed
	// FinalExpired: the window is closed, but its changelog record is old
	// enough for the output to have deleted its result by retention;
	// counted, never reported.
	FinalExpired
)

// Closed places the window starting at start against bound, the
// greatest timestamp of a record of the aggregation's partition that was
// processed and certainly added to one of its windows (Place gave
// WindowOnTime or WindowExpired); known is false when no such record is
// known. retainedFrom is as for Place, ts the window's changelog
// timestamp. The window is closed when its end plus grace is at or before
// bound (see WindowFinal for why that bound is sound).
func (w TimeWindows) Closed(start, ts, bound int64, known bool, retainedFrom int64) FinalPlace {
	switch {
	case !known || !w.valid() || start+w.Size+w.Grace > bound:
		return FinalOpen
	case ts <= retainedFrom:
		return FinalExpired
	}
	return FinalClosed
}

// WindowFinal is the output rule of a time-windowed aggregation followed
// by suppress(Suppressed.untilWindowCloses(...)) (window emit: final):
// cl is what the aggregation's changelog holds of the window (K, w), out
// what the output holds of it, buf the buffer changelog's last record of
// it, place where the window stands (Closed). The window's result is
// owed (checked) when the changelog's newest record is a committed value
// (at T) and the window is FinalClosed; it is pending (not bad) when the
// buffer's last record is a value; otherwise the output must hold (K, w)
// at a timestamp at least T, else missing, stale or aborted (TableMax).
//
// Proof (apache/kafka at 1eb7644, the same at 3.6.2):
//   - KStreamWindowAggregate#process puts each accepted record's window at
//     ValueAndTimestamp(newAgg, max(record ts, old ts)) and forwards the
//     Change at that timestamp (directly, or from the cache when it is
//     flushed: TimestampedCacheFlushListener); the changelog logs the put
//     with that timestamp (ChangeLoggingTimestampedWindowBytesStore), and
//     ProcessorContextImpl#forward gives the record context the forwarded
//     record's timestamp, which the suppress buffer keeps. So
//     the update that wrote the changelog's newest value of (K, w), at T,
//     reached the suppress processor at T in the transaction that
//     committed it: ProcessorStateManager#flushCache flushes the window
//     store's cache before the buffer, which is registered after it.
//   - KTableImpl#suppress with untilWindowCloses builds
//     FinalResultsSuppressionBuilder#buildFinalResultsSuppression(grace):
//     buffer time WindowEndTimeDefinition (the window's end), suppress
//     duration the window's grace, a StrictBufferConfig (never
//     emitEarlyWhenFull: unbounded, or shutDownWhenFull, which stops the
//     application: lag), safeToDropTombstones. KTableSuppressProcessor
//     puts every Change into the buffer (the newest per key, with its
//     record context) and evicts, after each put, every key whose window
//     end is at or before its stream time minus grace, forwarding the
//     buffered record at its record context's timestamp (the newest
//     update's, T or later); only a Change whose new value is null is
//     dropped, and then the changelog's newest record of (K, w) is a
//     tombstone, which owes nothing here.
//   - InMemoryTimeOrderedKeyValueChangeBuffer#flush logs each key made
//     dirty by a put (logValue: the buffered value) or an eviction
//     (logTombstone), keyed by the serialized windowed key
//     (TimeWindowedSerializer: [key][8-byte window start]), in the
//     transaction that forwards the eviction's result to the output.
//
// So after the update at T was processed, the buffer changelog logged
// (K, w) as a value, or as a tombstone whose transaction wrote a result
// at least T to the output; every later tombstone of (K, w) comes with an
// eviction of a buffered update at least as new. If the buffer's last
// record of (K, w) is a tombstone (or none: compaction removed a value
// before its tombstone, and then the tombstone), the output holds (K, w)
// at least at T; if it is a value, the window waits for the suppress's
// stream time (pending). The audit reads the buffer changelog to a mark
// settled before the output's mark (settleDownstream), as for
// BufferPending. That much is sound whatever the window's state; the
// rule checks only windows certainly closed, which makes "pending" mean
// what the user expects of a window still open: the bound of Closed is
// the timestamp of a record the aggregation processed (below the group's
// committed offset) and certainly added to a window (its window's end
// after the partition's greatest timestamp minus grace, Place), so its
// update reached the suppress processor of the partition's task with a
// timestamp at least the record's, raising that processor's stream time
// to at least bound in a committed transaction, which evicted every
// buffered window ending at or before bound minus grace. A window closed
// by that bound and still held as a value by the buffer changelog (an
// update after a restart, whose new processor instance starts its stream
// time anew) is pending by the buffer rule.
func WindowFinal(cl, out StageState, buf BufferState, place FinalPlace) (kind finding.Kind, checked, pending, bad bool) {
	if !cl.Has || cl.Tombstone || place != FinalClosed {
		return "", false, false, false
	}
	if BufferPending(buf) {
		return "", true, true, false
	}
	kind, bad = TableMax(out, cl.TS)
	return kind, true, false, bad
}
