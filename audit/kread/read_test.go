package kread

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// writeMixed writes committed, aborted and (at the end of partition 1)
// still-open transactions interleaved with plain and idempotent writes.
func writeMixed(t *testing.T, topic string, m *model, newP func(id string, o ...kgo.Opt) *producer) (open *producer) {
	plain := newP("", kgo.DisableIdempotentWrite())
	idem := newP("")
	a, b := newP("txn-a"), newP("txn-b")

	plain.send(0, "n0")
	a.begin()
	b.begin()
	a.send(0, "A1")
	b.send(0, "B1")
	a.send(1, "A2")
	b.send(2, "B2")
	plain.send(0, "n1")
	plain.send(1, "n2")
	plain.send(2, "n3")
	a.send(0, "A3", "A3b")
	b.send(0, "B3")
	b.send(1, "B4", "B4b")
	b.end(false)
	a.end(true)
	idem.send(2, "i1")

	c := newP("txn-c")
	c.begin()
	c.send(1, "C1")
	c.send(2, "C2")
	c.end(true)
	d := newP("txn-d")
	d.begin()
	d.send(0, "D1")
	d.end(false)
	plain.send(0, "n4")
	plain.sendRecs(
		&kgo.Record{Partition: 2, Key: nil, Value: nil},
		&kgo.Record{Partition: 2, Key: []byte{}, Value: []byte{}},
	)
	// The same transactional id aborting then committing again.
	d.begin()
	d.send(2, "D2")
	d.end(true)

	e := newP("txn-e")
	e.begin()
	e.send(1, "E1", "E2")
	plain.send(1, "n5") // above the LSO while E is open
	plain.send(0, "n6")
	return e
}

func TestReadCommittedAbortedOpen(t *testing.T) {
	const topic = "mix"
	c := newCluster(t, 3, 3, topic)
	m := newModel()
	newP := func(id string, o ...kgo.Opt) *producer { return newProducer(t, c, m, topic, id, o...) }
	open := writeMixed(t, topic, m, newP)
	ctx := ctxT(t)
	r := newReader(t, c)

	offs, err := r.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 3 {
		t.Fatalf("offsets for %d partitions, want 3", len(offs))
	}
	for p := int32(0); p < 3; p++ {
		recs := m.recs[p]
		hw := recs[len(recs)-1].offset + 1 + 0 // markers come after the last data record only where a txn ended last
		o := offs[p]
		if o.LogStart != 0 {
			t.Errorf("p%d log start %d, want 0", p, o.LogStart)
		}
		if o.HighWatermark < hw {
			t.Errorf("p%d high watermark %d, want >= %d", p, o.HighWatermark, hw)
		}
		_, st := m.expect(p, 0, o.HighWatermark, false)
		if o.LSO != st.Next {
			t.Errorf("p%d LSO %d, want %d", p, o.LSO, st.Next)
		}
	}
	if offs[1].LSO >= offs[1].HighWatermark {
		t.Errorf("p1: LSO %d not below the high watermark %d with a transaction open", offs[1].LSO, offs[1].HighWatermark)
	}

	for _, withAborted := range []bool{false, true} {
		col := newCollector()
		var ranges []Range
		for p, o := range offs {
			// Ask up to the high watermark: reading must stop at the LSO.
			ranges = append(ranges, Range{Topic: topic, Partition: p, From: o.LogStart, To: o.HighWatermark})
		}
		stats, err := r.Read(ctx, ranges, ReadOptions{Aborted: withAborted}, col.fn(nil))
		if err != nil {
			t.Fatal(err)
		}
		if len(col.errs) > 0 {
			t.Fatal(strings.Join(col.errs, "\n"))
		}
		for p := int32(0); p < 3; p++ {
			tp := TP{topic, p}
			want, wst := m.expect(p, 0, offs[p].HighWatermark, withAborted)
			checkRecords(t, tp, col.recs[tp], want)
			got := stats[tp]
			if got.Committed != wst.Committed || got.Aborted != wst.Aborted || got.Next != wst.Next || got.Gaps != 0 {
				t.Errorf("withAborted=%v %v stats %+v, want committed %d aborted %d next %d", withAborted, tp, got, wst.Committed, wst.Aborted, wst.Next)
			}
		}
		// Markers: p0 has B abort, A commit, D abort; p1 A commit, B abort, C
		// commit; p2 B abort, C commit, D commit (E is still open).
		for p, want := range map[int32]int64{0: 3, 1: 3, 2: 3} {
			if got := stats[TP{topic, p}].Control; got != want || got != m.ctrl[p] {
				t.Errorf("p%d control records %d, want %d (model %d)", p, got, want, m.ctrl[p])
			}
		}
	}

	// Once E commits, the rest of partition 1 becomes readable.
	open.end(true)
	offs2, err := r.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if offs2[1].LSO != offs2[1].HighWatermark {
		t.Fatalf("p1 LSO %d != HW %d after commit", offs2[1].LSO, offs2[1].HighWatermark)
	}
	col := newCollector()
	from := offs[1].LSO
	stats, err := r.Read(ctx, []Range{{Topic: topic, Partition: 1, From: from, To: offs2[1].HighWatermark}}, ReadOptions{}, col.fn(nil))
	if err != nil {
		t.Fatal(err)
	}
	tp := TP{topic, 1}
	want, _ := m.expect(1, from, offs2[1].HighWatermark, false)
	checkRecords(t, tp, col.recs[tp], want)
	if len(want) != 3 || string(want[0].value) != "E1" || string(want[2].value) != "n5" {
		t.Fatalf("model after commit: %+v", want)
	}
	if s := stats[tp]; s.Control != 1 || s.Aborted != 0 || s.Next != offs2[1].HighWatermark {
		t.Errorf("after commit: %+v", s)
	}
}

