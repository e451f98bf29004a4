package streams

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// dlqHeaders are the headers Kafka Streams writes on a dead-letter record
// naming topic[partition]@offset, after the failed record's own.
func dlqHeaders(topic string, partition int32, offset int64, exception string) []byte {
	kv := [][2]string{{"trace-id", "t-1"}, {detect.HeaderDLQException, exception}, {detect.HeaderDLQMessage, "failed on " + topic},
		{"__streams.errors.stacktrace", "at ..."}, {detect.HeaderDLQTopic, topic},
		{detect.HeaderDLQPartition, fmt.Sprint(partition)}, {detect.HeaderDLQOffset, fmt.Sprint(offset)}}
	b := binary.AppendVarint(nil, int64(len(kv)))
	for _, h := range kv {
		for _, s := range h {
			b = binary.AppendVarint(b, int64(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

// addDLQ appends a dead-letter record with key, value and timestamp.
func (f *fakeKafka) addDLQ(t string, key, value []byte, ts int64, headers []byte) {
	fp := f.parts[t][0]
	fp.recs = append(fp.recs, kread.Record{Topic: t, Offset: int64(len(fp.recs)), Timestamp: ts, Key: key, Value: value, Headers: headers, Kind: kread.Committed})
}

// TestRunDeadLetters: input records the application sent to its
// dead-letter queue (at the first hop, at the second after a repartition
// whose copy is purged since, an undecodable one) are listed as
// dead-lettered, not reported lost, not counted as audited or undecodable;
// a record lost without a dead-letter record is still loss; dead-letter
// records naming an unprocessed record, another topic, or nothing exempt
// nothing.
func TestRunDeadLetters(t *testing.T) {
	tp := newTestPipeline(t)
	f := tp.f
	f.topic("app-dlq", 1)
	tp.opt.DeadLetterTopic = "app-dlq"
	a := tp.opt.Inputs[0]
	for i := range 10 {
		tp.process(0, 0, fmt.Sprintf("k%d", i), int64(100+i), "ok", false, false)
	}
	// First hop: selectKey failed on in-A[1]@0; the offset moved past it.
	first := f.add(a.Topic, 1, []byte("orig"), []byte("k1|boom"), 500, kread.Committed)
	f.group[kread.TP{Topic: a.Topic, Partition: 1}] = first + 1
	f.addDLQ("app-dlq", []byte("orig"), []byte("k1|boom"), 500, dlqHeaders(a.Topic, 1, first, "java.lang.IllegalStateException"))
	// Second hop: the reduce failed on the copy, since purged.
	second := f.add(a.Topic, 1, []byte("orig"), []byte("k2|late"), 600, kread.Committed)
	f.group[kread.TP{Topic: a.Topic, Partition: 1}] = second + 1
	rp := partitionFor([]byte("k2"), 2)
	roff := f.add(a.RepartitionTopic, rp, []byte("k2"), []byte("k2|late"), 600, kread.Committed)
	f.group[kread.TP{Topic: a.RepartitionTopic, Partition: rp}] = roff + 1
	f.parts[a.RepartitionTopic][rp].logStart = roff + 1
	f.addDLQ("app-dlq", []byte("k2"), []byte("k2|late"), 600, dlqHeaders(a.RepartitionTopic, rp, roff, "java.lang.ArithmeticException"))
	// Deserialization: an undecodable record, skipped.
	bad := f.add(a.Topic, 1, []byte("orig"), []byte("!garbage"), 700, kread.Committed)
	f.group[kread.TP{Topic: a.Topic, Partition: 1}] = bad + 1
	f.addDLQ("app-dlq", []byte("orig"), []byte("!garbage"), 700, dlqHeaders(a.Topic, 1, bad, "org.apache.kafka.common.errors.SerializationException"))
	// Injected loss: processed, never reached the store, no dead-letter record.
	lost := tp.process(0, 0, "gone", 800, "lost", true, true)
	// Not skipped (LogAndFail with a dead-letter queue): at the committed
	// offset, pending, and its dead-letter record exempts nothing.
	stuck := f.add(a.Topic, 1, []byte("orig"), []byte("k4|stop"), 900, kread.Committed)
	f.addDLQ("app-dlq", []byte("orig"), []byte("k4|stop"), 900, dlqHeaders(a.Topic, 1, stuck, "java.lang.IllegalStateException"))
	f.addDLQ("app-dlq", nil, []byte("x"), 1, dlqHeaders("another-app-input", 0, 3, "E"))
	f.addDLQ("app-dlq", nil, []byte("x"), 1, nil) // no headers: not Kafka Streams'
	f.members = 1

	res := tp.run(t)
	if got, want := strings.Join(rowsString(res.Rows), "\n"), fmt.Sprintf("missing changelog a gone inA[0]@%d", lost); got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
	dl, ok := finding.SectionOf[*finding.DeadLetters](&res.Summary)
	if !ok {
		t.Fatal("no dead-letter section")
	}
	var got []string
	for _, r := range dl.Records {
		s := fmt.Sprintf("%s %s[%d]@%d dlq@%d %s", r.Input, r.Topic, r.Partition, r.Offset, r.DLQOffset, r.Exception)
		if r.ViaTopic != "" {
			s += fmt.Sprintf(" via %s[%d]@%d", r.ViaTopic, r.ViaPartition, r.ViaOffset)
		}
		got = append(got, s)
	}
	want := []string{
		fmt.Sprintf("a inA[1]@%d dlq@0 java.lang.IllegalStateException", first),
		fmt.Sprintf("a inA[1]@%d dlq@1 java.lang.ArithmeticException via %s[%d]@%d", second, a.RepartitionTopic, rp, roff),
		fmt.Sprintf("a inA[1]@%d dlq@2 org.apache.kafka.common.errors.SerializationException", bad),
	}
	if !slices.Equal(got, want) {
		t.Errorf("dead-lettered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if dl.Read != 6 || dl.Unreadable != 1 || dl.Unmatched != 2 || len(dl.ByInput) != 2 || dl.ByInput[0].Count != 3 || dl.ByInput[1].Count != 0 {
		t.Errorf("section %+v: want 6 read, 1 unreadable, 2 unmatched, a 3, b 0", *dl)
	}
	c := res.Summary.Inputs["a"]
	if c.Scanned != 15 || c.Audited != 11 || c.DecodeErrors != 0 || c.Pending != 1 {
		t.Errorf("input a counts %+v: want 15 scanned, 11 audited, 1 pending, no decode error", *c)
	}

	// Without the queue the same records are loss and a decode error.
	tp.opt.DeadLetterTopic = ""
	res = tp.run(t)
	if len(res.Rows) != 3 || res.Summary.Inputs["a"].DecodeErrors != 1 {
		t.Errorf("without the dead-letter topic: rows %v, decode errors %d; want 3 rows and 1", rowsString(res.Rows), res.Summary.Inputs["a"].DecodeErrors)
	}
	if _, ok := finding.SectionOf[*finding.DeadLetters](&res.Summary); ok {
		t.Error("a dead-letter section without a dead-letter topic")
	}

	// A dead-letter partition whose LSO does not reach its mark may hide
	// the record exempting any row: stuck_lso on it, every row withheld.
	tp.opt.DeadLetterTopic = "app-dlq"
	f.parts["app-dlq"][0].lso = 2
	res = tp.run(t)
	if len(res.Rows) != 0 || !res.Summary.Partial || res.Summary.Withheld == 0 {
		t.Errorf("stuck dead-letter topic: rows %v, partial %v, withheld %d; want none, partial, withheld", rowsString(res.Rows), res.Summary.Partial, res.Summary.Withheld)
	}
	var kinds []string
	for _, p := range res.Summary.Partitions {
		kinds = append(kinds, fmt.Sprintf("%s %s[%d]", p.Kind, p.Topic, p.Partition))
	}
	if strings.Join(kinds, ",") != "stuck_lso app-dlq[0]" {
		t.Errorf("partition findings %v, want stuck_lso app-dlq[0]", kinds)
	}

	// A dead-letter topic that does not exist: nothing was dead-lettered.
	tp.opt.DeadLetterTopic = "no-such-dlq"
	res = tp.run(t)
	if dl, ok := finding.SectionOf[*finding.DeadLetters](&res.Summary); !ok || !dl.Missing || len(res.Rows) != 3 {
		t.Errorf("missing dead-letter topic: section %+v, rows %v", dl, rowsString(res.Rows))
	}
}

// hop2DLQ processes input x's repartition partition p like model.hop2,
// but the reduce throws on the keys dead says and the application sends
// their copies to its dead-letter queue; it loses the keys lost says.
func hop2DLQ(m *model, x int, p int32, dead, lost func(string) bool) {
	in := m.tp.opt.Inputs[x]
	tp := kread.TP{Topic: in.RepartitionTopic, Partition: p}
	for _, r := range m.tp.f.parts[in.RepartitionTopic][p].recs[m.tp.f.group[tp]:] {
		if dead(string(r.Key)) {
			m.tp.f.addDLQ("app-dlq", r.Key, r.Value, r.Timestamp, dlqHeaders(in.RepartitionTopic, p, r.Offset, "java.lang.ArithmeticException"))
		}
	}
	m.hop2(x, p, func(k string) bool { return dead(k) || lost(k) })
}

// hop2DLQAll is hop2DLQ on both repartition partitions.
func hop2DLQAll(m *model, x int, dead, lost func(string) bool) {
	for p := range int32(2) {
		hop2DLQ(m, x, p, dead, lost)
	}
}

// dlqListed renders a step's dead-lettered records.
func dlqListed(t *testing.T, res *finding.Result) []string {
	t.Helper()
	dl, ok := finding.SectionOf[*finding.DeadLetters](&res.Summary)
	if !ok {
		t.Fatal("no dead-letter section")
	}
	var out []string
	for _, r := range dl.Records {
		s := fmt.Sprintf("%s %s[%d]@%d", r.Input, r.Topic, r.Partition, r.Offset)
		if r.ViaTopic != "" {
			s += fmt.Sprintf(" via %s[%d]@%d", r.ViaTopic, r.ViaPartition, r.ViaOffset)
		}
		out = append(out, s)
	}
	return out
}

func keyIs(keys ...string) func(string) bool {
	return func(k string) bool { return slices.Contains(keys, k) }
}

// TestStepDeadLetters: reconcile steps read the dead-letter queue from
// where the last step stopped. A record pending at the second hop at one
// step and dead-lettered before the next is not reported and is listed as
// dead-lettered there, while the loss injected beside it is reported; a
// dead-letter record read before the record it names was processed is
// carried in the checkpoint and exempts it at the step that reads it; a
// dead-letter record the topic's retention deleted before any step read it
// exempts nothing (its record is reported lost, as by an audit); a
// recreated dead-letter topic is read again from its start. Where the
// dead-letter topic still holds what the steps read, every step equals a
// full audit.
func TestStepDeadLetters(t *testing.T) {
	tp := newTestPipeline(t)
	tp.f.topic("app-dlq", 1)
	tp.opt.DeadLetterTopic = "app-dlq"
	a := tp.opt.Inputs[0]
	m := newModel(tp)
	s := newStepper(t, tp)
	none := keyIs()
	m.produce(0, 0, "base", 100, "1")
	m.hop1(0, 0)
	hop2DLQAll(m, 0, none, none)
	kOff := int64(len(tp.f.parts[a.Topic][0].recs))
	m.produce(0, 0, "k", 200, "x")
	m.produce(0, 0, "gone", 210, "y")
	m.hop1(0, 0) // both pending at the second hop
	r := s.step(t)
	if len(r.Rows) != 0 || r.Summary.Inputs["a"].Pending != 2 {
		t.Fatalf("step 1: rows %v pending %d, want none and 2", fullRows(r.Rows), r.Summary.Inputs["a"].Pending)
	}
	sameAsAudit(t, "step 1", r, s.audit(t))

	// The reduce throws on k (dead-lettered) and loses gone.
	kp := partitionFor([]byte("k"), 2)
	kCopy := tp.f.group[kread.TP{Topic: a.RepartitionTopic, Partition: kp}]
	for i, rec := range tp.f.parts[a.RepartitionTopic][kp].recs {
		if string(rec.Key) == "k" {
			kCopy = int64(i)
		}
	}
	hop2DLQAll(m, 0, keyIs("k"), keyIs("gone"))
	r = s.step(t)
	if got, want := strings.Join(rowsString(r.Rows), "\n"), fmt.Sprintf("missing changelog a gone inA[0]@%d", kOff+1); got != want {
		t.Errorf("step 2: rows\n%s\nwant\n%s", got, want)
	}
	if got, want := dlqListed(t, r), []string{fmt.Sprintf("a inA[0]@%d via %s[%d]@%d", kOff, a.RepartitionTopic, kp, kCopy)}; !slices.Equal(got, want) {
		t.Errorf("step 2: dead-lettered %v, want %v", got, want)
	}
	sameAsAudit(t, "step 2", r, s.audit(t))

	// A processing error at the first hop whose dead-letter record is read
	// by a step before the group's offset passes its record: carried.
	jOff := tp.f.add(a.Topic, 1, []byte("orig"), []byte("j|boom"), 300, kread.Committed)
	tp.f.addDLQ("app-dlq", []byte("orig"), []byte("j|boom"), 300, dlqHeaders(a.Topic, 1, jOff, "java.lang.IllegalStateException"))
	r = s.step(t)
	if len(r.Rows) != 1 || len(dlqListed(t, r)) != 0 {
		t.Errorf("step 3: rows %v dead-lettered %v, want gone only and none", rowsString(r.Rows), dlqListed(t, r))
	}
	sameAsAudit(t, "step 3", r, s.audit(t))
	tp.f.group[kread.TP{Topic: a.Topic, Partition: 1}] = jOff + 1
	m.written[0][1] = jOff + 1
	r = s.step(t)
	if got, want := dlqListed(t, r), []string{fmt.Sprintf("a inA[1]@%d", jOff)}; !slices.Equal(got, want) || len(r.Rows) != 1 {
		t.Errorf("step 4: rows %v dead-lettered %v, want gone only and %v", rowsString(r.Rows), got, want)
	}
	if dl, _ := finding.SectionOf[*finding.DeadLetters](&r.Summary); dl.Read != 0 {
		t.Errorf("step 4 read %d dead-letter records, want 0 (the record was carried)", dl.Read)
	}
	sameAsAudit(t, "step 4", r, s.audit(t))

	// Retention deletes a dead-letter record before any step read it.
	rOff := int64(len(tp.f.parts[a.Topic][0].recs))
	m.produce(0, 0, "r", 400, "z")
	m.hop1(0, 0)
	s.step(t)
	hop2DLQAll(m, 0, keyIs("r"), none)
	dlq := tp.f.parts["app-dlq"][0]
	dlq.logStart = int64(len(dlq.recs))
	r = s.step(t)
	want := []string{fmt.Sprintf("missing changelog a gone inA[0]@%d", kOff+1), fmt.Sprintf("missing changelog a r inA[0]@%d", rOff)}
	if got := rowsString(r.Rows); !slices.Equal(got, want) || len(dlqListed(t, r)) != 0 {
		t.Errorf("after the retention: rows %v dead-lettered %v, want %v and none", got, dlqListed(t, r), want)
	}

	// The dead-letter topic is recreated (its high watermark below where
	// the last step stopped): read again from its start.
	tOff := int64(len(tp.f.parts[a.Topic][0].recs))
	m.produce(0, 0, "t", 500, "w")
	m.hop1(0, 0)
	s.step(t)
	tp.f.parts["app-dlq"][0] = &fakePart{lso: -1}
	hop2DLQAll(m, 0, keyIs("t"), none)
	r = s.step(t)
	if got := rowsString(r.Rows); !slices.Equal(got, want) {
		t.Errorf("after the recreation: rows %v, want %v", got, want)
	}
	if got := dlqListed(t, r); len(got) != 1 || !strings.HasPrefix(got[0], fmt.Sprintf("a inA[0]@%d via", tOff)) {
		t.Errorf("after the recreation: dead-lettered %v, want inA[0]@%d", got, tOff)
	}
}

// dlqModel adds dead-lettering at the first hop to model: hop1 of a
// record whose key is dead writes no copy and a dead-letter record naming
// the input record. written may lag the dead-letter records (early): the
// dead-letter record is then read by a step before the group's offset
// passes its record, as when the application's transaction commits
// between the step's read of the offsets and its read of the queue.
type dlqModel struct {
	*model
	lettered map[kread.TP]int64 // per input partition: dead-letter records written up to here
}

func (d *dlqModel) hop1(x int, p int32, dead func(string) bool, commit bool) {
	in := d.tp.opt.Inputs[x]
	tp := kread.TP{Topic: in.Topic, Partition: p}
	recs := d.tp.f.parts[in.Topic][p].recs
	for _, r := range recs[max(d.written[x][p], d.lettered[tp]):] {
		if k, _, _ := strings.Cut(string(r.Value), "|"); dead(k) {
			d.tp.f.addDLQ("app-dlq", r.Key, r.Value, r.Timestamp, dlqHeaders(in.Topic, p, r.Offset, "java.lang.IllegalStateException"))
		}
	}
	d.lettered[tp] = int64(len(recs))
	if !commit {
		return
	}
	d.hop1Skip(x, p, dead)
}

// TestStepEqualsFullAuditWithDeadLetters is the equivalence property
// with a dead-letter queue: on a pipeline growing between steps (lag at
// both hops, random losses, repartition purges), the application
// dead-letters random keys at the first hop (at times writing the
// dead-letter record before its offset commit shows) and at the second;
// every step's open findings, partition findings, counters and verdict
// equal a full audit's at the same moment.
func TestStepEqualsFullAuditWithDeadLetters(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 17))
			tp := newTestPipeline(t)
			tp.f.topic("app-dlq", 1)
			tp.opt.DeadLetterTopic = "app-dlq"
			m := &dlqModel{model: newModel(tp), lettered: map[kread.TP]int64{}}
			s := newStepper(t, tp)
			ts := int64(1000)
			randKeys := func(n int) func(string) bool {
				var ks []string
				for range n {
					ks = append(ks, fmt.Sprintf("k%d", rng.IntN(12)))
				}
				return keyIs(ks...)
			}
			lettered, seq := 0, 0
			for range 10 {
				for range 1 + rng.IntN(20) {
					ts += int64(rng.IntN(20)) - 5
					// Values differ: records of one key with equal
					// timestamps and values share a copy identity, and one
					// second-hop dead-letter record exempts them all (in an
					// audit every such record, in a step the ones it judges),
					// so the counters could differ there.
					seq++
					m.produce(rng.IntN(2), int32(rng.IntN(2)), fmt.Sprintf("k%d", rng.IntN(12)), ts, fmt.Sprint(seq))
				}
				for x := range 2 {
					for p := range int32(2) {
						if rng.IntN(4) > 0 {
							m.hop1(x, p, randKeys(rng.IntN(2)), rng.IntN(3) > 0)
						}
						if rng.IntN(4) > 0 {
							dead, lost := randKeys(rng.IntN(2)), randKeys(rng.IntN(6)/5)
							hop2DLQ(m.model, x, p, dead, lost)
						}
						if rng.IntN(5) == 0 {
							m.purge(x, p)
						}
					}
				}
				res := s.stepLikeAudit(t)
				lettered += len(dlqListed(t, res))
			}
			t.Logf("seed %d: %d dead-letter records, %d records dead-lettered over the steps", seed, len(tp.f.parts["app-dlq"][0].recs), lettered)
		})
	}
}

// TestStepStuckDeadLetterTopicIsNotCommitted: a step whose dead-letter
// partition does not settle reports stuck_lso with every row withheld and
// is not committed, so the next step reads again what it read and exempts
// the record whose dead-letter record the hanging transaction hid.
func TestStepStuckDeadLetterTopicIsNotCommitted(t *testing.T) {
	tp := newTestPipeline(t)
	tp.f.topic("app-dlq", 1)
	tp.opt.DeadLetterTopic = "app-dlq"
	a := tp.opt.Inputs[0]
	m := &dlqModel{model: newModel(tp), lettered: map[kread.TP]int64{}}
	s := newStepper(t, tp)
	m.produce(0, 0, "base", 100, "1")
	m.hop1(0, 0, keyIs(), true)
	hop2DLQAll(m.model, 0, keyIs(), keyIs())
	if r := s.step(t); len(r.Rows) != 0 {
		t.Fatalf("baseline: rows %v", rowsString(r.Rows))
	}
	jOff := int64(len(tp.f.parts[a.Topic][0].recs))
	m.produce(0, 0, "j", 200, "boom")
	m.hop1(0, 0, keyIs("j"), true)   // selectKey throws: dead-lettered at the first hop
	tp.f.parts["app-dlq"][0].lso = 0 // its transaction is still open for the step
	r := s.step(t)
	if len(r.Rows) != 0 || !r.Summary.Partial || r.Summary.Withheld == 0 || !slices.Equal(partsOf(r), []string{"stuck_lso app-dlq[0]"}) {
		t.Errorf("stuck: rows %v partial %v withheld %d partitions %v; want none, partial, withheld, stuck_lso app-dlq[0]",
			rowsString(r.Rows), r.Summary.Partial, r.Summary.Withheld, partsOf(r))
	}
	tp.f.parts["app-dlq"][0].lso = -1
	r = s.step(t)
	if len(r.Rows) != 0 || r.Summary.Partial || r.Summary.Step.Number != 2 {
		t.Errorf("settled: rows %v partial %v step %d; want none, complete, step 2 (the stuck one was not committed)",
			rowsString(r.Rows), r.Summary.Partial, r.Summary.Step.Number)
	}
	if got, want := dlqListed(t, r), []string{fmt.Sprintf("a inA[0]@%d", jOff)}; !slices.Equal(got, want) {
		t.Errorf("settled: dead-lettered %v, want %v", got, want)
	}
	sameAsAudit(t, "settled", r, s.audit(t))
}
