package kread

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Builders of synthetic partition responses: v2 record batches encoded
// by batchenc_test.go.

func data(pid int64, txn bool, base int64, vals ...string) []byte {
	b := encBatch{base: base, lastOffsetDelta: -1, baseTS: 1000 + base, pid: pid, epoch: 0, txn: txn}
	if pid < 0 {
		b.epoch = -1
	}
	for i, v := range vals {
		b.recs = append(b.recs, encRec{tsDelta: int64(i), key: []byte("k" + v), value: []byte(v)})
	}
	b.maxTS = b.baseTS + int64(len(vals)) - 1
	return b.encode(nil)
}

const (
	markAbort  = 0
	markCommit = 1
)

func marker(pid int64, off int64, typ int16) []byte {
	b := encBatch{base: off, lastOffsetDelta: -1, baseTS: 1000 + off, maxTS: 1000 + off, pid: pid, txn: true, control: true,
		recs: []encRec{controlRec(typ == markAbort)}}
	return b.encode(nil)
}

func stream(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

func abortedTxn(pid, first int64) txnMark { return txnMark{pid: pid, first: first} }

// render lists handed-out records as "offset:value:kind".
func render(recs []Record) string {
	var b strings.Builder
	for i, r := range recs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%s:%s", r.Offset, r.Value, r.Kind)
	}
	return b.String()
}

func TestDecodeClassifiesLikeJavaConsumer(t *testing.T) {
	tests := []struct {
		name        string
		rs          []byte
		aborted     []txnMark
		next, to    int64
		wantAborted bool
		want        string
		wantCounts  counts
		wantNext    int64
	}{
		{
			name: "interleaved aborted and committed transactions of two producers",
			rs: stream(
				data(1, true, 0, "a0"), data(2, true, 1, "c1"), data(1, true, 2, "a2"),
				data(-1, false, 3, "plain3"), data(2, true, 4, "c4"),
				marker(1, 5, markAbort), marker(2, 6, markCommit), data(-1, false, 7, "plain7"),
			),
			aborted: []txnMark{abortedTxn(1, 0)},
			next:    0, to: 100,
			want:       "1:c1:committed 3:plain3:committed 4:c4:committed 7:plain7:committed",
			wantCounts: counts{committed: 4, aborted: 2, control: 2, firstTS: 1001, lastTS: 1007},
			wantNext:   8,
		},
		{
			name: "aborted records handed out on request, in offset order",
			rs: stream(
				data(1, true, 0, "a0"), data(2, true, 1, "c1"), data(1, true, 2, "a2"),
				marker(1, 3, markAbort), marker(2, 4, markCommit),
			),
			aborted: []txnMark{abortedTxn(1, 0)},
			next:    0, to: 100, wantAborted: true,
			want:       "0:a0:aborted 1:c1:committed 2:a2:aborted",
			wantCounts: counts{committed: 1, aborted: 2, control: 2, firstTS: 1001, lastTS: 1001},
			wantNext:   5,
		},
		{
			name: "same producer: aborted transaction, marker, then a committed one",
			rs: stream(
				data(7, true, 10, "a10", "a11"), marker(7, 12, markAbort),
				data(7, true, 13, "c13"), marker(7, 14, markCommit),
			),
			aborted: []txnMark{abortedTxn(7, 10)},
			next:    10, to: 100,
			want:       "13:c13:committed",
			wantCounts: counts{committed: 1, aborted: 2, control: 2, firstTS: 1013, lastTS: 1013},
			wantNext:   15,
		},
		{
			name: "same producer aborted twice, list out of order",
			rs: stream(
				data(7, true, 10, "a10"), marker(7, 11, markAbort),
				data(7, true, 12, "c12"), marker(7, 13, markCommit),
				data(7, true, 14, "a14"), marker(7, 15, markAbort),
			),
			aborted: []txnMark{abortedTxn(7, 14), abortedTxn(7, 10)},
			next:    10, to: 100,
			want:       "12:c12:committed",
			wantCounts: counts{committed: 1, aborted: 2, control: 3, firstTS: 1012, lastTS: 1012},
			wantNext:   16,
		},
		{
			name: "non-transactional batch of an aborted producer id is data",
			rs: stream(
				data(3, true, 0, "a0"), data(3, false, 1, "idem1"), marker(3, 2, markAbort),
			),
			aborted: []txnMark{abortedTxn(3, 0)},
			next:    0, to: 100,
			want:       "1:idem1:committed",
			wantCounts: counts{committed: 1, aborted: 1, control: 1, firstTS: 1001, lastTS: 1001},
			wantNext:   3,
		},
		{
			name: "records below the fetch offset are skipped but still set up the aborted state",
			rs: stream(
				data(1, true, 0, "a0", "a1", "a2"), data(2, true, 3, "c3"), data(1, true, 4, "a4"),
				marker(1, 5, markAbort), marker(2, 6, markCommit),
			),
			aborted: []txnMark{abortedTxn(1, 0)},
			next:    2, to: 100, wantAborted: true,
			want:       "2:a2:aborted 3:c3:committed 4:a4:aborted",
			wantCounts: counts{committed: 1, aborted: 2, control: 2, firstTS: 1003, lastTS: 1003},
			wantNext:   7,
		},
		{
			name: "records at or past the range end are neither handed out nor counted",
			rs:   stream(data(-1, false, 0, "p0", "p1", "p2", "p3")),
			next: 1, to: 3,
			want:       "1:p1:committed 2:p2:committed",
			wantCounts: counts{committed: 2, firstTS: 1001, lastTS: 1002},
			wantNext:   3,
		},
		{
			name: "only a marker left before the end",
			rs:   stream(data(5, true, 0, "c0"), marker(5, 1, markCommit)),
			next: 1, to: 2,
			want:       "",
			wantCounts: counts{control: 1},
			wantNext:   2,
		},
		{
			name: "empty response",
			rs:   nil,
			next: 4, to: 10,
			want:     "",
			wantNext: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decoder{topic: "t", partition: 3}
			recs, cnt, next, err := d.decode(tt.rs, tt.aborted, tt.next, tt.to, tt.wantAborted)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(recs); got != tt.want {
				t.Errorf("records:\n got %q\nwant %q", got, tt.want)
			}
			if cnt != tt.wantCounts {
				t.Errorf("counts = %+v, want %+v", cnt, tt.wantCounts)
			}
			if next != tt.wantNext {
				t.Errorf("next = %d, want %d", next, tt.wantNext)
			}
			for _, r := range recs {
				if r.Topic != "t" || r.Partition != 3 {
					t.Errorf("record %d names %s[%d]", r.Offset, r.Topic, r.Partition)
				}
			}
		})
	}
}

