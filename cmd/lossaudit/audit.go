package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/metrics"
	"github.com/lossaudit/lossaudit/audit/progress"
	"github.com/lossaudit/lossaudit/audit/report"
	"github.com/lossaudit/lossaudit/audit/streams"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// newAuditCmd returns `lossaudit audit`: one audit of the configured
// pipeline, a summary on stdout, the reports named in config or flags.
func newAuditCmd(g *globalFlags) *cobra.Command {
	var quiet bool
	var sf *shardFlags
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Audit the configured pipeline for lost records",
		Long: "Reads the pipeline's inputs, repartition topics, changelogs and output with read_committed\n" +
			"semantics, indexes them on disk and reports, per input and selected key, the newest processed\n" +
			"update that did not reach a stage. Exit 0: nothing missing; 1: findings; 2: configuration\n" +
			"error; 3: the audit could not complete.",
		Example: "  lossaudit audit -c audit.yaml\n  lossaudit audit -c audit.yaml --from 2026-11-29T00:00:00Z --csv loss.csv --html loss.html",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load(cmd)
			if err != nil {
				return err
			}
			if sf.shards > 0 {
				return runShard(cmd, cfg, sf, quiet)
			}
			if err := checkRunConfig(cfg); err != nil {
				return err
			}
			started := time.Now()
			prog := newProgress(cmd.ErrOrStderr(), quiet)
			res, _, err := app.Run(cmd.Context(), cfg, app.Options{Progress: prog, Warnings: prog.Log()})
			prog.Stop()
			if err != nil {
				return auditError(err)
			}
			w := writeReports(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, res)
			if len(w.failed) == 0 {
				w.writeMetrics(cfg, res, started)
			}
			return w.conclude()
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress output on stderr")
	sf = addShardFlags(cmd)
	return cmd
}

// auditError maps an error of a run to its exit code: configuration
// problems and a topology the audit does not support exit 2, everything
// else 3 (the audit could not complete).
func auditError(err error) error {
	var ce *config.Error
	if errors.As(err, &ce) {
		return err
	}
	var ue *topology.UnsupportedError
	if errors.As(err, &ue) {
		return err
	}
	return withCode(exitIncomplete, fmt.Errorf("the audit could not complete: %w", err))
}

// reportKeys lists the report keys of cfg with their paths, in the order
// the reports are written.
func reportKeys(cfg *config.Config) [][2]string {
	return [][2]string{{"report.csv", cfg.Report.CSV}, {"report.json", cfg.Report.JSON}, {"report.html", cfg.Report.HTML}}
}

// checkReportPaths fails, before anything is read, when a configured
// report cannot be written: a long audit must not end with its verdict and
// nowhere to put it. The problem is a *config.Error naming the key.
func checkReportPaths(cfg *config.Config) error {
	for _, kp := range reportKeys(cfg) {
		if kp[1] == "-" {
			continue
		}
		if err := checkOutputPath(kp[0], kp[1]); err != nil {
			return err
		}
	}
	return nil
}

// checkOutputPath fails with a *config.Error about key when the file path
// it names ("" for none) cannot be written.
func checkOutputPath(key, path string) error {
	if path == "" {
		return nil
	}
	if err := report.CheckWritable(path); err != nil {
		return &config.Error{Key: key, Msg: err.Error()}
	}
	return nil
}

// finish writes the configured reports, prints the summary and returns the
// exit status of the result. The summary goes to stdout, or to stderr when
// the CSV does (report.csv "-"). A report that cannot be written does not
// cost the verdict: the summary is printed all the same, and the exit code
// (3) and a line on stderr say which report is missing.
func finish(stdout, stderr io.Writer, cfg *config.Config, res *finding.Result) error {
	w := writeReports(stdout, stderr, cfg, res)
	return w.conclude()
}

// written is where a run's reports went and what failed.
type written struct {
	// out receives the summary: stdout, or stderr when the CSV went to
	// stdout.
	out    io.Writer
	opt    report.SummaryOptions
	failed []string
	// res is the result as the reports show it: with report.redact_keys,
	// its keys are keyed hashes.
	res *finding.Result
}

