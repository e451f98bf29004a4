package kafka

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceMix writes, on an in-process cluster, partition 0: three plain
// records; partition 1: a committed transaction of two, an aborted one of
// two, a committed one of one; partition 2: a committed transaction of one
// and an aborted one of two (the log ends in an abort marker); partition 3
// nothing. It returns the data records' values by partition and offset.
func produceMix(t *testing.T, brokers []string) map[int32]map[int64]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plain, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	txn, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionalID("consume-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	got := map[int32]map[int64]string{}
	produce := func(cl *kgo.Client, p int32, vals ...string) {
		t.Helper()
		for _, v := range vals {
			r := &kgo.Record{Topic: "mix", Partition: p, Value: []byte(v)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if got[p] == nil {
				got[p] = map[int64]string{}
			}
			got[p][r.Offset] = v
		}
	}
	transaction := func(p int32, commit bool, vals ...string) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(txn, p, vals...)
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	produce(plain, 0, "p0", "p1", "p2")
	transaction(1, true, "c0", "c1")
	transaction(1, false, "a0", "a1")
	transaction(1, true, "c2")
	transaction(2, true, "c3")
	transaction(2, false, "a2", "a3")
	return got
}

func TestConsume(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "mix"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	vals := produceMix(t, brokers)
	adm, err := NewAdmin(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Every transactional record is followed by its marker, so every end
	// offset lies past the data records.
	uncommitted, err := adm.Ranges(ctx, false, "mix")
	if err != nil {
		t.Fatal(err)
	}
	committed, err := adm.Ranges(ctx, true, "mix")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(uncommitted, committed) {
		t.Fatalf("no transaction is open, yet the last stable offsets %v differ from the high watermarks %v", committed, uncommitted)
	}
	// p1: c0 c1 marker a0 a1 marker c2 marker = offsets 0..7.
	from1 := Range{Topic: "mix", Partition: 1, From: 3, To: uncommitted[1].To}
	for _, tc := range []struct {
		name      string
		ranges    []Range
		committed bool
		want      []string // "partition:value", in order per partition
		wantErr   string
		timeout   time.Duration
	}{
		{name: "read_committed to the LSO", ranges: committed, committed: true,
			want: []string{"0:p0", "0:p1", "0:p2", "1:c0", "1:c1", "1:c2", "2:c3"}},
		{name: "read_uncommitted to the high watermark", ranges: uncommitted,
			want: []string{"0:p0", "0:p1", "0:p2", "1:c0", "1:c1", "1:a0", "1:a1", "1:c2", "2:c3", "2:a2", "2:a3"}},
		{name: "from the middle, read_committed", ranges: []Range{from1}, committed: true, want: []string{"1:c2"}},
		{name: "from the middle, read_uncommitted", ranges: []Range{from1}, want: []string{"1:a0", "1:a1", "1:c2"}},
		{name: "a range ending early stops there", ranges: []Range{{Topic: "mix", Partition: 0, From: 0, To: 2}},
			want: []string{"0:p0", "0:p1"}},
		{name: "empty ranges read nothing", ranges: []Range{{Topic: "mix", Partition: 3, From: 0, To: 0}}},
		{name: "a range past the end waits until the deadline and names the partition",
			ranges: []Range{{Topic: "mix", Partition: 0, From: 0, To: 10}}, timeout: 2 * time.Second,
			wantErr: "mix[0] at 3 of 10"},
		{name: "two ranges of one partition", ranges: []Range{from1, from1}, wantErr: "two ranges for one partition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 60 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			var got []string
			err := Consume(ctx, brokers, tc.ranges, tc.committed, func(r *kgo.Record) error {
				if v := vals[r.Partition][r.Offset]; v != string(r.Value) {
					return fmt.Errorf("mix[%d]@%d is %q, produced %q", r.Partition, r.Offset, r.Value, v)
				}
				got = append(got, fmt.Sprintf("%d:%s", r.Partition, r.Value))
				return nil
			})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(sortedByPartition(got), tc.want) {
				t.Errorf("read %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("an open transaction: read_committed stops at the LSO", func(t *testing.T) {
		open, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.TransactionalID("consume-test-open"))
		if err != nil {
			t.Fatal(err)
		}
		defer open.Close()
		for i, commit := range []bool{true, false} {
			if err := open.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			r := &kgo.Record{Topic: "mix", Partition: 3, Value: []byte(fmt.Sprintf("o%d", i))}
			if err := open.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if commit {
				if err := open.EndTransaction(ctx, kgo.TryCommit); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, committed := range []bool{true, false} {
			ranges, err := adm.Ranges(ctx, committed, "mix")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			err = Consume(ctx, brokers, ranges[3:], committed, func(r *kgo.Record) error {
				got = append(got, string(r.Value))
				return nil
			})
			want := []string{"o0", "o1"}
			if committed {
				want = want[:1]
			}
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("committed %v: read %v (%v), want %v", committed, got, err, want)
			}
		}
	})
	t.Run("a start below the log start is an error, not a reset", func(t *testing.T) {
		if err := adm.DeleteRecords(ctx, "mix", map[int32]int64{0: 2}); err != nil {
			t.Fatal(err)
		}
		err := Consume(ctx, brokers, []Range{{Topic: "mix", Partition: 0, From: 0, To: 3}}, true,
			func(*kgo.Record) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "mix[0] at 0") {
			t.Fatalf("error %v, want one reading mix[0] at 0", err)
		}
	})
}

// sortedByPartition orders "partition:value" strings by partition, keeping
// the order within each partition (the consumer interleaves partitions).
func sortedByPartition(s []string) []string {
	var out []string
	for p := byte('0'); p <= '9'; p++ {
		for _, x := range s {
			if x[0] == p {
				out = append(out, x)
			}
		}
	}
	return out
}