func TestDecodeKeepsNullDistinctFromEmpty(t *testing.T) {
	b := encBatch{base: 0, lastOffsetDelta: -1, pid: -1, epoch: -1, recs: []encRec{
		{key: nil, value: nil},
		{key: []byte{}, value: []byte{}},
		{key: []byte("k"), value: nil, headers: [][2][]byte{{[]byte("h"), []byte("v")}, {[]byte("n"), nil}}},
	}}
	d := decoder{}
	recs, _, _, err := d.decode(b.encode(t), nil, 0, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("got %d records, want 3", len(recs))
	}
	if recs[0].Key != nil || recs[0].Value != nil {
		t.Errorf("null key/value came back as %q/%q", recs[0].Key, recs[0].Value)
	}
	if recs[1].Key == nil || len(recs[1].Key) != 0 || recs[1].Value == nil || len(recs[1].Value) != 0 {
		t.Errorf("empty key/value came back as %#v/%#v", recs[1].Key, recs[1].Value)
	}
	if string(recs[2].Key) != "k" || recs[2].Value != nil {
		t.Errorf("record 2 = %q/%#v", recs[2].Key, recs[2].Value)
	}
}

// The same records, compressed with every codec Kafka has, decode alike;
// timestamps follow the batch's timestamp type.
func TestDecodeCodecsAndTimestamps(t *testing.T) {
	recs := func() []encRec {
		var out []encRec
		for i := range 300 {
			out = append(out, encRec{tsDelta: int64(i), key: fmt.Appendf(nil, "key-%d", i%7), value: []byte(strings.Repeat(fmt.Sprintf("v%d,", i), 1+i%9))})
		}
		return out
	}()
	want := func(appendTime bool) string {
		var b strings.Builder
		for i, r := range recs {
			ts := 5000 + r.tsDelta
			if appendTime {
				ts = 9999
			}
			fmt.Fprintf(&b, "%d:%s=%s@%d ", 40+i, r.key, r.value, ts)
		}
		return b.String()
	}
	tests := []struct {
		name       string
		codec      int16
		xerial     bool
		appendTime bool
	}{
		{"none", codecNone, false, false},
		{"gzip", codecGzip, false, false},
		{"snappy block", codecSnappy, false, false},
		{"snappy xerial framing", codecSnappy, true, false},
		{"lz4", codecLZ4, false, false},
		{"zstd", codecZstd, false, false},
		{"zstd, LogAppendTime", codecZstd, false, true},
		{"none, LogAppendTime", codecNone, false, true},
	}
	var d decoder // reused across codecs, as a worker's is
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Two batches, so that the second decompresses after the first.
			half := len(recs) / 2
			b1 := encBatch{base: 40, lastOffsetDelta: -1, baseTS: 5000, maxTS: 9999, pid: -1, epoch: -1, codec: tt.codec, xerial: tt.xerial, logAppendTime: tt.appendTime, recs: recs[:half]}
			b2 := encBatch{base: 40 + int64(half), lastOffsetDelta: -1, baseTS: 5000 + int64(half), maxTS: 9999, pid: -1, epoch: -1, codec: tt.codec, xerial: tt.xerial, logAppendTime: tt.appendTime, recs: append([]encRec(nil), recs[half:]...)}
			for i := range b2.recs {
				b2.recs[i].tsDelta -= int64(half)
			}
			out, cnt, next, err := d.decode(stream(b1.encode(t), b2.encode(t)), nil, 40, 1000, false)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, r := range out {
				fmt.Fprintf(&b, "%d:%s=%s@%d ", r.Offset, r.Key, r.Value, r.Timestamp)
				if r.LogAppendTime != tt.appendTime {
					t.Fatalf("record %d LogAppendTime %v", r.Offset, r.LogAppendTime)
				}
			}
			if got := b.String(); got != want(tt.appendTime) {
				t.Errorf("records differ:\n got %.200s\nwant %.200s", got, want(tt.appendTime))
			}
			if cnt.committed != int64(len(recs)) || next != 40+int64(len(recs)) {
				t.Errorf("counts %+v next %d", cnt, next)
			}
		})
	}
}

