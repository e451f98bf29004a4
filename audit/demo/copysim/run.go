package copysim

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// rec is one record the simulator wrote to a source (or, for unexpected
// records, to a sink), with everything the truth needs.
type rec struct {
	pair       int
	key, value []byte
	// id is the id header's value (nil: no header).
	id        []byte
	ts        int64
	partition int32
	offset    int64
	pending   bool
	// copies is how many copies the pipeline makes.
	copies int
	// deleted: below the log start after the ledger's expiry.
	deleted bool
	// noLine: the ledger has no line for it (a second write of a
	// ledger duplicate); failed: its line says the send failed.
	noLine, failed bool
	// repeatOf is the record this one repeats (same identity), or nil.
	repeatOf *rec
}

// copyRec is one copy in a sink.
type copyRec struct {
	of        *rec // nil for an unexpected record
	key, val  []byte
	id        []byte
	ts        int64
	partition int32
	offset    int64
}

// line is one ledger line the simulator wrote.
type line struct {
	n          int64
	acked      bool
	partition  int32
	offset     int64
	key, value []byte
	id         []byte
	ts         int64
	// kind is what the line is expected to prove ("" for nothing).
	kind string
}

// world is everything one run wrote.
type world struct {
	sc        Scenario
	prefix    string
	now       time.Time
	sources   [][]*rec
	sinks     [][]*copyRec
	hw        []map[int32]int64 // the sources' high watermarks
	logStart0 int64             // log start of the first source's partition 0
	committed []map[int32]int64
	lines     []line
	skipped   int64
}

// Run simulates sc on the cluster at brokers, writing the ledger (if any)
// under dir, and returns the truth of what it did.
func Run(ctx context.Context, brokers []string, sc Scenario, dir string) (*Truth, error) {
	// Kafka 3.6's protocol versions: newer ones name topics by id, which
	// the requests below do not.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0), kgo.RetryTimeout(30*time.Second), kgo.MaxVersions(kversion.V3_6_0()))
	if err != nil {
		return nil, fmt.Errorf("copysim: creating client: %w", err)
	}
	defer cl.Close()
	w := &world{sc: sc, prefix: fmt.Sprintf("cs%d-", sc.Seed), now: time.Now()}
	r := rand.New(rand.NewPCG(uint64(sc.Seed), 0x5eed))
	if err := w.createTopics(ctx, cl); err != nil {
		return nil, err
	}
	for x := range sc.Pairs {
		w.sources = append(w.sources, w.generate(r, x))
		if err := w.produceSource(ctx, cl, x); err != nil {
			return nil, err
		}
	}
	if sc.Ledger != nil {
		if err := w.expire(ctx, cl); err != nil {
			return nil, err
		}
	}
	for x := range sc.Pairs {
		if err := w.produceSink(ctx, cl, r, x); err != nil {
			return nil, err
		}
	}
	if sc.Group != "" {
		if err := w.commit(ctx, cl); err != nil {
			return nil, err
		}
	}
	t := &Truth{Scenario: sc, Prefix: w.prefix}
	if sc.Ledger != nil {
		w.writeLines(r)
		t.LedgerPath = filepath.Join(dir, fmt.Sprintf("ledger-%d.jsonl", sc.Seed))
		if err := w.writeLedger(t.LedgerPath); err != nil {
			return nil, err
		}
	}
	w.truth(t)
	return t, nil
}

func (w *world) topic(name string) string { return w.prefix + name }

func (w *world) createTopics(ctx context.Context, cl *kgo.Client) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	for _, p := range w.sc.Pairs {
		for _, t := range []struct {
			name string
			n    int32
		}{{p.Source, p.Partitions}, {p.Sink, p.SinkPartitions}} {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = w.topic(t.name), t.n, 1
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("copysim: creating topics: %w", err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("copysim: creating topic %s: %w", t.Topic, err)
		}
	}
	return nil
}

