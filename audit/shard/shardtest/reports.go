package shardtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/report"
)

// StepReports renders a reconcile step's result as its CSV and JSON
// reports without what differs between two steps of the same moment
// taken at different times (a sharded step's and a single process's):
// when they ran, the phases' timings, which decode errors were read first
// (only their number is kept), first_seen (the CSV's last column, every
// row's in the JSON), and the step's baseline_at and previous.
func StepReports(res *finding.Result) (csv, js string, err error) {
	var c, j bytes.Buffer
	if err := report.WriteResultCSV(&c, res); err != nil {
		return "", "", err
	}
	if err := report.WriteJSON(&j, res); err != nil {
		return "", "", err
	}
	var lines []string
	for _, l := range strings.Split(c.String(), "\n") {
		if i := strings.LastIndex(l, ","); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, l)
	}
	var v map[string]any
	if err := json.Unmarshal(j.Bytes(), &v); err != nil {
		return "", "", fmt.Errorf("the JSON report: %w", err)
	}
	for _, k := range []string{"started", "finished", "timings"} {
		delete(v, k)
	}
	if ds, ok := v["decode_error_samples"].([]any); ok {
		v["decode_error_samples"] = len(ds)
	}
	for _, k := range []string{"rows", "resolved"} {
		rows, _ := v[k].([]any)
		for _, r := range rows {
			delete(r.(map[string]any), "first_seen")
		}
	}
	if s, ok := v["step"].(map[string]any); ok {
		delete(s, "baseline_at")
		delete(s, "previous")
	}
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return "", "", err
	}
	return strings.Join(lines, "\n"), string(out), nil
}
