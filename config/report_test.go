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
