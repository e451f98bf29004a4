package streams

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// A windowed aggregation on time windows, tumbling or hopping
// (Input.Window), is checked per (key, window start): its records are read
// from the repartition topic the aggregation reads (the input topic is not
// read), and a processed record is, for each of its windows it was
// certainly added to (detect.TimeWindows.Place), a candidate keyed by
// [key][8-byte window start], the changelog's keys
// ([key][start][seqnum]) and the output's ([key][start], the windowed
// serde) are indexed in that form, and the core check (detect.Keys) holds
// every (key, window) to the rules of a table: changelog and output at
// least as new as the window's newest certain record, a count at least
// their number. Rows name the window (finding.Row.Window).

// clockSkew widens the retention bound of windowed checks: a broker whose
// clock runs ahead of the audit's deletes records that old sooner.
const clockSkew = 5 * time.Minute

// windowCounters count what a windowed input's read and its stages' keys
// gave.
type windowCounters struct {
	onTime, late, expired, badTS          atomic.Int64
	badChangelogKeys, badOutputKeys       atomic.Int64
	misaligned, misalignedStart, unknownP atomic.Int64
	// changelogRecords counts the changelog records with a window key.
	changelogRecords atomic.Int64
	// closedMu guards closedBy: per partition of the topic the
	// aggregation reads, the greatest timestamp of a processed record
	// certainly added to one of its windows (the bound of
	// detect.TimeWindows.Closed); a partition missing has none.
	closedMu sync.Mutex
	closedBy map[int32]int64
}

// windowed returns the index of the windowed input, -1 for none (a
// windowed aggregation is audited alone: one input).
func (o *Options) windowed() int {
	for x := range o.Inputs {
		if o.Inputs[x].Window != nil {
			return x
		}
	}
	return -1
}

// checkWindowed refuses what a windowed check cannot do.
func (o *Options) checkWindowed() error {
	x := o.windowed()
	if x < 0 {
		return nil
	}
	in := o.Inputs[x]
	switch {
	case len(o.Inputs) != 1:
		return fmt.Errorf("audit: input %s is a windowed aggregation: it is audited alone (one input, no join)", in.Name)
	case in.Table:
		return fmt.Errorf("audit: input %s: a windowed aggregation is audited from the topic it reads, not from a table source", in.Name)
	case in.BufferTopic != "" && o.Output == "":
		return fmt.Errorf("audit: input %s: a windowed aggregation's suppress buffer needs the output it feeds", in.Name)
	case o.DeadLetterTopic != "":
		return fmt.Errorf("audit: input %s is a windowed aggregation: a dead-letter queue (pipeline.dead_letter_topic) is not supported with it yet", in.Name)
	case !o.From.IsZero() || !o.To.IsZero():
		return fmt.Errorf("audit: input %s is a windowed aggregation: a time window (window.from, window.to) is not supported with it (stream time is computed from each repartition partition's first record)", in.Name)
	case in.Window.Size <= 0 || in.Window.Advance <= 0 || in.Window.Advance > in.Window.Size || in.Window.Grace < 0:
		return fmt.Errorf("audit: input %s: window size %d ms, advance %d ms, grace %d ms", in.Name, in.Window.Size, in.Window.Advance, in.Window.Grace)
	}
	return nil
}

// windowChangelogKey returns the changelog key normalizer of windowed
// input x: [key][start][seqnum] to [key][start], the key part normalized
// as DownstreamKey says; nil for a key too short (counted).
func (c *collector) windowChangelogKey(x int) func([]byte) []byte {
	in := c.o.Inputs[x]
	return func(b []byte) []byte {
		k, start, ok := detect.SplitWindowStoreKey(b)
		if !ok {
			c.win2.badChangelogKeys.Add(1)
			return nil
		}
		if start%in.Window.Advance != 0 {
			c.win2.misaligned.Add(1)
			c.win2.misalignedStart.Store(start)
		}
		c.win2.changelogRecords.Add(1)
		if in.DownstreamKey != nil {
			k = in.DownstreamKey(k)
		}
		return detect.WindowedKey(k, start)
	}
}

