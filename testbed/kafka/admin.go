package kafka

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Admin issues the few administrative requests the testbed needs, over franz-go.
type Admin struct {
	cl *kgo.Client
}

// NewAdmin connects an admin client to the given brokers; opts add to or
// override the client's options (Cluster.HarnessOpts: the brokers and
// credentials of a secured cluster).
func NewAdmin(brokers []string, opts ...kgo.Opt) (*Admin, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID("lossaudit-testbed-admin"),
		kgo.RetryTimeout(5 * time.Second), kgo.DialTimeout(2 * time.Second), kgo.MetadataMinAge(200 * time.Millisecond)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("creating admin client for %v: %w", brokers, err)
	}
	return &Admin{cl: cl}, nil
}

// Close releases the client.
func (a *Admin) Close() { a.cl.Close() }

// Client returns the underlying franz-go client.
func (a *Admin) Client() *kgo.Client { return a.cl }

// BrokersSeenBy returns the node ids that node id's own metadata answer
// lists: asking each node, rather than any, is what tells a node that is
// still starting (it does not answer) from one whose registration another
// broker still holds (a stale answer lists a stopped broker for a while).
func (a *Admin) BrokersSeenBy(ctx context.Context, id int32) ([]int32, error) {
	resp, err := a.cl.Broker(int(id)).Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return nil, fmt.Errorf("requesting metadata from node %d: %w", id, err)
	}
	var ids []int32
	for _, b := range resp.(*kmsg.MetadataResponse).Brokers {
		ids = append(ids, b.NodeID)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// Brokers returns the node ids the metadata currently lists.
func (a *Admin) Brokers(ctx context.Context) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, fmt.Errorf("requesting metadata: %w", err)
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, nil
}

// TopicSpec describes a topic to create.
type TopicSpec struct {
	Name       string
	Partitions int32
	RF         int16             // 0 = broker default
	Configs    map[string]string // topic configs
	// Assignment, when set, places the replicas: node ids per partition,
	// the preferred leader first (Partitions and RF are then implied).
	Assignment [][]int32
}

// CreateTopics creates the topics; existing topics are not an error.
func (a *Admin) CreateTopics(ctx context.Context, specs ...TopicSpec) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	for _, s := range specs {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = s.Name
		t.NumPartitions = s.Partitions
		t.ReplicationFactor = s.RF
		if s.RF == 0 {
			t.ReplicationFactor = -1
		}
		if len(s.Assignment) > 0 {
			t.NumPartitions, t.ReplicationFactor = -1, -1
			for p, nodes := range s.Assignment {
				a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
				a.Partition, a.Replicas = int32(p), nodes
				t.ReplicaAssignment = append(t.ReplicaAssignment, a)
			}
		}
		for k, v := range s.Configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	var errs []error
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			msg := ""
			if t.ErrorMessage != nil {
				msg = *t.ErrorMessage
			}
			errs = append(errs, fmt.Errorf("creating topic %s: %w %s", t.Topic, err, msg))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, s := range specs {
		if err := a.waitTopic(ctx, s.Name); err != nil {
			return err
		}
	}
	return nil
}

