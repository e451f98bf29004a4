package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// tableSourceTopology is describe() of builder.table(topicA,
// Materialized.as("profiles")).toStream().to("joined") with kafka-streams
// 4.4.0.
const tableSourceTopology = "../../audit/streams/topology/testdata/table-source-named-4.4.0.txt"

// tableUpdate is one record of the table's input and what the application
// does with it.
type tableUpdate struct {
	p         int32
	key       string
	ts        int64 // seconds after the base
	tombstone bool
	lose      bool // processed, its changelog and output writes lost
}

// tableSourceApp plays the table application on a cluster: every record
// of topicA is put into the store (its changelog) and forwarded to the
// output with its own timestamp, unless its writes are lost; the group's
// offsets are committed past everything.
type tableSourceApp struct {
	t  *testing.T
	cl *kgo.Client
}

func newTableSourceApp(t *testing.T, brokers []string) *tableSourceApp {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	createTopics(t, cl, "app-profiles-changelog", "topicA", "app-profiles-changelog", "joined")
	return &tableSourceApp{t: t, cl: cl}
}

// process writes the updates to topicA, processes them and commits.
func (a *tableSourceApp) process(updates ...tableUpdate) {
	t, ctx := a.t, context.Background()
	t.Helper()
	base := time.UnixMilli(1_700_000_000_000)
	ends := map[int32]int64{}
	for _, u := range updates {
		var v []byte
		if !u.tombstone {
			v = []byte(u.key + "-v" + fmt.Sprint(u.ts))
		}
		r := &kgo.Record{Topic: "topicA", Partition: u.p, Key: []byte(u.key), Value: v, Timestamp: base.Add(time.Duration(u.ts) * time.Second)}
		if err := a.cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
		ends[u.p] = r.Offset + 1
		if u.lose {
			continue
		}
		if err := a.cl.ProduceSync(ctx, &kgo.Record{Topic: "app-profiles-changelog", Partition: u.p, Key: r.Key, Value: v, Timestamp: r.Timestamp},
			&kgo.Record{Topic: "joined", Partition: u.p, Key: r.Key, Value: v, Timestamp: r.Timestamp}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	commitGroup(t, a.cl, "app", map[string]map[int32]int64{"topicA": ends})
}

// TestReconcileTableSource runs `lossaudit reconcile` on a table source
// (builder.table) over several steps, each compared with `lossaudit
// audit` of the same moment on a fresh store.dir: a clean baseline; an
// out-of-order update lost (the changelog keeps the earlier record:
// stale) and a first update lost (missing); a later update of each that
// arrives (both resolved), with a delete; then a lost delete (stale).
func TestReconcileTableSource(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	app := newTableSourceApp(t, cluster.ListenAddrs())
	dir := t.TempDir()
	topo, err := filepath.Abs(tableSourceTopology)
	if err != nil {
		t.Fatal(err)
	}
	config := func(name, store string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		yaml := fmt.Sprintf(`kafka:
  brokers: [%s]
pipeline:
  application_id: app
  topology_file: %q
  inputs:
    - {name: a, topic: topicA, key_format: string}
store:
  dir: %q
report:
  csv: %q
`, strings.Join(cluster.ListenAddrs(), ", "), topo, store, filepath.Join(d, "loss.csv"))
		cfg := filepath.Join(d, "audit.yaml")
		if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	rows := func(cfg string) []string {
		recs := readCSVFile(t, filepath.Join(filepath.Dir(cfg), "loss.csv"))
		var out []string
		for _, r := range recs[1:] {
			out = append(out, strings.Join(r[:6], " "))
		}
		return out
	}
	rec := config("reconcile", filepath.Join(dir, "reconcile-store"))
	steps := []struct {
		updates []tableUpdate
		code    int
		want    []string // kind, stage, input and key of each row
	}{
		{updates: []tableUpdate{{p: 0, key: "k1", ts: 900}, {p: 1, key: "k2", ts: 100}, {p: 0, key: "k4", ts: 50}}, code: exitOK},
		{updates: []tableUpdate{{p: 0, key: "k1", ts: 100, lose: true}, {p: 1, key: "k3", ts: 200, lose: true}, {p: 1, key: "k2", ts: 300}}, code: exitFindings,
			want: []string{"stale changelog a k1", "missing changelog a k3"}},
		{updates: []tableUpdate{{p: 0, key: "k1", ts: 50}, {p: 1, key: "k3", ts: 400}, {p: 1, key: "k2", ts: 500, tombstone: true}}, code: exitOK},
		{updates: []tableUpdate{{p: 0, key: "k4", ts: 600, tombstone: true, lose: true}}, code: exitFindings, want: []string{"stale changelog a k4"}},
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
		if strings.Join(kinds, "; ") != strings.Join(st.want, "; ") {
			t.Errorf("step %d: rows %q, want %q", i+1, got, st.want)
		}
	}
}
