package config

import (
	"strings"
	"testing"
)

func TestReportHTML(t *testing.T) {
	tests := []struct {
		name string
		file string
		env  string
		flag string
		want string
	}{
		{name: "none by default"},
		{name: "file", file: "report:\n  html: file.html\n", want: "file.html"},
		{name: "environment over file", file: "report:\n  html: file.html\n", env: "env.html", want: "env.html"},
		{name: "flag over environment", file: "report:\n  html: file.html\n", env: "env.html", flag: "flag.html", want: "flag.html"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			var opts LoadOptions
			if tt.file != "" {
				opts.File = writeFile(t, t.TempDir(), "audit.yaml", tt.file)
			}
			if tt.env != "" {
				t.Setenv(EnvName("report.html"), tt.env)
			}
			var args []string
			if tt.flag != "" {
				args = []string{"--html", tt.flag}
			}
			opts.Flags = globalFlagSet(t, args...)
			c, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			if c.Report.HTML != tt.want {
				t.Errorf("report.html = %q, want %q", c.Report.HTML, tt.want)
			}
			if line := "report.html = " + tt.want + "\n"; !strings.Contains(c.Redacted(), line) {
				t.Errorf("Redacted lacks %q:\n%s", line, c.Redacted())
			}
		})
	}
}

// report.file_mode, report.redact_keys and report.redact_key_file: read,
// checked with errors naming the key, and the secret never printed.
func TestReportFileModeAndRedaction(t *testing.T) {
	dir := t.TempDir()
	secret := "s3cret-of-the-user-0123456789"
	good := writeFile(t, dir, "redact.key", secret+"\n")
	short := writeFile(t, dir, "short.key", "tooshort\n")
	tests := []struct {
		name     string
		file     string
		wantMode uint32
		wantKey  string
		err      string
	}{
		{name: "defaults", wantMode: 0o600},
		{name: "group readable", file: "report:\n  file_mode: \"0640\"\n", wantMode: 0o640},
		{name: "without the leading zero", file: "report:\n  file_mode: 640\n", wantMode: 0o640},
		{name: "not octal", file: "report:\n  file_mode: rw-r-----\n", err: "report.file_mode"},
		{name: "beyond 0777", file: "report:\n  file_mode: \"01777\"\n", err: "report.file_mode"},
		{name: "owner cannot write", file: "report:\n  file_mode: \"0400\"\n", err: "does not let the owner read and write"},
		{name: "redaction without a secret", file: "report:\n  redact_keys: true\n", err: "report.redact_keys: needs report.redact_key_file"},
		{name: "secret file missing", file: "report:\n  redact_keys: true\n  redact_key_file: " + dir + "/none\n", err: "report.redact_key_file"},
		{name: "secret too short", file: "report:\n  redact_keys: true\n  redact_key_file: " + short + "\n", err: "at least 16"},
		{name: "secret loaded without its newline", file: "report:\n  redact_keys: true\n  redact_key_file: " + good + "\n", wantMode: 0o600, wantKey: secret},
		{name: "a secret file alone redacts nothing", file: "report:\n  redact_key_file: " + good + "\n", wantMode: 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			opts := LoadOptions{Flags: globalFlagSet(t)}
			if tt.file != "" {
				opts.File = writeFile(t, t.TempDir(), "audit.yaml", tt.file)
			}
			c, err := Load(opts)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("the error shows the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if uint32(c.Report.FileMode) != tt.wantMode || string(c.Report.RedactKey) != tt.wantKey || c.Report.RedactKeys != (tt.wantKey != "") {
				t.Errorf("file mode %o, redact %v with key %q; want %o and %q", c.Report.FileMode, c.Report.RedactKeys, c.Report.RedactKey, tt.wantMode, tt.wantKey)
			}
			if strings.Contains(c.Redacted(), secret) {
				t.Errorf("Redacted shows the secret:\n%s", c.Redacted())
			}
		})
	}
}