// waitTopic polls the metadata of every broker until each one lists every
// partition of topic with a leader.
func (a *Admin) waitTopic(ctx context.Context, topic string) error {
	for {
		if a.topicReadyEverywhere(ctx, topic) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for topic %s to have leaders: %w", topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (a *Admin) topicReadyEverywhere(ctx context.Context, topic string) bool {
	ids, err := a.Brokers(ctx)
	if err != nil || len(ids) == 0 {
		return false
	}
	for _, id := range ids {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		r, err := a.cl.Broker(int(id)).Request(ctx, req)
		if err != nil {
			return false
		}
		resp := r.(*kmsg.MetadataResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
			return false
		}
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}

// DeleteTopics deletes topics by name.
func (a *Admin) DeleteTopics(ctx context.Context, names ...string) error {
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 30000
	req.TopicNames = names
	for _, n := range names {
		t := kmsg.NewDeleteTopicsRequestTopic()
		t.Topic = kmsg.StringPtr(n)
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return fmt.Errorf("deleting topics %v: %w", names, err)
	}
	var errs []error
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			name := ""
			if t.Topic != nil {
				name = *t.Topic
			}
			errs = append(errs, fmt.Errorf("deleting topic %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Partitions returns the partition ids of a topic.
func (a *Admin) Partitions(ctx context.Context, topic string) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	if len(resp.Topics) != 1 {
		return nil, fmt.Errorf("metadata of %s: %d topics in response", topic, len(resp.Topics))
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	var ps []int32
	for _, p := range resp.Topics[0].Partitions {
		ps = append(ps, p.Partition)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps, nil
}

// Topics lists all topic names, internal ones included.
func (a *Admin) Topics(ctx context.Context) ([]string, error) {
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	var out []string
	for _, t := range resp.Topics {
		if t.Topic != nil {
			out = append(out, *t.Topic)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Isolation of an offset lookup.
const (
	ReadUncommitted int8 = 0 // high watermark
	ReadCommitted   int8 = 1 // last stable offset
)

// ListOffsets returns, per partition of topic, the end offset at the given
// isolation (timestamp -1) or the log start offset (timestamp -2).
func (a *Admin) ListOffsets(ctx context.Context, topic string, timestamp int64, isolation int8) (map[int32]int64, error) {
	parts, err := a.Partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = isolation
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition = p
		rp.Timestamp = timestamp
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	shards := a.cl.RequestSharded(ctx, req)
	out := map[int32]int64{}
	for _, sh := range shards {
		if sh.Err != nil {
			return nil, fmt.Errorf("listing offsets of %s: %w", topic, sh.Err)
		}
		resp := sh.Resp.(*kmsg.ListOffsetsResponse)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, fmt.Errorf("listing offsets of %s[%d]: %w", topic, p.Partition, err)
				}
				out[p.Partition] = p.Offset
			}
		}
	}
	if len(out) != len(parts) {
		return nil, fmt.Errorf("listing offsets of %s: got %d of %d partitions", topic, len(out), len(parts))
	}
	return out, nil
}

// GroupOffsets returns the committed offsets of group for the given topics
// (OffsetFetch only; never joins the group). Partitions without a commit are absent.
func (a *Admin) GroupOffsets(ctx context.Context, group string, topics []string) (map[string]map[int32]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	for _, t := range topics {
		parts, err := a.Partitions(ctx, t)
		if err != nil {
			return nil, err
		}
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic = t
		rt.Partitions = parts
		req.Topics = append(req.Topics, rt)
	}
	req.RequireStable = true
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, fmt.Errorf("fetching offsets of group %s: %w", group, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("fetching offsets of group %s: %w", group, err)
	}
	out := map[string]map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("fetching offsets of group %s for %s[%d]: %w", group, t.Topic, p.Partition, err)
			}
			if p.Offset < 0 {
				continue
			}
			if out[t.Topic] == nil {
				out[t.Topic] = map[int32]int64{}
			}
			out[t.Topic][p.Partition] = p.Offset
		}
	}
	return out, nil
}

// DeleteRecords moves the log start offset of each given partition of topic
// up to the offset (what a Kafka Streams purge, or KAFKA-17635, does).
//
// The leader moves its log start offset at once, then answers only when
// every replica has confirmed it, or REQUEST_TIMED_OUT after the request's
// timeout (a follower that was slow to fetch on a busy machine). Asking again
// is idempotent, so a partition that timed out is asked again, up to four
// times or until ctx ends; any other error is returned at once.
func (a *Admin) DeleteRecords(ctx context.Context, topic string, before map[int32]int64) error {
	pending := maps.Clone(before)
	var last error
	for attempt := 0; attempt < 4 && len(pending) > 0; attempt++ {
		timedOut, err := a.deleteRecords(ctx, topic, pending)
		if err != nil {
			return err
		}
		if len(timedOut) > 0 {
			last = fmt.Errorf("deleting records of %s%v: %w (after %d attempts)", topic, slices.Sorted(maps.Keys(timedOut)), kerr.RequestTimedOut, attempt+1)
		}
		pending = timedOut
	}
	if len(pending) > 0 {
		return last
	}
	return nil
}

// deleteRecords sends one DeleteRecords request for before's partitions and
// returns those whose replicas did not confirm in time (REQUEST_TIMED_OUT).
func (a *Admin) deleteRecords(ctx context.Context, topic string, before map[int32]int64) (map[int32]int64, error) {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	for p, off := range before {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, off
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	timedOut := map[int32]int64{}
	for _, sh := range a.cl.RequestSharded(ctx, req) {
		if sh.Err != nil {
			return nil, fmt.Errorf("deleting records of %s: %w", topic, sh.Err)
		}
		for _, t := range sh.Resp.(*kmsg.DeleteRecordsResponse).Topics {
			for _, p := range t.Partitions {
				err := kerr.ErrorForCode(p.ErrorCode)
				switch {
				case err == nil:
				case errors.Is(err, kerr.RequestTimedOut):
					timedOut[p.Partition] = before[p.Partition]
				default:
					return nil, fmt.Errorf("deleting records of %s[%d] before %d: %w", topic, p.Partition, before[p.Partition], err)
				}
			}
		}
	}
	return timedOut, nil
}

// WaitReady waits until the metadata lists every node as a broker and a
// replicated topic can be created and deleted, or ctx ends.
func (c *Cluster) WaitReady(ctx context.Context) error {
	adm, err := c.NewAdmin()
	if err != nil {
		return err
	}
	defer adm.Close()
	var last error
	probe := fmt.Sprintf("__lossaudit_probe_%d", time.Now().UnixNano())
	created := false
	for {
		last = func() error {
			ids, err := adm.Brokers(ctx)
			if err != nil {
				return err
			}
			if len(ids) != len(c.Nodes) {
				return fmt.Errorf("metadata lists brokers %v, want %d", ids, len(c.Nodes))
			}
			for _, n := range c.Nodes {
				seen, err := adm.BrokersSeenBy(ctx, int32(n.ID))
				if err != nil {
					return err
				}
				if len(seen) != len(c.Nodes) {
					return fmt.Errorf("node %d lists brokers %v, want %d", n.ID, seen, len(c.Nodes))
				}
			}
			if !created {
				if err := adm.CreateTopics(ctx, TopicSpec{Name: probe, Partitions: 1}); err != nil {
					return err
				}
				created = true
			}
			return adm.DeleteTopics(ctx, probe)
		}()
		if last == nil {
			return nil
		}
		for _, n := range c.Nodes {
			if !c.Running(n.ID) {
				return fmt.Errorf("waiting for kafka: node %d exited:\n%s", n.ID, c.LogTail(n.ID, 30))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for kafka cluster to be ready: %w (last: %v)", ctx.Err(), last)
		case <-time.After(300 * time.Millisecond):
		}
	}
}
