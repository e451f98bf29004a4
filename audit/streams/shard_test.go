package streams

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"

	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// snapTopic is a snapshot of topic name with parts partitions.
func snapTopic(name string, parts int32) snapshot.Topic {
	t := snapshot.Topic{Name: name, Offsets: map[int32]kread.Offsets{}}
	for p := int32(0); p < parts; p++ {
		t.Parts = append(t.Parts, p)
		t.Offsets[p] = kread.Offsets{LSO: 10, HighWatermark: 10}
	}
	return t
}

// TestShardViewRestrictsAndRefuses: a reduce shard reads only its task
// partitions and refuses a record whose key belongs to another shard; a map
// shard reads only its input partitions; what is not sharded yet is
// refused before anything is read.
func TestShardViewRestrictsAndRefuses(t *testing.T) {
	const parts, n = 6, 3
	rs := []kread.Range{}
	for p := int32(0); p < parts; p++ {
		rs = append(rs, kread.Range{Topic: "cl", Partition: p, From: 10, To: 20 + int64(p)})
	}
	for s := 0; s < n; s++ {
		v := &shardView{n: n, index: s, taskParts: parts, reduce: true}
		got, total := v.filter(rs, false)
		var ps []int32
		var want int64
		for _, r := range got {
			ps = append(ps, r.Partition)
			want += r.To - r.From
		}
		if fmt.Sprint(ps) != fmt.Sprint([]int32{int32(s), int32(s + n)}) || total != want {
			t.Errorf("shard %d reads %v (%d offsets), want partitions %d and %d", s, ps, total, s, s+n)
		}
		// Every key of a partition the shard reads, as the default
		// partitioner places it, is the shard's; any other key is refused.
		for i := 0; i < 200; i++ {
			key := []byte(fmt.Sprintf("cust-%05d", i))
			p := partitionFor(key, parts)
			err := v.owns(key, &kread.Record{Topic: "cl", Partition: p, Offset: 3})
			var u *UnsupportedShardingError
			if mine := int(p)%n == s; mine != (err == nil) || (err != nil && !errors.As(err, &u)) {
				t.Fatalf("shard %d, key %s of partition %d: %v", s, key, p, err)
			}
		}
	}
	d := &ShardSnapshot{}
	for _, name := range []string{"a", "b"} {
		d.Inputs = append(d.Inputs, snapTopic(name, 3))
	}
	seen := map[kread.TP]int{}
	for s := 0; s < 4; s++ {
		v := &shardView{n: 4, index: s, inputs: d.MapInputs(4, s)}
		for tp := range v.inputs {
			seen[tp]++
		}
	}
	if len(seen) != 6 {
		t.Errorf("the map shards read %d input partitions, want all 6 once: %v", len(seen), seen)
	}
	for tp, c := range seen {
		if c != 1 {
			t.Errorf("%v is read by %d map shards", tp, c)
		}
	}
	sel := func(*kread.Record) ([]byte, int64, SelectStatus, error) { return nil, 0, Selected, nil }
	base := Options{Output: "out", Inputs: []Input{{Name: "a", Topic: "a", RepartitionTopic: "r", ChangelogTopic: "c", Select: sel}}}
	for _, tt := range []struct {
		edit func(o *Options)
		want string
	}{
		{func(o *Options) { o.From = time.Unix(1, 0) }, "windowed audit"},
		{func(o *Options) { o.DeadLetterTopic = "dlq" }, "dead-letter queue"},
		{func(o *Options) { o.OutputKey = func(b []byte) []byte { return b } }, "Avro-framed keys"},
		{func(o *Options) { o.Inputs[0].DownstreamKey = func(b []byte) []byte { return b } }, "input a: keys normalized"},
		{func(o *Options) { o.Inputs[0].Table = true }, "input a is read by a table source"},
		{func(o *Options) { o.Inputs[0].GroupBy = true }, "input a is read by a table whose groupBy feeds a count, reduce or aggregate"},
		{func(o *Options) { o.Inputs[0].BufferTopic = "app-buf-changelog" }, "input a reaches the output through a suppress buffer"},
		{func(o *Options) { o.Output = "" }, "ending in its changelog"},
		{func(o *Options) { o.Cogroup = true }, "a cogroup (one store fed by several inputs) is not sharded yet"},
	} {
		o := base
		o.Inputs = append([]Input(nil), base.Inputs...)
		tt.edit(&o)
		if err := CheckShardable(o); err == nil || !strings.Contains(err.Error(), tt.want) || !IsUnsupportedSharding(err) {
			t.Errorf("CheckShardable: %v, want an UnsupportedShardingError about %q", err, tt.want)
		}
	}
	if err := CheckShardable(base); err != nil {
		t.Errorf("CheckShardable of a plain audit: %v", err)
	}
}

// routed is an entry routed to a reduce shard.
type routed struct {
	key []byte
	e   index.Entry
}

func (r *routed) copyOf(key []byte, e index.Entry) routed {
	return routed{key: bytes.Clone(key), e: index.Entry{Tag: e.Tag, Fields: bytes.Clone(e.Fields), Value: bytes.Clone(e.Value)}}
}

