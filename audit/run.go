// Package audit is lossaudit's engine: it snapshots a Kafka Streams
// pipeline's topics in a sound order, reads them with read_committed
// semantics into the on-disk index, and checks key by key that the newest
// processed update of every input reached its reduce store's changelog and
// the joined output (see DESIGN.md, "The core check").
package audit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/history"
	"github.com/lossaudit/lossaudit/audit/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// Kafka is what the engine needs from the cluster; *kread.Client has it.
// Every method is read-only.
type Kafka interface {
	Partitions(ctx context.Context, topic string) ([]int32, error)
	Offsets(ctx context.Context, topic string) (map[int32]kread.Offsets, error)
	OffsetsForTime(ctx context.Context, topic string, t time.Time) (map[int32]int64, error)
	GroupOffsets(ctx context.Context, group string, topics []string) (map[kread.TP]int64, error)
	Read(ctx context.Context, ranges []kread.Range, o kread.ReadOptions, fn func(recs []kread.Record) error) (map[kread.TP]kread.Stats, error)
}

// SelectStatus says what selecting the key of an input record gave.
type SelectStatus uint8

// Selection outcomes.
const (
	// Selected: the record has a selected key (and timestamp).
	Selected SelectStatus = iota
	// NullKey: the selected key is null; Kafka Streams drops the record.
	NullKey
	// DecodeError: the value could not be decoded or the key extracted.
	DecodeError
	// Failed: selection cannot work at all (every schema source down, the
	// registry rejecting the credentials); the run stops with err.
	Failed
)

// Selector computes an input record's selected key and the timestamp the
// application sees for it. It is called concurrently for different
// partitions. On DecodeError, err says why; if err has a method
// `Class() string`, decode errors are counted under that class.
type Selector func(rec *kread.Record) (key []byte, ts int64, status SelectStatus, err error)

// Input is one input of the pipeline, in join order.
type Input struct {
	Name             string
	Topic            string
	RepartitionTopic string
	ChangelogTopic   string
	Select           Selector
	// DownstreamKey, when set, maps a repartition or changelog record key
	// to the form Select returns (for example stripping Avro framing).
	DownstreamKey func([]byte) []byte
}

// Progress receives progress of the long phases; nil means none.
type Progress interface {
	Phase(name string, totalRecords int64) Phase
}

// Phase is one phase of a Progress.
type Phase interface {
	Add(records, bytes int64)
	Done()
}

// Options configure one audit run.
type Options struct {
	Kafka Kafka
	Store *index.Store
	// Group is the application.id: the consumer group whose committed
	// offsets say what has been processed.
	Group  string
	Inputs []Input
	Output string
	// OutputKey, when set, maps an output record key to the selected key form.
	OutputKey func([]byte) []byte
	// From and To bound the audited input timestamps; zero means unbounded.
	From, To time.Time
	// SettleTimeout bounds the wait for transactions open when the group
	// offsets were read to end on changelog and output partitions.
	SettleTimeout time.Duration
	// SettlePoll is the interval between settle checks (default 200ms).
	SettlePoll time.Duration
	Progress   Progress
	// Now is the clock (default time.Now).
	Now func() time.Time
	// History, when set, compares this run's snapshot with the previous
	// run's (truncated, offset_reset) and records it for the next run.
	History History
}

// History keeps partition snapshots across runs; *history.Store has it.
type History interface {
	Compare(group string, now []history.Partition) ([]finding.PartitionFinding, error)
	Record(group string, now []history.Partition, at time.Time) error
}

type snapshot struct {
	parts   []int32
	offsets map[int32]kread.Offsets
}

