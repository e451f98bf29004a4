package shard

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/streams"
)

// A sharded reconciliation (docs/scale.md#sharded-reconcile-steps) keeps
// one shard directory for all its steps: step k's objects are under
// step-<k>/, laid out as an audit's (its manifest, maps, reduces and
// markers), plus step-<k>/merged: the step's checkpoint, written by index 0
// after its reports, the step's commit point. Each index keeps the state
// of the keys of its task partitions in a state of its own; its reduce
// commits the step there, with its part of the result, before it marks
// the reduce, so a retried index never applies a step twice and still
// hands the merge its part.

func stepPrefix(k int64) string { return fmt.Sprintf("step-%d/", k) }

func mergedPath(k int64) string { return stepPrefix(k) + "merged" }

// mergedCheckpoint is a merged step's checkpoint.
type mergedCheckpoint struct{ Checkpoint []byte }

// StepResult is what a sharded step's index 0 hands back: the merged
// result, to be reported, then committed.
type StepResult struct {
	Result *finding.Result
	// Step is the step's number.
	Step int64
	// Earlier says another job (Options.Job) took the step's manifest and
	// left it unmerged: once it is committed (index 0: its reports
	// written), run RunStep again with after = Step for this job's step.
	Earlier bool
	cp      []byte
	so      Options
}

// Commit writes the step's checkpoint (once its reports are written): the
// next step starts from it. A step committed already is left as it is.
func (r *StepResult) Commit(ctx context.Context) error {
	err := createAtomic(ctx, r.so.store, mergedPath(r.Step), &mergedCheckpoint{Checkpoint: r.cp})
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	return err
}

// RunStep runs shard so.Index's part of the next step of a sharded
// reconciliation with the audit's options o (o.Store: the shard's scratch
// index) and its own state (step.State). The step is the one after the
// state's last, or, when that one is not merged yet, that one (this index
// committed it and was stopped before the merge). Index 0 returns the
// merged result, to commit once its reports are written; the others one
// without Result. after, when not 0, is a step this process completed
// already: the step run is a later one.
func RunStep(ctx context.Context, so Options, o streams.Options, step streams.StepOptions, after int64) (*StepResult, *Stats, error) {
	so, err := so.open(ctx, o)
	if err != nil {
		return nil, nil, err
	}
	sto := so.store
	s, err := streams.ShardStateStep(step)
	if err != nil {
		return nil, nil, err
	}
	k := s + 1
	if s > 0 {
		merged, err := sto.Exists(ctx, mergedPath(s))
		if err != nil {
			return nil, nil, err
		}
		if !merged {
			k = s // committed here, not merged yet: complete it
		} else if so.Job != "" && after == 0 {
			// This job's step, merged already: a retried index of the
			// job (killed after its part) does it again, without a step
			// of its own that no other index would join.
			m := &manifest{}
			if err := readGob(ctx, sto, layout{prefix: stepPrefix(s)}.manifest(), m); err != nil {
				return nil, nil, err
			}
			if m.Job == so.Job {
				k = s
			}
		}
	}
	k = max(k, after+1)
	if k == s {
		// This state committed step k: its manifest must be there (a
		// new snapshot would be judged with parts of the old one).
		if ok, err := sto.Exists(ctx, layout{prefix: stepPrefix(k)}.manifest()); err != nil {
			return nil, nil, err
		} else if !ok {
			return nil, nil, &MismatchError{Msg: fmt.Sprintf("this index's state (%s) committed step %d, but %s holds no manifest of it: it is not this reconciliation's shard directory (emptied or replaced?); start a new baseline with a new store.dir and shard directory",
				step.State.Dir(), k, so.Dir)}
		}
	}
	if k == s+1 {
		// A step after this state's last must not be merged yet: else the
		// state is not this reconciliation's (removed, or another's).
		if merged, err := sto.Exists(ctx, mergedPath(k)); err != nil {
			return nil, nil, err
		} else if merged {
			return nil, nil, &MismatchError{Msg: fmt.Sprintf("%s merged step %d, but this index's state (%s) committed step %d: it is not this reconciliation's state (removed or replaced?); start a new baseline with a new store.dir and shard directory",
				so.Dir, k, step.State.Dir(), s)}
		}
	}
	var prev []byte
	if k > 1 && so.Index == 0 {
		mc := &mergedCheckpoint{}
		if err := readGob(ctx, sto, mergedPath(k-1), mc); err != nil {
			return nil, nil, err
		}
		prev = mc.Checkpoint
	}
	attempt, err := newAttempt()
	if err != nil {
		return nil, nil, err
	}
	st := &Stats{}
	base := layout{prefix: stepPrefix(k)}
	m, err := loadOrTake(ctx, so, base, func(emit func(int, []byte, index.Entry) error) (*streams.ShardSnapshot, error) {
		return streams.TakeShardStepSnapshot(ctx, o, k, prev, so.Shards, emit)
	})
	if err != nil {
		return nil, nil, err
	}
	if m.Snapshot.Step != k {
		return nil, nil, &MismatchError{Msg: fmt.Sprintf("%s is of step %d, not %d", sto.Describe(base.manifest()), m.Snapshot.Step, k)}
	}
	st.RunID, st.SnapshotRecords = m.RunID, m.Snapshot.Records
	l := layout{prefix: base.prefix, run: m.RunID}
	if err := runMap(ctx, so, o, m, l, attempt, st); err != nil {
		return nil, nil, err
	}
	if err := runStepReduce(ctx, so, o, step, m, l, attempt, st); err != nil {
		return nil, nil, err
	}
	earlier := so.Job != "" && m.Job != so.Job
	if so.Index != 0 {
		so.logf("shard %d of %d: step %d done (run %s); index 0 writes the reports", so.Index, so.Shards, k, m.RunID)
		return &StepResult{Step: k, Earlier: earlier, so: so}, st, nil
	}
	mres, rres, maps, reduces, err := readParts(ctx, so, l)
	if err != nil {
		return nil, nil, err
	}
	if !so.KeepAttempts {
		// As after an audit's merge: what no marker names goes, the step's
		// marked parts stay (index 0 run again merges them again).
		if st.Removed, err = cleanup(ctx, so.store, l, maps, reduces); err != nil {
			return nil, nil, err
		}
	}
	res, cp, err := streams.ShardStepMerge(ctx, o, m.Snapshot, mres, rres, m.Created, step.Describe)
	if err != nil {
		return nil, nil, err
	}
	return &StepResult{Result: res, Step: k, Earlier: earlier, cp: cp, so: so}, st, nil
}

