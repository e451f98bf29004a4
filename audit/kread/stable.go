package kread

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf16"

	"github.com/segmentio/kafka-go/protocol/metadata"
)

// OffsetsTopic is the internal topic holding consumer groups' committed
// offsets.
const OffsetsTopic = "__consumer_offsets"

// DefaultStableWait bounds how long GroupOffsets waits for the group's
// pending transactional offset commits to be decided.
const DefaultStableWait = 30 * time.Second

// offsetsPartition returns the __consumer_offsets partition that holds a
// group's offsets: Utils.abs(groupId.hashCode()) % partitions, with Java's
// String.hashCode over UTF-16 code units.
func offsetsPartition(group string, partitions int) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % int32(partitions)
}

// awaitStableOffsets waits until every transaction holding offset commits
// in the group's __consumer_offsets partition when it is called has been
// decided: that partition's last stable offset reaches the high watermark
// it had at the start. It is GroupOffsets' fallback for brokers older than
// Kafka 2.5, which cannot be asked OffsetFetch with require_stable (v7).
// It is weaker: a 3.x coordinator applies a transaction's offsets a moment
// after its marker is in the log, so right after the marker an OffsetFetch
// can still show the offsets committed before it (older offsets: records
// counted as pending, never as lost).
//
// (listOffsets asks the partition's leader directly: kafka-go's routing
// table leaves internal topics out.) It reports whether it could check: a cluster
// without the offsets topic (no group ever committed, or kfake) or an ACL
// that hides it leaves the offsets as read. Any other failure is an error:
// a silent skip would bring back the false purged_past_commit it prevents.
func (c *Client) awaitStableOffsets(ctx context.Context, group string, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	var target int64 = -1
	var a attempts
	for {
		gen := c.generation()
		lso, hw, ok, err := c.offsetsTopicEnds(ctx, group)
		switch {
		case err != nil:
			// A leader move: look the leader up again.
			if err := c.failed(ctx, &a, fmt.Sprintf("the stable offsets of group %q", group), gen, err); err != nil {
				return false, fmt.Errorf("waiting for stable offsets of group %q: %w", group, err)
			}
			continue
		case !ok:
			return false, nil
		}
		a.reset()
		if target < 0 {
			target = hw
		}
		if lso >= target {
			return true, nil
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("%w: group %q: %s last stable offset %d stayed below %d for %s (a transaction committing offsets is hanging)",
				ErrUnstableOffsets, group, OffsetsTopic, lso, target, wait)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return true, err
		}
	}
}

// offsetsTopicEnds returns the last stable offset and high watermark of the
// group's __consumer_offsets partition, asking its leader directly. ok is
// false when the cluster does not show that topic.
func (c *Client) offsetsTopicEnds(ctx context.Context, group string) (lso, hw int64, ok bool, err error) {
	m, err := c.meta(ctx)
	if err != nil {
		return 0, 0, false, err
	}
	var parts []metadata.ResponsePartition
	for _, t := range m.Topics {
		if t.Name == OffsetsTopic {
			if t.ErrorCode != 0 {
				return 0, 0, false, nil // not visible (authorization) or not there
			}
			parts = t.Partitions
		}
	}
	if len(parts) == 0 {
		return 0, 0, false, nil
	}
	p := offsetsPartition(group, len(parts))
	// High watermark first, then the LSO, so that LSO <= HW.
	hws, err := c.listOffsets(ctx, OffsetsTopic, []int32{p}, latest, readUncommitted)
	if err != nil {
		return 0, 0, false, fmt.Errorf("%s[%d]: %w", OffsetsTopic, p, err)
	}
	lsos, err := c.listOffsets(ctx, OffsetsTopic, []int32{p}, latest, readCommitted)
	if err != nil {
		return 0, 0, false, fmt.Errorf("%s[%d]: %w", OffsetsTopic, p, err)
	}
	return lsos[p], hws[p], true, nil
}

// ErrUnstableOffsets is wrapped by GroupOffsets when a transaction
// committing the group's offsets stays undecided for the whole wait.
var ErrUnstableOffsets = errors.New("group offsets not stable")
