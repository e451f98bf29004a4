// Package schema turns Kafka record values in the Confluent wire format
// (magic byte 0, 4-byte big-endian schema id, Avro binary) into the selected
// key and timestamp of a pipeline: it finds each record's writer schema in a
// chain of sources (a Confluent-compatible Schema Registry, the registry's
// `_schemas` storage topic, a directory of .avsc files), caches it by id for
// the run, and extracts a compiled field path from the Avro datum. Every
// per-record failure is a *DecodeError that callers count by kind and schema
// id; see docs/avro.md for the rules.
package schema

import (
	"encoding/binary"
	"fmt"
)

// Magic is the first byte of a Confluent-framed value.
const Magic = 0

// HeaderLen is the length of the Confluent header (magic byte + schema id).
const HeaderLen = 5

// SplitFrame splits a Confluent-framed value into its schema id and Avro
// payload (which aliases b). A value shorter than the header or with another
// first byte is a *DecodeError of kind KindShort or KindBadMagic.
func SplitFrame(b []byte) (id uint32, payload []byte, err error) {
	if len(b) < HeaderLen {
		return 0, nil, decodeErr(KindShort, 0, false, "", fmt.Errorf("value of %d bytes is shorter than the 5-byte Confluent header", len(b)))
	}
	if b[0] != Magic {
		return 0, nil, decodeErr(KindBadMagic, 0, false, "", fmt.Errorf("first byte is 0x%02x, not the Confluent magic byte 0", b[0]))
	}
	return binary.BigEndian.Uint32(b[1:5]), b[5:], nil
}
