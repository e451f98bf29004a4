package app_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/shard"
	"github.com/lossaudit/lossaudit/audit/shard/shardtest"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/poll"
)

// stepReports renders a step's reports without what depends on when it
// ran (shardtest.StepReports).
func stepReports(t *testing.T, res *finding.Result) (csv, js string) {
	t.Helper()
	csv, js, err := shardtest.StepReports(res)
	if err != nil {
		t.Fatal(err)
	}
	return csv, js
}

// shardStepRun runs the n indexes of a sharded reconcile step of cfg at
// once, index i with its own store dir/store-<i> (kept from step to step)
// and the shard directory dir/shards; hook, when set, is index i's first
// attempt's hook, and an index its hook stops is run again. Index 0's step
// is committed; it is returned.
func shardStepRun(ctx context.Context, t *testing.T, cfg *config.Config, dir string, n int, hook func(i int) func(string) error) *app.ShardStep {
	t.Helper()
	return shardStepRunOn(ctx, t, cfg, dir, filepath.Join(dir, "shards"), n, hook)
}

// shardStepRunOn is shardStepRun with the shard directory shards (a
// directory or an s3:// address).
func shardStepRunOn(ctx context.Context, t *testing.T, cfg *config.Config, dir, shards string, n int, hook func(i int) func(string) error) *app.ShardStep {
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
			so := app.ShardOptions{Dir: shards, S3: shard.S3Config{PathStyle: true}, Shards: n, Index: i, Poll: 20 * time.Millisecond, Wait: 3 * time.Minute}
			if hook != nil {
				if h := hook(i); h != nil {
					so.Hook = h
					_, _, err := app.ShardReconcile(ctx, &c, app.Options{}, so, 0)
					if !errors.Is(err, errKilled) {
						errs[i] = fmt.Errorf("the killed attempt of index %d: %v, want it killed", i, err)
						return
					}
					so.Hook = nil
				}
			}
			r, _, err := app.ShardReconcile(ctx, &c, app.Options{}, so, 0)
			if err != nil {
				errs[i] = fmt.Errorf("index %d of %d: %w", i, n, err)
				return
			}
			if (r.Result != nil) != (i == 0) {
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
		s3dir := shardBackends()[1].dir(t, filepath.Join(base, "s3-n2", "shards"))
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
				if hook != nil {
					// The killed attempts' files are gone, the marked ones
					// stay; no other step is touched.
					stepLeft(t, filepath.Join(base, fmt.Sprintf("n%d", n), "shards"), rec.n, n)
				}
				if got.Number != int64(rec.n) {
					t.Errorf("seed %d %s, %d indexes: step %d, the single one is step %d", seed, what, n, got.Number, rec.n)
				}
				t.Run(fmt.Sprintf("seed=%d/step=%d/shards=%d", seed, rec.n, n), func(t *testing.T) { sameStep(t, got.Result, single) })
			}
			// The S3 backend (one bucket for all the steps), with 2 indexes.
			got := shardStepRunOn(ctx, t, cfg, filepath.Join(base, "s3-n2"), s3dir, 2, nil)
			t.Run(fmt.Sprintf("seed=%d/step=%d/s3/shards=2", seed, rec.n), func(t *testing.T) { sameStep(t, got.Result, single) })
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

// TestShardedReconcileJobs: steps run as jobs (ShardOptions.Job). Job "a"
// is cut short: index 1 completes its part of step 2, index 0 is killed
// after committing its state, before marking its reduce, and never
// merges. Job "b" completes step 2 (index 0 reports it) and then runs its
// own step 3, every index joining it whenever it starts; the reports of
// both equal the single steps'. A retried index of job "b" (killed after
// its part, say) finds the job's step merged and does it again without
// waiting for a step no other index would join: index 0 merges the same
// reports.
func TestShardedReconcileJobs(t *testing.T) {
	brokers, ctx := propertyCluster(t, 5*time.Minute)
	sc := sim.RandomScenario(104)
	sc.AppID, sc.TopicPrefix, sc.Output = "shardjob", "shardjob-topic", "shardjob-joined"
	sc.Rounds = max(sc.Rounds, 3)
	live, err := sim.Start(ctx, brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	base := t.TempDir()
	cfg := live.Config(brokers, filepath.Join(base, "single"))
	cfg.Audit.UnprocessedAfter = simUnprocessedAfter
	cfg.Audit.SettleTimeout = 2 * time.Second
	rec := &reconciler{cfg: cfg}
	dir := filepath.Join(base, "sharded")
	index := func(i int, job string, after int64, hook func(string) error) (*app.ShardStep, error) {
		c := *cfg
		c.Store.Dir = filepath.Join(dir, fmt.Sprintf("store-%d", i))
		st, _, err := app.ShardReconcile(ctx, &c, app.Options{}, app.ShardOptions{Dir: filepath.Join(dir, "shards"), Shards: 2, Index: i,
			Poll: 20 * time.Millisecond, Wait: time.Minute, Job: job, Hook: hook}, after)
		return st, err
	}
	// job runs index i as `lossaudit reconcile --shards` does: index 0
	// commits each step it merges, an earlier job's step is followed by
	// this job's. It returns the results of index 0's steps.
	job := func(i int, name string) ([]*finding.Result, error) {
		var after int64
		var out []*finding.Result
		for {
			st, err := index(i, name, after, nil)
			if err != nil {
				return nil, err
			}
			if st.Result != nil {
				if err := st.Commit(ctx); err != nil {
					return nil, err
				}
				out = append(out, st.Result)
			}
			if !st.Earlier {
				return out, nil
			}
			after = st.Number
		}
	}
	rec.step(ctx, t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = job(i, "z") }()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("job z (the baseline): %v, %v", errs[0], errs[1])
	}
	if err := live.Advance(ctx, 1); err != nil {
		t.Fatal(err)
	}
	step2 := rec.step(ctx, t)
	// Job a: index 1 completes its part, index 0 dies after its commit.
	killed := make(chan error, 1)
	go func() {
		_, err := index(0, "a", 0, func(p string) error {
			if p == "reduce-committed" {
				return errKilled
			}
			return nil
		})
		killed <- err
	}()
	if _, err := index(1, "a", 0, nil); err != nil {
		t.Fatalf("job a, index 1: %v", err)
	}
	if err := <-killed; !errors.Is(err, errKilled) {
		t.Fatalf("job a, index 0: %v, want it killed", err)
	}
	if err := live.Advance(ctx, 1); err != nil {
		t.Fatal(err)
	}
	step3 := rec.step(ctx, t)
	// Job b: index 1 starts only once index 0 has completed step 2.
	var got []*finding.Result
	done := make(chan error, 1)
	go func() {
		var err error
		got, err = job(0, "b")
		done <- err
	}()
	merged := filepath.Join(dir, "shards", "step-2", "merged")
	if err := poll.Until(ctx, time.Minute, 20*time.Millisecond, "index 0 of job b committing step 2 ("+merged+")", func() bool {
		_, err := os.Stat(merged)
		return err == nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := job(1, "b"); err != nil {
		t.Fatalf("job b, index 1: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("job b, index 0: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("job b, index 0: %d steps, want step 2 (job a's) and step 3", len(got))
	}
	t.Run("step 2 completed by job b", func(t *testing.T) { sameStep(t, got[0], step2) })
	t.Run("step 3", func(t *testing.T) { sameStep(t, got[1], step3) })
	// Retried indexes of job b, after its step was merged: index 1 has
	// nothing to wait for, index 0 merges the same step 3 again.
	if st, err := index(1, "b", 0, nil); err != nil || st.Number != 3 || st.Earlier {
		t.Fatalf("job b's index 1 retried: %+v, %v; want step 3 at once", st, err)
	}
	st, err := index(0, "b", 0, nil)
	if err != nil || st.Number != 3 || st.Result == nil {
		t.Fatalf("job b's index 0 retried: %+v, %v; want step 3 merged again", st, err)
	}
	if err := st.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	t.Run("step 3 merged again", func(t *testing.T) { sameStep(t, st.Result, step3) })
	// The next job runs step 4.
	if err := live.Advance(ctx, 1); err != nil {
		t.Fatal(err)
	}
	step4 := rec.step(ctx, t)
	var res4 []*finding.Result
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := job(i, "c")
			errs[i] = err
			if i == 0 {
				res4 = r
			}
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || len(res4) != 1 {
		t.Fatalf("job c: %v, %v, %d steps", errs[0], errs[1], len(res4))
	}
	t.Run("step 4", func(t *testing.T) { sameStep(t, res4[0], step4) })
}

// stepLeft checks what the merge of step k of n indexes left in the shard
// directory dir: one attempt of every map and reduce, no temporary file,
// and the earlier steps' parts as they were.
func stepLeft(t *testing.T, dir string, k, n int) {
	t.Helper()
	_, names := shardObjects(t, dir)
	attempts := map[string]map[string]bool{}
	prefix := fmt.Sprintf("step-%d/", k)
	for _, name := range names {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			continue
		}
		if strings.Contains(rest, ".tmp-") {
			t.Errorf("temporary file left: %s", name)
		}
		c := strings.Split(strings.TrimSuffix(rest, "/"), "/")
		if len(c) >= 3 && strings.HasPrefix(c[0], "run-") {
			if attempts[c[1]] == nil {
				attempts[c[1]] = map[string]bool{}
			}
			attempts[c[1]][c[2]] = true
		}
	}
	for i := 0; i < n; i++ {
		for _, part := range []string{fmt.Sprintf("map-%d", i), fmt.Sprintf("reduce-%d", i)} {
			if len(attempts[part]) != 1 {
				t.Errorf("step %d, %s: %d attempts left after the merge, want the marked one: %v", k, part, len(attempts[part]), attempts[part])
			}
		}
	}
}

// TestShardedReconcileStateRemoved: an index whose state is gone while
// the shard directory has merged steps is refused (exit 2, naming the
// shard directory), not run as a new baseline.
func TestShardedReconcileStateRemoved(t *testing.T) {
	brokers, ctx := propertyCluster(t, 3*time.Minute)
	sc := sim.RandomScenario(105)
	sc.AppID, sc.TopicPrefix, sc.Output = "shardgone", "shardgone-topic", "shardgone-joined"
	live, err := sim.Start(ctx, brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dir := t.TempDir()
	cfg := live.Config(brokers, filepath.Join(dir, "single"))
	cfg.Audit.SettleTimeout = 2 * time.Second
	shardStepRun(ctx, t, cfg, dir, 2, nil)
	if err := os.RemoveAll(filepath.Join(dir, "store-1")); err != nil {
		t.Fatal(err)
	}
	c := *cfg
	c.Store.Dir = filepath.Join(dir, "store-1")
	_, _, err = app.ShardReconcile(ctx, &c, app.Options{}, app.ShardOptions{Dir: filepath.Join(dir, "shards"), Shards: 2, Index: 1, Poll: 20 * time.Millisecond, Wait: time.Second}, 0)
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Flag != "shard-dir" || !strings.Contains(err.Error(), "merged step 1, but this index's state") {
		t.Fatalf("index 1 without its state: %v, want a --shard-dir error", err)
	}
	// Index 0's state committed step 1, the shard directory is emptied.
	if err := os.RemoveAll(filepath.Join(dir, "shards")); err != nil {
		t.Fatal(err)
	}
	c.Store.Dir = filepath.Join(dir, "store-0")
	_, _, err = app.ShardReconcile(ctx, &c, app.Options{}, app.ShardOptions{Dir: filepath.Join(dir, "shards"), Shards: 2, Index: 0, Poll: 20 * time.Millisecond, Wait: time.Second}, 0)
	if !errors.As(err, &ce) || ce.Flag != "shard-dir" || !strings.Contains(err.Error(), "committed step 1, but") {
		t.Fatalf("index 0 on an emptied shard directory: %v, want a --shard-dir error", err)
	}
}
