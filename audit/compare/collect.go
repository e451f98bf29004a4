package compare

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// sideCounters count one side of a pair while the reads run. The tail
// counters count, among them, the source records at or above the due
// offset (which a reconcile step's successor reads again).
type sideCounters struct {
	records, due, pending, noIdentity, decodeErrors atomic.Int64
	tailRecords, tailNoIdentity, tailDecodeErrors   atomic.Int64
}

// noTail is the tail offset of a read with no tail (sinks, ledger topics).
const noTail = math.MaxInt64

// ledgerState is what reading the ledger found.
type ledgerState struct {
	// topics are the topics the ledger names, by ledger topic index.
	topics []string
	index  map[string]int
	counts finding.LedgerCounts
}

// collector reads the compared topics into the index.
type collector struct {
	o       Options
	snap    *compareSnapshot
	w       entryWriter
	h       hasher
	stats   collect.Stats
	sources []sideCounters
	sinks   []sideCounters
	ledger  sideCounters
	decode  engine.DecodeErrors
	// stream counts a stream stage's drops and link copies (Options.Stream).
	stream streamCounters
	// from is, for a reconcile step, where each partition is read from
	// (missing: its log start); nil for a full run.
	from map[kread.TP]int64
}

// start returns where the partitions of t are read from (nil: every one
// from its log start).
func (c *collector) start(t string) map[int32]int64 {
	if c.from == nil {
		return nil
	}
	m := map[int32]int64{}
	for tp, off := range c.from {
		if tp.Topic == t {
			m[tp.Partition] = off
		}
	}
	return m
}

func newCollector(o Options, w entryWriter, h hasher) *collector {
	c := &collector{o: o, w: w, h: h, sources: make([]sideCounters, len(o.Pairs)), sinks: make([]sideCounters, len(o.Pairs))}
	if o.Stream != nil {
		c.stream.nullKey, c.stream.nullValue = make([]atomic.Int64, len(o.Pairs)), make([]atomic.Int64, len(o.Pairs))
		c.stream.filtered, c.stream.uncertain = make([]atomic.Int64, len(o.Pairs)), make([]atomic.Int64, len(o.Pairs))
	}
	return c
}

