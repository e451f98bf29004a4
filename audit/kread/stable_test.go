package kread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	tkafka "github.com/lossaudit/lossaudit/testbed/kafka"
)

// The expected partitions were computed with Java:
// (s.hashCode() == Integer.MIN_VALUE ? 0 : Math.abs(s.hashCode())) % 50,
// which is what Kafka's group coordinator uses.
func TestOffsetsPartitionMatchesKafka(t *testing.T) {
	tests := []struct {
		group string
		want  int32
	}{
		{"hello", 22},
		{"polygenelubricants", 0}, // hashCode is Integer.MIN_VALUE
		{"Hello World", 26},       // negative hashCode
		{"lossaudit-demo", 10},
		{"myapp", 1},
		{"日本語-app", 5}, // UTF-16 code units, not bytes
	}
	for _, tt := range tests {
		if got := offsetsPartition(tt.group, 50); got != tt.want {
			t.Errorf("offsetsPartition(%q, 50) = %d, want %d", tt.group, got, tt.want)
		}
	}
}

// TestRealKafkaGroupOffsetsWaitForStable leaves a transaction holding an
// offset commit for the group open on a real broker: GroupOffsets must not
// return the offsets as they are (the new commit may be about to land)
// but wait, and fail naming the group once the wait is over; after the
// transaction commits it returns the new offset. kfake has no
// __consumer_offsets topic, so this needs Apache Kafka.
func TestRealKafkaGroupOffsetsWaitForStable(t *testing.T) {
	cl := tkafka.StartForTest(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm, err := tkafka.NewAdmin(cl.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopics(ctx, tkafka.TopicSpec{Name: "in", Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	// Groups spread over __consumer_offsets partitions led by all three
	// brokers: kafka-go does not route requests for internal topics, so a
	// request not sent to the leader explicitly fails with NOT_LEADER and
	// GroupOffsets would stall in retries.
	// Requests by topic name (OffsetCommit v10 of Kafka 4.4 names topics by
	// id): the 3.6 protocol versions.
	plain, err := kgo.NewClient(kgo.SeedBrokers(cl.Bootstrap()...), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	rd, err := New(Options{Brokers: cl.Bootstrap(), Timeout: 10 * time.Second, StableWait: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	for i := range 9 {
		g := fmt.Sprintf("spread-%d", i)
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group, commit.Generation, commit.MemberID = g, -1, ""
		ct := kmsg.NewOffsetCommitRequestTopic()
		ct.Topic = "in"
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset, cp.LeaderEpoch = 0, int64(i), -1
		ct.Partitions = append(ct.Partitions, cp)
		commit.Topics = append(commit.Topics, ct)
		if r, err := commit.RequestWith(ctx, plain); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("committing for %s: %v %+v", g, err, r)
		}
		start := time.Now()
		got, err := rd.GroupOffsets(ctx, g, []string{"in"})
		if err != nil || got[TP{"in", 0}] != int64(i) {
			t.Fatalf("group %s: %v %v, want in[0]=%d", g, got, err, i)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("group %s (offsets partition %d): GroupOffsets took %s; the stability check must ask the partition's leader directly", g, offsetsPartition(g, 50), d)
		}
	}
	// The internal topic itself can be scanned (kafka-go does not route
	// it: offsets and fetches go to the leaders directly).
	offs, err := rd.Offsets(ctx, OffsetsTopic)
	if err != nil || len(offs) == 0 {
		t.Fatalf("offsets of %s: %d partitions, %v", OffsetsTopic, len(offs), err)
	}
	var ranges []Range
	for p, o := range offs {
		ranges = append(ranges, Range{Topic: OffsetsTopic, Partition: p, From: o.LogStart, To: o.LSO})
	}
	var commits atomic.Int64
	if _, err := rd.Read(ctx, ranges, ReadOptions{}, func(recs []Record) error {
		commits.Add(int64(len(recs)))
		return nil
	}); err != nil {
		t.Fatalf("reading %s: %v", OffsetsTopic, err)
	}
	if commits.Load() < 9 {
		t.Errorf("read %d records of %s, want the 9 commits at least", commits.Load(), OffsetsTopic)
	}
	const group = "stable-app"
	prod, err := kgo.NewClient(kgo.SeedBrokers(cl.Bootstrap()...), kgo.TransactionalID("stable-txn"),
		kgo.DefaultProduceTopic("in"), kgo.TransactionTimeout(2*time.Minute), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	txnCommit := func(off int64) {
		t.Helper()
		pid, epoch, err := prod.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		add := kmsg.NewPtrAddOffsetsToTxnRequest()
		add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = "stable-txn", pid, epoch, group
		if r, err := add.RequestWith(ctx, prod); err != nil || r.ErrorCode != 0 {
			t.Fatalf("AddOffsetsToTxn: %v %v", err, r)
		}
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "stable-txn", group, pid, epoch
		req.Generation, req.MemberID = -1, ""
		tp := kmsg.NewTxnOffsetCommitRequestTopic()
		tp.Topic = "in"
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = 0, off, -1
		tp.Partitions = append(tp.Partitions, p)
		req.Topics = append(req.Topics, tp)
		if r, err := req.RequestWith(ctx, prod); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("TxnOffsetCommit: %v %+v", err, r)
		}
	}
	// First commit: offset 1, committed.
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txnCommit(1)
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	r, err := New(Options{Brokers: cl.Bootstrap(), Timeout: 10 * time.Second, StableWait: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g, err := r.GroupOffsets(ctx, group, []string{"in"})
	if err != nil || g[TP{"in", 0}] != 1 {
		t.Fatalf("after the first commit: %v %v, want in[0]=1", g, err)
	}
	// Second commit: offset 2, left open.
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte("y")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txnCommit(2)
	start := time.Now()
	_, err = r.GroupOffsets(ctx, group, []string{"in"})
	if !errors.Is(err, ErrUnstableOffsets) || !strings.Contains(err.Error(), group) {
		t.Fatalf("with an offset commit pending: err = %v, want ErrUnstableOffsets naming %s", err, group)
	}
	if waited := time.Since(start); waited < 3*time.Second {
		t.Errorf("gave up after %s, before the 3s wait", waited)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	g, err = r.GroupOffsets(ctx, group, []string{"in"})
	if err != nil || g[TP{"in", 0}] != 2 {
		t.Fatalf("after the second commit: %v %v, want in[0]=2", g, err)
	}
}
