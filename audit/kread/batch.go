package kread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"
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
	// Timestamp is the record's timestamp in Unix milliseconds (the create
	// time the producer set; see the package notes on LogAppendTime).
	Timestamp int64
	// Key and Value are nil for a null key/value and non-nil (possibly
	// empty) otherwise. They are valid only during the callback.
	Key, Value []byte
	// Header is the value of the header ReadOptions.Header names (its
	// first occurrence): nil when the record has no such header (or
	// none was asked for), non-nil otherwise; valid only during the
	// callback.
	Header []byte
	Kind   Kind
	// ProducerID is the producer id of the record's batch (-1 when none).
	ProducerID int64
}

// controlAbort is the control record type of an ABORT marker (key bytes 2-3).
const controlAbort = 0

// decoder turns one fetched partition into classified records. It keeps
// its buffers between fetches of the same partition.
type decoder struct {
	topic     string
	partition int32
	// header names the header whose value records carry ("" for none).
	header string

	arena []byte    // key and value bytes of the current fetch
	raw   []rawRec  // records of the current fetch, pointing into arena
	out   []Record  // what the callback gets
	batch []rawRec  // records of the batch being decoded
	txns  []txnMark // aborted transactions of the current response
}

type rawRec struct {
	offset, ts, pid int64
	kind            Kind
	kOff, kLen      int // kLen < 0: null
	vOff, vLen      int
	hOff, hLen      int // hLen < 0: no such header
}

type txnMark struct{ pid, first int64 }

// counts is what one fetch added to a partition's statistics.
type counts struct {
	committed, aborted, control int64
	firstTS, lastTS             int64 // of committed records; valid when committed > 0
}

// decode classifies the records of one partition response, keeping those
// in [next, to). It returns the records to hand out (committed, plus
// aborted ones when wantAborted), the counts, and the new next offset (one
// past the last record seen in [next, to), whatever its kind).
//
// The aborted filtering follows the Java consumer (CompletedFetch): the
// response's aborted transactions are consumed in first-offset order; for
// each batch with a producer id, those starting at or before the batch's
// last offset add their producer id to the aborted set; an ABORT marker
// removes its producer id; a transactional batch whose producer id is in
// the set is aborted as a whole; control batches are never data.
func (d *decoder) decode(rs protocol.RecordReader, aborted []fetch.ResponseTransaction, next, to int64, wantAborted bool) ([]Record, counts, int64, error) {
	return d.decodeEmit(rs, aborted, next, to, wantAborted, nil)
}

// Emitting early: a fetch of a well-compressed partition can hold hundreds
// of thousands of records; holding them all (their bytes, and the records
// pointing at them) before the callback sees any made memory grow with
// partition_max_bytes times the compression ratio times the concurrency.
const (
	emitRecords = 4096    // hand records out once this many are collected ...
	emitBytes   = 1 << 20 // ... or their keys and values hold this many bytes
)

