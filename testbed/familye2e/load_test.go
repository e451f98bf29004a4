package familye2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
)

// schemaDir writes schema as the registry's schema 1 under dir/avsc (the
// test application's schema directory, and the audit's schema.avsc_dir)
// and returns its codec and that directory.
func schemaDir(t *testing.T, dir, schema string) (*goavro.Codec, string) {
	t.Helper()
	avsc := filepath.Join(dir, "avsc")
	if err := os.MkdirAll(avsc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(avsc, "1.avsc"), []byte(schema), 0o600); err != nil {
		t.Fatal(err)
	}
	codec, err := goavro.NewCodec(schema)
	if err != nil {
		t.Fatal(err)
	}
	return codec, avsc
}

// produceAround produces recs, synchronously. With fault, it produces the
// first half, then the second half while fault runs (a producer retries
// through an outage until the brokers are back), and returns once both
// are done.
func produceAround(ctx context.Context, t *testing.T, cl *kgo.Client, recs []*kgo.Record, fault func(*testing.T)) {
	t.Helper()
	if fault == nil {
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		return
	}
	half := len(recs) / 2
	if err := cl.ProduceSync(ctx, recs[:half]...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cl.ProduceSync(ctx, recs[half:]...).FirstErr() }()
	fault(t)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// eventLoad returns n framed Event records (filterEvent, schema 1) for
// topic, keyed k-0..k-11, ids e-N, seven customers c-(N mod 7), amounts
// 7N mod 200, each with a timestamp of its own (a millisecond apart, an
// hour ago) so that (key, timestamp) names it. keep, when set, edits each
// record before it is added (a null key or value, say).
func eventLoad(t *testing.T, codec *goavro.Codec, topic string, n int, keep func(i int, r *kgo.Record)) []*kgo.Record {
	t.Helper()
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	recs := make([]*kgo.Record, 0, n)
	for i := 0; i < n; i++ {
		v, err := codec.BinaryFromNative([]byte{0, 0, 0, 0, 1}, map[string]any{
			"id": fmt.Sprintf("e-%d", i), "customer": fmt.Sprintf("c-%d", i%7), "amount": int64(7 * i % 200)})
		if err != nil {
			t.Fatal(err)
		}
		r := &kgo.Record{Topic: topic, Key: fmt.Appendf(nil, "k-%d", i%12), Value: v,
			Timestamp: base.Add(time.Duration(i) * time.Millisecond)}
		if keep != nil {
			keep(i, r)
		}
		recs = append(recs, r)
	}
	return recs
}

// lacking returns, sorted, the ids of the records owed to the output
// (owed, by identity, in input order) that it lacks: for an identity the
// output holds h times, all but the first h of its ids.
func lacking[K comparable](owed map[K][]string, have map[K]int) []string {
	var ids []string
	for k, owe := range owed {
		if lack := len(owe) - have[k]; lack > 0 {
			ids = append(ids, owe[len(owe)-lack:]...)
		}
	}
	slices.Sort(ids)
	return ids
}
