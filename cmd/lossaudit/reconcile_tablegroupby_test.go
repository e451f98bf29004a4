package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// tableGroupByTopology is describe() of builder.table(topicA,
// Materialized.as("profiles")).groupBy(...).reduce(adder, subtractor)
// .toStream().to("joined") with kafka-streams 4.4.0.
const tableGroupByTopology = "../../audit/streams/topology/testdata/table-groupby-reduce-4.4.0.txt"

// groupByRegion is the input's value schema, id 1 in the avsc directory.
const groupByRegion = `{"type":"record","name":"Profile","fields":[{"name":"region","type":"string"}]}`

// groupByUpdate is one record of the table's input (region "" is a
// delete) and what the application does with it.
type groupByUpdate struct {
	p      int32
	key    string
	ts     int64 // seconds after the base
	region string
	lose   bool // processed, its add's effect on the region lost
}

// tableGroupByApp plays the table groupBy reduce on a cluster: each input
// record replaces its key's row in the table, its Change copies go to the
// repartition topic (a subtraction from the old region, an add to the
// new), and the reduce writes each region at max(record ts, its ts) to
// the changelog and the output, or a delete when the region is left with
// no member (the subtractor's null), after which it starts again at the
// next record's own timestamp; a lost add has no effect. The group's
// offsets are committed past everything at both hops.
type tableGroupByApp struct {
	t       *testing.T
	cl      *kgo.Client
	table   map[string]string // key -> region
	members map[string]int    // region -> members
	at      map[string]int64  // region -> timestamp (ms)
	ends    map[string]map[int32]int64
}

const groupByStore = "app-KTABLE-AGGREGATE-STATE-STORE-0000000003"

func newTableGroupByApp(t *testing.T, brokers []string) *tableGroupByApp {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	createTopics(t, cl, groupByStore+"-changelog", "topicA", groupByStore+"-repartition", groupByStore+"-changelog", "joined")
	return &tableGroupByApp{t: t, cl: cl, table: map[string]string{}, members: map[string]int{}, at: map[string]int64{},
		ends: map[string]map[int32]int64{"topicA": {}, groupByStore + "-repartition": {}}}
}

// produce writes r and returns its offset.
func (a *tableGroupByApp) produce(r *kgo.Record) int64 {
	if err := a.cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
		a.t.Fatal(err)
	}
	return r.Offset
}

// process writes the updates to topicA, processes them at both hops and
// commits.
func (a *tableGroupByApp) process(updates ...groupByUpdate) {
	t := a.t
	t.Helper()
	base := time.UnixMilli(1_700_000_000_000)
	rep := groupByStore + "-repartition"
	part := func(region string) int32 { return int32(len(region) % 2) }
	for _, u := range updates {
		var v []byte
		if u.region != "" {
			v = append([]byte{0, 0, 0, 0, 1, byte(2 * len(u.region))}, u.region...)
		}
		ts := base.Add(time.Duration(u.ts) * time.Second)
		off := a.produce(&kgo.Record{Topic: "topicA", Partition: u.p, Key: []byte(u.key), Value: v, Timestamp: ts})
		a.ends["topicA"][u.p] = off + 1
		old := a.table[u.key]
		a.table[u.key] = u.region
		type change struct {
			region   string
			add, sub bool
		}
		var cs []change
		switch {
		case old != "" && old == u.region:
			cs = append(cs, change{region: old, add: true, sub: true})
		default:
			if old != "" {
				cs = append(cs, change{region: old, sub: true})
			}
			if u.region != "" {
				cs = append(cs, change{region: u.region, add: true})
			}
		}
		for _, c := range cs {
			flag := byte(0) // ChangedSerializer: the value bytes, then 1 new, 0 old, 2 both
			switch {
			case c.add && c.sub:
				flag = 2
			case c.add:
				flag = 1
			}
			p := part(c.region)
			roff := a.produce(&kgo.Record{Topic: rep, Partition: p, Key: []byte(c.region), Value: append(slices.Clone(v), flag), Timestamp: ts})
			a.ends[rep][p] = roff + 1
			if c.add && u.lose {
				continue
			}
			n, had := a.members[c.region], a.members[c.region] > 0
			at := ts.UnixMilli()
			if had {
				at = max(at, a.at[c.region])
			}
			if c.sub {
				n--
			}
			if c.add {
				n++
			}
			a.members[c.region], a.at[c.region] = n, at
			var val []byte
			if n > 0 {
				val = []byte(fmt.Sprint(n))
			}
			for _, topic := range []string{groupByStore + "-changelog", "joined"} {
				a.produce(&kgo.Record{Topic: topic, Partition: p, Key: []byte(c.region), Value: val, Timestamp: time.UnixMilli(at)})
			}
		}
	}
	commitGroup(t, a.cl, "app", a.ends)
}

