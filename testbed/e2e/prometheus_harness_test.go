package e2e

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/metrics"
)

// TestPrometheusHarness: the real Prometheus of the watch scenarios loads
// deploy/prometheus's rules and scrapes the metrics lossaudit serves:
// LossauditLossFound fires for a run with findings and resolves after a
// clean one; LossauditRunsStale fires when the last completed run is
// older than three watch intervals. No broker: the metrics set is fed results directly.
func TestPrometheusHarness(t *testing.T) {
	m := metrics.New()
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	prom, err := startPrometheus(t, t.TempDir(), strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	if prom == nil {
		t.Skip("no Prometheus")
	}
	res := &finding.Result{Rows: []finding.Row{
		{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "a", Key: []byte("k1")},
		{Kind: finding.Missing, Stage: finding.StageChangelog, Input: "b", Key: []byte("k1")},
		{Kind: finding.Stale, Stage: finding.StageOutput, Input: "a", Key: []byte("k2")},
	}}
	m.Completed(res, time.Now())
	prom.waitAlerts("LossauditLossFound", time.Minute, stageKind, map[string]string{"changelog/missing": "2", "output/stale": "1"})
	m.Completed(&finding.Result{}, time.Now())
	prom.waitAlerts("LossauditLossFound", time.Minute, stageKind, map[string]string{})
	as, err := prom.alerts("LossauditRunsStale", "firing")
	if err != nil || len(as) != 0 {
		t.Fatalf("LossauditRunsStale after a run that just completed: %v %v", as, err)
	}
	m.Completed(&finding.Result{}, time.Now().Add(-4*watchInterval))
	prom.waitFiring("LossauditRunsStale", time.Minute, "one alert, severity warning", func(as []alert) (string, bool) {
		return fmt.Sprint(as), len(as) == 1 && as[0].Labels["severity"] == "warning" && as[0].Labels["job"] == "lossaudit"
	})
}
