package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/incremental"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/internal/store/state"
	"github.com/lossaudit/lossaudit/audit/shard"
	"github.com/lossaudit/lossaudit/audit/streams"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// ShardOptions say which shard of a sharded audit this process is
// (docs/scale.md).
type ShardOptions struct {
	// Dir is the directory the shards share (or s3://bucket/prefix: an
	// S3 bucket, S3 its settings); Shards their number, Index this one's.
	Dir           string
	S3            shard.S3Config
	Shards, Index int
	// Wait bounds each wait for the other shards; Poll is the interval
	// between looks (0: the defaults).
	Wait, Poll time.Duration
	// Log receives the shard's progress lines; nil for none.
	Log io.Writer
	// Hook stops the shard at a named point (tests); nil for none.
	Hook func(point string) error
	// KeepAttempts keeps the files of killed and dropped attempts after
	// the merge (index 0 removes them by default).
	KeepAttempts bool
	// Job identifies the invocation of a sharded reconcile step (a
	// Kubernetes Job's uid; shard.Options.Job).
	Job string
}

// Shard runs one shard of a sharded audit of the configured pipeline, with
// cfg.Store.Dir as the shard's own scratch index. Index 0 returns the
// merged result (what Run returns for the same snapshot); the others a nil
// result. The stats say what the shard read and shuffled. Configuration
// problems, an audit that cannot be sharded and a shard directory of
// another run are *config.Error values.
func Shard(ctx context.Context, cfg *config.Config, o Options, so ShardOptions) (*finding.Result, *topology.Model, *shard.Stats, error) {
	p, err := prepare(ctx, cfg, o)
	if err != nil {
		return nil, nil, nil, err
	}
	defer p.close()
	if p.model.Stream != nil {
		return nil, nil, nil, &config.Error{Flag: "shards", Msg: "a per-record stream stage (docs/topology.md#per-record-stream-stages) is not sharded yet: run lossaudit audit without --shards"}
	}
	ao := p.opts
	if so.Index == 0 {
		hist, err := history.Open(filepath.Join(cfg.Store.Dir, "history"))
		if err != nil {
			return nil, nil, nil, err
		}
		defer hist.Close()
		ao.History = hist
	}
	res, st, err := shard.Run(ctx, shard.Options{Dir: so.Dir, S3: so.S3, Shards: so.Shards, Index: so.Index, Config: configDigest(cfg, ao),
		Wait: so.Wait, Poll: so.Poll, Log: so.Log, Hook: so.Hook, KeepAttempts: so.KeepAttempts}, ao)
	if err != nil {
		return nil, nil, nil, shardError(p, err)
	}
	if res != nil {
		p.schemaSources(res)
	}
	return res, p.model, st, nil
}

// configDigest identifies what a sharded audit's shards must agree on: the
// cluster, the pipeline as resolved, how keys and timestamps are read, and
// the audit's settings (not the reports, nor the shard's own store).
func configDigest(cfg *config.Config, o streams.Options) string {
	var b strings.Builder
	brokers := slices.Clone(cfg.Kafka.Brokers)
	slices.Sort(brokers)
	fmt.Fprintf(&b, "brokers=%s\ngroup=%s\noutput=%s\njoin=%s\n", strings.Join(brokers, ","), o.Group, o.Output, o.Join)
	for _, in := range o.Inputs {
		fmt.Fprintf(&b, "input=%s topic=%s repartition=%s changelog=%s count=%t field=%s\n", in.Name, in.Topic, in.RepartitionTopic, in.ChangelogTopic, in.Count, in.Field)
	}
	fmt.Fprintf(&b, "keys=%s\nwindow=%s..%s\nsettle=%s unprocessed_after=%s dlq=%s\n", describeInputs(cfg),
		o.From.UTC().Format(time.RFC3339Nano), o.To.UTC().Format(time.RFC3339Nano), o.SettleTimeout, o.UnprocessedAfter, o.DeadLetterTopic)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// ShardStep is one index's part of a sharded reconcile step; index 0's
// holds the merged result, whose reports are to be written: Commit makes
// it the step the next one continues.
type ShardStep struct {
	// Result is the merged step (index 0 only).
	Result *finding.Result
	Model  *topology.Model
	// Number is the step's number. Earlier says the step was one another
	// job left unmerged: once committed, run ShardReconcile again with
	// after = Number for this job's own step.
	Number  int64
	Earlier bool
	step    *shard.StepResult
}

// Commit commits the step (its checkpoint in the shard directory), once
// index 0 wrote its reports; for the other indexes it does nothing.
func (s *ShardStep) Commit(ctx context.Context) error {
	if s.Result == nil {
		return nil
	}
	return s.step.Commit(ctx)
}

// ShardReconcile runs one index's part of a step of a sharded
// reconciliation of the configured pipeline (docs/scale.md): cfg.Store.Dir
// is the index's own store (its scratch index and, in reconcile/, the
// state of the keys of its task partitions). after is the step this
// process completed last (0: none). What reconcile refuses is refused the
// same way; errors are as for Shard.
func ShardReconcile(ctx context.Context, cfg *config.Config, o Options, so ShardOptions, after int64) (*ShardStep, *shard.Stats, error) {
	if IsCompare(cfg) {
		return nil, nil, &config.Error{Flag: "shards", Msg: "a comparison's reconciliation is not sharded yet: run lossaudit reconcile without --shards"}
	}
	p, err := prepare(ctx, cfg, o)
	if err != nil {
		return nil, nil, err
	}
	defer p.close()
	if p.stream != nil {
		return nil, nil, &config.Error{Key: "pipeline.topology_file", Msg: "describes a per-record stream stage, which reconcile and watch do not check yet: run lossaudit audit"}
	}
	if err := stepRefusesTables(p.model, true); err != nil {
		return nil, nil, err
	}
	if err := stepRefusesWindows(p.model); err != nil {
		return nil, nil, err
	}
	st, err := state.Open(filepath.Join(cfg.Store.Dir, StateDir), state.Options{Hook: o.StateHook})
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	r, stats, err := shard.RunStep(ctx, shard.Options{Dir: so.Dir, S3: so.S3, Shards: so.Shards, Index: so.Index, Config: configDigest(cfg, p.opts),
		Wait: so.Wait, Poll: so.Poll, Log: so.Log, Hook: so.Hook, KeepAttempts: so.KeepAttempts, Job: so.Job},
		p.opts, streams.StepOptions{State: st, Describe: describeInputs(cfg)}, after)
	if err != nil {
		var me *incremental.StateMismatchError
		if errors.As(err, &me) {
			return nil, nil, &config.Error{Key: "store.dir", Msg: me.Error()}
		}
		return nil, nil, shardError(p, err)
	}
	if r.Result != nil {
		p.schemaSources(r.Result)
	}
	return &ShardStep{Result: r.Result, Model: p.model, Number: r.Step, Earlier: r.Earlier, step: r}, stats, nil
}

// shardError turns the errors of a shard into the command's.
func shardError(p *prepared, err error) error {
	if streams.IsUnsupportedSharding(err) {
		return &config.Error{Flag: "shards", Msg: err.Error()}
	}
	if me, ok := err.(*shard.MismatchError); ok {
		return &config.Error{Flag: "shard-dir", Msg: me.Error()}
	}
	var se *shard.StorageError
	if errors.As(err, &se) {
		return &config.Error{Flag: "shard-dir", Msg: se.Error()}
	}
	return runError(p.model, err)
}
