package kread

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsTopology is the topology a streams group's coordinator holds
// (KIP-1071): what the application's members sent in their
// StreamsGroupHeartbeat, as StreamsGroupDescribe returns it. Topic names
// are full names (internal topics carry the application.id prefix): Kafka
// Streams builds them with InternalTopologyBuilder#subtopologyToTopicsInfo
// (StreamThread#initBrokerTopology, kafka-streams 4.4.0).
type StreamsTopology struct {
	// Group is the group id (the application.id).
	Group string
	// Epoch is the topology's epoch: it grows when a member brings a new
	// topology.
	Epoch int32
	// Subtopologies in the order of the answer.
	Subtopologies []StreamsSubtopology
}

// StreamsSubtopology is one subtopology (a connected part of the
// topology, one task per partition): the topics it reads and writes.
type StreamsSubtopology struct {
	ID string
	// SourceTopics are the user topics it reads (repartition topics are
	// not among them).
	SourceTopics []string
	// RepartitionSourceTopics are the repartition topics it reads.
	RepartitionSourceTopics []string
	// RepartitionSinkTopics are the repartition topics it writes (the
	// output topics are not among them).
	RepartitionSinkTopics []string
	// ChangelogTopics are the changelog topics of its state stores.
	ChangelogTopics []string
}

// streamsTopology copies the answer's topology, with every list sorted
// (nil when the answer has none).
func streamsTopology(t *kmsg.StreamsGroupDescribeResponseGroupTopology) *StreamsTopology {
	if t == nil {
		return nil
	}
	names := func(ts []kmsg.TopicInfo) []string {
		out := make([]string, 0, len(ts))
		for _, x := range ts {
			out = append(out, x.Topic)
		}
		slices.Sort(out)
		return out
	}
	sorted := func(ts []string) []string {
		out := slices.Clone(ts)
		slices.Sort(out)
		return out
	}
	out := &StreamsTopology{Epoch: t.Epoch}
	for _, s := range t.Subtopologies {
		out.Subtopologies = append(out.Subtopologies, StreamsSubtopology{
			ID:                      s.SubtopologyID,
			SourceTopics:            sorted(s.SourceTopics),
			RepartitionSourceTopics: names(s.RepartitionSourceTopics),
			RepartitionSinkTopics:   sorted(s.RepartitionSinkTopics),
			ChangelogTopics:         names(s.StateChangelogTopics),
		})
	}
	return out
}

// StreamsGroupTopology returns the topology a streams group's coordinator
// holds (StreamsGroupDescribe), or nil when the group is not a streams
// group (a classic or KIP-848 consumer group, a share group, a group that
// does not exist, brokers before Kafka 4.x) or has no topology yet. It
// never joins the group. The group's type and state come with it.
func (c *Client) StreamsGroupTopology(ctx context.Context, group string) (*StreamsTopology, Group, error) {
	res, err := c.describeGroup(ctx, group)
	if err != nil {
		return nil, Group{}, err
	}
	if res.out.Type != GroupStreams || res.topology == nil {
		return nil, res.out, nil
	}
	t := *res.topology
	t.Group = group
	return &t, res.out, nil
}
