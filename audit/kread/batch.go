package kread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sort"
)

// Kind classifies a record the way a read_committed consumer would.
type Kind uint8

// Record kinds.
const (
	// Committed: outside any transaction, or in a committed one.
	Committed Kind = iota
	// Aborted: inside an aborted transaction; a read_committed consumer
	// never sees it.
	Aborted
	// Control: a transaction marker (commit or abort); never data.
	Control
)

// String returns "committed", "aborted" or "control".
func (k Kind) String() string {
	switch k {
	case Committed:
		return "committed"
	case Aborted:
		return "aborted"
	case Control:
		return "control"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Record is one record of a partition.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	// Timestamp is the record's timestamp in Unix milliseconds, as a Java
	// consumer reports it: the create time the producer set, or on topics
	// with message.timestamp.type=LogAppendTime the time the broker
	// appended the batch (LogAppendTime is then true).
	Timestamp     int64
	LogAppendTime bool
	// Key and Value are nil for a null key/value and non-nil (possibly
	// empty) otherwise. They are valid only during the callback.
	Key, Value []byte
	// Header is the value of the header ReadOptions.Header names (its
	// first occurrence): nil when the record has no such header (or none
	// was asked for), non-nil (possibly empty, also for a null header
	// value) otherwise. It is valid only during the callback.
	Header []byte
	// Headers are the record's headers as the batch encodes them (a
	// varint count, then each key and value with varint lengths), for
	// EachHeader; valid only during the callback.
	Headers []byte
	Kind    Kind
	// ProducerID is the producer id of the record's batch (-1 when none).
	ProducerID int64
}

// controlAbort is the control record type of an ABORT marker (key bytes 2-3).
const controlAbort = 0

// decoder turns the record batches of one fetched partition into
// classified records. Keys and values point into the fetched bytes, or for
// compressed batches into the decoder's arena; nothing is allocated per
// record. A decoder serves one partition at a time and keeps its buffers
// between uses.
type decoder struct {
	topic     string
	partition int32
	// header names the header whose value records carry ("" for none).
	header string

	src     []byte    // the partition's record batches, as fetched
	arena   []byte    // decompressed batches not handed out yet
	raw     []rawRec  // records not handed out yet
	out     []Record  // what the callback gets
	txns    []txnMark // aborted transactions of the current response
	aborted map[int64]struct{}
	inf     inflater

	// partial is set by decode when the bytes ended in an incomplete batch
	// (cut by the fetch size limit) and no complete batch reached next.
	partial bool
}

type rawRec struct {
	offset, ts, pid int64
	kind            Kind
	appendTime      bool
	inArena         bool // key and value are in arena, else in src
	kOff, kLen      int  // kLen < 0: null
	vOff, vLen      int
	hOff, hLen      int // hLen < 0: no such header
	hsOff, hsLen    int // every header, from the count to the record's end
}

type txnMark struct{ pid, first int64 }

// counts is what one fetch added to a partition's statistics.
type counts struct {
	committed, aborted, control int64
	firstTS, lastTS             int64 // of committed records; valid when committed > 0
}

// decode classifies the records of one partition response, keeping those
// in [next, to). It returns the records to hand out (committed, plus
// aborted ones when wantAborted), the counts, and the new next offset: one
// past the last offset covered by a complete batch in [next, to), whatever
// its records' kinds, including offsets compaction removed.
//
// The aborted filtering follows the Java consumer (CompletedFetch): the
// response's aborted transactions are consumed in first-offset order; for
// each batch with a producer id, those starting at or before the batch's
// last offset add their producer id to the aborted set; an ABORT marker
// removes its producer id; a transactional batch whose producer id is in
// the set is aborted as a whole; control batches are never data.
func (d *decoder) decode(rs []byte, aborted []txnMark, next, to int64, wantAborted bool) ([]Record, counts, int64, error) {
	return d.decodeEmit(rs, aborted, next, to, wantAborted, nil)
}

// Emitting early: a fetch of a well-compressed partition can hold hundreds
// of thousands of records; holding them all (their decompressed bytes, and
// the records pointing at them) before the callback sees any made memory
// grow with partition_max_bytes times the compression ratio times the
// concurrency.
const (
	emitRecords = 4096    // hand records out once this many are collected ...
	emitBytes   = 1 << 20 // ... or their decompressed batches hold this many bytes
)

// Record batch v2 layout (the Kafka protocol guide, "Record Batch").
const (
	batchHeader     = 61 // bytes up to the first record
	batchLengthEnd  = 12 // base offset and batch length
	offMagic        = 16
	offCRC          = 17
	offAttributes   = 21
	offLastDelta    = 23
	offBaseTS       = 27
	offMaxTS        = 35
	offProducerID   = 43
	offRecordsCount = 57

	attrCodec         = 0x07
	attrLogAppendTime = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// decodeEmit is decode that, when emit is not nil, hands records out to
// emit whenever emitRecords or emitBytes are collected (after a whole batch),
// and returns only the rest. On an error after some records were handed
// out, the counts and next offset returned describe exactly those, so that
// a retry resumes after them.
func (d *decoder) decodeEmit(rs []byte, aborted []txnMark, next, to int64, wantAborted bool, emit func([]Record) error) ([]Record, counts, int64, error) {
	var (
		cnt, flushedCnt counts
		flushedNext     = next
	)
	d.src = rs
	d.arena, d.raw, d.out = d.arena[:0], d.raw[:0], d.out[:0]
	d.partial = false

	d.txns = append(d.txns[:0], aborted...)
	sort.SliceStable(d.txns, func(i, j int) bool { return d.txns[i].first < d.txns[j].first })
	if d.aborted == nil {
		d.aborted = map[int64]struct{}{}
	}
	clear(d.aborted)
	txns := d.txns

	for pos := 0; len(rs)-pos >= batchLengthEnd; {
		b := rs[pos:]
		base := int64(binary.BigEndian.Uint64(b))
		length := int64(int32(binary.BigEndian.Uint32(b[8:])))
		if length < batchHeader-batchLengthEnd {
			return nil, flushedCnt, flushedNext, fmt.Errorf("record batch at offset %d: length %d is too short", base, length)
		}
		if int64(len(b)) < batchLengthEnd+length {
			// The fetch size limit cut this batch: the next fetch starts there.
			d.partial = true
			break
		}
		b = b[:batchLengthEnd+length]
		bStart := pos
		pos += len(b)
		if base >= to {
			break
		}
		if m := int8(b[offMagic]); m != 2 {
			return nil, flushedCnt, flushedNext, fmt.Errorf("record batch at offset %d has message format v%d (before Kafka 0.11), which is not supported", base, m)
		}
		if crc := binary.BigEndian.Uint32(b[offCRC:]); crc32.Checksum(b[offAttributes:], castagnoli) != crc {
			return nil, flushedCnt, flushedNext, fmt.Errorf("record batch at offset %d: CRC mismatch (corrupt data)", base)
		}
		attrs := int16(binary.BigEndian.Uint16(b[offAttributes:]))
		last := base + int64(int32(binary.BigEndian.Uint32(b[offLastDelta:])))
		pid := int64(binary.BigEndian.Uint64(b[offProducerID:]))
		control := attrs&attrControl != 0
		kind := Committed
		if pid >= 0 {
			for len(txns) > 0 && txns[0].first <= last {
				d.aborted[txns[0].pid] = struct{}{}
				txns = txns[1:]
			}
			if _, ok := d.aborted[pid]; ok && attrs&attrTransactional != 0 && !control {
				kind = Aborted
			}
		}
		if control {
			kind = Control
		}
		n0 := len(d.raw)
		abortMarker, err := d.readBatch(b, bStart, base, pid, attrs, kind)
		if err != nil {
			return nil, flushedCnt, flushedNext, fmt.Errorf("record batch at offset %d: %w", base, err)
		}
		if control && pid >= 0 && abortMarker {
			delete(d.aborted, pid)
		}
		// Keep the batch's records in [next, to); count them all.
		keep := d.raw[:n0]
		for _, r := range d.raw[n0:] {
			if r.offset < next || r.offset >= to {
				continue
			}
			switch r.kind {
			case Committed:
				if cnt.committed == 0 {
					cnt.firstTS = r.ts
				}
				cnt.lastTS = r.ts
				cnt.committed++
				keep = append(keep, r)
			case Aborted:
				cnt.aborted++
				if wantAborted {
					keep = append(keep, r)
				}
			case Control:
				cnt.control++
			}
		}
		d.raw = keep
		next = max(next, min(last+1, to))
		if emit != nil && (len(d.raw) >= emitRecords || len(d.arena) >= emitBytes) {
			if len(d.raw) > 0 {
				if err := emit(d.records()); err != nil {
					return nil, flushedCnt, flushedNext, &callbackError{err}
				}
			}
			flushedCnt, flushedNext = cnt, next
			d.arena, d.raw, d.out = d.arena[:0], d.raw[:0], d.out[:0]
		}
	}
	return d.records(), cnt, next, nil
}

// readBatch appends the records of the complete batch b, which starts at
// bStart in d.src, to d.raw, decompressing into the arena if needed. It
// reports whether a control batch is an ABORT marker.
func (d *decoder) readBatch(b []byte, bStart int, base, pid int64, attrs int16, kind Kind) (abortMarker bool, err error) {
	count := int(int32(binary.BigEndian.Uint32(b[offRecordsCount:])))
	baseTS := int64(binary.BigEndian.Uint64(b[offBaseTS:]))
	appendTime := attrs&attrLogAppendTime != 0
	maxTS := int64(binary.BigEndian.Uint64(b[offMaxTS:]))
	recs := b[batchHeader:]
	srcOff := bStart + batchHeader // where recs starts in its buffer
	inArena := false
	if codec := attrs & attrCodec; codec != codecNone {
		start := len(d.arena)
		if d.arena, err = d.inf.inflate(d.arena, recs, codec); err != nil {
			return false, err
		}
		recs, srcOff, inArena = d.arena[start:], start, true
	}
	if count < 0 || count > len(recs) {
		return false, fmt.Errorf("record count %d does not fit the batch", count)
	}
	p := 0
	for i := 0; i < count; i++ {
		length, n := binary.Varint(recs[p:])
		if n <= 0 || length < 0 || int64(len(recs)-p-n) < length {
			return false, fmt.Errorf("record %d: bad length", i)
		}
		p += n
		rec := recs[p : p+int(length)]
		recStart := srcOff + p
		p += int(length)
		r, err := parseRecord(rec, recStart, d.header)
		if err != nil {
			return false, fmt.Errorf("record %d: %w", i, err)
		}
		r.offset += base
		if appendTime {
			r.ts = maxTS
		} else {
			r.ts += baseTS
		}
		r.pid, r.kind, r.appendTime, r.inArena = pid, kind, appendTime, inArena
		if kind == Control && i == 0 {
			if r.kLen != 4 {
				return false, fmt.Errorf("control record at offset %d has a key of %d bytes", r.offset, r.kLen)
			}
			key := recs[r.kOff-srcOff : r.kOff-srcOff+4]
			abortMarker = int16(binary.BigEndian.Uint16(key[2:])) == controlAbort
		}
		d.raw = append(d.raw, r)
	}
	return abortMarker, nil
}

var errShortRecord = errors.New("record ends early")

// parseRecord reads one record's fields (after its length); offsets of the
// key, value and header are relative to at, where rec starts in its
// buffer. When header is not "", the value of the first header of that
// name is located (hLen -1 when there is none; a null value counts as
// empty).
func parseRecord(rec []byte, at int, header string) (rawRec, error) {
	r := rawRec{hLen: -1}
	p := 1 // attributes, unused
	if len(rec) < 1 {
		return r, errShortRecord
	}
	v, n := binary.Varint(rec[p:])
	if n <= 0 {
		return r, errShortRecord
	}
	r.ts, p = v, p+n
	v, n = binary.Varint(rec[p:])
	if n <= 0 {
		return r, errShortRecord
	}
	r.offset, p = v, p+n
	var ok bool
	if r.kOff, r.kLen, p, ok = field(rec, p); !ok {
		return r, errShortRecord
	}
	if r.vOff, r.vLen, p, ok = field(rec, p); !ok {
		return r, errShortRecord
	}
	r.kOff += at
	r.vOff += at
	r.hsOff, r.hsLen = p+at, len(rec)-p
	headers, n := binary.Varint(rec[p:])
	if n <= 0 || headers < 0 {
		return r, errShortRecord
	}
	p += n
	for range headers {
		var hkOff, hkLen, hvOff, hvLen int
		if hkOff, hkLen, p, ok = field(rec, p); !ok {
			return r, errShortRecord
		}
		if hvOff, hvLen, p, ok = field(rec, p); !ok {
			return r, errShortRecord
		}
		// The conversion in the comparison does not allocate.
		if header != "" && r.hLen < 0 && hkLen == len(header) && string(rec[hkOff:hkOff+hkLen]) == header {
			r.hOff, r.hLen = hvOff+at, max(hvLen, 0)
		}
	}
	return r, nil
}

// EachHeader calls fn with the key and value of each header of a record's
// Headers, in the order the producer wrote them (a null value is nil),
// until fn returns false. Topic data is hostile: a header section that
// does not parse is an error, never a panic.
func EachHeader(headers []byte, fn func(key, value []byte) bool) error {
	if len(headers) == 0 {
		return nil
	}
	n, p := binary.Varint(headers)
	if p <= 0 || n < 0 || n > int64(len(headers)) {
		return errors.New("record headers: bad count")
	}
	for i := range n {
		ko, kl, end, ok := field(headers, p)
		if !ok || kl < 0 {
			return fmt.Errorf("record headers: header %d: bad key", i)
		}
		vo, vl, end2, ok := field(headers, end)
		if !ok {
			return fmt.Errorf("record headers: header %d: bad value", i)
		}
		p = end2
		var v []byte
		if vl >= 0 {
			v = headers[vo : vo+vl : vo+vl]
		}
		if !fn(headers[ko:ko+kl:ko+kl], v) {
			return nil
		}
	}
	return nil
}

// field reads a varint-length byte field at p: its offset and length (-1
// for null) and the position after it.
func field(rec []byte, p int) (off, length, end int, ok bool) {
	if p > len(rec) {
		return 0, 0, 0, false
	}
	l, n := binary.Varint(rec[p:])
	if n <= 0 || l < -1 || int64(len(rec)-p-n) < l {
		return 0, 0, 0, false
	}
	p += n
	if l < 0 {
		return p, -1, p, true
	}
	return p, int(l), p + int(l), true
}

// records turns the collected raw records into what the callback gets.
func (d *decoder) records() []Record {
	d.out = d.out[:0]
	for i := range d.raw {
		r := &d.raw[i]
		buf := d.src
		if r.inArena {
			buf = d.arena
		}
		d.out = append(d.out, Record{
			Topic: d.topic, Partition: d.partition, Offset: r.offset, Timestamp: r.ts, LogAppendTime: r.appendTime,
			Key: slice(buf, r.kOff, r.kLen), Value: slice(buf, r.vOff, r.vLen), Header: slice(buf, r.hOff, r.hLen),
			Headers: slice(buf, r.hsOff, r.hsLen), Kind: r.kind, ProducerID: r.pid,
		})
	}
	return d.out
}

// slice returns the bytes of a key or value: nil for null, a non-nil
// slice (possibly empty) otherwise, capped so that appending copies.
func slice(buf []byte, off, n int) []byte {
	if n < 0 {
		return nil
	}
	return buf[off : off+n : off+n]
}
