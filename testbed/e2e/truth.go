package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/testbed/kafka"
)

// The testbed observes the cluster with franz-go (testbed/kafka), never
// with lossaudit's own reader: the truth the audit is compared with must not
// depend on the code under test.

// truthTimeout bounds one read of the truth; the caller's context may end it sooner.
const truthTimeout = 2 * time.Minute

// groupOffsets returns the application's committed offsets for the topics
// once none of its transactional offset commits is pending (OffsetFetch with
// require_stable answers UNSTABLE_OFFSET_COMMIT until the markers are
// written). Partitions without a commit are absent.
func groupOffsets(ctx context.Context, adm *kafka.Admin, topics []string) (map[kafka.TP]int64, error) {
	for {
		byTopic, err := adm.GroupOffsets(ctx, ApplicationID, topics)
		if err == nil {
			out := map[kafka.TP]int64{}
			for t, ps := range byTopic {
				for p, off := range ps {
					out[kafka.TP{Topic: t, Partition: p}] = off
				}
			}
			return out, nil
		}
		if !errors.Is(err, kerr.UnstableOffsetCommit) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the offsets of group %s to be stable: %w (last: %v)", ApplicationID, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// committedRecords calls fn for every committed record of the ranges,
// read_committed, and returns how many there were.
func committedRecords(ctx context.Context, env *Env, ranges []kafka.Range, fn func(*kgo.Record) error) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, truthTimeout)
	defer cancel()
	n := int64(0)
	err := kafka.Consume(ctx, env.Cluster.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		n++
		return fn(r)
	})
	return n, err
}

// allRecords counts every data record of the ranges, read_uncommitted:
// committed ones and those of aborted transactions.
func allRecords(ctx context.Context, env *Env, ranges []kafka.Range) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, truthTimeout)
	defer cancel()
	n := int64(0)
	err := kafka.Consume(ctx, env.Cluster.Bootstrap(), ranges, false, func(*kgo.Record) error {
		n++
		return nil
	})
	return n, err
}

// Assignments returns the partitions assigned to each member of the
// application's consumer group, by the member's client id (DescribeGroups).
// A Kafka Streams member's assignment holds the source partitions of its
// active tasks. Members of a group that is rebalancing have none yet.
func Assignments(ctx context.Context, adm *kafka.Admin) (map[string][]kafka.TP, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{ApplicationID}
	resp, err := req.RequestWith(ctx, adm.Client())
	if err != nil {
		return nil, fmt.Errorf("describing group %s: %w", ApplicationID, err)
	}
	out := map[string][]kafka.TP{}
	for _, g := range resp.Groups {
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, fmt.Errorf("describing group %s: %w", g.Group, err)
		}
		for _, m := range g.Members {
			if _, ok := out[m.ClientID]; !ok {
				out[m.ClientID] = nil // a member, with or without partitions
			}
			if len(m.MemberAssignment) == 0 {
				continue
			}
			a := kmsg.NewConsumerMemberAssignment()
			if err := a.ReadFrom(m.MemberAssignment); err != nil {
				return nil, fmt.Errorf("group %s: assignment of member %s: %w", g.Group, m.ClientID, err)
			}
			for _, t := range a.Topics {
				for _, p := range t.Partitions {
					out[m.ClientID] = append(out[m.ClientID], kafka.TP{Topic: t.Topic, Partition: p})
				}
			}
		}
	}
	return out, nil
}