// generate makes pair x's source records, partition by partition: the due
// records (with the repeats among them), then the pending tail.
func (w *world) generate(r *rand.Rand, x int) []*rec {
	sc, ps := w.sc, w.sc.Pairs[x]
	base := w.now.Add(-time.Hour).UnixMilli()
	parts := make([][]*rec, ps.Partitions)
	for i := range ps.Records {
		p := int32(r.IntN(int(ps.Partitions)))
		rc := &rec{pair: x, partition: p, ts: base + int64(i), copies: 1}
		switch sc.Match {
		case MatchKey:
			rc.key, rc.value = fmt.Appendf(nil, "key-%d-%d", x, i), fmt.Appendf(nil, "v%d", r.IntN(50))
		case MatchHeader:
			rc.key, rc.value, rc.id = fmt.Appendf(nil, "c%d", r.IntN(20)), fmt.Appendf(nil, "v%d", r.IntN(50)), fmt.Appendf(nil, "id-%d-%d", x, i)
		default:
			rc.key, rc.value = fmt.Appendf(nil, "c%d", r.IntN(20)), fmt.Appendf(nil, "v-%d-%d-%d", x, i, r.IntN(1000))
			if r.IntN(30) == 0 {
				rc.key, rc.value = fmt.Appendf(nil, "tomb-%d-%d", x, i), nil // a tombstone
			}
		}
		parts[p] = append(parts[p], rc)
	}
	if sc.Match != MatchRecord {
		for i := range sc.NoIdentity {
			p := int32(r.IntN(int(ps.Partitions)))
			rc := &rec{pair: x, partition: p, ts: base, copies: 1, key: fmt.Appendf(nil, "c%d", i), value: []byte("no identity")}
			if sc.Match == MatchKey {
				rc.key = nil
			}
			parts[p] = append(parts[p], rc)
		}
	}
	var out []*rec
	for p := range parts {
		recs := parts[p]
		pend := int(float64(len(recs)) * sc.PendingRate)
		for i, rc := range recs {
			rc.pending = i >= len(recs)-pend
			if rc.pending && sc.Group == "" {
				rc.ts = w.now.Add(time.Hour).UnixMilli() + int64(i)
			}
		}
		out = append(out, recs...)
	}
	// The first records of partition 0 of the ledger's topic may expire:
	// keep them plain (copied once, no repeat, no special line).
	protected := func(rc *rec) bool {
		if sc.Ledger == nil || x != 0 || rc.partition != 0 {
			return false
		}
		return slices.Index(parts[0], rc) < sc.Ledger.Expire+1
	}
	candidates := func() []*rec {
		var c []*rec
		for _, rc := range out {
			if !rc.pending && rc.repeatOf == nil && !protected(rc) && identified(sc.Match, rc) && !rc.noLine && !rc.failed {
				c = append(c, rc)
			}
		}
		r.Shuffle(len(c), func(i, j int) { c[i], c[j] = c[j], c[i] })
		return c
	}
	// Repeats and ledger duplicates: a second write of a record, in the
	// due part of a partition.
	nrep, ndup := sc.Repeats, 0
	if sc.Ledger != nil && x == 0 {
		ndup = sc.Ledger.Duplicated
	}
	c := candidates()
	for i := 0; i < nrep+ndup && i < len(c); i++ {
		orig := c[i]
		again := &rec{pair: x, key: orig.key, value: orig.value, id: orig.id, ts: orig.ts, partition: orig.partition, copies: 1, repeatOf: orig}
		if i >= nrep {
			again.noLine = true // the producer's retry wrote it twice
		} else {
			again.partition = int32(r.IntN(int(ps.Partitions)))
			if r.IntN(3) == 0 {
				again.copies = 0 // the two writes got one copy between them
			}
		}
		out = insertDue(out, again)
	}
	if sc.Ledger != nil && x == 0 {
		c = candidates()
		for i := 0; i < sc.Ledger.FailedPresent && i < len(c); i++ {
			c[i].failed = true
		}
	}
	// Fates of the due records' copies, and of the pending ones.
	for _, rc := range out {
		switch {
		case !identified(sc.Match, rc) || protected(rc) || rc.repeatOf != nil:
		case rc.pending:
			if r.Float64() >= sc.PendingCopyRate {
				rc.copies = 0
			}
		case isRepeated(out, rc):
		case r.Float64() < sc.LossRate:
			rc.copies = 0
		case r.Float64() < sc.DupRate:
			rc.copies = 2 + r.IntN(2)
		}
	}
	return out
}

// isRepeated says whether another record repeats rc.
func isRepeated(recs []*rec, rc *rec) bool {
	for _, o := range recs {
		if o.repeatOf == rc {
			return true
		}
	}
	return false
}

// insertDue inserts rc after the last due record of its partition.
func insertDue(recs []*rec, rc *rec) []*rec {
	at := len(recs)
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].partition == rc.partition {
			at = i + 1
			if !recs[i].pending {
				break
			}
			at = i
		}
	}
	return slices.Insert(recs, at, rc)
}

// identified says whether the match can identify rc.
func identified(match string, rc *rec) bool {
	switch match {
	case MatchKey:
		return rc.key != nil
	case MatchHeader:
		return rc.id != nil
	}
	return true
}

func headers(id []byte) []kgo.RecordHeader {
	if id == nil {
		return nil
	}
	return []kgo.RecordHeader{{Key: IDHeader, Value: id}}
}

