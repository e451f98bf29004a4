package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/report"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
)

// newTopologyCmd returns `lossaudit topology`: derive the pipeline model,
// print the stage map with where each name came from, and check that every
// topic exists.
func newTopologyCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "topology",
		Short: "Print the derived stage map (input, repartition topic, store, changelog, output) and check the topics exist",
		Long: "topology derives, for every configured input, its repartition topic, reduce store and\n" +
			"changelog topic, and the join's output topic: from explicit overrides in\n" +
			"pipeline.inputs[i], then from pipeline.topology_file (the text printed by\n" +
			"Topology#describe()), then from the application's streams group (KIP-1071, which\n" +
			"the topology file is checked against), then by discovery among the cluster's topics. It prints one row\n" +
			"per name with its origin and whether the topic exists, then the stage graph: each\n" +
			"stage (source, link, table, output) with the rule it is held to, and each edge with\n" +
			"how it maps the key and carries the timestamp.\n\n" +
			"Exit codes: 0 every topic exists; 1 a derived internal topic is missing (MISSING in\n" +
			"the table); 2 a configuration problem, including a topic named in the config that\n" +
			"does not exist; 3 the cluster could not be reached.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.load(cmd)
			if err != nil {
				return err
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if err := cfg.ValidatePipeline(); err != nil {
				return err
			}
			if err := app.CheckTopology(cfg); err != nil {
				return err
			}
			client, err := newReader(cfg, withWait(cmd.ErrOrStderr(), nil))
			if err != nil {
				return err
			}
			defer client.Close()
			// Discovery assigns a changelog to an input only when the Avro
			// schemas of their values agree.
			reg, err := app.Schemas(cfg, client)
			if err != nil {
				return err
			}
			m, err := runTopology(cmd.Context(), cfg, client, app.SchemaMatcher(client, reg), cmd.OutOrStdout())
			if err != nil {
				return err
			}
			problems, err := app.Preflight(cmd.Context(), cfg, client, reg, m)
			if err != nil {
				return fmt.Errorf("checking the inputs: %w", err)
			}
			return reportProblems(cmd.OutOrStdout(), problems)
		},
	}
}

// topicRow is one line of the stage map.
type topicRow struct {
	input, role, name string
	origin            topology.Origin
	// key is the config key that named the topic, "" when derived.
	key string
	// topic is false for the store (not a topic).
	topic bool
}

// topicAccessChecker asks the cluster why a topic is missing from its
// listing (kread.Client): an authorization error when the principal may
// not describe it.
type topicAccessChecker interface {
	TopicAccess(ctx context.Context, topic string) error
}

