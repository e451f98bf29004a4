package kread

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"
)

// Builders of synthetic fetch responses, the shapes kafka-go decodes.

func data(pid int64, txn bool, base int64, vals ...string) protocol.RecordReader {
	recs := make([]protocol.Record, len(vals))
	for i, v := range vals {
		recs[i] = protocol.Record{
			Offset: base + int64(i),
			Time:   time.UnixMilli(1000 + base + int64(i)),
			Key:    protocol.NewBytes([]byte("k" + v)),
			Value:  protocol.NewBytes([]byte(v)),
		}
	}
	attrs := protocol.Attributes(0)
	if txn {
		attrs |= protocol.Transactional
	}
	return &protocol.RecordBatch{Attributes: attrs, BaseOffset: base, ProducerID: pid, Records: protocol.NewRecordReader(recs...)}
}

const (
	markAbort  = 0
	markCommit = 1
)

func marker(pid int64, off int64, typ int16) protocol.RecordReader {
	b := protocol.NewControlBatch(protocol.ControlRecord{Offset: off, Time: time.UnixMilli(1000 + off), Type: typ})
	b.BaseOffset, b.ProducerID = off, pid
	b.Attributes = protocol.Transactional | protocol.Control
	return b
}

func stream(bs ...protocol.RecordReader) protocol.RecordReader {
	return &protocol.RecordStream{Records: bs}
}

func abortedTxn(pid, first int64) fetch.ResponseTransaction {
	return fetch.ResponseTransaction{ProducerID: pid, FirstOffset: first}
}

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
		rs          protocol.RecordReader
		aborted     []fetch.ResponseTransaction
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
			aborted: []fetch.ResponseTransaction{abortedTxn(1, 0)},
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
			aborted: []fetch.ResponseTransaction{abortedTxn(1, 0)},
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
			aborted: []fetch.ResponseTransaction{abortedTxn(7, 10)},
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
			aborted: []fetch.ResponseTransaction{abortedTxn(7, 14), abortedTxn(7, 10)},
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
			aborted: []fetch.ResponseTransaction{abortedTxn(3, 0)},
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
			aborted: []fetch.ResponseTransaction{abortedTxn(1, 0)},
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
	b := &protocol.RecordBatch{BaseOffset: 0, ProducerID: -1, Records: protocol.NewRecordReader(
		protocol.Record{Offset: 0, Key: nil, Value: nil},
		protocol.Record{Offset: 1, Key: protocol.NewBytes([]byte{}), Value: protocol.NewBytes([]byte{})},
		protocol.Record{Offset: 2, Key: protocol.NewBytes([]byte("k")), Value: nil},
	)}
	d := decoder{}
	recs, _, _, err := d.decode(stream(b), nil, 0, 10, false)
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

func TestDecodeCarriesTheAskedHeader(t *testing.T) {
	b := &protocol.RecordBatch{BaseOffset: 0, ProducerID: -1, Records: protocol.NewRecordReader(
		protocol.Record{Offset: 0, Value: protocol.NewBytes([]byte("a")), Headers: []protocol.Header{{Key: "other", Value: []byte("x")}, {Key: "id", Value: []byte("id-0")}, {Key: "id", Value: []byte("second")}}},
		protocol.Record{Offset: 1, Value: protocol.NewBytes([]byte("b"))},
		protocol.Record{Offset: 2, Value: protocol.NewBytes([]byte("c")), Headers: []protocol.Header{{Key: "id", Value: []byte{}}}},
	)}
	d := decoder{header: "id"}
	recs, _, _, err := d.decode(stream(b), nil, 0, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("got %d records, want 3", len(recs))
	}
	if string(recs[0].Header) != "id-0" || string(recs[0].Value) != "a" {
		t.Errorf("record 0: header %q value %q, want the first id header and value a", recs[0].Header, recs[0].Value)
	}
	if recs[1].Header != nil {
		t.Errorf("record 1 has no id header, got %q", recs[1].Header)
	}
	if recs[2].Header == nil || len(recs[2].Header) != 0 {
		t.Errorf("record 2 has an empty id header, got %#v", recs[2].Header)
	}
	d = decoder{}
	recs, _, _, _ = d.decode(stream(data(-1, false, 0, "v")), nil, 0, 10, false)
	if len(recs) != 1 || recs[0].Header != nil {
		t.Errorf("no header asked for, got %#v", recs)
	}
}
