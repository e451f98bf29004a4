package app_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/config"
)

// TestCompareStuckLSONamesTheHolder: a sink partition whose LSO an open
// transaction holds past audit.settle_timeout is stuck_lso, and, as in the
// Kafka Streams mode, the evidence names the transaction (transactional
// id, producer, the offset it starts at), from which the report gives the
// kafka-transactions.sh commands. The summary describes compare.group (the
// Group line of the summary and the HTML report).
func TestCompareStuckLSONamesTheHolder(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "src", "copy"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plain, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("src"))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.ProduceSync(ctx, &kgo.Record{Value: []byte("v1")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("copy"), kgo.TransactionalID("copier-0"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	r, err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("v1")}).First()
	if err != nil {
		t.Fatal(err)
	}
	// The copier's group, which has consumed src: its offsets say what is
	// due, and the summary's Group line describes it.
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("src"), kgo.ConsumerGroup("copier"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	for n := 0; n < 1; {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{
		Kafka:   config.Kafka{Brokers: brokers, FetchMaxBytes: 1 << 20, PartitionMaxBytes: 1 << 20, Concurrency: 2, Timeout: 10 * time.Second},
		Store:   config.Store{Dir: filepath.Join(t.TempDir(), "index")},
		Audit:   config.Audit{SettleTimeout: 300 * time.Millisecond},
		Compare: config.Compare{Match: "record", Group: "copier", Pairs: []config.Pair{{Name: "p", Source: "src", Sink: "copy"}}},
	}
	res, err := app.Compare(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var st *finding.StuckEvidence
	for _, p := range res.Summary.Partitions {
		if p.Kind == finding.StuckLSO && p.Topic == "copy" {
			st, _ = p.Evidence.(*finding.StuckEvidence)
		}
	}
	if st == nil {
		t.Fatalf("partition findings %+v, want stuck_lso on copy[0]", res.Summary.Partitions)
	}
	if h := st.Holder; h == nil || h.TransactionalID != "copier-0" || h.StartOffset != r.Offset || h.ProducerID != r.ProducerID {
		t.Errorf("stuck_lso holder %+v (%s), want copier-0's transaction from offset %d, producer %d", st.Holder, st.HolderError, r.Offset, r.ProducerID)
	}
	if g := res.Summary.Group; g == nil || g.ID != "copier" || g.Type == "" || g.Members < 1 {
		t.Errorf("the summary's group %+v, want copier described with its member", g)
	}
	if !res.Summary.Partial {
		t.Error("a stuck sink partition leaves the comparison complete")
	}
}
