package kread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/fetch"
)

// fetchMaxWaitMs is how long a broker may hold a fetch that has no data
// yet. kread only fetches below offsets it knows exist, so this matters only
// at the end of a partition (an open transaction holding the LSO back).
const fetchMaxWaitMs = 250

// lsoConfirmations is how many fetches in a row must find the partition's
// LSO at the next offset (with data above it) before reading stops there.
const lsoConfirmations = 3

// Range is a part of one partition to read: offsets [From, To). To should
// come from a snapshot (Offsets): the LSO, or the high watermark, in which
// case reading stops at the LSO if a transaction is open there. A To above
// what the partition holds is an error once retries run out (the log was
// truncated, or a leader lost data), never a silent early stop.
type Range struct {
	Topic     string
	Partition int32
	From, To  int64
}

// Stats counts what Read saw in one range.
type Stats struct {
	// Committed, Aborted and Control count the records of [From, Next) by
	// kind, whether or not they were handed to the callback.
	Committed, Aborted, Control int64
	// FirstTS and LastTS are the timestamps (Unix ms) of the first and last
	// committed records in offset order; meaningful only when Committed > 0.
	FirstTS, LastTS int64
	// Gaps counts offsets of the range that were skipped because the log
	// start offset had moved past them (retention, DeleteRecords); the
	// caller should report them.
	Gaps int64
	// Retries counts failed fetches of the range that were retried (leader
	// moves, brokers restarting, connection failures).
	Retries int64
	// Next is the first offset not read. It equals the range's To when the
	// range was read completely; it is smaller when reading stopped at the
	// partition's last stable offset (a transaction still open) or on error.
	Next int64
}

// ReadOptions tunes one Read.
type ReadOptions struct {
	// Aborted also hands records of aborted transactions to the callback
	// (with Kind Aborted), interleaved in offset order.
	Aborted bool
	// Progress, when set, is called after each fetch of a partition with the
	// next offset to read. It may be called concurrently for different
	// partitions.
	Progress func(tp TP, next int64)
	// Header, when not "", names a record header whose value (of its first
	// occurrence) each record carries in Record.Header.
	Header string
}

// task is the reading state of one range. It is owned by one worker at a
// time, which is what keeps callbacks of one partition sequential.
type task struct {
	rng      Range
	next     int64
	stats    Stats
	dec      decoder
	maxBytes int32
	failures int // consecutive failed attempts
	empties  int // consecutive responses without progress
	atLSO    int // consecutive responses stopping at an open transaction
}

// Read reads every range and calls fn with the records of one partition at
// a time, in offset order: committed records, plus aborted ones when
// o.Aborted, never control records. fn may run concurrently for different
// partitions, never concurrently for the same partition; the records and
// their byte slices are valid only during the call.
//
// At most Options.Concurrency fetches are in flight. Each partition is
// fetched from its current leader; leader moves, unavailable brokers and
// similar transient failures are retried with backoff and fresh metadata,
// resuming at the first offset not yet handed out, so no record is lost or
// repeated. A partition whose log start passed the next offset continues
// from the log start and counts the skipped offsets in Stats.Gaps. Reading
// a partition stops at its range's To even while producers keep writing,
// or earlier at its last stable offset if a transaction is still open
// there (Stats.Next tells).
//
// The returned map has an entry for every range, also on error; the error
// names the topic, partition and offset that failed, or is fn's error.
func (c *Client) Read(ctx context.Context, ranges []Range, o ReadOptions, fn func(recs []Record) error) (map[TP]Stats, error) {
	tasks := make([]*task, 0, len(ranges))
	seen := make(map[TP]bool, len(ranges))
	for _, r := range ranges {
		tp := TP{Topic: r.Topic, Partition: r.Partition}
		if seen[tp] {
			return nil, fmt.Errorf("reading %s[%d]: partition given twice", r.Topic, r.Partition)
		}
		seen[tp] = true
		if r.From < 0 {
			return nil, fmt.Errorf("reading %s[%d]: negative start offset %d", r.Topic, r.Partition, r.From)
		}
		t := &task{rng: r, next: r.From, maxBytes: c.o.PartitionMaxBytes}
		t.dec.topic, t.dec.partition = r.Topic, r.Partition
		tasks = append(tasks, t)
	}
	collect := func() map[TP]Stats {
		out := make(map[TP]Stats, len(tasks))
		for _, t := range tasks {
			s := t.stats
			s.Next = t.next
			out[TP{Topic: t.rng.Topic, Partition: t.rng.Partition}] = s
		}
		return out
	}

	queue := make(chan *task, len(tasks))
	var left atomic.Int64
	for _, t := range tasks {
		if t.next < t.rng.To {
			queue <- t
			left.Add(1)
		}
	}
	if left.Load() == 0 {
		return collect(), nil
	}

	parent := ctx
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	workers := min(c.o.Concurrency, int(left.Load()))
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var t *task
				select {
				case <-ctx.Done():
					return
				case t = <-queue:
				}
				done, err := c.step(ctx, t, o, fn)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					cancel()
					return
				}
				if !done {
					queue <- t // capacity len(tasks): never blocks
					continue
				}
				if left.Add(-1) == 0 {
					cancel() // all ranges read
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr == nil && left.Load() != 0 {
		// The caller's context ended before every range was read.
		firstErr = fmt.Errorf("reading: %w", parent.Err())
	}
	return collect(), firstErr
}

