package compare

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// The index entries of a comparison. Every index key is a space byte, a
// 16-bit index (the pair, or the ledger topic) and the identity's digest,
// so one key groups one identity of one pair (or of one ledger topic).
// Within a key the index orders entries by tag, then by fields bytewise:
// the orders detect.CopyEvidence and detect.LedgerEvidence require.
const (
	spacePair   byte = 'p'
	spaceLedger byte = 'l'
	keyLen           = 1 + 2 + len(digest{})
)

// Tags of the pair space: partition u32 | offset u64 -> ts u64 | key.
// tagTouch (no fields, no value) only makes a reconcile step's check visit
// an identity its reads did not meet (one with open findings or pending
// records).
const (
	tagTouch   byte = 0x01
	tagSink    byte = 0x10
	tagPending byte = 0x20
	tagDue     byte = 0x30
)

// Tags of the ledger space. tagClaim holds the topic's copies and the
// ledger's acknowledged lines together: partition u32 | offset u64 |
// kind u8 (kindCopy before kindAcked at one offset) | line u64 -> ts u64
// | key. tagFailed holds the failed sends: line u64 -> ts u64 | key.
const (
	tagClaim  byte = 0x10
	tagFailed byte = 0x20

	kindCopy  byte = 0
	kindAcked byte = 1
)

// indexKey builds the index key of an identity in a space.
func indexKey(space byte, idx int, d digest) [keyLen]byte {
	var k [keyLen]byte
	k[0] = space
	binary.BigEndian.PutUint16(k[1:3], uint16(idx))
	copy(k[3:], d[:])
	return k
}

// entryWriter writes the comparison's facts to an index writer, or, when
// b is set, to a batch of it (batch).
type entryWriter struct {
	w *index.Writer
	b *index.Batch
}

// add is index.Writer.Add, through the batch when there is one.
// (Concrete types, not an interface: the callers' field arrays stay on
// the stack.)
func (e entryWriter) add(key []byte, tag byte, fields, val []byte) error {
	if e.b != nil {
		return e.b.Add(key, tag, fields, val)
	}
	return e.w.Add(key, tag, fields, val)
}

// batch returns an entryWriter writing through a batch of e's writer,
// for one goroutine's records (a read callback's), and the function that
// files the batch: it must be called once, before the writer is flushed.
// Entries are the same as through the writer; the batch files them
// partition by partition (index.Batch says why that is cheaper).
func (e entryWriter) batch() (entryWriter, func() error) {
	if e.w == nil || e.b != nil {
		return e, func() error { return nil }
	}
	b := e.w.Batch()
	return entryWriter{w: e.w, b: b}, b.Close
}

// value encodes a timestamp and a nullable record key.
func value(buf []byte, ts int64, key []byte) []byte {
	buf = binary.BigEndian.AppendUint64(buf[:0], uint64(ts))
	if key == nil {
		return append(buf, 0)
	}
	return append(append(buf, 1), key...)
}

func parseValue(v []byte) (ts int64, key []byte, err error) {
	if len(v) < 9 || v[8] > 1 {
		return 0, nil, fmt.Errorf("value of %d bytes", len(v))
	}
	ts = int64(binary.BigEndian.Uint64(v))
	if v[8] == 1 {
		key = v[9:]
	}
	return ts, key, nil
}

// record writes a sink copy or a source record of pair x.
func (e entryWriter) record(tag byte, x int, d digest, partition int32, offset, ts int64, key []byte, buf []byte) ([]byte, error) {
	k := indexKey(spacePair, x, d)
	var f [12]byte
	binary.BigEndian.PutUint32(f[:4], uint32(partition))
	binary.BigEndian.PutUint64(f[4:], uint64(offset))
	buf = value(buf, ts, key)
	return buf, e.add(k[:], tag, f[:], buf)
}

// touch writes the entry that makes the check visit the identity whose
// index key is key.
func (e entryWriter) touch(key []byte) error { return e.add(key, tagTouch, nil, nil) }

// claim writes a copy in ledger topic lt, or a ledger line's claim.
func (e entryWriter) claim(lt int, d digest, partition int32, offset int64, kind byte, line, ts int64, key []byte, buf []byte) ([]byte, error) {
	k := indexKey(spaceLedger, lt, d)
	var f [21]byte
	binary.BigEndian.PutUint32(f[:4], uint32(partition))
	binary.BigEndian.PutUint64(f[4:12], uint64(offset))
	f[12] = kind
	binary.BigEndian.PutUint64(f[13:], uint64(line))
	buf = value(buf, ts, key)
	return buf, e.add(k[:], tagClaim, f[:], buf)
}

