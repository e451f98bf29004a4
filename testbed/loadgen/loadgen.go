package loadgen

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/schema"
)

// InputNames are the names of the three inputs, in join order.
var InputNames = [3]string{"a", "b", "c"}

// Config configures a load run.
type Config struct {
	Brokers      []string
	Topics       [3]string     // input topics in join order (a, b, c)
	SchemasTopic string        // default "_schemas"
	Customers    int           // distinct selected keys "cust-000".."cust-NNN"; default 50
	Records      int           // records per input; default 1000
	Rate         int           // records per second per input; default 200 (0 = default, <0 = unthrottled)
	Seed         uint64        // randomness of amounts and key order; default 1
	Timeout      time.Duration // bound on flushing after the last record; default 5 min

	// ExtraCustomers are more customerIds, visited like the others and
	// written as their raw bytes: NotUTF8Customers() gives ids that are
	// not valid UTF-8.
	ExtraCustomers []string

	// ClientOpts add to or override the options of every client the
	// generator creates (the seed brokers and credentials of a secured cluster).
	ClientOpts []kgo.Opt
}

// Key returns the selected key of customer i.
func Key(i int) string { return fmt.Sprintf("cust-%03d", i) }

// NotUTF8Customers returns customerIds whose bytes are not valid UTF-8, one
// per kind of malformation: bytes that cannot start a sequence (issue 10's
// ff fe), a lone continuation byte, a 3-byte sequence cut short, and an
// encoded surrogate. The application selects them as Java decodes them,
// with U+FFFD in place of each malformed sequence.
func NotUTF8Customers() []string {
	return []string{"\xff\xfe-notutf8", "lone-\x80-continuation", "cut-\xe2\x82-short", "cesu-\xed\xa0\x80-surrogate"}
}

// HugeCustomer returns a valid customerId of 100,000 bytes: a selected key
// far longer than any real one, which once stopped every audit.
func HugeCustomer() string {
	return "huge-" + strings.Repeat("0123456789", 10_000)[:100_000-len("huge-")]
}

// SelectedKey returns the key the application selects for customerId cust:
// Avro's Utf8#toString, written back with the String serde.
func SelectedKey(cust string) string { return string(schema.JavaStringBytes([]byte(cust))) }