// advance counts records of [t.next, next) as read.
func (t *task) advance(cnt counts, next int64) {
	s := &t.stats
	if cnt.committed > 0 {
		if s.Committed == 0 {
			s.FirstTS = cnt.firstTS
		}
		s.LastTS = cnt.lastTS
	}
	s.Committed += cnt.committed
	s.Aborted += cnt.aborted
	s.Control += cnt.control
	t.next = next
}

// callbackError carries the caller's own error out of step unchanged.
type callbackError struct{ err error }

func (e *callbackError) Error() string { return e.err.Error() }
func (e *callbackError) Unwrap() error { return e.err }

// step does one fetch of t and hands its records out. It returns done when
// t needs no more fetches, an error when reading t must stop, and neither
// when t should be fetched again (after a backoff already slept here).
func (c *Client) step(ctx context.Context, t *task, o ReadOptions, fn func([]Record) error) (bool, error) {
	gen := c.generation()
	done, wait, err := c.fetchOnce(ctx, t, o, fn)
	if err == nil {
		if wait > 0 {
			if serr := sleep(ctx, wait); serr != nil {
				return false, c.readErr(t, serr)
			}
		}
		return done, nil
	}
	var cb *callbackError
	if errors.As(err, &cb) {
		return false, cb.err
	}
	if ctx.Err() != nil {
		return false, c.readErr(t, fmt.Errorf("%w (last error: %v)", ctx.Err(), err))
	}
	if !retriable(err) {
		return false, c.readErr(t, err)
	}
	t.failures++
	t.stats.Retries++
	if t.failures >= c.o.MaxRetries {
		return false, c.readErr(t, fmt.Errorf("giving up after %d attempts: %w", t.failures, err))
	}
	c.retries.Add(1)
	c.refresh(gen)
	if serr := sleep(ctx, c.backoff(t.failures)); serr != nil {
		return false, c.readErr(t, fmt.Errorf("%w (last error: %v)", serr, err))
	}
	return false, nil
}

func (c *Client) readErr(t *task, err error) error {
	return fmt.Errorf("reading %s[%d] at %d: %w", t.rng.Topic, t.rng.Partition, t.next, err)
}

