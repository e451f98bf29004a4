package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
)

// rowSig renders every field of a row that a report shows.
func rowSig(r finding.Row) string {
	w := ""
	if e, ok := r.Evidence.(*finding.Witness); ok {
		w = fmt.Sprintf(" witness=%v %s[%d]@%d", e.Seen, e.Topic, e.Partition, e.Offset)
	}
	obs := "-"
	if r.HasObserved {
		obs = strconv.FormatInt(r.ObservedTS, 10)
	}
	return fmt.Sprintf("%s %s %s %q %s[%d]@%d ts=%d exp=%d obs=%s%s", r.Kind, r.Stage, r.Input, r.Key, r.Topic, r.Partition,
		r.Offset, r.Timestamp, r.ExpectedTS, obs, w)
}

func rowSigs(rows []finding.Row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = rowSig(r)
	}
	return out
}

func rowID(r finding.Row) string { return fmt.Sprintf("%s %s %q", r.Stage, r.Input, r.Key) }

// reconciler takes reconcile steps of one pipeline on one store.dir
// through the runner, as `lossaudit reconcile` does.
type reconciler struct {
	cfg *config.Config
	n   int
}

func (r *reconciler) step(ctx context.Context, t *testing.T) *finding.Result {
	t.Helper()
	r.n++
	st, err := app.Reconcile(ctx, r.cfg, app.Options{})
	if err != nil {
		t.Fatalf("reconcile step %d: %v", r.n, err)
	}
	defer st.Close()
	if err := st.Commit(); err != nil {
		t.Fatalf("reconcile step %d: commit: %v", r.n, err)
	}
	return st.Result
}

// fullAudit audits the pipeline as it is now on a fresh store.dir.
func fullAudit(ctx context.Context, t *testing.T, cfg *config.Config) *finding.Result {
	t.Helper()
	c := *cfg
	c.Store.Dir = t.TempDir()
	res, _, err := app.Run(ctx, &c, app.Options{})
	if err != nil {
		t.Fatalf("full audit: %v", err)
	}
	return res
}

// compareWithAudit returns the differences between a step and a full audit
// of the same moment: rows (every field), partition findings (but those
// comparing with an earlier run, which a fresh audit cannot have), the
// counters of processed records, and, for inputs without transactions
// (where offsets are records), the scanned and pending counters too.
func compareWithAudit(step, full *finding.Result, offsetsAreRecords bool) []string {
	var out []string
	if g, w := rowSigs(step.Rows), rowSigs(full.Rows); !slices.Equal(g, w) {
		out = append(out, fmt.Sprintf("rows:\n  step:  %s\n  audit: %s", strings.Join(g, "\n         "), strings.Join(w, "\n         ")))
	}
	parts := func(res *finding.Result) []string {
		var ps []string
		for _, p := range res.Summary.Partitions {
			if p.Kind != finding.OffsetReset && p.Kind != finding.Truncated {
				ps = append(ps, fmt.Sprintf("%s %s[%d]", p.Kind, p.Topic, p.Partition))
			}
		}
		return ps
	}
	if g, w := parts(step), parts(full); !slices.Equal(g, w) {
		out = append(out, fmt.Sprintf("partition findings: step %v, audit %v", g, w))
	}
	for _, in := range full.Summary.InputOrder {
		g, w := *step.Summary.Inputs[in], *full.Summary.Inputs[in]
		if !offsetsAreRecords {
			g.Scanned, g.Pending, w.Scanned, w.Pending = 0, 0, 0, 0
		}
		if g != w {
			out = append(out, fmt.Sprintf("input %s: step counters %+v, audit %+v", in, g, w))
		}
	}
	if step.Summary.Partial != full.Summary.Partial {
		out = append(out, fmt.Sprintf("partial: step %v, audit %v", step.Summary.Partial, full.Summary.Partial))
	}
	return out
}

