// Package grafana tests the Grafana dashboard lossaudit.json, and the
// PromQL of the Prometheus rules beside it, with Prometheus's own PromQL
// parser. It is a module of its own so that the parser's dependencies
// (github.com/prometheus/prometheus raises shared modules such as
// OpenTelemetry, golang.org/x/sys and snappy) stay out of lossaudit's
// go.mod: they are for this test only.
package grafana

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/metrics"
)

// exported returns the names of every metric lossaudit exports: what the
// metrics package's registry gathers after a completed reconcile step
// (every labelled family has a series then).
func exported(t *testing.T) map[string]bool {
	t.Helper()
	s := metrics.New()
	s.Completed(&finding.Result{Summary: finding.Summary{
		Inputs: map[string]*finding.InputCounts{"a": {Audited: 1, Pending: 1}},
		Step:   &finding.Step{Number: 2, Read: map[string]int64{"input": 1}},
	}}, time.Now())
	s.Failed(time.Now())
	var buf bytes.Buffer
	if err := s.Write(&buf); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(buf.String(), -1) {
		names[m[1]] = true
	}
	// The families the reference documents must all be there, so that a
	// family the registry leaves out until it has a series cannot hide.
	ref, err := os.ReadFile("../../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `(lossaudit_[a-z_]+)` \\|").FindAllStringSubmatch(string(ref), -1) {
		if !names[m[1]] {
			t.Errorf("docs/reference.md lists %s, which the metrics registry did not gather", m[1])
		}
	}
	if len(names) < 10 {
		t.Fatalf("the registry gathered only %v", names)
	}
	return names
}

// grafanaVars stand in for the variables Grafana replaces before a query
// reaches Prometheus.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h")

// metricNames parses expr with Prometheus's parser and returns the metric
// names its selectors name; a selector without a name is an error.
func metricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVars.Replace(expr))
	if err != nil {
		return nil, err
	}
	var names []string
	var bad error
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			if vs.Name == "" {
				bad = fmt.Errorf("selector %s names no metric", vs)
			}
			names = append(names, vs.Name)
		}
		return nil
	})
	return names, bad
}

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *datasource     `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int         `json:"id"`
		Title      string      `json:"title"`
		Datasource *datasource `json:"datasource"`
		Targets    []struct {
			Expr       string      `json:"expr"`
			Datasource *datasource `json:"datasource"`
		} `json:"targets"`
	} `json:"panels"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// TestDashboard: a stable uid, the data source as a variable everywhere,
// the panels the issue asks for, and every expression valid PromQL naming
// only metrics lossaudit exports.
func TestDashboard(t *testing.T) {
	names := exported(t)
	b, err := os.ReadFile("lossaudit.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("lossaudit.json: %v", err)
	}
	if d.UID != "lossaudit" {
		t.Errorf("uid %q, want the stable lossaudit", d.UID)
	}
	var vars []string
	for _, v := range d.Templating.List {
		vars = append(vars, v.Name)
		switch v.Type {
		case "datasource":
			if string(v.Query) != `"prometheus"` {
				t.Errorf("variable %s: query %s, want prometheus", v.Name, v.Query)
			}
		case "query":
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Fatalf("variable %s: %v", v.Name, err)
			}
			m := regexp.MustCompile(`^label_values\((.+), (\w+)\)$`).FindStringSubmatch(q.Query)
			if m == nil {
				t.Errorf("variable %s: query %q is not label_values(selector, label)", v.Name, q.Query)
				continue
			}
			checkExpr(t, "variable "+v.Name, m[1], names)
			checkDatasource(t, "variable "+v.Name, v.Datasource)
		}
	}
	if !slices.Contains(vars, "datasource") {
		t.Errorf("no datasource variable: %v", vars)
	}
	var titles []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		titles = append(titles, p.Title)
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		checkDatasource(t, "panel "+p.Title, p.Datasource)
		if len(p.Targets) == 0 {
			t.Errorf("panel %s has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkDatasource(t, "panel "+p.Title, tg.Datasource)
			checkExpr(t, "panel "+p.Title, tg.Expr, names)
		}
	}
	for _, want := range []string{"Open findings by stage and kind", "Partition findings by kind", "Pending records by input",
		"Last success age", "Step duration", "Records read"} {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q: %v", want, titles)
		}
	}
}

func checkDatasource(t *testing.T, where string, ds *datasource) {
	t.Helper()
	if ds == nil || ds.Type != "prometheus" || ds.UID != "${datasource}" {
		t.Errorf("%s: data source %+v, want the ${datasource} variable", where, ds)
	}
}

func checkExpr(t *testing.T, where, expr string, names map[string]bool) {
	t.Helper()
	used, err := metricNames(expr)
	if err != nil {
		t.Errorf("%s: %q: %v", where, expr, err)
		return
	}
	if len(used) == 0 {
		t.Errorf("%s: %q names no metric", where, expr)
	}
	for _, n := range used {
		if !names[n] {
			t.Errorf("%s: %q names %s, which lossaudit does not export", where, expr, n)
		}
	}
}

// TestRuleExpressions: every expression of deploy/prometheus parses
// (rulefmt, as Prometheus loads it) and names only exported metrics or the
// file's own recording rules.
func TestRuleExpressions(t *testing.T) {
	names := exported(t)
	rgs, errs := rulefmt.ParseFile("../prometheus/lossaudit.rules.yml", false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		t.Fatalf("rules: %v", errs)
	}
	n := 0
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				names[r.Record] = true
			}
		}
	}
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			n++
			checkExpr(t, "rule "+r.Alert+r.Record, r.Expr, names)
		}
	}
	if n < 10 {
		t.Errorf("only %d rules", n)
	}
}
