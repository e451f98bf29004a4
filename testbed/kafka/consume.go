package kafka

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TP names one partition of a topic.
type TP struct {
	Topic     string
	Partition int32
}

// Range is the offsets [From, To) of one partition.
type Range struct {
	Topic     string
	Partition int32
	From, To  int64
}

// Ranges returns one range per partition of each topic, from the log start
// offset to the end offset: the last stable offset when committed, the high
// watermark otherwise. The start is listed before the end.
func (a *Admin) Ranges(ctx context.Context, committed bool, topics ...string) ([]Range, error) {
	iso := ReadUncommitted
	if committed {
		iso = ReadCommitted
	}
	var out []Range
	for _, topic := range topics {
		start, err := a.ListOffsets(ctx, topic, -2, ReadUncommitted)
		if err != nil {
			return nil, err
		}
		end, err := a.ListOffsets(ctx, topic, -1, iso)
		if err != nil {
			return nil, err
		}
		for p, s := range start {
			e, ok := end[p]
			if !ok {
				return nil, fmt.Errorf("listing offsets of %s: no end offset for partition %d", topic, p)
			}
			out = append(out, Range{Topic: topic, Partition: p, From: s, To: e})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// Consume reads the ranges with franz-go's consumer, read_committed when
// committed and read_uncommitted otherwise, and calls fn for every data
// record in [From, To) of each range, in offset order per partition and
// from one goroutine. It returns once the consumer's position on every
// partition has reached its To (control records count towards the
// position but are never passed to fn), when fn fails, on a fetch error
// (an offset out of range is one: From below the log start is never
// silently moved), or when ctx ends, naming the partitions not read to
// their end. It is independent of lossaudit's own reader, so that the
// testbed's truth does not depend on the code it checks.
//
// With read_committed a partition reaches To only if a record or marker at
// To-1 or later is visible: a range that ends in the records of an aborted
// transaction whose marker lies at or past To (possible only while another
// transaction is open on the partition) waits until ctx ends. A range whose
// To is the last stable offset of a partition with no transaction open, or
// any read_uncommitted range, does not have that case.
//
// opts add to or override the consumer's options (Cluster.HarnessOpts).
func Consume(ctx context.Context, brokers []string, ranges []Range, committed bool, fn func(*kgo.Record) error, opts ...kgo.Opt) error {
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	start := map[string]map[int32]kgo.Offset{}
	pos, end := map[TP]int64{}, map[TP]int64{}
	for _, r := range ranges {
		k := TP{r.Topic, r.Partition}
		if _, dup := end[k]; dup {
			return fmt.Errorf("reading %s[%d]: two ranges for one partition", r.Topic, r.Partition)
		}
		if r.From >= r.To {
			continue
		}
		if start[r.Topic] == nil {
			start[r.Topic] = map[int32]kgo.Offset{}
		}
		start[r.Topic][r.Partition] = kgo.NewOffset().At(r.From)
		pos[k], end[k] = r.From, r.To
	}
	if len(end) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID("lossaudit-testbed-reader"),
		kgo.ConsumePartitions(start), kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NoResetOffset()), kgo.FetchMaxWait(250 * time.Millisecond)}, opts...)...)
	if err != nil {
		return fmt.Errorf("creating a consumer for %v: %w", brokers, err)
	}
	defer cl.Close()
	left := len(end)
	for left > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("reading to the end offsets: %s: %w", behind(pos, end), ctx.Err())
		}
		if errs := fs.Errors(); len(errs) > 0 {
			fe := errs[0]
			return fmt.Errorf("reading %s[%d] at %d: %w", fe.Topic, fe.Partition, pos[TP{fe.Topic, fe.Partition}], fe.Err)
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			k := TP{r.Topic, r.Partition}
			e, ok := end[k]
			if !ok || pos[k] >= e {
				continue // a partition already read to its end
			}
			if r.Offset < e && !r.Attrs.IsControl() {
				if err := fn(r); err != nil {
					return err
				}
			}
			if pos[k] = r.Offset + 1; pos[k] >= e {
				left--
			}
		}
	}
	return nil
}

// behind lists the partitions whose position has not reached the end.
func behind(pos, end map[TP]int64) string {
	var out []string
	for k, e := range end {
		if pos[k] < e {
			out = append(out, fmt.Sprintf("%s[%d] at %d of %d", k.Topic, k.Partition, pos[k], e))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
