package app_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/copysim"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
)

// copyRowSig renders every field of a comparison's row that a report
// shows, its evidence included.
func copyRowSig(r finding.Row) string {
	obs := "-"
	if r.HasObserved {
		obs = strconv.FormatInt(r.ObservedTS, 10)
	}
	return fmt.Sprintf("%s %s %s %q %s[%d]@%d ts=%d exp=%d obs=%s ev=%+v", r.Kind, r.Stage, r.Input, r.Key, r.Topic, r.Partition,
		r.Offset, r.Timestamp, r.ExpectedTS, obs, r.Evidence)
}

// copyRowID names the finding a comparison's row is: its kind and the
// record it names.
func copyRowID(r finding.Row) string {
	return fmt.Sprintf("%s %s %s %s[%d]@%d", r.Kind, r.Stage, r.Input, r.Topic, r.Partition, r.Offset)
}

// compareWithFull returns the differences between a comparison's
// reconcile step and a full comparison of the same moment: rows (every
// field), partition findings, the per-pair counters, the sink stage's
// identities checked, and whether either is partial or inconclusive.
func compareWithFull(step, full *finding.Result) []string {
	var out []string
	sigs := func(rows []finding.Row) []string {
		s := make([]string, len(rows))
		for i, r := range rows {
			s[i] = copyRowSig(r)
		}
		return s
	}
	if g, w := sigs(step.Rows), sigs(full.Rows); !slices.Equal(g, w) {
		out = append(out, fmt.Sprintf("rows:\n  step: %s\n  full: %s", strings.Join(g, "\n        "), strings.Join(w, "\n        ")))
	}
	parts := func(res *finding.Result) string { return fmt.Sprint(res.Summary.Partitions) }
	if g, w := parts(step), parts(full); g != w {
		out = append(out, fmt.Sprintf("partition findings: step %s, full %s", g, w))
	}
	for _, in := range full.Summary.InputOrder {
		if g, w := *step.Summary.Inputs[in], *full.Summary.Inputs[in]; g != w {
			out = append(out, fmt.Sprintf("pair %s: step counters %+v, full %+v", in, g, w))
		}
	}
	gs, _ := finding.SectionOf[*finding.CompareSummary](&step.Summary)
	ws, _ := finding.SectionOf[*finding.CompareSummary](&full.Summary)
	if g, w := fmt.Sprintf("%+v", gs), fmt.Sprintf("%+v", ws); g != w {
		out = append(out, fmt.Sprintf("comparison summary: step %s, full %s", g, w))
	}
	keys := func(res *finding.Result) string {
		if st := res.Summary.Stages[finding.StageSink]; st != nil {
			return fmt.Sprintf("%d %v", st.KeysChecked, st.Findings)
		}
		return "-"
	}
	if g, w := keys(step), keys(full); g != w {
		out = append(out, fmt.Sprintf("sink stage: step %s, full %s", g, w))
	}
	if g, w := fmt.Sprint(step.Summary.Partial, step.Summary.Inconclusive), fmt.Sprint(full.Summary.Partial, full.Summary.Inconclusive); g != w {
		out = append(out, fmt.Sprintf("partial/inconclusive: step %s, full %s", g, w))
	}
	return out
}

