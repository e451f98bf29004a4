package index

import (
	"encoding/binary"
	"fmt"
)

// The index is key-major: every entry about one selected key sorts next to
// every other entry about it, so a single sequential pass over the store
// sees, key after key, all the evidence the check needs. An entry key is
//
//	'r' | keylen u16 | key | section u8 | input u8 | section fields...
//
// with big-endian fixed-width numbers so that byte order is numeric order.
// Timestamps and offsets that should come newest-first are stored inverted
// (^v), which makes the first entry of a section its newest.
const (
	prefixRun     = 'r' // data of the current run, dropped at the start of the next
	prefixHistory = 'h' // per-partition facts kept across runs
)

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

// flagTombstone marks a changelog or output record whose value was null.
const flagTombstone = 1

func keyHead(key []byte, sec section, input uint8, extra int) ([]byte, error) {
	if len(key) > maxKeyLen {
		return nil, fmt.Errorf("selected key of %d bytes is longer than the index supports (%d)", len(key), maxKeyLen)
	}
	b := make([]byte, 0, 1+2+len(key)+2+extra)
	b = append(b, prefixRun)
	b = binary.BigEndian.AppendUint16(b, uint16(len(key)))
	b = append(b, key...)
	b = append(b, byte(sec), input)
	return b, nil
}

// splitKey parses an entry key into the selected key, section, input and the
// section-specific rest. ok is false for keys that are not run entries.
func splitKey(k []byte) (key []byte, sec section, input uint8, rest []byte, ok bool) {
	if len(k) < 3 || k[0] != prefixRun {
		return nil, 0, 0, nil, false
	}
	n := int(binary.BigEndian.Uint16(k[1:3]))
	if len(k) < 3+n+2 {
		return nil, 0, 0, nil, false
	}
	key = k[3 : 3+n]
	return key, section(k[3+n]), k[3+n+1], k[3+n+2:], true
}

func inv(v int64) uint64 { return ^uint64(v) }

func uninv(u uint64) int64 { return int64(^u) }
