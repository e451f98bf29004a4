package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/testbed/poll"
)

// prometheusBin is the Prometheus server the watch scenarios run their
// alert rules on: Debian's prometheus package (.ci/run installs it).
const prometheusBin = "/usr/bin/prometheus"

// rulesFile is the alert rules operators load, relative to this package.
const rulesFile = "../../deploy/prometheus/lossaudit.rules.yml"

// staleThreshold is the one expression of rulesFile that depends on the
// interval: LossauditRunsStale's "about three times the interval".
const staleThreshold = "time() - lossaudit_last_success_timestamp_seconds > 3600"

// prometheus is a Prometheus server on loopback scraping one `lossaudit
// watch` every second, with deploy/prometheus's rules evaluated every
// second.
type prometheus struct {
	t    *testing.T
	addr string
	log  string
}

// startPrometheus starts Prometheus scraping target (host:port) with the
// rules of deploy/prometheus, LossauditRunsStale's threshold set to three
// watch intervals as the rules file says to. Without Prometheus it returns
// nil outside CI (the alert checks are skipped, saying so) and fails in CI.
func startPrometheus(t *testing.T, dir, target string) (*prometheus, error) {
	if _, err := os.Stat(prometheusBin); err != nil {
		if os.Getenv("CI") != "" {
			return nil, fmt.Errorf("%s is not installed, and CI must run the alert checks (.ci/run installs Debian's prometheus package)", prometheusBin)
		}
		t.Logf("%s is not installed (apt-get install prometheus): the alert checks are skipped", prometheusBin)
		return nil, nil
	}
	dir = filepath.Join(dir, "prometheus")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		return nil, err
	}
	if n := strings.Count(string(rules), staleThreshold); n != 1 {
		return nil, fmt.Errorf("%s: %q appears %d times, want once", rulesFile, staleThreshold, n)
	}
	stale := fmt.Sprintf("time() - lossaudit_last_success_timestamp_seconds > %d", int((3 * watchInterval).Seconds()))
	if err := os.WriteFile(filepath.Join(dir, "lossaudit.rules.yml"), []byte(strings.Replace(string(rules), staleThreshold, stale, 1)), 0o644); err != nil {
		return nil, err
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [lossaudit.rules.yml]
scrape_configs:
  - job_name: lossaudit
    static_configs: [{targets: [%q]}]
`, target)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &prometheus{t: t, addr: ln.Addr().String(), log: filepath.Join(dir, "prometheus.log")}
	ln.Close()
	logf, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(prometheusBin, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+p.addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		if t.Failed() {
			p.logHistory()
		}
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			b, _ := os.ReadFile(p.log)
			t.Logf("prometheus log:\n%s", b)
		}
	})
	// Ready once the rules are loaded and the target is scraped.
	err = poll.Until(context.Background(), time.Minute, 200*time.Millisecond, "Prometheus scraping lossaudit watch", func() bool {
		var r struct {
			Data struct {
				ActiveTargets []struct {
					Health string `json:"health"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if p.get("/api/v1/targets", &r) != nil {
			return false
		}
		return len(r.Data.ActiveTargets) == 1 && r.Data.ActiveTargets[0].Health == "up"
	})
	return p, err
}

// logHistory logs, for a failed test, how the scrapes went and when the
// alerts fired over the last 15 minutes.
func (p *prometheus) logHistory() {
	for _, q := range []string{"count_over_time(up[15m])", "sum_over_time(up[15m])",
		`count_over_time(lossaudit_last_success_timestamp_seconds[15m])`,
		`count_over_time(ALERTS{alertstate="firing"}[15m])`} {
		var r struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
					Value  []any             `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		err := p.get("/api/v1/query?query="+url.QueryEscape(q), &r)
		p.t.Logf("prometheus %s: %+v %v", q, r.Data.Result, err)
	}
}

func (p *prometheus) get(path string, v any) error {
	resp, err := http.Get("http://" + p.addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, b)
	}
	return json.Unmarshal(b, v)
}

// alert is one alert of /api/v1/alerts.
type alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
	Value  string            `json:"value"`
}

// alerts returns the alerts named name in the given state (firing or pending).
func (p *prometheus) alerts(name, state string) ([]alert, error) {
	var r struct {
		Data struct {
			Alerts []alert `json:"alerts"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/alerts", &r); err != nil {
		return nil, err
	}
	var out []alert
	for _, a := range r.Data.Alerts {
		if a.Labels["alertname"] == name && a.State == state {
			out = append(out, a)
		}
	}
	return out, nil
}

// waitAlerts waits until the firing alerts named name are exactly want
// (by the label key, e.g. "changelog/missing", to the alert's value),
// failing the test at the deadline with what Prometheus last answered.
func (p *prometheus) waitAlerts(name string, d time.Duration, key func(a alert) string, want map[string]string) {
	p.t.Helper()
	p.waitFiring(name, d, fmt.Sprint(want), func(as []alert) (string, bool) {
		got := map[string]string{}
		for _, a := range as {
			v, err := strconv.ParseFloat(a.Value, 64)
			if err != nil {
				return fmt.Sprintf("alert %v: value %q: %v", a.Labels, a.Value, err), false
			}
			got[key(a)] = fmt.Sprint(v)
		}
		return fmt.Sprint(got), maps.Equal(got, want)
	})
}

// waitFiring waits until ok accepts the firing alerts named name, failing
// the test at the deadline with what ok last said of them.
func (p *prometheus) waitFiring(name string, d time.Duration, what string, ok func(as []alert) (string, bool)) {
	p.t.Helper()
	var said string
	err := poll.Until(context.Background(), d, 250*time.Millisecond, name+" firing as "+what, func() bool {
		as, err := p.alerts(name, "firing")
		if err != nil {
			said = err.Error()
			return false
		}
		var done bool
		said, done = ok(as)
		return done
	})
	if err != nil {
		p.t.Fatalf("prometheus: %v; last: %s", err, said)
	}
}

// lossAlerts is what LossauditLossFound should say for a loss report
// (header first): per stage and kind, the number of rows, as the value.
func lossAlerts(rows [][]string) map[string]string {
	n := map[string]int{}
	for _, r := range rows[1:] {
		n[r[1]+"/"+r[0]]++
	}
	out := map[string]string{}
	for _, k := range slices.Sorted(maps.Keys(n)) {
		out[k] = fmt.Sprint(n[k])
	}
	return out
}

func stageKind(a alert) string { return a.Labels["stage"] + "/" + a.Labels["kind"] }
