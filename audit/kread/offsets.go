package kread

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"strconv"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/listoffsets"
	"github.com/segmentio/kafka-go/protocol/offsetfetch"
)

// Offsets is a snapshot of one partition's bounds.
type Offsets struct {
	// LogStart is the first offset still in the log.
	LogStart int64
	// LSO is the last stable offset: every offset below it belongs to a
	// decided (committed or aborted) transaction or to no transaction.
	LSO int64
	// HighWatermark is the offset after the last replicated record.
	HighWatermark int64
}

// TP names one partition of one topic.
type TP struct {
	Topic     string
	Partition int32
}

// ListOffsets special timestamps.
const (
	latest   = -1
	earliest = -2
)

// Isolation levels of ListOffsets and Fetch.
const (
	readUncommitted = 0
	readCommitted   = 1
)

// listOffsets asks every partition's leader for the offset matching ts
// (a Unix ms timestamp, or latest/earliest) at the given isolation level.
// Partitions answering with an error make the whole call fail (and be
// retried by the caller).
//
// kafka-go routes ListOffsets by its routing table, which leaves internal
// topics out (their requests would go to any broker and fail with
// NOT_LEADER forever); their partitions are asked of each leader directly,
// by address, as the metadata names it.
func (c *Client) listOffsets(ctx context.Context, topic string, parts []int32, ts int64, isolation int8) (map[int32]int64, error) {
	m, err := c.meta(ctx)
	if err != nil {
		return nil, err
	}
	var leaders map[int32]string // partition -> leader address, internal topics only
	for _, t := range m.Topics {
		if t.Name == topic && t.IsInternal {
			leaders = map[int32]string{}
			for _, p := range t.Partitions {
				for _, b := range m.Brokers {
					if b.NodeID == p.LeaderID {
						leaders[p.PartitionIndex] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
					}
				}
			}
		}
	}
	if leaders == nil {
		return c.listOffsetsAt(ctx, nil, topic, parts, ts, isolation)
	}
	byLeader := map[string][]int32{}
	for _, p := range parts {
		addr, ok := leaders[p]
		if !ok {
			return nil, fmt.Errorf("partition %d: no leader: %w", p, kafka.LeaderNotAvailable)
		}
		byLeader[addr] = append(byLeader[addr], p)
	}
	out := make(map[int32]int64, len(parts))
	for addr, ps := range byLeader {
		got, err := c.listOffsetsAt(ctx, kafka.TCP(addr), topic, ps, ts, isolation)
		if err != nil {
			return nil, fmt.Errorf("asking leader %s: %w", addr, err)
		}
		maps.Copy(out, got)
	}
	return out, nil
}

