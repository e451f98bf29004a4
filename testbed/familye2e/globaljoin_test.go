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

// globalJoinDrop are the ids the lossy run loses before the output: e-12
// (customer c-5, which the customers table does not hold) and e-100
// (customer c-2, which it holds).
var globalJoinDrop = []string{"e-12", "e-100"}

// globalJoinNode is GlobalJoin.java's join as describe() prints it: the
// global table is built first (its store, source and table source take
// 0 to 2), then the stream's source (3) and the join (4).
const globalJoinNode = "KSTREAM-LEFTJOIN-0000000004"

// globalJoin runs the test bed's KStream-GlobalKTable left join
// (GlobalJoin.java: orders leftJoin a GlobalKTable of customers by the
// order's customer, mapValues, into the output; some orders have no
// customer, some a null key, some a null value) on real brokers under
// exactly-once v2: two applications at once, clean and losing two known
// records before the output, then one clean while every broker is killed
// and restarted. Once an application has committed all its input and
// stopped, the truth is read from the topics (the orders with a value, by
// (key, timestamp), against the output's) and lossaudit audit, with the
// join declared global-left-join (null_mapped_key: never: the key mapper
// returns the customer of every order with a value), must name exactly
// the records the truth lacks and count the null values as dropped.
func globalJoin(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute) // the pair, then the outage run
	t.Cleanup(cancel)
	t.Run("clean and lossy", func(t *testing.T) {
		t.Run("clean", func(t *testing.T) {
			t.Parallel()
			globalJoinScenario(ctx, t, c, adm, "global-clean", nil, nil)
		})
		t.Run("lossy", func(t *testing.T) {
			t.Parallel()
			globalJoinScenario(ctx, t, c, adm, "global-lossy", globalJoinDrop, nil)
		})
	})
	// After the other two, not beside them: their own admin calls
	// (creating topics, reading the truth) do not ride through an outage.
	t.Run("all brokers down", func(t *testing.T) {
		globalJoinScenario(ctx, t, c, adm, "global-outage", nil, func(t *testing.T) { allBrokersDown(ctx, t, c) })
	})
}

// globalJoinScenario runs the application as group, produces its load
// and audits it. fault, when set, runs once half of the orders are
// produced, while the rest are.
func globalJoinScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group string, drop []string, fault func(*testing.T)) {
	orders, customers, out := group+"-orders", group+"-customers", group+"-out"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: orders, Partitions: 3}, kafka.TopicSpec{Name: customers, Partitions: 2},
		kafka.TopicSpec{Name: out, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	codec, avsc := schemaDir(t, dir, filterEvent)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// The customers c-0..c-4; orders name c-0..c-6.
	var custs []*kgo.Record
	for i := 0; i < 5; i++ {
		custs = append(custs, &kgo.Record{Topic: customers, Key: fmt.Appendf(nil, "c-%d", i), Value: fmt.Appendf(nil, "customer %d", i)})
	}
	if err := cl.ProduceSync(ctx, custs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{orders, customers},
		Output: out, Dir: dir, Stage: "global-join", DropValues: drop, SessionTimeout: 6 * time.Second})
	// The load: 300 orders keyed k-0..k-11 (every 50th from the 25th with
	// a null key), ids e-N, customers c-(N mod 7), every 40th from the
	// 39th with a null value, each with a timestamp of its own so that
	// (key, timestamp) names it.
	const n = 300
	var nullValues int64
	recs := eventLoad(t, codec, orders, n, func(i int, r *kgo.Record) {
		if i%50 == 25 {
			r.Key = nil
		}
		if i%40 == 39 {
			r.Value = nil
			nullValues++
		}
	})
	produceAround(ctx, t, cl, recs, fault)
	waitAllCommitted(ctx, t, adm, group, []string{orders}, sa.Running)
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}

	// The truth, from the topics: the orders with a value, by (key,
	// timestamp), that the output lacks.
	type id struct {
		key  string
		null bool
		ts   int64
	}
	owed := map[id][]string{}
	byCoord := map[string]string{}
	have := map[id]int{}
	tctx, tcancel := context.WithTimeout(ctx, truthTimeout)
	defer tcancel()
	ranges, err := adm.Ranges(tctx, true, orders, out)
	if err != nil {
		t.Fatal(err)
	}
	err = kafka.Consume(tctx, c.Bootstrap(), ranges, true, func(r *kgo.Record) error {
		k := id{string(r.Key), r.Key == nil, r.Timestamp.UnixMilli()}
		if r.Topic == out {
			have[k]++
			return nil
		}
		if r.Value == nil {
			return nil
		}
		if len(r.Value) < 5 || binary.BigEndian.Uint32(r.Value[1:5]) != 1 {
			return fmt.Errorf("%s[%d]@%d: not a framed Event", r.Topic, r.Partition, r.Offset)
		}
		d, _, err := codec.NativeFromBinary(r.Value[5:])
		if err != nil {
			return err
		}
		oid := d.(map[string]any)["id"].(string)
		byCoord[fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset)] = oid
		owed[k] = append(owed[k], oid)
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

	cfg := &config.Config{
		Kafka:  config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Store:  config.Store{Dir: filepath.Join(dir, "index")},
		Audit:  config.Audit{SettleTimeout: 30 * time.Second},
		Schema: config.Schema{AvscDir: avsc},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(), Output: out,
			Inputs: []config.Input{{Name: "orders", Topic: orders, KeyFormat: config.KeyFormatString}},
			Nodes:  []config.Node{{Name: globalJoinNode, Kind: "global-left-join", NullMappedKey: config.NullMappedKeyNever}}},
	}
	if err := cfg.ValidatePipeline(); err != nil {
		t.Fatal(err)
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the global join topology is refused: %v", err)
	}
	res, m, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Stream == nil || m.Stream.Inputs[0].DropNullKey || !m.Stream.Inputs[0].DropNullValue {
		t.Fatalf("the global join was not audited as a per-record stream stage dropping null values only: %+v", m.Stream)
	}
	if w := "input orders is left-joined with the GlobalKTable of global store " + customers + "-STATE-STORE-0000000000"; !strings.Contains(strings.Join(m.Warnings, "\n"), w) {
		t.Errorf("warnings %q lack %q", m.Warnings, w)
	}
	var got []string
	for _, r := range res.Rows {
		if r.Kind != finding.Missing || r.Topic != orders {
			t.Errorf("row %+v: only missing orders are injected", r)
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
	ic := res.Summary.Inputs["orders"]
	if ic == nil || ic.NullValue != nullValues || ic.NullKey != 0 || ic.Audited != n-nullValues {
		t.Errorf("counts %+v: want %d null values dropped, no null key dropped, %d audited", ic, nullValues, n-nullValues)
	}
	t.Logf("%s: %d records audited, %d null values dropped, rows %q", group, ic.Audited, ic.NullValue, got)
}
