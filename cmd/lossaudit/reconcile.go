package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/streams"
	"github.com/lossaudit/lossaudit/config"
)

// newReconcileCmd returns `lossaudit reconcile`: one step of a scheduled
// reconciliation.
func newReconcileCmd(g *globalFlags) *cobra.Command {
	var quiet bool
	var sf *shardFlags
	var job string
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "One incremental step of a scheduled reconciliation",
		Long: "Audits what is new since the last step on the same store.dir: the input records processed\n" +
			"since, the repartition tails, and the changelog and output records written since, keeping\n" +
			"per key what earlier steps learnt (in store.dir/reconcile). The first step on an empty\n" +
			"store is a full audit (or window.from's) and records the baseline. The reports list the\n" +
			"findings open after the step, with when each was first seen, and those it resolved.\n" +
			"On a comparison's configuration (compare.pairs) it compares what is new the same way: the\n" +
			"sink records written since and the source records that became due, per record identity.\n" +
			"Exit codes as for audit; run it from cron, a Kubernetes CronJob or a systemd timer, or use\n" +
			"`lossaudit watch` (docs/reconcile.md). With --shards N, one index of a step sharded over N\n" +
			"processes (a Kubernetes Indexed Job), each keeping its keys' state in store.dir/shard-<i>\n" +
			"(docs/scale.md#sharded-reconcile-steps).",
		Example: "  lossaudit reconcile -c audit.yaml\n  lossaudit reconcile -c audit.yaml --metrics-file /var/lib/node_exporter/lossaudit.prom\n" +
			"  lossaudit reconcile -c audit.yaml --shards 4 --shard-dir /shared/recon --store-dir /shared/state --shard-job \"$JOB_UID\"",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if sf.shards > 0 {
				cfg, err := g.load(cmd)
				if err != nil {
					return err
				}
				return runShardStep(cmd, cfg, sf, job, quiet)
			}
			cfg, err := g.loadStep(cmd)
			if err != nil {
				return err
			}
			fp := failpointsFromEnv(cmd.Context())
			prog := newProgress(cmd.ErrOrStderr(), quiet)
			out, err := reconcileStep(cmd.Context(), cfg, app.Options{Progress: fp.progress(prog), Warnings: prog.Log(), StateHook: fp.at,
				Started: processStart()},
				cmd.OutOrStdout(), cmd.ErrOrStderr(), fp, prog.Stop)
			if err != nil {
				return err
			}
			return out.conclude()
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress output on stderr")
	sf = addShardFlags(cmd)
	cmd.Flags().StringVar(&job, "shard-job", "", "with --shards: what identifies this invocation of the step's indexes (a Kubernetes Job's uid): a step an earlier job left unmerged is completed, then this job's own is run")
	return cmd
}

// checkRunConfig checks, before anything is read, the pipeline and that
// every configured output file can be written.
func checkRunConfig(cfg *config.Config) error {
	if err := cfg.ValidatePipeline(); err != nil {
		return err
	}
	if err := app.CheckTopology(cfg); err != nil {
		return err
	}
	if err := checkReportPaths(cfg); err != nil {
		return err
	}
	return checkOutputPath("report.metrics_file", cfg.Report.MetricsFile)
}