// failed writes a failed send of the ledger.
func (e entryWriter) failed(lt int, d digest, line, ts int64, key []byte, buf []byte) ([]byte, error) {
	k := indexKey(spaceLedger, lt, d)
	var f [8]byte
	binary.BigEndian.PutUint64(f[:], uint64(line))
	buf = value(buf, ts, key)
	return buf, e.add(k[:], tagFailed, f[:], buf)
}

// parseKey splits an index key into its space and index.
func parseKey(k []byte) (space byte, idx int, err error) {
	if len(k) != keyLen || (k[0] != spacePair && k[0] != spaceLedger) {
		return 0, 0, fmt.Errorf("index: key %x is not a comparison's (was the store written by an audit?)", k)
	}
	return k[0], int(binary.BigEndian.Uint16(k[1:3])), nil
}

// foldPair reads the entries of one pair identity into ev.
func foldPair(c *index.Cursor, ev *detect.CopyEvidence) error {
	ev.Reset()
	return eachPairEntry(c, func(tag byte, r detect.Record) {
		switch tag {
		case tagSink:
			ev.AddSink(r)
		case tagPending:
			ev.AddPending(r)
		case tagDue:
			ev.AddDue(r)
		case tagLink:
			ev.AddLink(r)
		}
	})
}

// eachPairEntry calls fn with every sink copy, pending and due source
// record among the entries of one pair identity, in the index's order,
// skipping touch entries and records read twice. r.Key is valid only
// during the call.
func eachPairEntry(c *index.Cursor, fn func(tag byte, r detect.Record)) error {
	var prevTag byte
	var prev []byte
	for c.Next() {
		e := c.Entry()
		if e.Tag == tagTouch {
			continue
		}
		if len(e.Fields) != 12 && len(e.Fields) != 14 {
			return fmt.Errorf("index: pair entry %#x with %d bytes of fields", e.Tag, len(e.Fields))
		}
		if e.Tag == prevTag && bytes.Equal(e.Fields, prev) {
			continue // the same record read twice
		}
		prevTag, prev = e.Tag, append(prev[:0], e.Fields...)
		ts, key, err := parseValue(e.Value)
		if err != nil {
			return fmt.Errorf("index: pair entry %#x: %w", e.Tag, err)
		}
		switch e.Tag {
		case tagSink, tagPending, tagDue, tagLink:
		default:
			return fmt.Errorf("index: unknown pair entry %#x", e.Tag)
		}
		r := detect.Record{Partition: int32(binary.BigEndian.Uint32(e.Fields[:4])), Offset: int64(binary.BigEndian.Uint64(e.Fields[4:12])), TS: ts, Key: key}
		if len(e.Fields) == 14 {
			r.Pair = int(binary.BigEndian.Uint16(e.Fields[12:])) // a stream stage's input (streamRecord)
		}
		fn(e.Tag, r)
	}
	return nil
}

// foldLedger reads the entries of one ledger identity into ev.
func foldLedger(c *index.Cursor, spec *detect.LedgerSpec, ev *detect.LedgerEvidence) error {
	ev.Reset()
	var prev []byte
	for c.Next() {
		e := c.Entry()
		ts, key, err := parseValue(e.Value)
		if err != nil {
			return fmt.Errorf("index: ledger entry %#x: %w", e.Tag, err)
		}
		switch {
		case e.Tag == tagClaim && len(e.Fields) == 21:
			p, off := int32(binary.BigEndian.Uint32(e.Fields[:4])), int64(binary.BigEndian.Uint64(e.Fields[4:12]))
			if e.Fields[12] == kindCopy {
				if bytes.Equal(e.Fields, prev) {
					continue // the same record read twice
				}
				prev = append(prev[:0], e.Fields...)
				ev.AddCopy(detect.Record{Partition: p, Offset: off, TS: ts, Key: key})
				continue
			}
			ev.AddLine(spec, detect.LedgerLine{Line: int64(binary.BigEndian.Uint64(e.Fields[13:])), TS: ts, Key: key,
				Acked: true, Partition: p, Offset: off})
		case e.Tag == tagFailed && len(e.Fields) == 8:
			ev.AddLine(spec, detect.LedgerLine{Line: int64(binary.BigEndian.Uint64(e.Fields)), TS: ts, Key: key})
		default:
			return fmt.Errorf("index: ledger entry %#x with %d bytes of fields", e.Tag, len(e.Fields))
		}
	}
	return nil
}
