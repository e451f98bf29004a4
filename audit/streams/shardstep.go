package streams

import (
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/incremental"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// This file is the Kafka Streams mode's part in a sharded reconcile step
// (docs/scale.md#sharded-reconcile-steps): the snapshot of a step taken once
// with the step's read plan (from the previous step's checkpoint), the
// maps as for an audit (ShardMap reads only what the plan says), the
// reduces each judging its keys against its own state (ShardStepReduce),
// and the merge into the step's result and the next checkpoint
// (ShardStepMerge). The judge is the single step's: stepVisitor, check,
// nextCheckpoint and assembleStep.

// shardCheckpoint is a reduce shard's checkpoint in its own state: the
// step it committed and that step's part of the result, kept so that an
// index whose state committed the step and was killed before marking it
// hands the merge the same part again (its state cannot judge the step a
// second time).
type shardCheckpoint struct {
	incremental.Header
	Result []byte `json:"result"`
}

const shardCheckpointVersion = 1

// TakeShardStepSnapshot takes the snapshot of step number step of a sharded
// reconciliation of n shards, exactly as a single step takes it (the
// repartition tails read from the previous checkpoint prev, the JSON
// ShardStepMerge returned for step-1; nil for the baseline), and hands
// every repartition entry to emit with the reduce shard that owns its key.
func TakeShardStepSnapshot(ctx context.Context, o Options, step int64, prev []byte, n int, emit func(shard int, key []byte, e index.Entry) error) (*ShardSnapshot, error) {
	cp, err := decodeCheckpoint(prev, step)
	if err != nil {
		return nil, err
	}
	return takeShardSnapshot(ctx, o, n, emit, func(p *modePass) { p.step = &stepRun{p: p, cp: cp} }, func(d *ShardSnapshot) {
		d.Step, d.Prev = step, prev
	})
}

// decodeCheckpoint reads a step's previous checkpoint (nil: the baseline,
// step 1).
func decodeCheckpoint(prev []byte, step int64) (*checkpoint, error) {
	if prev == nil {
		if step != 1 {
			return nil, fmt.Errorf("reconcile: step %d has no previous checkpoint", step)
		}
		return nil, nil
	}
	cp := &checkpoint{}
	if err := json.Unmarshal(prev, cp); err != nil {
		return nil, fmt.Errorf("reconcile: the previous step's checkpoint is damaged: %w", err)
	}
	if cp.Version != checkpointVersion || cp.Step != step-1 {
		return nil, fmt.Errorf("reconcile: the previous checkpoint is step %d (version %d), not step %d's", cp.Step, cp.Version, step-1)
	}
	return cp, nil
}

// stepPlan returns a step snapshot's read plan, the partitions read again
// from their start, whether counts are void, and the previous checkpoint.
func (d *ShardSnapshot) stepPlan(o Options, snap *pipelineSnapshot) (*readPlan, map[kread.TP]bool, bool, *checkpoint, error) {
	cp, err := decodeCheckpoint(d.Prev, d.Step)
	if err != nil {
		return nil, nil, false, nil, err
	}
	plan, rebuild := planStep(o, snap, cp)
	noRecount := cp != nil && (cp.NoRecount || recountVoided(o, snap, cp, rebuild))
	return plan, rebuild, noRecount, cp, nil
}

// topicRecords are the records c read of every topic of the pipeline.
func topicRecords(o Options, snap *pipelineSnapshot, c *collector) map[string]int64 {
	out := map[string]int64{}
	for x, in := range o.Inputs {
		for _, t := range []string{in.Topic, in.RepartitionTopic, snap.changelogs[x].Name} {
			if n := c.stats.TopicRecords(t); n > 0 {
				out[t] = n
			}
		}
	}
	if n := c.stats.TopicRecords(o.Output); n > 0 {
		out[o.Output] = n
	}
	return out
}

// ShardStepReduce judges the keys of reduce shard shard of a step snapshot
// d against the shard's own state (so.State): the marked keys and those
// of partitions read again are touched, load hands it every entry routed
// to it, its task partitions of the changelogs and the output are read
// from where the previous step stopped, and the single step's visitor
// judges each key. started is the step's start (the manifest's). The
// state is staged, with the result in its checkpoint: commit it, then mark
// the reduce. A state that committed the step already returns the part it
// kept and a nil step.
func ShardStepReduce(ctx context.Context, o Options, d *ShardSnapshot, n, shard int, so StepOptions, started time.Time, load func(add Emit) error, read func() error) (*ShardReduceResult, *incremental.Stepped, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	if so.State == nil {
		return nil, nil, fmt.Errorf("reconcile: no state store")
	}
	desc := describePipeline(o, so.Describe)
	var last shardCheckpoint
	st, err := incremental.Begin(so.State, shardCheckpointVersion, &last, desc)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case !st.Baseline && last.Step == d.Step:
		_, _ = st.Done(nil, nil, errCommitted)
		res := &ShardReduceResult{}
		if err := gob.NewDecoder(bytes.NewReader(last.Result)).Decode(res); err != nil {
			return nil, nil, fmt.Errorf("reconcile: the result of step %d kept in %s: %w", d.Step, so.State.Dir(), err)
		}
		return res, nil, nil
	case st.Baseline && d.Step != 1, !st.Baseline && last.Step != d.Step-1:
		have := int64(0)
		if !st.Baseline {
			have = last.Step
		}
		_, _ = st.Done(nil, nil, errCommitted)
		return nil, nil, &UnsupportedShardingError{Reason: fmt.Sprintf("the state in %s committed step %d, the shard directory runs step %d: it is not this reconciliation's state", so.State.Dir(), have, d.Step)}
	}
	res, err := shardStepJudge(ctx, o, d, n, shard, st, started, load, read)
	var cp *shardCheckpoint
	if err == nil {
		var b bytes.Buffer
		if err = gob.NewEncoder(&b).Encode(res); err == nil {
			cp = &shardCheckpoint{Header: st.Next(shardCheckpointVersion, desc, started), Result: b.Bytes()}
		}
	}
	sp, err := st.Done(nil, cp, err)
	if err != nil {
		return nil, nil, err
	}
	return res, sp, nil
}

