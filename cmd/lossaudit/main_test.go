package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/lossaudit/lossaudit/config"
)

// clearEnv unsets every LOSSAUDIT_ variable for the test's duration.
func clearEnv(t *testing.T) {
	t.Helper()
	for key := range config.Defaults() {
		name := config.EnvName(key)
		if _, ok := os.LookupEnv(name); ok {
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

// TestRunRealTree runs the real command tree in-process.
func TestRunRealTree(t *testing.T) {
	clearEnv(t)
	badBroker := writeConfig(t, "kafka:\n  brokers: [\"nohost\"]\n")
	unknownKey := writeConfig(t, "kafka:\n  brokerz: [\"h:9092\"]\n")
	tests := []struct {
		name       string
		args       []string
		code       int
		stderr     string // exact, %F% replaced by the config path
		stdoutPart string
	}{
		{name: "help", args: []string{"--help"}, code: exitOK, stdoutPart: "Usage:"},
		{name: "subcommand help", args: []string{"scan", "--help"}, code: exitOK, stdoutPart: "--store-dir"},
		{name: "unknown command", args: []string{"bogus"}, code: exitUsage,
			stderr: "lossaudit: unknown command \"bogus\" for \"lossaudit\"\n"},
		{name: "unknown flag", args: []string{"scan", "--nope"}, code: exitUsage, stderr: "lossaudit: unknown flag: --nope\n"},
		{name: "flag without value", args: []string{"scan", "--from"}, code: exitUsage,
			stderr: "lossaudit: flag needs an argument: --from\n"},
		{name: "bad broker in config", args: []string{"scan", "-c", badBroker}, code: exitUsage,
			stderr: "lossaudit: config: kafka.brokers[0]: \"nohost\" is not a host:port address: missing port in address\n"},
		{name: "unknown key, scan --json", args: []string{"scan", "--json", "--config", unknownKey}, code: exitUsage,
			stderr: "lossaudit: config: kafka.brokerz: unknown key in " + unknownKey + " (did you mean kafka.brokers?)\n"},
		{name: "bad --from", args: []string{"scan", "--from", "yesterday"}, code: exitUsage,
			stderr: "lossaudit: config: window.from: \"yesterday\" is not an RFC 3339 time like 2026-11-29T10:15:00Z\n"},
		{name: "missing config file", args: []string{"scan", "-c", "/nonexistent/audit.yaml"}, code: exitUsage,
			stderr: "lossaudit: config: /nonexistent/audit.yaml: cannot read config file: no such file or directory\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
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

// probe is a test command tree: "shadow" has its own boolean --json like
// scan, "plain" inherits the global --json report path; both load the
// configuration and then return whatever err says.
type probe struct {
	cfg      *config.Config
	jsonFlag bool
	ran      bool
}

func probeRoot(p *probe, stdout, stderr *bytes.Buffer, result error) *cobra.Command {
	g := &globalFlags{}
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

func TestGlobalFlagsAndShadowedJSON(t *testing.T) {
	clearEnv(t)
	file := writeConfig(t, "report:\n  json: file.json\n  csv: file.csv\n")
	tests := []struct {
		name     string
		args     []string
		wantJSON string // report.json
		wantCSV  string
		wantBool bool
	}{
		{"global --json is a report path", []string{"plain", "-c", file, "--json", "flag.json"}, "flag.json", "file.csv", false},
		{"local --json is a bool and leaves report.json alone", []string{"shadow", "-c", file, "--json"}, "file.json", "file.csv", true},
		{"other globals still apply under shadow", []string{"shadow", "-c", file, "--csv", "flag.csv", "--json"}, "file.json", "flag.csv", true},
		{"no flags", []string{"shadow", "-c", file}, "file.json", "file.csv", false},
		{"global flag before the command", []string{"--csv", "early.csv", "plain", "-c", file}, "file.json", "early.csv", false},
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
			exitUsage, "lossaudit: building pipeline: config: pipeline.output: must name the output topic\n", true},
		{"explicit incomplete", []string{"plain"}, withCode(exitIncomplete, errors.New("store unusable")), exitIncomplete, "lossaudit: store unusable\n", true},
		{"bad broker flag", []string{"shadow", "--brokers", "h1:9092,h2"}, nil, exitUsage,
			"lossaudit: config: kafka.brokers[1]: \"h2\" is not a host:port address: missing port in address\n", true},
		{"unexpected argument", []string{"plain", "extra"}, nil, exitUsage, "lossaudit: unknown command \"extra\" for \"lossaudit plain\"\n", false},
		{"bool flag given a value", []string{"shadow", "--json=maybe"}, nil, exitUsage,
			"lossaudit: invalid argument \"maybe\" for \"--json\" flag: strconv.ParseBool: parsing \"maybe\": invalid syntax\n", false},
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
