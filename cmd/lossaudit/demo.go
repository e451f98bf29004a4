package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/audit/report"
)

// newDemoCmd returns `lossaudit demo`: an in-process Kafka cluster, the
// user story's pipeline simulated through an outage that loses known records,
// an audit of it, and a comparison of the findings with what was injected.
func newDemoCmd(g *globalFlags) *cobra.Command {
	var (
		dir   string
		seed  int64
		quiet bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run an audit on a simulated outage in an in-process Kafka cluster",
		Long: "Starts a 3-broker Kafka cluster inside this process, runs a faithful simulation of a Kafka\n" +
			"Streams application (three Avro inputs, selectKey -> groupByKey -> reduce, then\n" +
			"leftJoin -> leftJoin, exactly_once_v2) through an outage that loses a known set of updates,\n" +
			"audits it like `lossaudit audit` would, and writes the reports (CSV, JSON, HTML) under\n" +
			"--dir. It exits 0 when the audit found exactly the injected losses and nothing else, 1\n" +
			"otherwise. No external Kafka is needed or touched.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), dir, seed, quiet)
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "./lossaudit-demo", "directory for the demo's index, topology file and reports")
	cmd.Flags().Int64Var(&seed, "seed", 1, "seed of the simulated data and outage")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress output on stderr")
	cmd.AddCommand(newDemoCompareCmd(g))
	return cmd
}

// startDemo creates dir, prints the demo's title and starts its
// in-process cluster; the caller closes it.
func startDemo(stdout io.Writer, dir, title string) (*kfake.Cluster, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, withCode(exitUsage, fmt.Errorf("demo: creating --dir %s: %w", dir, err))
	}
	fmt.Fprintln(stdout, title)
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "1. Starting a 3-broker Kafka cluster in this process (kfake, loopback only).")
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		return nil, withCode(exitIncomplete, fmt.Errorf("demo: starting the in-process cluster: %w", err))
	}
	return cluster, nil
}

// demoVerdict prints the mismatches between what a demo injected and what
// was found (differs says how, e.g. "the audit differs from the injected
// loss") and where the HTML report is, and returns the demo's exit status
// (status is the report's).
func demoVerdict(stdout io.Writer, diff []string, differs, htmlPath string, status error) error {
	for _, d := range diff {
		fmt.Fprintf(stdout, "   MISMATCH %s\n", d)
	}
	fmt.Fprintf(stdout, "\nThe HTML report, to open in a browser: %s\n", htmlPath)
	if len(diff) > 0 {
		return withCode(exitFindings, fmt.Errorf("demo: %s in %d ways (listed above)", differs, len(diff)))
	}
	if code := exitCode(status); code != exitFindings && code != exitOK {
		return status
	}
	return nil
}

// runDemo runs the demo and returns what the simulation injected (nil when
// it failed before the simulation ran), so tests can compare the reports
// with it.
func runDemo(ctx context.Context, stdout, stderr io.Writer, dir string, seed int64, quiet bool) (*sim.Truth, error) {
	cluster, err := startDemo(stdout, dir, "lossaudit demo: an outage in a Kafka Streams pipeline, and the audit that finds what it lost")
	if err != nil {
		return nil, err
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()

	fmt.Fprintln(stdout, "2. Simulating the application of the user story under exactly_once_v2, through an outage.")
	simStart := time.Now()
	truth, err := sim.Run(ctx, brokers, sim.DemoScenario(seed))
	if err != nil {
		return truth, withCode(exitIncomplete, fmt.Errorf("demo: simulating the pipeline: %w", err))
	}
	fmt.Fprintf(stdout, "   done in %s. What the simulation did (the audit is not told any of this):\n\n", time.Since(simStart).Round(time.Millisecond))
	if err := truth.WriteStory(indent(stdout)); err != nil {
		return truth, withCode(exitIncomplete, err)
	}

	// Audit it the way a user would: from the Topology#describe() text the
	// application printed, the _schemas topic, and the consumer group.
	topo := filepath.Join(dir, "topology.txt")
	if err := os.WriteFile(topo, []byte(truth.Topology), 0o644); err != nil {
		return truth, withCode(exitIncomplete, fmt.Errorf("demo: writing %s: %w", topo, err))
	}
	// Each demo runs on a new in-process cluster: the history an earlier
	// demo left in the store would compare two different clusters.
	storeDir := filepath.Join(dir, "index")
	if err := os.RemoveAll(storeDir); err != nil {
		return truth, withCode(exitIncomplete, fmt.Errorf("demo: clearing %s: %w", storeDir, err))
	}
	cfg := truth.Config(brokers, storeDir)
	for i := range cfg.Pipeline.Inputs {
		in := &cfg.Pipeline.Inputs[i]
		in.Store, in.RepartitionTopic, in.ChangelogTopic = "", "", ""
	}
	cfg.Pipeline.TopologyFile = topo
	cfg.Report.CSV = filepath.Join(dir, "loss-report.csv")
	cfg.Report.JSON = filepath.Join(dir, "report.json")
	cfg.Report.HTML = filepath.Join(dir, "report.html")

	fmt.Fprintf(stdout, "\n3. Auditing: lossaudit audit with pipeline.topology_file=%s, schemas from the _schemas topic.\n\n", topo)
	prog := newProgress(stderr, quiet)
	res, _, err := app.Run(ctx, cfg, app.Options{Progress: prog, Warnings: prog.Log()})
	prog.Stop()
	if err != nil {
		return truth, auditError(err)
	}
	status := finish(stdout, stderr, cfg, res)
	htmlPath := report.ReportPath(cfg.Report.HTML, !res.Complete())

	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "4. Comparing the audit with what the simulation injected:")
	diff := truth.Diff(res)
	if len(diff) == 0 {
		fmt.Fprintf(stdout, "   MATCH: the audit reported exactly the %d lost updates and %d partition-level finding(s)\n", len(truth.Rows), len(truth.Partitions))
		fmt.Fprintln(stdout, "   that were injected, each at the right stage with the record to replay, and nothing else:")
		fmt.Fprintln(stdout, "   no false alarm from lag, caching, aborted-and-retried transactions, purged repartition")
		fmt.Fprintln(stdout, "   topics, null keys, null values, undecodable values or tombstones.")
	}
	return truth, demoVerdict(stdout, diff, "the audit differs from the injected loss", htmlPath, status)
}

// indentWriter prefixes every line with three spaces.
type indentWriter struct {
	w   io.Writer
	bol bool
}

func indent(w io.Writer) io.Writer { return &indentWriter{w: w, bol: true} }

func (iw *indentWriter) Write(p []byte) (int, error) {
	for i, b := range p {
		if iw.bol {
			if _, err := io.WriteString(iw.w, "   "); err != nil {
				return i, err
			}
		}
		if _, err := iw.w.Write([]byte{b}); err != nil {
			return i, err
		}
		iw.bol = b == '\n'
	}
	return len(p), nil
}
