package kread

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A test-side encoder of v2 record batches and fetch responses, written
// from the Kafka protocol guide, independent of the decoder under test.

// encRec is one record to encode; nil key or value is null.
type encRec struct {
	tsDelta    int64
	key, value []byte
	headers    [][2][]byte
}

// encBatch describes one record batch.
type encBatch struct {
	base            int64
	lastOffsetDelta int32 // -1: len(recs)-1
	baseTS, maxTS   int64
	pid             int64
	epoch           int16
	txn, control    bool
	logAppendTime   bool
	codec           int16 // 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd
	xerial          bool  // snappy in the Java client's framing
	recs            []encRec
}

func appendBytes(dst, b []byte) []byte {
	if b == nil {
		return binary.AppendVarint(dst, -1)
	}
	return append(binary.AppendVarint(dst, int64(len(b))), b...)
}

func (b encBatch) encode(t testing.TB) []byte {
	var recs []byte
	for i, r := range b.recs {
		var body []byte
		body = append(body, 0) // attributes
		body = binary.AppendVarint(body, r.tsDelta)
		body = binary.AppendVarint(body, int64(i))
		body = appendBytes(body, r.key)
		body = appendBytes(body, r.value)
		body = binary.AppendVarint(body, int64(len(r.headers)))
		for _, h := range r.headers {
			body = appendBytes(body, h[0])
			body = appendBytes(body, h[1])
		}
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	recs = compress(t, b.codec, b.xerial, recs)
	attrs := b.codec
	if b.logAppendTime {
		attrs |= 1 << 3
	}
	if b.txn {
		attrs |= 1 << 4
	}
	if b.control {
		attrs |= 1 << 5
	}
	lod := b.lastOffsetDelta
	if lod < 0 {
		lod = int32(len(b.recs) - 1)
	}
	var h []byte
	h = binary.BigEndian.AppendUint64(h, uint64(b.base))
	h = binary.BigEndian.AppendUint32(h, 0) // length, below
	h = binary.BigEndian.AppendUint32(h, 0xffffffff)
	h = append(h, 2)
	h = binary.BigEndian.AppendUint32(h, 0) // crc, below
	h = binary.BigEndian.AppendUint16(h, uint16(attrs))
	h = binary.BigEndian.AppendUint32(h, uint32(lod))
	h = binary.BigEndian.AppendUint64(h, uint64(b.baseTS))
	h = binary.BigEndian.AppendUint64(h, uint64(b.maxTS))
	h = binary.BigEndian.AppendUint64(h, uint64(b.pid))
	h = binary.BigEndian.AppendUint16(h, uint16(b.epoch))
	h = binary.BigEndian.AppendUint32(h, 0) // base sequence
	h = binary.BigEndian.AppendUint32(h, uint32(len(b.recs)))
	out := append(h, recs...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

func compress(t testing.TB, codec int16, xerial bool, raw []byte) []byte {
	var buf bytes.Buffer
	switch codec {
	case 0:
		return raw
	case 1:
		w := gzip.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case 2:
		block := s2.EncodeSnappy(nil, raw)
		if !xerial {
			return block
		}
		buf.Write([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1})
		// Two chunks, as the Java client writes blocks of 32 KiB.
		half := len(raw) / 2
		for _, part := range [][]byte{raw[:half], raw[half:]} {
			blk := s2.EncodeSnappy(nil, part)
			buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(blk))))
			buf.Write(blk)
		}
	case 3:
		w := lz4.NewWriter(&buf)
		w.Write(raw)
		w.Close()
	case 4:
		w, err := zstd.NewWriter(&buf)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(raw)
		w.Close()
	default:
		t.Fatalf("codec %d", codec)
	}
	return buf.Bytes()
}

// controlRec is the record of a transaction marker.
func controlRec(abort bool) encRec {
	typ := byte(1)
	if abort {
		typ = 0
	}
	return encRec{key: []byte{0, 0, 0, typ}, value: []byte{0, 0, 0, 0, 0, 0}}
}

// encPartition is one partition of an encoded fetch response.
type encPartition struct {
	partition     int32
	errorCode     int16
	hw, lso, logS int64
	aborted       [][2]int64 // producer id, first offset
	records       []byte
}

// encodeFetchResponse encodes a fetch response of the given version for one
// topic, with the 4-byte size and the correlation id in front, as it
// comes off the wire.
func encodeFetchResponse(version int16, corr int32, topic string, parts ...encPartition) []byte {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode = p.partition, p.errorCode
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = p.hw, p.lso, p.logS
		for _, a := range p.aborted {
			at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			at.ProducerID, at.FirstOffset = a[0], a[1]
			rp.AbortedTransactions = append(rp.AbortedTransactions, at)
		}
		rp.RecordBatches = p.records
		rt.Partitions = append(rt.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, rt)
	out := binary.BigEndian.AppendUint32(nil, 0)
	out = binary.BigEndian.AppendUint32(out, uint32(corr))
	if resp.IsFlexible() {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out
}

// benchFetch is a realistic fetch answer: 6 partitions, each 10 zstd
// batches of 1000 records with ~100-byte values (JSON-ish, so that zstd
// compresses them about as much as real data), 60,000 records in all.
func benchFetch(t testing.TB) (raw []byte, records int) {
	var parts []encPartition
	for p := int32(0); p < 6; p++ {
		var recs []byte
		for b := 0; b < 10; b++ {
			eb := encBatch{base: int64(b * 1000), lastOffsetDelta: -1, baseTS: 1_700_000_000_000, maxTS: 1_700_000_000_999, pid: -1, epoch: -1, codec: 4}
			for i := 0; i < 1000; i++ {
				n := int(p)*10000 + b*1000 + i
				eb.recs = append(eb.recs, encRec{
					tsDelta: int64(i),
					key:     fmt.Appendf(nil, "customer-%06d", (n*7919)%50000),
					value: fmt.Appendf(nil, `{"id":%d,"customer":"c%06d","amount":%d.%02d,"currency":"EUR","ts":%d,"k":"%x"}`,
						n, (n*7919)%50000, n%997, n%100, 1_700_000_000_000+n, uint32(n)*2654435761),
				})
			}
			recs = append(recs, eb.encode(t)...)
		}
		parts = append(parts, encPartition{partition: p, hw: 10000, lso: 10000, records: recs})
		records += 10000
	}
	return encodeFetchResponse(11, 1, "bench", parts...), records
}
