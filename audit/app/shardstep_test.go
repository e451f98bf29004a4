package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
)

// stepReports renders a step's reports as reports does, and also without
// what depends on when the step ran: first_seen (the CSV's last column,
// every row's in the JSON), the step's baseline_at and previous.
func stepReports(t *testing.T, res *finding.Result) (csv, js string) {
	t.Helper()
	c, j := reports(t, res)
	var lines []string
	for _, l := range strings.Split(c, "\n") {
		if i := strings.LastIndex(l, ","); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, l)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(j), &v); err != nil {
		t.Fatal(err)
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
		t.Fatal(err)
	}
	return strings.Join(lines, "\n"), string(out)
}

// shardStepRun runs the n indexes of a sharded reconcile step of cfg at
// once, index i with its own store dir/store-<i> (kept from step to step)
// and the shard directory dir/shards; hook, when set, is index i's first
// attempt's hook, and an index its hook stops is run again. Index 0's step
// is committed; it is returned.
func shardStepRun(ctx context.Context, t *testing.T, cfg *config.Config, dir string, n int, hook func(i int) func(string) error) *app.ShardStep {
	t.Helper()
	var wg sync.WaitGroup
	var res *app.ShardStep
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := *cfg
			c.Store.Dir = filepath.Join(dir, fmt.Sprintf("store-%d", i))
			so := app.ShardOptions{Dir: filepath.Join(dir, "shards"), Shards: n, Index: i, Poll: 20 * time.Millisecond, Wait: 3 * time.Minute}
			if hook != nil {
				if h := hook(i); h != nil {
					so.Hook = h
					_, _, err := app.ShardReconcile(ctx, &c, app.Options{}, so)
					if !errors.Is(err, errKilled) {
						errs[i] = fmt.Errorf("the killed attempt of index %d: %v, want it killed", i, err)
						return
					}
					so.Hook = nil
				}
			}
			r, _, err := app.ShardReconcile(ctx, &c, app.Options{}, so)
			if err != nil {
				errs[i] = fmt.Errorf("index %d of %d: %w", i, n, err)
				return
			}
			if (r != nil) != (i == 0) {
				errs[i] = fmt.Errorf("index %d of %d: result %v, want one from index 0 only", i, n, r != nil)
				return
			}
			if i == 0 {
				if err := r.Commit(ctx); err != nil {
					errs[i] = err
				}
				res = r
			}
		}(i)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return res
}

// sameStep fails unless a sharded step's reports equal the single step's
// (when they ran aside).
func sameStep(t *testing.T, got, want *finding.Result) {
	t.Helper()
	gotCSV, gotJSON := stepReports(t, got)
	wantCSV, wantJSON := stepReports(t, want)
	if gotCSV != wantCSV {
		t.Errorf("CSV differs from the single step's at %s", firstDiff(gotCSV, wantCSV))
	}
	if gotJSON != wantJSON {
		t.Errorf("JSON differs from the single step's at %s", firstDiff(gotJSON, wantJSON))
	}
}

// TestShardedReconcileEqualsSingleReconcile: on simulated pipelines that
// grow between steps (losses at every stage, lag at both hops, purges,
// replays of reported records), every step of a sharded reconciliation of
// 1 to 4 indexes reports what the single-process step of the same moment
// reports (CSV and JSON, when they ran aside), from the baseline on; and
// with 3 indexes, at the second step, index 1 killed mid-map, index 2
// after judging its keys but before committing its state, and index 0
// after committing its state but before marking its reduce, each run
// again, give the same reports.
func TestShardedReconcileEqualsSingleReconcile(t *testing.T) {
	brokers, ctx := propertyCluster(t, 15*time.Minute)
	seen := map[string]int{}
	for _, seed := range []int64{101, 104} {
		sc := sim.RandomScenario(seed)
		sc.AppID = fmt.Sprintf("shardrec-%d", seed)
		sc.TopicPrefix, sc.Output = fmt.Sprintf("sr%d-topic", seed), fmt.Sprintf("sr%d-joined", seed)
		sc.Rounds = max(sc.Rounds, 4)
		live, err := sim.Start(ctx, brokers, sc)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		base := t.TempDir()
		cfg := live.Config(brokers, filepath.Join(base, "single"))
		cfg.Audit.UnprocessedAfter = simUnprocessedAfter
		cfg.Audit.SettleTimeout = 2 * time.Second
		rec := &reconciler{cfg: cfg}
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		var killed sync.Map
		stepAll := func(what string) *finding.Result {
			single := rec.step(ctx, t)
			seen["rows"] += len(single.Rows)
			seen["resolved"] += len(single.Resolved)
			if hasPending(single) {
				seen["steps with pending records"]++
			}
			for n := 1; n <= 4; n++ {
				var hook func(i int) func(string) error
				if n == 3 && rec.n == 2 {
					hook = func(i int) func(string) error {
						at := map[int]string{0: "reduce-committed", 1: "map-entry", 2: "reduce-judged"}[i]
						return func(point string) error {
							if point != at {
								return nil
							}
							killed.Store(i, point)
							return errKilled
						}
					}
				}
				got := shardStepRun(ctx, t, cfg, filepath.Join(base, fmt.Sprintf("n%d", n)), n, hook)
				if got.Number != int64(rec.n) {
					t.Errorf("seed %d %s, %d indexes: step %d, the single one is step %d", seed, what, n, got.Number, rec.n)
				}
				t.Run(fmt.Sprintf("seed=%d/step=%d/shards=%d", seed, rec.n, n), func(t *testing.T) { sameStep(t, got.Result, single) })
			}
			return single
		}
		res := stepAll("baseline")
		for !live.Done() {
			if err := live.Advance(ctx, 1+rng.IntN(2)); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			res = stepAll(fmt.Sprintf("round %d", live.Round()))
		}
		if len(res.Rows) > 0 {
			if err := live.Replay(ctx, res.Rows); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			stepAll("after the replay")
		}
		for i := 0; i < 3; i++ {
			if _, ok := killed.Load(i); !ok && i != 1 {
				t.Errorf("seed %d: index %d was never killed", seed, i)
			}
		}
		live.Close()
	}
	t.Logf("exercised: %v", seen)
	if seen["rows"] == 0 || seen["resolved"] == 0 || seen["steps with pending records"] == 0 {
		t.Errorf("the steps did not exercise findings, resolutions and lag: %v", seen)
	}
}
