package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// stepCost is the measurement of scheduled reconciliation: a baseline
// step on the loaded data, StepShare more input records (and what the
// application writes for them), then one timed step.
type stepCost struct {
	Baseline, Step result
	// New counts the records added before the step, by topic role, and
	// Read what the step's own report says it read.
	New, Read map[string]int64
	// Findings are the rows and partition findings of the two steps.
	Findings []int
	// Phases are the step's timings: those of its JSON report, then
	// those its summary adds (reports, commit, close).
	Phases [][2]string
	// BaselinePhases are the baseline's, likewise.
	BaselinePhases [][2]string
	lastPhases     [][2]string
}

// newRecords is the sum of New.
func (s *stepCost) newRecords() int64 {
	var n int64
	for _, v := range s.New {
		n += v
	}
	return n
}

// readRecords is the sum of Read.
func (s *stepCost) readRecords() int64 {
	var n int64
	for _, v := range s.Read {
		n += v
	}
	return n
}

// measureStep times `lossaudit reconcile`: the baseline on a fresh store,
// then, after appending StepShare of -n input records, the step.
func measureStep(ctx context.Context, o benchOptions, bin, cfgPath string, brokers []string, man *manifest, manifestPath string,
	logf func(string, ...any)) (*stepCost, error) {
	store := filepath.Join(o.Dir, "store-reconcile")
	if err := os.RemoveAll(store); err != nil {
		return nil, err
	}
	s := &stepCost{}
	var err error
	logf("lossaudit reconcile: the baseline")
	s.Baseline, _, err = runReconcile(ctx, bin, cfgPath, o.Dir, store, man, o.AuditEnv, s)
	if err != nil {
		return nil, err
	}
	s.Baseline.Name = "lossaudit reconcile (baseline)"
	s.BaselinePhases = s.lastPhases
	extra := int64(float64(o.Records) * o.StepShare)
	logf("appending %d input records and their downstream writes", extra)
	added, err := appendData(ctx, brokers, man, extra, logf)
	if err != nil {
		return nil, err
	}
	n := pipelineNames()
	s.New = map[string]int64{}
	for x := range 3 {
		s.New["input"] += added[n.inputs[x]].Records
		s.New["repartition"] += added[n.repart[x]].Records
		s.New["changelog"] += added[n.changelog[x]].Records
	}
	s.New["output"] = added[n.output].Records
	man.Appended += extra
	for t, c := range added {
		tc := man.Topics[t]
		tc.Records += c.Records
		tc.Bytes += c.Bytes
		man.Topics[t] = tc
	}
	if err := man.write(manifestPath); err != nil {
		return nil, err
	}
	logf("lossaudit reconcile: the step after %d more input records", extra)
	s.Step, s.Read, err = runReconcile(ctx, bin, cfgPath, o.Dir, store, man, o.AuditEnv, s)
	if err != nil {
		return nil, err
	}
	s.Phases = s.lastPhases
	s.Step.Name = fmt.Sprintf("lossaudit reconcile (step after +%g%%)", 100*o.StepShare)
	s.Step.Records, s.Step.Bytes = s.readRecords(), 0
	s.Step.Note = "records: what the step read"
	return s, nil
}

