package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
)

// KeyState is the newest committed record of one key in one topic.
type KeyState struct {
	TS        int64
	Partition int32
	Offset    int64
	Null      bool   // a tombstone
	Seq       int64  // seq of the input record in the value (of input a for OUTPUT)
	ValueKey  string // customerId inside the value, its raw bytes
}

// Observed is what the changelogs and OUTPUT hold, read with read_committed
// semantics through franz-go's consumer (not lossaudit's reader).
type Observed struct {
	Changelog map[string]map[string]KeyState // input name -> selected key -> newest
	Output    map[string]KeyState
	Committed map[string]int64 // topic -> committed records read
	Aborted   map[string]int64 // topic -> records of aborted transactions
}

// Observe reads every changelog and OUTPUT from the log start to the last
// stable offset, and counts the committed and aborted records of the
// repartition topics too (aborted = read_uncommitted minus read_committed
// records of the same ranges). Values are decoded with the schemas of the
// _schemas topic.
func Observe(ctx context.Context, env *Env, stages map[string]Stage) (*Observed, error) {
	codecs, err := schemaCodecs(ctx, env)
	if err != nil {
		return nil, err
	}
	obs := &Observed{Changelog: map[string]map[string]KeyState{}, Output: map[string]KeyState{},
		Committed: map[string]int64{}, Aborted: map[string]int64{}}
	read := func(topic string, into map[string]KeyState, output bool) error {
		ranges, err := env.Admin.Ranges(ctx, true, topic)
		if err != nil {
			return err
		}
		committed, err := committedRecords(ctx, env, ranges, func(r *kgo.Record) error {
			if into == nil {
				return nil
			}
			st := KeyState{TS: r.Timestamp.UnixMilli(), Partition: r.Partition, Offset: r.Offset, Null: r.Value == nil}
			if r.Value != nil {
				if err := decodeInto(codecs, r.Value, output, &st); err != nil {
					return fmt.Errorf("%s[%d] at %d: %w", r.Topic, r.Partition, r.Offset, err)
				}
			}
			k := string(r.Key)
			if old, ok := into[k]; !ok || st.TS >= old.TS {
				into[k] = st
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading %s: %w", topic, err)
		}
		all, err := allRecords(ctx, env, ranges)
		if err != nil {
			return fmt.Errorf("reading %s read_uncommitted: %w", topic, err)
		}
		obs.Committed[topic] += committed
		obs.Aborted[topic] += all - committed
		return nil
	}
	for in, s := range stages {
		obs.Changelog[in] = map[string]KeyState{}
		if err := read(s.Changelog, obs.Changelog[in], false); err != nil {
			return nil, err
		}
		if err := read(s.Repartition, nil, false); err != nil {
			return nil, err
		}
	}
	if err := read(Output, obs.Output, true); err != nil {
		return nil, err
	}
	return obs, nil
}

func decodeInto(codecs map[uint32]*goavro.Codec, v []byte, output bool, st *KeyState) error {
	if len(v) < 5 || v[0] != 0 {
		return fmt.Errorf("value is not Confluent-framed Avro")
	}
	id := binary.BigEndian.Uint32(v[1:5])
	c, ok := codecs[id]
	if !ok {
		return fmt.Errorf("schema id %d not in %s", id, SchemasTopic)
	}
	native, _, err := c.NativeFromBinary(v[5:])
	if err != nil {
		return fmt.Errorf("decoding with schema %d: %w", id, err)
	}
	m, _ := native.(map[string]any)
	st.ValueKey, _ = m["customerId"].(string)
	if output {
		m, _ = m["a"].(map[string]any)
	}
	st.Seq, _ = m["seq"].(int64)
	return nil
}

// Discrepancy is one (stage, input, key) whose newest update did not arrive,
// by the testbed's own ledger-based check.
type Discrepancy struct {
	Stage string // changelog | output
	Input string // a | b | c for changelog; "" for output (a key of the joined result)
	Key   string
	Kind  string // missing | stale
	Want  int64  // timestamp the stage should have reached
	Got   int64  // newest timestamp seen; 0 when missing
}

func (d Discrepancy) String() string {
	return fmt.Sprintf("%s/%s/%s %s (want ts %d, got %d)", d.Stage, d.Input, d.Key, d.Kind, d.Want, d.Got)
}

// Check compares the ledger with what the stages hold ("Timestamps propagate
// as maxima"): every (input, key)'s newest acknowledged timestamp must be
// reached by that input's changelog, and every key of the left table must
// reach OUTPUT with the newest timestamp of its changelogs. It also returns
// sanity problems (a value whose customerId is not its key). Keys are
// compared as the application selects them: a changelog value keeps the
// raw customerId bytes of its input record, its key is that customerId as
// Java decoded it (loadgen.SelectedKey).
func Check(l *loadgen.Ledger, obs *Observed) (found []Discrepancy, problems []string) {
	for ik, e := range l.Newest() {
		st, ok := obs.Changelog[ik.Input][ik.Key]
		switch {
		case !ok || st.Null:
			found = append(found, Discrepancy{Stage: "changelog", Input: ik.Input, Key: ik.Key, Kind: "missing", Want: e.Timestamp})
		case st.TS < e.Timestamp:
			found = append(found, Discrepancy{Stage: "changelog", Input: ik.Input, Key: ik.Key, Kind: "stale", Want: e.Timestamp, Got: st.TS})
		}
	}
	for in, keys := range obs.Changelog {
		for k, st := range keys {
			if !st.Null && loadgen.SelectedKey(st.ValueKey) != k {
				problems = append(problems, fmt.Sprintf("changelog of %s: key %q holds a value of customer %q", in, k, st.ValueKey))
			}
		}
	}
	for k, st := range obs.Output {
		if !st.Null && loadgen.SelectedKey(st.ValueKey) != k {
			problems = append(problems, fmt.Sprintf("output: key %q holds a value of customer %q", k, st.ValueKey))
		}
	}
	for k, a := range obs.Changelog["a"] {
		if a.Null {
			continue
		}
		want := int64(0)
		for _, keys := range obs.Changelog {
			if st, ok := keys[k]; ok && !st.Null {
				want = max(want, st.TS)
			}
		}
		out, ok := obs.Output[k]
		switch {
		case !ok || out.Null:
			found = append(found, Discrepancy{Stage: "output", Key: k, Kind: "missing", Want: want})
		case out.TS < want:
			found = append(found, Discrepancy{Stage: "output", Key: k, Kind: "stale", Want: want, Got: out.TS})
		}
	}
	sortDiscrepancies(found)
	sort.Strings(problems)
	return found, problems
}

func sortDiscrepancies(ds []Discrepancy) {
	sort.Slice(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		if a.Input != b.Input {
			return a.Input < b.Input
		}
		return a.Key < b.Key
	})
}

// Injected returns the discrepancies an injection must cause, given the
// ledger: every (input, key) dropped before the store is missing from that
// changelog, and every key dropped before OUTPUT that is in the left table is
// missing from OUTPUT. Want timestamps are filled from the ledger for the
// changelog stage; for OUTPUT from the newest input timestamps of the key.
func Injected(l *loadgen.Ledger, dropBeforeStore map[string][]string, dropBeforeOutput []string) []Discrepancy {
	newest := l.Newest()
	droppedStore := map[loadgen.InputKey]bool{}
	var out []Discrepancy
	for in, keys := range dropBeforeStore {
		for _, k := range keys {
			ik := loadgen.InputKey{Input: in, Key: k}
			if e, ok := newest[ik]; ok {
				droppedStore[ik] = true
				out = append(out, Discrepancy{Stage: "changelog", Input: in, Key: k, Kind: "missing", Want: e.Timestamp})
			}
		}
	}
	for _, k := range dropBeforeOutput {
		if _, ok := newest[loadgen.InputKey{Input: "a", Key: k}]; !ok || droppedStore[loadgen.InputKey{Input: "a", Key: k}] {
			continue
		}
		want := int64(0)
		for _, in := range loadgen.InputNames {
			ik := loadgen.InputKey{Input: in, Key: k}
			if e, ok := newest[ik]; ok && !droppedStore[ik] {
				want = max(want, e.Timestamp)
			}
		}
		out = append(out, Discrepancy{Stage: "output", Key: k, Kind: "missing", Want: want})
	}
	sortDiscrepancies(out)
	return out
}

// FromAudit converts an audit result's rows to discrepancies, so they can be
// compared with Check's and Injected's. Output rows lose their input name
// (the testbed reports output per key) and duplicates per key collapse into
// one that wants the newest of their expected timestamps, as Check's output
// check does (the audit reports one output row per input that did not arrive).
func FromAudit(res *finding.Result) []Discrepancy {
	at := map[Discrepancy]int{}
	var out []Discrepancy
	for _, r := range res.Rows {
		d := Discrepancy{Stage: string(r.Stage), Input: r.Input, Key: string(r.Key), Kind: string(r.Kind), Want: r.ExpectedTS}
		if r.HasObserved {
			d.Got = r.ObservedTS
		}
		if r.Stage == finding.StageOutput {
			d.Input = ""
		}
		key := d
		key.Want, key.Got = 0, 0
		if i, ok := at[key]; ok {
			if d.Want > out[i].Want {
				out[i] = d
			}
			continue
		}
		at[key] = len(out)
		out = append(out, d)
	}
	sortDiscrepancies(out)
	return out
}

// Split divides the ledger into the records the application has processed
// through both hops and those still pending: an input record is pending when
// its offset is at or above the group's committed offset, or when its copy
// sits in its repartition partition's unprocessed tail [committed, LSO).
// It returns the processed part and the pending count per input.
func Split(ctx context.Context, env *Env, stages map[string]Stage, l *loadgen.Ledger) (*loadgen.Ledger, map[string]int64, error) {
	codecs, err := schemaCodecs(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	var topics []string
	for _, s := range stages {
		topics = append(topics, s.Topic, s.Repartition)
	}
	committed, err := groupOffsets(ctx, env.Admin, topics)
	if err != nil {
		return nil, nil, err
	}
	type inSeq struct {
		input string
		seq   int64
	}
	inTail := map[inSeq]bool{}
	for in, s := range stages {
		ranges, err := env.Admin.Ranges(ctx, true, s.Repartition)
		if err != nil {
			return nil, nil, err
		}
		for i, r := range ranges {
			// The tail starts at the committed offset, or at the log
			// start when a purge (KAFKA-17635) went past it.
			if c, ok := committed[kafka.TP{Topic: r.Topic, Partition: r.Partition}]; ok {
				ranges[i].From = max(r.From, c)
			}
		}
		err = tailSeqs(ctx, env, codecs, ranges, func(_ *kgo.Record, seq int64) {
			inTail[inSeq{in, seq}] = true
		})
		if err != nil {
			return nil, nil, fmt.Errorf("reading the tail of %s: %w", s.Repartition, err)
		}
	}
	pending := map[string]int64{}
	var done []loadgen.Entry
	for _, e := range l.Entries() {
		c, ok := committed[kafka.TP{Topic: e.Topic, Partition: e.Partition}]
		if !ok || e.Offset >= c || inTail[inSeq{e.Input, e.Seq}] {
			pending[e.Input]++
			continue
		}
		done = append(done, e)
	}
	return loadgen.FromEntries(done), pending, nil
}

// tailSeqs reads the committed records of repartition ranges and calls fn
// with each non-null record and the seq of the input record it copies.
func tailSeqs(ctx context.Context, env *Env, codecs map[uint32]*goavro.Codec, ranges []kafka.Range, fn func(*kgo.Record, int64)) error {
	_, err := committedRecords(ctx, env, ranges, func(r *kgo.Record) error {
		if r.Value == nil {
			return nil
		}
		var st KeyState
		if err := decodeInto(codecs, r.Value, false, &st); err != nil {
			return fmt.Errorf("%s[%d] at %d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		fn(r, st.Seq)
		return nil
	})
	return err
}

// schemaCodecs compiles every schema of the _schemas topic by id.
func schemaCodecs(ctx context.Context, env *Env) (map[uint32]*goavro.Codec, error) {
	entries, err := loadgen.ReadSchemas(ctx, env.Cluster.Bootstrap(), SchemasTopic)
	if err != nil {
		return nil, err
	}
	codecs := map[uint32]*goavro.Codec{}
	for _, e := range entries {
		if _, ok := codecs[uint32(e.ID)]; ok {
			continue
		}
		c, err := goavro.NewCodec(e.Schema)
		if err != nil {
			return nil, fmt.Errorf("schema id %d of %s: %w", e.ID, e.Subject, err)
		}
		codecs[uint32(e.ID)] = c
	}
	return codecs, nil
}

// Purged is one repartition record deleted past the group's committed offset.
type Purged struct {
	Input string
	Seq   int64
	TP    kafka.TP
}

// PurgePastCommit does what KAFKA-17635 does while the application is
// stopped: it deletes every repartition partition's unprocessed tail
// [committed offset, LSO), and returns the deleted records (decoded) and the
// partitions whose log start now lies above the committed offset.
func PurgePastCommit(ctx context.Context, env *Env, stages map[string]Stage) ([]Purged, []kafka.TP, error) {
	codecs, err := schemaCodecs(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	var out []Purged
	var parts []kafka.TP
	for in, s := range stages {
		committed, err := groupOffsets(ctx, env.Admin, []string{s.Repartition})
		if err != nil {
			return nil, nil, err
		}
		all, err := env.Admin.Ranges(ctx, true, s.Repartition)
		if err != nil {
			return nil, nil, err
		}
		var ranges []kafka.Range
		del := map[int32]int64{}
		for _, r := range all {
			tp := kafka.TP{Topic: r.Topic, Partition: r.Partition}
			c, ok := committed[tp]
			if !ok || r.To <= c {
				continue
			}
			ranges = append(ranges, kafka.Range{Topic: r.Topic, Partition: r.Partition, From: max(r.From, c), To: r.To})
			del[r.Partition] = r.To
			parts = append(parts, tp)
		}
		err = tailSeqs(ctx, env, codecs, ranges, func(r *kgo.Record, seq int64) {
			out = append(out, Purged{Input: in, Seq: seq, TP: kafka.TP{Topic: r.Topic, Partition: r.Partition}})
		})
		if err != nil {
			return nil, nil, fmt.Errorf("reading the tail of %s: %w", s.Repartition, err)
		}
		if len(del) > 0 {
			if err := env.Admin.DeleteRecords(ctx, s.Repartition, del); err != nil {
				return nil, nil, err
			}
		}
	}
	sort.Slice(parts, func(i, j int) bool {
		if parts[i].Topic != parts[j].Topic {
			return parts[i].Topic < parts[j].Topic
		}
		return parts[i].Partition < parts[j].Partition
	})
	return out, parts, nil
}
