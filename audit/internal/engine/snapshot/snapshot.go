// Package snapshot holds the primitives of an audit's first phase: reading
// a topic's partition bounds, the group's committed offsets and waiting for
// open transactions to end (settling). Each mode of the engine composes
// them in the order that makes its snapshot sound. The package decides
// nothing: it reports what the cluster showed.
package snapshot

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/lossaudit/lossaudit/audit/kread"
)

// Kafka is what taking a snapshot needs from the cluster; *kread.Client
// has it. Every method is read-only.
type Kafka interface {
	Partitions(ctx context.Context, topic string) ([]int32, error)
	Offsets(ctx context.Context, topic string) (map[int32]kread.Offsets, error)
	GroupOffsets(ctx context.Context, group string, topics []string) (map[kread.TP]int64, error)
}

// Topic is a snapshot of every partition of one topic.
type Topic struct {
	Name string
	// Parts are the partition ids, sorted.
	Parts []int32
	// Offsets are the bounds of each partition.
	Offsets map[int32]kread.Offsets
}

// Partition is what a snapshot saw of one partition, with the group's
// committed offset on it when the group has one.
type Partition struct {
	Topic     string
	Partition int32
	// LogStart, LSO and HighWatermark are the partition's offsets.
	LogStart      int64
	LSO           int64
	HighWatermark int64
	// Committed is the group's committed offset; HasCommitted is false for
	// partitions the group does not consume or has never committed.
	Committed    int64
	HasCommitted bool
}

// Partitions lists the partitions of t with the committed offsets of group
// (which may be nil).
func (t Topic) Partitions(group map[kread.TP]int64) []Partition {
	out := make([]Partition, 0, len(t.Parts))
	for _, p := range t.Parts {
		of := t.Offsets[p]
		sp := Partition{Topic: t.Name, Partition: p, LogStart: of.LogStart, LSO: of.LSO, HighWatermark: of.HighWatermark}
		sp.Committed, sp.HasCommitted = group[kread.TP{Topic: t.Name, Partition: p}]
		out = append(out, sp)
	}
	return out
}

// Read snapshots the partition bounds of topic.
func Read(ctx context.Context, k Kafka, topic string) (Topic, error) {
	offs, err := k.Offsets(ctx, topic)
	if err != nil {
		return Topic{}, fmt.Errorf("reading offsets of %s: %w", topic, err)
	}
	return Topic{Name: topic, Parts: sortedParts(offs), Offsets: offs}, nil
}

// HighWatermarks returns the high watermark of every partition of topic.
func HighWatermarks(ctx context.Context, k Kafka, topic string) (map[int32]int64, error) {
	offs, err := k.Offsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("reading high watermarks of %s: %w", topic, err)
	}
	hw := make(map[int32]int64, len(offs))
	for p, of := range offs {
		hw[p] = of.HighWatermark
	}
	return hw, nil
}

// Settle waits until every partition of topic has an LSO at or above the
// high watermark startHW says it had at the start (every transaction open
// then has ended), or until deadline, then returns the topic's snapshot.
// Partitions still short at the deadline keep their short LSO in the
// snapshot: the caller tells them by comparing with startHW. poll is the
// interval between checks; now is the clock.
func Settle(ctx context.Context, k Kafka, topic string, startHW map[int32]int64, deadline time.Time, poll time.Duration, now func() time.Time) (Topic, error) {
	for {
		t, err := Read(ctx, k, topic)
		if err != nil {
			return Topic{}, err
		}
		short := false
		for p, of := range t.Offsets {
			if of.LSO < startHW[p] {
				short = true
				break
			}
		}
		if !short || !now().Before(deadline) {
			return t, nil
		}
		select {
		case <-ctx.Done():
			return Topic{}, fmt.Errorf("waiting for transactions on %s to end: %w", topic, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func sortedParts(m map[int32]kread.Offsets) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}
