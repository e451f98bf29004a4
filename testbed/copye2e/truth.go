package copye2e

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// Record is one record a plain read_committed consumer saw.
type Record struct {
	Partition  int32
	Offset     int64
	Key, Value []byte
}

// Topic is what a plain consumer saw of a whole topic.
type Topic struct {
	Name    string
	Records []Record
	// LogStart and End (the LSO) per partition when it was read.
	LogStart, End map[int32]int64
}

// listOffsets returns the offsets of every partition of topic for which
// (-2 log start, -1 end) with isolation iso (1: read_committed, the LSO).
func listOffsets(ctx context.Context, cl *kgo.Client, topic string, which int64, iso int8) (map[int32]int64, error) {
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	mresp, err := meta.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = iso
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for _, t := range mresp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return nil, fmt.Errorf("metadata of %s: %w", topic, err)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p.Partition, which
			rt.Partitions = append(rt.Partitions, rp)
		}
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("offsets of %s[%d]: %w", topic, p.Partition, err)
			}
			out[p.Partition] = p.Offset
		}
	}
	return out, nil
}

// ReadTopic reads every partition of topic from its log start to its LSO
// with franz-go's read_committed consumer (not with the reader lossaudit
// uses). The topic must be at rest: reading stops when every partition
// reached its LSO, or when polls have found nothing three times in a row
// (transaction markers can end a partition without a record).
func ReadTopic(ctx context.Context, brokers []string, topic string) (*Topic, error) {
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	t := &Topic{Name: topic}
	if t.LogStart, err = listOffsets(ctx, adm, topic, -2, 1); err != nil {
		return nil, err
	}
	if t.End, err = listOffsets(ctx, adm, topic, -1, 1); err != nil {
		return nil, err
	}
	parts := map[int32]kgo.Offset{}
	for p, s := range t.LogStart {
		if s < t.End[p] {
			parts[p] = kgo.NewOffset().At(s)
		}
	}
	if len(parts) == 0 {
		return t, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	last := map[int32]int64{}
	deadline := time.Now().Add(90 * time.Second)
	for empty := 0; empty < 3; {
		done := true
		for p := range parts {
			if l, ok := last[p]; !ok || l+1 < t.End[p] {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("reading %s: not at the end offsets %v after 90s (at %v)", topic, t.End, last)
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= t.End[r.Partition] {
				return
			}
			n++
			last[r.Partition] = r.Offset
			t.Records = append(t.Records, Record{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value})
		})
		if n == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	slices.SortFunc(t.Records, func(a, b Record) int {
		if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
			return c
		}
		return cmp.Compare(a.Offset, b.Offset)
	})
	return t, nil
}

// Row is a finding as the tests compare them: kind, stage, the record it
// names (topic, partition, offset) and its key.
type Row struct {
	Kind      finding.Kind
	Stage     finding.Stage
	Topic     string
	Partition int32
	Offset    int64
	Key       string
}

func (r Row) String() string {
	return fmt.Sprintf("%s %s %s[%d]@%d key=%q", r.Kind, r.Stage, r.Topic, r.Partition, r.Offset, r.Key)
}

// Rows turns a result's rows into Rows, sorted.
func Rows(res *finding.Result) []Row {
	var out []Row
	for _, r := range res.Rows {
		out = append(out, Row{r.Kind, r.Stage, r.Topic, r.Partition, r.Offset, string(r.Key)})
	}
	return sortRows(out)
}

func sortRows(rs []Row) []Row {
	slices.SortFunc(rs, func(a, b Row) int { return strings.Compare(a.String(), b.String()) })
	return rs
}

// Diff lists the rows only in got and only in want.
func Diff(got, want []Row) []string {
	g, w := map[string]int{}, map[string]int{}
	for _, r := range got {
		g[r.String()]++
	}
	for _, r := range want {
		w[r.String()]++
	}
	var out []string
	for k, n := range w {
		if g[k] < n {
			out = append(out, "not reported: "+k)
		}
	}
	for k, n := range g {
		if w[k] < n {
			out = append(out, "reported, not in the truth: "+k)
		}
	}
	slices.Sort(out)
	return out
}

// Line is one send a VerifiableProducer printed.
type Line struct {
	N          int64
	Acked      bool
	Partition  int32
	Offset     int64
	Key, Value *string
}

// ReadLedger parses a VerifiableProducer's output on its own (not with
// lossaudit's parser): its sends, by line number.
func ReadLedger(path string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var n int64
	for sc.Scan() {
		n++
		var l struct {
			Name      string  `json:"name"`
			Partition int32   `json:"partition"`
			Offset    int64   `json:"offset"`
			Key       *string `json:"key"`
			Value     *string `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		switch l.Name {
		case "producer_send_success":
			out = append(out, Line{N: n, Acked: true, Partition: l.Partition, Offset: l.Offset, Key: l.Key, Value: l.Value})
		case "producer_send_error":
			out = append(out, Line{N: n, Key: l.Key, Value: l.Value})
		}
	}
	return out, sc.Err()
}

func strOf(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

func same(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func show(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// LedgerTruth is what the ledger's lines prove about the topic as the
// consumer read it, by the rules lossaudit compare documents: each line
// accounts for at most one copy of its record (key and value); an
// acknowledged line whose offset holds its record is verified, one below
// the log start expired, any other acked_missing; failed lines take the
// copies no verified line claims (in line order: unacked_present), the
// rest are unacked_missing; copies left over after the acked_missing lines
// take theirs are one duplicated row at the first of them.
type LedgerTruth struct {
	Rows                             []Row
	Verified, Expired, Acked, Failed int64
}

// Ledger computes the LedgerTruth of lines against t.
func Ledger(lines []Line, t *Topic) *LedgerTruth {
	type ident struct{ k, v string }
	id := func(k, v *string) ident {
		return ident{"k" + show(k) + fmt.Sprint(k == nil), show(v) + fmt.Sprint(v == nil)}
	}
	at := map[[2]int64]Record{}
	copies := map[ident][]Record{}
	for _, r := range t.Records {
		at[[2]int64{int64(r.Partition), r.Offset}] = r
		i := id(strOf(r.Key), strOf(r.Value))
		copies[i] = append(copies[i], r)
	}
	lt := &LedgerTruth{}
	claimed := map[[2]int64]bool{}
	type group struct {
		missing []Line
		failed  []Line
		key     *string
	}
	groups := map[ident]*group{}
	var order []ident
	for _, l := range lines {
		i := id(l.Key, l.Value)
		g := groups[i]
		if g == nil {
			g = &group{key: l.Key}
			groups[i] = g
			order = append(order, i)
		}
		if !l.Acked {
			lt.Failed++
			g.failed = append(g.failed, l)
			continue
		}
		lt.Acked++
		c := [2]int64{int64(l.Partition), l.Offset}
		r, ok := at[c]
		switch {
		case ok && !claimed[c] && same(strOf(r.Key), l.Key) && same(strOf(r.Value), l.Value):
			claimed[c] = true
			lt.Verified++
		case l.Offset < t.LogStart[l.Partition]:
			lt.Expired++
		default:
			g.missing = append(g.missing, l)
		}
	}
	for _, i := range order {
		g := groups[i]
		var free []Record
		for _, r := range copies[i] {
			if !claimed[[2]int64{int64(r.Partition), r.Offset}] {
				free = append(free, r)
			}
		}
		for _, l := range g.missing {
			lt.Rows = append(lt.Rows, Row{finding.AckedMissing, finding.StageLedger, t.Name, l.Partition, l.Offset, show(l.Key)})
		}
		for j, l := range g.failed {
			if j < len(free) {
				lt.Rows = append(lt.Rows, Row{finding.UnackedPresent, finding.StageLedger, t.Name, free[j].Partition, free[j].Offset, show(l.Key)})
			} else {
				lt.Rows = append(lt.Rows, Row{finding.UnackedMissing, finding.StageLedger, t.Name, -1, -1, show(l.Key)})
			}
		}
		if extra := len(free) - len(g.failed) - len(g.missing); extra > 0 {
			r := free[len(free)-extra]
			lt.Rows = append(lt.Rows, Row{finding.Duplicated, finding.StageLedger, t.Name, r.Partition, r.Offset, string(r.Key)})
		}
	}
	lt.Rows = sortRows(lt.Rows)
	return lt
}

// Copies is what the consumer's view of a source and a sink proves, by
// identity ident (a record's key and value, or its key): the due source
// records beyond the sink's copies (by partition and offset) are missing,
// more copies than source records make one duplicated row at the first
// source record.
func Copies(source, sink *Topic, ident func(Record) string) []Row {
	src, dst := map[string][]Record{}, map[string]int{}
	for _, r := range source.Records {
		src[ident(r)] = append(src[ident(r)], r)
	}
	for _, r := range sink.Records {
		dst[ident(r)]++
	}
	var out []Row
	for i, rs := range src {
		for _, r := range rs[min(dst[i], len(rs)):] {
			out = append(out, Row{finding.Missing, finding.StageSink, source.Name, r.Partition, r.Offset, string(r.Key)})
		}
		if dst[i] > len(rs) {
			out = append(out, Row{finding.Duplicated, finding.StageSink, source.Name, rs[0].Partition, rs[0].Offset, string(rs[0].Key)})
		}
	}
	return sortRows(out)
}
