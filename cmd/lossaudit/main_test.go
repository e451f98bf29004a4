package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// clearEnv unsets every LOSSAUDIT_ variable but the test bed's for the
// test's duration.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, config.EnvPrefix+"_") && !testbedenv.Is(name) {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "audit.yaml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunRealTree runs the real command tree in-process, as a user would,
// on problems found before any cluster is contacted.
func TestRunRealTree(t *testing.T) {
	clearEnv(t)
	badBroker := writeConfig(t, "kafka:\n  brokers: [\"nohost\"]\n")
	unknownKey := writeConfig(t, "kafka:\n  brokerz: [\"h:9092\"]\n")
	noPipeline := writeConfig(t, "kafka:\n  brokers: [\"127.0.0.1:1\"]\n")
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		code       int
		stderr     string // exact
		stdoutPart string
	}{
		{name: "help", args: []string{"--help"}, code: exitOK, stdoutPart: "Usage:"},
		{name: "subcommand help", args: []string{"scan", "--help"}, code: exitOK, stdoutPart: "--command-config"},
		{name: "unknown command", args: []string{"bogus"}, code: exitUsage,
			stderr: "lossaudit: unknown command \"bogus\" for \"lossaudit\"\n"},
		{name: "unknown flag", args: []string{"scan", "--nope"}, code: exitUsage, stderr: "lossaudit: unknown flag: --nope\n"},
		{name: "flag without value", args: []string{"scan", "--from"}, code: exitUsage,
			stderr: "lossaudit: flag needs an argument: --from\n"},
		{name: "bad broker in config", args: []string{"scan", "-c", badBroker}, code: exitUsage,
			stderr: "lossaudit: " + badBroker + ":2: kafka.brokers[0]: \"nohost\" is not a host:port address: missing port in address\n"},
		{name: "unknown key, scan --json", args: []string{"scan", "--json", "--config", unknownKey}, code: exitUsage,
			stderr: "lossaudit: " + unknownKey + ":2: kafka.brokerz: unknown key (did you mean kafka.brokers?)\n"},
		{name: "bad --from", args: []string{"scan", "--from", "yesterday"}, code: exitUsage,
			stderr: "lossaudit: --from: \"yesterday\" is not a time: write RFC 3339 (2026-11-29T10:00:00Z), a duration before now (-2h, 30m) or now\n"},
		{name: "missing config file", args: []string{"scan", "-c", "/nonexistent/audit.yaml"}, code: exitUsage,
			stderr: "lossaudit: /nonexistent/audit.yaml: cannot read the configuration file: no such file or directory\n"},
		{name: "bad variable value", args: []string{"scan"}, env: map[string]string{"LOSSAUDIT_KAFKA_CONCURRENCY": "abc"}, code: exitUsage,
			stderr: "lossaudit: LOSSAUDIT_KAFKA_CONCURRENCY: \"abc\" is not a whole number\n"},
		{name: "misspelt variable", args: []string{"topology", "-c", noPipeline}, env: map[string]string{"LOSSAUDIT_KAFKA_BROKER": "h:9092"}, code: exitUsage,
			stderr: "lossaudit: LOSSAUDIT_KAFKA_BROKER: is not a lossaudit setting (did you mean LOSSAUDIT_KAFKA_BROKERS?); unset it or correct its name\n"},
		{name: "audit without -c", args: []string{"audit"}, code: exitUsage,
			stderr: "lossaudit: no configuration file was given (pass one with -c audit.yaml); pipeline.application_id is not set\n"},
		{name: "topology without -c", args: []string{"topology"}, code: exitUsage,
			stderr: "lossaudit: no configuration file was given (pass one with -c audit.yaml); pipeline.application_id is not set\n"},
		{name: "audit with a file without a pipeline", args: []string{"audit", "-c", noPipeline}, code: exitUsage,
			stderr: "lossaudit: " + noPipeline + ": pipeline.application_id: must be set to the Kafka Streams application.id\n"},
		{name: "report flag on topology", args: []string{"topology", "--csv", "x.csv"}, code: exitUsage, stderr: "lossaudit: unknown flag: --csv\n"},
		{name: "store flag on scan", args: []string{"scan", "--store-dir", "d"}, code: exitUsage, stderr: "lossaudit: unknown flag: --store-dir\n"},
		{name: "config flag on demo", args: []string{"demo", "-c", "audit.yaml"}, code: exitUsage, stderr: "lossaudit: unknown shorthand flag: 'c' in -c\n"},
		{name: "flag before a command that does not take it", args: []string{"--csv", "x.csv", "topology"}, code: exitUsage, stderr: "lossaudit: unknown flag: --csv\n"},
		{name: "version", args: []string{"version"}, code: exitOK, stdoutPart: "lossaudit (devel) (revision "},
		{name: "--version", args: []string{"--version"}, code: exitOK, stdoutPart: "lossaudit (devel) (revision "},
		{name: "version takes no arguments", args: []string{"version", "x"}, code: exitUsage,
			stderr: "lossaudit: unknown command \"x\" for \"lossaudit version\"\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			code := testRun(tc.args, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tc.code, stderr.String())
			}
			if tc.code != exitOK && stderr.String() != tc.stderr {
				t.Errorf("stderr = %q\nwant     %q", stderr.String(), tc.stderr)
			}
			if !strings.Contains(stdout.String(), tc.stdoutPart) {
				t.Errorf("stdout lacks %q:\n%s", tc.stdoutPart, stdout.String())
			}
		})
	}
}