var errCommitted = fmt.Errorf("reconcile: the step is committed already")

func shardStepJudge(ctx context.Context, o Options, d *ShardSnapshot, n, shard int, st *incremental.Step, started time.Time, load func(add Emit) error, read func() error) (*ShardReduceResult, error) {
	if err := o.Store.Reset(); err != nil {
		return nil, err
	}
	w := o.Store.NewWriter()
	c := shardCollector(o, d, newEntryWriter(w), &shardView{n: n, index: shard, taskParts: d.TaskParts, reduce: true, read: read})
	plan, rebuild, noRecount, cp, err := d.stepPlan(o, c.snap)
	if err != nil {
		w.Cancel()
		return nil, err
	}
	c.plan = plan
	keys := incremental.NewKeys[known](st, knownCodec{o.Inputs})
	coalesce := c.tails.complete()
	err = func() error {
		if err := touchKeys(o, keys, newEntryWriter(w), rebuild); err != nil {
			return err
		}
		if err := load(func(key []byte, e index.Entry) error {
			if len(e.Fields) < 1 || int(e.Fields[0]) >= len(o.Inputs) {
				return fmt.Errorf("reconcile: a routed entry %#x of key %x has no input of this pipeline", e.Tag, key)
			}
			if e.Tag != tagInput && e.Tag != tagRepartition {
				return fmt.Errorf("reconcile: a routed entry %#x of key %x is neither an input's nor a repartition topic's", e.Tag, key)
			}
			// Entries are added as a single step adds them (readInput):
			// the newest per key, except the candidates whose copy waits
			// in a repartition tail and a count's, kept one by one.
			if e.Tag == tagInput && coalesce && !o.Inputs[e.Fields[0]].Count && len(e.Fields) == 21 && len(e.Value) == 8 &&
				!c.tails.has(newTailID(e.Fields[0], key, uninv(be64(e.Fields[1:9])), be64(e.Value))) {
				return w.AddFirst(key, e.Tag, 1, e.Fields, e.Value)
			}
			return w.Add(key, e.Tag, e.Fields, e.Value)
		}); err != nil {
			return err
		}
		return c.readTaskStages(ctx)
	}()
	if err != nil {
		w.Cancel()
		return nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	var prev map[kread.TP]history.Entry
	if cp != nil {
		prev = cp.history()
	}
	parts := partitionFindings(o, c.snap, c, prev)
	v := &stepVisitor{o: o, snap: c.snap, keys: keys, now: started.UnixMilli(), rebuild: rebuild, noRecount: noRecount}
	chk, err := check(o, c.snap, stuckPartitions(parts), c.timeline, v, c.finalPlace())
	if err != nil {
		return nil, err
	}
	res := &ShardReduceResult{CheckedChangelog: chk.checkedChangelog, CheckedOutput: chk.checkedOutput, Withheld: chk.withheld,
		CheckedCnt: chk.checkedCount, Counted: chk.counted, Pending: chk.pending, Keys: chk.keys,
		TimelineLevel: c.timeline.level, Timeline: c.timeline.inputs, Entries: w.Entries(), Records: c.stats.Records(), Issues: c.stats.Issues(),
		TopicRecords: topicRecords(o, c.snap, c)}
	if res.Rows, err = shardRows(chk.rows); err != nil {
		return nil, err
	}
	if res.Resolved, err = shardRows(v.resolved); err != nil {
		return nil, err
	}
	return res, nil
}

// ShardStepMerge assembles the result of a sharded step from its snapshot
// and every map's and reduce's part, as ShardMerge does for an audit, and
// returns it with the step's checkpoint (JSON): the next step's prev.
// started is the step's start (the manifest's).
func ShardStepMerge(ctx context.Context, o Options, d *ShardSnapshot, maps []*ShardMapResult, reduces []*ShardReduceResult, started time.Time, describe string) (*finding.Result, []byte, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, nil, err
	}
	c, chk, records, entries, issues, err := mergeParts(o, d, maps, reduces)
	if err != nil {
		return nil, nil, err
	}
	plan, rebuild, noRecount, cp, err := d.stepPlan(o, c.snap)
	if err != nil {
		return nil, nil, err
	}
	var resolved []finding.Row
	read := map[string]int64{}
	for _, m := range maps {
		for t, n := range m.TopicRecords {
			read[t] += n
		}
	}
	for t, n := range d.TopicRecords {
		read[t] += n
	}
	for _, r := range reduces {
		resolved = append(resolved, restoreRows(r.Resolved)...)
		for t, n := range r.TopicRecords {
			read[t] += n
		}
	}
	var prev map[kread.TP]history.Entry
	h := incremental.Header{Version: checkpointVersion, Step: 1, Pipeline: describePipeline(o, describe), At: started, Baseline: started}
	if cp != nil {
		prev = cp.history()
		h.Step, h.Baseline = cp.Step+1, cp.Baseline
		if cp.Pipeline != h.Pipeline {
			return nil, nil, &incremental.StateMismatchError{Dir: "the shard directory", Was: cp.Pipeline, Now: h.Pipeline}
		}
	}
	parts := partitionFindings(o, c.snap, c, prev)
	res, next := assembleStep(ctx, o, c.snap, c, chk, parts, plan, cp, h, noRecount, rebuild, resolved, func(t string) int64 { return read[t] })
	res.Summary.Reads = sortIssues(issues)
	res.Summary.Index = finding.IndexStats{RecordsRead: records, Entries: entries}
	res.Summary.Started, res.Summary.Finished = started, o.Now()
	b, err := json.Marshal(next)
	if err != nil {
		return nil, nil, fmt.Errorf("reconcile: encoding the checkpoint: %w", err)
	}
	return res, b, nil
}

// ShardStateStep returns the step a reduce shard's state committed last (0
// for an empty state).
func ShardStateStep(so StepOptions) (int64, error) {
	b, err := so.State.Checkpoint()
	if err != nil || b == nil {
		return 0, err
	}
	var h incremental.Header
	if err := json.Unmarshal(b, &h); err != nil {
		return 0, fmt.Errorf("reconcile: the checkpoint in %s is damaged: %w", so.State.Dir(), err)
	}
	return h.Step, nil
}
