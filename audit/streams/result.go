package streams

import (
	"context"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// partitionFindings runs the partition-level detectors over the snapshot
// and, when there is one, the previous run's snapshot.
func partitionFindings(o Options, snap *pipelineSnapshot, col *collector, prev map[kread.TP]history.Entry) []finding.PartitionFinding {
	var reparts []snapshot.Partition
	for _, t := range snap.reparts {
		reparts = append(reparts, t.Partitions(snap.group)...)
	}
	out := detect.PurgedPastCommit(o.Group, reparts)
	for _, t := range snap.withBuffers(append(snap.changelogs, snap.output)) {
		out = append(out, detect.StuckLSO(t, snap.startHW[t.Name], o.SettleTimeout, snap.holders[t.Name], snap.holderErr[t.Name])...)
	}
	out = append(out, col.dlq.stuck(o, snap)...)
	out = append(out, detect.PoisonPill(o.Group, snap.groupActive, col.nextRecords())...)
	var inputs []snapshot.Partition
	for _, t := range snap.inputs {
		inputs = append(inputs, t.Partitions(snap.group)...)
	}
	out = append(out, detect.OffsetOutOfRange(o.Group, inputs, reparts, snap.recheck)...)
	out = append(out, detect.UnprocessedPartition(o.Group, inputs, snap.first, o.Now(), o.UnprocessedAfter)...)
	if prev != nil {
		now := snap.partitions()
		out = append(out, detect.Truncated(prev, now)...)
		out = append(out, detect.OffsetReset(o.Group, prev, now)...)
	}
	finding.SortPartitions(out)
	return out
}

// stuckPartitions returns the partitions with a stuck_lso finding.
func stuckPartitions(parts []finding.PartitionFinding) map[kread.TP]bool {
	m := map[kread.TP]bool{}
	for _, p := range parts {
		if p.Kind == finding.StuckLSO {
			m[kread.TP{Topic: p.Topic, Partition: p.Partition}] = true
		}
	}
	return m
}

// auditCounts are the per-input counters of an audit: what the collector
// counted, with the candidates pending at the second hop moved from
// audited to pending.
func auditCounts(col *collector, chk *checked) []finding.InputCounts {
	out := make([]finding.InputCounts, len(col.counts))
	for x := range col.counts {
		c := col.counts[x].counts()
		c.Pending += chk.pending[x]
		c.Audited -= chk.pending[x]
		out[x] = c
	}
	return out
}

// assemble builds the result from what the phases found, with the
// per-input counters counts.
func assemble(ctx context.Context, o Options, snap *pipelineSnapshot, col *collector, chk *checked, parts []finding.PartitionFinding, counts []finding.InputCounts) *finding.Result {
	s := finding.Summary{
		Inputs: map[string]*finding.InputCounts{},
		Stages: map[finding.Stage]*finding.StageCounts{
			finding.StageChangelog: {KeysChecked: chk.checkedChangelog, Findings: map[finding.Kind]int64{}},
			finding.StageOutput:    {KeysChecked: chk.checkedOutput, Findings: map[finding.Kind]int64{}, KeysPending: chk.bufferPending},
		},
		Partitions:           parts,
		Withheld:             chk.withheld,
		Reads:                col.stats.Issues(),
		Window:               finding.Window{From: o.From, To: o.To},
		DecodeErrorsBySchema: col.decode.ByClass,
		DecodeErrorSamples:   col.decode.Samples,
	}
	if chk.counted {
		s.Stages[finding.StageCount] = &finding.StageCounts{KeysChecked: chk.checkedCount, Findings: map[finding.Kind]int64{}}
	}
	pl := &finding.Pipeline{Output: o.Output}
	if o.Join != "left" {
		pl.Join = o.Join
	}
	if o.Cogroup {
		pl.Join = "cogroup" // one table fed by every input
	}
	g := snap.groupInfo
	s.Group = &g
	var outcome []detect.InputOutcome
	for x, in := range o.Inputs {
		pl.Inputs = append(pl.Inputs, finding.PipelineInput{Name: in.Name, Topic: in.Topic,
			RepartitionTopic: in.RepartitionTopic, ChangelogTopic: in.ChangelogTopic, Count: in.Count, Table: in.Table,
			Operator: in.Operator, BufferTopic: in.BufferTopic})
		c := counts[x]
		s.InputOrder = append(s.InputOrder, in.Name)
		s.Inputs[in.Name] = &c
		committed := false
		for _, p := range snap.inputs[x].Parts {
			if _, ok := snap.group[kread.TP{Topic: in.Topic, Partition: p}]; ok {
				committed = true
				break
			}
		}
		outcome = append(outcome, detect.InputOutcome{Name: in.Name, Counts: c, Committed: committed,
			Field: in.Field, TopError: col.decode.Top(x), Nearest: col.decode.Near[x]})
	}
	s.Sections = []finding.Section{&finding.Streams{Pipeline: pl, Timeline: col.timeline.result(s.InputOrder)}}
	if col.dlq != nil {
		s.Sections = append(s.Sections, col.dlq.section(o))
	}
	if w := col.windowSection(); w != nil {
		if w.Final {
			w.FinalOpen, w.FinalBuffered, w.FinalExpired = chk.finalOpen, chk.bufferPending, chk.finalExpired
		}
		s.Sections = append(s.Sections, w)
	}
	for _, r := range chk.rows {
		s.Stages[r.Stage].Findings[r.Kind]++
	}
	if len(stuckPartitions(parts)) > 0 || chk.withheld > 0 {
		s.Partial, s.PartialReason = true, finding.PartialStuck
	}
	s.Inconclusive = detect.Inconclusive(detect.RunOutcome{Group: o.Group, Window: s.Window, Inputs: outcome})
	for i := range s.Inconclusive {
		if s.Inconclusive[i].Reason == finding.EmptyWindow {
			s.Inconclusive[i].DataFrom, s.Inconclusive[i].DataTo = dataRange(ctx, o, snap)
		}
	}
	finding.SortRows(chk.rows, s.InputOrder)
	return &finding.Result{Summary: s, Rows: chk.rows}
}

// dataRange returns the time range the inputs' records span, from the
// first and last few records of every partition (timestamps need not grow
// with offsets, so it is the range of those records); zero times when it
// cannot tell.
func dataRange(ctx context.Context, o Options, snap *pipelineSnapshot) (from, to time.Time) {
	const edge = 16
	var lo, hi int64
	found := false
	note := func(ts int64) {
		if !found || ts < lo {
			lo = ts
		}
		if !found || ts > hi {
			hi = ts
		}
		found = true
	}
	for _, t := range snap.inputs {
		for _, p := range t.Parts {
			of := t.Offsets[p]
			if of.LogStart >= of.LSO {
				continue
			}
			for _, rg := range []kread.Range{
				{Topic: t.Name, Partition: p, From: of.LogStart, To: min(of.LSO, of.LogStart+edge)},
				{Topic: t.Name, Partition: p, From: max(of.LogStart, of.LSO-edge), To: of.LSO},
			} {
				_ = collect.Read(ctx, o.Kafka, collect.Spec{Ranges: []kread.Range{rg}}, func(recs []kread.Record) error {
					for i := range recs {
						note(recs[i].Timestamp)
					}
					return nil
				})
			}
		}
	}
	if !found {
		return time.Time{}, time.Time{}
	}
	return time.UnixMilli(lo).UTC(), time.UnixMilli(hi).UTC()
}
