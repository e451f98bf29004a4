package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/shard"
	"github.com/lossaudit/lossaudit/config"
)

// shardFlags are `lossaudit audit`'s flags of a sharded audit
// (docs/scale.md).
type shardFlags struct {
	shards int
	index  string
	dir    string
	wait   time.Duration
	poll   time.Duration
	keep   bool
	s3     shard.S3Config
}

// addShardFlags declares the sharding flags on the audit command.
func addShardFlags(cmd *cobra.Command) *shardFlags {
	f := &shardFlags{}
	cmd.Flags().IntVar(&f.shards, "shards", 0, "run as one of this many shards of a sharded audit (docs/scale.md); 0: one process")
	cmd.Flags().StringVar(&f.index, "shard-index", "", "this shard's index, 0 to shards-1 (default: $JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it)")
	cmd.Flags().StringVar(&f.dir, "shard-dir", "", "the directory every shard shares (a ReadWriteMany volume), or s3://bucket/prefix for an S3 bucket; one per run")
	cmd.Flags().StringVar(&f.s3.Endpoint, "shard-s3-endpoint", "", "the S3 endpoint URL of an s3:// shard directory (default: $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, then AWS)")
	cmd.Flags().BoolVar(&f.s3.PathStyle, "shard-s3-path-style", false, "address the bucket in the URL path (MinIO and the like) rather than the host name")
	cmd.Flags().DurationVar(&f.wait, "shard-wait", 24*time.Hour, "how long a shard waits for the others at each step")
	cmd.Flags().DurationVar(&f.poll, "shard-poll", time.Second, "how often a waiting shard looks at the shard directory")
	cmd.Flags().BoolVar(&f.keep, "shard-keep-attempts", false, "keep the files of killed and dropped attempts after the merge (index 0 removes them by default)")
	return f
}

// options turns the flags into the shard's options; a *config.Error names
// the flag that is wrong.
func (f *shardFlags) options() (app.ShardOptions, error) {
	idx, from := f.index, "shard-index"
	if idx == "" {
		idx, from = os.Getenv("JOB_COMPLETION_INDEX"), "JOB_COMPLETION_INDEX"
	}
	bad := func(flag, msg string) (app.ShardOptions, error) {
		return app.ShardOptions{}, &config.Error{Flag: flag, Msg: msg}
	}
	switch {
	case f.shards < 0:
		return bad("shards", fmt.Sprintf("%d shards: give at least 1", f.shards))
	case idx == "":
		return bad("shard-index", "no shard index: give --shard-index or set JOB_COMPLETION_INDEX")
	case f.dir == "":
		return bad("shard-dir", "a sharded audit needs the directory its shards share")
	case f.s3.Endpoint != "" && !strings.HasPrefix(f.dir, "s3://"):
		return bad("shard-s3-endpoint", "an S3 endpoint is for an s3://bucket/prefix shard directory")
	case f.wait <= 0:
		return bad("shard-wait", "give a positive duration")
	case f.poll <= 0:
		return bad("shard-poll", "give a positive duration")
	}
	i, err := strconv.Atoi(idx)
	if err != nil || i < 0 || i >= f.shards {
		return bad("shard-index", fmt.Sprintf("%s %q is not a shard index of 0 to %d", from, idx, f.shards-1))
	}
	return app.ShardOptions{Dir: f.dir, Shards: f.shards, Index: i, Wait: f.wait, Poll: f.poll, KeepAttempts: f.keep, S3: f.s3}, nil
}

