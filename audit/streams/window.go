package streams

import (
	"context"
	"fmt"
	"slices"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// lookBeforeWindow completes the rows of a windowed audit that say a stage
// holds nothing newer than the lost update: a windowed audit reads each
// stage from the window start only, so a stage that holds the key with an
// older timestamp (from before the window) looked empty. For those rows it
// reads the part of the stage partition holding the key (the key's
// partition, by Kafka's default partitioner) before the window start and
// records the newest committed timestamp found: a missing row becomes
// stale, exactly as the full audit reports it, and an aborted row gains
// its observed timestamp. Records before the window start have timestamps
// below the window start (that is how the start offset is found) and so
// below every expected timestamp: they never satisfy a row, they only
// describe it. Changelogs are compacted, so this reads little.
func lookBeforeWindow(ctx context.Context, o Options, snap *pipelineSnapshot, rows []finding.Row) error {
	byName := map[string]int{}
	for x, in := range o.Inputs {
		byName[in.Name] = x
	}
	type stageRef struct {
		t    snapshot.Topic
		norm func([]byte) []byte
	}
	// Rows to complete, by stage topic, then partition, then key.
	want := map[string]map[int32]map[string][]int{}
	stages := map[string]stageRef{}
	for i, r := range rows {
		if r.HasObserved {
			continue
		}
		ref := stageRef{t: snap.output, norm: o.OutputKey}
		if r.Stage == finding.StageChangelog {
			x := byName[r.Input]
			ref = stageRef{t: snap.changelogs[x], norm: o.Inputs[x].DownstreamKey}
		}
		stages[ref.t.Name] = ref
		p := partitionFor(r.Key, len(ref.t.Parts))
		if want[ref.t.Name] == nil {
			want[ref.t.Name] = map[int32]map[string][]int{}
		}
		if want[ref.t.Name][p] == nil {
			want[ref.t.Name][p] = map[string][]int{}
		}
		want[ref.t.Name][p][string(r.Key)] = append(want[ref.t.Name][p][string(r.Key)], i)
	}
	topics := make([]string, 0, len(want))
	for t := range want {
		topics = append(topics, t)
	}
	slices.Sort(topics)
	for _, topic := range topics {
		ref := stages[topic]
		start, err := o.Kafka.OffsetsForTime(ctx, topic, o.From)
		if err != nil {
			return fmt.Errorf("audit: looking up offsets of %s for the window start: %w", topic, err)
		}
		var rs []kread.Range
		var total int64
		for p := range want[topic] {
			of := ref.t.Offsets[p]
			to := min(start[p], of.LSO)
			if of.LogStart < to {
				rs = append(rs, kread.Range{Topic: topic, Partition: p, From: of.LogStart, To: to})
				total += to - of.LogStart
			}
		}
		var stats collect.Stats
		err = collect.Read(ctx, o.Kafka, o.Progress, "before the window "+topic, rs, total, false, &stats, func(recs []kread.Record) error {
			for i := range recs {
				rec := &recs[i]
				if rec.Key == nil {
					continue
				}
				key := rec.Key
				if ref.norm != nil {
					key = ref.norm(key)
				}
				for _, j := range want[topic][rec.Partition][string(key)] {
					r := &rows[j]
					if !r.HasObserved || rec.Timestamp > r.ObservedTS {
						r.HasObserved, r.ObservedTS = true, rec.Timestamp
					}
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("audit: %w", err)
		}
	}
	for i := range rows {
		if rows[i].Kind == finding.Missing && rows[i].HasObserved {
			rows[i].Kind = finding.Stale
		}
	}
	return nil
}