// resolvedMismatch returns the findings (named by id) that were open
// before a step, in open, and that it no longer reports, and, when they are
// not exactly the ones the step lists as resolved, says how they differ.
func resolvedMismatch(open []finding.Row, res *finding.Result, id func(finding.Row) string) (gone []string, mismatch string) {
	now := map[string]bool{}
	for _, r := range res.Rows {
		now[id(r)] = true
	}
	var resolved []string
	for _, r := range open {
		if !now[id(r)] {
			gone = append(gone, id(r))
		}
	}
	for _, r := range res.Resolved {
		resolved = append(resolved, id(r))
	}
	slices.Sort(gone)
	slices.Sort(resolved)
	if !slices.Equal(gone, resolved) {
		return gone, fmt.Sprintf("resolved %v, want the findings gone since the last step %v", resolved, gone)
	}
	return gone, ""
}

// hasPending says whether any input (or pair) of res has pending records.
func hasPending(res *finding.Result) bool {
	for _, c := range res.Summary.Inputs {
		if c.Pending > 0 {
			return true
		}
	}
	return false
}

// TestPropertyReconcileEqualsFullAudit is the property of scheduled
// reconciliation, through the real runner on an in-process cluster: a
// random pipeline (sim.RandomScenario: losses at every stage, aborted
// transactions, KAFKA-17635 purges, lag at both hops, null keys and
// values, undecodable values, tombstones, transactional inputs) grows a
// few rounds at a time, faults landing in whichever round processes their
// record; after every round a reconcile step on one store.dir must report
// exactly the findings of a full audit of that moment (which the
// simulator's oracle checks in turn), and the findings it no longer
// reports must be exactly the ones it lists as resolved. At the end the
// reported records are replayed: the next step resolves them all.
//
// LOSSAUDIT_PROPERTY_SEEDS sets the number of seeds (default 24; this
// test runs a third of them, at least 4).
func TestPropertyReconcileEqualsFullAudit(t *testing.T) {
	seeds := propertySeeds(3, 4)
	brokers, ctx := propertyCluster(t, 15*time.Minute)
	seen := map[string]int{}
	for seed := int64(101); seed < 101+int64(seeds); seed++ {
		sc := sim.RandomScenario(seed)
		sc.AppID = fmt.Sprintf("live-%d", seed)
		sc.TopicPrefix, sc.Output = fmt.Sprintf("l%d-topic", seed), fmt.Sprintf("l%d-joined", seed)
		sc.Rounds = max(sc.Rounds, 4)
		live, err := sim.Start(ctx, brokers, sc)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		cfg := live.Config(brokers, filepath.Join(t.TempDir(), "store"))
		cfg.Audit.UnprocessedAfter = simUnprocessedAfter
		cfg.Audit.SettleTimeout = 2 * time.Second
		rec := &reconciler{cfg: cfg}
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		var open []finding.Row
		check := func(what string) *finding.Result {
			res := rec.step(ctx, t)
			full := fullAudit(ctx, t, cfg)
			for _, d := range live.Expect().Diff(full) {
				t.Errorf("seed %d %s: the full audit differs from the oracle: %s", seed, what, d)
			}
			for _, d := range compareWithAudit(res, full, sc.InputTxnSize == 0) {
				t.Errorf("seed %d %s (step %d): %s", seed, what, rec.n, d)
			}
			now := map[string]bool{}
			for _, r := range res.Rows {
				now[rowID(r)] = true
				if r.FirstSeen.IsZero() {
					t.Errorf("seed %d %s: row %s has no first_seen", seed, what, rowSig(r))
				}
			}
			if _, bad := resolvedMismatch(open, res, rowID); bad != "" {
				t.Errorf("seed %d %s: %s", seed, what, bad)
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
			if err := live.Advance(ctx, 1+rng.IntN(2)); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			check(fmt.Sprintf("round %d", live.Round()))
		}
		if len(open) > 0 {
			replayed := slices.Clone(open)
			if err := live.Replay(ctx, replayed); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			res := check("after the replay")
			seen["replayed"] += len(replayed)
			for _, r := range res.Rows {
				for _, p := range replayed {
					if rowID(p) == rowID(r) && p.Offset == r.Offset {
						t.Errorf("seed %d: replayed %s still reported", seed, rowSig(r))
					}
				}
			}
		}
		live.Close()
	}
	t.Logf("exercised over %d seeds: %v", seeds, seen)
	if seen["resolved"] == 0 || seen["findings"] == 0 || seen["replayed"] == 0 || seen["steps with pending records"] == 0 {
		t.Errorf("the seeds did not exercise findings, resolutions, replays and lag: %v", seen)
	}
}
