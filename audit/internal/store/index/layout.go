package index

import (
	"encoding/binary"
	"fmt"
)

// Every entry about one key is stored with the key: a stored entry key is
//
//	hash u64 | keylen u32 | key | tag u8 | fields...
//
// with big-endian fixed-width numbers, so byte order is numeric order.
// hash (xxhash64 of the key) leads: partitions are its leading bits, and
// EachKey yields keys in hash order, not key order. Within a key, entries
// sort by tag, then by the caller's fields bytewise: callers that want an
// entry first (the newest, say) encode its fields so that it sorts first.
// The entry's value does not take part in the order.

// headLen is the bytes of a stored entry key before the key itself.
const headLen = 8 + 4

// MaxKeyLen is the longest key the index stores: far beyond any Kafka
// record (whose size the brokers bound by message.max.bytes).
const MaxKeyLen = 1<<32 - 1

func checkKey(key []byte) error {
	if uint64(len(key)) > MaxKeyLen {
		return fmt.Errorf("index: key of %d bytes is longer than %d", len(key), uint64(MaxKeyLen))
	}
	return nil
}

// appendHead appends the stored entry key prefix for key (of hash h) and
// tag.
func appendHead(b []byte, h uint64, key []byte, tag byte) []byte {
	b = binary.BigEndian.AppendUint64(b, h)
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	return append(b, tag)
}

// splitKey parses a stored entry key into the key, the tag and the fields.
// ok is false for malformed entries.
func splitKey(k []byte) (key []byte, tag byte, fields []byte, ok bool) {
	if len(k) < headLen {
		return nil, 0, nil, false
	}
	n := uint64(binary.BigEndian.Uint32(k[8:headLen]))
	if uint64(len(k)) < headLen+n+1 {
		return nil, 0, nil, false
	}
	end := headLen + int(n)
	return k[headLen:end], k[end], k[end+1:], true
}

// keyPart returns the part of a stored entry key that identifies its key
// (hash, length and key), for grouping; nil for malformed entries.
func keyPart(k []byte) []byte {
	if len(k) < headLen {
		return nil
	}
	n := uint64(binary.BigEndian.Uint32(k[8:headLen]))
	if uint64(len(k)) < headLen+n {
		return nil
	}
	return k[:headLen+int(n)]
}
