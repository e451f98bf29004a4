package kread

import (
	"errors"
	"fmt"
	"hash/crc32"
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

// writeMany writes n transactions of 5 records per partition; every third
// one aborted, with plain records in between.
func writeMany(t *testing.T, c *kfake.Cluster, m *model, topic string, parts int32, n int) {
	t.Helper()
	plain := newProducer(t, c, m, topic, "")
	tx := newProducer(t, c, m, topic, "many")
	for i := 0; i < n; i++ {
		tx.begin()
		for p := int32(0); p < parts; p++ {
			vals := make([]string, 5)
			for j := range vals {
				vals[j] = fmt.Sprintf("t%d-%d-%d", i, p, j)
			}
			tx.send(p, vals...)
		}
		tx.end(i%3 != 2)
		for p := int32(0); p < parts; p++ {
			plain.send(p, fmt.Sprintf("plain%d-%d", i, p))
		}
	}
}

// scanState is what a disruption knows of the scan under way.
type scanState struct {
	r    *Client
	done chan struct{} // closed when Read returned

	mu       sync.Mutex
	to, next map[TP]int64
}

func (s *scanState) progress(tp TP, next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next[tp] = next
}

// furthest is the partition with the most offsets left to read.
func (s *scanState) furthest() (TP, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best TP
	left := int64(-1)
	for tp, to := range s.to {
		if l := to - s.next[tp]; l > left {
			best, left = tp, l
		}
	}
	return best, left
}

// readAndCheck reads every partition from 0 to its LSO with tiny fetches,
// calling disrupt from the callback, and checks the result against the
// model exactly: nothing lost, nothing repeated.
func readAndCheck(t *testing.T, c *kfake.Cluster, m *model, topic string, disrupt func(sc *scanState, call int, tp TP)) (retries int64) {
	t.Helper()
	ctx := ctxT(t)
	r := newReader(t, c, func(o *Options) { o.PartitionMaxBytes = 300; o.Concurrency = 2 })
	offs, err := r.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector()
	var ranges []Range
	for p, o := range offs {
		ranges = append(ranges, Range{Topic: topic, Partition: p, From: 0, To: o.LSO})
	}
	sc := &scanState{r: r, done: make(chan struct{}), to: map[TP]int64{}, next: map[TP]int64{}}
	for p, o := range offs {
		sc.to[TP{topic, p}] = o.LSO
	}
	stats, err := r.Read(ctx, ranges, ReadOptions{Progress: sc.progress}, col.fn(func(call int, recs []Record) {
		disrupt(sc, call, TP{recs[0].Topic, recs[0].Partition})
	}))
	close(sc.done)
	if err != nil {
		t.Fatal(err)
	}
	if len(col.errs) > 0 {
		t.Fatal(strings.Join(col.errs, "\n"))
	}
	if col.calls < 20 {
		t.Fatalf("only %d callbacks; the disruption had no room", col.calls)
	}
	for p, o := range offs {
		tp := TP{topic, p}
		want, wst := m.expect(p, 0, o.LSO, false)
		checkRecords(t, tp, col.recs[tp], want)
		if s := stats[tp]; s.Committed != wst.Committed || s.Aborted != wst.Aborted || s.Control != m.ctrl[p] || s.Next != o.LSO {
			t.Errorf("%v stats %+v, want committed %d aborted %d control %d next %d", tp, s, wst.Committed, wst.Aborted, m.ctrl[p], o.LSO)
		}
	}
	return r.retries.Load()
}

func TestReadThroughLeaderMoves(t *testing.T) {
	const topic = "moving"
	c := newCluster(t, 3, 3, topic)
	m := newModel()
	writeMany(t, c, m, topic, 3, 12)
	var moves atomic.Int64
	retries := readAndCheck(t, c, m, topic, func(_ *scanState, call int, tp TP) {
		if call%4 != 0 {
			return
		}
		// Move this partition's leadership to the next broker.
		leader := c.LeaderFor(tp.Topic, tp.Partition)
		if err := c.MoveTopicPartition(tp.Topic, tp.Partition, (leader+1)%3); err != nil {
			t.Error(err)
		}
		moves.Add(1)
		if call%12 == 0 {
			c.ShufflePartitionLeaders()
		}
	})
	if moves.Load() < 5 || retries == 0 {
		t.Errorf("%d leader moves, %d retries: the scan was not disrupted", moves.Load(), retries)
	}
	t.Logf("%d leader moves, %d retried fetches", moves.Load(), retries)
}

func TestReadThroughBrokerRestart(t *testing.T) {
	const topic = "restart"
	c := newCluster(t, 3, 3, topic)
	m := newModel()
	writeMany(t, c, m, topic, 3, 20)
	addrs := c.ListenAddrs()

	// While a node is "down", every request it still gets on an open
	// connection kills the connection, like a restarted process would.
	var down atomic.Int32
	down.Store(-1)
	var killed atomic.Int64
	c.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if n := down.Load(); n >= 0 && c.CurrentNode() == n {
			killed.Add(1)
			return nil, errors.New("broker restarting"), true
		}
		return nil, nil, false
	})

	// Every 8th callback takes down the leader of the partition with the
	// most left to read (unless a restart is under way), so that the scan
	// still has fetches to send it; the node comes back once a fetch failed
	// on it, or the scan ended.
	var mu sync.Mutex
	restarts, seen := 0, 0
	var back chan struct{} // closed when the node taken down is up again
	var wg sync.WaitGroup
	defer wg.Wait()
	retries := readAndCheck(t, c, m, topic, func(sc *scanState, call int, _ TP) {
		if call%8 != 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if back != nil {
			select {
			case <-back:
			default:
				return // one restart at a time; never block the scan
			}
		}
		tp, left := sc.furthest()
		if restarts >= 4 || left < 20 {
			return
		}
		// The leader as the client knows it: kfake serves fetches from
		// followers too, so taking down kfake's current leader of a
		// partition the client fetches from a follower disrupts nothing.
		lead, err := leaderOf(ctxT(t), sc.r, tp.Topic, tp.Partition)
		if err != nil {
			t.Error(err)
			return
		}
		node := int32(lead)
		before := sc.r.retries.Load()
		if err := c.RemoveNode(node); err != nil {
			t.Error(err)
			return
		}
		down.Store(node)
		restarts++
		done := make(chan struct{})
		back = done
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done)
			failed := func() bool { return sc.r.retries.Load() > before }
			if !eventually(func() bool {
				select {
				case <-sc.done:
					return true
				default:
					return failed()
				}
			}) {
				t.Errorf("neither a fetch failed nor the scan ended while node %d was down", node)
			}
			mu.Lock()
			if failed() {
				seen++
			}
			mu.Unlock()
			var port int
			fmt.Sscanf(addrs[node][strings.LastIndexByte(addrs[node], ':')+1:], "%d", &port)
			if _, _, err := c.AddNode(node, port); err != nil {
				t.Errorf("restarting node %d: %v", node, err)
			}
			down.Store(-1)
		}()
	})
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if seen < 2 || retries < int64(seen) {
		t.Errorf("%d restarts, %d seen by the scan, %d retries: the scan was not disrupted", restarts, seen, retries)
	}
	t.Logf("%d restarts, %d connections killed, %d retried fetches", restarts, killed.Load(), retries)
}

