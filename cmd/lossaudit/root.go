package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/config"
)

// commandFlags is the one table of which command takes which
// configuration flags: --config/-c and the overrides of the keys the
// command reads (config.Flags). A command not listed reads no
// configuration and takes none of them; flags of a command's own (scan
// --topic, audit -q) are registered by the command. Adding a command's
// flag set is one line here.
func commandFlags() map[string][]string {
	return map[string][]string{
		"audit":     {"config", "brokers", "command-config", "from", "to", "store-dir", "csv", "json", "html", "metrics-file"},
		"compare":   {"config", "brokers", "command-config", "store-dir", "csv", "json", "html", "ledger"},
		"reconcile": {"config", "brokers", "command-config", "from", "to", "store-dir", "csv", "json", "html", "metrics-file"},
		"watch":     {"config", "brokers", "command-config", "from", "to", "store-dir", "csv", "json", "html", "interval", "listen", "log-format", "web.config.file"},
		"scan":      {"config", "brokers", "command-config", "from", "to"},
		"topology":  {"config", "brokers", "command-config"},
	}
}

// globalFlags connects the commands of one tree to the configuration: the
// flag table, and the configuration the running command loaded, so that
// configuration errors found later (the pipeline model, schema sources)
// are reported where the value was written.
type globalFlags struct {
	// flags maps a command name to its configuration flags; nil means
	// commandFlags().
	flags map[string][]string
	// cfg is the configuration the running command loaded.
	cfg *config.Config
	// ignoreEnv, when set, names further LOSSAUDIT_ variables that are
	// not configuration keys (the tests' tree ignores the test bed's);
	// the binary ignores only its failpoint variables, and only when
	// built with -tags testbed (failpointVar).
	ignoreEnv func(name string) bool
}

// load reads the configuration for cmd: defaults < file (--config) <
// LOSSAUDIT_* environment < cmd's configuration flags set on the command
// line. Problems are *config.Error (exit 2). The pipeline section is not
// validated; commands that need it call ValidatePipeline.
func (g *globalFlags) load(cmd *cobra.Command) (*config.Config, error) {
	ignore := failpointVar
	if g.ignoreEnv != nil {
		ignore = func(name string) bool { return failpointVar(name) || g.ignoreEnv(name) }
	}
	cfg, err := config.Load(config.LoadOptions{Flags: cmd.Flags(), IgnoreEnv: ignore})
	if err != nil {
		return nil, err
	}
	g.cfg = cfg
	return cfg, nil
}

// locate names, on a configuration error a command returned, where the
// offending value was written.
func (g *globalFlags) locate(err error) error {
	if g.cfg == nil {
		return err
	}
	return g.cfg.Locate(err)
}

// newRootCmd builds the lossaudit command tree writing to stdout and stderr.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	return newTree(&globalFlags{}, stdout, stderr)
}

// newTree builds the lossaudit command tree on g.
func newTree(g *globalFlags, stdout, stderr io.Writer) *cobra.Command {
	return buildRoot(g, stdout, stderr, newScanCmd(g), newTopologyCmd(g), newAuditCmd(g), newCompareCmd(g), newReconcileCmd(g), newWatchCmd(g), newDemoCmd(g), newVersionCmd())
}

// buildRoot makes the root command with the given subcommands (which
// should have been built with the same g) and registers on each the
// configuration flags of g's table.
func buildRoot(g *globalFlags, stdout, stderr io.Writer, cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "lossaudit",
		Short: "Audit Kafka Streams pipelines for lost records",
		Long: "lossaudit checks that every input record's newest update per key reached each stage of a\n" +
			"Kafka Streams pipeline (changelogs, output topic), reading topics with read_committed\n" +
			"semantics, and reports exactly which input records to replay.\n\n" +
			"Configuration: a YAML file (-c/--config), overridden by LOSSAUDIT_<KEY> environment\n" +
			"variables, overridden by flags. Exit codes: 0 nothing missing, 1 findings reported,\n" +
			"2 usage or configuration error, 3 the audit could not complete.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetVersionTemplate("lossaudit {{.Version}}\n")
	root.AddCommand(cmds...)
	table := g.flags
	if table == nil {
		table = commandFlags()
	}
	for _, sub := range root.Commands() {
		if err := config.AddFlags(sub.Flags(), table[sub.Name()]...); err != nil {
			panic(fmt.Sprintf("the flag table of %s: %v", sub.Name(), err)) // a programming error, caught by the tests
		}
	}
	markCommandErrors(root, g.locate)
	return root
}

// commandError marks an error returned by a command's own code (RunE and
// its hooks), as opposed to one cobra raised while parsing the command line.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// markCommandErrors wraps the hooks of every command in the tree so that the
// errors they return are commandErrors, passed through locate; any other
// error from Execute is a usage error.
func markCommandErrors(c *cobra.Command, locate func(error) error) {
	wrap := func(fn func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
		if fn == nil {
			return nil
		}
		return func(cmd *cobra.Command, args []string) error {
			if err := fn(cmd, args); err != nil {
				return &commandError{err: locate(err)}
			}
			return nil
		}
	}
	c.PersistentPreRunE = wrap(c.PersistentPreRunE)
	c.PreRunE = wrap(c.PreRunE)
	c.RunE = wrap(c.RunE)
	c.PostRunE = wrap(c.PostRunE)
	c.PersistentPostRunE = wrap(c.PersistentPostRunE)
	for _, sub := range c.Commands() {
		markCommandErrors(sub, locate)
	}
}