// fetchOnce sends one Fetch for t and processes the answer. wait > 0 asks
// the caller to pause before the next fetch (broker throttling).
func (c *Client) fetchOnce(ctx context.Context, t *task, o ReadOptions, fn func([]Record) error) (done bool, wait time.Duration, err error) {
	req := &fetch.Request{
		ReplicaID:      -1,
		MaxWaitTime:    fetchMaxWaitMs,
		MinBytes:       1,
		MaxBytes:       c.o.FetchMaxBytes,
		IsolationLevel: readCommitted,
		SessionID:      0,
		SessionEpoch:   -1,
		Topics: []fetch.RequestTopic{{
			Topic: t.rng.Topic,
			Partitions: []fetch.RequestPartition{{
				Partition:          t.rng.Partition,
				CurrentLeaderEpoch: -1,
				FetchOffset:        t.next,
				LogStartOffset:     -1,
				PartitionMaxBytes:  t.maxBytes,
			}},
		}},
	}
	r, err := c.roundTrip(ctx, req)
	if err != nil {
		return false, 0, fmt.Errorf("fetch: %w", err)
	}
	res, ok := r.(*fetch.Response)
	if !ok {
		return false, 0, fmt.Errorf("fetch: unexpected response %T", r)
	}
	if err := codeErr(res.ErrorCode); err != nil {
		return false, 0, fmt.Errorf("fetch: %w", err)
	}
	var p *fetch.ResponsePartition
	for i := range res.Topics {
		if res.Topics[i].Topic != t.rng.Topic {
			continue
		}
		for j := range res.Topics[i].Partitions {
			if res.Topics[i].Partitions[j].Partition == t.rng.Partition {
				p = &res.Topics[i].Partitions[j]
			}
		}
	}
	if p == nil {
		return false, 0, errors.New("fetch: partition missing from the response")
	}
	switch kafka.Error(p.ErrorCode) {
	case 0:
	case kafka.OffsetOutOfRange:
		done, err := c.outOfRange(ctx, t)
		return done, 0, err
	default:
		return false, 0, fmt.Errorf("fetch: %w", codeErr(p.ErrorCode))
	}

	t.dec.header = o.Header
	recs, cnt, next, err := t.dec.decodeEmit(p.RecordSet.Records, p.AbortedTransactions, t.next, t.rng.To, o.Aborted, fn)
	if err != nil {
		// Records handed out before the error count as read: a retry
		// resumes after them.
		if next > t.next {
			t.advance(cnt, next)
			c.progress(t, o)
		}
		return false, 0, err
	}
	if next > t.next {
		if len(recs) > 0 {
			if err := fn(recs); err != nil {
				return false, 0, &callbackError{err}
			}
		}
		t.advance(cnt, next)
		t.failures, t.empties, t.atLSO = 0, 0, 0
		t.maxBytes = c.o.PartitionMaxBytes
		c.progress(t, o)
		return t.next >= t.rng.To, 0, nil
	}

	// Nothing at or after t.next came back.
	if res.ThrottleTimeMs > 0 {
		return false, time.Duration(res.ThrottleTimeMs) * time.Millisecond, nil
	}
	if p.LastStableOffset >= 0 && p.LastStableOffset <= t.next {
		if p.HighWatermark > t.next {
			// A transaction is still open at t.next: everything committed
			// has been read. Ask again (a new leader may not have the marker
			// yet), then stop here; Stats.Next < To tells the caller.
			t.atLSO++
			if t.atLSO < lsoConfirmations {
				return false, 0, nil
			}
			c.progress(t, o)
			return true, 0, nil
		}
		return false, 0, fmt.Errorf("high watermark %d is below the range end %d (leader catching up, or log truncated)", p.HighWatermark, t.rng.To)
	}
	if hasBatches(p) && t.maxBytes < c.o.FetchMaxBytes {
		// Batches came back, but none with a record at or after t.next (its
		// records were compacted away, leaving an empty batch kafka-go cannot
		// size): ask for more of the log at once.
		t.maxBytes = min(c.o.FetchMaxBytes, 2*t.maxBytes)
		return false, 0, nil
	}
	// Nothing at or after t.next below the LSO even in a full-size fetch:
	// the offsets [t.next, LSO) hold no records (compacted away). Confirm
	// once, then move on.
	t.empties++
	if t.empties < 2 {
		return false, 0, nil
	}
	t.empties = 0
	t.next = min(p.LastStableOffset, t.rng.To)
	c.progress(t, o)
	return t.next >= t.rng.To, 0, nil
}

func hasBatches(p *fetch.ResponsePartition) bool {
	rs := p.RecordSet.Records
	if rs == nil {
		return false
	}
	if s, ok := rs.(*protocol.RecordStream); ok {
		return len(s.Records) > 0
	}
	return true
}

func (c *Client) progress(t *task, o ReadOptions) {
	if o.Progress != nil {
		o.Progress(TP{Topic: t.rng.Topic, Partition: t.rng.Partition}, t.next)
	}
}

// outOfRange handles OFFSET_OUT_OF_RANGE: when the log start moved past
// t.next (retention, DeleteRecords) reading continues at the log start and
// the skipped offsets are counted as gaps; anything else is an error worth
// retrying (a new leader not caught up yet, or a truncated log).
func (c *Client) outOfRange(ctx context.Context, t *task) (bool, error) {
	starts, err := c.listOffsets(ctx, t.rng.Topic, []int32{t.rng.Partition}, earliest, readUncommitted)
	if err != nil {
		return false, fmt.Errorf("offset out of range; log start: %w", err)
	}
	ls := starts[t.rng.Partition]
	if ls <= t.next {
		return false, fmt.Errorf("offset out of range above the log start %d (leader catching up, or log truncated)", ls)
	}
	end := min(ls, t.rng.To)
	t.stats.Gaps += end - t.next
	t.next = end
	t.failures = 0
	return t.next >= t.rng.To, nil
}
