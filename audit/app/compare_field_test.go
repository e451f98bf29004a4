package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
)

// TestCompareByAvroField compares a topic of Avro records with a copy that
// re-serialised them under another schema id (field match: the values'
// bytes differ, the ids do not), with one record lost; then with a copy
// whose values mostly do not decode, which must make the pair
// inconclusive rather than report every record missing.
func TestCompareByAvroField(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "src", "copy", "garbled", "unknownid", "copy2"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	const sch = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},{"name":"note","type":"string"}]}`
	for _, id := range []int{1, 2} {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("orders-value-%d.avsc", id)), []byte(sch), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	avro := func(schemaID byte, id, note string) []byte {
		b := []byte{0, 0, 0, 0, schemaID, byte(2 * len(id))}
		b = append(b, id...)
		return append(append(b, byte(2*len(note))), note...)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	old := time.Now().Add(-time.Minute) // due with grace 0
	for i := range 10 {
		id := fmt.Sprintf("order-%d", i)
		recs = append(recs, &kgo.Record{Topic: "src", Value: avro(1, id, "original"), Timestamp: old})
		if i != 4 {
			recs = append(recs, &kgo.Record{Topic: "copy", Value: avro(2, id, "re-serialised"), Timestamp: old})
		}
		recs = append(recs, &kgo.Record{Topic: "garbled", Value: []byte("not avro"), Timestamp: old})
		for j := range 2 { // the most frequent class overall
			recs = append(recs, &kgo.Record{Topic: "unknownid", Value: avro(9, fmt.Sprint(id, j), "no such schema"), Timestamp: old})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{
		Kafka:   config.Kafka{Brokers: brokers, FetchMaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20, Concurrency: 2, Timeout: 10 * time.Second},
		Schema:  config.Schema{AvscDir: dir},
		Store:   config.Store{Dir: filepath.Join(dir, "index")},
		Compare: config.Compare{Match: "field:id", Pairs: []config.Pair{{Name: "orders", Source: "src", Sink: "copy"}}},
	}
	res, err := app.Compare(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Kind != finding.Missing || res.Rows[0].Offset != 4 || !res.Complete() {
		t.Errorf("rows %+v (complete %v), want one missing row for the record at offset 4", res.Rows, res.Complete())
	}

	cfg.Compare.Pairs[0].Sink = "garbled"
	cfg.Store.Dir = filepath.Join(dir, "index2")
	res, err = app.Compare(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := res.Summary.Inconclusive
	if len(in) != 1 || in[0].Reason != finding.MostlyUndecodable || in[0].Topic != "garbled" || res.Complete() {
		t.Errorf("inconclusive %+v, want the garbled sink mostly undecodable", in)
	}
	garbledClass := in[0].TopError

	// Two pairs undecodable for different reasons: each names its own
	// most frequent error, not the most frequent of all pairs.
	cfg.Compare.Pairs = append(cfg.Compare.Pairs, config.Pair{Name: "unknown", Source: "unknownid", Sink: "copy2"})
	cfg.Store.Dir = filepath.Join(dir, "index3")
	res, err = app.Compare(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in = res.Summary.Inconclusive
	if len(in) != 2 || in[0].Topic != "garbled" || in[1].Topic != "unknownid" || in[0].TopError != garbledClass ||
		in[1].TopError == "" || in[1].TopError == garbledClass {
		t.Errorf("inconclusive %+v, want garbled with %q and unknownid with its own error class", in, garbledClass)
	}
}