func TestReadStopsAtToWhileProducing(t *testing.T) {
	const topic = "live"
	c := newCluster(t, 3, 1, topic)
	m := newModel()
	plain := newProducer(t, c, m, topic, "")
	for i := 0; i < 50; i++ {
		plain.send(0, "x")
	}
	txn := newProducer(t, c, m, topic, "live-txn")
	txn.begin()
	txn.send(0, "t1", "t2")
	txn.end(true)
	ctx := ctxT(t)
	r := newReader(t, c, func(o *Options) { o.PartitionMaxBytes = 256 })
	snap, err := r.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	to := snap[0].LSO

	// Keep writing (plain and transactional, some aborted) during the read.
	stop := make(chan struct{})
	done := make(chan struct{})
	var written atomic.Int64
	go func() {
		defer close(done)
		w := newProducer(t, c, nil, topic, "")
		tw := newProducer(t, c, nil, topic, "live-writer")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i%3 == 0 {
				if err := tw.cl.BeginTransaction(); err != nil {
					return
				}
				tw.cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("late")})
				if err := tw.cl.EndTransaction(ctx, kgo.TransactionEndTry(i%2 == 0)); err != nil {
					return
				}
			} else {
				w.cl.ProduceSync(ctx, &kgo.Record{Partition: 0, Value: []byte("late")})
			}
			written.Add(1)
		}
	}()
	defer func() { close(stop); <-done }()
	if !eventually(func() bool { return written.Load() >= 20 }) {
		t.Fatalf("the writer wrote %d records", written.Load())
	}

	col := newCollector()
	// The first callback waits until the writer has written past the end
	// of the range, so the read runs while the partition grows.
	atStart := written.Load()
	var once sync.Once
	slow := func(int, []Record) {
		once.Do(func() {
			if !eventually(func() bool { return written.Load() >= atStart+20 }) {
				t.Errorf("the writer did not get ahead (%d written)", written.Load())
			}
		})
	}
	stats, err := r.Read(ctx, []Range{{Topic: topic, Partition: 0, From: 0, To: to}}, ReadOptions{Aborted: true}, col.fn(slow))
	if err != nil {
		t.Fatal(err)
	}
	now, err := r.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if now[0].HighWatermark <= to {
		t.Fatalf("the writer did not write past the snapshot (%d <= %d)", now[0].HighWatermark, to)
	}
	tp := TP{topic, 0}
	want, _ := m.expect(0, 0, to, true)
	checkRecords(t, tp, col.recs[tp], want)
	if s := stats[tp]; s.Next != to || s.Committed != 52 || s.Aborted != 0 || s.Control != 1 {
		t.Errorf("stats %+v, want next %d, 52 committed, 1 control", s, to)
	}
	if calls := col.calls; calls < 5 {
		t.Errorf("only %d callbacks: the small fetch size was not honoured", calls)
	}
}

