package testbedenv_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

func TestTestbedVariablesAreAllowed(t *testing.T) {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, config.EnvPrefix+"_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	for _, name := range append(testbedenv.Names(), "LOSSAUDIT_TESTBED_KEEP", "LOSSAUDIT_TESTBED_ANYTHING") {
		t.Setenv(name, "1")
	}
	if _, err := config.Load(config.LoadOptions{IgnoreEnv: testbedenv.Is}); err != nil {
		t.Fatalf("Load with the test bed's variables set: %v", err)
	}
	_, err := config.Load(config.LoadOptions{})
	if err == nil || !strings.Contains(err.Error(), "is not a lossaudit setting") {
		t.Fatalf("Load without IgnoreEnv: %v, want the variables refused", err)
	} else if !strings.HasPrefix(err.Error(), "LOSSAUDIT_") {
		t.Errorf("error %q does not start with the variable", err)
	}
}

// TestTestbedVariablesAreListed: every LOSSAUDIT_ name the repository's
// code and scripts use is a key's variable or a test bed variable, so that
// Load never rejects an environment the test bed sets up.
func TestTestbedVariablesAreListed(t *testing.T) {
	known := map[string]bool{}
	for _, k := range config.Keys() {
		known[config.EnvName(k)] = true
	}
	name := regexp.MustCompile(`LOSSAUDIT_[A-Z0-9_]*[A-Z0-9]`)
	root := "../.."
	var unknown []string
	reported := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == ".cache" || n == "node_modules" || n == "target" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		// Tests of config and the CLI spell unknown variables on purpose.
		if (strings.HasPrefix(rel, "config/") || strings.HasPrefix(rel, "cmd/")) && strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		if ext := filepath.Ext(rel); ext != ".go" && ext != ".sh" && ext != ".md" && rel != filepath.Join(".ci", "run") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, n := range name.FindAllString(string(data), -1) {
			// testbedenv.Is(n+"_"): the prefix LOSSAUDIT_TESTBED_ itself.
			if !known[n] && !testbedenv.Is(n) && !testbedenv.Is(n+"_") && !reported[n] {
				reported[n] = true
				unknown = append(unknown, n+" ("+rel+")")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) > 0 {
		t.Errorf("variables neither configuration keys nor in testbedenv.Names: %s", strings.Join(unknown, ", "))
	}
}

func TestStrip(t *testing.T) {
	got := testbedenv.Strip([]string{"PATH=/bin", "LOSSAUDIT_REAL_KAFKA=0", "LOSSAUDIT_TESTBED_CRASH_AT=stepped", "LOSSAUDIT_KAFKA_BROKERS=h:1", "LOSSAUDIT_PROPERTY_SEEDS=3"})
	want := []string{"PATH=/bin", "LOSSAUDIT_KAFKA_BROKERS=h:1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Strip = %q, want %q", got, want)
	}
}
