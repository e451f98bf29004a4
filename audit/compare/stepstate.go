package compare

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
)

// idState is what a reconciliation keeps per identity of a pair (the
// state's key is the identity's index key): every due source record (a
// record is due once and stays due), the sink's copies as a count and the
// first ones, the source records pending at the last step (read again by
// the next one, so only counted), and the open findings with when each was
// first seen.
type idState struct {
	// due are the due source records by partition and offset.
	due     []detect.Record
	pending int64
	// sink counts the copies; sinkAt are the first finding.MaxCoords of
	// them and firstSink the first, by partition and offset.
	sink      int64
	sinkAt    []finding.Coord
	firstSink detect.Record
	open      []openRow
}

// openRow is an open finding of an identity: the record its row names.
type openRow struct {
	kind      finding.Kind
	partition int32
	offset    int64
	ts        int64
	key       []byte
	// firstSeen is the start of the step that first reported it (Unix ms).
	firstSeen int64
	// withheld: a missing row held back (its sink was stuck) that is
	// neither reported nor resolved until the sink settles.
	withheld bool
}

func (k *idState) reset() {
	k.due, k.pending, k.sink, k.sinkAt, k.firstSink, k.open = k.due[:0], 0, 0, k.sinkAt[:0], detect.Record{}, k.open[:0]
}

// find returns k's open finding of kind naming partition and offset, or nil.
func (k *idState) find(kind finding.Kind, partition int32, offset int64) *openRow {
	for i := range k.open {
		if o := &k.open[i]; o.kind == kind && o.partition == partition && o.offset == offset {
			return o
		}
	}
	return nil
}

// idCodec is the encoding of idState in the state store: a version byte,
// then varints and length-prefixed bytes (a nullable key as its length
// plus one, 0 for null).
type idCodec struct{}

const idStateVersion = 1

func (idCodec) Empty(k *idState) bool {
	return len(k.due) == 0 && k.pending == 0 && k.sink == 0 && len(k.open) == 0
}

func appendBytes(b, p []byte) []byte {
	if p == nil {
		return binary.AppendUvarint(b, 0)
	}
	return append(binary.AppendUvarint(b, uint64(len(p))+1), p...)
}

func appendRecord(b []byte, r detect.Record) []byte {
	b = binary.AppendVarint(b, int64(r.Partition))
	b = binary.AppendVarint(b, r.Offset)
	b = binary.AppendVarint(b, r.TS)
	return appendBytes(b, r.Key)
}

func (idCodec) Encode(k *idState, b []byte) []byte {
	b = append(b, idStateVersion)
	b = binary.AppendUvarint(b, uint64(len(k.due)))
	for _, r := range k.due {
		b = appendRecord(b, r)
	}
	b = binary.AppendVarint(b, k.pending)
	b = binary.AppendVarint(b, k.sink)
	b = binary.AppendUvarint(b, uint64(len(k.sinkAt)))
	for _, c := range k.sinkAt {
		b = binary.AppendVarint(b, int64(c.Partition))
		b = binary.AppendVarint(b, c.Offset)
	}
	b = appendRecord(b, k.firstSink)
	b = binary.AppendUvarint(b, uint64(len(k.open)))
	for _, o := range k.open {
		b = appendBytes(b, []byte(o.kind))
		b = appendRecord(b, detect.Record{Partition: o.partition, Offset: o.offset, TS: o.ts, Key: o.key})
		b = binary.AppendVarint(b, o.firstSeen)
		w := byte(0)
		if o.withheld {
			w = 1
		}
		b = append(b, w)
	}
	return b
}

// decoder reads an encoded idState, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

var errShort = errors.New("truncated")

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errShort
	}
	d.b = nil
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return nil
	}
	if n-1 > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	p := append([]byte{}, d.b[:n-1]...)
	d.b = d.b[n-1:]
	return p
}

// count reads a length, bounded by the bytes left (each element takes at
// least one byte), so damaged state cannot ask for a huge allocation.
func (d *decoder) count() int {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return 0
	}
	return int(n)
}

func (d *decoder) record() detect.Record {
	return detect.Record{Partition: int32(d.varint()), Offset: d.varint(), TS: d.varint(), Key: d.bytes()}
}

func (idCodec) Decode(b []byte, k *idState) error {
	k.reset()
	if len(b) == 0 || b[0] != idStateVersion {
		return fmt.Errorf("identity state of version %d, this lossaudit reads %d", firstByte(b), idStateVersion)
	}
	d := &decoder{b: b[1:]}
	for range d.count() {
		k.due = append(k.due, d.record())
	}
	k.pending = d.varint()
	k.sink = d.varint()
	for range d.count() {
		k.sinkAt = append(k.sinkAt, finding.Coord{Partition: int32(d.varint()), Offset: d.varint()})
	}
	k.firstSink = d.record()
	for range d.count() {
		o := openRow{kind: finding.Kind(d.bytes())}
		r := d.record()
		o.partition, o.offset, o.ts, o.key = r.Partition, r.Offset, r.TS, r.Key
		o.firstSeen = d.varint()
		if len(d.b) == 0 {
			d.fail()
		} else {
			o.withheld, d.b = d.b[0] == 1, d.b[1:]
		}
		k.open = append(k.open, o)
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d bytes left over", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("identity state: %w", d.err)
	}
	return nil
}

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}