// writeReports writes the configured report files (or the CSV to stdout),
// with report.file_mode, and with keyed hashes for keys when
// report.redact_keys is set.
func writeReports(stdout, stderr io.Writer, cfg *config.Config, res *finding.Result) *written {
	if cfg.Report.RedactKeys {
		res = report.RedactKeys(res, cfg.Report.RedactKey)
	}
	w := &written{out: stdout, res: res}
	mode := cfg.Report.FileMode
	if cfg.Report.CSV == "-" {
		w.out = stderr
		if err := report.WriteResultCSV(stdout, res); err != nil {
			w.failed = append(w.failed, fmt.Sprintf("the CSV report could not be written to stdout: %v", err))
		}
	} else if cfg.Report.CSV != "" {
		p, err := report.WriteCSVFile(cfg.Report.CSV, res, mode)
		if err != nil {
			w.failed = append(w.failed, fmt.Sprintf("the CSV report could not be written: %v", err))
		}
		w.opt.CSVPath = p
	}
	if cfg.Report.JSON != "" {
		p, err := report.WriteJSONFile(cfg.Report.JSON, res, mode)
		if err != nil {
			w.failed = append(w.failed, fmt.Sprintf("the JSON report could not be written: %v", err))
		}
		w.opt.JSONPath = p
	}
	if cfg.Report.HTML != "" {
		hopt := report.HTMLOptions{CSVPath: w.opt.CSVPath, JSONPath: w.opt.JSONPath, Config: cfg.Redacted()}
		p, err := report.WriteHTMLFile(cfg.Report.HTML, res, hopt, mode)
		if err != nil {
			w.failed = append(w.failed, fmt.Sprintf("the HTML report could not be written: %v", err))
		}
		w.opt.HTMLPath = p
	}
	return w
}

// writeMetrics writes the metrics of a run that completed, started at
// started, to report.metrics_file when it is set. A run that did not
// complete leaves the previous file, so that its
// lossaudit_last_success_timestamp_seconds ages and alerts fire.
func (w *written) writeMetrics(cfg *config.Config, res *finding.Result, started time.Time) {
	if cfg.Report.MetricsFile == "" {
		return
	}
	m := metrics.New()
	m.Completed(res, started)
	if err := m.WriteFile(cfg.Report.MetricsFile); err != nil {
		w.failed = append(w.failed, fmt.Sprintf("the metrics file could not be written: %v", err))
	}
}

// conclude prints the summary and returns the exit status of the result.
func (w *written) conclude() error {
	res := w.res
	w.opt.Color = colorOK(w.out)
	if err := report.WriteSummary(w.out, res, w.opt); err != nil {
		w.failed = append(w.failed, fmt.Sprintf("printing the summary: %v", err))
	}
	return exitStatus(res, w.failed)
}

// exitStatus is the exit status of a result whose reports met failed.
func exitStatus(res *finding.Result, failed []string) error {
	switch {
	case len(failed) > 0:
		return concluded(exitIncomplete, fmt.Errorf("%s; the audit itself completed (verdict %s, see the summary)", strings.Join(failed, "; "), report.Verdict(res)))
	case !res.Complete():
		return concluded(exitIncomplete, nil)
	case res.HasFindings():
		return concluded(exitFindings, nil)
	}
	return nil
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func colorOK(w io.Writer) bool {
	return isTerminal(w) && os.Getenv("NO_COLOR") == ""
}

// progressAdapter lets the engine report to a progress.Progress.
type progressAdapter struct{ p *progress.Progress }

func (a progressAdapter) Phase(name string, total int64) streams.Phase { return a.p.Phase(name, total) }

// stopper is the progress output of a command: Log writes messages that
// the status line does not overwrite, Stop ends it.
type stopper interface {
	streams.Progress
	Log() io.Writer
	Stop()
}

func (a progressAdapter) Log() io.Writer { return a.p.Log() }
func (a progressAdapter) Stop()          { a.p.Stop() }

func newProgress(w io.Writer, quiet bool) stopper {
	return progressAdapter{progress.New(w, progress.Options{TTY: isTerminal(w), Quiet: quiet})}
}
