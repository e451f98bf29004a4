package schema

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/kread"
)

// kreadTopicReader reads a whole topic, committed records only, through
// audit/kread: the wiring the command uses for the _schemas topic.
func kreadTopicReader(c *kread.Client) TopicReader {
	return func(ctx context.Context, topic string, fn func(key, value []byte) error) error {
		offs, err := c.Offsets(ctx, topic)
		if err != nil {
			return err
		}
		var ranges []kread.Range
		for p, o := range offs {
			ranges = append(ranges, kread.Range{Topic: topic, Partition: p, From: o.LogStart, To: o.LSO})
		}
		var mu sync.Mutex
		_, err = c.Read(ctx, ranges, kread.ReadOptions{}, func(recs []kread.Record) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range recs {
				if err := fn(r.Key, r.Value); err != nil {
					return err
				}
			}
			return nil
		})
		return err
	}
}

// TestSchemasTopicFallback: the registry is unreachable, the _schemas topic
// on an in-process cluster holds the schemas in Confluent's storage format,
// and the selected key of an input topic with two writer versions (and one
// version lacking the field) is still extracted, with per-id error counts.
func TestSchemasTopicFallback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "_schemas", "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()

	prod, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produce := func(cl *kgo.Client, topic string, k, v []byte) {
		t.Helper()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: k, Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produce(prod, "_schemas", []byte(`{"keytype":"NOOP","magic":0}`), nil)
	produce(prod, "_schemas", []byte(`{"keytype":"CONFIG","subject":null,"magic":0}`), []byte(`{"compatibilityLevel":"BACKWARD"}`))
	produce(prod, "_schemas", schemasKey("orders-value", 1), schemasValue("orders-value", 1, 11, evoV1, false))
	produce(prod, "_schemas", schemasKey("orders-value", 2), schemasValue("orders-value", 2, 12, evoV2, false))
	produce(prod, "_schemas", schemasKey("orders-value", 3), schemasValue("orders-value", 3, 13, evoV3, false))
	// version 1 soft-deleted later: old data still decodes
	produce(prod, "_schemas", schemasKey("orders-value", 1), schemasValue("orders-value", 1, 11, evoV1, true))

	// An aborted registration of id 14 must not be visible (read_committed).
	txp, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.TransactionalID("sr-aborted"))
	if err != nil {
		t.Fatal(err)
	}
	defer txp.Close()
	if err := txp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(txp, "_schemas", schemasKey("orders-value", 4), schemasValue("orders-value", 4, 14, evoV1, false))
	if err := txp.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}

	values := [][]byte{
		frame(t, 11, evoV1, evoRecord(1, "c-1")),
		frame(t, 12, evoV2, evoRecordV2(2, "c-2")),
		frame(t, 12, evoV2, evoRecordV2(3, "")),
		frame(t, 13, evoV3, map[string]any{"orderId": "o-4", "clientId": "c-4"}),
		frame(t, 11, evoV1, evoRecord(5, "c-5")),
		frame(t, 14, evoV1, evoRecord(6, "c-6")),
	}
	for _, v := range values {
		produce(prod, "orders", nil, v)
	}

	reader, err := kread.New(kread.Options{Brokers: cluster.ListenAddrs(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	// A registry that no longer listens: connection refused.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	reg, err := New(Options{
		Registry:     RegistryOptions{URL: deadURL, Retries: 1, Backoff: time.Millisecond, Timeout: time.Second},
		SchemasTopic: "_schemas",
		Reader:       kreadTopicReader(reader),
	})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := reg.Extractor("customerId")
	if err != nil {
		t.Fatal(err)
	}

	var keys []string
	nulls := 0
	counts := Counts{}
	var fieldErr string
	err = kreadTopicReader(reader)(ctx, "orders", func(_, value []byte) error {
		k, isNull, err := ex.ExtractContext(ctx, value)
		switch {
		case err != nil && !counts.Add(err):
			return err // not a per-record error
		case err != nil:
			var de *DecodeError
			if errors.As(err, &de) && de.Kind == KindFieldMissing {
				fieldErr = err.Error()
			}
		case isNull:
			nulls++
		default:
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys, ","); got != "c-1,c-2,c-5" {
		t.Errorf("keys = %s, want c-1,c-2,c-5", got)
	}
	if nulls != 1 {
		t.Errorf("null keys = %d, want 1", nulls)
	}
	want := Counts{
		{Kind: KindFieldMissing, SchemaID: 13, HasID: true}:  1,
		{Kind: KindUnknownSchema, SchemaID: 14, HasID: true}: 1,
	}
	if len(counts) != len(want) || counts[CountKey{KindFieldMissing, 13, true}] != 1 || counts[CountKey{KindUnknownSchema, 14, true}] != 1 {
		t.Errorf("error counts = %v, want %v", counts, want)
	}
	if !strings.Contains(fieldErr, `"customerId"`) || !strings.Contains(fieldErr, "schema id 13") {
		t.Errorf("field error %q does not name the path and the schema id", fieldErr)
	}
	w, err := reg.Lookup(ctx, 12)
	if err != nil || w.Source != "schemas topic _schemas" {
		t.Errorf("id 12 came from %v (%v), want the schemas topic", w, err)
	}
	if got := reg.Subjects(ctx, 11); len(got) != 1 || got[0] != (SubjectVersion{"orders-value", 1, true}) {
		t.Errorf("subjects of 11 = %v", got)
	}
}
