package streams

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// fakeKafka is an in-memory cluster for engine tests: each partition is a
// list of records (with their kind) plus offsets. Records of kind Control
// are markers. It is read-only like the real client.
type fakeKafka struct {
	parts  map[string]map[int32]*fakePart
	group  map[kread.TP]int64
	reads  []string                 // topics in the order Read was called
	offset []string                 // topics in the order Offsets was called
	stats  map[kread.TP]kread.Stats // what Read reports for a partition
	// events lists the Offsets and Read calls in order ("offsets T",
	// "read T").
	events []string
	// beforeRead, when set, runs before Read reads a range of a topic: the
	// application acting while the audit reads.
	beforeRead func(topic string)
	// members is the number of members the group has.
	members int
}

func (f *fakeKafka) TransactionHolder(context.Context, string, int32) (*kread.TxnHolder, error) {
	return nil, errors.New("the fake cluster has no producers to describe")
}

func (f *fakeKafka) DescribeGroup(_ context.Context, group string) (kread.Group, error) {
	if f.members > 0 {
		return kread.Group{ID: group, Type: kread.GroupClassic, State: "Stable", Members: f.members, Via: "DescribeGroups v5"}, nil
	}
	return kread.Group{ID: group, Type: kread.GroupClassic, State: "Empty", Via: "DescribeGroups v5"}, nil
}

type fakePart struct {
	recs     []kread.Record
	logStart int64
	lso      int64 // -1: end of log
}

func newFake() *fakeKafka {
	return &fakeKafka{parts: map[string]map[int32]*fakePart{}, group: map[kread.TP]int64{}}
}

func (f *fakeKafka) topic(t string, n int) {
	f.parts[t] = map[int32]*fakePart{}
	for p := range n {
		f.parts[t][int32(p)] = &fakePart{lso: -1}
	}
}

// add appends a record and returns its offset.
func (f *fakeKafka) add(t string, p int32, key, value []byte, ts int64, kind kread.Kind) int64 {
	fp := f.parts[t][p]
	off := int64(len(fp.recs))
	fp.recs = append(fp.recs, kread.Record{Topic: t, Partition: p, Offset: off, Timestamp: ts, Key: key, Value: value, Kind: kind})
	return off
}

