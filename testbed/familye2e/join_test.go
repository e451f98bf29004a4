package familye2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// joinStore finds, in the describe() text of the join application, each
// input's reduce store: the sub-topology reading an input sinks to
// "<store>-repartition" (generated names).
var joinStore = regexp.MustCompile(`Sink: \S+ \(topic: (\S+)-repartition\)`)

// tableJoinTypes runs the testbed's join application (selectKey ->
// groupByKey -> reduce per input, then a chain of two KTable-KTable joins)
// with inner joins and with outer joins on real brokers, on one cluster with
// distinct application ids and topics, all four runs at once, each clean and with the joined
// results of chosen keys dropped before the output (DROP_BEFORE_OUTPUT).
// Three keys are written to input a only and three to input c only: an
// inner join has no result for them (audited as a left join, the a-only
// keys would be owed one), an outer join has one whose other sides are null
// (audited as a left join, the c-only keys would not be checked). Once each application
// has committed all its input at both hops and stopped, the truth is read
// from the changelogs and the output with franz-go (a key is owed a result
// when the join type says so, at least as new as the tables it joins), and
// lossaudit audit, with pipeline.join declared, must report exactly the keys
// the truth finds missing: none for the clean runs, the injected ones (those
// a result is owed for) for the others.
func tableJoinTypes(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cases := []struct {
		join string
		drop []string
	}{
		{join: "inner"},
		{join: "inner", drop: []string{"cust-003", "cust-011", "only-a-1", "only-c-1"}},
		{join: "outer"},
		{join: "outer", drop: []string{"cust-003", "cust-011", "only-a-1", "only-c-1"}},
	}
	// All four at once, not t.Parallel: -parallel (GOMAXPROCS, 2 in CI)
	// would run them two by two, and most of a run is waiting.
	var wg sync.WaitGroup
	for _, tc := range cases {
		name := tc.join + map[bool]string{true: "-clean", false: "-lossy"}[len(tc.drop) == 0]
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(name, func(t *testing.T) { joinScenario(ctx, t, c, adm, "join-"+name, tc.join, tc.drop, false, nil) })
		}()
	}
	wg.Wait()
}

