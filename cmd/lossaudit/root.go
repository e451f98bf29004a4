package main

import (
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lossaudit/lossaudit/config"
)

// globalFlags holds the persistent flags every command takes
// (CONTRACT.md): --config/-c and the overrides of config keys.
type globalFlags struct {
	configFile string
	brokers    []string
	csv        string
	json       string
	from       string
	to         string
	storeDir   string
	// persistent is the root's persistent flag set; load uses it to tell the
	// global flags from a command's own flag of the same name (scan --json).
	persistent *pflag.FlagSet
}

// register adds the global flags to fs (the root's persistent flags).
func (g *globalFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&g.configFile, "config", "c", "", "YAML configuration file")
	fs.StringSliceVar(&g.brokers, "brokers", nil, "bootstrap brokers, host:port, comma-separated (overrides kafka.brokers)")
	fs.StringVar(&g.csv, "csv", "", "write the CSV loss report to this path (overrides report.csv)")
	fs.StringVar(&g.json, "json", "", "write the JSON summary to this path (overrides report.json)")
	fs.StringVar(&g.from, "from", "", "audit input records from this RFC 3339 time (overrides window.from)")
	fs.StringVar(&g.to, "to", "", "audit input records up to this RFC 3339 time (overrides window.to)")
	fs.StringVar(&g.storeDir, "store-dir", "", "directory of the on-disk index (overrides store.dir)")
	g.persistent = fs
}

// load reads the configuration for cmd: defaults < file < LOSSAUDIT_*
// environment < the global flags set on the command line. A flag that cmd
// defines itself under a global flag's name (scan's boolean --json) is not
// taken for the global one. Problems are *config.Error (exit 2). The pipeline
// section is not validated; commands that need it call ValidatePipeline.
func (g *globalFlags) load(cmd *cobra.Command) (*config.Config, error) {
	fs := pflag.NewFlagSet("global", pflag.ContinueOnError)
	if g.persistent != nil {
		g.persistent.VisitAll(func(f *pflag.Flag) {
			if own := cmd.Flags().Lookup(f.Name); own != nil && own != f {
				return // shadowed by the command's own flag
			}
			fs.AddFlag(f)
		})
	}
	return config.Load(config.LoadOptions{File: g.configFile, Flags: fs})
}

// newRootCmd builds the lossaudit command tree writing to stdout and stderr.
func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	g := &globalFlags{}
	return buildRoot(g, stdout, stderr, newScanCmd(g), newTopologyCmd(g), newAuditCmd(g), newCompareCmd(g), newDemoCmd(g))
}

// buildRoot makes the root command with g's persistent flags and the given
// subcommands (which should have been built with the same g).
func buildRoot(g *globalFlags, stdout, stderr io.Writer, cmds ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:   "lossaudit",
		Short: "Audit Kafka Streams pipelines for lost records",
		Long: "lossaudit checks that every input record's newest update per key reached each stage of a\n" +
			"Kafka Streams pipeline (changelogs, output topic), reading topics with read_committed\n" +
			"semantics, and reports exactly which input records to replay.\n\n" +
			"Configuration: a YAML file (--config), overridden by LOSSAUDIT_<KEY> environment\n" +
			"variables, overridden by flags. Exit codes: 0 nothing missing, 1 findings reported,\n" +
			"2 usage or configuration error, 3 the audit could not complete.",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	g.register(root.PersistentFlags())
	root.AddCommand(cmds...)
	markCommandErrors(root)
	return root
}

// commandError marks an error returned by a command's own code (RunE and
// its hooks), as opposed to one cobra raised while parsing the command line.
type commandError struct{ err error }

func (e *commandError) Error() string { return e.err.Error() }
func (e *commandError) Unwrap() error { return e.err }

// markCommandErrors wraps the hooks of every command in the tree so that the
// errors they return are commandErrors; any other error from Execute is a
// usage error.
func markCommandErrors(c *cobra.Command) {
	wrap := func(fn func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
		if fn == nil {
			return nil
		}
		return func(cmd *cobra.Command, args []string) error {
			if err := fn(cmd, args); err != nil {
				return &commandError{err: err}
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
		markCommandErrors(sub)
	}
}

// version is the module version and VCS revision the binary was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (" + rev + dirty + ")"
	}
	return v
}