func (w *world) produceSource(ctx context.Context, cl *kgo.Client, x int) error {
	ps := w.sc.Pairs[x]
	recs := w.sources[x]
	krs := make([]*kgo.Record, len(recs))
	for i, rc := range recs {
		krs[i] = &kgo.Record{Topic: w.topic(ps.Source), Partition: rc.partition, Key: rc.key, Value: rc.value,
			Headers: headers(rc.id), Timestamp: time.UnixMilli(rc.ts)}
	}
	res := cl.ProduceSync(ctx, krs...)
	if err := res.FirstErr(); err != nil {
		return fmt.Errorf("copysim: producing to %s: %w", w.topic(ps.Source), err)
	}
	hw := map[int32]int64{}
	for i, rc := range recs {
		rc.offset = krs[i].Offset // set by the produce
		hw[rc.partition] = max(hw[rc.partition], rc.offset+1)
	}
	w.hw = append(w.hw, hw)
	return nil
}

// expire deletes the first records of the ledger topic's partition 0.
func (w *world) expire(ctx context.Context, cl *kgo.Client) error {
	n := int64(w.sc.Ledger.Expire)
	if n == 0 {
		return nil
	}
	n = min(n, w.hw[0][0])
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = w.topic(w.sc.Pairs[0].Source)
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, n
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("copysim: deleting records: %w", err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("copysim: deleting records of %s[%d]: %w", t.Topic, p.Partition, err)
			}
		}
	}
	w.logStart0 = n
	for _, rc := range w.sources[0] {
		if rc.partition == 0 && rc.offset < n {
			rc.deleted = true
		}
	}
	return nil
}

// produceSink writes pair x's copies: each source record's first copy in
// source order, the extra copies after them (as a retry after an outage
// would), then the records no source holds.
func (w *world) produceSink(ctx context.Context, cl *kgo.Client, r *rand.Rand, x int) error {
	ps := w.sc.Pairs[x]
	var copies, extra []*copyRec
	for _, rc := range w.sources[x] {
		for i := range rc.copies {
			c := &copyRec{of: rc, key: rc.key, val: rc.value, id: rc.id, ts: rc.ts, partition: rc.partition % ps.SinkPartitions}
			if i == 0 {
				copies = append(copies, c)
			} else {
				extra = append(extra, c)
			}
		}
	}
	r.Shuffle(len(extra), func(i, j int) { extra[i], extra[j] = extra[j], extra[i] })
	copies = append(copies, extra...)
	for i := range w.sc.Unexpected {
		c := &copyRec{key: []byte("unexpected"), val: fmt.Appendf(nil, "no source %d-%d", x, i), ts: w.now.Add(-2 * time.Hour).UnixMilli(),
			partition: int32(r.IntN(int(ps.SinkPartitions)))}
		if w.sc.Match == MatchKey {
			c.key = fmt.Appendf(nil, "unexpected-%d-%d", x, i)
		}
		if w.sc.Match == MatchHeader {
			c.id = fmt.Appendf(nil, "unexpected-%d-%d", x, i)
		}
		copies = append(copies, c)
	}
	krs := make([]*kgo.Record, len(copies))
	for i, c := range copies {
		krs[i] = &kgo.Record{Topic: w.topic(ps.Sink), Partition: c.partition, Key: c.key, Value: c.val, Headers: headers(c.id), Timestamp: time.UnixMilli(c.ts)}
	}
	res := cl.ProduceSync(ctx, krs...)
	if err := res.FirstErr(); err != nil {
		return fmt.Errorf("copysim: producing to %s: %w", w.topic(ps.Sink), err)
	}
	for i, kr := range krs {
		copies[i].offset = kr.Offset // set by the produce
	}
	w.sinks = append(w.sinks, copies)
	return nil
}

// commit commits, for every source partition, the offset of its first
// pending record (or its end), as a simple consumer of the group.
func (w *world) commit(ctx context.Context, cl *kgo.Client) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = w.sc.Group, -1
	for x, ps := range w.sc.Pairs {
		end := map[int32]int64{}
		for _, rc := range w.sources[x] {
			if !rc.pending {
				end[rc.partition] = max(end[rc.partition], rc.offset+1)
			}
		}
		w.committed = append(w.committed, end)
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = w.topic(ps.Source)
		for p := int32(0); p < ps.Partitions; p++ {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, end[p]
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("copysim: committing offsets of %s: %w", w.sc.Group, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("copysim: committing %s[%d] for %s: %w", t.Topic, p.Partition, w.sc.Group, err)
			}
		}
	}
	return nil
}