// Run performs one audit and returns its result. An error means the audit
// could not complete; the result is then nil.
func Run(ctx context.Context, o Options) (*finding.Result, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if o.SettlePoll == 0 {
		o.SettlePoll = 200 * time.Millisecond
	}
	started := now()
	res := &finding.Result{Summary: finding.Summary{
		Started: started,
		Inputs:  map[string]*finding.InputCounts{},
		Stages: map[finding.Stage]*finding.StageCounts{
			finding.StageChangelog: {Findings: map[finding.Kind]int64{}},
			finding.StageOutput:    {Findings: map[finding.Kind]int64{}},
		},
		DecodeErrorsBySchema: map[string]int64{},
		Timings:              map[string]string{},
	}}
	for _, in := range o.Inputs {
		res.Summary.InputOrder = append(res.Summary.InputOrder, in.Name)
		res.Summary.Inputs[in.Name] = &finding.InputCounts{}
	}
	r := &run{o: o, res: res, now: now}
	if err := r.do(ctx); err != nil {
		return nil, err
	}
	res.Summary.Finished = now()
	if o.History != nil {
		if err := o.History.Record(o.Group, r.historySnapshot(), started); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func (o *Options) validate() error {
	switch {
	case o.Kafka == nil:
		return errors.New("audit: no Kafka client")
	case o.Store == nil:
		return errors.New("audit: no index store")
	case o.Group == "":
		return errors.New("audit: no application id (consumer group)")
	case len(o.Inputs) == 0:
		return errors.New("audit: no inputs")
	case len(o.Inputs) > 255:
		return errors.New("audit: more than 255 inputs")
	case o.Output == "":
		return errors.New("audit: no output topic")
	}
	for i, in := range o.Inputs {
		if in.Topic == "" || in.RepartitionTopic == "" || in.ChangelogTopic == "" || in.Select == nil {
			return fmt.Errorf("audit: input %d (%s) lacks a topic, repartition topic, changelog topic or selector", i, in.Name)
		}
	}
	return nil
}

type run struct {
	o   Options
	res *finding.Result
	now func() time.Time

	group      map[kread.TP]int64
	hw0        map[string]map[int32]int64 // downstream high watermarks when the group offsets were read
	inputs     []snapshot
	reparts    []snapshot
	changelogs []snapshot
	output     snapshot
	stuck      map[kread.TP]bool
	nChangelog []int
	nOutput    int

	mu sync.Mutex // guards res.Summary.DecodeErrorsBySchema
}

func (r *run) timed(name string, fn func() error) error {
	t := r.now()
	err := fn()
	r.res.Summary.Timings[name] = r.now().Sub(t).Round(time.Millisecond).String()
	return err
}

func (r *run) do(ctx context.Context) error {
	if err := r.timed("snapshot", func() error { return r.snapshot(ctx) }); err != nil {
		return err
	}
	r.partitionFindings()
	if err := r.compareHistory(); err != nil {
		return err
	}
	if err := r.o.Store.Reset(); err != nil {
		return err
	}
	w := r.o.Store.NewWriter()
	err := r.timed("read", func() error { return r.readAll(ctx, w) })
	if err != nil {
		w.Cancel()
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return r.timed("check", func() error { return r.check() })
}

// snapshot reads, in this order, the group's committed offsets, the high
// watermarks downstream, the end offsets of inputs and repartition topics,
// then waits for the downstream partitions to settle and snapshots them.
// Every later snapshot then holds every transaction an earlier one does.
func (r *run) snapshot(ctx context.Context) error {
	o := r.o
	var groupTopics []string
	for _, in := range o.Inputs {
		groupTopics = append(groupTopics, in.Topic, in.RepartitionTopic)
	}
	// Resolve every topic first, so a missing one fails before anything is read.
	all := append([]string(nil), groupTopics...)
	for _, in := range o.Inputs {
		all = append(all, in.ChangelogTopic)
	}
	all = append(all, o.Output)
	for _, t := range all {
		if _, err := o.Kafka.Partitions(ctx, t); err != nil {
			return fmt.Errorf("audit: topic %s: %w", t, err)
		}
	}
	g, err := o.Kafka.GroupOffsets(ctx, o.Group, groupTopics)
	if err != nil {
		return fmt.Errorf("audit: reading committed offsets of group %s: %w", o.Group, err)
	}
	r.group = g
	down := make([]string, 0, len(o.Inputs)+1)
	for _, in := range o.Inputs {
		down = append(down, in.ChangelogTopic)
	}
	down = append(down, o.Output)
	r.hw0 = map[string]map[int32]int64{}
	for _, t := range down {
		offs, err := o.Kafka.Offsets(ctx, t)
		if err != nil {
			return fmt.Errorf("audit: reading high watermarks of %s: %w", t, err)
		}
		m := map[int32]int64{}
		for p, of := range offs {
			m[p] = of.HighWatermark
		}
		r.hw0[t] = m
	}
	snap := func(topic string) (snapshot, error) {
		offs, err := o.Kafka.Offsets(ctx, topic)
		if err != nil {
			return snapshot{}, fmt.Errorf("audit: reading offsets of %s: %w", topic, err)
		}
		return snapshot{parts: sortedParts(offs), offsets: offs}, nil
	}
	for _, in := range o.Inputs {
		s, err := snap(in.Topic)
		if err != nil {
			return err
		}
		r.inputs = append(r.inputs, s)
	}
	for _, in := range o.Inputs {
		s, err := snap(in.RepartitionTopic)
		if err != nil {
			return err
		}
		r.reparts = append(r.reparts, s)
	}
	r.stuck = map[kread.TP]bool{}
	deadline := r.now().Add(o.SettleTimeout)
	for _, t := range down {
		s, err := r.settle(ctx, t, deadline)
		if err != nil {
			return err
		}
		if t == o.Output {
			r.output = s
			r.nOutput = len(s.parts)
		} else {
			r.changelogs = append(r.changelogs, s)
			r.nChangelog = append(r.nChangelog, len(s.parts))
		}
	}
	return nil
}

// settle waits until every partition of topic has an LSO at or above the
// high watermark it had when the group offsets were read, then returns its
// snapshot. Partitions still short at the deadline are marked stuck.
func (r *run) settle(ctx context.Context, topic string, deadline time.Time) (snapshot, error) {
	for {
		offs, err := r.o.Kafka.Offsets(ctx, topic)
		if err != nil {
			return snapshot{}, fmt.Errorf("audit: reading offsets of %s: %w", topic, err)
		}
		var short []int32
		for p, of := range offs {
			if of.LSO < r.hw0[topic][p] {
				short = append(short, p)
			}
		}
		if len(short) == 0 || !r.now().Before(deadline) {
			sort.Slice(short, func(i, j int) bool { return short[i] < short[j] })
			for _, p := range short {
				r.stuck[kread.TP{Topic: topic, Partition: p}] = true
				of := offs[p]
				r.res.Summary.Partitions = append(r.res.Summary.Partitions, finding.PartitionFinding{
					Kind: finding.StuckLSO, Topic: topic, Partition: p,
					Evidence: fmt.Sprintf("last stable offset %d stayed below %d (the high watermark when the group offsets were read) for %s: a transaction is hanging; findings for keys of this partition are withheld",
						of.LSO, r.hw0[topic][p], r.o.SettleTimeout),
					Offsets: map[string]int64{"lso": of.LSO, "high_watermark_at_start": r.hw0[topic][p], "high_watermark": of.HighWatermark},
				})
			}
			if len(short) > 0 {
				r.res.Summary.Partial = true
				r.res.Summary.PartialWhy = "some changelog or output partitions have a hanging transaction (stuck_lso); findings depending on them are withheld"
			}
			return snapshot{parts: sortedParts(offs), offsets: offs}, nil
		}
		select {
		case <-ctx.Done():
			return snapshot{}, fmt.Errorf("audit: waiting for transactions on %s to end: %w", topic, ctx.Err())
		case <-time.After(r.o.SettlePoll):
		}
	}
}

func sortedParts(m map[int32]kread.Offsets) []int32 {
	ps := make([]int32, 0, len(m))
	for p := range m {
		ps = append(ps, p)
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps
}

// partitionFindings reports repartition partitions purged past the group's
// committed offset: the KAFKA-17635 signature.
func (r *run) partitionFindings() {
	for i, in := range r.o.Inputs {
		s := r.reparts[i]
		for _, p := range s.parts {
			committed, ok := r.group[kread.TP{Topic: in.RepartitionTopic, Partition: p}]
			if !ok {
				continue
			}
			if start := s.offsets[p].LogStart; start > committed {
				r.res.Summary.Partitions = append(r.res.Summary.Partitions, finding.PartitionFinding{
					Kind: finding.PurgedPastCommit, Topic: in.RepartitionTopic, Partition: p,
					Evidence: fmt.Sprintf("log start offset %d is above the committed offset %d of group %s: %d records were deleted before the application processed them (KAFKA-17635)",
						start, committed, r.o.Group, start-committed),
					Offsets: map[string]int64{"log_start": start, "committed": committed},
				})
			}
		}
	}
}

// startOffsets returns where to start reading each partition: the log
// start, or with a window start, the first offset whose timestamp is at
// least From (every record at or after From lies at or after it).
func (r *run) startOffsets(ctx context.Context, topic string, s snapshot) (map[int32]int64, error) {
	start := map[int32]int64{}
	for _, p := range s.parts {
		start[p] = s.offsets[p].LogStart
	}
	if r.o.From.IsZero() {
		return start, nil
	}
	ft, err := r.o.Kafka.OffsetsForTime(ctx, topic, r.o.From)
	if err != nil {
		return nil, fmt.Errorf("audit: looking up offsets of %s for %s: %w", topic, r.o.From.Format(time.RFC3339), err)
	}
	for p, off := range ft {
		if off > start[p] {
			start[p] = off
		}
	}
	return start, nil
}

func (r *run) ranges(ctx context.Context, topic string, s snapshot, fromStart bool) ([]kread.Range, int64, error) {
	start := map[int32]int64{}
	if fromStart {
		for _, p := range s.parts {
			start[p] = s.offsets[p].LogStart
		}
	} else {
		var err error
		if start, err = r.startOffsets(ctx, topic, s); err != nil {
			return nil, 0, err
		}
	}
	var rs []kread.Range
	var total int64
	for _, p := range s.parts {
		from, to := start[p], s.offsets[p].LSO
		if from < to {
			rs = append(rs, kread.Range{Topic: topic, Partition: p, From: from, To: to})
			total += to - from
		}
	}
	return rs, total, nil
}

func (r *run) phase(name string, total int64) Phase {
	if r.o.Progress == nil {
		return nopPhase{}
	}
	return r.o.Progress.Phase(name, total)
}

// readOptions returns read options that advance ph by the offsets each
// fetch consumed (markers and aborted or compacted records take offsets,
// so counting records would leave the phase short of its total).
func readOptions(ph Phase, rs []kread.Range, aborted bool) kread.ReadOptions {
	var mu sync.Mutex
	next := make(map[kread.TP]int64, len(rs))
	for _, rg := range rs {
		next[kread.TP{Topic: rg.Topic, Partition: rg.Partition}] = rg.From
	}
	return kread.ReadOptions{Aborted: aborted, Progress: func(tp kread.TP, n int64) {
		mu.Lock()
		d := n - next[tp]
		next[tp] = n
		mu.Unlock()
		if d > 0 {
			ph.Add(d, 0)
		}
	}}
}

type nopPhase struct{}

func (nopPhase) Add(int64, int64) {}
func (nopPhase) Done()            {}

func (r *run) readAll(ctx context.Context, w *index.Writer) error {
	for i := range r.o.Inputs {
		if err := r.readRepartition(ctx, w, i); err != nil {
			return err
		}
	}
	for i := range r.o.Inputs {
		if err := r.readInput(ctx, w, i); err != nil {
			return err
		}
	}
	for i := range r.o.Inputs {
		in := r.o.Inputs[i]
		x := uint8(i)
		err := r.readStage(ctx, "changelog "+in.ChangelogTopic, in.ChangelogTopic, r.changelogs[i], in.DownstreamKey,
			func(key []byte, rec *kread.Record) error {
				return w.Changelog(x, key, rec.Timestamp, rec.Offset, rec.Kind == kread.Aborted, rec.Value == nil)
			})
		if err != nil {
			return err
		}
	}
	return r.readStage(ctx, "output "+r.o.Output, r.o.Output, r.output, r.o.OutputKey,
		func(key []byte, rec *kread.Record) error {
			return w.Output(key, rec.Timestamp, rec.Offset, rec.Kind == kread.Aborted, rec.Value == nil)
		})
}

// fingerprint identifies a value across its input and repartition copies:
// the Avro payload after the Confluent header, so a schema id that differs
// between the two subjects does not matter.
func fingerprint(v []byte) uint64 {
	if len(v) >= 5 && v[0] == 0 {
		v = v[5:]
	}
	return xxhash.Sum64(v)
}

func (r *run) readRepartition(ctx context.Context, w *index.Writer, i int) error {
	in := r.o.Inputs[i]
	s := r.reparts[i]
	rs, total, err := r.ranges(ctx, in.RepartitionTopic, s, true)
	if err != nil {
		return err
	}
	ph := r.phase("repartition "+in.RepartitionTopic, total)
	defer ph.Done()
	x := uint8(i)
	_, err = r.o.Kafka.Read(ctx, rs, readOptions(ph, rs, false), func(recs []kread.Record) error {
		var bytes int64
		for j := range recs {
			rec := &recs[j]
			bytes += int64(len(rec.Key) + len(rec.Value))
			if rec.Key == nil || rec.Value == nil {
				continue
			}
			committed, ok := r.group[kread.TP{Topic: rec.Topic, Partition: rec.Partition}]
			tail := !ok || rec.Offset >= committed
			key := rec.Key
			if in.DownstreamKey != nil {
				key = in.DownstreamKey(key)
			}
			if err := w.Repartition(x, key, rec.Timestamp, fingerprint(rec.Value), tail, rec.Partition, rec.Offset); err != nil {
				return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
		}
		ph.Add(0, bytes)
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: reading repartition topic %s: %w", in.RepartitionTopic, err)
	}
	return nil
}

func (r *run) readInput(ctx context.Context, w *index.Writer, i int) error {
	in := r.o.Inputs[i]
	s := r.inputs[i]
	rs, total, err := r.ranges(ctx, in.Topic, s, false)
	if err != nil {
		return err
	}
	counts := r.res.Summary.Inputs[in.Name]
	var scanned, outside, pending, nullValue, decodeErrs, nullKey, candidates atomic.Int64
	from, to := int64(0), int64(0)
	if !r.o.From.IsZero() {
		from = r.o.From.UnixMilli()
	}
	if !r.o.To.IsZero() {
		to = r.o.To.UnixMilli()
	}
	ph := r.phase("input "+in.Topic, total)
	defer ph.Done()
	x := uint8(i)
	_, err = r.o.Kafka.Read(ctx, rs, readOptions(ph, rs, false), func(recs []kread.Record) error {
		var bytes, nOutside, nPending, nNullValue, nDecode, nNullKey, nCand int64
		for j := range recs {
			rec := &recs[j]
			bytes += int64(len(rec.Key) + len(rec.Value))
			committed, ok := r.group[kread.TP{Topic: rec.Topic, Partition: rec.Partition}]
			// The window applies to the timestamp the application sees;
			// a record without a decodable value falls back to its own.
			key, ts, status, serr := rec.Key, rec.Timestamp, DecodeError, error(nil)
			if rec.Value != nil {
				key, ts, status, serr = in.Select(rec)
				if status == Failed {
					return fmt.Errorf("selecting the key of %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, serr)
				}
				if status == DecodeError {
					ts = rec.Timestamp
				}
			}
			if (from != 0 && ts < from) || (to != 0 && ts > to) {
				nOutside++
				continue
			}
			if !ok || rec.Offset >= committed {
				nPending++
				continue
			}
			if rec.Value == nil {
				nNullValue++
				continue
			}
			switch status {
			case DecodeError:
				nDecode++
				r.countDecodeError(rec, serr)
				continue
			case NullKey:
				nNullKey++
				continue
			}
			if err := w.Input(x, key, ts, rec.Partition, rec.Offset, fingerprint(rec.Value)); err != nil {
				return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
			nCand++
		}
		scanned.Add(int64(len(recs)))
		outside.Add(nOutside)
		pending.Add(nPending)
		nullValue.Add(nNullValue)
		decodeErrs.Add(nDecode)
		nullKey.Add(nNullKey)
		candidates.Add(nCand)
		ph.Add(0, bytes)
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: reading input %s (%s): %w", in.Name, in.Topic, err)
	}
	counts.Scanned = scanned.Load()
	counts.OutsideWindow = outside.Load()
	counts.Pending = pending.Load()
	counts.NullValue = nullValue.Load()
	counts.DecodeErrors = decodeErrs.Load()
	counts.NullKey = nullKey.Load()
	// Candidates still in the repartition tail move from audited to pending
	// during the check pass.
	counts.Audited = candidates.Load()
	return nil
}

// maxDecodeSamples bounds the decode errors quoted with their coordinates.
const maxDecodeSamples = 10

func (r *run) countDecodeError(rec *kread.Record, err error) {
	class := "other"
	var c interface{ Class() string }
	if errors.As(err, &c) {
		class = c.Class()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sum := &r.res.Summary
	sum.DecodeErrorsBySchema[class]++
	if len(sum.DecodeErrorSamples) < maxDecodeSamples {
		sum.DecodeErrorSamples = append(sum.DecodeErrorSamples, finding.DecodeErrorSample{
			Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Error: fmt.Sprint(err)})
	}
}

func (r *run) readStage(ctx context.Context, name, topic string, s snapshot, norm func([]byte) []byte, put func(key []byte, rec *kread.Record) error) error {
	rs, total, err := r.ranges(ctx, topic, s, false)
	if err != nil {
		return err
	}
	ph := r.phase(name, total)
	defer ph.Done()
	_, err = r.o.Kafka.Read(ctx, rs, readOptions(ph, rs, true), func(recs []kread.Record) error {
		var bytes int64
		for j := range recs {
			rec := &recs[j]
			bytes += int64(len(rec.Key) + len(rec.Value))
			if rec.Key == nil {
				continue
			}
			key := rec.Key
			if norm != nil {
				key = norm(key)
			}
			if err := put(key, rec); err != nil {
				return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
		}
		ph.Add(0, bytes)
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: reading %s: %w", name, err)
	}
	return nil
}

// check streams the index key by key and collects the rows.
func (r *run) check() error {
	c := &checker{inputs: make([]stageInput, len(r.o.Inputs))}
	for i, in := range r.o.Inputs {
		c.inputs[i] = stageInput{Name: in.Name, Topic: in.Topic}
	}
	if len(r.stuck) > 0 {
		c.withheld = func(stage finding.Stage, x int, key []byte) bool {
			if stage == finding.StageChangelog {
				t := r.o.Inputs[x].ChangelogTopic
				return r.stuck[kread.TP{Topic: t, Partition: partitionFor(key, r.nChangelog[x])}]
			}
			return r.stuck[kread.TP{Topic: r.o.Output, Partition: partitionFor(key, r.nOutput)}]
		}
	}
	sum := &r.res.Summary
	var rows []finding.Row
	var seen []seenAt // per row: where the repartition topic still holds the evidence record
	byName := map[string]int{}
	for i, in := range r.o.Inputs {
		byName[in.Name] = i
	}
	tailPending := make([]int64, len(r.o.Inputs))
	withheld := 0
	err := r.o.Store.Scan(len(r.o.Inputs), func(v *index.KeyView) error {
		for x, in := range v.Inputs {
			tailPending[x] += in.TailMatched
		}
		n := len(rows)
		var kr keyResult
		rows, kr = c.check(v, rows)
		for j := n; j < len(rows); j++ {
			rows[j].Key = append([]byte(nil), rows[j].Key...)
			in := v.Inputs[byName[rows[j].Input]]
			seen = append(seen, seenAt{in.Seen, in.SeenPartition, in.SeenOffset})
		}
		sum.Stages[finding.StageChangelog].KeysChecked += int64(kr.checkedChangelog)
		sum.Stages[finding.StageOutput].KeysChecked += int64(kr.checkedOutput)
		withheld += kr.withheld
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: checking the index: %w", err)
	}
	for x, in := range r.o.Inputs {
		cnt := sum.Inputs[in.Name]
		cnt.Pending += tailPending[x]
		cnt.Audited -= tailPending[x]
	}
	for j := range rows {
		row := &rows[j]
		sum.Stages[row.Stage].Findings[row.Kind]++
		if row.Stage == finding.StageChangelog {
			row.Detail = r.repartitionDetail(byName[row.Input], seen[j])
		}
	}
	// The index yields keys in hash order; rows come out in key order (by
	// length, then bytes), each key's rows in the order the check made them.
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ka, kb := rows[order[a]].Key, rows[order[b]].Key
		if len(ka) != len(kb) {
			return len(ka) < len(kb)
		}
		return string(ka) < string(kb)
	})
	sorted := make([]finding.Row, len(rows))
	for i, j := range order {
		sorted[i] = rows[j]
	}
	rows = sorted
	if withheld > 0 {
		sum.Partial = true
	}
	r.res.Rows = rows
	return nil
}

// seenAt is where a repartition topic still holds a processed copy of an
// evidence record, if it does.
type seenAt struct {
	ok        bool
	partition int32
	offset    int64
}

// repartitionDetail says whether the lost update can still be seen in the
// repartition topic (it reached the first hop and was lost before the
// store) or not (purged, or never written).
func (r *run) repartitionDetail(x int, s seenAt) string {
	in := r.o.Inputs[x]
	if s.ok {
		return fmt.Sprintf("seen in repartition topic %s[%d]@%d, lost before the store", in.RepartitionTopic, s.partition, s.offset)
	}
	return fmt.Sprintf("repartition topic %s no longer holds it (purged) or never did", in.RepartitionTopic)
}

// historySnapshot lists what this run saw of every audited partition.
func (r *run) historySnapshot() []history.Partition {
	var out []history.Partition
	add := func(topic string, s snapshot) {
		for _, p := range s.parts {
			of := s.offsets[p]
			hp := history.Partition{Topic: topic, Partition: p, LogStart: of.LogStart, LSO: of.LSO, HighWatermark: of.HighWatermark}
			hp.Committed, hp.HasCommitted = r.group[kread.TP{Topic: topic, Partition: p}]
			out = append(out, hp)
		}
	}
	for i, in := range r.o.Inputs {
		add(in.Topic, r.inputs[i])
		add(in.RepartitionTopic, r.reparts[i])
		add(in.ChangelogTopic, r.changelogs[i])
	}
	add(r.o.Output, r.output)
	return out
}

// compareHistory adds the findings that only a comparison with the
// previous run can show (truncated, offset_reset).
func (r *run) compareHistory() error {
	if r.o.History == nil {
		return nil
	}
	fs, err := r.o.History.Compare(r.o.Group, r.historySnapshot())
	if err != nil {
		return err
	}
	r.res.Summary.Partitions = append(r.res.Summary.Partitions, fs...)
	return nil
}
