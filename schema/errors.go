package schema

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrorKind classifies a per-record decode error, for counting.
type ErrorKind uint8

// The decode error kinds.
const (
	// KindShort: the value is shorter than the 5-byte Confluent header.
	KindShort ErrorKind = iota + 1
	// KindBadMagic: the first byte is not the Confluent magic byte 0.
	KindBadMagic
	// KindUnknownSchema: no configured source knows the schema id.
	KindUnknownSchema
	// KindAvro: the payload does not decode with its writer schema, or the
	// writer schema itself is unusable (does not parse, not Avro).
	KindAvro
	// KindFieldMissing: the field path does not exist in the record's
	// writer schema (or in the union branch the record took).
	KindFieldMissing
	// KindWrongType: the field exists but has a type that cannot be a key
	// (record, array, map, float, double, decimal) or a timestamp.
	KindWrongType
)

var kindNames = map[ErrorKind]string{
	KindShort: "short", KindBadMagic: "bad_magic", KindUnknownSchema: "unknown_schema",
	KindAvro: "avro", KindFieldMissing: "field_missing", KindWrongType: "wrong_type",
}

// String returns the kind's stable name, as reports print it: short,
// bad_magic, unknown_schema, avro, field_missing, wrong_type.
func (k ErrorKind) String() string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// DecodeError is a per-record failure to frame, decode or extract a value.
// It is counted and reported, never fatal. Errors that are not
// *DecodeError (a registry that rejects the credentials, every schema source
// unreachable) mean the run cannot decode at all.
type DecodeError struct {
	Kind ErrorKind
	// SchemaID is the record's schema id; valid when HasID.
	SchemaID uint32
	HasID    bool
	// Path is the field path being extracted, for field errors.
	Path string
	// Topic, Partition, Offset locate the record; valid when HasCoords
	// (see Locate).
	Topic     string
	Partition int32
	Offset    int64
	HasCoords bool
	// Err is the underlying cause.
	Err error
}

// Error describes the failure with the record's coordinates when known.
func (e *DecodeError) Error() string {
	s := e.Kind.String() + ": "
	if e.HasCoords {
		s = fmt.Sprintf("%s[%d]@%d: %s", e.Topic, e.Partition, e.Offset, s)
	}
	return s + e.Err.Error()
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

func decodeErr(kind ErrorKind, id uint32, hasID bool, path string, err error) *DecodeError {
	return &DecodeError{Kind: kind, SchemaID: id, HasID: hasID, Path: path, Err: err}
}

// Locate attaches a record's coordinates to err: a *DecodeError gets a copy
// with Topic/Partition/Offset set, any other error is wrapped with them.
// nil stays nil.
func Locate(err error, topic string, partition int32, offset int64) error {
	if err == nil {
		return nil
	}
	var de *DecodeError
	if errors.As(err, &de) {
		c := *de
		c.Topic, c.Partition, c.Offset, c.HasCoords = topic, partition, offset, true
		return &c
	}
	return fmt.Errorf("%s[%d]@%d: %w", topic, partition, offset, err)
}

// CountKey identifies one bucket of decode errors.
type CountKey struct {
	Kind ErrorKind
	// SchemaID is 0 with HasID false for errors before the id is known
	// (short, bad magic).
	SchemaID uint32
	HasID    bool
}

// Counts tallies decode errors by kind and schema id. Not safe for
// concurrent use: keep one per goroutine and Merge.
type Counts map[CountKey]int64

// Add counts err if it is a *DecodeError and reports whether it was.
func (c Counts) Add(err error) bool {
	var de *DecodeError
	if !errors.As(err, &de) {
		return false
	}
	c[CountKey{Kind: de.Kind, SchemaID: de.SchemaID, HasID: de.HasID}]++
	return true
}

// Merge adds o's counts to c.
func (c Counts) Merge(o Counts) {
	for k, n := range o {
		c[k] += n
	}
}

// ByKind sums the counts per kind over all schema ids.
func (c Counts) ByKind() map[ErrorKind]int64 {
	m := map[ErrorKind]int64{}
	for k, n := range c {
		m[k.Kind] += n
	}
	return m
}
