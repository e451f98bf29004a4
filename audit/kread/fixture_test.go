package kread

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Test fixtures: an in-process kfake cluster and franz-go producers that
// write known data. Fixtures may produce; the code under test never does.

func newCluster(t testing.TB, brokers int, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newReader(t testing.TB, c *kfake.Cluster, mod ...func(*Options)) *Client {
	t.Helper()
	o := Options{
		Brokers:         c.ListenAddrs(),
		Timeout:         5 * time.Second,
		MaxRetries:      60,
		RetryBackoff:    10 * time.Millisecond,
		MaxRetryBackoff: 200 * time.Millisecond,
	}
	for _, m := range mod {
		m(&o)
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// eventually polls cond until it holds or a generous deadline passes, and
// reports which. Tests wait for the state they need with it instead of
// sleeping; it may be called from any goroutine.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// model is what the fixture wrote: per partition, in offset order.
type model struct {
	mu   sync.Mutex
	recs map[int32][]modelRec
	ctrl map[int32]int64
}

type modelRec struct {
	offset     int64
	key, value []byte
	kind       Kind
	open       bool // in a transaction not ended yet
	txn        string
}

func newModel() *model {
	return &model{recs: map[int32][]modelRec{}, ctrl: map[int32]int64{}}
}

// producer writes to one topic with manual partitioning, one synchronous
// produce at a time so the offset order is the call order.
type producer struct {
	t     testing.TB
	cl    *kgo.Client
	m     *model
	topic string
	txn   string // transactional id; "" for plain producers
	parts map[int32]bool
}

func newProducer(t testing.TB, c *kfake.Cluster, m *model, topic, txnID string, extra ...kgo.Opt) *producer {
	t.Helper()
	return newProducerAt(t, c.ListenAddrs(), m, topic, txnID, extra...)
}

func newProducerAt(t testing.TB, brokers []string, m *model, topic, txnID string, extra ...kgo.Opt) *producer {
	t.Helper()
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	if txnID != "" {
		opts = append(opts, kgo.TransactionalID(txnID))
	}
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &producer{t: t, cl: cl, m: m, topic: topic, txn: txnID}
}

func (p *producer) begin() {
	p.t.Helper()
	if err := p.cl.BeginTransaction(); err != nil {
		p.t.Fatal(err)
	}
	p.parts = map[int32]bool{}
}

// send writes records with the given values (key "k"+value) to partition
// part and returns their offsets.
func (p *producer) send(part int32, vals ...string) []int64 {
	p.t.Helper()
	recs := make([]*kgo.Record, len(vals))
	for i, v := range vals {
		recs[i] = &kgo.Record{Partition: part, Key: []byte("k" + v), Value: []byte(v)}
	}
	return p.sendRecs(recs...)
}

func (p *producer) sendRecs(recs ...*kgo.Record) []int64 {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := p.cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		p.t.Fatalf("producing: %v", err)
	}
	offs := make([]int64, len(res))
	if p.m == nil {
		for i, r := range res {
			offs[i] = r.Record.Offset
		}
		return offs
	}
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	for i, r := range res {
		rec := r.Record
		offs[i] = rec.Offset
		mr := modelRec{offset: rec.Offset, key: rec.Key, value: rec.Value, kind: Committed, txn: p.txn}
		if p.parts != nil {
			mr.open = true
			p.parts[rec.Partition] = true
		}
		p.m.recs[rec.Partition] = append(p.m.recs[rec.Partition], mr)
	}
	return offs
}

// end commits or aborts the open transaction and updates the model: its
// records become committed or aborted and every partition it touched got
// one marker.
func (p *producer) end(commit bool) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	try := kgo.TryAbort
	if commit {
		try = kgo.TryCommit
	}
	if err := p.cl.EndTransaction(ctx, try); err != nil {
		p.t.Fatalf("ending transaction %s: %v", p.txn, err)
	}
	if p.m != nil {
		p.m.mu.Lock()
		for part := range p.parts {
			rs := p.m.recs[part]
			for i := range rs {
				if rs[i].open && rs[i].txn == p.txn {
					rs[i].open = false
					if !commit {
						rs[i].kind = Aborted
					}
				}
			}
			p.m.ctrl[part]++
		}
		p.m.mu.Unlock()
	}
	p.parts = nil
}

// expect returns what a read_committed reader must see in [from, to) of
// a partition: the records handed out (committed, plus aborted when asked),
// the counts, and where reading stops (the first open record, or to).
func (m *model) expect(part int32, from, to int64, withAborted bool) (recs []modelRec, st Stats) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st.Next = to
	for _, r := range m.recs[part] {
		if r.offset < from || r.offset >= to {
			continue
		}
		if r.open {
			if r.offset < st.Next {
				st.Next = r.offset
			}
		}
	}
	for _, r := range m.recs[part] {
		if r.offset < from || r.offset >= st.Next {
			continue
		}
		switch r.kind {
		case Committed:
			if st.Committed == 0 {
				st.FirstTS = -1 // filled by the caller from what was produced
			}
			st.Committed++
			recs = append(recs, r)
		case Aborted:
			st.Aborted++
			if withAborted {
				recs = append(recs, r)
			}
		}
	}
	return recs, st
}

