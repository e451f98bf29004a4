// Package streamsmeta decodes what Kafka Streams commits in its offsets' metadata string, for the
// test bed's evidence that emitStrategy(onWindowClose) cannot be audited soundly: the auditor
// itself never reads it (docs/topology.md, "emitStrategy(onWindowClose)").
package streamsmeta

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// OffsetMeta is what a Kafka Streams task commits in the metadata string
// of each of its input partitions' offsets (TopicPartitionMetadata).
type OffsetMeta struct {
	// Version is the encoding's magic byte: 1 (partition time only) or 2
	// (partition time and processor metadata); 0 for an empty string.
	Version byte
	// PartitionTime is the partition's stream time at the commit (-1,
	// RecordQueue.UNKNOWN, when none).
	PartitionTime int64
	// Processor is the task's processor metadata (ProcessorMetadata), by
	// key; nil when the encoding has none. A time-windowed aggregation
	// emitted with EmitStrategy.onWindowClose keeps under its store's name
	// the last window close time it emitted up to.
	Processor map[string]int64
}

// errOffsetMeta wraps every reason DecodeOffsetMeta gives up.
var errOffsetMeta = errors.New("not Kafka Streams offset metadata")

// DecodeOffsetMeta decodes the metadata string of a Kafka Streams commit,
// as TopicPartitionMetadata#encode writes it (Kafka Streams 3.3 to 4.4;
// checked against the 3.6.2 and 4.4.0 jars): standard base64 (with
// padding) of a magic byte, the partition time as a big-endian int64 and,
// from version 2, ProcessorMetadata#serialize: nothing when empty, else an
// int32 entry count and per entry an int32 length, the key's UTF-8 bytes
// and an int64 value. Version 1 (before 3.3) is the magic byte and the
// partition time alone. An empty string decodes to version 0.
//
// Kafka Streams' own decoder logs and ignores what it cannot read (another
// version, a truncated string) and goes on with empty processor metadata;
// this one returns an error instead, so a caller can refuse rather than
// guess.
func DecodeOffsetMeta(s string) (OffsetMeta, error) {
	m := OffsetMeta{PartitionTime: -1}
	if s == "" {
		return m, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return OffsetMeta{}, fmt.Errorf("%w: %v", errOffsetMeta, err)
	}
	if len(b) < 9 {
		return OffsetMeta{}, fmt.Errorf("%w: %d bytes, want at least 9", errOffsetMeta, len(b))
	}
	m.Version = b[0]
	m.PartitionTime = int64(binary.BigEndian.Uint64(b[1:9]))
	rest := b[9:]
	switch m.Version {
	case 1:
		if len(rest) != 0 {
			return OffsetMeta{}, fmt.Errorf("%w: version 1 with %d bytes after the partition time", errOffsetMeta, len(rest))
		}
		return m, nil
	case 2:
		if len(rest) == 0 {
			return m, nil
		}
		proc, err := decodeProcessorMeta(rest)
		if err != nil {
			return OffsetMeta{}, fmt.Errorf("%w: processor metadata: %v", errOffsetMeta, err)
		}
		m.Processor = proc
		return m, nil
	default:
		return OffsetMeta{}, fmt.Errorf("%w: version %d (known: 1 and 2)", errOffsetMeta, m.Version)
	}
}

// decodeProcessorMeta reads ProcessorMetadata#serialize's bytes, all of
// them.
func decodeProcessorMeta(b []byte) (map[string]int64, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("%d bytes, want an entry count", len(b))
	}
	n := int32(binary.BigEndian.Uint32(b))
	b = b[4:]
	if n < 0 {
		return nil, fmt.Errorf("entry count %d", n)
	}
	out := make(map[string]int64, min(int(n), 64))
	for i := int32(0); i < n; i++ {
		if len(b) < 4 {
			return nil, fmt.Errorf("entry %d: truncated key length", i)
		}
		kl := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if kl < 0 || int(kl)+8 > len(b) {
			return nil, fmt.Errorf("entry %d: key length %d with %d bytes left", i, kl, len(b))
		}
		key := b[:kl]
		if !utf8.Valid(key) {
			return nil, fmt.Errorf("entry %d: key is not UTF-8", i)
		}
		out[string(key)] = int64(binary.BigEndian.Uint64(b[kl : kl+8]))
		b = b[kl+8:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes after %d entries", len(b), n)
	}
	return out, nil
}