func (f *fakeKafka) Partitions(_ context.Context, t string) ([]int32, error) {
	ps, ok := f.parts[t]
	if !ok {
		return nil, fmt.Errorf("%s: %w", t, kread.ErrUnknownTopic)
	}
	var out []int32
	for p := range ps {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func (f *fakeKafka) Offsets(_ context.Context, t string) (map[int32]kread.Offsets, error) {
	f.offset = append(f.offset, t)
	f.events = append(f.events, "offsets "+t)
	m := map[int32]kread.Offsets{}
	for p, fp := range f.parts[t] {
		hw := int64(len(fp.recs))
		lso := hw
		if fp.lso >= 0 {
			lso = fp.lso
		}
		m[p] = kread.Offsets{LogStart: fp.logStart, LSO: lso, HighWatermark: hw}
	}
	return m, nil
}

func (f *fakeKafka) OffsetsForTime(_ context.Context, t string, at time.Time) (map[int32]int64, error) {
	m := map[int32]int64{}
	for p, fp := range f.parts[t] {
		m[p] = int64(len(fp.recs))
		for _, r := range fp.recs {
			if r.Offset >= fp.logStart && r.Timestamp >= at.UnixMilli() {
				m[p] = r.Offset
				break
			}
		}
	}
	return m, nil
}

func (f *fakeKafka) GroupOffsets(_ context.Context, group string, topics []string) (map[kread.TP]int64, error) {
	m := map[kread.TP]int64{}
	for _, t := range topics {
		for tp, off := range f.group {
			if tp.Topic == t {
				m[tp] = off
			}
		}
	}
	return m, nil
}

func (f *fakeKafka) Read(_ context.Context, ranges []kread.Range, o kread.ReadOptions, fn func([]kread.Record) error) (map[kread.TP]kread.Stats, error) {
	stats := map[kread.TP]kread.Stats{}
	for _, rg := range ranges {
		f.reads = append(f.reads, rg.Topic)
		f.events = append(f.events, "read "+rg.Topic)
		if f.beforeRead != nil {
			f.beforeRead(rg.Topic)
		}
		fp := f.parts[rg.Topic][rg.Partition]
		var out []kread.Record
		for _, r := range fp.recs[max(rg.From, fp.logStart):rg.To] {
			if r.Kind == kread.Committed || (r.Kind == kread.Aborted && o.Aborted) {
				out = append(out, r)
			}
		}
		if err := fn(out); err != nil {
			return nil, err
		}
		tp := kread.TP{Topic: rg.Topic, Partition: rg.Partition}
		if st, ok := f.stats[tp]; ok {
			stats[tp] = st
			continue
		}
		var st kread.Stats
		for _, r := range fp.recs[max(rg.From, fp.logStart):rg.To] {
			switch r.Kind {
			case kread.Committed:
				st.Committed++
			case kread.Aborted:
				st.Aborted++
			}
		}
		stats[tp] = st
	}
	return stats, nil
}

// testPipeline is a two-input pipeline over the fake: inputs a and b, with
// values "key|payload" whose selected key is the part before '|' (empty
// part: null key; "!" prefix: undecodable).
type testPipeline struct {
	f   *fakeKafka
	opt Options
}

func newTestPipeline(t *testing.T) *testPipeline {
	f := newFake()
	for _, n := range []string{"A", "B"} {
		f.topic("in"+n, 2)
		f.topic("app-rep"+n+"-repartition", 2)
		f.topic("app-store"+n+"-changelog", 2)
	}
	f.topic("out", 2)
	sel := func(rec *kread.Record) ([]byte, int64, SelectStatus, error) {
		v := string(rec.Value)
		if strings.HasPrefix(v, "!") {
			return nil, 0, DecodeError, classErr("schema 7: field missing")
		}
		k, _, _ := strings.Cut(v, "|")
		if k == "" {
			return nil, rec.Timestamp, NullKey, nil
		}
		return []byte(k), rec.Timestamp, Selected, nil
	}
	store, err := index.Open(t.TempDir(), index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	var inputs []Input
	for _, n := range []string{"A", "B"} {
		inputs = append(inputs, Input{Name: strings.ToLower(n), Topic: "in" + n, RepartitionTopic: "app-rep" + n + "-repartition",
			ChangelogTopic: "app-store" + n + "-changelog", Select: sel})
	}
	return &testPipeline{f: f, opt: Options{Kafka: f, Store: store, Group: "app", Inputs: inputs, Output: "out",
		SettleTimeout: 50 * time.Millisecond, SettlePoll: time.Millisecond}}
}

type classErr string

func (e classErr) Error() string { return string(e) }
func (e classErr) Class() string { return "schema 7" }

// process simulates the application fully processing one input record:
// the repartition copy, the changelog update and (for the left input) the
// output, and commits both hops.
func (tp *testPipeline) process(x int, p int32, key string, ts int64, payload string, skipChangelog, skipOutput bool) int64 {
	in := tp.opt.Inputs[x]
	v := []byte(key + "|" + payload)
	off := tp.f.add(in.Topic, p, []byte("orig"), v, ts, kread.Committed)
	tp.f.group[kread.TP{Topic: in.Topic, Partition: p}] = off + 1
	rp := partitionFor([]byte(key), 2)
	roff := tp.f.add(in.RepartitionTopic, rp, []byte(key), v, ts, kread.Committed)
	tp.f.group[kread.TP{Topic: in.RepartitionTopic, Partition: rp}] = roff + 1
	if !skipChangelog {
		tp.f.add(in.ChangelogTopic, rp, []byte(key), v, ts, kread.Committed)
		if !skipOutput {
			tp.f.add("out", rp, []byte(key), v, ts, kread.Committed)
		}
	}
	return off
}

func (tp *testPipeline) run(t *testing.T) *finding.Result {
	t.Helper()
	res, err := Run(context.Background(), tp.opt)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func rowsString(rows []finding.Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %s %s %s %s[%d]@%d", r.Kind, r.Stage, r.Input, r.Key, r.Topic, r.Partition, r.Offset))
	}
	sort.Strings(out)
	return out
}

func TestRunCleanPipelineHasNoFindings(t *testing.T) {
	tp := newTestPipeline(t)
	for i := range 50 {
		tp.process(0, int32(i%2), fmt.Sprintf("k%d", i%7), int64(1000+i), fmt.Sprint(i), false, false)
		tp.process(1, int32(i%2), fmt.Sprintf("k%d", i%5), int64(1000+i), fmt.Sprint(i), false, false)
	}
	res := tp.run(t)
	if len(res.Rows) != 0 || len(res.Summary.Partitions) != 0 || res.Summary.Partial {
		t.Fatalf("clean pipeline: rows %v partitions %+v partial %v", rowsString(res.Rows), res.Summary.Partitions, res.Summary.Partial)
	}
	a := res.Summary.Inputs["a"]
	if a.Scanned != 50 || a.Audited != 50 || a.Pending != 0 {
		t.Errorf("input a counts = %+v, want 50 scanned and audited", *a)
	}
	if got := res.Summary.Stages[finding.StageChangelog].KeysChecked; got != 7+5 {
		t.Errorf("changelog keys checked = %d, want 12 (7 keys of a + 5 of b)", got)
	}
	if got := res.Summary.Stages[finding.StageOutput].KeysChecked; got != 7+5 {
		t.Errorf("output keys checked = %d, want 12 (b's 5 keys are all in a's table)", got)
	}
}

func TestRunSnapshotOrder(t *testing.T) {
	tp := newTestPipeline(t)
	tp.process(0, 0, "k", 1, "v", false, false)
	tp.run(t)
	// Group offsets are read before any Offsets call; then the bounds of
	// the inputs and repartition topics; then the repartition tails are
	// read; only then the downstream high watermarks, and the downstream
	// partitions settled; then the inputs, changelogs and output are read.
	want := []string{"offsets inA", "offsets inB", "offsets app-repA-repartition", "offsets app-repB-repartition",
		"read app-repA-repartition", // B's repartition topic is empty: nothing to read
		"offsets app-storeA-changelog", "offsets app-storeB-changelog", "offsets out",
		"offsets app-storeA-changelog", "offsets app-storeB-changelog", "offsets out",
		"read inA", "read app-storeA-changelog", "read out"}
	var got []string
	for i, e := range tp.f.events {
		if i == 0 || e != tp.f.events[i-1] { // one line per run of ranges
			got = append(got, e)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("calls in order = %v, want %v", got, want)
	}
}

// TestRunTailPurgedWhileReading: the application commits and purges a
// repartition tail after the audit read the group's offsets and before it
// reads that tail (Kafka Streams purges after every commit, every
// repartition.purge.interval.ms). The record the purged copy carried was
// processed by that commit, whose changelog and output writes the audit
// must then see: it is neither lost nor pending.
func TestRunTailPurgedWhileReading(t *testing.T) {
	tp := newTestPipeline(t)
	f := tp.f
	in := tp.opt.Inputs[0]
	// Processed at the first hop only: the copy is the repartition tail.
	off := f.add(in.Topic, 0, []byte("orig"), []byte("k|v"), 5, kread.Committed)
	f.group[kread.TP{Topic: in.Topic, Partition: 0}] = off + 1
	rp := partitionFor([]byte("k"), 2)
	roff := f.add(in.RepartitionTopic, rp, []byte("k"), []byte("k|v"), 5, kread.Committed)
	rtp := kread.TP{Topic: in.RepartitionTopic, Partition: rp}
	f.group[rtp] = roff
	done := false
	f.beforeRead = func(topic string) {
		if topic != in.RepartitionTopic || done {
			return
		}
		done = true
		// The second hop commits: changelog and output writes, the
		// repartition offset past the copy, then the purge.
		f.add(in.ChangelogTopic, rp, []byte("k"), []byte("k|v"), 5, kread.Committed)
		f.add("out", rp, []byte("k"), []byte("k|v"), 5, kread.Committed)
		f.group[rtp] = roff + 1
		f.parts[in.RepartitionTopic][rp].logStart = roff + 1
	}
	res := tp.run(t)
	if !done {
		t.Fatal("the repartition tail was never read")
	}
	if len(res.Rows) != 0 || len(res.Summary.Partitions) != 0 {
		t.Fatalf("rows %v, partition findings %+v: the record was processed before the tail was read", rowsString(res.Rows), res.Summary.Partitions)
	}
	if a := res.Summary.Inputs["a"]; a.Audited != 1 || a.Pending != 0 {
		t.Errorf("input a: %+v, want the record audited, nothing pending", *a)
	}
}

func TestRunFindingsAndDropsByDesign(t *testing.T) {
	tp := newTestPipeline(t)
	f := tp.f
	// Healthy keys.
	tp.process(0, 0, "ok", 100, "1", false, false)
	tp.process(1, 0, "ok", 100, "1", false, false)
	// Lost before a's store: the repartition copy is still readable.
	lostA := tp.process(0, 1, "lostA", 200, "1", true, true)
	// Lost before the output.
	lostOut := tp.process(0, 0, "lostOut", 300, "1", false, true)
	// b updated k after the output was written: output stale for b.
	tp.process(0, 0, "stale", 100, "1", false, false)
	staleB := tp.process(1, 1, "stale", 400, "2", false, true)
	// The changelog update of key ab only in an aborted transaction.
	abOff := tp.process(1, 0, "ab", 500, "1", true, true)
	rp := partitionFor([]byte("ab"), 2)
	f.add("app-storeB-changelog", rp, []byte("ab"), []byte("x"), 500, kread.Aborted)
	f.add("app-storeB-changelog", rp, nil, nil, 0, kread.Control)
	// Dropped by design and pending: never findings.
	f.add("inA", 0, []byte("o"), nil, 600, kread.Committed)            // null value
	f.add("inA", 0, []byte("o"), []byte("|x"), 600, kread.Committed)   // null selected key
	f.add("inA", 0, []byte("o"), []byte("!bad"), 600, kread.Committed) // decode error
	f.group[kread.TP{Topic: "inA", Partition: 0}] = int64(len(f.parts["inA"][0].recs))
	f.add("inA", 0, []byte("o"), []byte("lag|1"), 700, kread.Committed) // pending at hop 1
	// Pending at hop 2: copied to the repartition tail, not yet reduced.
	off := f.add("inB", 0, []byte("o"), []byte("tail|1"), 800, kread.Committed)
	f.group[kread.TP{Topic: "inB", Partition: 0}] = off + 1
	f.add("app-repB-repartition", partitionFor([]byte("tail"), 2), []byte("tail"), []byte("tail|1"), 800, kread.Committed)

	res := tp.run(t)
	want := []string{
		fmt.Sprintf("aborted changelog b ab inB[0]@%d", abOff),
		fmt.Sprintf("missing changelog a lostA inA[1]@%d", lostA),
		fmt.Sprintf("missing output a lostOut inA[0]@%d", lostOut),
		fmt.Sprintf("stale output b stale inB[1]@%d", staleB),
	}
	if got := rowsString(res.Rows); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, r := range res.Rows {
		if w, _ := r.Evidence.(*finding.Witness); r.Input == "a" && r.Stage == finding.StageChangelog && (w == nil || !w.Seen || w.Topic != "app-repA-repartition") {
			t.Errorf("lost-before-store row witness = %+v, want it to point at the repartition copy", r.Evidence)
		}
	}
	a, b := res.Summary.Inputs["a"], res.Summary.Inputs["b"]
	if a.NullValue != 1 || a.NullKey != 1 || a.DecodeErrors != 1 || a.Pending != 1 {
		t.Errorf("input a counts = %+v, want 1 null value, 1 null key, 1 decode error, 1 pending", *a)
	}
	if b.Pending != 1 || b.Audited != 3 {
		t.Errorf("input b counts = %+v, want 1 pending (repartition tail) and 3 audited", *b)
	}
	if got := res.Summary.DecodeErrorsBySchema["schema 7"]; got != 1 {
		t.Errorf("decode errors by schema = %v, want schema 7: 1", res.Summary.DecodeErrorsBySchema)
	}
}

func TestRunPurgedPastCommit(t *testing.T) {
	tp := newTestPipeline(t)
	f := tp.f
	off := tp.process(0, 0, "k", 100, "1", true, true)
	rp := partitionFor([]byte("k"), 2)
	// KAFKA-17635: the task skipped the record, committed an older offset,
	// and the purge deleted past it.
	f.group[kread.TP{Topic: "app-repA-repartition", Partition: rp}] = 0
	f.parts["app-repA-repartition"][rp].logStart = 1
	res := tp.run(t)
	if got := rowsString(res.Rows); len(got) != 1 || got[0] != fmt.Sprintf("missing changelog a k inA[0]@%d", off) {
		t.Fatalf("rows = %v", got)
	}
	if w, _ := res.Rows[0].Evidence.(*finding.Witness); w == nil || w.Seen || w.Topic != "app-repA-repartition" {
		t.Errorf("witness = %+v, want the repartition topic to no longer hold the record", w)
	}
	ps := res.Summary.Partitions
	if len(ps) != 1 || ps[0].Kind != finding.PurgedPastCommit || ps[0].Topic != "app-repA-repartition" || ps[0].Partition != rp {
		t.Fatalf("partition findings = %+v, want one purged_past_commit on app-repA-repartition[%d]", ps, rp)
	}
}

func TestRunWindow(t *testing.T) {
	tp := newTestPipeline(t)
	tp.process(0, 0, "old", 1000, "1", true, true)      // lost, but before the window
	tp.process(0, 0, "late", 9000, "1", true, true)     // lost, but after the window
	in := tp.process(0, 0, "in", 5000, "1", true, true) // lost inside the window
	tp.process(0, 0, "ok", 5000, "1", false, false)
	tp.opt.From = time.UnixMilli(2000)
	tp.opt.To = time.UnixMilli(8000)
	res := tp.run(t)
	if got := rowsString(res.Rows); len(got) != 1 || got[0] != fmt.Sprintf("missing changelog a in inA[0]@%d", in) {
		t.Fatalf("rows = %v, want only the loss inside the window", got)
	}
	// The record before the window is not even read (offsets for time);
	// the one after it is read and counted as outside.
	if a := res.Summary.Inputs["a"]; a.OutsideWindow != 1 || a.Audited != 2 {
		t.Errorf("input a counts = %+v, want 1 outside the window, 2 audited", *a)
	}
}

func TestRunStuckLSOWithholdsAndIsPartial(t *testing.T) {
	tp := newTestPipeline(t)
	tp.process(0, 0, "k", 100, "1", false, true) // output missing for k
	op := partitionFor([]byte("k"), 2)
	f := tp.f
	f.add("out", op, []byte("k"), []byte("open"), 100, kread.Committed)
	f.parts["out"][op].lso = int64(len(f.parts["out"][op].recs)) - 1 // an open transaction
	res := tp.run(t)
	if len(res.Rows) != 0 {
		t.Errorf("rows = %v, want the output row withheld", rowsString(res.Rows))
	}
	if !res.Summary.Partial {
		t.Error("a run with a stuck partition is not marked partial")
	}
	ps := res.Summary.Partitions
	if len(ps) != 1 || ps[0].Kind != finding.StuckLSO || ps[0].Topic != "out" || ps[0].Partition != op {
		t.Errorf("partition findings = %+v, want stuck_lso on out[%d]", ps, op)
	}
}

// TestRunStuckLSOWithholdsNormalizedKeys: with output keys normalized
// (OutputKey, for Avro-framed keys), the partition a missing key belongs
// to is that of its framed bytes, which the normalized key does not give:
// a stuck partition of the output withholds the row wherever the
// normalized key would hash.
func TestRunStuckLSOWithholdsNormalizedKeys(t *testing.T) {
	tp := newTestPipeline(t)
	tp.process(0, 0, "k", 100, "1", false, true) // output missing for k
	framed := []byte("x:k")
	op := partitionFor(framed, 2)
	if op == partitionFor([]byte("k"), 2) {
		t.Fatal("test keys hash alike: pick another framing")
	}
	tp.opt.OutputKey = func(k []byte) []byte { return bytes.TrimPrefix(k, []byte("x:")) }
	f := tp.f
	f.add("out", op, framed, []byte("open"), 100, kread.Committed)
	f.parts["out"][op].lso = int64(len(f.parts["out"][op].recs)) - 1 // an open transaction
	res := tp.run(t)
	if len(res.Rows) != 0 {
		t.Errorf("rows = %v, want the output row withheld", rowsString(res.Rows))
	}
	if !res.Summary.Partial {
		t.Error("a run with a stuck partition is not marked partial")
	}
}

func TestRunMissingTopicIsAnError(t *testing.T) {
	tp := newTestPipeline(t)
	delete(tp.f.parts, "app-storeB-changelog")
	_, err := Run(context.Background(), tp.opt)
	if err == nil || !errors.Is(err, kread.ErrUnknownTopic) || !strings.Contains(err.Error(), "app-storeB-changelog") {
		t.Fatalf("err = %v, want an unknown-topic error naming app-storeB-changelog", err)
	}
}

func TestRunComparesWithThePreviousRun(t *testing.T) {
	tp := newTestPipeline(t)
	hist, err := history.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer hist.Close()
	tp.opt.History = hist
	for i := range 10 {
		tp.process(0, 0, fmt.Sprintf("k%d", i), int64(100+i), "v", false, false)
	}
	if res := tp.run(t); len(res.Summary.Partitions) != 0 {
		t.Fatalf("first run: partition findings %+v, want none", res.Summary.Partitions)
	}
	// Between runs: the output partition 1 loses its last two records (an
	// unclean leader election) and the group's offset on inA[0] moves back.
	out := tp.f.parts["out"][1]
	if len(out.recs) < 2 {
		t.Fatalf("fixture: out[1] has %d records", len(out.recs))
	}
	out.recs = out.recs[:len(out.recs)-2]
	tp.f.group[kread.TP{Topic: "inA", Partition: 0}] = 3
	res := tp.run(t)
	var got []string
	for _, p := range res.Summary.Partitions {
		got = append(got, fmt.Sprintf("%s %s[%d]", p.Kind, p.Topic, p.Partition))
	}
	want := []string{"offset_reset inA[0]", "truncated out[1]"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("second run partition findings = %v, want %v", got, want)
	}
}

func TestRunHugeSelectedKey(t *testing.T) {
	tp := newTestPipeline(t)
	big := strings.Repeat("k", 100_000)
	tp.process(0, 0, big, 100, "1", false, false)
	lost := tp.process(0, 1, big+"-lost", 200, "1", true, true)
	res := tp.run(t)
	if len(res.Rows) != 1 || string(res.Rows[0].Key) != big+"-lost" || res.Rows[0].Offset != lost {
		t.Fatalf("rows = %d, want exactly the lost 100,000-byte key", len(res.Rows))
	}
	if a := res.Summary.Inputs["a"]; a.Audited != 2 {
		t.Errorf("audited = %d, want 2", a.Audited)
	}
}

// TestRunWindowedReportsStaleLikeTheFullAudit: a stage holding the key
// only from before the window must make the windowed audit say stale with
// the observed timestamp, as the full audit of the same state does.
func TestRunWindowedReportsStaleLikeTheFullAudit(t *testing.T) {
	tp := newTestPipeline(t)
	tp.process(0, 0, "k", 1000, "old", false, false)        // reached every stage, before the window
	lost := tp.process(0, 0, "k", 5000, "new", true, true)  // lost inside the window
	gone := tp.process(0, 1, "gone", 5000, "1", true, true) // never reached any stage
	full := tp.run(t)
	tp.opt.From = time.UnixMilli(3000)
	windowed := tp.run(t)
	for _, res := range []*finding.Result{full, windowed} {
		got := rowsString(res.Rows)
		want := []string{fmt.Sprintf("missing changelog a gone inA[1]@%d", gone), fmt.Sprintf("stale changelog a k inA[0]@%d", lost)}
		if strings.Join(got, ";") != strings.Join(want, ";") {
			t.Errorf("rows %v, want %v", got, want)
		}
		for _, r := range res.Rows {
			if string(r.Key) == "k" && (!r.HasObserved || r.ObservedTS != 1000) {
				t.Errorf("stale row observed %d (%v), want 1000", r.ObservedTS, r.HasObserved)
			}
		}
	}
}

func TestRunInconclusiveWithoutCommittedOffsets(t *testing.T) {
	tp := newTestPipeline(t)
	for i := range 5 {
		tp.process(0, 0, fmt.Sprint("k", i), int64(100+i), "1", false, false)
		tp.process(1, 0, fmt.Sprint("k", i), int64(100+i), "1", false, false)
	}
	for tpn := range tp.f.group {
		if tpn.Topic == "inB" {
			delete(tp.f.group, tpn) // b's offsets expired
		}
	}
	res := tp.run(t)
	in := res.Summary.Inconclusive
	if len(in) != 1 || in[0].Reason != finding.NoCommittedOffsets || in[0].Input != "b" {
		t.Fatalf("inconclusive = %+v, want no_committed_offsets for input b", in)
	}
	if res.Complete() {
		t.Error("an inconclusive result claims to be complete")
	}
}

func TestRunReportsReadIssues(t *testing.T) {
	tp := newTestPipeline(t)
	tp.process(0, 0, "k", 100, "1", false, false)
	tp.f.stats = map[kread.TP]kread.Stats{{Topic: "inA", Partition: 0}: {Gaps: 3, Retries: 2}}
	res := tp.run(t)
	want := []finding.ReadIssue{{Topic: "inA", Partition: 0, Gaps: 3, Retries: 2}}
	if fmt.Sprint(res.Summary.Reads) != fmt.Sprint(want) {
		t.Errorf("read issues = %+v, want %+v", res.Summary.Reads, want)
	}
}

func TestRunPoisonPill(t *testing.T) {
	tp := newTestPipeline(t)
	tp.process(0, 0, "k", 100, "1", false, false)
	// The application stopped at an undecodable record of inA[0].
	bad := tp.f.add("inA", 0, []byte("o"), []byte("!garbage"), 200, kread.Committed)
	tp.f.add("inA", 0, []byte("o"), []byte("later|1"), 300, kread.Committed)
	res := tp.run(t)
	ps := res.Summary.Partitions
	if len(ps) != 1 || ps[0].Kind != finding.PoisonPill || ps[0].Topic != "inA" || ps[0].Partition != 0 || ps[0].Evidence.(*finding.PoisonEvidence).Offset != bad {
		t.Fatalf("partition findings = %+v, want poison_pill on inA[0]@%d", ps, bad)
	}
	if a := res.Summary.Inputs["a"]; a.Pending != 2 {
		t.Errorf("pending = %d, want the 2 records from the poison pill on", a.Pending)
	}
	// The same state with the application running: not stuck.
	tp.f.members = 2
	if res := tp.run(t); len(res.Summary.Partitions) != 0 {
		t.Errorf("running group: partition findings %+v, want none", res.Summary.Partitions)
	}
}

// TestRunSameWithTailsHeldOrNot: whether the repartition tails fit in
// memory (candidates pending at the second hop are known as they are read,
// the others coalesced per key) or not (every candidate indexed, matched
// in the check), the result is the same.
func TestRunSameWithTailsHeldOrNot(t *testing.T) {
	tp := newTestPipeline(t)
	f := tp.f
	for i := range 40 {
		k := fmt.Sprintf("k%d", i%9)
		tp.process(i%2, int32(i%2), k, int64(100+i), fmt.Sprint(i), i%7 == 0, i%5 == 0)
	}
	// Pending at the second hop: copies in the repartition tails.
	for i := range 6 {
		k := fmt.Sprintf("k%d", i)
		off := f.add("inA", 0, []byte("o"), []byte(k+"|tail"), int64(900+i), kread.Committed)
		f.group[kread.TP{Topic: "inA", Partition: 0}] = off + 1
		f.add("app-repA-repartition", partitionFor([]byte(k), 2), []byte(k), []byte(k+"|tail"), int64(900+i), kread.Committed)
	}
	held := tp.run(t)
	tp.opt.maxTails = 2
	spilled := tp.run(t)
	if g, w := rowsString(spilled.Rows), rowsString(held.Rows); strings.Join(g, ";") != strings.Join(w, ";") || len(w) == 0 {
		t.Errorf("rows with tails not held:\n%v\nheld:\n%v", g, w)
	}
	for _, in := range []string{"a", "b"} {
		if *held.Summary.Inputs[in] != *spilled.Summary.Inputs[in] {
			t.Errorf("input %s counts %+v held, %+v not held", in, *held.Summary.Inputs[in], *spilled.Summary.Inputs[in])
		}
	}
	if held.Summary.Inputs["a"].Pending < 6 {
		t.Errorf("input a pending = %d, want at least the 6 in the tail", held.Summary.Inputs["a"].Pending)
	}
}

// TestUnprocessedPartitionBehindAbortedRecords: the first record of an
// input partition the group never committed on is found behind any number
// of aborted records and markers (the probe reads windows that double),
// so unprocessed_partition is reported for it.
func TestUnprocessedPartitionBehindAbortedRecords(t *testing.T) {
	tp := newTestPipeline(t)
	now := time.UnixMilli(10_000_000)
	tp.opt.Now, tp.opt.UnprocessedAfter = func() time.Time { return now }, time.Minute
	tp.process(0, 0, "k", 1000, "v", false, false) // the group commits on inA[0] only
	for range 100 {
		tp.f.add("inA", 1, []byte("orig"), []byte("k|aborted"), 1000, kread.Aborted)
	}
	tp.f.add("inA", 1, nil, nil, 0, kread.Control)
	tp.f.add("inA", 1, []byte("orig"), []byte("k|never processed"), 2000, kread.Committed)
	res := tp.run(t)
	var got []string
	for _, pf := range res.Summary.Partitions {
		got = append(got, fmt.Sprintf("%s %s[%d]", pf.Kind, pf.Topic, pf.Partition))
	}
	if want := []string{"unprocessed_partition inA[1]"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("partition findings %v, want %v", got, want)
	}
}
