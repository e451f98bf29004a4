package app_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/copysim"
)

// TestPropertyCompareEqualsInjected is the property test of lossaudit
// compare: random copy pipelines (one to three pairs, partition counts that
// differ between source and sink, repeated identities, records the match
// cannot identify, tombstones) with random injected faults (lost copies,
// copies made two or three times, pending records copied or not, sink
// records with no source record, a due rule by group offsets or by grace)
// and, every other seed, a producer ledger in either format with injected
// disagreements (acknowledged at an offset holding another record or past
// the end, failed but present, failed and absent, written twice but
// acknowledged once, acknowledged below the log start) are simulated on an
// in-process cluster, then compared exactly as `lossaudit compare` does.
// The rows and counters must equal the simulator's: nothing missed,
// nothing extra.
//
// LOSSAUDIT_PROPERTY_SEEDS sets the number of seeds (default 24).
func TestPropertyCompareEqualsInjected(t *testing.T) {
	seeds := propertySeeds(1, 1)
	brokers, ctx := propertyCluster(t, 10*time.Minute)

	seen := map[string]int{}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		sc := copysim.RandomScenario(seed)
		dir := t.TempDir()
		tr, err := copysim.Run(ctx, brokers, sc, dir)
		if err != nil {
			t.Fatalf("seed %d: simulating: %v", seed, err)
		}
		cfg := tr.Config(brokers, filepath.Join(dir, "index"))
		res, err := app.Compare(ctx, cfg, app.Options{})
		if err != nil {
			t.Fatalf("seed %d: compare: %v", seed, err)
		}
		for _, d := range tr.Diff(res) {
			t.Errorf("seed %d (match %s, group %q, ledger %v): %s", seed, sc.Match, sc.Group, sc.Ledger != nil, d)
		}
		for _, r := range tr.Rows {
			seen[string(r.Kind)+"@"+string(r.Stage)]++
		}
		seen["match "+sc.Match]++
		if sc.Group != "" {
			seen["group"]++
		} else {
			seen["grace"]++
		}
		for _, p := range tr.Pairs {
			if p.Pending > 0 {
				seen["pending"]++
			}
			if p.Unexplained > 0 {
				seen["no source record"]++
			}
		}
		if tr.LedgerExpired > 0 {
			seen["expired"]++
		}
		if sc.Ledger != nil {
			seen["ledger "+sc.Ledger.Format]++
		}
	}
	t.Logf("exercised over %d seeds: %v", seeds, seen)
	if seeds >= 12 {
		for _, k := range []string{"missing@sink", "duplicated@sink", "unexpected@sink", "acked_missing@ledger", "unacked_present@ledger",
			"unacked_missing@ledger", "duplicated@ledger", "match record", "match key", "match " + copysim.MatchHeader, "group", "grace",
			"pending", "no source record", "expired", "ledger native", "ledger verifiable"} {
			if seen[k] == 0 {
				t.Errorf("no seed exercised %s: the property test would not catch a bug there", k)
			}
		}
	}
}