// What compaction and the fetch size limit leave: batches whose records
// are gone, a batch cut at the end, and hostile bytes.
func TestDecodeBatchEdges(t *testing.T) {
	full := data(-1, false, 0, "a", "b", "c")
	tail := encBatch{base: 3, lastOffsetDelta: 9, baseTS: 1003, maxTS: 1003, pid: -1, epoch: -1, recs: []encRec{{key: []byte("k"), value: []byte("d")}}}
	empty := encBatch{base: 13, lastOffsetDelta: 4, pid: 7, epoch: 0, txn: true}
	corrupt := append([]byte(nil), full...)
	corrupt[len(corrupt)-1] ^= 0xff
	magic1 := append([]byte(nil), full...)
	magic1[offMagic] = 1
	tests := []struct {
		name        string
		rs          []byte
		next, to    int64
		want        string
		wantNext    int64
		wantPartial bool
		wantErr     string
	}{
		{name: "a batch whose last records were compacted away covers its whole range",
			rs: stream(full, tail.encode(t)), next: 0, to: 100, want: "0:a:committed 1:b:committed 2:c:committed 3:d:committed", wantNext: 13},
		{name: "an empty batch (all records compacted away) is stepped over",
			rs: stream(empty.encode(t), data(-1, false, 18, "e")), next: 13, to: 100, want: "18:e:committed", wantNext: 19},
		{name: "an empty batch alone still moves next",
			rs: empty.encode(t), next: 14, to: 100, want: "", wantNext: 18},
		{name: "next stops at the range end inside a batch",
			rs: tail.encode(t), next: 3, to: 8, want: "3:d:committed", wantNext: 8},
		{name: "a batch cut by the size limit is left for the next fetch",
			rs: stream(full, tail.encode(t)[:40]), next: 0, to: 100, want: "0:a:committed 1:b:committed 2:c:committed", wantNext: 3, wantPartial: true},
		{name: "a few stray bytes at the end are a cut batch",
			rs: stream(full, []byte{0, 0, 0}), next: 0, to: 100, want: "0:a:committed 1:b:committed 2:c:committed", wantNext: 3},
		{name: "CRC mismatch", rs: corrupt, next: 0, to: 100, wantErr: "record batch at offset 0: CRC mismatch"},
		{name: "old message format", rs: magic1, next: 0, to: 100, wantErr: "message format v1"},
		{name: "record length past the batch", rs: func() []byte {
			b := append([]byte(nil), full...)
			b[batchHeader] = 0x7e // first record's length varint: 63
			return fixCRC(b)
		}(), next: 0, to: 100, wantErr: "record 0: bad length"},
		{name: "key length past the record", rs: func() []byte {
			b := append([]byte(nil), full...)
			b[batchHeader+4] = 0x7e // first record's key length varint
			return fixCRC(b)
		}(), next: 0, to: 100, wantErr: "record 0: record ends early"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := decoder{}
			recs, _, next, err := d.decode(tt.rs, nil, tt.next, tt.to, false)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := render(recs); got != tt.want {
				t.Errorf("records:\n got %q\nwant %q", got, tt.want)
			}
			if next != tt.wantNext || d.partial != tt.wantPartial {
				t.Errorf("next %d partial %v, want %d %v", next, d.partial, tt.wantNext, tt.wantPartial)
			}
		})
	}
}

