package streams

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
)

func TestTimelineCountsAndCoarsens(t *testing.T) {
	const day = int64(24 * time.Hour / time.Millisecond)
	tests := []struct {
		name string
		// ts are audited record timestamps, pending the pending ones.
		ts, pending []int64
		wantBucket  time.Duration
		want        map[int64]finding.BucketCounts
	}{
		{
			name: "fine buckets", ts: []int64{1000, 1050, 1100, 1999}, pending: []int64{1001},
			wantBucket: 100 * time.Millisecond,
			want:       map[int64]finding.BucketCounts{1000: {Audited: 2, Pending: 1}, 1100: {Audited: 1}, 1900: {Audited: 1}},
		},
		{
			// One record every 100 ms for 10 minutes: 6000 fine buckets
			// exceed the cap, so the timeline moves to 1 s buckets.
			name: "coarsens past the cap", ts: every(0, 100, 6000),
			wantBucket: time.Second, want: perBucket(0, 1000, 600, 10),
		},
		{
			// Daily records over 100 years: 5,218 weeks are too many, two weeks fit.
			name: "long spans stay bounded", ts: every(0, day, 100*365),
			wantBucket: 2 * 7 * 24 * time.Hour,
		},
		{
			name: "timestamps outside 1970..2262 count at the ends", ts: []int64{-5, -1, 1 << 62},
			wantBucket: 100 * time.Millisecond,
			want:       map[int64]finding.BucketCounts{0: {Audited: 2}, floorTo(maxTimelineTS, 100): {Audited: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTimeline(1)
			// Several batches, as read callbacks deliver them.
			for start := 0; start < len(tt.ts); start += 500 {
				b := tl.batch()
				for _, ts := range tt.ts[start:min(start+500, len(tt.ts))] {
					b.note(ts, false)
				}
				tl.add(0, b)
			}
			b := tl.batch()
			for _, ts := range tt.pending {
				b.note(ts, true)
			}
			tl.add(0, b)
			got := tl.result([]string{"in"})
			if got.Bucket != tt.wantBucket {
				t.Errorf("bucket = %s, want %s", got.Bucket, tt.wantBucket)
			}
			m := got.Inputs["in"]
			if len(m) > maxTimelineBuckets {
				t.Errorf("%d buckets kept, more than the cap %d", len(m), maxTimelineBuckets)
			}
			var audited, pending int64
			for k, c := range m {
				audited += c.Audited
				pending += c.Pending
				if k%got.Bucket.Milliseconds() != 0 {
					t.Errorf("bucket %d does not start at a multiple of %s", k, got.Bucket)
				}
			}
			if audited != int64(len(tt.ts)) || pending != int64(len(tt.pending)) {
				t.Errorf("total %d audited, %d pending; want %d, %d", audited, pending, len(tt.ts), len(tt.pending))
			}
			if tt.want != nil && !maps.Equal(m, tt.want) {
				t.Errorf("buckets = %.300v, want %.300v", m, tt.want)
			}
		})
	}
}

// every returns n timestamps from start, step apart.
func every(start, step int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = start + int64(i)*step
	}
	return out
}

// perBucket returns n buckets of width from start, each with c audited.
func perBucket(start, width int64, n int, c int64) map[int64]finding.BucketCounts {
	m := map[int64]finding.BucketCounts{}
	for i := range n {
		m[start+int64(i)*width] = finding.BucketCounts{Audited: c}
	}
	return m
}

func TestTimelineConcurrentBatchesWhileCoarsening(t *testing.T) {
	tl := newTimeline(2)
	var wg sync.WaitGroup
	const workers, batches, per = 4, 50, 100
	for w := range workers {
		wg.Go(func() {
			for i := range batches {
				b := tl.batch()
				for j := range per {
					// Spread so that the timeline coarsens while batches run.
					b.note(int64(((w*batches+i)*per+j)*37), j%10 == 0)
				}
				tl.add(w%2, b)
			}
		})
	}
	wg.Wait()
	got := tl.result([]string{"a", "b"})
	var audited, pending int64
	for _, m := range got.Inputs {
		for _, c := range m {
			audited += c.Audited
			pending += c.Pending
		}
	}
	if total := int64(workers * batches * per); audited+pending != total || pending != total/10 {
		t.Errorf("counted %d audited + %d pending, want %d records of which %d pending", audited, pending, total, total/10)
	}
}

func TestRunTimelineAndPipeline(t *testing.T) {
	tp := newTestPipeline(t)
	f := tp.f
	tp.process(0, 0, "k1", 1_000, "1", false, false)
	tp.process(0, 1, "k2", 1_050, "1", false, false)
	tp.process(0, 0, "lost", 61_000, "1", true, true)
	tp.process(1, 0, "k1", 1_000, "1", false, false)
	// Pending at the first hop (a) and at the second (b): both count as
	// pending on the timeline, at their timestamps.
	f.add("inA", 1, []byte("o"), []byte("lag|1"), 120_000, kread.Committed)
	off := f.add("inB", 0, []byte("o"), []byte("tail|1"), 90_000, kread.Committed)
	f.group[kread.TP{Topic: "inB", Partition: 0}] = off + 1
	f.add("app-repB-repartition", partitionFor([]byte("tail"), 2), []byte("tail"), []byte("tail|1"), 90_000, kread.Committed)

	res := tp.run(t)
	sec, _ := finding.SectionOf[*finding.Streams](&res.Summary)
	if sec == nil {
		t.Fatal("the result has no Kafka Streams section")
	}
	tl := sec.Timeline
	if tl == nil || tl.Bucket != 100*time.Millisecond {
		t.Fatalf("timeline = %+v, want 100ms buckets", tl)
	}
	want := map[string]map[int64]finding.BucketCounts{
		"a": {1_000: {Audited: 2}, 61_000: {Audited: 1}, 120_000: {Pending: 1}},
		"b": {1_000: {Audited: 1}, 90_000: {Pending: 1}},
	}
	for name, w := range want {
		if !maps.Equal(tl.Inputs[name], w) {
			t.Errorf("timeline of %s = %v, want %v", name, tl.Inputs[name], w)
		}
		var audited, pending int64
		for _, c := range tl.Inputs[name] {
			audited, pending = audited+c.Audited, pending+c.Pending
		}
		if c := res.Summary.Inputs[name]; c.Audited != audited || c.Pending != pending {
			t.Errorf("input %s: summary says %d audited, %d pending; timeline %d, %d", name, c.Audited, c.Pending, audited, pending)
		}
	}
	p := sec.Pipeline
	if p == nil || p.Output != "out" || len(p.Inputs) != 2 ||
		fmt.Sprint(p.Inputs[1]) != "{b inB app-repB-repartition app-storeB-changelog false false  }" {
		t.Errorf("pipeline = %+v, want inputs a, b with their topics and output out", p)
	}
}
