package kread

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkDecodeFetch decodes a realistic fetch response (benchFetch) the
// way Read does, from the bytes off the wire to the records handed out.
func BenchmarkDecodeFetch(b *testing.B) {
	raw, n := benchFetch(b)
	var d decoder
	defer d.inf.close()
	req := &fetchRequest{version: 11}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		rw := &exchange{r: bytes.NewReader(raw)}
		if _, err := req.RawExchange(rw); err != nil {
			b.Fatal(err)
		}
		got := 0
		for i := range req.resp.parts {
			p := &req.resp.parts[i]
			d.topic, d.partition = "bench", p.partition
			recs, _, _, err := d.decodeEmit(p.records, req.resp.aborted(p), 0, 1<<62, false, func(r []Record) error {
				got += len(r)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
			got += len(recs)
		}
		if got != n {
			b.Fatalf("%d records, want %d", got, n)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// exchange is a connection whose answer is r; writes are dropped.
type exchange struct {
	r *bytes.Reader
}

func (e *exchange) Read(p []byte) (int, error)  { return e.r.Read(p) }
func (e *exchange) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkReadPartitions reads 6 kfake partitions of 30k zstd-compressed
// records (~100-byte values) each, end to end through Read.
func BenchmarkReadPartitions(b *testing.B) {
	const topic, parts, per = "bench6", 6, 30000
	c := newCluster(b, 3, parts, topic)
	p := newProducer(b, c, nil, topic, "", kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	recs := make([]*kgo.Record, 0, 1000)
	for part := int32(0); part < parts; part++ {
		for i := 0; i < per; i++ {
			recs = append(recs, &kgo.Record{Partition: part, Key: fmt.Appendf(nil, "customer-%06d", (i*7919)%50000),
				Value: fmt.Appendf(nil, `{"id":%d,"customer":"c%06d","amount":%d.%02d,"currency":"EUR","ts":%d,"k":"%x"}`,
					i, (i*7919)%50000, i%997, i%100, 1_700_000_000_000+i, uint32(i)*2654435761)})
			if len(recs) == cap(recs) {
				p.sendRecs(recs...)
				recs = recs[:0]
			}
		}
	}
	r := newReader(b, c)
	ctx := ctxT(b)
	var ranges []Range
	for part := int32(0); part < parts; part++ {
		ranges = append(ranges, Range{Topic: topic, Partition: part, From: 0, To: per})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var got atomic.Int64
		_, err := r.Read(ctx, ranges, ReadOptions{}, func(rs []Record) error {
			got.Add(int64(len(rs)))
			return nil
		})
		if err != nil || got.Load() != parts*per {
			b.Fatalf("read %d records, err %v", got.Load(), err)
		}
	}
	b.ReportMetric(float64(parts*per)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