// TestCommandFlags is the user-visible flag table: which command takes
// which flag (the configuration flags from commandFlags, and the
// commands' own).
func TestCommandFlags(t *testing.T) {
	root := newTestRootCmd(io.Discard, io.Discard)
	byName := map[string]*cobra.Command{}
	for _, c := range root.Commands() {
		byName[c.Name()] = c
	}
	for name := range commandFlags() {
		if byName[name] == nil {
			t.Errorf("commandFlags lists %q, which is not a command", name)
		}
	}
	configFlags := []string{"config", "brokers", "command-config", "from", "to", "store-dir", "csv", "json", "metrics-file",
		"interval", "listen", "log-format", "web.config.file"}
	want := map[string][]string{
		"audit":     {"config", "brokers", "command-config", "from", "to", "store-dir", "csv", "json", "metrics-file", "quiet"},
		"reconcile": {"config", "brokers", "command-config", "from", "to", "store-dir", "csv", "json", "metrics-file", "quiet"},
		"watch":     {"config", "brokers", "command-config", "from", "to", "store-dir", "csv", "json", "interval", "listen", "log-format", "web.config.file"},
		"scan":      {"config", "brokers", "command-config", "from", "to", "json", "quiet", "decode", "topic"},
		"topology":  {"config", "brokers", "command-config"},
		"demo":      {"dir", "seed", "quiet"},
		"version":   {},
	}
	for name, flags := range want {
		c := byName[name]
		if c == nil {
			t.Errorf("no command %s", name)
			continue
		}
		for _, f := range append(configFlags, "quiet", "dir", "seed", "decode", "topic") {
			has := c.Flags().Lookup(f) != nil
			if has != slices.Contains(flags, f) {
				t.Errorf("%s --%s: registered %v, want %v", name, f, has, !has)
			}
		}
	}
	// scan's own --json is the output format, not a report path.
	if f := byName["scan"].Flags().Lookup("json"); f == nil || f.Value.Type() != "bool" {
		t.Errorf("scan --json is not a boolean")
	}
	for _, name := range []string{"audit", "reconcile", "scan", "demo"} {
		if f := byName[name].Flags().ShorthandLookup("q"); f == nil || f.Name != "quiet" {
			t.Errorf("%s has no -q", name)
		}
	}
	if f := byName["audit"].Flags().ShorthandLookup("c"); f == nil || f.Name != "config" {
		t.Errorf("audit has no -c")
	}
}