func TestReadRetriesNotLeaderThenGivesUpNamingThePartition(t *testing.T) {
	const topic = "faulty"
	c := newCluster(t, 3, 1, topic)
	m := newModel()
	p := newProducer(t, c, m, topic, "")
	for i := 0; i < 20; i++ {
		p.send(0, fmt.Sprintf("v%d", i))
	}
	// Three transient NOT_LEADER answers: retried, nothing lost.
	h := c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.NotLeaderForPartition, Count: 3})
	r := newReader(t, c, func(o *Options) { o.PartitionMaxBytes = 100 })
	col := newCollector()
	stats, err := r.Read(ctxT(t), []Range{{Topic: topic, Partition: 0, From: 0, To: 20}}, ReadOptions{}, col.fn(nil))
	if err != nil {
		t.Fatal(err)
	}
	if h.Hits() != 3 {
		t.Errorf("fault hit %d times, want 3", h.Hits())
	}
	want, _ := m.expect(0, 0, 20, false)
	checkRecords(t, TP{topic, 0}, col.recs[TP{topic, 0}], want)
	if s := stats[TP{topic, 0}]; s.Committed != 20 || s.Retries != 3 {
		t.Errorf("stats %+v, want 20 committed after 3 retries", s)
	}

	// A permanent NOT_LEADER: the retry budget runs out with a clear error.
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.NotLeaderForPartition, Count: -1})
	r2 := newReader(t, c, func(o *Options) { o.MaxRetries = 4; o.RetryBackoff = time.Millisecond })
	_, err = r2.Read(ctxT(t), []Range{{Topic: topic, Partition: 0, From: 7, To: 20}}, ReadOptions{}, col.fn(nil))
	if err == nil || !strings.Contains(err.Error(), "faulty[0] at 7") || !strings.Contains(err.Error(), "4 attempts") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadContinuesFromLogStart(t *testing.T) {
	const topic = "purged"
	c := newCluster(t, 1, 1, topic)
	m := newModel()
	p := newProducer(t, c, m, topic, "")
	for i := 0; i < 30; i++ {
		p.send(0, fmt.Sprintf("v%d", i))
	}
	// Purge the first 12 offsets (DeleteRecords), as a repartition topic is.
	del := kmsg.NewPtrDeleteRecordsRequest()
	dt := kmsg.NewDeleteRecordsRequestTopic()
	dt.Topic = topic
	dp := kmsg.NewDeleteRecordsRequestTopicPartition()
	dp.Partition, dp.Offset = 0, 12
	dt.Partitions = append(dt.Partitions, dp)
	del.Topics = append(del.Topics, dt)
	del.TimeoutMillis = 5000
	if _, err := del.RequestWith(ctxT(t), p.cl); err != nil {
		t.Fatal(err)
	}
	r := newReader(t, c)
	col := newCollector()
	stats, err := r.Read(ctxT(t), []Range{{Topic: topic, Partition: 0, From: 5, To: 30}}, ReadOptions{}, col.fn(nil))
	if err != nil {
		t.Fatal(err)
	}
	s := stats[TP{topic, 0}]
	if s.Gaps != 7 || s.Committed != 18 || s.Next != 30 {
		t.Errorf("stats %+v, want 7 gaps, 18 committed, next 30", s)
	}
	want, _ := m.expect(0, 12, 30, false)
	checkRecords(t, TP{topic, 0}, col.recs[TP{topic, 0}], want)
}