// listOffsetsAt sends one ListOffsets request through the bootstrap
// brokers (addr nil) or to addr.
func (c *Client) listOffsetsAt(ctx context.Context, addr net.Addr, topic string, parts []int32, ts int64, isolation int8) (map[int32]int64, error) {
	req := &listoffsets.Request{
		ReplicaID:      -1,
		IsolationLevel: isolation,
		Topics:         []listoffsets.RequestTopic{{Topic: topic}},
	}
	for _, p := range parts {
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, listoffsets.RequestPartition{
			Partition: p, CurrentLeaderEpoch: -1, Timestamp: ts,
		})
	}
	var r kafka.Response
	var err error
	if addr == nil {
		r, err = c.roundTrip(ctx, req)
	} else {
		rctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
		r, err = c.tr.RoundTrip(rctx, addr, req)
		cancel()
	}
	if err != nil {
		return nil, err
	}
	res, ok := r.(*listoffsets.Response)
	if !ok {
		return nil, fmt.Errorf("unexpected response %T", r)
	}
	out := make(map[int32]int64, len(parts))
	for _, t := range res.Topics {
		if t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			if err := codeErr(p.ErrorCode); err != nil {
				if p.ErrorCode == -1 {
					// kafka-go's merger reports a failed request this way.
					err = fmt.Errorf("request to the leader failed")
				}
				return nil, fmt.Errorf("partition %d: %w", p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	for _, p := range parts {
		if _, ok := out[p]; !ok {
			return nil, fmt.Errorf("partition %d: no answer", p)
		}
	}
	return out, nil
}

// Offsets snapshots every partition of topic: log start offset (earliest),
// last stable offset (latest at read_committed) and high watermark (latest
// at read_uncommitted), read in that order so that LSO <= HighWatermark.
func (c *Client) Offsets(ctx context.Context, topic string) (map[int32]Offsets, error) {
	parts, err := c.Partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	return c.offsetsOf(ctx, topic, parts)
}

func (c *Client) offsetsOf(ctx context.Context, topic string, parts []int32) (map[int32]Offsets, error) {
	var start, lso, hw map[int32]int64
	err := c.retry(ctx, "the offsets of "+topic, func(ctx context.Context) (err error) {
		if start, err = c.listOffsets(ctx, topic, parts, earliest, readUncommitted); err != nil {
			return fmt.Errorf("log start offsets: %w", err)
		}
		if lso, err = c.listOffsets(ctx, topic, parts, latest, readCommitted); err != nil {
			return fmt.Errorf("last stable offsets: %w", err)
		}
		if hw, err = c.listOffsets(ctx, topic, parts, latest, readUncommitted); err != nil {
			return fmt.Errorf("high watermarks: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	out := make(map[int32]Offsets, len(parts))
	for _, p := range parts {
		out[p] = Offsets{LogStart: start[p], LSO: lso[p], HighWatermark: hw[p]}
	}
	return out, nil
}

// OffsetsForTime returns, for every partition of topic, the first offset
// whose record timestamp is at or after t, or the high watermark when no
// record is that recent.
func (c *Client) OffsetsForTime(ctx context.Context, topic string, t time.Time) (map[int32]int64, error) {
	parts, err := c.Partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	var at, hw map[int32]int64
	err = c.retry(ctx, "the offsets of "+topic, func(ctx context.Context) (err error) {
		if at, err = c.listOffsets(ctx, topic, parts, t.UnixMilli(), readUncommitted); err != nil {
			return fmt.Errorf("offsets for time: %w", err)
		}
		if hw, err = c.listOffsets(ctx, topic, parts, latest, readUncommitted); err != nil {
			return fmt.Errorf("high watermarks: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("offsets of %s at %s: %w", topic, t.UTC().Format(time.RFC3339Nano), err)
	}
	for p, o := range at {
		if o < 0 {
			at[p] = hw[p]
		}
	}
	return at, nil
}

// GroupOffsets reads the committed offsets of group for every partition of
// topics (sent to the group's coordinator). It never joins the group and
// never commits. Partitions without a committed offset are absent from the
// result.
//
// The offsets are stable: under exactly-once, Kafka Streams'
// commitTransaction returns, and repartition topics are purged, before the
// commit makes the new offsets visible, so an unstable read would show a
// purge past the committed offset that is not there. Against Kafka 2.5 and
// later it asks OffsetFetch v7 with require_stable, retrying while the
// coordinator answers UNSTABLE_OFFSET_COMMIT (see groupOffsetsStable);
// against older brokers it first waits until the transactions committing
// the group's offsets at the time of the call are decided (see
// awaitStableOffsets), then asks OffsetFetch v5. Either wait is bounded by
// Options.StableWait and ends in ErrUnstableOffsets.
func (c *Client) GroupOffsets(ctx context.Context, group string, topics []string) (map[TP]int64, error) {
	parts := map[string][]int32{}
	for _, t := range topics {
		ps, err := c.Partitions(ctx, t)
		if err != nil {
			return nil, err
		}
		parts[t] = ps
	}
	if len(parts) == 0 {
		return map[TP]int64{}, nil
	}
	if out, ok, err := c.groupOffsetsStable(ctx, group, parts); ok || err != nil {
		return out, err
	}
	if _, err := c.awaitStableOffsets(ctx, group, c.o.StableWait); err != nil {
		return nil, err
	}
	req := &offsetfetch.Request{GroupID: group}
	for _, t := range topics {
		req.Topics = append(req.Topics, offsetfetch.RequestTopic{Name: t, PartitionIndexes: parts[t]})
	}
	out := map[TP]int64{}
	err := c.retry(ctx, fmt.Sprintf("the committed offsets of group %q", group), func(ctx context.Context) error {
		clear(out)
		r, err := c.roundTrip(ctx, req)
		if err != nil {
			return err
		}
		res, ok := r.(*offsetfetch.Response)
		if !ok {
			return fmt.Errorf("unexpected response %T", r)
		}
		if err := codeErr(res.ErrorCode); err != nil {
			if errors.Is(err, kafka.GroupIdNotFound) {
				return nil // a group that never committed anything
			}
			return err
		}
		for _, t := range res.Topics {
			for _, p := range t.Partitions {
				if err := codeErr(p.ErrorCode); err != nil {
					if errors.Is(err, kafka.UnknownTopicOrPartition) {
						continue
					}
					return fmt.Errorf("%s[%d]: %w", t.Name, p.PartitionIndex, err)
				}
				if p.CommittedOffset >= 0 {
					out[TP{Topic: t.Name, Partition: p.PartitionIndex}] = p.CommittedOffset
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("committed offsets of group %q: %w%s", group, err, groupHint(err))
	}
	return out, nil
}

// groupHint names the permission a group request refused with
// GROUP_AUTHORIZATION_FAILED needs; "" for any other error.
func groupHint(err error) string {
	if errors.Is(err, kafka.GroupAuthorizationFailed) {
		return " (the principal needs DESCRIBE on the group; docs/security.md)"
	}
	return ""
}
