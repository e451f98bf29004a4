package index

import (
	"encoding/binary"
	"fmt"

	"github.com/cespare/xxhash/v2"
)

// The index is key-major: every entry about one selected key sorts next to
// every other entry about it, so a single sequential pass over the sorted
// entries sees, key after key, all the evidence the check needs. An entry
// key is
//
//	hash u64 | keylen u16 | key | section u8 | input u8 | section fields...
//
// with big-endian fixed-width numbers so that byte order is numeric order.
// hash (xxhash64 of the key) leads so that sorting mostly compares one
// integer; keys therefore come in hash order, not key order. Timestamps and
// offsets that should come newest-first are stored inverted (^v), which
// makes the first entry of a section its newest.

// section identifies what an entry records about a key.
type section uint8

const (
	secRepartition      section = 0x08 // repartition record: tail ts fp -> part off (before inputs: the tail set is known when inputs stream by)
	secInput            section = 0x10 // audited-candidate input record: ^ts ^part ^off -> fp
	secChangelog        section = 0x30 // committed changelog record: ^ts ^off -> flags
	secChangelogAborted section = 0x40 // aborted changelog record: ^ts
	secOutput           section = 0x50 // committed output record: ^ts ^off -> flags
	secOutputAborted    section = 0x60 // aborted output record: ^ts
)

// maxKeyLen bounds the selected keys the index can hold; Kafka keys are
// bytes of arbitrary length, but a 64 KiB selected key is not a real one.
const maxKeyLen = 1<<16 - 1

// headLen is the bytes of an entry key before the selected key.
const headLen = 8 + 2

// flagTombstone marks a changelog or output record whose value was null.
const flagTombstone = 1

func checkKey(key []byte) error {
	if len(key) > maxKeyLen {
		return fmt.Errorf("selected key of %d bytes is longer than the index supports (%d)", len(key), maxKeyLen)
	}
	return nil
}

// appendHead appends the entry key prefix for key, section and input.
func appendHead(b []byte, key []byte, sec section, input uint8) []byte {
	b = binary.BigEndian.AppendUint64(b, xxhash.Sum64(key))
	b = binary.BigEndian.AppendUint16(b, uint16(len(key)))
	b = append(b, key...)
	return append(b, byte(sec), input)
}

// splitKey parses an entry key into the selected key, section, input and the
// section-specific rest. ok is false for malformed keys.
func splitKey(k []byte) (key []byte, sec section, input uint8, rest []byte, ok bool) {
	if len(k) < headLen {
		return nil, 0, 0, nil, false
	}
	n := int(binary.BigEndian.Uint16(k[8:headLen]))
	if len(k) < headLen+n+2 {
		return nil, 0, 0, nil, false
	}
	key = k[headLen : headLen+n]
	return key, section(k[headLen+n]), k[headLen+n+1], k[headLen+n+2:], true
}

func inv(v int64) uint64 { return ^uint64(v) }

func uninv(u uint64) int64 { return int64(^u) }