// TestPropertyReconcileCompareEqualsFullCompare is the property of
// scheduled reconciliation for a comparison, through the runner as
// `lossaudit reconcile` runs it, on an in-process cluster: a random copy
// pipeline (copysim.RandomScenario without its ledger: one to three pairs,
// partition counts that differ between source and sink, repeated
// identities, records without identity, lost, doubled and tripled copies,
// sink records with no source record, due by group offsets or by grace)
// grows round by round (copysim.Live: records pending in one round become
// due in the next, copied or lost then; lost copies arrive late); after
// every round a reconcile step on one store.dir must report exactly what a
// full comparison of that moment reports (which the simulator's truth
// checks in turn), rows, evidence and counters alike; a finding still open
// keeps the first_seen of the step that first reported it, and the
// findings no longer reported are exactly those the step lists as
// resolved. At the end the missing records are replayed: the next step
// resolves them all. Every other step follows one abandoned before its
// commit, which must change nothing.
//
// LOSSAUDIT_PROPERTY_SEEDS sets the number of seeds (default 24; this
// test runs a third of them, at least 4).
func TestPropertyReconcileCompareEqualsFullCompare(t *testing.T) {
	seeds := propertySeeds(3, 4)
	brokers, ctx := propertyCluster(t, 10*time.Minute)
	seen := map[string]int{}
	for seed := int64(201); seed < 201+int64(seeds); seed++ {
		sc := copysim.RandomScenario(seed)
		sc.Ledger = nil
		sc.Group = "" // due by grace on odd seeds, by a group's offsets (with pending records) on even ones
		if seed%2 == 0 {
			sc.Group = fmt.Sprintf("copier-%d", seed)
		}
		for i := range sc.Pairs {
			sc.Pairs[i].Records = 10 + sc.Pairs[i].Records/3
		}
		live, err := copysim.StartLive(ctx, brokers, sc, 3+int(seed%3))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		cfg := live.Config(brokers, filepath.Join(t.TempDir(), "store"))
		cfg.Audit.SettleTimeout = 2 * time.Second
		rec := &reconciler{cfg: cfg}
		firstSeen := map[string]time.Time{}
		var open []finding.Row
		check := func(what string) *finding.Result {
			if rec.n%2 == 1 {
				// A step abandoned before its commit (its reports failed,
				// or a signal came) leaves the last checkpoint in force.
				st, err := app.Reconcile(ctx, cfg, app.Options{})
				if err != nil {
					t.Fatalf("seed %d %s: abandoned step: %v", seed, what, err)
				}
				st.Close()
				seen["steps abandoned"]++
			}
			res := rec.step(ctx, t)
			n := rec.n
			full := fullCompare(ctx, t, cfg)
			for _, d := range live.Truth().Diff(full) {
				t.Errorf("seed %d %s: the full comparison differs from the simulator's truth: %s", seed, what, d)
			}
			for _, d := range compareWithFull(res, full) {
				t.Errorf("seed %d %s (step %d, match %s, group %q): %s", seed, what, n, sc.Match, sc.Group, d)
			}
			if res.Summary.Step == nil || res.Summary.Step.Number != int64(n) || res.Summary.Step.Baseline != (n == 1) {
				t.Errorf("seed %d %s: step summary %+v, want step %d", seed, what, res.Summary.Step, n)
			}
			// Incremental: a later step reads only what is new (and the
			// pending records again), less than the full comparison.
			if got, full := res.Summary.Index.RecordsRead, full.Summary.Index.RecordsRead; n > 1 && got >= full {
				t.Errorf("seed %d %s: the step read %d records, the full comparison %d", seed, what, got, full)
			}
			for _, r := range res.Rows {
				id := copyRowID(r)
				if r.FirstSeen.IsZero() {
					t.Errorf("seed %d %s: row %s has no first_seen", seed, what, copyRowSig(r))
				}
				if fs, ok := firstSeen[id]; ok && !fs.Equal(r.FirstSeen) {
					t.Errorf("seed %d %s: row %s first seen %s, earlier steps said %s", seed, what, id, r.FirstSeen, fs)
				} else if ok {
					seen["findings still open"]++
				}
				firstSeen[id] = r.FirstSeen
			}
			gone, bad := resolvedMismatch(open, res, copyRowID)
			if bad != "" {
				t.Errorf("seed %d %s: %s", seed, what, bad)
			}
			for _, id := range gone {
				delete(firstSeen, id)
			}
			seen["findings"] += len(res.Rows)
			seen["resolved"] += len(res.Resolved)
			if hasPending(res) {
				seen["steps with pending records"]++
			}
			open = res.Rows
			return res
		}
		for !live.Done() {
			if err := live.Advance(ctx); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			check(fmt.Sprintf("round %d", live.Round()))
		}
		var missing []finding.Row
		for _, r := range open {
			if r.Kind == finding.Missing {
				missing = append(missing, r)
			}
		}
		if len(missing) > 0 {
			if err := live.Replay(ctx, missing); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			res := check("after the replay")
			seen["replayed"] += len(missing)
			for _, r := range res.Rows {
				if r.Kind == finding.Missing {
					for _, p := range missing {
						if copyRowID(p) == copyRowID(r) {
							t.Errorf("seed %d: replayed %s still reported", seed, copyRowSig(r))
						}
					}
				}
			}
		}
		seen["match "+sc.Match]++
		if sc.Group != "" {
			seen["group"]++
		} else {
			seen["grace"]++
		}
		live.Close()
	}
	t.Logf("exercised over %d seeds: %v", seeds, seen)
	for _, k := range []string{"findings", "resolved", "replayed", "findings still open", "steps with pending records", "group", "grace"} {
		if seen[k] == 0 {
			t.Errorf("the seeds did not exercise %s: %v", k, seen)
		}
	}
}

// fullCompare compares the pairs as they are now on a fresh store.dir.
func fullCompare(ctx context.Context, t *testing.T, cfg *config.Config) *finding.Result {
	t.Helper()
	c := *cfg
	c.Store.Dir = t.TempDir()
	res, err := app.Compare(ctx, &c, app.Options{})
	if err != nil {
		t.Fatalf("full comparison: %v", err)
	}
	return res
}
