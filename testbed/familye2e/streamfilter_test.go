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

// filterEvent is StreamFilter.java's EVENT, written as schema id 1.
const filterEvent = `{"type":"record","name":"Event","namespace":"lossaudit.testbed","fields":[` +
	`{"name":"id","type":"string"},{"name":"customer","type":"string"},{"name":"amount","type":"long"}]}`

// filterDrop are the ids the lossy run loses before the output: both pass
// the filter (amounts 140 and 150).
var filterDrop = []string{"e-20", "e-250"}

// streamFilter runs the test bed's filter and re-key stage
// (StreamFilter.java: input --filter(amount > 100)--> --selectKey(customer)-->
// output) on real brokers, clean and losing two known records before the
// output, at once, then clean while every broker is killed and restarted. Once the application has committed all its input and
// stopped, the truth is read from the topics (the input records whose
// amount is above 100, by (customer, timestamp), against the output's
// (key, timestamp)), and lossaudit audit, with the filter's predicate and
// the re-key declared, must name exactly the records the truth lacks and
// count as filtered exactly the records the truth filters.
func streamFilter(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	for _, lossy := range []bool{false, true} {
		name, drop := "clean", []string(nil)
		if lossy {
			name, drop = "lossy", filterDrop
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			streamFilterScenario(ctx, t, c, adm, "filter-"+name, drop, nil)
		})
	}
	t.Run("all brokers down", func(t *testing.T) {
		streamFilterScenario(ctx, t, c, adm, "filter-outage", nil, func(t *testing.T) { allBrokersDown(ctx, t, c) })
	})
}

// streamFilterScenario runs the application as group, produces its load
// and audits it. fault, when set, runs once half of the load is produced,
// while the rest is.
func streamFilterScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, drop []string, fault func(*testing.T)) {
	in, out := group+"-events", group+"-out"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: in, Partitions: 3}, kafka.TopicSpec{Name: out, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	codec, avsc := schemaDir(t, dir, filterEvent)
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{in},
		Output: out, Dir: dir, Stage: "filter-rekey", DropValues: drop, SessionTimeout: 6 * time.Second})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The load: 300 records keyed k-0..k-11, ids e-N, seven customers,
	// amounts 7N mod 200 (about half above 100), each with a timestamp
	// of its own so that (customer, timestamp) names it.
	const n = 300
	recs := eventLoad(t, codec, in, n, nil)
	produceAround(ctx, t, cl, recs, fault)
	waitAllCommitted(ctx, t, adm, group, []string{in}, sa.Running)
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}

	// The truth, from the topics: the input records the filter keeps,
	// by (customer, timestamp), that the output lacks; and how many the
	// filter drops.
	type id struct {
		key string
		ts  int64
	}
	owed := map[id][]string{}
	byCoord := map[string]string{}
	have := map[id]int{}
	var filtered int64
	tctx, tcancel := context.WithTimeout(ctx, truthTimeout)
	defer tcancel()
	ranges, err := adm.Ranges(tctx, true, in, out)
	if err != nil {
		t.Fatal(err)
	}
	err = kafka.Consume(tctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		if r.Topic == out {
			have[id{string(r.Key), r.Timestamp.UnixMilli()}]++
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
		if m["amount"].(int64) <= 100 {
			filtered++
			return nil
		}
		k := id{m["customer"].(string), r.Timestamp.UnixMilli()}
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
	if filtered == 0 || filtered == n {
		t.Fatalf("the filter drops %d of %d records: the load does not exercise it", filtered, n)
	}

	cfg := &config.Config{
		Kafka:  config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store:  config.Store{Dir: filepath.Join(dir, "index")},
		Audit:  config.Audit{SettleTimeout: 30 * time.Second},
		Schema: config.Schema{AvscDir: avsc},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(), Output: out,
			Inputs: []config.Input{{Name: "events", Topic: in, KeyFormat: config.KeyFormatString, Rekey: "customer"}},
			Nodes:  []config.Node{{Name: "KSTREAM-FILTER-0000000001", Kind: "filter", Predicate: "value.amount > 100"}}},
	}
	if err := cfg.ValidatePipeline(); err != nil {
		t.Fatal(err)
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the filter-rekey topology is refused: %v", err)
	}
	res, m, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Stream == nil {
		t.Fatal("filter-rekey was not audited as a per-record stream stage")
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
	t.Logf("%s: %d records audited, %d filtered, rows %q", group, ic.Audited, ic.Filtered, got)
}
