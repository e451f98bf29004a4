package sim

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"sort"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/linkedin/goavro/v2"
)

// OrderSchema is the Avro value schema of the three inputs and of the
// reduce stores' changelogs (the reducer keeps the input type).
const OrderSchema = `{"type":"record","name":"Order","namespace":"lossaudit.sim","fields":[` +
	`{"name":"customerId","type":["null","string"],"default":null},` +
	`{"name":"orderId","type":"string"},` +
	`{"name":"item","type":{"type":"record","name":"Item","fields":[{"name":"sku","type":"string"},{"name":"quantity","type":"int"}]}},` +
	`{"name":"amountCents","type":"long"},` +
	`{"name":"price","type":"double"},` +
	`{"name":"eventTime","type":{"type":"long","logicalType":"timestamp-millis"}},` +
	`{"name":"op","type":{"type":"enum","name":"Op","symbols":["UPSERT","DELETE"]}}]}`

// JoinedSchema is the Avro value schema of the output (the joiner's result).
const JoinedSchema = `{"type":"record","name":"Joined","namespace":"lossaudit.sim","fields":[` +
	`{"name":"customerId","type":"string"},` +
	`{"name":"aAmountCents","type":"long"},` +
	`{"name":"bAmountCents","type":["null","long"],"default":null},` +
	`{"name":"cAmountCents","type":["null","long"],"default":null},` +
	`{"name":"updatedAt","type":{"type":"long","logicalType":"timestamp-millis"}}]}`

// Schema registry ids: same schema, same id, across subjects.
const (
	orderSchemaID  = 1
	joinedSchemaID = 2
)

// defaultBaseTimeMs (2026-11-29T10:00:00Z) is the timestamp of the first
// generated record unless Scenario.BaseTime says otherwise: fixed, so runs
// are reproducible.
const defaultBaseTimeMs = 1795946400000

// inRec is one produced input record and what the application makes of it.
type inRec struct {
	X   int   // input index (0 = a)
	P   int32 // partition
	Idx int   // position among the partition's produced records
	Off int64 // offset (Idx when the inputs are not transactional)
	// Aborted records were produced in an aborted upstream transaction:
	// no read_committed reader sees them.
	Aborted bool
	TS      int64 // record timestamp, unix ms
	RKey    []byte
	Value   []byte // nil = null value
	Key     string // selected key (customerId) when !KeyNull
	KeyNil  bool
	// NullValue, Corrupt, Delete classify the value.
	NullValue, Corrupt, Delete bool
	Amount                     int64
	OrderID                    string
	FP                         uint64 // xxhash64 of the value after the 5-byte header
}

// dropped reports whether the record never reaches the repartition topic
// by design: invisible (aborted upstream) or dropped by the first hop
// (null value, undecodable value, null selected key).
func (r *inRec) dropped() bool { return r.Aborted || r.NullValue || r.Corrupt || r.KeyNil }

// codecs holds the compiled Avro schemas.
type codecs struct{ order, joined *goavro.Codec }

func newCodecs() (*codecs, error) {
	o, err := goavro.NewCodec(OrderSchema)
	if err != nil {
		return nil, fmt.Errorf("compiling Order schema: %w", err)
	}
	j, err := goavro.NewCodec(JoinedSchema)
	if err != nil {
		return nil, fmt.Errorf("compiling Joined schema: %w", err)
	}
	return &codecs{order: o, joined: j}, nil
}

// frame prefixes an Avro payload with the Confluent wire-format header.
func frame(id uint32, payload []byte) []byte {
	b := make([]byte, 5, 5+len(payload))
	binary.BigEndian.PutUint32(b[1:], id)
	return append(b, payload...)
}

// fingerprint is the audit's value fingerprint: xxhash64 of the value after
// the 5-byte Confluent header (the whole value when unframed).
func fingerprint(v []byte) uint64 {
	if len(v) >= 5 && v[0] == 0 {
		return xxhash.Sum64(v[5:])
	}
	return xxhash.Sum64(v)
}

// encodeOrder encodes one Order value, framed.
func (c *codecs) encodeOrder(customer *string, orderID string, amount int64, ts int64, del bool) ([]byte, error) {
	var cust any
	if customer != nil {
		cust = goavro.Union("string", *customer)
	}
	op := "UPSERT"
	if del {
		op = "DELETE"
	}
	native := map[string]any{
		"customerId":  cust,
		"orderId":     orderID,
		"item":        map[string]any{"sku": "sku-" + orderID[len(orderID)-3:], "quantity": int32(1 + amount%7)},
		"amountCents": amount,
		"price":       float64(amount) / 100,
		"eventTime":   time.UnixMilli(ts).UTC(),
		"op":          op,
	}
	b, err := c.order.BinaryFromNative(nil, native)
	if err != nil {
		return nil, fmt.Errorf("encoding Order %s: %w", orderID, err)
	}
	return frame(orderSchemaID, b), nil
}

// encodeJoined encodes one output value, framed.
func (c *codecs) encodeJoined(key string, a int64, b, cc *int64, ts int64) ([]byte, error) {
	opt := func(p *int64) any {
		if p == nil {
			return nil
		}
		return goavro.Union("long", *p)
	}
	native := map[string]any{
		"customerId": key, "aAmountCents": a, "bAmountCents": opt(b), "cAmountCents": opt(cc),
		"updatedAt": time.UnixMilli(ts).UTC(),
	}
	v, err := c.joined.BinaryFromNative(nil, native)
	if err != nil {
		return nil, fmt.Errorf("encoding Joined %s: %w", key, err)
	}
	return frame(joinedSchemaID, v), nil
}

