package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/progress"
	"github.com/lossaudit/lossaudit/audit/report"
	"github.com/lossaudit/lossaudit/audit/scan"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// newScanCmd returns `lossaudit scan`.
func newScanCmd(g *globalFlags) *cobra.Command {
	return newScanCmdWith(g, nil)
}

// newScanCmdWith is newScanCmd with a hook adjusting the reader options
// (tests shorten the retry budget with it).
func newScanCmdWith(g *globalFlags, tweak func(*kread.Options)) *cobra.Command {
	var asJSON, decode, quiet bool
	var topics []string
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "Read topics with read_committed semantics and print per-partition offsets and counts",
		Long: "scan snapshots every partition of the topics (log start offset, last stable offset,\n" +
			"high watermark), reads [log start, LSO) as a read_committed consumer would, and prints\n" +
			"the committed, aborted and control (transaction marker) record counts and the first and\n" +
			"last committed timestamps. --from/--to (window.from/window.to) narrow the counts to the\n" +
			"offsets found for those times. Partitions whose LSO is below the high watermark have a\n" +
			"transaction open (or hanging) and are flagged.\n\n" +
			"Without --topic it scans the configured pipeline's inputs, output and every topic\n" +
			"named <pipeline.application_id>-*. With pipeline.application_id set, the group's\n" +
			"committed offset and lag show on the partitions it consumes.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load(cmd)
			if err != nil {
				return err
			}
			client, err := newReader(cfg, withWait(cmd.ErrOrStderr(), tweak))
			if err != nil {
				return err
			}
			defer client.Close()
			ctx := cmd.Context()
			names, err := scanTopics(cfg, topics, func() ([]string, error) { return client.Topics(ctx) }, func() []string { return derivedTopics(ctx, cfg, client) })
			if err != nil {
				return err
			}
			var dec *scan.Decoder
			if decode {
				reg, err := app.Schemas(cfg, client)
				if err != nil {
					return err
				}
				if reg == nil {
					return withCode(exitUsage, errors.New("scan --decode needs a schema source: set schema.registry_url, schema.schemas_topic or schema.avsc_dir"))
				}
				dec = scan.NewDecoder(ctx, reg)
			}
			stderr := cmd.ErrOrStderr()
			// Progress goes to a terminal only: a log gets the result.
			prog := progress.New(stderr, progress.Options{TTY: true, Quiet: quiet || !isTerminal(stderr)})
			opts := scan.Options{From: cfg.Window.From, To: cfg.Window.To, Counter: prog.Phase("scan", 0)}
			var group *finding.Group
			if app := cfg.Pipeline.ApplicationID; app != "" {
				// Its type, state and members, each type by its own API.
				group = &finding.Group{ID: app, Members: -1}
				if g, err := client.DescribeGroup(ctx, app); err != nil {
					group.Error = err.Error()
				} else {
					*group = finding.Group{ID: app, Type: string(g.Type), State: g.State, Members: g.Members, Via: g.Via}
				}
				// The application's committed offsets and lag, as
				// kafka-consumer-groups --describe shows them; read-only.
				if opts.Group, err = client.GroupOffsets(ctx, app, names); err != nil {
					prog.Stop()
					if errors.Is(err, kread.ErrUnknownTopic) {
						return withCode(exitUsage, fmt.Errorf("scan: %w", err))
					}
					return withCode(exitIncomplete, fmt.Errorf("scan: committed offsets of group %s: %w", app, err))
				}
			}
			if dec != nil {
				opts.Check = dec.Check
			}
			rows, err := scan.Run(ctx, client, names, opts)
			prog.Stop()
			if err != nil {
				if errors.Is(err, kread.ErrUnknownTopic) {
					return withCode(exitUsage, fmt.Errorf("scan: %w", err))
				}
				return withCode(exitIncomplete, fmt.Errorf("scan of %s at %s: %w", strings.Join(names, ","), strings.Join(cfg.Kafka.Brokers, ","), err))
			}
			for _, r := range rows {
				if r.Gaps > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "lossaudit: warning: %s[%d]: %d offsets were purged while the scan ran; counts exclude them\n", r.Topic, r.Partition, r.Gaps)
				}
			}
			if dec != nil {
				if err := dec.Err(); err != nil {
					return withCode(exitIncomplete, fmt.Errorf("scan --decode: schemas cannot be looked up: %w", err))
				}
				dec.Attach(rows)
			}
			if asJSON {
				return scan.WriteJSON(cmd.OutOrStdout(), rows)
			}
			if err := scan.WriteTable(cmd.OutOrStdout(), rows); err != nil {
				return err
			}
			if group != nil {
				if _, err := fmt.Fprintf(cmd.OutOrStdout(), "\ngroup %s\n", report.TerminalSafe(report.GroupText(group))); err != nil {
					return err
				}
			}
			if dec != nil {
				return scan.WriteDecoding(cmd.OutOrStdout(), rows)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per partition per line instead of the table")
	cmd.Flags().BoolVar(&decode, "decode", false, "also decode every value with its Avro writer schema: schema ids seen (with subjects) and decode errors by kind")
	cmd.Flags().StringArrayVar(&topics, "topic", nil, "topic to scan (repeatable; default: the pipeline's topics)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress output on stderr (shown only on a terminal)")
	return cmd
}