// writeLines builds the ledger of the first pair's source: a line per
// write (acknowledged, or failed when the record says so), with the
// injected lines among them.
func (w *world) writeLines(r *rand.Rand) {
	ls := w.sc.Ledger
	var lines []line
	for _, rc := range w.sources[0] {
		if rc.noLine || !identified(w.sc.Match, rc) {
			continue
		}
		l := line{acked: !rc.failed, partition: rc.partition, offset: rc.offset, key: rc.key, value: rc.value, id: rc.id, ts: rc.ts}
		if rc.failed {
			l.kind = "unacked_present"
		}
		lines = append(lines, l)
	}
	fresh := func(kind string, i int) line {
		l := line{kind: kind, key: fmt.Appendf(nil, "%s-%d", kind, i), value: fmt.Appendf(nil, "never written %d", i), ts: w.now.UnixMilli()}
		if w.sc.Match == MatchHeader {
			l.id = fmt.Appendf(nil, "%s-%d", kind, i)
		}
		return l
	}
	parts := w.sc.Pairs[0].Partitions
	for i := range ls.AckedGone {
		l := fresh("acked_missing", i)
		l.acked = true
		l.partition = int32(r.IntN(int(parts)))
		lo, hi := int64(0), w.hw[0][l.partition]
		if l.partition == 0 {
			lo = w.logStart0
		}
		if hi <= lo {
			l.offset = hi + 1 // an empty partition: past its end
		} else {
			l.offset = lo + r.Int64N(hi-lo)
		}
		lines = append(lines, l)
	}
	for i := range ls.AckedPastEnd {
		l := fresh("acked_missing", ls.AckedGone+i)
		l.acked, l.partition = true, int32(r.IntN(int(parts)))
		l.offset = w.hw[0][l.partition] + 5 + int64(i)
		lines = append(lines, l)
	}
	for i := range ls.FailedAbsent {
		lines = append(lines, fresh("unacked_missing", i))
	}
	// The injected lines land at random places in the ledger.
	n := len(lines) - ls.AckedGone - ls.AckedPastEnd - ls.FailedAbsent
	for i := n; i < len(lines); i++ {
		j := r.IntN(i + 1)
		l := lines[i]
		copy(lines[j+1:i+1], lines[j:i])
		lines[j] = l
	}
	for i := range lines {
		lines[i].n = int64(i + 1)
	}
	w.lines = lines
}

func (w *world) writeLedger(path string) error {
	topic := w.topic(w.sc.Pairs[0].Source)
	var out []byte
	add := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out = append(append(out, b...), '\n')
		return nil
	}
	vp := w.sc.Ledger.Format == FormatVerifiableProducer
	str := func(b []byte) *string {
		if b == nil {
			return nil
		}
		s := string(b)
		return &s
	}
	b64 := func(b []byte) *string {
		if b == nil {
			return nil
		}
		s := base64.StdEncoding.EncodeToString(b)
		return &s
	}
	if vp {
		// The tool's first line; the line numbers of the sends shift by one.
		if err := add(map[string]any{"timestamp": w.now.UnixMilli(), "name": "startup_complete"}); err != nil {
			return err
		}
		w.skipped++
		for i := range w.lines {
			w.lines[i].n++
		}
	}
	for _, l := range w.lines {
		var err error
		switch {
		case vp && l.acked:
			err = add(map[string]any{"timestamp": l.ts, "name": "producer_send_success", "key": str(l.key), "value": str(l.value),
				"topic": topic, "partition": l.partition, "offset": l.offset})
		case vp:
			err = add(map[string]any{"timestamp": l.ts, "name": "producer_send_error", "topic": topic, "key": str(l.key), "value": str(l.value),
				"exception": "class org.apache.kafka.common.errors.TimeoutException", "message": "Expiring 1 record(s)"})
		default:
			m := map[string]any{"topic": topic, "acked": l.acked, "timestamp": l.ts}
			if l.acked {
				m["partition"], m["offset"] = l.partition, l.offset
			}
			if w.sc.Match == MatchHeader {
				m["id"] = string(l.id)
			} else {
				m["key"], m["value"] = b64(l.key), b64(l.value)
			}
			err = add(m)
		}
		if err != nil {
			return fmt.Errorf("copysim: writing the ledger: %w", err)
		}
	}
	if vp {
		if err := add(map[string]any{"timestamp": w.now.UnixMilli(), "name": "tool_data", "sent": len(w.lines), "acked": 0}); err != nil {
			return err
		}
		w.skipped++
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("copysim: writing the ledger: %w", err)
	}
	return nil
}