// loadStep loads the configuration of a reconcile or watch command and
// checks it (checkStepConfig).
func (g *globalFlags) loadStep(cmd *cobra.Command) (*config.Config, error) {
	cfg, err := g.load(cmd)
	if err != nil {
		return nil, err
	}
	if err := checkStepConfig(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// checkStepConfig checks a configuration for reconcile and watch: a
// comparison's (compare.pairs without a pipeline; a ledger is refused in
// app.Reconcile, naming compare.ledger) as compare checks it, a Kafka
// Streams pipeline's as checkRunConfig does.
func checkStepConfig(cfg *config.Config) error {
	if !app.IsCompare(cfg) {
		return checkRunConfig(cfg)
	}
	if cfg.Compare.Ledger != "" {
		return cfg.Locate(&config.Error{Key: "compare.ledger", Msg: ledgerNotReconciled})
	}
	if err := cfg.ValidateCompare(); err != nil {
		return err
	}
	if err := checkReportPaths(cfg); err != nil {
		return err
	}
	return checkOutputPath("report.metrics_file", cfg.Report.MetricsFile)
}

// ledgerNotReconciled is why reconcile and watch refuse compare.ledger.
const ledgerNotReconciled = "reconcile and watch compare pairs only; a producer ledger is checked by `lossaudit compare` (docs/reconcile.md)"

// stepOutcome is a reconcile step whose reports were written and whose
// state was committed.
type stepOutcome struct {
	*written
	res *finding.Result
}

// reconcileStep runs one reconcile step: the step, its reports, then the
// commit of its state (only once the reports are written, so that a step
// whose reports are missing is repeated), then the metrics file. stop is
// called when the step's reading is over (the progress display ends).
// Errors are the command's (exit codes as for audit).
func reconcileStep(ctx context.Context, cfg *config.Config, o app.Options, stdout, stderr io.Writer, fp *failpoints, stop func()) (*stepOutcome, error) {
	started := time.Now()
	step, err := app.Reconcile(ctx, cfg, o)
	if stop != nil {
		stop()
	}
	if err != nil {
		if app.IsCompare(cfg) {
			return nil, compareError(err)
		}
		return nil, auditError(err)
	}
	closed := false
	defer func() {
		if !closed {
			step.Close()
		}
	}()
	res := step.Result
	fp.at("stepped")
	reporting := time.Now()
	w := writeReports(stdout, stderr, cfg, res)
	if len(w.failed) > 0 {
		w.failed = append(w.failed, "the step was not committed: the next one repeats it")
		return &stepOutcome{written: w, res: w.res}, nil
	}
	// The reports are written: the step is committed even if a signal
	// came meanwhile, so that state and reports agree (a second signal
	// kills the process, and the next step completes the commit).
	fp.at("reported")
	committing := time.Now()
	if err := step.Commit(); err != nil {
		return nil, concluded(exitIncomplete, fmt.Errorf("the step's reports were written but its state could not be committed (the next step repeats it): %w", err))
	}
	closing := time.Now()
	closed = true
	step.Close()
	// They come after the report files, which cannot hold them: the
	// summary (printed last) has them.
	w.after = map[string]time.Duration{"reports": committing.Sub(reporting), "commit": closing.Sub(committing), "close": time.Since(closing)}
	w.writeMetrics(cfg, res, started)
	return &stepOutcome{written: w, res: w.res}, nil
}

// failpoints stop a reconcile step at a named point, for the test bed's
// interruption tests: LOSSAUDIT_TESTBED_CRASH_AT=point kills the process
// there with SIGKILL (as kill -9 does), LOSSAUDIT_TESTBED_INTERRUPT_AT=point
// sends it SIGINT (as Ctrl-C does) and waits for the command to see it.
// The points: reading (the first input records arrive), stepped (the step
// is judged, nothing written), reported (the reports are written, the
// state not committed), and the state store's staged, committed, applying
// and applied (audit/internal/store/state); in a sharded audit,
// shard-map-entry (a map's first entry), shard-map-written (its output
// complete, no marker yet), shard-reduce-read (a reduce's first changelog
// or output record), shard-reduce-written (likewise) and shard-merged
// (index 0 merged, its reports not written).
type failpoints struct {
	ctx              context.Context
	crash, interrupt string
	once             sync.Once
}

// at stops the process at point when the environment names it; only once
// (a second SIGINT would kill the process).
func (f *failpoints) at(point string) {
	switch point {
	case "":
	case f.crash:
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	case f.interrupt:
		f.once.Do(func() {
			_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
			select {
			case <-f.ctx.Done():
			case <-time.After(30 * time.Second):
			}
		})
	}
}

// progress wraps p so that the "reading" point is reached with the first
// input records a step reads.
func (f *failpoints) progress(p streams.Progress) streams.Progress {
	if f.crash != "reading" && f.interrupt != "reading" {
		return p
	}
	return pointProgress{p: p, f: f}
}

type pointProgress struct {
	p streams.Progress
	f *failpoints
}

// Phase starts a phase; an input's reports its first records to the point.
func (pp pointProgress) Phase(name string, total int64) streams.Phase {
	ph := pp.p.Phase(name, total)
	if !strings.HasPrefix(name, "input ") {
		return ph
	}
	return pointPhase{Phase: ph, f: pp.f}
}

type pointPhase struct {
	streams.Phase
	f *failpoints
}

// Add counts progress and reaches the "reading" point with the first records.
func (p pointPhase) Add(records, bytes int64) {
	p.Phase.Add(records, bytes)
	if records > 0 {
		p.f.at("reading")
	}
}
