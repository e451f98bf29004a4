package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// compareYAML compares input a with its record-for-record copy: every
// record due (grace 0: nothing is on its way), a copy of each in the sink.
func compareYAML(brokers []string, n names, dir string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n", strings.Join(brokers, ", "))
	fmt.Fprintf(&b, "compare:\n  pairs:\n    - {name: a, source: %s, sink: %s}\n  match: record\n  grace: 0s\n", n.inputs[0], n.copied)
	fmt.Fprintf(&b, "store:\n  dir: %s\n", filepath.Join(dir, "store"))
	fmt.Fprintf(&b, "report:\n  csv: %s\n  json: %s\n", filepath.Join(dir, "compare-report.csv"), filepath.Join(dir, "compare-report.json"))
	return b.String()
}

// runCompare times `lossaudit compare` of input a against its copy on a
// fresh store directory and returns the number of findings it reported
// (there must be none).
func runCompare(ctx context.Context, bin string, brokers []string, n names, dir string, m *manifest, env []string) (result, int, error) {
	cfgPath := filepath.Join(dir, "compare.yaml")
	if err := os.WriteFile(cfgPath, []byte(compareYAML(brokers, n, dir)), 0o644); err != nil {
		return result{}, 0, err
	}
	if err := os.RemoveAll(filepath.Join(dir, "store")); err != nil {
		return result{}, 0, err
	}
	topics := []string{n.inputs[0], n.copied}
	res := result{Name: "lossaudit compare (a and its copy)",
		Command: envPrefix() + strings.Join(append(env, ""), " ") + "lossaudit compare -c compare.yaml -q",
		Records: m.total(topics).Records, Bytes: m.total(topics).Bytes,
		Note: "records/MB columns: input a and its copy"}
	var out bytes.Buffer
	wall, rss, err := timed(ctx, &out, env, bin, "compare", "-c", cfgPath, "-q")
	res.Wall, res.MaxRSS = wall, rss
	if err != nil {
		return res, 0, fmt.Errorf("%w\n%s", err, out.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "compare-report.json"))
	if err != nil {
		return res, 0, err
	}
	var rj struct {
		RowCount int        `json:"row_count"`
		Partial  bool       `json:"partial"`
		Index    indexStats `json:"index"`
	}
	if err := json.Unmarshal(b, &rj); err != nil {
		return res, 0, fmt.Errorf("reading compare-report.json: %w", err)
	}
	res.Index = rj.Index
	if rj.Partial {
		return res, 0, errors.New("the comparison was partial")
	}
	return res, rj.RowCount, nil
}
