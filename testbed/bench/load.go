package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/audit/demo/sim"
	tk "github.com/lossaudit/lossaudit/testbed/kafka"
)

// Schema ids in the _schemas topic: one per distinct schema, as a registry
// assigns them.
const (
	orderSchemaID  = 1
	joinedSchemaID = 2
)

// names are the pipeline's topics, with Kafka Streams' generated names for
// the user story's topology written in the order a, b, c.
type names struct {
	app string
	// copied is a copy of input a, record for record (a mirror's sink),
	// for lossaudit compare.
	copied    string
	inputs    [3]string
	stores    [3]string
	repart    [3]string
	changelog [3]string
	output    string
}

func pipelineNames() names {
	n := names{app: "benchapp", output: "bench-joined", copied: "bench-a-copy"}
	for x, num := range []string{"0000000002", "0000000009", "0000000016"} {
		n.inputs[x] = "bench-" + string(rune('a'+x))
		n.stores[x] = "KSTREAM-REDUCE-STATE-STORE-" + num
		n.repart[x] = n.app + "-" + n.stores[x] + "-repartition"
		n.changelog[x] = n.app + "-" + n.stores[x] + "-changelog"
	}
	return n
}

// audited lists every topic the audit reads (and the raw readers read).
func (n names) audited() []string {
	var ts []string
	for x := 0; x < 3; x++ {
		ts = append(ts, n.inputs[x], n.repart[x], n.changelog[x])
	}
	return append(ts, n.output)
}

// loadSpec says what to load.
type loadSpec struct {
	Records       int64  // input records over the three inputs
	Partitions    int    // per topic
	RF            int    // replication factor
	Compression   string // none, gzip, snappy, lz4, zstd
	CommitRecords int    // input records per input per simulated commit
	RepartTail    float64
	NullKeyRate   float64
	Seed          uint64
	// DistinctKeys gives every input record a key of its own within its
	// input (record i of each input has key i; the three inputs share the
	// key ids, so the join still meets), instead of one key per ten
	// records: the profile whose state is as large as the data.
	DistinctKeys bool `json:"distinct_keys,omitempty"`
}

// topicCount is what a topic holds: committed data records and their key
// plus value bytes.
type topicCount struct {
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
}

// manifest describes loaded data; it is written next to the cluster so a
// later run can reuse the data.
type manifest struct {
	Spec        loadSpec              `json:"spec"`
	Keys        int                   `json:"keys"`
	BaseMs      int64                 `json:"base_ms"`
	SpanMs      int64                 `json:"span_ms"`
	WindowMs    int64                 `json:"window_ms"` // where the newest 5% of every input starts
	Topics      map[string]topicCount `json:"topics"`
	LoadSeconds float64               `json:"load_seconds"`
	Loaded      time.Time             `json:"loaded"`
	// Appended counts the input records added after the load (appendData),
	// over the three inputs; Topics includes them and their downstream
	// records.
	Appended int64 `json:"appended,omitempty"`
}

// total sums the counts of the given topics.
func (m *manifest) total(topics []string) topicCount {
	var c topicCount
	for _, t := range topics {
		c.Records += m.Topics[t].Records
		c.Bytes += m.Topics[t].Bytes
	}
	return c
}

// windowFrom is the window start covering the newest 5% of every input.
func (m *manifest) windowFrom() time.Time {
	return time.UnixMilli(m.WindowMs).UTC()
}

func readManifest(path string) (*manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return &m, nil
}

func (m *manifest) write(path string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func codec(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("unknown compression %q (none, gzip, snappy, lz4, zstd)", name)
}

// loader writes a consistent pipeline: what the user story's application
// under exactly_once_v2 would have left after processing every input
// record. Inputs are produced by a plain idempotent producer; per commit
// interval, one transaction holds the changelog records (the latest value
// per changed key, with the reduce's max timestamp), one join result per
// changed key present in the left table (timestamp the max of the three
// tables'), and for the last RepartTail of the data the repartition copies
// (older ones were purged). At the end the group commits the end offsets
// of inputs and repartition topics, so nothing is pending and the audit
// must find nothing.
type loader struct {
	spec    loadSpec
	n       names
	brokers []string
	keys    int
	perIn   int64
	// timestamps: of the first record, the newest, and the earliest of the
	// inputs' records at position windowAt (the newest 5% start there).
	baseMs, lastMs, windowMs int64
	windowAt                 int64
	clock                    int64

	mu     sync.Mutex
	counts map[string]topicCount
	err    error

	// per input table state, by key id: newest ts (0 = absent) and amount.
	ts  [3][]int64
	amt [3][]int64

	// from is the position (per input) of the first record to produce:
	// 0 for a load, the records already there for an append.
	from int64
	// repartTail is the share of the commits whose repartition copies are
	// kept (spec.RepartTail for a load, all for an append).
	repartTail float64
}

func (l *loader) count(topic string, key, value []byte) {
	l.mu.Lock()
	c := l.counts[topic]
	c.Records++
	c.Bytes += int64(len(key) + len(value))
	l.counts[topic] = c
	l.mu.Unlock()
}

func (l *loader) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.mu.Unlock()
}

