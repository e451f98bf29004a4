package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// newVersionCmd returns `lossaudit version`: the module version and the
// VCS revision the binary was built from.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version and the VCS revision lossaudit was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "lossaudit %s\n", version())
			return err
		},
	}
}

// buildVersion and buildCommit are set by release builds
// (-ldflags "-X main.buildVersion=v1.2.0 -X main.buildCommit=<sha>",
// .goreleaser.yaml); when empty, the build information Go records (module
// version, vcs.revision) says it.
var buildVersion, buildCommit string

// version is the module version and VCS revision the binary was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{GoVersion: runtime.Version()}
	}
	return describeBuild(withRelease(bi, buildVersion, buildCommit))
}

// withRelease returns bi with the version and commit a release build set
// (either may be empty: Go's own record stays).
func withRelease(bi *debug.BuildInfo, version, commit string) *debug.BuildInfo {
	if version == "" && commit == "" {
		return bi
	}
	out := *bi
	if version != "" {
		out.Main.Version = version
	}
	if commit != "" {
		out.Settings = []debug.BuildSetting{{Key: "vcs.revision", Value: commit}}
		for _, s := range bi.Settings {
			if s.Key == "vcs.modified" {
				out.Settings = append(out.Settings, s)
			}
		}
	}
	return &out
}

// describeBuild renders build information as `<module version> (<revision>[, modified][, <go version>])`, e.g.
// `v1.2.0 (revision 3f2a9c1d0e4b, go1.26.8)` or `(devel) (revision 3f2a9c1d0e4b, modified, go1.26.8)`.
func describeBuild(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		rev = "unknown"
	}
	detail := "revision " + rev + modified
	if bi.GoVersion != "" {
		detail += ", " + bi.GoVersion
	}
	return v + " (" + detail + ")"
}
