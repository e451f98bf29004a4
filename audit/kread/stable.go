package kread

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf16"
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
// it had at the start. Transactional offset commits become visible to
// OffsetFetch only when their commit marker lands, which happens after the
// producer's commitTransaction has returned; the OffsetFetch require_stable
// flag (v7) exists for this, but kafka-go speaks OffsetFetch up to v5. This
// wait gives the same guarantee with any broker version.
//
// It reports whether it could check: a cluster that does not expose the
// offsets topic (or an ACL that hides it) leaves the offsets as read.
func (c *Client) awaitStableOffsets(ctx context.Context, group string, wait time.Duration) (bool, error) {
	parts, err := c.Partitions(ctx, OffsetsTopic)
	if err != nil || len(parts) == 0 {
		return false, nil
	}
	p := offsetsPartition(group, len(parts))
	before, err := c.offsetsOf(ctx, OffsetsTopic, []int32{p})
	if err != nil {
		return false, nil
	}
	target := before[p].HighWatermark
	deadline := time.Now().Add(wait)
	for {
		now, err := c.offsetsOf(ctx, OffsetsTopic, []int32{p})
		if err != nil {
			return false, fmt.Errorf("waiting for stable offsets of group %q: %w", group, err)
		}
		if now[p].LSO >= target {
			return true, nil
		}
		if time.Now().After(deadline) {
			return true, fmt.Errorf("%w: group %q: %s[%d] last stable offset %d stayed below %d for %s (a transaction committing offsets is hanging)",
				ErrUnstableOffsets, group, OffsetsTopic, p, now[p].LSO, target, wait)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return true, err
		}
	}
}

// ErrUnstableOffsets is wrapped by GroupOffsets when a transaction
// committing the group's offsets stays undecided for the whole wait.
var ErrUnstableOffsets = errors.New("group offsets not stable")
