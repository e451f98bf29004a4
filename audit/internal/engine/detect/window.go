package detect

import "encoding/binary"

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