func TestOffsetsForTime(t *testing.T) {
	const topic = "times"
	c := newCluster(t, 3, 2, topic)
	p := newProducer(t, c, nil, topic, "")
	base := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		for part := int32(0); part < 2; part++ {
			// Partition 1 runs 30 s behind partition 0.
			ts := base.Add(time.Duration(i)*10*time.Second - time.Duration(part)*30*time.Second)
			p.sendRecs(&kgo.Record{Partition: part, Value: []byte("v"), Timestamp: ts})
		}
	}
	r := newReader(t, c)
	ctx := ctxT(t)
	tests := []struct {
		at   time.Time
		want map[int32]int64
	}{
		{base.Add(-time.Hour), map[int32]int64{0: 0, 1: 0}},
		{base, map[int32]int64{0: 0, 1: 3}},
		{base.Add(45 * time.Second), map[int32]int64{0: 5, 1: 8}},
		{base.Add(90 * time.Second), map[int32]int64{0: 9, 1: 10}}, // none in p1: its high watermark
		{base.Add(time.Hour), map[int32]int64{0: 10, 1: 10}},
	}
	for _, tt := range tests {
		got, err := r.OffsetsForTime(ctx, topic, tt.at)
		if err != nil {
			t.Fatal(err)
		}
		for part, w := range tt.want {
			if got[part] != w {
				t.Errorf("at %s p%d: offset %d, want %d", tt.at.Format(time.RFC3339), part, got[part], w)
			}
		}
	}
}

