package streams

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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
	base := Options{Inputs: []Input{{Name: "a", Topic: "a", RepartitionTopic: "r", ChangelogTopic: "c", Select: sel}}}
	for _, tt := range []struct {
		edit func(o *Options)
		want string
	}{
		{func(o *Options) { o.From = time.Unix(1, 0) }, "windowed audit"},
		{func(o *Options) { o.DeadLetterTopic = "dlq" }, "dead-letter queue"},
		{func(o *Options) { o.OutputKey = func(b []byte) []byte { return b } }, "Avro-framed keys"},
		{func(o *Options) { o.Inputs[0].DownstreamKey = func(b []byte) []byte { return b } }, "input a: keys normalized"},
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