func TestDescribeBuild(t *testing.T) {
	tests := []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3f2a9c1d0e4b5a6978877665544332211"}, {Key: "vcs.modified", Value: "false"}}},
			"v1.2.0 (revision 3f2a9c1d0e4b, go1.26.8)"},
		{debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "3f2a9c1d0e4b5a69"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel) (revision 3f2a9c1d0e4b, modified, go1.26.8)"},
		{debug.BuildInfo{GoVersion: "go1.26.8"}, "(devel) (revision unknown, go1.26.8)"},
	}
	for _, tc := range tests {
		if got := describeBuild(&tc.bi); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestReleaseBuildVersion: the version and commit a release build sets
// with -ldflags -X replace what Go recorded; the Go version and whether
// the tree was modified stay.
func TestReleaseBuildVersion(t *testing.T) {
	recorded := debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "3f2a9c1d0e4b5a69"}, {Key: "vcs.modified", Value: "true"}, {Key: "GOOS", Value: "linux"}}}
	tests := []struct {
		version, commit, want string
	}{
		{"", "", "(devel) (revision 3f2a9c1d0e4b, modified, go1.26.8)"},
		{"v1.2.0", "9e8d7c6b5a4f3e2d1c0b", "v1.2.0 (revision 9e8d7c6b5a4f, modified, go1.26.8)"},
		{"v1.2.0", "", "v1.2.0 (revision 3f2a9c1d0e4b, modified, go1.26.8)"},
		{"", "9e8d7c6b5a4f", "(devel) (revision 9e8d7c6b5a4f, modified, go1.26.8)"},
	}
	for _, tc := range tests {
		if got := describeBuild(withRelease(&recorded, tc.version, tc.commit)); got != tc.want {
			t.Errorf("version %q, commit %q: got %q, want %q", tc.version, tc.commit, got, tc.want)
		}
	}
	if recorded.Main.Version != "(devel)" || len(recorded.Settings) != 3 {
		t.Errorf("withRelease changed the recorded build information: %+v", recorded)
	}
}

// probe is a test command tree: "shadow" has its own boolean --json like
// scan, "plain" takes the --json report path; both load the
// configuration and then return whatever err says.
type probe struct {
	cfg      *config.Config
	jsonFlag bool
	ran      bool
}

func probeRoot(p *probe, stdout, stderr *bytes.Buffer, result error) *cobra.Command {
	g := &globalFlags{ignoreEnv: testbedenv.Is, flags: map[string][]string{
		"shadow": {"config", "brokers", "csv", "store-dir"},
		"plain":  {"config", "brokers", "csv", "json", "store-dir"},
	}}
	runE := func(cmd *cobra.Command, args []string) error {
		p.ran = true
		cfg, err := g.load(cmd)
		if err != nil {
			return err
		}
		p.cfg = cfg
		return result
	}
	shadow := &cobra.Command{Use: "shadow", Args: cobra.NoArgs, RunE: runE}
	shadow.Flags().BoolVar(&p.jsonFlag, "json", false, "print JSON")
	plain := &cobra.Command{Use: "plain", Args: cobra.NoArgs, RunE: runE}
	return buildRoot(g, stdout, stderr, shadow, plain)
}