// readLedger writes the ledger's sends into the index. It runs before the
// snapshot: every offset a line acknowledges was acknowledged before the
// topic's bounds are read.
func (c *collector) readLedger() (*ledgerState, error) {
	st := &ledgerState{index: map[string]int{}}
	if c.o.Ledger == nil {
		return st, nil
	}
	var buf []byte
	skipped, err := c.o.Ledger(func(l *LedgerLine) error {
		lt, ok := st.index[l.Topic]
		if !ok {
			if len(st.topics) == maxTopics {
				return fmt.Errorf("ledger line %d: more than %d topics", l.Line, maxTopics)
			}
			lt = len(st.topics)
			st.index[l.Topic] = lt
			st.topics = append(st.topics, l.Topic)
		}
		st.counts.Lines++
		d := c.h.sum(l.Identity)
		var err error
		if l.Acked {
			st.counts.Acked++
			buf, err = c.w.claim(lt, d, l.Partition, l.Offset, kindAcked, l.Line, l.TS, l.Key, buf)
		} else {
			st.counts.Failed++
			buf, err = c.w.failed(lt, d, l.Line, l.TS, l.Key, buf)
		}
		if err != nil {
			return fmt.Errorf("indexing ledger line %d: %w", l.Line, err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("compare: reading the ledger: %w", err)
	}
	st.counts.Skipped = skipped
	return st, nil
}

// readAll reads every sink, then every source (writing the ledger's copies
// of a source the ledger names as it goes), then the ledger topics that
// are no pair's source.
func (c *collector) readAll(ctx context.Context, led *ledgerState) error {
	if c.o.Stream != nil {
		return c.readStream(ctx)
	}
	for x, p := range c.o.Pairs {
		if err := c.readSink(ctx, x, p); err != nil {
			return err
		}
	}
	done := map[string]bool{}
	for x, p := range c.o.Pairs {
		lt := -1
		if i, ok := led.index[p.Source]; ok && !done[p.Source] {
			lt, done[p.Source] = i, true
		}
		if err := c.readSource(ctx, x, p, lt); err != nil {
			return err
		}
	}
	for lt, t := range led.topics {
		if !done[t] {
			if err := c.readLedgerTopic(ctx, lt); err != nil {
				return err
			}
		}
	}
	return nil
}

// sourceSlot and sinkSlot are where the decode errors of pair x's source
// and sink are counted (engine.DecodeErrors' input index); a ledger topic
// lt's are at -1-lt.
func sourceSlot(x int) int { return 2 * x }
func sinkSlot(x int) int   { return 2*x + 1 }

// indexFn indexes one identified record with its digest through w (the
// read callback's batch), reusing buf.
type indexFn func(w entryWriter, rec *kread.Record, d digest, buf []byte) ([]byte, error)

// each reads the ranges rs from k, identifying every record, and indexes
// each identified one with the indexFn that forPartition returns for its
// partition (kread hands out the records of one partition at a time),
// calling done, when not nil, after the batch; cnt counts them, the
// records at or above the partition's tail offset also as the tail's.
func (c *collector) each(ctx context.Context, k engine.Kafka, name string, slot int, rs []kread.Range, total int64, cnt *sideCounters,
	forPartition func(p int32) (fn indexFn, done func(), tail int64)) error {
	err := collect.Read(ctx, readerWithHeader{k, c.o.Header}, collect.Spec{Name: name, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) (err error) {
		if len(recs) == 0 {
			return nil
		}
		var parts [][]byte
		var buf []byte
		var none, bad, tailRecs, tailNone, tailBad int64
		fn, done, tail := forPartition(recs[0].Partition)
		if done != nil {
			defer done()
		}
		bw, file := c.w.batch()
		defer func() {
			if ferr := file(); err == nil && ferr != nil {
				err = fmt.Errorf("indexing: %w", ferr)
			}
		}()
		for i := range recs {
			rec := &recs[i]
			var st Status
			var err error
			parts, st, err = c.o.Identify(rec, parts[:0])
			inTail := rec.Offset >= tail
			if inTail {
				tailRecs++
			}
			switch st {
			case Identified:
				if buf, err = fn(bw, rec, c.h.sum(parts), buf); err != nil {
					return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
				}
			case NoIdentity:
				none++
				if inTail {
					tailNone++
				}
			case DecodeError:
				bad++
				if inTail {
					tailBad++
				}
				c.decode.Add(slot, rec, err, nil)
			default:
				return fmt.Errorf("identifying %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
			}
		}
		cnt.records.Add(int64(len(recs)))
		cnt.noIdentity.Add(none)
		cnt.decodeErrors.Add(bad)
		cnt.tailRecords.Add(tailRecs)
		cnt.tailNoIdentity.Add(tailNone)
		cnt.tailDecodeErrors.Add(tailBad)
		return nil
	})
	if err != nil {
		return fmt.Errorf("compare: %w", err)
	}
	return nil
}

func (c *collector) readSink(ctx context.Context, x int, p Pair) error {
	rs, total := collect.Ranges(c.snap.sinks[x], c.start(p.Sink), nil)
	index := func(w entryWriter, rec *kread.Record, d digest, buf []byte) ([]byte, error) {
		return w.record(tagSink, x, d, rec.Partition, rec.Offset, rec.Timestamp, rec.Key, buf)
	}
	return c.each(ctx, c.o.Sink, "sink "+p.Sink, sinkSlot(x), rs, total, &c.sinks[x], func(int32) (indexFn, func(), int64) { return index, nil, noTail })
}

// readSource reads pair x's source; lt, when not -1, is the ledger topic
// it also is.
func (c *collector) readSource(ctx context.Context, x int, p Pair, lt int) error {
	rs, total := collect.Ranges(c.snap.sources[x], c.start(p.Source), nil)
	cnt := &c.sources[x]
	return c.each(ctx, c.o.Source, "source "+p.Source, sourceSlot(x), rs, total, cnt, func(part int32) (indexFn, func(), int64) {
		due := c.snap.dueBelow(x, part)
		var nDue, nPending int64
		return func(w entryWriter, rec *kread.Record, d digest, buf []byte) ([]byte, error) {
			tag := dueTag(rec.Offset, due, &nDue, &nPending)
			buf, err := w.record(tag, x, d, rec.Partition, rec.Offset, rec.Timestamp, rec.Key, buf)
			if err != nil || lt < 0 {
				return buf, err
			}
			return w.claim(lt, d, rec.Partition, rec.Offset, kindCopy, 0, rec.Timestamp, rec.Key, buf)
		}, func() { cnt.due.Add(nDue); cnt.pending.Add(nPending) }, due
	})
}

func (c *collector) readLedgerTopic(ctx context.Context, lt int) error {
	t := c.snap.ledger[lt]
	rs, total := collect.Ranges(t, nil, nil)
	index := func(w entryWriter, rec *kread.Record, d digest, buf []byte) ([]byte, error) {
		return w.claim(lt, d, rec.Partition, rec.Offset, kindCopy, 0, rec.Timestamp, rec.Key, buf)
	}
	return c.each(ctx, c.o.Source, "ledger topic "+t.Name, -1-lt, rs, total, &c.ledger, func(int32) (indexFn, func(), int64) { return index, nil, noTail })
}

// readerWithHeader asks every read for the header the match needs.
type readerWithHeader struct {
	k      engine.Kafka
	header string
}

func (r readerWithHeader) Read(ctx context.Context, ranges []kread.Range, o kread.ReadOptions, fn func(recs []kread.Record) error) (map[kread.TP]kread.Stats, error) {
	o.Header = r.header
	return r.k.Read(ctx, ranges, o, fn)
}

// dueTag is the tag of a source record at offset off of a partition whose
// records below due are due, counting it.
func dueTag(off, due int64, nDue, nPending *int64) byte {
	if off >= due {
		*nPending++
		return tagPending
	}
	*nDue++
	return tagDue
}
