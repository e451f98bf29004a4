package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestRelativeTimes(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		file  string
		env   map[string]string
		flags []string
		from  time.Time
		to    time.Time
	}{
		{name: "negative duration", flags: []string{"--from=-2h"}, from: now.Add(-2 * time.Hour)},
		{name: "negative duration as the next argument", flags: []string{"--from", "-2h"}, from: now.Add(-2 * time.Hour)},
		{name: "unsigned duration is before now too", flags: []string{"--from", "30m"}, from: now.Add(-30 * time.Minute)},
		{name: "compound duration", flags: []string{"--from", "1h30m", "--to", "now"}, from: now.Add(-90 * time.Minute), to: now},
		{name: "now in any case", env: map[string]string{"LOSSAUDIT_WINDOW_TO": "NOW"}, to: now},
		{name: "relative in the file", file: "window:\n  from: -24h\n  to: 1h\n", from: now.Add(-24 * time.Hour), to: now.Add(-time.Hour)},
		{name: "absolute still works", flags: []string{"--from", "2026-11-28T00:00:00+01:00"}, from: time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)},
		{name: "flag over file", file: "window:\n  from: 2026-01-01T00:00:00Z\n", flags: []string{"--from", "-1h"}, from: now.Add(-time.Hour)},
		{name: "empty is unbounded", env: map[string]string{"LOSSAUDIT_WINDOW_FROM": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			opts := LoadOptions{Flags: globalFlagSet(t, tc.flags...), Now: func() time.Time { return now }}
			if tc.file != "" {
				opts.File = writeFile(t, t.TempDir(), "audit.yaml", tc.file)
			}
			c, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			if !c.Window.From.Equal(tc.from) || !c.Window.To.Equal(tc.to) {
				t.Errorf("window = [%s, %s), want [%s, %s)", c.Window.From, c.Window.To, tc.from, tc.to)
			}
		})
	}
}

func TestCSVToStdout(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		name  string
		file  string
		flags []string
	}{
		{"flag", "", []string{"--csv", "-"}},
		{"file", "report:\n  csv: \"-\"\n", nil},
	} {
		opts := LoadOptions{Flags: globalFlagSet(t, tc.flags...)}
		if tc.file != "" {
			opts.File = writeFile(t, t.TempDir(), "audit.yaml", tc.file)
		}
		c, err := Load(opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if c.Report.CSV != "-" {
			t.Errorf("%s: report.csv = %q, want -", tc.name, c.Report.CSV)
		}
	}
}