func TestConfigFlagsAndShadowedJSON(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, "report:\n  json: file.json\n  csv: file.csv\n")
	tests := []struct {
		name     string
		args     []string
		wantJSON string // report.json
		wantCSV  string
		wantBool bool
	}{
		{"--json is a report path", []string{"plain", "-c", file, "--json", "flag.json"}, "flag.json", "file.csv", false},
		{"own --json is a bool and leaves report.json alone", []string{"shadow", "-c", file, "--json"}, "file.json", "file.csv", true},
		{"other flags still apply under shadow", []string{"shadow", "-c", file, "--csv", "flag.csv", "--json"}, "file.json", "flag.csv", true},
		{"no flags", []string{"shadow", "-c", file}, "file.json", "file.csv", false},
		{"CSV to stdout", []string{"plain", "-c", file, "--csv", "-"}, "file.json", "-", false},
		{"flag before the command that takes it", []string{"--csv", "early.csv", "plain", "-c", file}, "file.json", "early.csv", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p probe
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), probeRoot(&p, &stdout, &stderr, nil), tc.args, &stderr)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			if p.cfg.Report.JSON != tc.wantJSON || p.cfg.Report.CSV != tc.wantCSV || p.jsonFlag != tc.wantBool {
				t.Errorf("report.json=%q report.csv=%q --json=%v; want %q %q %v",
					p.cfg.Report.JSON, p.cfg.Report.CSV, p.jsonFlag, tc.wantJSON, tc.wantCSV, tc.wantBool)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, "pipeline:\n  output: joined\n")
	tests := []struct {
		name    string
		args    []string
		result  error
		code    int
		stderr  string
		wantRan bool
	}{
		{"ok", []string{"plain"}, nil, exitOK, "", true},
		{"findings without message", []string{"plain"}, withCode(exitFindings, nil), exitFindings, "", true},
		{"findings with message", []string{"plain"}, withCode(exitFindings, errors.New("3 findings")), exitFindings, "lossaudit: 3 findings\n", true},
		{"plain error is incomplete", []string{"plain"}, errors.New("reading t[0] at 5: connection refused"), exitIncomplete,
			"lossaudit: reading t[0] at 5: connection refused\n", true},
		{"wrapped config error is usage", []string{"plain"}, fmt.Errorf("building pipeline: %w", &config.Error{Key: "pipeline.output", Msg: "must name the output topic"}),
			exitUsage, "lossaudit: building pipeline: pipeline.output: must name the output topic\n", true},
		{"config error is located in the file", []string{"plain", "-c", file},
			fmt.Errorf("building pipeline: %w", &config.Error{Key: "pipeline.output", Msg: `topic "joined" does not exist`}),
			exitUsage, "lossaudit: building pipeline: " + file + ":2: pipeline.output: topic \"joined\" does not exist\n", true},
		{"config error is located at the flag", []string{"plain", "-c", file, "--brokers", "h:1"},
			&config.Error{Key: "kafka.brokers", Msg: "no broker answered"},
			exitUsage, "lossaudit: --brokers: no broker answered\n", true},
		{"explicit incomplete", []string{"plain"}, withCode(exitIncomplete, errors.New("store unusable")), exitIncomplete, "lossaudit: store unusable\n", true},
		{"bad broker flag", []string{"shadow", "--brokers", "h1:9092,h2"}, nil, exitUsage,
			"lossaudit: --brokers: \"h2\" is not a host:port address: missing port in address\n", true},
		{"unexpected argument", []string{"plain", "extra"}, nil, exitUsage, "lossaudit: unknown command \"extra\" for \"lossaudit plain\"\n", false},
		{"bool flag given a value", []string{"shadow", "--json=maybe"}, nil, exitUsage,
			"lossaudit: invalid argument \"maybe\" for \"--json\" flag: strconv.ParseBool: parsing \"maybe\": invalid syntax\n", false},
		{"flag the command does not take", []string{"shadow", "--json", "--from", "-1h"}, nil, exitUsage, "lossaudit: unknown flag: --from\n", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p probe
			var stdout, stderr bytes.Buffer
			code := execute(context.Background(), probeRoot(&p, &stdout, &stderr, tc.result), tc.args, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if stderr.String() != tc.stderr {
				t.Errorf("stderr = %q\nwant     %q", stderr.String(), tc.stderr)
			}
			if p.ran != tc.wantRan {
				t.Errorf("command ran = %v, want %v", p.ran, tc.wantRan)
			}
		})
	}
}

func TestEnvReachesCommands(t *testing.T) {
	clearEnv(t)
	t.Setenv("LOSSAUDIT_KAFKA_BROKERS", "e1:9092,e2:9092")
	t.Setenv("LOSSAUDIT_STORE_DIR", "/env/store")
	var p probe
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), probeRoot(&p, &stdout, &stderr, nil), []string{"plain", "--store-dir", "/flag/store"}, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if got := strings.Join(p.cfg.Kafka.Brokers, ","); got != "e1:9092,e2:9092" || p.cfg.Store.Dir != "/flag/store" {
		t.Errorf("brokers %q store %q", got, p.cfg.Store.Dir)
	}
}

// TestSignalAfterTheWorkIsDone: a signal that arrives while a command
// finishes does not turn a concluded outcome (a verdict, reports written)
// into "stopped, nothing written"; work cut short exits 128+signal with
// the line saying what stands.
func TestSignalAfterTheWorkIsDone(t *testing.T) {
	for _, tt := range []struct {
		name   string
		ret    error
		code   int
		stderr string
	}{
		{name: "partial verdict", ret: concluded(exitIncomplete, nil), code: exitIncomplete, stderr: ""},
		{name: "reports written, state not committed", ret: concluded(exitIncomplete, errors.New("the step's reports were written")),
			code: exitIncomplete, stderr: "lossaudit: the step's reports were written\n"},
		{name: "cut short", ret: withCode(exitIncomplete, context.Canceled), code: 143,
			stderr: "lossaudit: interrupted by SIGTERM: stopped; no report of this run was written, earlier reports and the store directory are as they were\n"},
		{name: "watch", ret: watchStopped{}, code: 143,
			stderr: "lossaudit: interrupted by SIGTERM: watch stopped; the reports and state of every completed step stand, a step cut short wrote nothing\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			cancel(&interrupted{sig: syscall.SIGTERM})
			var stderr bytes.Buffer
			g := &globalFlags{ignoreEnv: testbedenv.Is, flags: map[string][]string{}}
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return tt.ret }}
			code := execute(ctx, buildRoot(g, io.Discard, &stderr, cmd), []string{"x"}, &stderr)
			if code != tt.code || stderr.String() != tt.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}