// joinScenario runs the join application with joinType as group on its own
// topics, loads it, waits until it has committed everything, and checks the
// audit against the truth read from the topics.
// With aggregate, the tables are aggregates (declared in pipeline.nodes);
// fault, when set, runs once the load is written, while the application
// processes it.
func joinScenario(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group, joinType string, drop []string, aggregate bool, fault func()) {
	inputs := [3]string{group + "-a", group + "-b", group + "-c"}
	out, schemas := group+"-out", group+"-schemas"
	// The other two inputs of the loads into a alone and c alone, read by nothing.
	unread := [4]string{group + "-unread-0", group + "-unread-1", group + "-unread-2", group + "-unread-3"}
	specs := []kafka.TopicSpec{{Name: out, Partitions: 3}, {Name: schemas, Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}}}
	for _, u := range unread {
		specs = append(specs, kafka.TopicSpec{Name: u, Partitions: 1})
	}
	for _, in := range inputs {
		specs = append(specs, kafka.TopicSpec{Name: in, Partitions: 3})
	}
	if err := adm.CreateTopics(ctx, specs...); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t0, phases := time.Now(), ""
	phase := func(name string) { phases += fmt.Sprintf(" %s %.1fs", name, time.Since(t0).Seconds()) }
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: inputs,
		Output: out, SchemasTopic: schemas, Dir: dir, JoinType: joinType, DropBeforeOutput: drop, SessionTimeout: 6 * time.Second, Aggregate: aggregate})
	phase("running")
	// Every customer in all three inputs, then three keys in a only and
	// three in c only.
	loads := []loadgen.Config{
		{Brokers: c.Bootstrap(), Topics: inputs, SchemasTopic: schemas, Customers: 30, Records: 300, Rate: 150},
		{Brokers: c.Bootstrap(), Topics: [3]string{inputs[0], unread[0], unread[1]}, SchemasTopic: schemas, Customers: 1,
			ExtraCustomers: []string{"only-a-0", "only-a-1", "only-a-2"}, Records: 8, Rate: -1, Seed: 2},
		{Brokers: c.Bootstrap(), Topics: [3]string{unread[2], unread[3], inputs[2]}, SchemasTopic: schemas, Customers: 1,
			ExtraCustomers: []string{"only-c-0", "only-c-1", "only-c-2"}, Records: 8, Rate: -1, Seed: 3},
	}
	for _, lc := range loads {
		gen, err := loadgen.New(ctx, lc)
		if err != nil {
			t.Fatal(err)
		}
		if err := gen.Run(ctx); err != nil {
			t.Fatalf("load: %v", err)
		}
	}
	text, err := os.ReadFile(sa.TopologyFile())
	if err != nil {
		t.Fatal(err)
	}
	var stores, topics []string
	for _, m := range joinStore.FindAllSubmatch(text, -1) {
		stores = append(stores, string(m[1]))
		topics = append(topics, group+"-"+string(m[1])+"-repartition")
	}
	if len(stores) != 3 {
		t.Fatalf("want 3 repartition topics in the topology, found %q:\n%s", stores, text)
	}
	phase("loaded")
	if fault != nil {
		fault()
		phase("fault")
	}
	waitAllCommitted(ctx, t, adm, group, append(topics, inputs[:]...), sa.Running)
	phase("committed")
	if err := sa.Stop(); err != nil {
		t.Fatal(err)
	}
	phase("stopped")

	want := joinTruth(ctx, t, c, adm, group, joinType, stores, out)
	var injected []string
	for _, k := range drop {
		if !slices.Contains(want.owed, k) {
			continue // no result is owed for it: nothing was lost
		}
		injected = append(injected, k)
	}
	slices.Sort(injected)
	if strings.Join(want.missing, ",") != strings.Join(injected, ",") {
		t.Errorf("the topics lack results for %q, want exactly the injected %q", want.missing, injected)
	}

	cfgFile := filepath.Join(dir, "audit.yaml")
	var y strings.Builder
	fmt.Fprintf(&y, "kafka:\n  brokers: [%s]\n", quoteList(c.Bootstrap()))
	fmt.Fprintf(&y, "schema:\n  schemas_topic: %q\n", schemas)
	fmt.Fprintf(&y, "pipeline:\n  application_id: %q\n  topology_file: %q\n  output: %q\n  join: %s\n  reduce: plain\n  inputs:\n", group, sa.TopologyFile(), out, joinType)
	for i, in := range inputs {
		fmt.Fprintf(&y, "    - {name: %s, topic: %q, rekey: customerId, key_format: string}\n", loadgen.InputNames[i], in)
	}
	if aggregate {
		y.WriteString(aggregateNodes(t, text))
	}
	fmt.Fprintf(&y, "store:\n  dir: %q\nreport:\n  csv: \"\"\n", filepath.Join(dir, "index"))
	if err := os.WriteFile(cfgFile, []byte(y.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.LoadOptions{IgnoreEnv: testbedenv.Is, File: cfgFile})
	if err != nil {
		t.Fatalf("loading %s: %v", cfgFile, err)
	}
	if err := app.CheckTopology(cfg); err != nil {
		t.Fatalf("the %s join's topology is refused: %v", joinType, err)
	}
	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	phase("audited")
	var got []string
	for _, r := range res.Rows {
		if r.Stage != finding.StageOutput {
			t.Errorf("row %+v: only output losses are injected", r)
			continue
		}
		if k := string(r.Key); !slices.Contains(got, k) {
			got = append(got, k)
		}
	}
	slices.Sort(got)
	if strings.Join(got, ",") != strings.Join(injected, ",") {
		t.Errorf("the audit reports %q, want exactly the injected %q", got, injected)
	}
	if len(res.Summary.Partitions) != 0 || len(res.Summary.Inconclusive) != 0 {
		t.Errorf("partitions %+v, inconclusive %+v; want none", res.Summary.Partitions, res.Summary.Inconclusive)
	}
	t.Logf("%s: %d keys owed a result, missing %q, audit rows %d for keys %q; phases:%s", group, len(want.owed), want.missing, len(res.Rows), got, phases)
}

// joinResult is what the topics say about one join run.
type joinResult struct {
	owed    []string // keys a result is owed for, sorted
	missing []string // owed keys the output lacks or holds only older than owed, sorted
}

// joinTruth reads, with franz-go, the newest record of every key of the
// three changelogs and of the output (read_committed), and derives which
// keys a result is owed for: inner, those every table holds as a value, at
// least as new as the newest of them; outer, those any table holds, at least
// as new as each such table's newest (KTableKTableInnerJoin and
// KTableKTableOuterJoin's resultTimestamp).
func joinTruth(ctx context.Context, t *testing.T, c *kafka.Cluster, adm *kafka.Admin, group, joinType string, stores []string, out string) joinResult {
	t.Helper()
	// One partition per key: the last by offset is the newest.
	newest := func(topic string) map[string]*kgo.Record { return lastByOffset(ctx, t, c, adm, topic) }
	var tables []map[string]*kgo.Record
	keys := map[string]bool{}
	for _, s := range stores {
		tab := newest(group + "-" + s + "-changelog")
		tables = append(tables, tab)
		for k := range tab {
			keys[k] = true
		}
	}
	output := newest(out)
	var res joinResult
	for k := range keys {
		due, holders := int64(0), 0
		for _, tab := range tables {
			if r, ok := tab[k]; ok && r.Value != nil {
				holders++
				due = max(due, r.Timestamp.UnixMilli())
			}
		}
		if holders == 0 || joinType == "inner" && holders < len(tables) {
			continue
		}
		res.owed = append(res.owed, k)
		if r, ok := output[k]; !ok || r.Value == nil || r.Timestamp.UnixMilli() < due {
			res.missing = append(res.missing, k)
		}
	}
	slices.Sort(res.owed)
	slices.Sort(res.missing)
	return res
}