// derivedTopics returns the repartition and changelog topics the pipeline
// model derives from pipeline.topology_file, none without one. A model that
// cannot be built leaves scan with the topics it lists (what `topology` and
// `audit` say about the model is theirs to say).
func derivedTopics(ctx context.Context, cfg *config.Config, lister topology.TopicLister) []string {
	if cfg.Pipeline.TopologyFile == "" {
		return nil
	}
	m, err := app.Model(ctx, cfg, lister, nil)
	if err != nil {
		return nil
	}
	var out []string
	for _, st := range m.Stages {
		out = append(out, st.RepartitionTopic, st.ChangelogTopic)
	}
	return out
}

// scanTopics returns the topics to scan: the --topic flags in order, or
// else the pipeline's inputs and output and the application's internal
// topics (<application_id>-*, listed by listTopics), deduplicated.
//
// The internal topics the configuration names or derived() derives from
// the topology file are scanned even when the listing lacks them: Kafka
// lists only the topics the principal may describe, so without DESCRIBE on
// them scan stops naming the refused permission instead of leaving them out.
func scanTopics(cfg *config.Config, flagged []string, listTopics func() ([]string, error), derived func() []string) ([]string, error) {
	var out []string
	add := func(t string) {
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, t := range flagged {
		if strings.TrimSpace(t) == "" {
			return nil, withCode(exitUsage, errors.New("scan: --topic needs a topic name"))
		}
		add(t)
	}
	if len(out) > 0 {
		return out, nil
	}
	p := cfg.Pipeline
	for _, in := range p.Inputs {
		add(in.Topic)
	}
	add(p.Output)
	// Internal topics named in the configuration are scanned even when the
	// listing lacks them: Kafka lists only the topics the principal may
	// describe, and a topic it may not is an error, not an omission.
	for _, in := range p.Inputs {
		add(in.RepartitionTopic)
		add(in.ChangelogTopic)
	}
	// So are those derived from pipeline.topology_file.
	if derived != nil {
		for _, t := range derived() {
			add(t)
		}
	}
	if p.ApplicationID != "" {
		all, err := listTopics()
		if err != nil {
			return nil, withCode(exitIncomplete, fmt.Errorf("scan: listing topics at %s: %w", strings.Join(cfg.Kafka.Brokers, ","), err))
		}
		for _, t := range all {
			if strings.HasPrefix(t, p.ApplicationID+"-") {
				add(t)
			}
		}
	}
	if len(out) == 0 {
		return nil, withCode(exitUsage, errors.New("scan: no topics to scan: pass --topic, or configure pipeline.inputs, pipeline.output or pipeline.application_id"))
	}
	return out, nil
}