func TestGroupOffsetsNeverJoinsOrCommits(t *testing.T) {
	const topic, group = "in", "myapp"
	c := newCluster(t, 3, 3, topic, "other")
	admin := newProducer(t, c, nil, topic, "", kgo.MaxVersions(kversion.V3_6_0())) // commits by topic name
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Group = group
	commit.Generation = -1
	ct := kmsg.NewOffsetCommitRequestTopic()
	ct.Topic = topic
	for _, po := range [][2]int64{{0, 17}, {2, 4}} {
		cp := kmsg.NewOffsetCommitRequestTopicPartition()
		cp.Partition, cp.Offset = int32(po[0]), po[1]
		ct.Partitions = append(ct.Partitions, cp)
	}
	commit.Topics = append(commit.Topics, ct)
	resp, err := commit.RequestWith(ctxT(t), admin.cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("fixture commit p%d: code %d", rp.Partition, rp.ErrorCode)
			}
		}
	}

	// From here on, count every group-membership or commit request.
	var forbidden atomic.Int64
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup,
		kmsg.OffsetCommit, kmsg.TxnOffsetCommit, kmsg.ConsumerGroupHeartbeat, kmsg.OffsetDelete} {
		c.ControlKey(int16(k), func(kmsg.Request) (kmsg.Response, error, bool) {
			forbidden.Add(1)
			return nil, nil, false
		})
	}

	r := newReader(t, c)
	got, err := r.GroupOffsets(ctxT(t), group, []string{topic, "other"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[TP]int64{{topic, 0}: 17, {topic, 2}: 4}
	if len(got) != len(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	for tp, o := range want {
		if got[tp] != o {
			t.Errorf("%v: %d, want %d", tp, got[tp], o)
		}
	}
	none, err := r.GroupOffsets(ctxT(t), "nobody", []string{topic})
	if err != nil || len(none) != 0 {
		t.Errorf("unknown group: %v, %v; want empty", none, err)
	}
	if n := forbidden.Load(); n != 0 {
		t.Errorf("the reader sent %d group membership/commit requests", n)
	}
}

func TestUnknownTopicNamed(t *testing.T) {
	c := newCluster(t, 1, 1, "exists")
	r := newReader(t, c)
	_, err := r.Partitions(ctxT(t), "no-such-topic")
	if !errors.Is(err, ErrUnknownTopic) || !strings.Contains(err.Error(), "no-such-topic") {
		t.Fatalf("err = %v", err)
	}
	ts, err := r.Topics(ctxT(t))
	if err != nil || len(ts) != 1 || ts[0] != "exists" {
		t.Fatalf("topics %v, %v", ts, err)
	}
}

func TestUnreachableClusterGivesUp(t *testing.T) {
	r, err := New(Options{Brokers: []string{"127.0.0.1:1"}, Timeout: time.Second, MaxRetries: 3, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := time.Now()
	_, err = r.Partitions(ctxT(t), "x")
	if err == nil || errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("err = %v, want a connection failure", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %s to give up", d)
	}
}

func TestReadBoundsConcurrencyAndReportsProgress(t *testing.T) {
	const topic, parts = "wide", 6
	c := newCluster(t, 3, parts, topic)
	m := newModel()
	p := newProducer(t, c, m, topic, "")
	for part := int32(0); part < parts; part++ {
		for i := 0; i < 8; i++ {
			p.send(part, fmt.Sprintf("v%d", i))
		}
	}
	r := newReader(t, c, func(o *Options) { o.Concurrency = 2; o.PartitionMaxBytes = 80 })
	var inCallback, maxInCallback atomic.Int64
	var mu sync.Mutex
	progress := map[TP][]int64{}
	var ranges []Range
	for part := int32(0); part < parts; part++ {
		ranges = append(ranges, Range{Topic: topic, Partition: part, From: 0, To: 8})
	}
	col := newCollector()
	stats, err := r.Read(ctxT(t), ranges, ReadOptions{Progress: func(tp TP, next int64) {
		mu.Lock()
		progress[tp] = append(progress[tp], next)
		mu.Unlock()
	}}, col.fn(func(int, []Record) {
		n := inCallback.Add(1)
		for {
			old := maxInCallback.Load()
			if n <= old || maxInCallback.CompareAndSwap(old, n) {
				break
			}
		}
		// The first callbacks wait for each other: with concurrency 2 two
		// partitions must be in their callbacks at once (and never more).
		if !eventually(func() bool { return maxInCallback.Load() >= 2 }) {
			t.Errorf("no second partition was handled while one was in its callback")
		}
		inCallback.Add(-1)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := maxInCallback.Load(); got != 2 {
		t.Errorf("at most %d partitions were being handled at once, want exactly the concurrency 2", got)
	}
	for part := int32(0); part < parts; part++ {
		tp := TP{topic, part}
		want, _ := m.expect(part, 0, 8, false)
		checkRecords(t, tp, col.recs[tp], want)
		pr := progress[tp]
		if len(pr) < 2 || pr[len(pr)-1] != 8 || stats[tp].Next != 8 {
			t.Errorf("%v progress %v, stats %+v", tp, pr, stats[tp])
		}
		for i := 1; i < len(pr); i++ {
			if pr[i] <= pr[i-1] {
				t.Errorf("%v progress not increasing: %v", tp, pr)
			}
		}
	}
}

func TestReadStopsWithTheContext(t *testing.T) {
	const topic = "cancel"
	c := newCluster(t, 1, 1, topic)
	p := newProducer(t, c, nil, topic, "")
	for i := 0; i < 20; i++ {
		p.send(0, "v")
	}
	// Every fetch fails: only the context can end the read.
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.NotLeaderForPartition, Count: -1})
	r := newReader(t, c, func(o *Options) { o.MaxRetries = 1 << 20 })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := r.Read(ctx, []Range{{Topic: topic, Partition: 0, From: 0, To: 20}}, ReadOptions{}, func([]Record) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "cancel[0] at 0") {
		t.Fatalf("err = %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to stop", d)
	}
}

func TestReadCallbackErrorStopsTheRead(t *testing.T) {
	const topic = "cberr"
	c := newCluster(t, 1, 1, topic)
	p := newProducer(t, c, nil, topic, "")
	p.send(0, "a", "b")
	r := newReader(t, c)
	boom := errors.New("index full")
	_, err := r.Read(ctxT(t), []Range{{Topic: topic, Partition: 0, From: 0, To: 2}}, ReadOptions{}, func([]Record) error { return boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the callback's error", err)
	}
}

// TestReadHandsOutLargeFetchesInPieces reads, in one fetch, far more
// records than one callback gets (emitRecords): committed and aborted
// transactions must come out exactly, in pieces, in offset order.
func TestReadHandsOutLargeFetchesInPieces(t *testing.T) {
	const topic = "big"
	c := newCluster(t, 1, 1, topic)
	m := newModel()
	vals := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%05d", prefix, i)
		}
		return out
	}
	p := newProducer(t, c, m, topic, "big-txn")
	for _, step := range []struct {
		prefix string
		n      int
		commit bool
	}{{"a", 3*emitRecords + 17, true}, {"b", emitRecords + 5, false}, {"c", 2 * emitRecords, true}} {
		p.begin()
		p.send(0, vals(step.prefix, step.n)...)
		p.end(step.commit)
	}
	ctx := ctxT(t)
	r := newReader(t, c, func(o *Options) { o.PartitionMaxBytes = 64 << 20; o.FetchMaxBytes = 64 << 20 })
	offs, err := r.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, withAborted := range []bool{false, true} {
		col := newCollector()
		calls := 0
		rg := []Range{{Topic: topic, Partition: 0, From: 0, To: offs[0].LSO}}
		stats, err := r.Read(ctx, rg, ReadOptions{Aborted: withAborted}, col.fn(func(int, []Record) { calls++ }))
		if err != nil {
			t.Fatal(err)
		}
		if len(col.errs) > 0 {
			t.Fatal(strings.Join(col.errs, "\n"))
		}
		tp := TP{topic, 0}
		want, wst := m.expect(0, 0, offs[0].LSO, withAborted)
		checkRecords(t, tp, col.recs[tp], want)
		if got := stats[tp]; got.Committed != wst.Committed || got.Aborted != wst.Aborted || got.Next != wst.Next {
			t.Errorf("withAborted=%v stats %+v, want committed %d aborted %d next %d", withAborted, got, wst.Committed, wst.Aborted, wst.Next)
		}
		// Handed out after whole batches: a callback may exceed emitRecords
		// by one batch, but one fetch must not become one callback.
		if calls < 2 {
			t.Errorf("withAborted=%v: %d records in %d callbacks, want them in pieces", withAborted, len(want), calls)
		}
	}
}

// Partitions of one leader travel in one fetch, and batches written with
// every compression codec come out exactly.
func TestReadFetchesALeadersPartitionsTogether(t *testing.T) {
	const topic, parts = "codecs", 10
	c := newCluster(t, 1, parts, topic)
	m := newModel()
	codecs := []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}
	for part := int32(0); part < parts; part++ {
		p := newProducer(t, c, m, topic, "", kgo.ProducerBatchCompression(codecs[int(part)%len(codecs)]))
		vals := make([]string, 200)
		for i := range vals {
			vals[i] = fmt.Sprintf("value %d of partition %d, compressible compressible compressible", i, part)
		}
		p.send(part, vals...)
	}
	var mu sync.Mutex
	perFetch := map[int]int{} // partitions in a fetch -> fetches
	c.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		n := 0
		for _, rt := range kr.(*kmsg.FetchRequest).Topics {
			n += len(rt.Partitions)
		}
		mu.Lock()
		perFetch[n]++
		mu.Unlock()
		return nil, nil, false
	})
	r := newReader(t, c, func(o *Options) { o.Concurrency = 2; o.PartitionMaxBytes = 2048 })
	var ranges []Range
	for part := int32(0); part < parts; part++ {
		ranges = append(ranges, Range{Topic: topic, Partition: part, From: 0, To: 200})
	}
	col := newCollector()
	stats, err := r.Read(ctxT(t), ranges, ReadOptions{}, col.fn(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(col.errs) > 0 {
		t.Fatal(strings.Join(col.errs, "\n"))
	}
	for part := int32(0); part < parts; part++ {
		tp := TP{topic, part}
		want, _ := m.expect(part, 0, 200, false)
		checkRecords(t, tp, col.recs[tp], want)
		if s := stats[tp]; s.Committed != 200 || s.Next != 200 {
			t.Errorf("%v stats %+v", tp, s)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	most := 0
	for n := range perFetch {
		most = max(most, n)
	}
	// 10 partitions, 2 workers: a fetch carries up to 5 partitions.
	if most != 5 {
		t.Errorf("partitions per fetch: %v; want fetches of 5", perFetch)
	}
}