// runTopology builds the model, prints the stage map to w and checks the
// topics against lister. A missing topic that the config names is a
// *config.Error (exit 2) naming the key; a missing derived topic is marked
// MISSING and ends with exit 1; failing to list topics is exit 3.
func runTopology(ctx context.Context, cfg *config.Config, lister topology.TopicLister, match topology.Matcher, w io.Writer) (*topology.Model, error) {
	m, err := app.Model(ctx, cfg, lister, match)
	if err != nil {
		return nil, err
	}
	names, err := lister.Topics(ctx)
	if err != nil {
		return nil, fmt.Errorf("checking that the pipeline's topics exist: %w", err)
	}
	exists := make(map[string]bool, len(names))
	for _, n := range names {
		exists[n] = true
	}

	var rows []topicRow
	for i, s := range m.Stages {
		if m.Stream != nil {
			rows = append(rows, streamRows(m, i)...)
			continue
		}
		in := s.Input.Name
		base := fmt.Sprintf("pipeline.inputs[%d].", i)
		userKey := func(o topology.Origin, field string) string {
			if o == topology.FromOverride {
				return base + field
			}
			return ""
		}
		rows = append(rows,
			topicRow{in, "input", s.Input.Topic, topology.FromConfig, base + "topic", true},
			topicRow{in, "repartition", s.RepartitionTopic, s.Origins.RepartitionTopic, userKey(s.Origins.RepartitionTopic, "repartition_topic"), true},
			topicRow{in, "store", s.Store, s.Origins.Store, "", false},
			topicRow{in, "changelog", s.ChangelogTopic, s.Origins.ChangelogTopic, userKey(s.Origins.ChangelogTopic, "changelog_topic"), true},
		)
		if s.BufferStore != "" {
			rows = append(rows, topicRow{in, "buffer store", s.BufferStore, topology.FromTopology, "", false},
				topicRow{in, "buffer changelog", s.BufferTopic, topology.FromTopology, "", true})
		}
	}
	outKey := ""
	if m.OutputOrigin == topology.FromConfig {
		outKey = "pipeline.output"
	}
	if !m.ChangelogOnly {
		rows = append(rows, topicRow{"-", "output", m.Output, m.OutputOrigin, outKey, true})
	}

	safe := report.TerminalSafe
	fmt.Fprintf(w, "application.id %s (consumer group and internal topic prefix)\njoin order: ", safe(m.ApplicationID))
	joinWord := " leftJoin "
	switch m.Join {
	case topology.JoinInner:
		joinWord = " join "
	case topology.JoinOuter:
		joinWord = " outerJoin "
	}
	if m.Stream != nil {
		joinWord = " merge " // a per-record stream stage: no KTable joins
	}
	if m.Cogroup() != "" {
		joinWord = " cogroup " // one table fed by every input
	}
	for i, s := range m.Stages {
		if i > 0 {
			fmt.Fprint(w, joinWord)
		}
		fmt.Fprint(w, safe(s.Input.Name))
	}
	if m.ChangelogOnly {
		fmt.Fprint(w, " (ends in its changelog: no output)\n")
	} else {
		fmt.Fprintf(w, " -> %s\n", safe(m.Output))
	}
	if m.Group != nil {
		how := "names that no override or topology file gives are taken from it"
		if cfg.Pipeline.TopologyFile != "" {
			how = "the topology file's names agree with it"
		}
		fmt.Fprintf(w, "%s: %s\n", safe(m.Group.String()), how)
	}
	fmt.Fprintln(w)
	// The names come last: they are the long column, and the only one that
	// may run past an 80-column terminal.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "INPUT\tROLE\tFROM\tSTATUS\tNAME")
	var userMissing []topicRow
	var derivedMissing, denied []string
	access, _ := lister.(topicAccessChecker)
	deniedErr := func(topic string) error {
		if access == nil {
			return nil
		}
		return access.TopicAccess(ctx, topic)
	}
	for _, r := range rows {
		var accessErr error
		status := "-"
		name := r.name
		switch {
		case !r.topic:
		case name == "":
			name = "(none: no repartitioning)"
		case exists[name]:
			status = "ok"
		case func() bool { accessErr = deniedErr(name); return accessErr != nil }():
			// Kafka lists only the topics the principal may describe.
			status = "DENIED"
			denied = append(denied, fmt.Sprintf("topic %q: %v", name, accessErr))
		default:
			status = "MISSING"
			if r.key != "" {
				userMissing = append(userMissing, r)
			} else {
				derivedMissing = append(derivedMissing, name)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", safe(r.input), r.role, r.origin, status, safe(name))
	}
	if err := tw.Flush(); err != nil {
		return nil, fmt.Errorf("writing the stage map: %w", err)
	}
	for _, warn := range m.Warnings {
		fmt.Fprintf(w, "warning: %s\n", safe(warn))
	}
	// The stage graph: what each stage is held to.
	fmt.Fprintln(w)
	if err := m.Graph().Write(w, safe); err != nil {
		return nil, fmt.Errorf("writing the stage graph: %w", err)
	}
	if len(denied) > 0 {
		return nil, withCode(exitIncomplete, fmt.Errorf("%s (lossaudit's principal needs DESCRIBE on every topic of the pipeline, and READ to audit them: docs/security.md)", strings.Join(denied, "; ")))
	}
	if len(userMissing) > 0 {
		first := userMissing[0]
		msg := fmt.Sprintf("topic %q does not exist", first.name)
		for _, r := range userMissing[1:] {
			msg += fmt.Sprintf("; %s: topic %q does not exist either", r.key, r.name)
		}
		return nil, &config.Error{Key: first.key, Msg: msg}
	}
	if len(derivedMissing) > 0 {
		return nil, withCode(exitFindings, errors.New("derived internal topics do not exist: "+strings.Join(derivedMissing, ", ")+
			" (is the application running, and do pipeline.application_id and pipeline.topology_file match it?)"+app.TableChangelogHint(m, derivedMissing)))
	}
	return m, nil
}

// reportProblems prints what Preflight found and returns the exit status:
// a configuration error (2) naming the first key to fix.
func reportProblems(w io.Writer, problems []app.Problem) error {
	if len(problems) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	for _, p := range problems {
		fmt.Fprintf(w, "problem: %s: %s\n", p.Key, p.Msg)
	}
	msg := fmt.Sprintf("%s (an audit would be inconclusive)", problems[0].Msg)
	if len(problems) > 1 {
		msg += fmt.Sprintf("; and %d more problems, listed above", len(problems)-1)
	}
	return &config.Error{Key: problems[0].Key, Msg: msg}
}