// runShard runs one shard of a sharded audit: index 0 writes the reports
// and exits with the verdict, the others exit 0 once their part is
// complete.
func runShard(cmd *cobra.Command, cfg *config.Config, f *shardFlags, quiet bool) error {
	so, err := f.options()
	if err != nil {
		return err
	}
	if err := checkRunConfig(cfg); err != nil {
		return err
	}
	started := time.Now()
	prog := newProgress(cmd.ErrOrStderr(), quiet)
	so.Log = prog.Log()
	// The test bed's binary stops here at shard-map-entry, shard-map-written,
	// shard-reduce-read, shard-reduce-written and (below) shard-merged
	// (failpoints); a release binary never does.
	fp := failpointsFromEnv(cmd.Context())
	so.Hook = func(point string) error {
		fp.at("shard-" + point)
		return nil
	}
	res, _, st, err := app.Shard(cmd.Context(), cfg, app.Options{Progress: prog, Warnings: prog.Log()}, so)
	prog.Stop()
	if err != nil {
		var we *shard.WaitError
		if errors.As(err, &we) {
			return withCode(exitIncomplete, fmt.Errorf("the audit could not complete: %w", we))
		}
		return auditError(err)
	}
	snap := ""
	if so.Index == 0 {
		snap = fmt.Sprintf(" (and %d repartition records for the snapshot)", st.SnapshotRecords)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "lossaudit: shard %d of %d (run %s): read %d input, %d changelog and output records%s; shuffled %d entries, %d bytes; judged %d entries\n",
		so.Index, so.Shards, st.RunID, st.MapRecords, st.ReduceRecords, snap, st.ShuffledEntries, st.ShuffledBytes, st.ReduceEntries)
	if res == nil {
		return nil
	}
	// Index 0 has merged (and removed the unreferenced attempts) but not
	// written its reports: a kill here must leave what a rerun merges.
	fp.at("shard-merged")
	w := writeReports(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, res)
	if len(w.failed) == 0 {
		w.writeMetrics(cfg, res, started)
	}
	return w.conclude()
}

// runShardStep runs one index's part of a sharded reconcile step
// (docs/scale.md#sharded-reconcile-steps), with its own store
// <store.dir>/shard-<index>: index 0 writes the step's reports, commits the
// step and exits with the verdict, the others exit 0 once their part is
// complete. A step an earlier job left unmerged is completed first (index
// 0: reported and committed), then this job's own.
func runShardStep(cmd *cobra.Command, cfg *config.Config, f *shardFlags, job string, quiet bool) error {
	so, err := f.options()
	if err != nil {
		return err
	}
	so.Job = job
	if err := checkStepConfig(cfg); err != nil {
		return err
	}
	c := *cfg
	c.Store.Dir = filepath.Join(cfg.Store.Dir, fmt.Sprintf("shard-%d", so.Index))
	fp := failpointsFromEnv(cmd.Context())
	so.Hook = func(point string) error {
		fp.at("shard-" + point)
		return nil
	}
	var after int64
	for {
		started := time.Now()
		prog := newProgress(cmd.ErrOrStderr(), quiet)
		so.Log = prog.Log()
		step, st, err := app.ShardReconcile(cmd.Context(), &c, app.Options{Progress: prog, Warnings: prog.Log(), StateHook: fp.at}, so, after)
		prog.Stop()
		if err != nil {
			var we *shard.WaitError
			if errors.As(err, &we) {
				return withCode(exitIncomplete, fmt.Errorf("the step could not complete: %w", we))
			}
			return auditError(err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "lossaudit: shard %d of %d, step %d (run %s): read %d input, %d changelog and output records; shuffled %d entries, %d bytes; judged %d entries\n",
			so.Index, so.Shards, step.Number, st.RunID, st.MapRecords, st.ReduceRecords, st.ShuffledEntries, st.ShuffledBytes, st.ReduceEntries)
		if step.Result == nil {
			if !step.Earlier {
				return nil
			}
			after = step.Number
			continue
		}
		// Index 0 has merged, its reports are not written: a kill here
		// leaves the step uncommitted, and a rerun merges the same parts.
		fp.at("shard-merged")
		w := writeReports(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, step.Result)
		if len(w.failed) > 0 {
			w.failed = append(w.failed, "the step was not committed: index 0 run again merges it again")
			return w.conclude()
		}
		fp.at("shard-reported")
		if err := step.Commit(cmd.Context()); err != nil {
			return concluded(exitIncomplete, fmt.Errorf("the step's reports were written but it could not be committed (index 0 run again commits it): %w", err))
		}
		w.writeMetrics(cfg, step.Result, started)
		if !step.Earlier {
			return w.conclude()
		}
		// The earlier step's summary is printed; its verdict is not the
		// exit code: this job's step, next, judges its findings again.
		_ = w.conclude()
		after = step.Number
	}
}