// Entry is one record the brokers acknowledged.
type Entry struct {
	Input     string `json:"input"`     // a | b | c
	Topic     string `json:"topic"`     // input topic
	Partition int32  `json:"partition"` // where it was written
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`        // selected key: SelectedKey of the customerId in the value
	RecordKey string `json:"record_key"` // the record's own key
	// CustomerID is the customerId's raw bytes when they differ from Key
	// (not valid UTF-8); empty otherwise.
	CustomerID []byte `json:"customer_id,omitempty"`
	Seq        int64  `json:"seq"`       // per input, from 0
	Timestamp  int64  `json:"timestamp"` // record timestamp, Unix ms (also the value's ts field)
}

// InputKey names one (input, selected key) pair.
type InputKey struct{ Input, Key string }

// Ledger is what the brokers acknowledged, in acknowledgement order per partition.
type Ledger struct {
	mu      sync.Mutex
	entries []Entry
	failed  []string // records the producer gave up on (not acknowledged)
}

func (l *Ledger) add(e Entry) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

func (l *Ledger) fail(msg string) {
	l.mu.Lock()
	l.failed = append(l.failed, msg)
	l.mu.Unlock()
}

// Entries returns a copy of the acknowledged records, sorted by input and seq.
func (l *Ledger) Entries() []Entry {
	l.mu.Lock()
	out := append([]Entry(nil), l.entries...)
	l.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Input != out[j].Input {
			return out[i].Input < out[j].Input
		}
		return out[i].Seq < out[j].Seq
	})
	return out
}

// Failed returns the errors of records that were not acknowledged.
func (l *Ledger) Failed() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.failed...)
}

// Newest returns, per (input, selected key), the acknowledged record with the
// newest timestamp (ties: the higher seq, which was produced later).
func (l *Ledger) Newest() map[InputKey]Entry {
	out := map[InputKey]Entry{}
	for _, e := range l.Entries() {
		k := InputKey{e.Input, e.Key}
		if old, ok := out[k]; !ok || e.Timestamp > old.Timestamp || (e.Timestamp == old.Timestamp && e.Seq > old.Seq) {
			out[k] = e
		}
	}
	return out
}

// WriteFile writes the ledger as JSON lines.
func (l *Ledger) WriteFile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing ledger: %w", err)
	}
	enc := json.NewEncoder(f)
	for _, e := range l.Entries() {
		if err := enc.Encode(e); err != nil {
			f.Close()
			return fmt.Errorf("writing ledger %s: %w", path, err)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing ledger %s: %w", path, err)
	}
	return nil
}

// Generator produces the load.
type Generator struct {
	cfg    Config
	codecs [3]*goavro.Codec
	ids    [3]uint32
	ledger *Ledger
}

// New registers the input schemas (subjects "<topic>-value") and returns a generator.
func New(ctx context.Context, cfg Config) (*Generator, error) {
	if cfg.SchemasTopic == "" {
		cfg.SchemasTopic = "_schemas"
	}
	if cfg.Customers <= 0 {
		cfg.Customers = 50
	}
	if cfg.Records <= 0 {
		cfg.Records = 1000
	}
	if cfg.Rate == 0 {
		cfg.Rate = 200
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Minute
	}
	g := &Generator{cfg: cfg, ledger: &Ledger{}}
	for i, s := range []string{SchemaA, SchemaB, SchemaC} {
		c, err := goavro.NewCodec(s)
		if err != nil {
			return nil, fmt.Errorf("compiling schema of input %s: %w", InputNames[i], err)
		}
		g.codecs[i] = c
		id, err := Register(ctx, cfg.Brokers, cfg.SchemasTopic, cfg.Topics[i]+"-value", s, cfg.ClientOpts...)
		if err != nil {
			return nil, err
		}
		g.ids[i] = uint32(id)
	}
	return g, nil
}

// Ledger returns the ledger (filled while Run runs).
func (g *Generator) Ledger() *Ledger { return g.ledger }

// value builds the Avro value of record seq of input i for customer cust.
func (g *Generator) value(i int, seq int64, ts int64, cust string, rng *rand.Rand) ([]byte, error) {
	var native map[string]any
	switch i {
	case 0:
		var note any
		if seq%3 == 0 {
			note = goavro.Union("string", fmt.Sprintf("order %d", seq))
		}
		native = map[string]any{"customerId": cust, "seq": seq, "ts": ts, "amount": float64(rng.IntN(100000)) / 100, "note": note}
	case 1:
		native = map[string]any{"customerId": cust, "seq": seq, "ts": ts,
			"address": map[string]any{"city": fmt.Sprintf("city-%d", seq%17), "zip": fmt.Sprintf("%05d", rng.IntN(100000))}}
	case 2:
		var meta any
		if seq%2 == 0 {
			meta = goavro.Union("lossaudit.testbed.Meta", map[string]any{"source": fmt.Sprintf("src-%d", seq%5)})
		}
		native = map[string]any{"customerId": cust, "seq": seq, "ts": ts, "status": []string{"new", "paid", "refunded"}[seq%3], "meta": meta}
	}
	buf := make([]byte, 5, 64)
	binary.BigEndian.PutUint32(buf[1:], g.ids[i])
	out, err := g.codecs[i].BinaryFromNative(buf, native)
	if err != nil {
		return nil, fmt.Errorf("encoding input %s seq %d: %w", InputNames[i], seq, err)
	}
	return out, nil
}

// customer returns the customerId of record seq: the first Customers +
// len(ExtraCustomers) records of each input visit every customer once (in an
// input-specific order), later ones pick at random.
func (g *Generator) customer(i int, seq int64, rng *rand.Rand) string {
	n := int64(g.cfg.Customers + len(g.cfg.ExtraCustomers))
	var c int
	if seq < n {
		c = int((seq*7 + int64(i)*13) % n)
	} else {
		c = rng.IntN(int(n))
	}
	if c < g.cfg.Customers {
		return Key(c)
	}
	return g.cfg.ExtraCustomers[c-g.cfg.Customers]
}

// Run produces Records records to each input at Rate and waits until every
// record is acknowledged or failed. Acknowledged records are in the ledger.
// The error reports records that were not acknowledged.
func (g *Generator) Run(ctx context.Context) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(g.cfg.Brokers...), kgo.ClientID("lossaudit-loadgen"),
		kgo.ProducerLinger(5 * time.Millisecond), kgo.RequiredAcks(kgo.AllISRAcks())}, g.cfg.ClientOpts...)...)
	if err != nil {
		return fmt.Errorf("creating producer: %w", err)
	}
	defer cl.Close()
	rng := rand.New(rand.NewPCG(g.cfg.Seed, 42))
	start := time.Now()
	for seq := int64(0); seq < int64(g.cfg.Records); seq++ {
		if g.cfg.Rate > 0 {
			due := start.Add(time.Duration(seq) * time.Second / time.Duration(g.cfg.Rate))
			if d := time.Until(due); d > 0 {
				select {
				case <-ctx.Done():
					return fmt.Errorf("producing: %w", ctx.Err())
				case <-time.After(d):
				}
			}
		}
		for i := range 3 {
			ts := time.Now().UnixMilli()
			cust := g.customer(i, seq, rng)
			v, err := g.value(i, seq, ts, cust, rng)
			if err != nil {
				return err
			}
			in := InputNames[i]
			rk := fmt.Sprintf("%s-%06d", in, seq)
			rec := &kgo.Record{Topic: g.cfg.Topics[i], Key: []byte(rk), Value: v, Timestamp: time.UnixMilli(ts)}
			s := seq
			key := SelectedKey(cust)
			var raw []byte
			if key != cust {
				raw = []byte(cust)
			}
			cl.Produce(ctx, rec, func(r *kgo.Record, err error) {
				if err != nil {
					g.ledger.fail(fmt.Sprintf("%s seq %d: %v", in, s, err))
					return
				}
				g.ledger.add(Entry{Input: in, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
					Key: key, RecordKey: rk, CustomerID: raw, Seq: s, Timestamp: ts})
			})
		}
	}
	fctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	if err := cl.Flush(fctx); err != nil {
		return fmt.Errorf("flushing producer: %w", err)
	}
	if f := g.ledger.Failed(); len(f) > 0 {
		return fmt.Errorf("%d records not acknowledged, first: %s", len(f), f[0])
	}
	return nil
}

// highWatermark returns the high watermark of partition 0 of topic.
func highWatermark(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("high watermark of %s[0]: %w", topic, err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, errors.New("high watermark of " + topic + "[0]: malformed response")
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return 0, fmt.Errorf("high watermark of %s[0]: error code %d", topic, p.ErrorCode)
	}
	return p.Offset, nil
}

// FromEntries returns a ledger holding the given entries (for subsets of a run's ledger).
func FromEntries(entries []Entry) *Ledger {
	return &Ledger{entries: append([]Entry(nil), entries...)}
}
