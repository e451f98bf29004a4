package kread

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kgo"

	tkafka "github.com/lossaudit/lossaudit/testbed/kafka"
)

// TestRealKafkaCommittedAbortedOpen runs the transaction scenario of
// TestReadCommittedAbortedOpen against a real Apache Kafka broker (kfake is
// not Kafka). It needs Java and Maven and starts a JVM, so it only runs
// unless LOSSAUDIT_REAL_KAFKA=0.
func TestRealKafkaCommittedAbortedOpen(t *testing.T) {
	cl := tkafka.StartForTest(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm, err := tkafka.NewAdmin(cl.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	const topic = "mix"
	if err := adm.CreateTopics(ctx, tkafka.TopicSpec{Name: topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	m := newModel()
	newP := func(id string, o ...kgo.Opt) *producer {
		return newProducerAt(t, cl.Bootstrap(), m, topic, id, o...)
	}
	writeMixed(t, topic, m, newP)

	r, err := New(Options{Brokers: cl.Bootstrap(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkWrongSecurityNamed(t, cl.Bootstrap())
	checkCodecsAndAppendTime(t, ctx, adm, cl.Bootstrap(), r)
	offs, err := r.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, withAborted := range []bool{false, true} {
		col := newCollector()
		var ranges []Range
		for p, o := range offs {
			ranges = append(ranges, Range{Topic: topic, Partition: p, From: o.LogStart, To: o.HighWatermark})
		}
		stats, err := r.Read(ctx, ranges, ReadOptions{Aborted: withAborted}, col.fn(nil))
		if err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 3; p++ {
			tp := TP{topic, p}
			want, wst := m.expect(p, 0, offs[p].HighWatermark, withAborted)
			checkRecords(t, tp, col.recs[tp], want)
			got := stats[tp]
			if got.Committed != wst.Committed || got.Aborted != wst.Aborted || got.Next != wst.Next || got.Control != m.ctrl[p] {
				t.Errorf("%v stats %+v, want committed %d aborted %d control %d next %d", tp, got, wst.Committed, wst.Aborted, m.ctrl[p], wst.Next)
			}
			if offs[p].LSO != wst.Next {
				t.Errorf("%v LSO %d, want %d", tp, offs[p].LSO, wst.Next)
			}
		}
	}
}

// TestRealKafkaBrokerKilledMidScan kills and restarts brokers of a 3-node
// Apache Kafka cluster while a scan with tiny fetches runs: nothing may be
// lost or repeated. Skipped like the test above.
func TestRealKafkaBrokerKilledMidScan(t *testing.T) {
	cl := tkafka.StartForTest(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	adm, err := tkafka.NewAdmin(cl.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	const topic = "killed"
	if err := adm.CreateTopics(ctx, tkafka.TopicSpec{Name: topic, Partitions: 3, RF: 3}); err != nil {
		t.Fatal(err)
	}
	m := newModel()
	plain := newProducerAt(t, cl.Bootstrap(), m, topic, "")
	tx := newProducerAt(t, cl.Bootstrap(), m, topic, "killer")
	for i := 0; i < 40; i++ {
		tx.begin()
		for p := int32(0); p < 3; p++ {
			tx.send(p, fmt.Sprintf("t%d-%d-a", i, p), fmt.Sprintf("t%d-%d-b", i, p), fmt.Sprintf("t%d-%d-c", i, p))
		}
		tx.end(i%4 != 3)
		for p := int32(0); p < 3; p++ {
			plain.send(p, fmt.Sprintf("p%d-%d", i, p))
		}
	}

	r, err := New(Options{Brokers: cl.Bootstrap(), Timeout: 10 * time.Second, PartitionMaxBytes: 200, Concurrency: 2,
		MaxRetries: 100, RetryTimeout: 3 * time.Minute, RetryBackoff: 50 * time.Millisecond, MaxRetryBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	offs, err := r.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var ranges []Range
	for p, o := range offs {
		ranges = append(ranges, Range{Topic: topic, Partition: p, From: 0, To: o.LSO})
	}
	col := newCollector()
	// Every 25th callback kills the leader of its partition (as the
	// client's metadata names it, so the partition's next fetch goes to
	// the dead broker), after the previous kill's restart finished; the
	// broker is started again once a fetch failed on it.
	var wg sync.WaitGroup
	var killMu sync.Mutex // the hook runs on several partitions' goroutines
	kills := 0
	var back chan struct{}
	stats, err := r.Read(ctx, ranges, ReadOptions{}, col.fn(func(call int, recs []Record) {
		if call%25 != 0 {
			return
		}
		killMu.Lock()
		defer killMu.Unlock()
		if back != nil {
			select {
			case <-back:
			case <-time.After(2 * time.Minute):
				t.Error("the killed broker did not come back")
				return
			}
		}
		if kills >= 3 {
			return
		}
		node, err := leaderOf(ctx, r, recs[0].Topic, recs[0].Partition)
		if err != nil {
			t.Error(err)
			return
		}
		before := r.retries.Load()
		if err := cl.KillNode(node); err != nil {
			t.Error(err)
			return
		}
		kills++
		done := make(chan struct{})
		back = done
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			if !eventually(func() bool { return r.retries.Load() > before }) {
				t.Errorf("no fetch failed while node %d was down", node)
			}
			if err := cl.StartNode(node); err != nil {
				t.Error(err)
			}
		}()
	}))
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kills, %d callbacks, %d retried attempts", kills, col.calls, r.retries.Load())
	if kills < 2 || r.retries.Load() < int64(kills) {
		t.Errorf("%d kills, %d retries: the scan was not disrupted", kills, r.retries.Load())
	}
	for p, o := range offs {
		tp := TP{topic, p}
		want, wst := m.expect(p, 0, o.LSO, false)
		checkRecords(t, tp, col.recs[tp], want)
		if s := stats[tp]; s.Committed != wst.Committed || s.Aborted != wst.Aborted || s.Control != m.ctrl[p] || s.Next != o.LSO {
			t.Errorf("%v stats %+v, want committed %d aborted %d control %d next %d", tp, s, wst.Committed, wst.Aborted, m.ctrl[p], o.LSO)
		}
	}
}

// checkWrongSecurityNamed points TLS and SASL clients at a real plaintext
// listener: each must be told so in words, without retrying for long.
func checkWrongSecurityNamed(t *testing.T, brokers []string) {
	t.Helper()
	_, clientTLS := selfSigned(t)
	for _, tc := range []struct {
		name string
		mod  func(o *Options)
		want string
	}{
		{"TLS", func(o *Options) { o.TLS = clientTLS }, "closed the connection during the TLS handshake: is it a TLS listener? (kafka.tls.enabled)"},
		{"SASL", func(o *Options) { o.SASL = plain.Mechanism{Username: "alice", Password: "s3cret"} },
			"refused the SASL handshake: is it a SASL listener? (kafka.sasl.mechanism)"},
	} {
		o := Options{Brokers: brokers, Timeout: 10 * time.Second}
		tc.mod(&o)
		r, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = r.Topics(ctxT(t))
		r.Close()
		if want := brokers[0] + " " + tc.want; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s against plaintext: err = %v, want it to say %q", tc.name, err, want)
		}
		if d := time.Since(start); d > 45*time.Second {
			t.Errorf("%s against plaintext: took %s", tc.name, d)
		}
	}
}

// leaderOf is the node id the client's metadata names as the leader of a
// partition.
func leaderOf(ctx context.Context, r *Client, topic string, part int32) (int, error) {
	m, err := r.meta(ctx)
	if err != nil {
		return 0, err
	}
	for _, mt := range m.Topics {
		for _, p := range mt.Partitions {
			if mt.Name == topic && p.PartitionIndex == part {
				return int(p.LeaderID), nil
			}
		}
	}
	return 0, fmt.Errorf("%s[%d] not in the metadata", topic, part)
}

// checkCodecsAndAppendTime writes records with every codec to a topic with
// message.timestamp.type=LogAppendTime, with create times in 2001, and
// reads them back: exact values, and the broker's append time as the
// timestamp, as a Java consumer reports it.
func checkCodecsAndAppendTime(t *testing.T, ctx context.Context, adm *tkafka.Admin, brokers []string, r *Client) {
	t.Helper()
	const topic = "appendtime"
	if err := adm.CreateTopics(ctx, tkafka.TopicSpec{Name: topic, Partitions: 5, Configs: map[string]string{"message.timestamp.type": "LogAppendTime"}}); err != nil {
		t.Fatal(err)
	}
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	created := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	before := time.Now().Add(-time.Minute)
	m := newModel()
	for part, codec := range codecs {
		p := newProducerAt(t, brokers, m, topic, "", kgo.ProducerBatchCompression(codec))
		var recs []*kgo.Record
		for i := range 300 {
			recs = append(recs, &kgo.Record{Partition: int32(part), Timestamp: created,
				Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "value %d, codec %d, compressible compressible", i, part)})
		}
		p.sendRecs(recs...)
	}
	after := time.Now().Add(time.Minute)
	var ranges []Range
	for part := range codecs {
		ranges = append(ranges, Range{Topic: topic, Partition: int32(part), From: 0, To: 300})
	}
	col := newCollector()
	if _, err := r.Read(ctx, ranges, ReadOptions{}, col.fn(nil)); err != nil {
		t.Fatal(err)
	}
	for part := range codecs {
		tp := TP{topic, int32(part)}
		want, _ := m.expect(int32(part), 0, 300, false)
		checkRecords(t, tp, col.recs[tp], want)
		for _, rec := range col.recs[tp] {
			if ts := time.UnixMilli(rec.Timestamp); !rec.LogAppendTime || ts.Before(before) || ts.After(after) {
				t.Errorf("%v offset %d: timestamp %s (LogAppendTime %v), want the append time", tp, rec.Offset, ts.UTC(), rec.LogAppendTime)
				break
			}
		}
	}
}
