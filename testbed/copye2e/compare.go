package copye2e

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/config"
)

// Config returns a comparison's configuration for a cluster at brokers:
// the defaults of config.Load, the index in storeDir.
func Config(brokers []string, storeDir string) *config.Config {
	return &config.Config{
		Kafka: config.Kafka{Brokers: brokers, FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576,
			Concurrency: 8, Timeout: 30 * time.Second},
		Store:   config.Store{Dir: storeDir},
		Audit:   config.Audit{SettleTimeout: 30 * time.Second},
		Compare: config.Compare{Match: config.MatchRecord, Grace: config.DefaultGrace},
	}
}

// WaitInSync polls the metadata until every partition of topic has all
// its replicas in sync (after a broker restart), or ctx ends.
func WaitInSync(ctx context.Context, brokers []string, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	var last string
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Topics) == 1 {
			t := resp.Topics[0]
			last = ""
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				last = err.Error()
			}
			for _, p := range t.Partitions {
				if len(p.ISR) != len(p.Replicas) || p.Leader < 0 {
					last = fmt.Sprintf("%s[%d] has ISR %v of replicas %v, leader %d", topic, p.Partition, p.ISR, p.Replicas, p.Leader)
				}
			}
			if last == "" && len(t.Partitions) > 0 {
				return nil
			}
		} else if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be in sync: %w (last: %s)", topic, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// WaitLeader polls the metadata until partition p of topic is led by
// broker leader, or ctx ends.
func WaitLeader(ctx context.Context, brokers []string, topic string, p, leader int32) error {
	_, _, err := WaitPartition(ctx, brokers, topic, p, fmt.Sprintf("broker %d to lead", leader),
		func(l int32, _ []int32) bool { return l == leader })
	return err
}

// WaitPartition polls the metadata until partition p of topic has a leader
// and ISR for which ok holds, and returns them; what names the state
// awaited in the error when ctx ends first.
func WaitPartition(ctx context.Context, brokers []string, topic string, p int32, what string, ok func(leader int32, isr []int32) bool) (int32, []int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		return 0, nil, err
	}
	defer cl.Close()
	last := "no answer"
	for {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		if resp, err := req.RequestWith(ctx, cl); err == nil && len(resp.Topics) == 1 {
			for _, rp := range resp.Topics[0].Partitions {
				if rp.Partition == p {
					if ok(rp.Leader, rp.ISR) {
						return rp.Leader, rp.ISR, nil
					}
					last = fmt.Sprintf("leader %d, ISR %v", rp.Leader, rp.ISR)
				}
			}
		} else if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return 0, nil, fmt.Errorf("waiting for %s %s[%d]: %w (last: %s)", what, topic, p, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// configPair is one compare.pairs entry.
func configPair(name, source, sink string) config.Pair {
	return config.Pair{Name: name, Source: source, Sink: sink}
}

// copiesEnd returns the sum of the end offsets of topic's partitions (0
// when it does not exist yet).
func copiesEnd(ctx context.Context, brokers []string, topic string) (int64, error) {
	ends, err := copiesEnds(ctx, brokers, topic)
	var n int64
	for _, e := range ends {
		n += e
	}
	return n, err
}

// copiesEnds returns the high watermark of every partition of topic.
func copiesEnds(ctx context.Context, brokers []string, topic string) (map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RetryTimeout(2*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return listOffsets(ctx, cl, topic, -1, 0)
}
