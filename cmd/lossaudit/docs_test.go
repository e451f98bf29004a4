package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/report"
	"github.com/lossaudit/lossaudit/config"
)

// repoRoot is the module's root, from this package's directory.
const repoRoot = "../.."

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReferenceListsEveryFlagKeyAndKind: docs/reference.md is the
// contract; whatever the code accepts or reports must be in it.
func TestReferenceListsEveryFlagKeyAndKind(t *testing.T) {
	ref := readDoc(t, "docs/reference.md")
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() != "lossaudit" && !strings.Contains(ref, "`lossaudit "+c.Name()) {
			t.Errorf("command %q is not in docs/reference.md", c.Name())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if !strings.Contains(ref, "`--"+f.Name) {
				t.Errorf("flag --%s of %s is not in docs/reference.md", f.Name, c.Name())
			}
			if f.Shorthand != "" && !strings.Contains(ref, "`-"+f.Shorthand) {
				t.Errorf("flag -%s of %s is not in docs/reference.md", f.Shorthand, c.Name())
			}
		})
		for _, sub := range c.Commands() {
			if sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub)
			}
		}
	}
	walk(newTestRootCmd(&bytes.Buffer{}, &bytes.Buffer{}))
	for _, k := range config.Keys() {
		if !strings.Contains(ref, "`"+k+"`") {
			t.Errorf("configuration key %s is not in docs/reference.md", k)
		}
	}
	var words []string
	for _, k := range slices.Concat(finding.Kinds, finding.SinkKinds, finding.LedgerKinds) {
		words = append(words, string(k))
	}
	for _, k := range finding.PartitionKinds {
		words = append(words, string(k))
	}
	for _, r := range finding.InconclusiveReasons {
		words = append(words, string(r))
	}
	for _, s := range slices.Concat(finding.Stages, finding.CompareStages) {
		words = append(words, string(s))
	}
	words = append(words, report.VerdictClean, report.VerdictFindings, report.VerdictPartial, report.VerdictInconclusive)
	words = append(words, report.CSVHeader...)
	for _, w := range words {
		if !strings.Contains(ref, "`"+w+"`") {
			t.Errorf("%q is not in docs/reference.md", w)
		}
	}
	for _, code := range []int{exitOK, exitFindings, exitUsage, exitIncomplete, 130} {
		if !strings.Contains(ref, fmt.Sprintf("| `%d` |", code)) {
			t.Errorf("exit code %d is not in docs/reference.md", code)
		}
	}
}

// TestConfigurationDocsGiveEveryDefault: the table of docs/configuration.md
// shows each key with the default the code applies.
func TestConfigurationDocsGiveEveryDefault(t *testing.T) {
	doc := readDoc(t, "docs/configuration.md")
	for _, k := range config.Keys() {
		def := config.Defaults()[k]
		var want string
		switch d := def.(type) {
		case []string:
			want = strings.Join(d, ",")
		case []any:
			want = "[]"
		case map[string]string:
			want = "{}"
		case string:
			want = d
			if d == "" {
				want = `""`
			}
		default:
			want = fmt.Sprint(d)
		}
		row := fmt.Sprintf("| `%s` | `%s` |", k, want)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/configuration.md lacks the row %q", row)
		}
	}
}

// TestConfigurationDocsListTheDeclaredKeys: the table of
// docs/configuration.md has a row for each key Config declares (its struct
// tags, through config.Keys) and none for a key it does not, and each key
// that a flag overrides has that flag in docs/reference.md next to it.
func TestConfigurationDocsListTheDeclaredKeys(t *testing.T) {
	doc := readDoc(t, "docs/configuration.md")
	_, table, ok := strings.Cut(doc, "\n## Every key")
	if !ok {
		t.Fatal("docs/configuration.md has no section \"Every key\"")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(table, -1) {
		documented[m[1]] = true
	}
	declared := map[string]bool{}
	for _, k := range config.Keys() {
		declared[k] = true
		if !documented[k] {
			t.Errorf("docs/configuration.md lacks a row for %s", k)
		}
	}
	for k := range documented {
		if !declared[k] {
			t.Errorf("docs/configuration.md has a row for %s, which config does not declare", k)
		}
	}
	ref := readDoc(t, "docs/reference.md")
	for _, f := range config.Flags() {
		if f.Key != "" && !strings.Contains(ref, "`--"+f.Name) {
			t.Errorf("flag --%s (overrides %s) is not in docs/reference.md", f.Name, f.Key)
		}
	}
}

// TestDocLinksResolve: every relative link in the README and docs/ names a
// file of the repository, and no file names one that is not there.
func TestDocLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	docs = append(docs, filepath.Join(repoRoot, "README.md"))
	for _, d := range docs {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(d), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", d, target)
			}
		}
	}
	// Files the project once cited that are not part of it.
	gone := regexp.MustCompile(`DESIGN\.md|CONTRACT\.md|TEAM\.md|README-section\.md|seeds/0`)
	err := filepath.WalkDir(repoRoot, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			switch e.Name() {
			case ".git", ".cache", "target", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".sh", ".java", ".xml", ".yaml", ".yml":
		default:
			return nil
		}
		if strings.HasSuffix(p, "docs_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if loc := gone.FindIndex(b); loc != nil {
			t.Errorf("%s cites %s, which is not in the repository", p, b[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
