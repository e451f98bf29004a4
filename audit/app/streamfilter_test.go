package app_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/report"
	"github.com/lossaudit/lossaudit/config"
)

// The schemas of TestStreamFilter: id 1 has the amount its filter reads,
// id 2 lacks it (its records are uncertain).
const (
	eventSchema   = `{"type":"record","name":"Event","fields":[{"name":"customer","type":["null","string"]},{"name":"amount","type":"long"}]}`
	noAmountEvent = `{"type":"record","name":"Event","fields":[{"name":"customer","type":["null","string"]}]}`
)

// c0 is the counts of input a.
func c0(res *finding.Result) *finding.InputCounts { return res.Summary.Inputs["a"] }

// plural is n records, as the summary writes it.
func plural(n int64) string {
	if n == 1 {
		return "1 record"
	}
	return fmt.Sprintf("%d records", n)
}

// avroValue frames a datum of schema id, as Confluent's serializer does.
func avroValue(t *testing.T, id uint32, js string, datum map[string]any) []byte {
	t.Helper()
	codec, err := goavro.NewCodec(js)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], id)
	b, err = codec.BinaryFromNative(b, datum)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStreamFilter audits a per-record stream stage with a declared
// filter and re-key (input -> filter(amount > 100) -> selectKey(customer)
// -> output) on an in-process cluster: records the filter rejects are
// counted, never reported; records whose predicate or key cannot be
// evaluated (an undecodable value, a missing field, a null value) are
// uncertain, counted, never reported; a passing record whose (new key,
// timestamp) the output lacks is missing, named by its input record.
func TestStreamFilter(t *testing.T) {
	dir := t.TempDir()
	for id, js := range map[int]string{1: eventSchema, 2: noAmountEvent} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%d.avsc", id)), []byte(js), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(customer string, amount int64) []byte {
		var c any = map[string]any{"string": customer}
		if customer == "" {
			c = nil
		}
		return avroValue(t, 1, eventSchema, map[string]any{"customer": c, "amount": amount})
	}
	input := []struct {
		key   string
		value []byte
		ts    int64
	}{
		{"k0", ev("c1", 150), 1},  // passes: (c1, 1)
		{"k1", ev("c2", 50), 2},   // filtered (passes the filterNot)
		{"k2", ev("c3", 200), 3},  // passes: (c3, 3), lost
		{"k3", []byte("junk"), 4}, // undecodable: uncertain
		{"k4", avroValue(t, 2, noAmountEvent, map[string]any{"customer": map[string]any{"string": "c4"}}), 5}, // no amount: uncertain
		{"k5", ev("c1", 300), 6}, // passes: (c1, 6)
		{"k6", nil, 7},           // a null value: uncertain
		{"k7", ev("", 500), 8},   // passes with a null key: (null, 8)
	}
	tests := []struct {
		name   string
		negate bool
		output []rec // key "" for null
		want   []string
		counts string
	}{
		{name: "filter", output: []rec{{"c1", 1}, {"c1", 6}, {"", 8}},
			want:   []string{"missing sink a c3 events[0]@2"},
			counts: "4 audited, 1 filtered, 3 uncertain"},
		{name: "filter, clean", output: []rec{{"c1", 1}, {"c3", 3}, {"c1", 6}, {"", 8}},
			counts: "4 audited, 1 filtered, 3 uncertain"},
		{name: "filterNot", negate: true, output: []rec{{"c1", 1}},
			want:   []string{"missing sink a c2 events[0]@1"},
			counts: "1 audited, 4 filtered, 3 uncertain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events", "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			brokers := cluster.ListenAddrs()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MaxVersions(kversion.V3_6_0()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			for _, r := range input {
				kr := &kgo.Record{Topic: "events", Key: []byte(r.key), Value: r.value, Timestamp: time.UnixMilli(r.ts)}
				if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			writeRecs(ctx, t, cl, "out", tt.output...)
			commit(ctx, t, cl, "app", map[string]int64{"events": int64(len(input))})
			cfg := &config.Config{
				Kafka:  config.Kafka{Brokers: brokers, FetchMaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20, Concurrency: 2, Timeout: 10 * time.Second},
				Store:  config.Store{Dir: filepath.Join(t.TempDir(), "index")},
				Audit:  config.Audit{SettleTimeout: 5 * time.Second},
				Schema: config.Schema{AvscDir: dir},
				Pipeline: config.Pipeline{ApplicationID: "app", TopologyFile: filepath.Join("..", "streams", "topology", "testdata", "stream-filter-rekey.txt"),
					Inputs: []config.Input{{Name: "a", Topic: "events", KeyFormat: "bytes", Rekey: "customer"}},
					Nodes:  []config.Node{{Name: "KSTREAM-FILTER-0000000001", Kind: "filter", Predicate: "value.amount > 100", Negate: tt.negate}}},
			}
			res, m, err := app.Run(ctx, cfg, app.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Stream == nil {
				t.Fatal("not audited as a stream stage")
			}
			var got []string
			for _, r := range res.Rows {
				got = append(got, fmt.Sprintf("%s %s %s %s %s[%d]@%d", r.Kind, r.Stage, r.Input, r.Key, r.Topic, r.Partition, r.Offset))
			}
			slices.Sort(got)
			if strings.Join(got, "; ") != strings.Join(tt.want, "; ") {
				t.Errorf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			var sum, js bytes.Buffer
			if err := report.WriteSummary(&sum, res, report.SummaryOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := report.WriteJSON(&js, res); err != nil {
				t.Fatal(err)
			}
			for _, w := range []string{fmt.Sprintf("DROPPED by design: %s by a declared filter", plural(c0(res).Filtered)),
				fmt.Sprintf("UNCERTAIN: %d records whose declared predicate or re-key could not be evaluated", c0(res).Uncertain)} {
				if !strings.Contains(sum.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, sum.String())
				}
			}
			for _, w := range []string{fmt.Sprintf(`"dropped_filtered": %d`, c0(res).Filtered), fmt.Sprintf(`"uncertain": %d`, c0(res).Uncertain)} {
				if !strings.Contains(js.String(), w) {
					t.Errorf("JSON lacks %q", w)
				}
			}
			c := res.Summary.Inputs["a"]
			if g := fmt.Sprintf("%d audited, %d filtered, %d uncertain", c.Audited, c.Filtered, c.Uncertain); g != tt.counts {
				t.Errorf("counts %q, want %q", g, tt.counts)
			}
		})
	}
}

