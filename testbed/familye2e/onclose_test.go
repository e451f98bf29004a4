package familye2e

import (
	"context"
	"encoding/binary"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
	"github.com/lossaudit/lossaudit/testbed/streamsmeta"
)

// windowOnClose shows on real brokers why a time-windowed count emitted
// with emitStrategy(onWindowClose) is not audited (topology.md, emit
// final), and that lossaudit still refuses it. The testbed's windowed count
// (TOPOLOGY=windowed-count, WINDOW_EMIT=close: selectKey -> groupByKey ->
// windowedBy(1m, grace 10s) -> emitStrategy(onWindowClose) -> count ->
// toStream -> to, the emit interval 0 ms) counts 18 records of one word,
// one every 10 s of event time from a minute-aligned base: its stream time
// reaches 2m50s, so it emits the windows of minutes 0 and 1 (at the
// records of 1m10s and 2m10s, close times 1m and 2m) and commits the
// close time of the last emission, 2m, in its offsets' metadata (a close
// time that brings no new window to emit is not recorded). Then the application is stopped and started again (a
// new task instance, as after any restart or rebalance) and gets two
// records late by the partition's stream time: one in the window of
// minute -1, which never had a record, and one in minute 0's, newer than
// its records. Nothing is lost, yet the new instance, whose stream time
// starts anew while its emitted close time is restored, adds both to the
// window store and its changelog and emits neither window again: the
// changelog holds minute 0's window newer than the output and minute -1's
// window the output never had, both below the committed close time. A
// rule "every window below the committed close time is in the output at
// least as new as its changelog" would report both.
func windowOnClose(t *testing.T, c *kafka.Cluster, adm *kafka.Admin) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	const group = "onclose"
	in, out := group+"-words", group+"-counts"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: in, Partitions: 1}, kafka.TopicSpec{Name: out, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	const size, grace = time.Minute, 10 * time.Second
	sa := startApp(ctx, t, streamsapp.Options{Bootstrap: c.Bootstrap(), ApplicationID: group, Inputs: [3]string{in},
		Output: out, Dir: t.TempDir(), Count: true, Window: size, WindowGrace: grace, WindowOnClose: true, SessionTimeout: 6 * time.Second,
		PurgeInterval: time.Hour})
	base := time.Now().Add(-10 * time.Minute).Truncate(time.Minute)
	produce := func(offsets ...time.Duration) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...), kgo.DefaultProduceTopic(in))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for _, d := range offsets {
			if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("w"), Value: []byte("w"), Timestamp: base.Add(d)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	var load []time.Duration
	for j := range 18 {
		load = append(load, time.Duration(j)*10*time.Second)
	}
	produce(load...)
	text, _ := drainCount(ctx, t, adm, sa, group, in)
	store := regexp.MustCompile(`KSTREAM-AGGREGATE-STATE-STORE-\d+`).Find(text)
	if store == nil {
		t.Fatalf("no window store in the topology:\n%s", text)
	}
	changelog := group + "-" + string(store) + "-changelog"
	window := func(start time.Duration) string {
		return "w" + string(binary.BigEndian.AppendUint64(nil, uint64(base.Add(start).UnixMilli())))
	}
	// The changelog's key is [key][8-byte start][4-byte sequence number];
	// its newest record per window, by offset.
	newest := func() map[string]*kgo.Record {
		m := map[string]*kgo.Record{}
		for k, r := range lastByOffset(ctx, t, c, adm, changelog) {
			if len(k) < 12 {
				t.Fatalf("changelog key %x: too short", k)
			}
			if old, ok := m[k[:len(k)-4]]; !ok || r.Offset > old.Offset {
				m[k[:len(k)-4]] = r
			}
		}
		return m
	}
	closeTime := committedCloseTime(ctx, t, c, group, group+"-"+string(countRepartition.FindSubmatch(text)[1]), string(store))
	if want := base.Add(130*time.Second - grace).UnixMilli(); closeTime != want {
		t.Fatalf("committed close time %d, want %d (stream time 2m10s minus grace: the last emission)", closeTime, want)
	}
	before := lastByOffset(ctx, t, c, adm, out)
	for _, m := range []time.Duration{0, time.Minute} {
		r := before[window(m)]
		if r == nil || !bytesCount(r.Value, 6) || r.Timestamp != base.Add(m+50*time.Second) {
			t.Fatalf("the output's window of minute %v is %v, want a count of 6 at %v", m, r, base.Add(m+50*time.Second))
		}
	}

	// A new task instance, two records late by the partition's order.
	if err := sa.Start(); err != nil {
		t.Fatal(err)
	}
	if err := sa.WaitRunning(ctx); err != nil {
		t.Fatal(err)
	}
	produce(-30*time.Second, 55*time.Second)
	drainCount(ctx, t, adm, sa, group, in)

	after, cl := lastByOffset(ctx, t, c, adm, out), newest()
	if got := committedCloseTime(ctx, t, c, group, group+"-"+string(countRepartition.FindSubmatch(text)[1]), string(store)); got != closeTime {
		t.Errorf("committed close time %d after the late records, want %d unchanged", got, closeTime)
	}
	for _, w := range []struct {
		start time.Duration
		count uint64
		ts    time.Duration
	}{{-time.Minute, 1, -30 * time.Second}, {0, 7, 55 * time.Second}} {
		if end := base.Add(w.start + size).UnixMilli(); end > closeTime {
			t.Fatalf("window of minute %v ends at %d, after the committed close time %d", w.start, end, closeTime)
		}
		r := cl[window(w.start)]
		if r != nil {
			t.Logf("changelog, window of minute %v: value %x at %v", w.start, r.Value, r.Timestamp)
		}
		if r == nil || r.Timestamp != base.Add(w.ts) || !bytesCount(r.Value, w.count) {
			t.Errorf("the changelog's newest record of the window of minute %v is %v, want a count of %d at %v", w.start, r, w.count, base.Add(w.ts))
		}
		o := after[window(w.start)]
		switch {
		case w.start < 0 && o != nil:
			t.Errorf("the output holds the window of minute %v (%v): it was never emitted", w.start, o)
		case w.start >= 0 && (o == nil || o.Offset != before[window(w.start)].Offset):
			t.Errorf("the output's last record of the window of minute %v is %v, want the one emitted before the restart", w.start, o)
		}
	}

	cfg := &config.Config{
		Kafka: config.Kafka{Brokers: c.Bootstrap(), FetchMaxBytes: 52428800, PartitionMaxBytes: 1048576, Concurrency: 8, Timeout: 30 * time.Second},
		Pipeline: config.Pipeline{ApplicationID: group, TopologyFile: sa.TopologyFile(),
			Nodes:  []config.Node{{Name: string(countNode.FindSubmatch(text)[1]), Kind: "windowed-count", Window: &config.NodeWindow{Size: size, Grace: grace, Emit: "final"}}},
			Inputs: []config.Input{{Name: "words", Topic: in, KeyFormat: config.KeyFormatString}}},
	}
	if err := app.CheckTopology(cfg); err == nil || !strings.Contains(err.Error(), "emitStrategy(onWindowClose)") {
		t.Errorf("CheckTopology = %v, want the refusal of emitStrategy(onWindowClose)", err)
	}
}

// bytesCount says whether v is the Long count n.
func bytesCount(v []byte, n uint64) bool { return len(v) == 8 && binary.BigEndian.Uint64(v) == n }

// committedCloseTime reads group's committed offset of partition 0 of
// topic (read-only, OffsetFetch) and returns the window close time its
// metadata holds under store, failing the test when there is none.
func committedCloseTime(ctx context.Context, t *testing.T, c *kafka.Cluster, group, topic, store string) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = group, true
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetching the offsets of group %s on %s: %v %+v", group, topic, err, resp)
	}
	p := resp.Topics[0].Partitions[0]
	if p.Metadata == nil {
		t.Fatalf("group %s committed no metadata on %s[0] (offset %d)", group, topic, p.Offset)
	}
	m, err := streamsmeta.DecodeOffsetMeta(*p.Metadata)
	if err != nil {
		t.Fatalf("group %s's metadata on %s[0] %q: %v", group, topic, *p.Metadata, err)
	}
	v, ok := m.Processor[store]
	if m.Version != 2 || !ok {
		t.Fatalf("group %s's metadata on %s[0] is %+v, want version 2 with %s", group, topic, m, store)
	}
	t.Logf("%s[0] committed at %d with %+v", topic, p.Offset, m)
	return v
}