// fixCRC recomputes the CRC of the single batch b.
func fixCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// ReadOptions.Header: each record carries the value of the first header of
// that name, plain or compressed; nil when it has none or none is asked for.
func TestDecodeCarriesTheAskedHeader(t *testing.T) {
	h := func(k, v string) [2][]byte { return [2][]byte{[]byte(k), []byte(v)} }
	recs := []encRec{
		{value: []byte("a"), headers: [][2][]byte{h("other", "x"), h("idx", "no"), h("id", "id-0"), h("id", "second")}},
		{value: []byte("b")},
		{value: []byte("c"), headers: [][2][]byte{h("id", "")}},
		{value: []byte("d"), headers: [][2][]byte{{[]byte("id"), nil}}},
		{value: []byte("e"), headers: [][2][]byte{{nil, []byte("null key")}, h("ID", "case")}},
	}
	want := []struct {
		header  string
		present bool
	}{{"id-0", true}, {"", false}, {"", true}, {"", true}, {"", false}}
	for _, codec := range []int16{codecNone, codecZstd} {
		t.Run(fmt.Sprintf("codec %d", codec), func(t *testing.T) {
			b := encBatch{base: 0, lastOffsetDelta: -1, pid: -1, epoch: -1, codec: codec, recs: recs}
			d := decoder{header: "id"}
			got, _, _, err := d.decode(b.encode(t), nil, 0, 10, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("got %d records, want %d", len(got), len(want))
			}
			for i, w := range want {
				r := got[i]
				if (r.Header != nil) != w.present || string(r.Header) != w.header || string(r.Value) != string(recs[i].value) {
					t.Errorf("record %d: header %#v (present %v) value %q, want %q (present %v) and %q", i, r.Header, r.Header != nil, r.Value, w.header, w.present, recs[i].value)
				}
			}
			d = decoder{}
			got, _, _, _ = d.decode(b.encode(t), nil, 0, 10, false)
			for i, r := range got {
				if r.Header != nil {
					t.Errorf("no header asked for, record %d carries %q", i, r.Header)
				}
			}
		})
	}
}