func (l *loader) firstErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// load creates the topics, registers the schemas and writes the data.
func load(ctx context.Context, brokers []string, spec loadSpec, logf func(string, ...any)) (*manifest, error) {
	started := time.Now()
	n := pipelineNames()
	perIn := spec.Records / 3
	keys := int(max(perIn/10, 1))
	if spec.DistinctKeys {
		keys = int(max(perIn, 1))
	}
	// Timestamps are the wall clock at production, as in a live pipeline:
	// transaction markers carry the broker's wall clock, and ListOffsets by
	// time finds the first batch, marker or not, at or after a time, so data
	// stamped long before its markers would make every window start early.
	l := &loader{spec: spec, n: n, brokers: brokers, keys: keys, perIn: perIn,
		counts: map[string]topicCount{}, windowAt: perIn * 95 / 100, repartTail: spec.RepartTail}
	for x := range 3 {
		l.ts[x] = make([]int64, keys)
		l.amt[x] = make([]int64, keys)
	}
	if err := l.createTopics(ctx); err != nil {
		return nil, err
	}
	if err := l.produce(ctx, logf); err != nil {
		return nil, err
	}
	if err := l.commitGroup(ctx); err != nil {
		return nil, err
	}
	return &manifest{Spec: spec, Keys: keys, BaseMs: l.baseMs, SpanMs: l.lastMs - l.baseMs, WindowMs: l.windowMs, Topics: l.counts,
		LoadSeconds: time.Since(started).Seconds(), Loaded: time.Now().UTC()}, nil
}

// appendData adds records input records (over the three inputs) to the
// pipeline m describes, with what the application would write for them
// (repartition copies, changelog and join results, in one transaction per
// commit), commits the group's offsets past them, and returns what it
// added per topic. The tables' earlier state is not known here: the new
// records are the newest (wall-clock timestamps), so the changelogs take
// their timestamps, and every changed key gets a join result as if it
// were in the left table (an extra output record is never a finding).
func appendData(ctx context.Context, brokers []string, m *manifest, records int64, logf func(string, ...any)) (map[string]topicCount, error) {
	perIn := records / 3
	l := &loader{spec: m.Spec, n: pipelineNames(), brokers: brokers, keys: m.Keys, perIn: perIn,
		counts: map[string]topicCount{}, windowAt: -1, from: (m.Spec.Records + m.Appended) / 3, repartTail: 1}
	for x := range 3 {
		l.ts[x] = make([]int64, l.keys)
		l.amt[x] = make([]int64, l.keys)
	}
	for k := range l.keys {
		l.ts[0][k] = 1 // every key counts as in the left table
	}
	if err := l.produce(ctx, logf); err != nil {
		return nil, err
	}
	if err := l.commitGroup(ctx); err != nil {
		return nil, err
	}
	return l.counts, nil
}

func (l *loader) createTopics(ctx context.Context) error {
	adm, err := tk.NewAdmin(l.brokers)
	if err != nil {
		return err
	}
	defer adm.Close()
	P, rf := int32(l.spec.Partitions), int16(l.spec.RF)
	big := map[string]string{"segment.bytes": strconv.Itoa(256 << 20), "retention.ms": strconv.Itoa(7 * 24 * 3600 * 1000)}
	specs := []tk.TopicSpec{
		{Name: sim.SchemasTopic, Partitions: 1, RF: rf, Configs: map[string]string{"cleanup.policy": "compact"}},
		{Name: l.n.output, Partitions: P, RF: rf, Configs: big},
		{Name: l.n.copied, Partitions: P, RF: rf, Configs: big},
	}
	for x := range 3 {
		specs = append(specs,
			tk.TopicSpec{Name: l.n.inputs[x], Partitions: P, RF: rf, Configs: big},
			tk.TopicSpec{Name: l.n.repart[x], Partitions: P, RF: rf, Configs: big},
			tk.TopicSpec{Name: l.n.changelog[x], Partitions: P, RF: rf,
				Configs: map[string]string{"cleanup.policy": "compact", "segment.bytes": strconv.Itoa(256 << 20)}})
	}
	return adm.CreateTopics(ctx, specs...)
}