// TestReconcileTableGroupBy runs `lossaudit reconcile` on a table
// groupBy's reduce over several steps, each compared with `lossaudit
// audit` of the same moment on a fresh store.dir (CSV rows and exit
// codes): a clean baseline; a key moving into a region with its add lost
// (stale) and a key's first add lost (missing); the moved key updated
// again and the other deleted (both resolved, as the step's JSON report
// says), emptying a region; the
// emptied region taken again older, and an add into it lost (stale). A
// sharded reconciliation refuses it (exit 2).
func TestReconcileTableGroupBy(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	app := newTableGroupByApp(t, cluster.ListenAddrs())
	dir := t.TempDir()
	topo, err := filepath.Abs(tableGroupByTopology)
	if err != nil {
		t.Fatal(err)
	}
	avsc := filepath.Join(dir, "avsc")
	if err := os.MkdirAll(avsc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(avsc, "1.avsc"), []byte(groupByRegion), 0o600); err != nil {
		t.Fatal(err)
	}
	config := func(name, store string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		yaml := fmt.Sprintf(`kafka:
  brokers: [%s]
schema:
  avsc_dir: %q
pipeline:
  application_id: app
  topology_file: %q
  inputs:
    - {name: a, topic: topicA, key_format: string, rekey: region}
store:
  dir: %q
report:
  csv: %q
  json: %q
`, strings.Join(cluster.ListenAddrs(), ", "), avsc, topo, store, filepath.Join(d, "loss.csv"), filepath.Join(d, "report.json"))
		cfg := filepath.Join(d, "audit.yaml")
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	rows := func(cfg string) []string {
		recs := readCSVFile(t, filepath.Join(filepath.Dir(cfg), "loss.csv"))
		var out []string
		n := len(recs[0])
		if recs[0][n-1] == "first_seen" {
			n-- // a step's column, which an audit's report has not
		}
		for _, r := range recs[1:] {
			out = append(out, strings.Join(r[:n], " "))
		}
		return out
	}
	rec := config("reconcile", filepath.Join(dir, "reconcile-store"))
	steps := []struct {
		updates []groupByUpdate
		code    int
		want    []string // kind, stage, input and group key of each row, sorted
		// resolved are the group keys of the findings the step found fixed.
		resolved []string
	}{
		{updates: []groupByUpdate{{p: 0, key: "k1", ts: 100, region: "r1"}, {p: 1, key: "k2", ts: 200, region: "r22"}, {p: 0, key: "k3", ts: 300, region: "r1"}}, code: exitOK},
		{updates: []groupByUpdate{{p: 0, key: "k1", ts: 400, region: "r22", lose: true}, {p: 1, key: "k4", ts: 500, region: "r333", lose: true}}, code: exitFindings,
			want: []string{"missing changelog a r333", "stale changelog a r22"}},
		{updates: []groupByUpdate{{p: 0, key: "k1", ts: 450, region: "r22"}, {p: 1, key: "k4", ts: 520}, {p: 0, key: "k3", ts: 460, region: "r22"}}, code: exitOK,
			resolved: []string{"r22", "r333"}},
		{updates: []groupByUpdate{{p: 1, key: "k5", ts: 50, region: "r1"}, {p: 1, key: "k2", ts: 600, region: "r1", lose: true}}, code: exitFindings,
			want: []string{"stale changelog a r1"}},
	}
	for i, st := range steps {
		app.process(st.updates...)
		var stdout, stderr bytes.Buffer
		if code := testRun([]string{"reconcile", "-q", "-c", rec}, &stdout, &stderr); code != st.code {
			t.Fatalf("step %d: reconcile exit %d, want %d\n%s\n%s", i+1, code, st.code, stdout.String(), stderr.String())
		}
		got := rows(rec)
		full := config(fmt.Sprintf("audit-%d", i+1), filepath.Join(dir, fmt.Sprintf("audit-store-%d", i+1)))
		if code := testRun([]string{"audit", "-q", "-c", full}, &stdout, &stderr); code != st.code {
			t.Fatalf("step %d: audit exit %d, want %d\n%s\n%s", i+1, code, st.code, stdout.String(), stderr.String())
		}
		if want := rows(full); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("step %d: reconcile rows\n%s\naudit rows\n%s", i+1, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		var kinds []string
		for _, r := range got {
			f := strings.Fields(r)
			kinds = append(kinds, strings.Join([]string{f[0], f[1], f[2], f[3]}, " "))
		}
		slices.Sort(kinds)
		if strings.Join(kinds, "; ") != strings.Join(st.want, "; ") {
			t.Errorf("step %d: rows %q, want %q", i+1, got, st.want)
		}
		js, err := os.ReadFile(filepath.Join(filepath.Dir(rec), "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Resolved []struct {
				Key string `json:"key"`
			} `json:"resolved"`
		}
		if err := json.Unmarshal(js, &rep); err != nil {
			t.Fatal(err)
		}
		var resolved []string
		for _, r := range rep.Resolved {
			resolved = append(resolved, r.Key)
		}
		slices.Sort(resolved)
		if strings.Join(resolved, ",") != strings.Join(st.resolved, ",") {
			t.Errorf("step %d: resolved %q, want %q", i+1, resolved, st.resolved)
		}
	}
	// A sharded reconciliation still refuses it, naming what.
	shd := config("sharded", filepath.Join(dir, "sharded-store"))
	var stdout, stderr bytes.Buffer
	code := testRun([]string{"reconcile", "-q", "-c", shd, "--shards", "2", "--shard-index", "0", "--shard-dir", filepath.Join(dir, "shards"),
		"--shard-poll", "20ms", "--shard-job", "job-1"}, &stdout, &stderr)
	if want := "input a is read by a table whose groupBy (KTABLE-SELECT-0000000002) feeds an aggregation (table-reduce, store KTABLE-AGGREGATE-STATE-STORE-0000000003)"; code != exitUsage || !strings.Contains(stderr.String(), want) {
		t.Errorf("reconcile --shards: exit %d, want %d naming %q\n%s", code, exitUsage, want, stderr.String())
	}
}