// roundTrip passes v through gob, as the shards' files do.
func roundTrip[T any](t *testing.T, v *T) *T {
	t.Helper()
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := gob.NewDecoder(&b).Decode(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// shardedRun runs the snapshot, n maps, n reduces and the merge one after
// the other on o's store, every part through gob; it returns the result
// and the snapshot.
func shardedRun(t *testing.T, o Options, n int) (*finding.Result, *ShardSnapshot) {
	t.Helper()
	ctx := context.Background()
	buckets := make([][]routed, n)
	d, err := TakeShardSnapshot(ctx, o, n, func(r int, key []byte, e index.Entry) error {
		buckets[r] = append(buckets[r], (*routed)(nil).copyOf(key, e))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d = roundTrip(t, d)
	var maps []*ShardMapResult
	for i := 0; i < n; i++ {
		m, err := ShardMap(ctx, o, d, n, i, func(key []byte, e index.Entry) error {
			r := KeyShard(key, d.TaskParts, n)
			buckets[r] = append(buckets[r], (*routed)(nil).copyOf(key, e))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		maps = append(maps, roundTrip(t, m))
	}
	var reds []*ShardReduceResult
	for r := 0; r < n; r++ {
		red, err := ShardReduce(ctx, o, d, n, r, func(add Emit) error {
			for _, b := range buckets[r] {
				if err := add(b.key, b.e); err != nil {
					return err
				}
			}
			return nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		reds = append(reds, roundTrip(t, red))
	}
	res, err := ShardMerge(ctx, o, d, maps, reds, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return res, d
}

// TestShardedEqualsRun: the snapshot, maps, reduces and merge give the
// result Run gives, for 1 to 3 shards, on a pipeline with every kind of
// finding and drop, on a count, and with the repartition tails held in
// memory or not (maxTails 1: the candidates pending at the second hop are
// then found in the check, and the timeline moves them on the reduces).
func TestShardedEqualsRun(t *testing.T) {
	findings := func(t *testing.T) *testPipeline {
		tp := newTestPipeline(t)
		f := tp.f
		tp.process(0, 0, "ok", 100, "1", false, false)
		tp.process(1, 0, "ok", 100, "1", false, false)
		tp.process(0, 1, "lostA", 200, "1", true, true)
		tp.process(0, 0, "lostOut", 300, "1", false, true)
		tp.process(0, 0, "stale", 100, "1", false, false)
		tp.process(1, 1, "stale", 400, "2", false, true)
		tp.process(1, 0, "ab", 500, "1", true, true)
		rp := partitionFor([]byte("ab"), 2)
		f.add("app-storeB-changelog", rp, []byte("ab"), []byte("x"), 500, kread.Aborted)
		f.add("app-storeB-changelog", rp, nil, nil, 0, kread.Control)
		f.add("inA", 0, []byte("o"), nil, 600, kread.Committed)
		f.add("inA", 0, []byte("o"), []byte("|x"), 600, kread.Committed)
		f.add("inA", 0, []byte("o"), []byte("!bad"), 600, kread.Committed)
		f.group[kread.TP{Topic: "inA", Partition: 0}] = int64(len(f.parts["inA"][0].recs))
		f.add("inA", 0, []byte("o"), []byte("lag|1"), 700, kread.Committed)
		for i, k := range []string{"tail", "tail2", "ok"} {
			off := f.add("inB", 0, []byte("o"), []byte(k+"|t"), int64(800+i), kread.Committed)
			f.group[kread.TP{Topic: "inB", Partition: 0}] = off + 1
			f.add("app-repB-repartition", partitionFor([]byte(k), 2), []byte(k), []byte(k+"|t"), int64(800+i), kread.Committed)
		}
		return tp
	}
	count := func(t *testing.T) *testPipeline {
		cp := newCountPipeline(t)
		for i := 0; i < 12; i++ {
			cp.process(int32(i%2), fmt.Sprintf("k%d", i%4), int64(100+i), i == 5 || i == 9)
		}
		return cp.testPipeline
	}
	for _, pl := range []struct {
		name string
		make func(t *testing.T) *testPipeline
	}{{"findings", findings}, {"count", count}} {
		for _, tails := range []int{0, 1} {
			for n := 1; n <= 3; n++ {
				t.Run(fmt.Sprintf("%s/maxTails=%d/shards=%d", pl.name, tails, n), func(t *testing.T) {
					tp := pl.make(t)
					tp.opt.maxTails = tails
					want := tp.run(t)
					got, d := shardedRun(t, tp.opt, n)
					if pl.name == "findings" && d.TailsOver != (tails == 1) {
						t.Fatalf("maxTails %d: the snapshot's tails over the limit: %v", tails, d.TailsOver)
					}
					if len(want.Rows) == 0 {
						t.Fatal("the pipeline has no findings: the comparison would be vacuous")
					}
					for _, r := range []*finding.Result{want, got} {
						r.Summary.Started, r.Summary.Finished, r.Summary.Timings = time.Time{}, time.Time{}, nil
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("sharded:\n%s\nsingle:\n%s", dump(got), dump(want))
					}
				})
			}
		}
	}
}

// dump renders a result for a failure message, evidence included.
func dump(r *finding.Result) string {
	var b strings.Builder
	for _, row := range r.Rows {
		fmt.Fprintf(&b, "row %+v evidence %+v\n", row, row.Evidence)
	}
	s := r.Summary
	fmt.Fprintf(&b, "index %+v reads %+v withheld %d partial %v\n", s.Index, s.Reads, s.Withheld, s.Partial)
	for _, name := range s.InputOrder {
		fmt.Fprintf(&b, "input %s %+v\n", name, *s.Inputs[name])
	}
	for st, c := range s.Stages {
		fmt.Fprintf(&b, "stage %s %+v\n", st, *c)
	}
	for _, sec := range s.Sections {
		if st, ok := sec.(*finding.Streams); ok {
			fmt.Fprintf(&b, "timeline %+v\n", *st.Timeline)
		}
	}
	fmt.Fprintf(&b, "partitions %+v decode %v %+v\n", s.Partitions, s.DecodeErrorsBySchema, s.DecodeErrorSamples)
	return b.String()
}