// schemaRecords registers every subject in Schema Registry's storage format.
func (l *loader) schemaRecords() []*kgo.Record {
	recs := []*kgo.Record{{Topic: sim.SchemasTopic, Key: []byte(`{"keytype":"NOOP","magic":0}`)}}
	add := func(topic, schema string, id int) {
		subject := topic + "-value"
		k, _ := json.Marshal(map[string]any{"keytype": "SCHEMA", "subject": subject, "version": 1, "magic": 1})
		v, _ := json.Marshal(map[string]any{"subject": subject, "version": 1, "id": id, "schema": schema, "deleted": false})
		recs = append(recs, &kgo.Record{Topic: sim.SchemasTopic, Key: k, Value: v})
	}
	for x := range 3 {
		for _, t := range []string{l.n.inputs[x], l.n.repart[x], l.n.changelog[x]} {
			add(t, sim.OrderSchema, orderSchemaID)
		}
	}
	add(l.n.output, sim.JoinedSchema, joinedSchemaID)
	return recs
}

func customer(k int) string { return "cust-" + fmt.Sprintf("%08d", k) }

// tsOf is input x's i-th record timestamp: the wall clock, never going
// back.
func (l *loader) tsOf(x int, i int64) int64 {
	l.clock = max(l.clock, time.Now().UnixMilli())
	if l.baseMs == 0 {
		l.baseMs = l.clock
	}
	l.lastMs = l.clock
	if i == l.windowAt && (l.windowMs == 0 || l.clock < l.windowMs) {
		l.windowMs = l.clock
	}
	return l.clock
}

// keyOf is the key id of input record i: its position under
// DistinctKeys (an appended record, past the loaded keys, reuses one at
// random), else a random one of the keys.
func (l *loader) keyOf(rng *rand.Rand, i int64) int {
	if l.spec.DistinctKeys && i < int64(l.keys) {
		return int(i)
	}
	return rng.IntN(l.keys)
}