// runReconcile times one `lossaudit reconcile` on store and returns what
// its JSON report says it read; its findings are appended to s.
func runReconcile(ctx context.Context, bin, cfgPath, dir, store string, m *manifest, env []string, s *stepCost) (result, map[string]int64, error) {
	jsonPath := filepath.Join(dir, "reconcile.json")
	args := []string{"reconcile", "-c", cfgPath, "-q", "--store-dir", store, "--json", jsonPath, "--csv", filepath.Join(dir, "reconcile.csv")}
	res := result{Command: envPrefix() + strings.Join(append(env, ""), " ") + "lossaudit reconcile -c audit.yaml -q --store-dir S"}
	n := pipelineNames()
	res.Records, res.Bytes = m.total(n.audited()).Records, m.total(n.audited()).Bytes
	var out bytes.Buffer
	wall, rss, cpu, err := timedCPU(ctx, &out, env, bin, args...)
	res.Wall, res.MaxRSS, res.CPU = wall, rss, cpu
	if err != nil {
		return res, nil, fmt.Errorf("%w\n%s", err, out.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		return res, nil, err
	}
	var rj struct {
		RowCount   int               `json:"row_count"`
		Partitions []json.RawMessage `json:"partition_findings"`
		Partial    bool              `json:"partial"`
		Timings    map[string]string `json:"timings"`
		Step       struct {
			Read map[string]int64 `json:"read"`
		} `json:"step"`
	}
	if err := json.Unmarshal(b, &rj); err != nil {
		return res, nil, fmt.Errorf("reading %s: %w", jsonPath, err)
	}
	if rj.Partial {
		return res, nil, errors.New("the reconcile step was partial")
	}
	s.Findings = append(s.Findings, rj.RowCount+len(rj.Partitions))
	s.lastPhases = stepPhases(rj.Timings, out.String())
	return res, rj.Step.Read, nil
}

// stepOrder is the order of a step's phases (audit/report's timingOrder).
var stepOrder = []string{"start", "prepare", "state", "snapshot", "read", "check", "lookup", "reports", "commit", "close"}

// summaryPhase is a line of the summary's timings table.
var summaryPhase = regexp.MustCompile(`(?m)^  (reports|commit|close) +([0-9.]+[a-zµ]+)$`)

// stepPhases returns a step's phases in run order: those of its JSON
// report's timings, and those only its summary (stdout) has, as they come
// after the report files.
func stepPhases(timings map[string]string, stdout string) [][2]string {
	all := maps.Clone(timings)
	if all == nil {
		all = map[string]string{}
	}
	for _, m := range summaryPhase.FindAllStringSubmatch(stdout, -1) {
		all[m[1]] = m[2]
	}
	var out [][2]string
	for _, k := range stepOrder {
		if v, ok := all[k]; ok {
			out = append(out, [2]string{k, v})
		}
	}
	return out
}

// markdown renders the checks of the step against its bounds: it reads
// at most twice the new records (the repartition tails are empty: every
// copy is processed), takes at most 5% of the full audit's wall time, and
// stays within 512 MiB.
func (s *stepCost) markdown(full time.Duration) string {
	var b strings.Builder
	newN, read := s.newRecords(), s.readRecords()
	fmt.Fprintf(&b, "\nIncremental step: %d new records (input %d, repartition %d, changelog %d, output %d); the step read %d "+
		"(input %d, repartition %d, changelog %d, output %d).\n\n",
		newN, s.New["input"], s.New["repartition"], s.New["changelog"], s.New["output"],
		read, s.Read["input"], s.Read["repartition"], s.Read["changelog"], s.Read["output"])
	fmt.Fprintf(&b, "| bound | measured | holds |\n| --- | ---: | --- |\n")
	ratio := float64(read) / float64(max(newN, 1))
	fmt.Fprintf(&b, "| records read ≤ 2 × new records (tails empty) | %.2f × | %v |\n", ratio, ratio <= 2)
	if full > 0 {
		share := s.Step.Wall.Seconds() / full.Seconds()
		fmt.Fprintf(&b, "| step wall time ≤ 5%% of the full audit's | %.1f%% (%.2f s of %.2f s) | %v |\n", 100*share, s.Step.Wall.Seconds(), full.Seconds(), share <= 0.05)
	}
	fmt.Fprintf(&b, "| step peak RSS ≤ 512 MiB | %.0f MiB | %v |\n", mib(s.Step.MaxRSS), s.Step.MaxRSS <= 512<<20)
	fmt.Fprintf(&b, "| baseline peak RSS ≤ 512 MiB | %.0f MiB | %v |\n", mib(s.Baseline.MaxRSS), s.Baseline.MaxRSS <= 512<<20)
	if len(s.Phases) > 0 {
		var parts []string
		for _, p := range s.Phases {
			parts = append(parts, p[0]+" "+p[1])
		}
		fmt.Fprintf(&b, "\nThe step's phases (its JSON report's `timings`; reports, commit and close from its summary): %s; %.2f s wall in all.\n",
			strings.Join(parts, ", "), s.Step.Wall.Seconds())
	}
	if len(s.BaselinePhases) > 0 {
		var parts []string
		for _, p := range s.BaselinePhases {
			parts = append(parts, p[0]+" "+p[1])
		}
		fmt.Fprintf(&b, "\nThe baseline's phases, likewise: %s; %.2f s wall in all.\n", strings.Join(parts, ", "), s.Baseline.Wall.Seconds())
	}
	return b.String()
}