// A small batch that inflates past the limit is an error naming the batch
// (the reader adds the topic and partition), retrying cannot help, and the
// decoder never holds more than the limit.
func TestDecodeRejectsBatchesInflatingPastTheLimit(t *testing.T) {
	const limit = 1 << 20
	zeros := make([]byte, 3*limit)
	for _, c := range []struct {
		name   string
		codec  int16
		xerial bool
	}{{"gzip", codecGzip, false}, {"snappy", codecSnappy, false}, {"snappy xerial", codecSnappy, true}, {"lz4", codecLZ4, false}, {"zstd", codecZstd, false}} {
		t.Run(c.name, func(t *testing.T) {
			b := encBatch{base: 10, lastOffsetDelta: -1, pid: -1, epoch: -1, codec: c.codec, xerial: c.xerial, recs: []encRec{{key: []byte("k"), value: zeros}}}
			raw := b.encode(t)
			if len(raw) > 200<<10 {
				t.Fatalf("the bomb is %d bytes, not small", len(raw))
			}
			d := decoder{topic: "orders", partition: 3, inf: inflater{limit: limit}}
			defer d.inf.close()
			_, _, _, err := d.decode(raw, nil, 0, 100, false)
			var tl *TooLargeError
			if !errors.As(err, &tl) || !strings.Contains(err.Error(), "record batch at offset 10") || classify(err) != permanent {
				t.Fatalf("err = %v, want a permanent TooLargeError naming offset 10", err)
			}
			if cap(d.arena) > 2*limit {
				t.Errorf("the decoder grew its arena to %d bytes, limit %d", cap(d.arena), limit)
			}
		})
	}
}

// Through the client: a batch inflating past Options.MaxBatchBytes fails
// the read at once, naming the topic, partition and offset.
func TestReadRejectsBatchesInflatingPastTheLimit(t *testing.T) {
	c := newCluster(t, 1, 1, "bomb")
	p := newProducer(t, c, newModel(), "bomb", "", kgo.ProducerBatchCompression(kgo.GzipCompression()), kgo.ProducerBatchMaxBytes(8<<20))
	p.send(0, "small")
	p.sendRecs(&kgo.Record{Partition: 0, Key: []byte("k"), Value: make([]byte, 3<<20)})
	r := newReader(t, c, func(o *Options) { o.MaxBatchBytes = 1 << 20 })
	_, err := r.Read(context.Background(), []Range{{Topic: "bomb", Partition: 0, From: 0, To: 2}}, ReadOptions{}, func([]Record) error { return nil })
	var tl *TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "reading bomb[0] at 0: record batch at offset 1: gzip: batch decompresses to more than 1 MiB") {
		t.Fatalf("err = %v, want a TooLargeError naming bomb[0] at offset 1", err)
	}
}

// Record.Headers holds every header, which EachHeader hands out in the
// order written (repeated names too, a null value as nil), plain or
// compressed; a garbled header section is an error, never a panic.
func TestEachHeader(t *testing.T) {
	h := func(k, v string) [2][]byte { return [2][]byte{[]byte(k), []byte(v)} }
	recs := []encRec{
		{value: []byte("a"), headers: [][2][]byte{h("__streams.errors.topic", "in-a"), h("x", ""), {[]byte("n"), nil}, h("x", "second")}},
		{value: []byte("b")},
	}
	want := []string{`__streams.errors.topic="in-a" x="" n=<nil> x="second"`, ``}
	for _, codec := range []int16{codecNone, codecZstd} {
		t.Run(fmt.Sprintf("codec %d", codec), func(t *testing.T) {
			b := encBatch{base: 0, lastOffsetDelta: -1, pid: -1, epoch: -1, codec: codec, recs: recs}
			d := decoder{}
			got, _, _, err := d.decode(b.encode(t), nil, 0, 10, false)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range got {
				var parts []string
				if err := EachHeader(r.Headers, func(k, v []byte) bool {
					if v == nil {
						parts = append(parts, string(k)+"=<nil>")
					} else {
						parts = append(parts, fmt.Sprintf("%s=%q", k, v))
					}
					return true
				}); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				if g := strings.Join(parts, " "); g != want[i] {
					t.Errorf("record %d: headers %s, want %s", i, g, want[i])
				}
			}
		})
	}
	for _, bad := range [][]byte{{0x01}, {0x02, 0x02, 'k'}, {0x02, 0x02, 'k', 0x7f}, {0x7f}, {0x01, 0x02}} {
		if err := EachHeader(bad, func([]byte, []byte) bool { return true }); err == nil {
			t.Errorf("EachHeader(%x): no error", bad)
		}
	}
}