// decodeEmit is decode that, when emit is not nil, hands records out to
// emit whenever emitRecords or emitBytes are collected (after a whole batch),
// and returns only the rest. On an error after some records were handed
// out, the counts and next offset returned describe exactly those, so that
// a retry resumes after them.
func (d *decoder) decodeEmit(rs protocol.RecordReader, aborted []fetch.ResponseTransaction, next, to int64, wantAborted bool, emit func([]Record) error) ([]Record, counts, int64, error) {
	var (
		flushedCnt  counts
		flushedNext = next
	)
	d.arena = d.arena[:0]
	d.raw = d.raw[:0]
	d.out = d.out[:0]
	var cnt counts

	d.txns = d.txns[:0]
	for _, t := range aborted {
		d.txns = append(d.txns, txnMark{pid: t.ProducerID, first: t.FirstOffset})
	}
	sort.SliceStable(d.txns, func(i, j int) bool { return d.txns[i].first < d.txns[j].first })
	abortedPIDs := map[int64]bool{}
	consumeUpTo := func(last int64) {
		for len(d.txns) > 0 && d.txns[0].first <= last {
			abortedPIDs[d.txns[0].pid] = true
			d.txns = d.txns[1:]
		}
	}

	var batches []protocol.RecordReader
	switch s := rs.(type) {
	case nil:
	case *protocol.RecordStream:
		batches = s.Records
	default:
		batches = []protocol.RecordReader{s}
	}

	for _, b := range batches {
		var (
			base, pid     int64 = -1, -1
			transactional bool
			control       bool
		)
		switch bb := b.(type) {
		case *protocol.RecordBatch:
			base, pid, transactional = bb.BaseOffset, bb.ProducerID, bb.Attributes.Transactional()
		case *protocol.ControlBatch:
			base, pid, control = bb.BaseOffset, bb.ProducerID, true
		case *protocol.MessageSet:
			base = bb.BaseOffset
		}
		abortMarker := false
		if err := d.readBatch(b, control, &abortMarker); err != nil {
			return nil, flushedCnt, flushedNext, fmt.Errorf("decoding batch at offset %d: %w", base, err)
		}
		// kafka-go does not expose lastOffsetDelta; the last record's offset
		// (or the base offset of an empty batch) serves: a transaction's first
		// offset is always the base offset of its producer's first batch.
		last := base
		if n := len(d.batch); n > 0 && d.batch[n-1].offset > last {
			last = d.batch[n-1].offset
		}
		kind := Committed
		if pid >= 0 {
			consumeUpTo(last)
			switch {
			case control:
				if abortMarker {
					delete(abortedPIDs, pid)
				}
			case transactional && abortedPIDs[pid]:
				kind = Aborted
			}
		}
		if control {
			kind = Control
		}
		for _, r := range d.batch {
			if r.offset < next || r.offset >= to {
				continue // below the fetch offset, or past the range
			}
			next = r.offset + 1
			r.kind, r.pid = kind, pid
			switch kind {
			case Committed:
				if cnt.committed == 0 {
					cnt.firstTS = r.ts
				}
				cnt.lastTS = r.ts
				cnt.committed++
				d.raw = append(d.raw, r)
			case Aborted:
				cnt.aborted++
				if wantAborted {
					d.raw = append(d.raw, r)
				}
			case Control:
				cnt.control++
			}
		}
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

// records turns the collected raw records into what the callback gets.
func (d *decoder) records() []Record {
	d.out = d.out[:0]
	for _, r := range d.raw {
		d.out = append(d.out, Record{
			Topic: d.topic, Partition: d.partition, Offset: r.offset, Timestamp: r.ts,
			Key: d.slice(r.kOff, r.kLen), Value: d.slice(r.vOff, r.vLen), Header: d.slice(r.hOff, r.hLen),
			Kind: r.kind, ProducerID: r.pid,
		})
	}
	return d.out
}

// slice returns the arena bytes of a key or value: nil for null, a non-nil
// slice (possibly empty) otherwise.
func (d *decoder) slice(off, n int) []byte {
	if n < 0 {
		return nil
	}
	return d.arena[off : off+n : off+n]
}

// readBatch reads every record of b into d.batch, copying keys and values
// into the arena (data batches only) and releasing kafka-go's buffers. For
// a control batch it reports whether its first record is an ABORT marker.
func (d *decoder) readBatch(b protocol.RecordReader, control bool, abortMarker *bool) error {
	d.batch = d.batch[:0]
	for i := 0; ; i++ {
		rec, err := b.ReadRecord()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		r := rawRec{offset: rec.Offset, ts: rec.Time.UnixMilli(), kLen: -1, vLen: -1, hLen: -1}
		if control {
			if i == 0 {
				k, err := protocol.ReadAll(rec.Key)
				if err != nil {
					closeBytes(rec)
					return err
				}
				if len(k) != 4 {
					closeBytes(rec)
					return fmt.Errorf("control record at offset %d has a key of %d bytes", rec.Offset, len(k))
				}
				*abortMarker = int16(binary.BigEndian.Uint16(k[2:])) == controlAbort
			}
		} else {
			if r.kOff, r.kLen, err = d.copyBytes(rec.Key); err == nil {
				r.vOff, r.vLen, err = d.copyBytes(rec.Value)
			}
			if d.header != "" {
				for _, h := range rec.Headers {
					if h.Key == d.header {
						r.hOff, r.hLen = len(d.arena), len(h.Value)
						d.arena = append(d.arena, h.Value...)
						break
					}
				}
			}
			if err != nil {
				closeBytes(rec)
				return fmt.Errorf("record at offset %d: %w", rec.Offset, err)
			}
		}
		closeBytes(rec)
		d.batch = append(d.batch, r)
	}
}

// copyBytes appends b to the arena; length -1 means null.
func (d *decoder) copyBytes(b protocol.Bytes) (int, int, error) {
	if b == nil {
		return 0, -1, nil
	}
	n := b.Len()
	off := len(d.arena)
	d.arena = slices.Grow(d.arena, n)[:off+n]
	if _, err := io.ReadFull(b, d.arena[off:off+n]); err != nil {
		return 0, 0, err
	}
	return off, n, nil
}

func closeBytes(r *protocol.Record) {
	if r.Key != nil {
		r.Key.Close()
	}
	if r.Value != nil {
		r.Value.Close()
	}
}
