package compare

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// Stream makes a comparison the check of a per-record stream stage of a
// Kafka Streams application (lossaudit audit on a pipeline whose inputs
// reach the output through mapValues, peek, merge, repartition() or a
// KStream-KTable left join; docs/topology.md): every pair has the same
// sink (the output), the group is the application's, and the identity is
// the record's key and timestamp (StreamIdentify), which those operators
// keep. The inputs share one index space, so that the output's copies are
// counted once against the records of every input (merge).
type Stream struct {
	// Links are the internal topics between the inputs and the output
	// (repartition topics). The application's committed offsets on them
	// are read with the inputs'; each partition's unprocessed tail
	// [committed offset, LSO) is read before the output's high
	// watermarks, and the copies it holds are pending, not lost.
	Links []string
	// DropNullKey and DropNullValue say, per pair, which records the
	// stage drops by design (a repartition topic's filter drops null
	// keys, a KStream-KTable join null keys and null values): they are
	// counted (InputCounts.NullKey, NullValue), never expected.
	DropNullKey, DropNullValue []bool
	// Replay, per pair, replays the declared filters and re-keys of the
	// pair's path on each of its source records (nil: the path has none,
	// and the record keeps its key): the record's fate and, when it
	// passes, the key the output holds it under. When set, it also
	// decides the null drops (DropNullKey and DropNullValue are not
	// consulted for the pair).
	Replay []Replay
}

// Fate is what a stream stage's path does to a record (Replay).
type Fate uint8

// The fates of a record.
const (
	// Passes: the output holds it under the returned key.
	Passes Fate = iota
	// FilteredOut: a declared filter drops it by design; counted
	// (InputCounts.Filtered), never expected.
	FilteredOut
	// Uncertain: a predicate or re-key cannot be evaluated on it (an
	// undecodable value, a missing field, an evaluation error); counted
	// (InputCounts.Uncertain), never expected and never reported.
	Uncertain
	// DroppedNullKey and DroppedNullValue: a repartition filter or a join
	// drops it by design (InputCounts.NullKey, NullValue).
	DroppedNullKey
	DroppedNullValue
	// ReplayFailed: the replay cannot work at all (every schema source
	// down); the run stops with the error.
	ReplayFailed
)

// Replay replays a path's operators on a source record: its fate, the
// key the output holds it under when it passes, and for ReplayFailed the
// error (for Uncertain, why). It is called concurrently for different
// partitions.
type Replay func(rec *kread.Record) (key []byte, f Fate, err error)

// StreamMatch is Options.Match of a per-record stream stage.
const StreamMatch = "key+timestamp"

// StreamIdentify is the identity of a per-record stream stage: the record
// key (null distinct from empty) and the timestamp, 8 bytes big-endian.
func StreamIdentify(rec *kread.Record, parts [][]byte) ([][]byte, Status, error) {
	ts := binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(rec.Timestamp))
	return append(parts, rec.Key, ts), Identified, nil
}

// tagLink is a copy in a link's unprocessed tail (pair space; fields
// partition u32 | offset u64 of the link topic): after the sink's copies,
// before the source records, as detect.CopyEvidence requires.
const tagLink byte = 0x18

// streamSpace is the one pair space of a stream stage.
const streamSpace = 0

// checkStream validates the stream options against the pairs.
func (o Options) checkStream() error {
	s := o.Stream
	if s == nil {
		return nil
	}
	switch {
	case o.Group == "":
		return errors.New("compare: a stream stage needs the application's group")
	case o.Ledger != nil:
		return errors.New("compare: a stream stage takes no ledger")
	case len(s.DropNullKey) != len(o.Pairs) || len(s.DropNullValue) != len(o.Pairs):
		return errors.New("compare: a stream stage needs the drops of every pair")
	case s.Replay != nil && len(s.Replay) != len(o.Pairs):
		return errors.New("compare: a stream stage's replays are one per pair")
	}
	for _, p := range o.Pairs {
		if p.Sink != o.Pairs[0].Sink {
			return fmt.Errorf("compare: a stream stage has one output, not %s and %s", o.Pairs[0].Sink, p.Sink)
		}
	}
	return nil
}

// streamRecord writes a source record of input x of a stream stage: the
// fields carry x after the coordinates (detect.Record.Pair).
func (e entryWriter) streamRecord(tag byte, x int, d digest, partition int32, offset, ts int64, key []byte, buf []byte) ([]byte, error) {
	k := indexKey(spacePair, streamSpace, d)
	var f [14]byte
	binary.BigEndian.PutUint32(f[:4], uint32(partition))
	binary.BigEndian.PutUint64(f[4:12], uint64(offset))
	binary.BigEndian.PutUint16(f[12:], uint16(x))
	buf = value(buf, ts, key)
	return buf, e.add(k[:], tag, f[:], buf)
}

