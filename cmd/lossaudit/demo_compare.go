package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/copysim"
	"github.com/lossaudit/lossaudit/audit/report"
)

// newDemoCompareCmd returns `lossaudit demo compare`: an in-process Kafka
// cluster, mirrored topics that lose and duplicate known records, a
// producer ledger, a comparison of it all, and a check of the findings
// against what was injected.
func newDemoCompareCmd(g *globalFlags) *cobra.Command {
	var (
		dir   string
		seed  int64
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Run a comparison on simulated mirrored topics in an in-process Kafka cluster",
		Long: "Starts a 3-broker Kafka cluster inside this process, mirrors two topics through a simulated\n" +
			"copy pipeline that loses some copies and makes others twice (an outage and its retries) while\n" +
			"later records are still on their way, keeps the ledger of one topic's producer with a few\n" +
			"sends it got wrong, compares it all like `lossaudit compare` would, and writes the reports\n" +
			"(CSV, JSON, HTML) under --dir. It exits 0 when the comparison found exactly what was\n" +
			"injected, 1 otherwise.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemoCompare(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), dir, seed, quiet)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "./lossaudit-demo", "directory for the demo's index, ledger and reports")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the simulated data and faults")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress output on stderr")
	return cmd
}

func runDemoCompare(ctx context.Context, stdout, stderr io.Writer, dir string, seed int64, quiet bool) error {
	cluster, err := startDemo(stdout, dir, "lossaudit demo compare: mirrored topics after an outage, and the comparison that finds what went wrong")
	if err != nil {
		return err
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	fmt.Fprintln(stdout, "2. Mirroring two topics through a copy pipeline with faults, and keeping a producer's ledger.")
	simStart := time.Now()
	truth, err := copysim.Run(ctx, brokers, copysim.DemoScenario(seed), dir)
	if err != nil {
		return withCode(exitIncomplete, fmt.Errorf("demo: simulating the copy pipeline: %w", err))
	}
	fmt.Fprintf(stdout, "   done in %s. What the simulation did (the comparison is not told any of this):\n\n", time.Since(simStart).Round(time.Millisecond))
	if err := truth.WriteStory(indent(stdout)); err != nil {
		return withCode(exitIncomplete, err)
	}

	storeDir := filepath.Join(dir, "index")
	if err := os.RemoveAll(storeDir); err != nil {
		return withCode(exitIncomplete, fmt.Errorf("demo: clearing %s: %w", storeDir, err))
	}
	cfg := truth.Config(brokers, storeDir)
	cfg.Report.CSV = filepath.Join(dir, "compare-report.csv")
	cfg.Report.JSON = filepath.Join(dir, "compare-report.json")
	cfg.Report.HTML = filepath.Join(dir, "compare-report.html")

	fmt.Fprintf(stdout, "\n3. Comparing: lossaudit compare with compare.match %s, compare.grace %s, compare.ledger %s.\n\n", cfg.Compare.Match, cfg.Compare.Grace, cfg.Compare.Ledger)
	prog := newProgress(stderr, quiet)
	res, err := app.Compare(ctx, cfg, app.Options{Progress: prog, Warnings: prog.Log()})
	prog.Stop()
	if err != nil {
		return compareError(err)
	}
	status := finish(stdout, stderr, cfg, res)
	htmlPath := report.ReportPath(cfg.Report.HTML, !res.Complete())

	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "4. Checking the comparison against what the simulation injected:")
	diff := truth.Diff(res)
	if len(diff) == 0 {
		fmt.Fprintf(stdout, "   MATCH: the comparison reported exactly the %d injected records, each with the record to replay\n", len(truth.Rows))
		fmt.Fprintln(stdout, "   or the ledger line to act on, and nothing else: no false alarm from records still on their way,")
		fmt.Fprintln(stdout, "   records written twice at the source, or acknowledgements whose records retention deleted.")
	}
	return demoVerdict(stdout, diff, "the comparison differs from what was injected", htmlPath, status)
}