// runStepReduce is a step's reduce: judged against the shard's state and
// committed there (with the part it hands the merge) before it is marked;
// a state that committed the step already hands the part it kept.
func runStepReduce(ctx context.Context, so Options, o streams.Options, step streams.StepOptions, m *manifest, l layout, attempt string, st *Stats) error {
	done := l.reduceDone(so.Index)
	if ok, err := so.store.Exists(ctx, done); err != nil || ok {
		st.ReduceSkipped = ok
		if ok {
			so.logf("shard %d of %d: reduce of step %d already complete", so.Index, so.Shards, m.Snapshot.Step)
		}
		return err
	}
	maps, err := mapMarkers(ctx, so, l)
	if err != nil {
		return err
	}
	res, sp, err := streams.ShardStepReduce(ctx, o, m.Snapshot, so.Shards, so.Index, step, m.Created, loadBuckets(ctx, so, l, maps), func() error { return so.Hook("reduce-read") })
	if err != nil {
		return err
	}
	if sp != nil {
		if err := so.Hook("reduce-judged"); err != nil {
			sp.Abort()
			return err
		}
		if err := sp.Commit(); err != nil {
			return err
		}
	} else {
		so.logf("shard %d of %d: the state committed step %d already: its part is handed on", so.Index, so.Shards, m.Snapshot.Step)
	}
	if err := so.Hook("reduce-committed"); err != nil {
		return err
	}
	dir := l.reduceDir(so.Index, attempt)
	if err := writeAtomic(ctx, so.store, joinName(dir, "result"), res); err != nil {
		return err
	}
	if err := createAtomic(ctx, so.store, done, &marker{Attempt: attempt, Records: res.Records, Stored: res.Entries}); errors.Is(err, os.ErrExist) {
		if err := so.store.RemoveAll(ctx, dir); err != nil {
			return fmt.Errorf("shard: removing the dropped attempt: %w", err)
		}
		st.ReduceSkipped = true
		return nil
	} else if err != nil {
		return err
	}
	st.ReduceRecords, st.ReduceEntries = res.Records, res.Entries
	so.logf("shard %d of %d: reduce of step %d complete: %d changelog and output records read, %d keys judged, %d rows", so.Index, so.Shards, m.Snapshot.Step, res.Records, res.Keys, len(res.Rows))
	return nil
}
