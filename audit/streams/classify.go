package streams

// class is what an input record is to the audit.
type class uint8

// The classes of input records, in the order classify decides them.
const (
	// candidate: counts for the audit (committed, processed at the first
	// hop, in the window, with a value and a selected key).
	candidate class = iota
	// outsideWindow: its timestamp is outside the audit window.
	outsideWindow
	// pending: at or above the group's committed offset: not processed yet.
	pending
	// nullValue: a null value, which the reduce skips (dropped by design).
	nullValue
	// undecodable: the value does not decode or the key cannot be selected.
	undecodable
	// nullKey: the selected key is null, which selectKey's repartitioning
	// drops (dropped by design).
	nullKey
	// deadLettered: processed, and named by the application's dead-letter
	// queue: dropped on purpose (decided after classify).
	deadLettered
)

// window bounds the audited timestamps (Unix ms); zero is unbounded.
type window struct{ from, to int64 }

func (w window) contains(ts int64) bool {
	return (w.from == 0 || ts >= w.from) && (w.to == 0 || ts <= w.to)
}

// classify decides what one input record is to the audit. processed says
// whether its offset is below the group's committed offset; hasValue
// whether its value is non-null; ts is the timestamp the application sees
// (the record's own when the value does not decode) and status what
// selecting its key gave. The window applies first, so records outside it
// are never counted as pending or dropped; lag comes next, so an
// unprocessed record is pending whatever it holds.
func classify(processed, hasValue bool, ts int64, status SelectStatus, w window) class {
	switch {
	case !w.contains(ts):
		return outsideWindow
	case !processed:
		return pending
	case !hasValue:
		return nullValue
	case status == DecodeError:
		return undecodable
	case status == NullKey:
		return nullKey
	}
	return candidate
}