// windowOutputKey returns the output key normalizer of windowed input x:
// [key][start] checked for length, the key part normalized; nil for a key
// too short (counted).
func (c *collector) windowOutputKey(x int) func([]byte) []byte {
	in := c.o.Inputs[x]
	return func(b []byte) []byte {
		k, start, ok := detect.SplitWindowedKey(b)
		if !ok {
			c.win2.badOutputKeys.Add(1)
			return nil
		}
		if in.DownstreamKey != nil {
			k = in.DownstreamKey(k)
		}
		return detect.WindowedKey(k, start)
	}
}

// readWindowInput reads the repartition topic of windowed input x from
// each partition's log start, twice. The first read bounds stream time:
// the greatest timestamp of the partition's records (a null key too, which
// the aggregation skips: a higher bound only checks less), up to its
// end as the snapshot saw it (detect.TimeWindows.Place says why not the
// records before each one only); it is known only when the read starts at
// offset 0 (nothing purged or deleted before). The second read takes the
// processed records (below the group's committed offset): those certainly
// added to their window are candidates keyed by (key, window start); the
// others are counted.
func (c *collector) readWindowInput(ctx context.Context, x int) error {
	in := &c.o.Inputs[x]
	w := *in.Window
	t := c.snap.reparts[x]
	if in.RepartitionTopic == "" {
		t = c.snap.inputs[x] // groupByKey on the input's own key: the aggregation reads the input topic
	}
	rs, total := c.ranges(t, nil)
	// Stream time is known where the partition starts at offset 0 and the
	// read starts at its start (an audit's plan is nil: it does).
	known := map[int32]bool{}
	for _, p := range t.Parts {
		of := t.Offsets[p]
		known[p] = of.LogStart == 0 && c.plan == nil
		if !known[p] && of.LSO > of.LogStart {
			c.win2.unknownP.Add(1)
		}
	}
	retainedFrom := c.retainedFrom(x)
	var mu sync.Mutex
	streamMax := map[int32]int64{}
	err := collect.Read(ctx, c.o.Kafka, collect.Spec{Name: t.Name + " (stream time)", Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) error {
		for i := range recs {
			rec := &recs[i]
			mu.Lock()
			if sm, seen := streamMax[rec.Partition]; !seen || rec.Timestamp > sm {
				streamMax[rec.Partition] = rec.Timestamp
			}
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	cnt := &c.counts[x]
	err = collect.Read(ctx, c.o.Kafka, collect.Spec{Name: t.Name, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) error {
		var n [deadLettered + 1]int64
		tl := c.timeline.batch()
		for i := range recs {
			rec := &recs[i]
			if rec.Key == nil {
				n[nullKey]++ // skipped before stream time moves
				continue
			}
			mu.Lock()
			sm := streamMax[rec.Partition]
			mu.Unlock()
			committed, ok := c.snap.group[kread.TP{Topic: rec.Topic, Partition: rec.Partition}]
			switch {
			case !ok || rec.Offset >= committed:
				n[pending]++
				tl.note(rec.Timestamp, true)
				continue
			case rec.Value == nil:
				n[nullValue]++
				continue
			}
			starts := w.Starts(rec.Timestamp)
			if len(starts) == 0 {
				c.win2.badTS.Add(1)
				continue
			}
			key := rec.Key
			if in.DownstreamKey != nil {
				key = in.DownstreamKey(key)
			}
			fp := fingerprint(rec.Value)
			if last := starts[len(starts)-1]; known[rec.Partition] && last+w.Size > sm-w.Grace {
				// Certainly added to its newest window: its update reached
				// the suppress processor (if any) at this timestamp or later.
				c.win2.noteClosedBy(rec.Partition, rec.Timestamp)
			}
			checked := false
			for _, start := range starts {
				switch w.Place(start, rec.Timestamp, sm, known[rec.Partition], retainedFrom) {
				case detect.WindowLateOrUncertain:
					c.win2.late.Add(1)
					continue
				case detect.WindowExpired:
					c.win2.expired.Add(1)
					continue
				case detect.WindowBadTimestamp:
					c.win2.badTS.Add(1)
					continue
				}
				c.win2.onTime.Add(1)
				checked = true
				wk := detect.WindowedKey(key, start)
				if err := c.w.input(false, uint8(x), wk, rec.Timestamp, rec.Partition, rec.Offset, fp); err != nil {
					return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
				}
				// The record is its own copy in the repartition topic (the
				// witness of a changelog row).
				if err := c.w.repartition(uint8(x), wk, rec.Timestamp, fp, false, rec.Partition, rec.Offset); err != nil {
					return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
				}
			}
			if checked {
				n[candidate]++ // audited: at least one of its windows is checked
				tl.note(rec.Timestamp, false)
			}
		}
		c.timeline.add(x, tl)
		cnt.scanned.Add(int64(len(recs)))
		cnt.candidates.Add(n[candidate])
		cnt.pending.Add(n[pending])
		cnt.nullValue.Add(n[nullValue])
		cnt.nullKey.Add(n[nullKey])
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: input %s: %w", in.Name, err)
	}
	return nil
}

// retainedFrom is the newest record time whose windows windowed input x's
// changelog or output may have deleted by retention; -1 for none.
func (c *collector) retainedFrom(x int) int64 {
	if r := c.o.Inputs[x].WindowRetention; r > 0 {
		return c.o.Now().Add(clockSkew - r).UnixMilli()
	}
	return -1
}

// noteClosedBy raises partition p's bound of closed windows to ts.
func (w *windowCounters) noteClosedBy(p int32, ts int64) {
	w.closedMu.Lock()
	defer w.closedMu.Unlock()
	if w.closedBy == nil {
		w.closedBy = map[int32]int64{}
	}
	if b, ok := w.closedBy[p]; !ok || ts > b {
		w.closedBy[p] = ts
	}
}

// finalPlace returns what places the windows of the windowed input
// emitted final (suppress(untilWindowCloses)) for detect.WindowFinal, nil
// without one: a window (its key [key][start], its changelog record at
// partition with timestamp ts) is closed by the greatest timestamp of a
// processed record certainly in a window of the same partition of the
// topic the aggregation reads (the task's: the changelog's and the
// buffer's partition number is the task's, and the sub-topology reads one
// topic).
func (c *collector) finalPlace() func(key []byte, partition int32, ts int64) detect.FinalPlace {
	x := c.o.windowed()
	if x < 0 || c.o.Inputs[x].BufferTopic == "" {
		return nil
	}
	w, retainedFrom := *c.o.Inputs[x].Window, c.retainedFrom(x)
	c.win2.closedMu.Lock()
	bound := maps.Clone(c.win2.closedBy)
	c.win2.closedMu.Unlock()
	return func(key []byte, partition int32, ts int64) detect.FinalPlace {
		_, start, ok := detect.SplitWindowedKey(key)
		if !ok {
			return detect.FinalOpen
		}
		b, known := bound[partition]
		return w.Closed(start, ts, b, known, retainedFrom)
	}
}

// windowBufferKey returns the buffer changelog key normalizer of windowed
// input x: the buffer of a suppress after a windowed aggregation is keyed
// by the table's serialized key, [key][start] (TimeWindowedSerializer, the
// FullTimeWindowedSerde of TimeWindowedKStreamImpl), the key part
// normalized; nil for a key too short.
func (c *collector) windowBufferKey(x int) func([]byte) []byte {
	in := c.o.Inputs[x]
	return func(b []byte) []byte {
		k, start, ok := detect.SplitWindowedKey(b)
		if !ok {
			return nil
		}
		if in.DownstreamKey != nil {
			k = in.DownstreamKey(k)
		}
		return detect.WindowedKey(k, start)
	}
}

// windowRows rewrites the rows of a windowed input: the key of each is
// [key][window start]; it becomes the key, and Window the window.
func windowRows(o Options, rows []finding.Row) {
	x := o.windowed()
	if x < 0 {
		return
	}
	size := o.Inputs[x].Window.Size
	for i := range rows {
		k, start, ok := detect.SplitWindowedKey(rows[i].Key)
		if !ok {
			continue
		}
		rows[i].Key = k
		rows[i].Window = &finding.WindowRef{Start: start, Size: size}
	}
}

// WindowMismatchError says that the declared window cannot be the
// application's: the changelog holds windows that do not start at a
// multiple of the declared size, or no window checked is in the changelog
// at all. It is a configuration mistake, not loss: the command exits 2.
type WindowMismatchError struct {
	Input, Changelog string
	// Size is the declared size in milliseconds.
	Size int64
	// Misaligned counts changelog records whose window start is not a
	// multiple of Size, Start is one of them.
	Misaligned, Start int64
	// Checked and Missing count the windows checked at the changelog and
	// those missing there (all of them when Misaligned is 0).
	Checked, Missing int64
}

// Error implements error.
func (e *WindowMismatchError) Error() string {
	if e.Misaligned > 0 {
		return fmt.Sprintf("input %s: changelog topic %s holds %d windows that start at no multiple of the declared window size %s (one starts at %s): the declared window is probably not the application's (check pipeline.nodes[].window)",
			e.Input, e.Changelog, e.Misaligned, time.Duration(e.Size)*time.Millisecond, time.UnixMilli(e.Start).UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("input %s: none of the %d windows checked is in changelog topic %s: the declared window size %s is probably not the application's (check pipeline.nodes[].window); nothing is reported as lost",
		e.Input, e.Checked, e.Changelog, time.Duration(e.Size)*time.Millisecond)
}

// windowMismatch returns a *WindowMismatchError when the windowed input's
// changelog shows that the declared window is wrong: a window start that
// no window of the declared advance has, or every checked window
// missing while the changelog holds records. nil otherwise.
func windowMismatch(o Options, c *collector, chk *checked) error {
	x := o.windowed()
	if x < 0 {
		return nil
	}
	in := o.Inputs[x]
	e := &WindowMismatchError{Input: in.Name, Changelog: in.ChangelogTopic, Size: in.Window.Size,
		Misaligned: c.win2.misaligned.Load(), Start: c.win2.misalignedStart.Load(), Checked: chk.checkedChangelog}
	if e.Misaligned > 0 {
		return e
	}
	for _, r := range chk.rows {
		if r.Stage == finding.StageChangelog && r.Kind == finding.Missing {
			e.Missing++
		}
	}
	if e.Checked >= 2 && e.Missing == e.Checked && c.win2.changelogRecords.Load() > 0 {
		return e
	}
	return nil
}

// windowSection is the windowed input's section of the result; nil
// without one.
func (c *collector) windowSection() *finding.Windows {
	x := c.o.windowed()
	if x < 0 {
		return nil
	}
	in := c.o.Inputs[x]
	w := &c.win2
	return &finding.Windows{Input: in.Name, Repartition: windowSource(in), Size: in.Window.Size, Advance: in.Window.Advance, Grace: in.Window.Grace,
		OnTime: w.onTime.Load(), LateOrUncertain: w.late.Load(), Expired: w.expired.Load(), BadTimestamp: w.badTS.Load(),
		UnknownPartitions: w.unknownP.Load(), BadChangelogKeys: w.badChangelogKeys.Load(), BadOutputKeys: w.badOutputKeys.Load(), Final: in.BufferTopic != ""}
}

// windowSource is the topic a windowed input's aggregation reads: its
// repartition topic, or without one its input topic.
func windowSource(in Input) string {
	if in.RepartitionTopic == "" {
		return in.Topic
	}
	return in.RepartitionTopic
}