// keyName is the customer id of key number k.
func keyName(k int) string { return fmt.Sprintf("cust-%05d", k) }

// generate produces the input records of the scenario: in[x][p] in offset
// order (offsets are positions, as on a fresh topic written by one
// non-transactional producer).
func generate(sc Scenario, c *codecs) ([][][]*inRec, error) {
	rng := rand.New(rand.NewSource(sc.Seed))
	in := make([][][]*inRec, 3)
	for x := 0; x < 3; x++ {
		in[x] = make([][]*inRec, sc.Partitions)
		nkeys := sc.Keys
		if x > 0 {
			nkeys += sc.RightOnlyKeys
		}
		clock := sc.BaseTime.UnixMilli() + int64(x)*7
		var all []*inRec
		for i := 0; i < sc.RecordsPerInput; i++ {
			ts := clock
			switch f := rng.Float64(); {
			case f < sc.EqualTSRate:
			case f < sc.EqualTSRate+sc.OutOfOrderRate:
				ts = clock - 1 - rng.Int63n(10000)
			default:
				clock += 1 + rng.Int63n(40)
				ts = clock
			}
			r := &inRec{
				X:       x,
				TS:      ts,
				RKey:    []byte(fmt.Sprintf("ord-%c-%07d", 'a'+x, i)),
				OrderID: fmt.Sprintf("%c%07d", 'A'+x, i),
				Amount:  100 + rng.Int63n(100000),
				Key:     keyName(rng.Intn(nkeys)),
			}
			switch f := rng.Float64(); {
			case f < sc.NullValueRate:
				r.NullValue = true
				r.KeyNil = true // no value, no customerId: selectKey yields null
			case f < sc.NullValueRate+sc.CorruptRate:
				r.Corrupt = true
			case f < sc.NullValueRate+sc.CorruptRate+sc.NullKeyRate:
				r.KeyNil = true
			}
			if r.KeyNil {
				r.Key = ""
			}
			r.P = partitionFor(r.RKey, sc.Partitions)
			all = append(all, r)
		}
		for _, r := range all {
			r.Idx = len(in[x][r.P])
			r.Off = int64(r.Idx)
			in[x][r.P] = append(in[x][r.P], r)
		}
		if sc.InputTxnSize > 0 {
			for _, recs := range in[x] {
				next := int64(0)
				for i := 0; i < len(recs); i += sc.InputTxnSize {
					abort := rng.Float64() < sc.InputAbortRate
					for _, r := range recs[i:min(i+sc.InputTxnSize, len(recs))] {
						r.Off, r.Aborted = next, abort
						next++
					}
					next++ // the transaction's marker
				}
			}
		}
		batch := make([]int64, sc.Partitions)
		for p := range batch {
			batch[p] = int64((len(in[x][p]) + sc.Rounds - 1) / sc.Rounds)
		}
		markDeletes(rng, all, batch, sc.DeleteRate)
		for _, r := range all {
			switch {
			case r.NullValue:
			case r.Corrupt:
				// Framed with a known id, but the payload ends inside the
				// customerId union: undecodable.
				r.Value = frame(orderSchemaID, []byte{0x02, 0x40})
			default:
				var cust *string
				if !r.KeyNil {
					k := r.Key
					cust = &k
				}
				v, err := c.encodeOrder(cust, r.OrderID, r.Amount, r.TS, r.Delete)
				if err != nil {
					return nil, err
				}
				r.Value = v
			}
			if r.Value != nil {
				r.FP = fingerprint(r.Value)
			}
		}
	}
	return in, nil
}

// markDeletes makes a DeleteRate fraction of the (input, key) pairs with at
// least two valid records end in a DELETE, on which the reducer returns
// null: the pair's newest record by timestamp, provided it is also the last
// one the application processes (batches of `batch[p]` records per input
// partition and round, partitions in order). A delete that is neither
// newest nor last would be followed by an older update that re-creates the
// key with an older timestamp (the reducer is not called for a first
// value), which the audit semantics cannot tell from a stale store.
func markDeletes(rng *rand.Rand, all []*inRec, batch []int64, rate float64) {
	if rate <= 0 {
		return
	}
	order := func(r *inRec) [3]int64 { return [3]int64{int64(r.Idx) / batch[r.P], int64(r.P), int64(r.Idx)} }
	later := func(a, b [3]int64) bool {
		for i := range a {
			if a[i] != b[i] {
				return a[i] > b[i]
			}
		}
		return false
	}
	newest := map[string]*inRec{}
	last := map[string]*inRec{}
	count := map[string]int{}
	for _, r := range all {
		if r.dropped() {
			continue
		}
		count[r.Key]++
		if n := newest[r.Key]; n == nil || r.TS > n.TS {
			newest[r.Key] = r
		}
		if l := last[r.Key]; l == nil || later(order(r), order(l)) {
			last[r.Key] = r
		}
	}
	keys := make([]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if count[k] >= 2 && newest[k] == last[k] && rng.Float64() < rate {
			newest[k].Delete = true
		}
	}
}
