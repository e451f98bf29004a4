package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/config"
)

// newCompareCmd returns `lossaudit compare`: a record-level comparison of
// source and sink topics, possibly on two clusters, and of a producer
// ledger against its topic.
func newCompareCmd(g *globalFlags) *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Check that every source record has a copy in its sink, and a producer ledger against its topic",
		Long: "Reads each configured source topic and its sink topic (on the sink_kafka cluster when set) with\n" +
			"read_committed semantics, identifies records by compare.match (record, key, field:<avro path>,\n" +
			"header:<name>) and reports every due source record without a copy in the sink (missing), every\n" +
			"record copied more often than the source holds it (duplicated) and, with\n" +
			"compare.report_unexpected, sink records with no source record. With a ledger (compare.ledger\n" +
			"or --ledger: Kafka's VerifiableProducer output or lossaudit's JSON lines), it also reports\n" +
			"acknowledged records that are gone (acked_missing) and failed sends that are present\n" +
			"(unacked_present) or absent (unacked_missing). Exit 0: nothing found; 1: findings; 2:\n" +
			"configuration error; 3: the comparison could not complete.",
		Example: "  lossaudit compare -c compare.yaml\n  lossaudit compare -c compare.yaml --ledger producer.jsonl --csv compare.csv --html compare.html",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load(cmd)
			if err != nil {
				return err
			}
			if err := cfg.ValidateCompare(); err != nil {
				return err
			}
			if err := checkReportPaths(cfg); err != nil {
				return err
			}
			prog := newProgress(cmd.ErrOrStderr(), quiet)
			res, err := app.Compare(cmd.Context(), cfg, app.Options{Progress: prog, Warnings: prog.Log()})
			prog.Stop()
			if err != nil {
				return compareError(err)
			}
			return finish(cmd.OutOrStdout(), cmd.ErrOrStderr(), cfg, res)
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress output on stderr")
	return cmd
}

// compareError maps an error of a comparison to its exit code:
// configuration problems exit 2, everything else 3.
func compareError(err error) error {
	var ce *config.Error
	if errors.As(err, &ce) {
		return err
	}
	return withCode(exitIncomplete, fmt.Errorf("the comparison could not complete: %w", err))
}
