package schema

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lossaudit/lossaudit/schema/avroproj"
)

// Extractor pulls one field path (e.g. "customerId", "customer.id") out of
// Confluent-framed Avro values, compiled once per writer schema id; safe for
// concurrent use. Segments are record field names; nullable unions on the
// way are followed into the branch the record took, and a null anywhere on
// the path makes the value null.
type Extractor struct {
	reg  *Registry
	path string

	mu    sync.Mutex                            // serialises writers of plans
	plans atomic.Pointer[map[uint32]*planEntry] // copy-on-write, read lock-free
}

type planEntry struct {
	w    *Writer
	plan *avroproj.Plan
	err  error // per-id failure (*DecodeError), returned for every record
}

// Extractor compiles a field path. The path must be non-empty dotted field
// names; whether it exists is checked per writer schema.
func (r *Registry) Extractor(path string) (*Extractor, error) {
	if path == "" {
		return nil, errors.New("empty field path")
	}
	for _, s := range strings.Split(path, ".") {
		if s == "" {
			return nil, fmt.Errorf("field path %q has an empty segment", path)
		}
	}
	e := &Extractor{reg: r, path: path}
	m := map[uint32]*planEntry{}
	e.plans.Store(&m)
	return e, nil
}

// Path returns the extractor's field path.
func (e *Extractor) Path() string { return e.path }

func (e *Extractor) planFor(ctx context.Context, id uint32) (*planEntry, error) {
	if p, ok := (*e.plans.Load())[id]; ok {
		return p, nil
	}
	w, err := e.reg.Lookup(ctx, id)
	pe := &planEntry{w: w}
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) {
			return nil, err // not per-record: do not cache
		}
		pe.err = err
	} else if pe.plan, err = w.proj.Project(e.path); err != nil {
		pe.err = decodeErr(KindFieldMissing, id, true, e.path, fmt.Errorf("schema id %d: %w", id, err))
	}
	e.mu.Lock()
	old := *e.plans.Load()
	if p, ok := old[id]; ok {
		e.mu.Unlock()
		return p, nil
	}
	m := make(map[uint32]*planEntry, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[id] = pe
	e.plans.Store(&m)
	e.mu.Unlock()
	return pe, nil
}

// value frames, looks up and projects one value.
func (e *Extractor) value(ctx context.Context, b []byte) (uint32, avroproj.Value, error) {
	id, payload, err := SplitFrame(b)
	if err != nil {
		return 0, avroproj.Value{}, err
	}
	pe, err := e.planFor(ctx, id)
	if err != nil {
		return id, avroproj.Value{}, err
	}
	if pe.err != nil {
		return id, avroproj.Value{}, pe.err
	}
	v, err := pe.w.proj.Decode(pe.plan, payload)
	if err != nil {
		var pathErr *avroproj.PathError
		if errors.As(err, &pathErr) {
			return id, v, decodeErr(KindFieldMissing, id, true, e.path, fmt.Errorf("schema id %d: %w", id, err))
		}
		return id, v, decodeErr(KindAvro, id, true, e.path, fmt.Errorf("schema id %d: %w", id, err))
	}
	return id, v, nil
}

// Extract returns the value at the path as key text (see ExtractContext).
func (e *Extractor) Extract(value []byte) (key string, isNull bool, err error) {
	return e.ExtractContext(context.Background(), value)
}

// ExtractContext returns the value at the path as key text, the bytes a
// Java application's String serde writes for it: strings as Java decodes
// them (see JavaStringBytes: valid UTF-8 as is, malformed sequences as
// U+FFFD), int and long in decimal, enums as their symbol, booleans as
// true/false, bytes and fixed as their raw bytes (Java has no one string
// form of them, so an application's own conversion is assumed to keep the
// bytes). isNull is true when the
// value (or a record on the way) is null: Kafka Streams drops such records
// ("null selected key"). float, double, decimal, record, array and map
// values are KindWrongType errors. ctx bounds a schema lookup on the first
// record of each schema id. Per-record failures are *DecodeError; other
// errors mean schemas cannot be looked up at all.
func (e *Extractor) ExtractContext(ctx context.Context, value []byte) (key string, isNull bool, err error) {
	k, isNull, err := e.ExtractKey(ctx, value)
	return string(k), isNull, err
}

// ExtractKey is ExtractContext returning the key's bytes, which may alias
// value (a string, bytes or fixed value's own bytes, when valid as they
// are; capped, so an append copies): the audit reads millions of keys, each needed only while its
// record is handled, and a copy per record was a tenth of the key's cost.
func (e *Extractor) ExtractKey(ctx context.Context, value []byte) (key []byte, isNull bool, err error) {
	key, isNull, err = e.extractKey(ctx, value)
	return key[:len(key):len(key)], isNull, err // capped: an append copies
}

func (e *Extractor) extractKey(ctx context.Context, value []byte) (key []byte, isNull bool, err error) {
	id, v, err := e.value(ctx, value)
	if err != nil {
		return nil, false, err
	}
	if v.Null {
		return nil, true, nil
	}
	switch v.Type {
	case avroproj.String:
		return JavaStringBytes(v.Bytes), false, nil
	case avroproj.Enum:
		return v.Bytes, false, nil
	case avroproj.Bytes, avroproj.Fixed:
		if v.Logical == "decimal" {
			break
		}
		return v.Bytes, false, nil
	case avroproj.Int, avroproj.Long:
		return strconv.AppendInt(nil, v.Int, 10), false, nil
	case avroproj.Boolean:
		return strconv.AppendBool(nil, v.Int != 0), false, nil
	}
	return nil, false, decodeErr(KindWrongType, id, true, e.path, fmt.Errorf("schema id %d: field %q is %s, which cannot be a key", id, e.path, typeText(v)))
}

// Timestamp returns the value at the path as Unix milliseconds (see
// TimestampContext).
func (e *Extractor) Timestamp(value []byte) (ms int64, isNull bool, err error) {
	return e.TimestampContext(context.Background(), value)
}

// TimestampContext returns the value at the path as Unix milliseconds: a
// long without logical type is taken as milliseconds, timestamp-millis as
// is, timestamp-micros and timestamp-nanos are floored to milliseconds.
// Other types (int, local-timestamp-*, strings...) are KindWrongType errors.
func (e *Extractor) TimestampContext(ctx context.Context, value []byte) (ms int64, isNull bool, err error) {
	id, v, err := e.value(ctx, value)
	if err != nil {
		return 0, false, err
	}
	if v.Null {
		return 0, true, nil
	}
	if v.Type == avroproj.Long {
		switch v.Logical {
		case "", "timestamp-millis":
			return v.Int, false, nil
		case "timestamp-micros":
			return floorDiv(v.Int, 1000), false, nil
		case "timestamp-nanos":
			return floorDiv(v.Int, 1000000), false, nil
		}
	}
	return 0, false, decodeErr(KindWrongType, id, true, e.path, fmt.Errorf("schema id %d: field %q is %s, not a timestamp (long, timestamp-millis, timestamp-micros)", id, e.path, typeText(v)))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func typeText(v avroproj.Value) string {
	if v.Logical != "" {
		return v.Type.String() + " (" + v.Logical + ")"
	}
	return v.Type.String()
}
