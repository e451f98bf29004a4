package familye2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// branchDrop are the ids the lossy run loses before the output: e-25
// (amount 175) of route-big, e-250 (amount 150, even) of route-medium.
var branchDrop = []string{"e-25", "e-250"}

// branchNodes declares StreamBranch.java's split in the application's
// order.
var branchNodes = []config.Node{{Name: "route-", Kind: "branch", Branches: []config.NodeBranch{
	{Name: "route-big", Predicate: "value.amount > 150"},
	{Name: "route-medium", Predicate: "value.amount % 2 == 0"},
	{Name: "route-small", Predicate: "value.amount > 20"},
	{Name: "route-rest", Default: true},
}}}

// streamBranch runs the test bed's split (StreamBranch.java: input
// split into route-big (amount > 150) and route-medium (even amounts),
// each mapped, merged into the output; route-small (amount > 20) to
// another topic; the default branch dropped) on real brokers under
// exactly-once v2, clean and losing two known records before the output,
// at once, then clean while every broker is killed and restarted. Once the
// application has committed all its input and stopped, the truth is read
// from the topics (the input records the first two branches take, by
// (key, timestamp), against the output's), and lossaudit audit, with the
// branches declared, must name exactly the records the truth lacks and
// count as filtered exactly the records the other branches take.
func streamBranch(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	t.Run("clean and lossy", func(t *testing.T) {
		for _, lossy := range []bool{false, true} {
			name, drop := "clean", []string(nil)
			if lossy {
				name, drop = "lossy", branchDrop
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				streamBranchScenario(ctx, t, c, adm, "branch-"+name, drop, nil)
			})
		}
	})
	t.Run("all brokers down", func(t *testing.T) {
		streamBranchScenario(ctx, t, c, adm, "branch-outage", nil, func(t *testing.T) { allBrokersDown(ctx, t, c) })
	})
}

// streamBranchScenario runs the application as group, produces its load
// and audits it. fault, when set, runs once half of the load is produced,
// while the rest is.
func streamBranchScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, drop []string, fault func(*testing.T)) {
	in, out := group+"-events", group+"-out"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: in, Partitions: 3}, kafka.TopicSpec{Name: out, Partitions: 3},
		kafka.TopicSpec{Name: out + "-other", Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	codec, avsc := schemaDir(t, dir, filterEvent)
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{in},
		Output: out, Dir: dir, Stage: "branch", DropValues: drop, SessionTimeout: 6 * time.Second})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The load: 300 records keyed k-0..k-11, ids e-N, amounts 7N mod 200,
	// each with a timestamp of its own so that (key, timestamp) names it.
	const n = 300
	recs := eventLoad(t, codec, in, n, nil)
	produceAround(ctx, t, cl, recs, fault)
	waitAllCommitted(ctx, t, adm, group, []string{in}, sa.Running)
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}

	// The truth, from the topics: the input records route-big or
	// route-medium take, by (key, timestamp), that the output lacks; and
	// how many the other branches take.
	type id struct {
		key string
		ts  int64
	}
	owed := map[id][]string{}
	byCoord := map[string]string{}
	have := map[id]int{}
	var filtered, other int64
	tctx, tcancel := context.WithTimeout(ctx, truthTimeout)
	defer tcancel()
	ranges, err := adm.Ranges(tctx, true, in, out, out+"-other")
	if err != nil {
		t.Fatal(err)
	}
	err = kafka.Consume(tctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		switch r.Topic {
		case out:
			have[id{string(r.Key), r.Timestamp.UnixMilli()}]++
			return nil
		case out + "-other":
			other++
			return nil
		}
		if len(r.Value) < 5 || binary.BigEndian.Uint32(r.Value[1:5]) != 1 {
			return fmt.Errorf("%s[%d]@%d: not a framed Event", r.Topic, r.Partition, r.Offset)
		}
		d, _, err := codec.NativeFromBinary(r.Value[5:])
		if err != nil {
			return err
		}
		m := d.(map[string]any)
		byCoord[fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)] = m["id"].(string)
		if a := m["amount"].(int64); a <= 150 && a%2 != 0 {
			filtered++
			return nil
		}
		k := id{string(r.Key), r.Timestamp.UnixMilli()}
		owed[k] = append(owed[k], m["id"].(string))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	truth := lacking(owed, have)
	want := slices.Sorted(slices.Values(drop))
	if strings.Join(truth, ",") != strings.Join(want, ",") {
		t.Fatalf("the topics lack %q, want exactly the injected %q", truth, want)
	}
	if other == 0 || other >= filtered {
		t.Fatalf("route-small wrote %d of the %d records the output does not take: the load does not exercise the default branch and the other topic", other, filtered)
	}

	cfg := &config.Config{
		Kafka:  config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store:  config.Store{Dir: filepath.Join(dir, "index")},
		Audit:  config.Audit{SettleTimeout: 30 * time.Second},
		Schema: config.Schema{AvscDir: avsc},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(), Output: out,
			Inputs: []config.Input{{Name: "events", Topic: in, KeyFormat: config.KeyFormatString}},
			Nodes:  branchNodes},
	}
	if err := cfg.ValidatePipeline(); err != nil {
		t.Fatal(err)
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the branch topology is refused: %v", err)
	}
	res, m, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Stream == nil || len(m.Stream.Inputs[0].Alternatives) != 2 {
		t.Fatalf("branch was not audited as a per-record stream stage with two branches into the output: %+v", m.Stream)
	}
	for _, w := range []string{"branch 3 of route- (route-small) reaches topic " + out + "-other, which is not audited",
		"the default branch of route- (route-rest) reaches no topic"} {
		if !strings.Contains(strings.Join(m.Warnings, "\n"), w) {
			t.Errorf("warnings %q lack %q", m.Warnings, w)
		}
	}
	var got []string
	for _, r := range res.Rows {
		if r.Kind != finding.Missing {
			t.Errorf("row %+v: only missing records are injected", r)
			continue
		}
		got = append(got, byCoord[fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)])
	}
	slices.Sort(got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the audit names %q, want exactly the injected %q", got, want)
	}
	if res.Summary.Partial || len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 {
		t.Errorf("partial %v, partitions %+v, inconclusive %+v: want a complete audit", res.Summary.Partial, res.Summary.Partitions, res.Summary.Inconclusive)
	}
	ic := res.Summary.Inputs["events"]
	if ic == nil || ic.Filtered != filtered || ic.Uncertain != 0 || ic.Audited != n-filtered {
		t.Errorf("counts %+v: want %d filtered, 0 uncertain, %d audited", ic, filtered, n-filtered)
	}
	t.Logf("%s: %d records audited, %d filtered (%d to the other topic), rows %q", group, ic.Audited, ic.Filtered, other, got)
}