// BenchmarkRead reads 20k records of 100 bytes from one kfake partition; a
// baseline for performance work (records/s is reported).
func BenchmarkRead(b *testing.B) {
	const topic, n = "bench", 20000
	c := newCluster(b, 1, 1, topic)
	p := newProducer(b, c, nil, topic, "", kgo.ProducerLinger(5*time.Millisecond))
	val := make([]byte, 100)
	recs := make([]*kgo.Record, 0, 1000)
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Partition: 0, Key: fmt.Appendf(nil, "key-%d", i), Value: val})
		if len(recs) == cap(recs) {
			p.sendRecs(recs...)
			recs = recs[:0]
		}
	}
	r := newReader(b, c)
	ctx := ctxT(b)
	b.ResetTimer()
	for b.Loop() {
		var got int
		_, err := r.Read(ctx, []Range{{Topic: topic, Partition: 0, From: 0, To: n}}, ReadOptions{}, func(rs []Record) error {
			got += len(rs)
			return nil
		})
		if err != nil || got != n {
			b.Fatalf("read %d records, err %v", got, err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

func TestReadCompactedTopicWithGaps(t *testing.T) {
	const topic = "compacted"
	c := newCluster(t, 3, 0)
	admin := newProducer(t, c, nil, topic, "", kgo.MaxVersions(kversion.V3_6_0()))
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
	for k, v := range map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "0"} {
		cc := kmsg.NewCreateTopicsRequestTopicConfig()
		cc.Name, cc.Value = k, kmsg.StringPtr(v)
		ct.Configs = append(ct.Configs, cc)
	}
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 5000
	if resp, err := create.RequestWith(ctxT(t), admin.cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("creating topic: %v %+v", err, resp)
	}

	p := newProducer(t, c, nil, topic, "")
	kv := func(k string, v []byte) []int64 {
		return p.sendRecs(&kgo.Record{Partition: 0, Key: []byte(k), Value: v})
	}
	tx := newProducer(t, c, nil, topic, "compact-txn")
	tx.begin()
	tx.sendRecs(&kgo.Record{Partition: 0, Key: []byte("k9"), Value: []byte("aborted")})
	tx.end(false)
	kv("k1", []byte("a"))
	kv("k2", []byte("b"))
	c1 := kv("k1", []byte("c"))[0]
	kv("k2", nil) // a tombstone that expires at once
	d3 := kv("k3", []byte("d"))[0]
	kv("k5", []byte("x"))
	kv("k5", []byte("y"))
	e4 := kv("k4", []byte("e"))[0] // the active batch, always kept
	c.Compact()

	r := newReader(t, c)
	offs, err := r.Offsets(ctxT(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	col := newCollector()
	stats, err := r.Read(ctxT(t), []Range{{Topic: topic, Partition: 0, From: 0, To: offs[0].LSO}}, ReadOptions{Aborted: true}, col.fn(nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rec := range col.recs[TP{topic, 0}] {
		got = append(got, fmt.Sprintf("%d:%s=%s", rec.Offset, rec.Key, rec.Value))
	}
	want := []string{fmt.Sprintf("%d:k1=c", c1), fmt.Sprintf("%d:k3=d", d3), fmt.Sprintf("%d:k5=y", e4-1), fmt.Sprintf("%d:k4=e", e4)}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("read %v, want %v", got, want)
	}
	if s := stats[TP{topic, 0}]; s.Next != offs[0].LSO || s.Committed != 4 || s.Aborted != 0 {
		t.Errorf("stats %+v (offsets %+v)", s, offs[0])
	}
}

// A broker answering with a high watermark below the range end (a truncated
// log, or a new leader not caught up) must not end the read silently.
func TestReadRefusesToStopBelowTruncatedEnd(t *testing.T) {
	const topic = "truncated"
	c := newCluster(t, 1, 1, topic)
	p := newProducer(t, c, nil, topic, "")
	p.send(0, "a", "b", "c")
	var lied atomic.Int64
	c.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.FetchRequest)
		if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].FetchOffset < 3 {
			return nil, nil, false
		}
		lied.Add(1)
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = req.Topics[0].Topic
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 3, 3, 0
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	r := newReader(t, c, func(o *Options) { o.MaxRetries = 3; o.RetryBackoff = time.Millisecond })
	col := newCollector()
	stats, err := r.Read(ctxT(t), []Range{{Topic: topic, Partition: 0, From: 0, To: 5}}, ReadOptions{}, col.fn(nil))
	if err == nil || !strings.Contains(err.Error(), "truncated[0] at 3") || !strings.Contains(err.Error(), "high watermark 3 is below the range end 5") {
		t.Fatalf("err = %v", err)
	}
	if s := stats[TP{topic, 0}]; s.Committed != 3 || s.Next != 3 || lied.Load() != 3 {
		t.Errorf("stats %+v, %d lies", s, lied.Load())
	}
}

// emptyBatch encodes a v2 record batch with no records left (as log
// compaction can leave one behind) covering [base, base+delta].
func emptyBatch(base int64, delta int32) []byte {
	rb := kmsg.RecordBatch{FirstOffset: base, Magic: 2, LastOffsetDelta: delta, ProducerID: 7, FirstSequence: 0, PartitionLeaderEpoch: -1}
	raw := rb.AppendTo(nil)
	rb.Length = int32(len(raw) - 12)
	raw = rb.AppendTo(nil)
	rb.CRC = int32(crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return rb.AppendTo(nil)
}

// Offsets whose records were all compacted away, leaving only an empty
// batch (or nothing) before the LSO, are stepped over instead of fetched
// forever.
func TestReadStepsOverCompactedTail(t *testing.T) {
	tests := []struct {
		name      string
		batches   []byte
		wantAsked int64
	}{
		// The batch's header covers offsets 3 to 7: one fetch steps over
		// them (kafka-go's decoding did not show lastOffsetDelta; it took
		// two doublings of the fetch size and two confirmations).
		{"empty batch", emptyBatch(3, 4), 1},
		{"no batch at all", nil, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const topic = "emptybatch"
			c := newCluster(t, 1, 1, topic)
			m := newModel()
			p := newProducer(t, c, m, topic, "")
			p.send(0, "a", "b", "c")
			var asked atomic.Int64
			c.ControlKey(int16(kmsg.Fetch), func(kr kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				req := kr.(*kmsg.FetchRequest)
				if len(req.Topics) != 1 || len(req.Topics[0].Partitions) != 1 || req.Topics[0].Partitions[0].FetchOffset < 3 {
					return nil, nil, false
				}
				asked.Add(1)
				resp := req.ResponseKind().(*kmsg.FetchResponse)
				rt := kmsg.NewFetchResponseTopic()
				rt.Topic = req.Topics[0].Topic
				rp := kmsg.NewFetchResponseTopicPartition()
				rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = 8, 8, 0
				rp.RecordBatches = tc.batches
				rt.Partitions = append(rt.Partitions, rp)
				resp.Topics = append(resp.Topics, rt)
				return resp, nil, true
			})
			r := newReader(t, c, func(o *Options) { o.FetchMaxBytes = 4096; o.PartitionMaxBytes = 1024 })
			col := newCollector()
			stats, err := r.Read(ctxT(t), []Range{{Topic: topic, Partition: 0, From: 0, To: 8}}, ReadOptions{}, col.fn(nil))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := m.expect(0, 0, 3, false)
			checkRecords(t, TP{topic, 0}, col.recs[TP{topic, 0}], want)
			if s := stats[TP{topic, 0}]; s.Committed != 3 || s.Next != 8 {
				t.Errorf("stats %+v, want 3 committed, next 8", s)
			}
			if n := asked.Load(); n != tc.wantAsked {
				t.Errorf("asked %d times at offset 3, want %d", n, tc.wantAsked)
			}
		})
	}
}