// streamCounters count what a stream stage's reads dropped by design and
// found in the link tails.
type streamCounters struct {
	nullKey, nullValue  []atomic.Int64
	filtered, uncertain []atomic.Int64
	linkRecords         atomic.Int64
}

// readLinkTails reads the unprocessed tail of every link partition,
// [committed offset, LSO), into the stream space as pending copies. It
// runs inside the snapshot, after the committed offsets and before the
// output's high watermarks: a tail record that the application processes
// (and purges) after this read was processed after those marks, so its
// copy is not expected in the output's snapshot, and one processed
// before it is.
func (c *collector) readLinkTails(ctx context.Context, s *compareSnapshot) error {
	for _, l := range c.o.Stream.Links {
		st, err := snapshot.Read(ctx, c.o.Source, l)
		if err != nil {
			return fmt.Errorf("compare: link %s: %w", l, err)
		}
		start := map[int32]int64{}
		for _, p := range st.Parts {
			if off, ok := s.due[kread.TP{Topic: l, Partition: p}]; ok {
				start[p] = off
			}
		}
		rs, total := collect.Ranges(st, start, nil)
		err = collect.Read(ctx, c.o.Source, collect.Spec{Name: "unprocessed tail of " + l, Ranges: rs, Total: total, Progress: c.o.Progress, Stats: &c.stats}, func(recs []kread.Record) error {
			var parts [][]byte
			var buf []byte
			for i := range recs {
				rec := &recs[i]
				parts, _, _ = StreamIdentify(rec, parts[:0])
				d := c.h.sum(parts)
				k := indexKey(spacePair, streamSpace, d)
				var f [12]byte
				binary.BigEndian.PutUint32(f[:4], uint32(rec.Partition))
				binary.BigEndian.PutUint64(f[4:], uint64(rec.Offset))
				buf = value(buf, rec.Timestamp, rec.Key)
				if err := c.w.w.Add(k[:], tagLink, f[:], buf); err != nil {
					return fmt.Errorf("indexing %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
				}
			}
			c.stream.linkRecords.Add(int64(len(recs)))
			return nil
		})
		if err != nil {
			return fmt.Errorf("compare: %w", err)
		}
	}
	return nil
}

// readStream reads a stream stage: the output once, then every input into
// the one stream space, skipping the records the stage drops by design.
func (c *collector) readStream(ctx context.Context) error {
	if err := c.readSink(ctx, streamSpace, c.o.Pairs[0]); err != nil {
		return err
	}
	for x, p := range c.o.Pairs {
		rs, total := collect.Ranges(c.snap.sources[x], nil, nil)
		cnt := &c.sources[x]
		dropKey, dropValue := c.o.Stream.DropNullKey[x], c.o.Stream.DropNullValue[x]
		var replay Replay
		if c.o.Stream.Replay != nil {
			replay = c.o.Stream.Replay[x]
		}
		err := c.each(ctx, c.o.Source, "input "+p.Source, sourceSlot(x), rs, total, cnt, func(part int32) (indexFn, func(), int64) {
			due := c.snap.dueBelow(x, part)
			var nDue, nPending, nKey, nValue, nFiltered, nUncertain int64
			var parts [][]byte
			return func(w entryWriter, rec *kread.Record, d digest, buf []byte) ([]byte, error) {
					key := rec.Key
					if replay != nil {
						k, fate, err := replay(rec)
						switch fate {
						case Passes:
							key = k
							parts, _, _ = StreamIdentify(&kread.Record{Key: key, Timestamp: rec.Timestamp}, parts[:0])
							d = c.h.sum(parts)
						case FilteredOut:
							nFiltered++
							return buf, nil
						case Uncertain:
							nUncertain++
							return buf, nil
						case DroppedNullKey:
							nKey++
							return buf, nil
						case DroppedNullValue:
							nValue++
							return buf, nil
						default:
							return buf, fmt.Errorf("replaying the path of %s[%d]@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
						}
					} else {
						switch {
						case dropKey && rec.Key == nil:
							nKey++
							return buf, nil
						case dropValue && rec.Value == nil:
							nValue++
							return buf, nil
						}
					}
					return w.streamRecord(dueTag(rec.Offset, due, &nDue, &nPending), x, d, rec.Partition, rec.Offset, rec.Timestamp, key, buf)
				}, func() {
					cnt.due.Add(nDue)
					cnt.pending.Add(nPending)
					c.stream.nullKey[x].Add(nKey)
					c.stream.nullValue[x].Add(nValue)
					c.stream.filtered[x].Add(nFiltered)
					c.stream.uncertain[x].Add(nUncertain)
				}, due
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// streamSpec is the detector's view of a stream stage.
func streamSpec(o Options) *detect.StreamSpec {
	s := &detect.StreamSpec{Output: o.Pairs[0].Sink}
	for _, p := range o.Pairs {
		s.Inputs = append(s.Inputs, detect.PairSpec{Name: p.Name, Source: p.Source, Sink: p.Sink})
	}
	return s
}