func (l *loader) produce(ctx context.Context, logf func(string, ...any)) error {
	comp, err := codec(l.spec.Compression)
	if err != nil {
		return err
	}
	common := []kgo.Opt{kgo.SeedBrokers(l.brokers...), kgo.ProducerBatchCompression(comp),
		kgo.ProducerLinger(5 * time.Millisecond), kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.MaxBufferedRecords(200000), kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil))}
	plain, err := kgo.NewClient(common...)
	if err != nil {
		return fmt.Errorf("loader: producer: %w", err)
	}
	defer plain.Close()
	txn, err := kgo.NewClient(append(common, kgo.TransactionalID("lossaudit-bench-loader"),
		kgo.TransactionTimeout(60*time.Second))...)
	if err != nil {
		return fmt.Errorf("loader: transactional producer: %w", err)
	}
	defer txn.Close()
	if l.from == 0 {
		if err := plain.ProduceSync(ctx, l.schemaRecords()...).FirstErr(); err != nil {
			return fmt.Errorf("loader: registering schemas: %w", err)
		}
	}
	rng := rand.New(rand.NewPCG(l.spec.Seed, 0x10ad+uint64(l.from)))
	B := int64(l.spec.CommitRecords)
	commits := (l.perIn + B - 1) / B
	tailFrom := int64(float64(commits) * (1 - l.repartTail))
	cb := func(r *kgo.Record, err error) {
		if err != nil {
			l.fail(fmt.Errorf("producing to %s: %w", r.Topic, err))
			return
		}
		l.count(r.Topic, r.Key, r.Value)
	}
	type change struct {
		k   int
		val []byte
	}
	lastLog := time.Now()
	for c := int64(0); c < commits; c++ {
		if err := l.firstErr(); err != nil {
			return err
		}
		var changed [3][]change
		var repart []*kgo.Record
		touched := map[int]struct{}{}
		for x := range 3 {
			pos := map[int]int{}
			for i := l.from + c*B; i < l.from+min((c+1)*B, l.perIn); i++ {
				k := l.keyOf(rng, i)
				ts := l.tsOf(x, i)
				amount := 100 + rng.Int64N(100000)
				oid := string(rune('A'+x)) + fmt.Sprintf("%09d", i)
				cust := customer(k)
				var custp *string
				if rng.Float64() >= l.spec.NullKeyRate {
					custp = &cust
				}
				val := appendOrder(make([]byte, 0, 96), custp, oid, amount, ts)
				rkey := []byte("ord-" + oid)
				plain.Produce(ctx, &kgo.Record{Topic: l.n.inputs[x], Key: rkey, Value: val, Timestamp: time.UnixMilli(ts)}, cb)
				if x == 0 {
					plain.Produce(ctx, &kgo.Record{Topic: l.n.copied, Key: rkey, Value: val, Timestamp: time.UnixMilli(ts)}, cb)
				}
				if custp == nil {
					continue // selectKey yields null: Kafka Streams drops it
				}
				if c >= tailFrom {
					repart = append(repart, &kgo.Record{Topic: l.n.repart[x], Key: []byte(cust), Value: val, Timestamp: time.UnixMilli(ts)})
				}
				// reduce: newest value, timestamp max(record, aggregate)
				if ts > l.ts[x][k] {
					l.ts[x][k] = ts
				}
				l.amt[x][k] = amount
				if j, ok := pos[k]; ok {
					changed[x][j].val = val
				} else {
					pos[k] = len(changed[x])
					changed[x] = append(changed[x], change{k, val})
				}
				touched[k] = struct{}{}
			}
		}
		if err := txn.BeginTransaction(); err != nil {
			return fmt.Errorf("loader: begin transaction: %w", err)
		}
		for _, r := range repart {
			txn.Produce(ctx, r, cb)
		}
		for x := range 3 {
			for _, ch := range changed[x] {
				txn.Produce(ctx, &kgo.Record{Topic: l.n.changelog[x], Key: []byte(customer(ch.k)), Value: ch.val,
					Timestamp: time.UnixMilli(l.ts[x][ch.k])}, cb)
			}
		}
		// One join result per changed key in the left table, in key order of
		// first change (input a first).
		for x := range 3 {
			for _, ch := range changed[x] {
				k := ch.k
				if _, ok := touched[k]; !ok {
					continue
				}
				delete(touched, k)
				if l.ts[0][k] == 0 {
					continue // not in the left table: leftJoin emits nothing
				}
				ts := max(l.ts[0][k], l.ts[1][k], l.ts[2][k])
				cust := customer(k)
				v := appendJoined(make([]byte, 0, 48), cust, l.amt[0][k], l.amt[1][k], l.amt[2][k], l.ts[1][k] != 0, l.ts[2][k] != 0, ts)
				txn.Produce(ctx, &kgo.Record{Topic: l.n.output, Key: []byte(cust), Value: v, Timestamp: time.UnixMilli(ts)}, cb)
			}
		}
		if err := txn.Flush(ctx); err != nil {
			return fmt.Errorf("loader: flushing transaction: %w", err)
		}
		if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return fmt.Errorf("loader: committing transaction: %w", err)
		}
		if time.Since(lastLog) > 10*time.Second {
			lastLog = time.Now()
			logf("load: commit %d/%d", c+1, commits)
		}
	}
	if err := plain.Flush(ctx); err != nil {
		return fmt.Errorf("loader: flushing inputs: %w", err)
	}
	return l.firstErr()
}

// commitGroup commits, for the application's group, the end offsets of
// the inputs and repartition topics: everything was processed.
func (l *loader) commitGroup(ctx context.Context) error {
	adm, err := tk.NewAdmin(l.brokers)
	if err != nil {
		return err
	}
	defer adm.Close()
	if err := settle(ctx, adm, l.n.audited()); err != nil {
		return err
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = l.n.app
	req.Generation = -1
	for x := range 3 {
		for _, t := range []string{l.n.inputs[x], l.n.repart[x]} {
			end, err := adm.ListOffsets(ctx, t, -1, tk.ReadCommitted)
			if err != nil {
				return err
			}
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = t
			for p, off := range end {
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, off, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, adm.Client())
	if err != nil {
		return fmt.Errorf("loader: committing group offsets: %w", err)
	}
	var errs []error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				errs = append(errs, fmt.Errorf("loader: committing %s[%d]: %w", t.Topic, p.Partition, err))
			}
		}
	}
	return errors.Join(errs...)
}

// settle waits until every partition's LSO reached its high watermark:
// brokers write transaction markers after EndTxn has returned.
func settle(ctx context.Context, adm *tk.Admin, topics []string) error {
	deadline := time.Now().Add(2 * time.Minute)
	for _, t := range topics {
		for {
			lso, err := adm.ListOffsets(ctx, t, -1, tk.ReadCommitted)
			if err != nil {
				return err
			}
			hw, err := adm.ListOffsets(ctx, t, -1, tk.ReadUncommitted)
			if err != nil {
				return err
			}
			short := false
			for p, h := range hw {
				short = short || lso[p] < h
			}
			if !short {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("loader: %s: last stable offsets %v stay below the high watermarks %v", t, lso, hw)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