func TestCommandConfigFlag(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	props := writeFile(t, dir, "client.properties", "bootstrap.servers=p1:9092,p2:9092\n")
	file := writeFile(t, dir, "audit.yaml", "kafka:\n  client_properties: /nonexistent\n")
	c, err := Load(LoadOptions{File: file, Flags: globalFlagSet(t, "--command-config", props)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.ClientProperties != props || strings.Join(c.Kafka.Brokers, ",") != "p1:9092,p2:9092" {
		t.Errorf("client_properties %q brokers %q", c.Kafka.ClientProperties, c.Kafka.Brokers)
	}
}

// TestConfigFlagNamesTheFile: Load takes the file from --config when
// LoadOptions.File is empty.
func TestConfigFlagNamesTheFile(t *testing.T) {
	clearEnv(t)
	file := writeFile(t, t.TempDir(), "audit.yaml", "store:\n  dir: /from/file\n")
	c, err := Load(LoadOptions{Flags: globalFlagSet(t, "-c", file)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.Dir != "/from/file" {
		t.Errorf("store.dir = %q", c.Store.Dir)
	}
}

func TestFlagTable(t *testing.T) {
	keys := Keys()
	seen := map[string]bool{}
	for _, f := range Flags() {
		if seen[f.Name] {
			t.Errorf("flag %s listed twice", f.Name)
		}
		seen[f.Name] = true
		if f.Name != ConfigFlag && !slices.Contains(keys, f.Key) {
			t.Errorf("flag --%s overrides %q, which is not a key", f.Name, f.Key)
		}
		if f.Usage == "" {
			t.Errorf("flag --%s has no usage text", f.Name)
		}
	}
	if err := AddFlags(pflag.NewFlagSet("x", pflag.ContinueOnError), "brokers", "nope"); err == nil || err.Error() != `config.AddFlags: no flag "nope"` {
		t.Errorf("AddFlags of an unknown flag: %v", err)
	}
}

// TestFlagNotRegisteredIsIgnored: Load reads only flags AddFlags
// registered; a command's own --json (a boolean, scan) or --from of
// another meaning is never taken for a key.
func TestFlagNotRegisteredIsIgnored(t *testing.T) {
	clearEnv(t)
	fs := pflag.NewFlagSet("scan", pflag.ContinueOnError)
	fs.Bool("json", false, "")
	fs.String("from", "", "")
	if err := fs.Parse([]string{"--json", "--from", "garbage"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{Flags: fs})
	if err != nil {
		t.Fatal(err)
	}
	if c.Report.JSON != "" || !c.Window.From.IsZero() {
		t.Errorf("report.json = %q, window.from = %s; want both unset", c.Report.JSON, c.Window.From)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		e    Error
		want string
	}{
		{Error{File: "audit.yaml", Line: 12, Key: "kafka.concurrency", Msg: "m"}, "audit.yaml:12: kafka.concurrency: m"},
		{Error{File: "audit.yaml", Key: "kafka.concurrency", Msg: "m"}, "audit.yaml: kafka.concurrency: m"},
		{Error{File: "audit.yaml", Msg: "m"}, "audit.yaml: m"},
		{Error{Env: "LOSSAUDIT_KAFKA_CONCURRENCY", Key: "kafka.concurrency", Msg: "m"}, "LOSSAUDIT_KAFKA_CONCURRENCY: m"},
		{Error{Env: "LOSSAUDIT_KAFKA_BROKERS", Key: "kafka.brokers[2]", Msg: "m"}, "LOSSAUDIT_KAFKA_BROKERS: m"},
		{Error{Env: "LOSSAUDIT_PIPELINE_INPUTS", Key: "pipeline.inputs[0].rekey", Msg: "m"}, "LOSSAUDIT_PIPELINE_INPUTS: pipeline.inputs[0].rekey: m"},
		{Error{Flag: "from", Key: "window.from", Msg: "m"}, "--from: m"},
		{Error{Flag: "from", Key: "window.to", Msg: "m"}, "--from: window.to: m"},
		{Error{Flag: "command-config", Key: "kafka.client_properties", Msg: "m"}, "--command-config: m"},
		{Error{Key: "pipeline.output", Msg: "m"}, "pipeline.output: m"},
		{Error{Msg: "m"}, "m"},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.e, got, tc.want)
		}
	}
}

// TestLocate: an *Error created by code that received a loaded Config
// (the pipeline model) is located where the value was written.
func TestLocate(t *testing.T) {
	clearEnv(t)
	file := writeFile(t, t.TempDir(), "audit.yaml", `pipeline:
  application_id: app
  output: out
  inputs:
    - name: a
      topic: ta
      rekey: customerID
`)
	t.Setenv("LOSSAUDIT_SCHEMA_AVSC_DIR", os.TempDir())
	c, err := Load(LoadOptions{File: file, Flags: globalFlagSet(t, "--brokers", "h:1")})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ key, want string }{
		{"pipeline.inputs[0].rekey", file + ":7: pipeline.inputs[0].rekey: m"},
		{"pipeline.inputs[0].changelog_topic", file + ":5: pipeline.inputs[0].changelog_topic: m"},
		{"pipeline.output", file + ":3: pipeline.output: m"},
		{"schema.avsc_dir", "LOSSAUDIT_SCHEMA_AVSC_DIR: m"},
		{"kafka.brokers", "--brokers: m"},
		{"schema", file + ": schema: m"},
	}
	for _, tc := range tests {
		err := c.Locate(&Error{Key: tc.key, Msg: "m"})
		if err.Error() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.key, err, tc.want)
		}
	}
	// A wrapped *Error: the text says where, and the *Error is still found.
	wrapped := c.Locate(fmt.Errorf("building the pipeline: %w", &Error{Key: "pipeline.output", Msg: "m"}))
	if got, want := wrapped.Error(), "building the pipeline: "+file+":3: pipeline.output: m"; got != want {
		t.Errorf("wrapped: got %q, want %q", got, want)
	}
	var ce *Error
	if !errors.As(wrapped, &ce) || ce.Line != 3 {
		t.Errorf("wrapped: *Error not found or not located: %#v", ce)
	}
	// An error that names its source keeps it.
	if got := c.Locate(&Error{File: "other.yaml", Key: "pipeline.output", Msg: "m"}).Error(); got != "other.yaml: pipeline.output: m" {
		t.Errorf("located error moved: %q", got)
	}
	// A Config built in code has no sources.
	var plain Config
	if got := plain.Locate(&Error{Key: "pipeline.output", Msg: "m"}).Error(); got != "pipeline.output: m" {
		t.Errorf("plain config: %q", got)
	}
}
