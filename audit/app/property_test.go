package app_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// simUnprocessedAfter keeps unprocessed_partition out of the simulator
// property tests: the simulator's records are timestamped days before the
// run (a fixed base time) and its lagging rounds can leave an input
// partition wholly unprocessed, which the rule (first record older than
// audit.unprocessed_after, no commit on the partition) reports, while the
// oracle does not model it. The rule is checked by its detector's table
// test, TestUnprocessedPartitionBehindAbortedRecords (audit/streams) and
// TestStreamsGroupPoisonPill on real brokers.
const simUnprocessedAfter = 100 * 365 * 24 * time.Hour

// TestPropertyAuditEqualsInjectedLoss is the property test of the audit:
// random pipelines (sizes, partitions, timestamps, null keys and values,
// undecodable values, tombstones, lag at both hops, healthy retries) with
// random injected losses (before the repartition topic, before the store,
// before the output, only in aborted transactions, KAFKA-17635 purges,
// hanging transactions) are simulated on an in-process cluster, then
// audited exactly as `lossaudit audit` does (config, schemas from the
// _schemas topic, topology file or overrides). The findings, partition
// findings, per-input counters and partial flag must equal the simulator
// oracle's: nothing missed, nothing extra. Every seed is also audited
// through a random time window.
//
// LOSSAUDIT_PROPERTY_SEEDS sets the number of seeds (default 24).
func TestPropertyAuditEqualsInjectedLoss(t *testing.T) {
	seeds := propertySeeds(1, 1)
	brokers, ctx := propertyCluster(t, 10*time.Minute)

	// What the seeds exercised: the property must not hold vacuously.
	seen := map[string]int{}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		sc := sim.RandomScenario(seed)
		if seed%6 == 0 {
			sc.Faults.HangingTxns = 1
		}
		tr, err := sim.Run(ctx, brokers, sc)
		if err != nil {
			t.Fatalf("seed %d: simulating: %v", seed, err)
		}
		dir := t.TempDir()
		cfg := tr.Config(brokers, filepath.Join(dir, "index"))
		cfg.Audit.UnprocessedAfter = simUnprocessedAfter
		cfg.Audit.SettleTimeout = 2 * time.Second
		how := "overrides"
		if seed%2 == 0 {
			// Derive the internal topics from the describe() text instead.
			how = "topology file"
			topo := filepath.Join(dir, "topology.txt")
			if err := os.WriteFile(topo, []byte(tr.Topology), 0o644); err != nil {
				t.Fatal(err)
			}
			for i := range cfg.Pipeline.Inputs {
				in := &cfg.Pipeline.Inputs[i]
				in.Store, in.RepartitionTopic, in.ChangelogTopic = "", "", ""
			}
			cfg.Pipeline.TopologyFile = topo
		}
		res, _, err := app.Run(ctx, cfg, app.Options{})
		if err != nil {
			t.Fatalf("seed %d: audit: %v", seed, err)
		}
		for _, d := range tr.Diff(res) {
			t.Errorf("seed %d (%s, %d injections): %s", seed, how, len(tr.Injected), d)
		}
		// A stuck_lso names the open transaction holding the LSO.
		for _, p := range res.Summary.Partitions {
			if st, _ := p.Evidence.(*finding.StuckEvidence); st != nil && (st.Holder == nil || st.Holder.StartOffset != st.LSO) {
				t.Errorf("seed %d: stuck_lso %s[%d] at LSO %d: holder %+v (%s), want the transaction starting at the LSO", seed, p.Topic, p.Partition, st.LSO, st.Holder, st.HolderError)
			} else if st != nil {
				seen["stuck_lso holder named"]++
			}
		}
		for _, r := range tr.Rows {
			seen[string(r.Kind)+"@"+string(r.Stage)]++
		}
		for _, p := range tr.Partitions {
			seen[string(p.Kind)]++
		}
		for _, c := range tr.Counts {
			if c.Pending > 0 {
				seen["pending"]++
			}
			if c.NullKey+c.NullValue > 0 {
				seen["dropped by design"]++
			}
		}

		// The same data through a random window.
		lo, hi := inputTimeRange(ctx, t, brokers, tr)
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		w := sim.Window{From: lo + rng.Int64N(hi-lo+1)/2, To: hi - rng.Int64N(hi-lo+1)/3}
		cfg.Window.From, cfg.Window.To = time.UnixMilli(w.From), time.UnixMilli(w.To)
		cfg.Store.Dir = filepath.Join(dir, "index-window")
		res, _, err = app.Run(ctx, cfg, app.Options{})
		if err != nil {
			t.Fatalf("seed %d window: audit: %v", seed, err)
		}
		for _, d := range tr.Expect(w).Diff(res) {
			t.Errorf("seed %d window [%d, %d]: %s", seed, w.From, w.To, d)
		}
	}
	t.Logf("exercised over %d seeds: %v", seeds, seen)
	if seeds >= 12 {
		for _, k := range []string{"missing@changelog", "stale@changelog", "aborted@changelog", "stale@output", "aborted@output",
			"purged_past_commit", "stuck_lso", "poison_pill", "pending", "dropped by design"} {
			if seen[k] == 0 {
				t.Errorf("no seed exercised %s: the property test would not catch a bug there", k)
			}
		}
	}
}

// inputTimeRange returns the smallest and largest timestamps of the
// scenario's input records, read back with the committed reader.
func inputTimeRange(ctx context.Context, t *testing.T, brokers []string, tr *sim.Truth) (lo, hi int64) {
	t.Helper()
	c, err := kread.New(kread.Options{Brokers: brokers})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	for _, in := range tr.Inputs {
		offs, err := c.Offsets(ctx, in.Topic)
		if err != nil {
			t.Fatal(err)
		}
		var rs []kread.Range
		for p, o := range offs {
			rs = append(rs, kread.Range{Topic: in.Topic, Partition: p, From: o.LogStart, To: o.LSO})
		}
		_, err = c.Read(ctx, rs, kread.ReadOptions{}, func(recs []kread.Record) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range recs {
				if lo == 0 || r.Timestamp < lo {
					lo = r.Timestamp
				}
				hi = max(hi, r.Timestamp)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return lo, hi
}
