// Package ledger reads producer ledgers: files, one JSON object a line,
// saying what a producer sent and what the brokers answered. Two formats
// are accepted, line by line:
//
//   - the lines Kafka's VerifiableProducer prints
//     (org.apache.kafka.tools.VerifiableProducer): "producer_send_success"
//     with topic, partition, offset, key and value, and
//     "producer_send_error" with topic, key and value (key and value are
//     the strings it sent, null for none); its other lines
//     (startup_complete, tool_data, shutdown_complete, ...) are skipped;
//   - the native format: {"topic": T, "acked": true|false, "partition": P,
//     "offset": O, "key": K, "value": V, "id": I, "timestamp": MS}, where
//     partition and offset are required when acked, key and value are
//     standard base64 (absent or null for a null key or value), id is the
//     record's identity as text for matches other than record (a key, a
//     field's value, a header's value) in place of key and value, and
//     timestamp (Unix ms) is optional.
//
// The package only parses: what a line proves is decided by lossaudit
// compare.
package ledger

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Format is the format of one ledger line.
type Format uint8

// The ledger formats.
const (
	// VerifiableProducer: a line Kafka's VerifiableProducer printed.
	VerifiableProducer Format = iota + 1
	// Native: lossaudit's own format.
	Native
)

// Line is one send of a ledger.
type Line struct {
	// Number is the 1-based line number in the file.
	Number int64
	Format Format
	Topic  string
	// Acked says the send was acknowledged, at Partition and Offset.
	Acked     bool
	Partition int32
	Offset    int64
	// TS is the line's timestamp in Unix ms, 0 when it has none (for
	// VerifiableProducer, when the answer arrived).
	TS int64
	// Key and Value are the record's bytes, nil for null; HasID says the
	// line names the record by ID instead (native lines only).
	Key, Value []byte
	ID         string
	HasID      bool
}

// Error is a malformed ledger line.
type Error struct {
	Line int64
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// MaxLineBytes bounds one ledger line.
const MaxLineBytes = 16 << 20

// raw is every field either format may have.
type raw struct {
	Name      *string          `json:"name"`
	Topic     *string          `json:"topic"`
	Partition *int32           `json:"partition"`
	Offset    *int64           `json:"offset"`
	Key       *json.RawMessage `json:"key"`
	Value     *json.RawMessage `json:"value"`
	Acked     *json.RawMessage `json:"acked"`
	ID        *string          `json:"id"`
	Timestamp *int64           `json:"timestamp"`
}

// Read parses r and calls fn with every send, in line order; the Line is
// reused between calls. It returns how many lines were skipped (blank
// lines, VerifiableProducer's other events). A malformed line is an
// *Error naming it; an error from fn is returned as it is.
func Read(r io.Reader, fn func(l *Line) error) (skipped int64, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	var l Line
	var n int64
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			skipped++
			continue
		}
		send, err := parse(n, b, &l)
		if err != nil {
			return skipped, err
		}
		if !send {
			skipped++
			continue
		}
		if err := fn(&l); err != nil {
			return skipped, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return skipped, &Error{Line: n + 1, Msg: fmt.Sprintf("longer than %d bytes", MaxLineBytes)}
		}
		return skipped, fmt.Errorf("reading the ledger after line %d: %w", n, err)
	}
	return skipped, nil
}

// parse decodes line n into l and says whether it is a send.
func parse(n int64, b []byte, l *Line) (bool, error) {
	bad := func(format string, args ...any) error { return &Error{Line: n, Msg: fmt.Sprintf(format, args...)} }
	var x raw
	if err := json.Unmarshal(b, &x); err != nil || x.Acked != nil && string(*x.Acked) == "null" && x.Name == nil {
		if err == nil {
			err = errors.New("acked is null")
		}
		return false, bad("not a JSON object: %v", err)
	}
	*l = Line{Number: n, Key: l.Key[:0], Value: l.Value[:0]}
	if x.Timestamp != nil {
		l.TS = *x.Timestamp
	}
	var err error
	switch {
	case x.Name != nil:
		l.Format = VerifiableProducer
		switch *x.Name {
		case "producer_send_success":
			l.Acked = true
		case "producer_send_error":
		default:
			return false, nil
		}
		if l.Key, err = text(l.Key, x.Key); err != nil {
			return false, bad("key: %v", err)
		}
		if l.Value, err = text(l.Value, x.Value); err != nil {
			return false, bad("value: %v", err)
		}
	case x.Acked != nil:
		l.Format = Native
		if err := json.Unmarshal(*x.Acked, &l.Acked); err != nil {
			return false, bad("acked must be true or false")
		}
		if x.ID != nil {
			if x.Key != nil || x.Value != nil {
				return false, bad("has both an id and a key or value; give one or the other")
			}
			l.ID, l.HasID = *x.ID, true
			break
		}
		if l.Key, err = b64(l.Key, x.Key); err != nil {
			return false, bad("key: %v", err)
		}
		if l.Value, err = b64(l.Value, x.Value); err != nil {
			return false, bad("value: %v", err)
		}
	default:
		return false, bad(`is neither a VerifiableProducer line (no "name") nor a native one (no "acked")`)
	}
	if x.Topic == nil || *x.Topic == "" {
		return false, bad("has no topic")
	}
	l.Topic = *x.Topic
	if l.Acked {
		if x.Partition == nil || x.Offset == nil || *x.Partition < 0 || *x.Offset < 0 {
			return false, bad("acknowledged without a partition and an offset")
		}
		l.Partition, l.Offset = *x.Partition, *x.Offset
	}
	return true, nil
}

// text decodes a JSON string (or null) into dst's storage.
func text(dst []byte, m *json.RawMessage) ([]byte, error) {
	if m == nil || string(*m) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(*m, &s); err != nil {
		return nil, errors.New("must be a string or null")
	}
	if s == "" {
		return []byte{}, nil
	}
	return append(dst[:0], s...), nil
}

// b64 decodes a JSON base64 string (or null) into dst's storage.
func b64(dst []byte, m *json.RawMessage) ([]byte, error) {
	if m == nil || string(*m) == "null" {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(*m, &s); err != nil {
		return nil, errors.New("must be a base64 string or null")
	}
	out, err := base64.StdEncoding.AppendDecode(dst[:0], []byte(s))
	if err != nil {
		return nil, fmt.Errorf("is not standard base64: %v", err)
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}