// collector gathers what Read hands out, checking the callback contract.
type collector struct {
	mu       sync.Mutex
	recs     map[TP][]Record
	inflight map[TP]bool
	calls    int
	errs     []string
}

func newCollector() *collector {
	return &collector{recs: map[TP][]Record{}, inflight: map[TP]bool{}}
}

func (c *collector) fn(hook func(call int, recs []Record)) func([]Record) error {
	return func(recs []Record) error {
		if len(recs) == 0 {
			return fmt.Errorf("callback with no records")
		}
		tp := TP{Topic: recs[0].Topic, Partition: recs[0].Partition}
		c.mu.Lock()
		if c.inflight[tp] {
			c.errs = append(c.errs, fmt.Sprintf("concurrent callbacks for %v", tp))
		}
		c.inflight[tp] = true
		c.calls++
		call := c.calls
		c.mu.Unlock()

		copied := make([]Record, len(recs))
		for i, r := range recs {
			if r.Topic != tp.Topic || r.Partition != tp.Partition {
				c.mu.Lock()
				c.errs = append(c.errs, fmt.Sprintf("mixed partitions in one callback: %v and %s[%d]", tp, r.Topic, r.Partition))
				c.mu.Unlock()
			}
			r.Key = cloneBytes(r.Key)
			r.Value = cloneBytes(r.Value)
			copied[i] = r
		}
		if hook != nil {
			hook(call, recs)
		}
		c.mu.Lock()
		c.recs[tp] = append(c.recs[tp], copied...)
		c.inflight[tp] = false
		c.mu.Unlock()
		return nil
	}
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// bytesEqual distinguishes nil from empty.
func bytesEqual(a, b []byte) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	return string(a) == string(b)
}

// checkRecords compares what was handed out with the model, exactly.
func checkRecords(t *testing.T, tp TP, got []Record, want []modelRec) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%v: got %d records, want %d", tp, len(got), len(want))
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		g, w := got[i], want[i]
		if g.Offset != w.offset || !bytesEqual(g.Key, w.key) || !bytesEqual(g.Value, w.value) || g.Kind != w.kind {
			t.Errorf("%v record %d: got offset %d key %q(nil=%v) value %q(nil=%v) %s; want offset %d key %q(nil=%v) value %q(nil=%v) %s",
				tp, i, g.Offset, g.Key, g.Key == nil, g.Value, g.Value == nil, g.Kind,
				w.offset, w.key, w.key == nil, w.value, w.value == nil, w.kind)
			return
		}
	}
}