// TestStreamRekeyRepartition audits input -> selectKey(customer) ->
// repartition() -> filter(amount > 100) -> output on an in-process
// cluster: the repartition topic is keyed by the new key, so a copy in its
// unprocessed tail is matched by (new key, timestamp) and pending; a null
// new key is dropped by the repartition's filter (counted); a rejected
// record is filtered; a processed record lost after the repartition is
// missing.
func TestStreamRekeyRepartition(t *testing.T) {
	const link = "app-KSTREAM-REPARTITION-0000000002-repartition"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "1.avsc"), []byte(eventSchema), 0o600); err != nil {
		t.Fatal(err)
	}
	ev := func(customer string, amount int64) []byte {
		var c any = map[string]any{"string": customer}
		if customer == "" {
			c = nil
		}
		return avroValue(t, 1, eventSchema, map[string]any{"customer": c, "amount": amount})
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events", "out", link))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i, v := range [][]byte{ev("c1", 150), ev("c2", 200), ev("c3", 300), ev("c4", 50), ev("", 500)} {
		kr := &kgo.Record{Topic: "events", Key: fmt.Appendf(nil, "k%d", i), Value: v, Timestamp: time.UnixMilli(int64(i + 1))}
		if err := cl.ProduceSync(ctx, kr).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// c2@2 waits in the link's unprocessed tail, under its new key; c3@3
	// was processed after the link and lost.
	writeRecs(ctx, t, cl, link, rec{"c1", 1}, rec{"c3", 3}, rec{"c4", 4}, rec{"c2", 2})
	writeRecs(ctx, t, cl, "out", rec{"c1", 1})
	commit(ctx, t, cl, "app", map[string]int64{"events": 5, link: 3})
	cfg := &config.Config{
		Kafka:  config.Kafka{Brokers: brokers, FetchMaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20, Concurrency: 2, Timeout: 10 * time.Second},
		Store:  config.Store{Dir: filepath.Join(t.TempDir(), "index")},
		Audit:  config.Audit{SettleTimeout: 5 * time.Second},
		Schema: config.Schema{AvscDir: dir},
		Pipeline: config.Pipeline{ApplicationID: "app", TopologyFile: filepath.Join("..", "streams", "topology", "testdata", "stream-rekey-repartition.txt"),
			Inputs: []config.Input{{Name: "a", Topic: "events", KeyFormat: "bytes", Rekey: "customer"}},
			Nodes:  []config.Node{{Name: "KSTREAM-FILTER-0000000006", Kind: "filter", Predicate: "value.amount > 100"}}},
	}
	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, fmt.Sprintf("%s %s %s %s[%d]@%d", r.Kind, r.Stage, r.Key, r.Topic, r.Partition, r.Offset))
	}
	if g := strings.Join(got, "; "); g != "missing sink c3 events[0]@2" {
		t.Errorf("rows %q, want the one lost record", g)
	}
	c := c0(res)
	if g := fmt.Sprintf("%d audited, %d filtered, %d null keys, %d uncertain", c.Audited, c.Filtered, c.NullKey, c.Uncertain); g != "3 audited, 1 filtered, 1 null keys, 0 uncertain" {
		t.Errorf("counts %q", g)
	}
}
