// Package deploy holds the tests of what operators deploy: the Prometheus
// rules (promtool), the Helm chart (helm) and the runbook the alerts link
// to. The dashboard's PromQL is parsed by the module in deploy/grafana,
// which keeps Prometheus's own parser out of lossaudit's go.mod.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// tool returns the path of an external command the test needs. Outside CI
// a missing tool skips the test, naming how to install it; in CI (CI set,
// as .ci/run runs) it fails: .ci/run installs every one.
func tool(t *testing.T, name, install string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is not installed, and CI must run this test (.ci/run installs it: %s)", name, install)
	}
	t.Skipf("%s is not installed (%s); skipping", name, install)
	return ""
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
	return string(out)
}

const (
	rulesFile     = "prometheus/lossaudit.rules.yml"
	rulesTestFile = "prometheus/tests/lossaudit.test.yml"
	promtoolHint  = "apt-get install prometheus"
)

// TestPromtoolRules: promtool accepts the rules and their unit tests pass
// (each alert firing and not firing).
func TestPromtoolRules(t *testing.T) {
	promtool := tool(t, "promtool", promtoolHint)
	run(t, promtool, "check", "rules", rulesFile)
	out := run(t, promtool, "test", "rules", rulesTestFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Fatalf("promtool test rules:\n%s", out)
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

// TestRulesFollowMixinConventions: one name prefix, the mixin severities,
// the three annotations, a runbook section for every alert, and a unit
// test of every alert both firing and not firing.
func TestRulesFollowMixinConventions(t *testing.T) {
	rf := readRules(t)
	runbook, err := os.ReadFile("../docs/runbook.md")
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(rulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	var suite struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	if err := yaml.Unmarshal(tests, &suite); err != nil {
		t.Fatalf("%s: %v", rulesTestFile, err)
	}
	fires, silent := map[string]bool{}, map[string]bool{}
	for _, tc := range suite.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				silent[a.Alertname] = true
			}
		}
	}
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (\S+)$`).FindAllStringSubmatch(string(runbook), -1) {
		headings[strings.ToLower(m[1])] = true
	}
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				if !regexp.MustCompile(`^[a-z_]+:lossaudit_[a-z_]+:[a-z0-9_]+$`).MatchString(r.Record) {
					t.Errorf("recording rule %s is not named level:lossaudit_metric:operations", r.Record)
				}
				continue
			}
			alerts = append(alerts, r.Alert)
			if !strings.HasPrefix(r.Alert, "Lossaudit") {
				t.Errorf("alert %s does not start with Lossaudit", r.Alert)
			}
			if s := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
				t.Errorf("alert %s has severity %q, want critical, warning or info", r.Alert, s)
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("alert %s has no %s annotation", r.Alert, a)
				}
			}
			anchor := strings.ToLower(r.Alert)
			if want := "https://github.com/lossaudit/lossaudit/blob/main/docs/runbook.md#" + anchor; r.Annotations["runbook_url"] != want {
				t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
			}
			if !headings[anchor] {
				t.Errorf("alert %s has no section in docs/runbook.md", r.Alert)
			}
			if !strings.Contains(string(runbook), "[`"+r.Alert+"`](#"+anchor+")") {
				t.Errorf("alert %s is not in docs/runbook.md's table", r.Alert)
			}
			if !fires[r.Alert] || !silent[r.Alert] {
				t.Errorf("alert %s: %s tests it firing: %v, not firing: %v", r.Alert, rulesTestFile, fires[r.Alert], silent[r.Alert])
			}
		}
	}
	want := []string{"LossauditLossFound", "LossauditLossSuspected", "LossauditInconclusive", "LossauditRunsFailing",
		"LossauditRunsStale", "LossauditPendingGrowing"}
	if !slices.Equal(alerts, want) {
		t.Errorf("alerts %v, want %v", alerts, want)
	}
}
