package kread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
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
	// Retries counts the failed fetches of the partition that were retried
	// (leader moves, brokers restarting, a broker not answering); throttled
	// fetches are not counted.
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
	maxBytes int32
	failures attempts // consecutive failed attempts
	empties  int      // consecutive responses without progress
	atLSO    int      // consecutive responses stopping at an open transaction
	// first asks for the partition to come first in its next fetch: it got
	// nothing while behind others, and a broker fills a response in
	// partition order (only the first non-empty partition is sure to get a
	// batch however large), so nothing proves it has nothing to give yet.
	first bool
}

func (t *task) tp() TP { return TP{Topic: t.rng.Topic, Partition: t.rng.Partition} }

// Read reads every range and calls fn with the records of one partition at
// a time, in offset order: committed records, plus aborted ones when
// o.Aborted, never control records. fn may run concurrently for different
// partitions, never concurrently for the same partition; the records and
// their byte slices are valid only during the call.
//
// Each fetch asks one leader for several of the partitions it leads (as
// many as keeps every worker busy, within the memory bound of
// Options.FetchMaxBytes; see take); at most Options.Concurrency fetches are
// in flight, and the records of one fetch are handed out by one goroutine. Leader moves, unavailable brokers and similar transient
// failures are retried with backoff and fresh metadata, resuming at the
// first offset not yet handed out, so no record is lost or repeated. A
// partition whose log start passed the next offset continues from the log
// start and counts the skipped offsets in Stats.Gaps. Reading a partition
// stops at its range's To even while producers keep writing, or earlier at
// its last stable offset if a transaction is still open there (Stats.Next
// tells).
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
		tasks = append(tasks, &task{rng: r, next: r.From, maxBytes: c.o.PartitionMaxBytes})
	}
	collect := func() map[TP]Stats {
		out := make(map[TP]Stats, len(tasks))
		for _, t := range tasks {
			s := t.stats
			s.Next = t.next
			out[t.tp()] = s
		}
		return out
	}
	var todo []*task
	for _, t := range tasks {
		if t.next < t.rng.To {
			todo = append(todo, t)
		}
	}
	if len(todo) == 0 {
		return collect(), nil
	}

	parent := ctx
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	workers := min(c.o.Concurrency, len(todo))
	s := newSchedule(todo, workers, int(c.o.FetchMaxBytes/int32(workers)/c.o.PartitionMaxBytes))
	stop := context.AfterFunc(ctx, s.wake)
	defer stop()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for range workers {
		wg.Go(func() {
			w := &worker{}
			w.dec.inf.limit = c.o.MaxBatchBytes
			defer w.dec.inf.close()
			for {
				group, lead, err := s.take(ctx, c)
				if group == nil {
					return
				}
				if err := c.fetchGroup(ctx, w, s, group, lead, err, o, fn); err != nil {
					errOnce.Do(func() { firstErr = err })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr == nil && !s.finished() {
		// The caller's context ended before every range was read: name a
		// range left, as a failed fetch would.
		firstErr = fmt.Errorf("reading: %w", parent.Err())
		if t := s.firstPending(); t != nil {
			firstErr = c.readErr(t, parent.Err())
		}
	}
	return collect(), firstErr
}

// worker is the state of one reading goroutine: its buffers serve every
// partition it reads, one at a time.
type worker struct {
	dec decoder
	req *fetchRequest // reused after a complete exchange only
}

// schedule hands tasks to workers, grouped by leader.
type schedule struct {
	mu          sync.Mutex
	cond        *sync.Cond
	pending     []*task
	left        int // tasks not finished
	workers     int
	maxPerFetch int // partitions in one fetch, for memory

	leaders    map[TP]int32 // from the metadata of generation leadersGen
	leadersGen uint64
	haveLeads  bool
}

func newSchedule(tasks []*task, workers, maxPerFetch int) *schedule {
	s := &schedule{pending: tasks, left: len(tasks), workers: workers, maxPerFetch: max(1, maxPerFetch)}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// wake unblocks every take (the context ended).
func (s *schedule) wake() {
	s.mu.Lock()
	s.cond.Broadcast()
	s.mu.Unlock()
}

// firstPending is the first task waiting for a fetch, nil if none.
func (s *schedule) firstPending() *task {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	return s.pending[0]
}

func (s *schedule) finished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.left == 0
}

// take waits for a pending task and returns it together with the other
// pending tasks of the same leader, up to an even share of the tasks not
// finished per worker (so that every worker has a fetch to make while
// there are partitions left; with more partitions than that, each fetch
// carries several) and at most maxPerFetch. It returns nil when everything
// is read or ctx ended, and an error (with a one-task group) when the
// leader is not known.
func (s *schedule) take(ctx context.Context, c *Client) ([]*task, int32, error) {
	leaders, err := s.leaderMap(ctx, c)
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.pending) == 0 && s.left > 0 && ctx.Err() == nil {
		s.cond.Wait()
	}
	if len(s.pending) == 0 || ctx.Err() != nil {
		return nil, 0, nil
	}
	head := s.pending[0]
	s.pending = s.pending[1:]
	if err != nil {
		return []*task{head}, -1, err
	}
	lead, ok := leaders[head.tp()]
	if !ok || lead < 0 {
		return []*task{head}, -1, fmt.Errorf("no leader: %w", kafka.LeaderNotAvailable)
	}
	share := min(max(1, (s.left+s.workers-1)/s.workers), s.maxPerFetch)
	group := []*task{head}
	rest := s.pending[:0]
	for _, t := range s.pending {
		if len(group) < share && leaders[t.tp()] == lead {
			group = append(group, t)
		} else {
			rest = append(rest, t)
		}
	}
	clear(s.pending[len(rest):])
	s.pending = rest
	return group, lead, nil
}

// leaderMap returns the partitions' leaders as the client's current
// metadata names them, fetched again after every refresh.
func (s *schedule) leaderMap(ctx context.Context, c *Client) (map[TP]int32, error) {
	gen := c.generation()
	s.mu.Lock()
	if s.haveLeads && s.leadersGen == gen {
		defer s.mu.Unlock()
		return s.leaders, nil
	}
	s.mu.Unlock()
	m, err := c.meta(ctx)
	if err != nil {
		return nil, err
	}
	leaders := make(map[TP]int32)
	for _, t := range m.Topics {
		for _, p := range t.Partitions {
			leaders[TP{Topic: t.Name, Partition: p.PartitionIndex}] = p.LeaderID
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.leaders, s.leadersGen, s.haveLeads = leaders, gen, true
	return leaders, nil
}

// put hands tasks back for another fetch; first ones go to the front.
func (s *schedule) put(ts ...*task) {
	if len(ts) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range ts {
		if t.first {
			s.pending = append([]*task{t}, s.pending...)
		} else {
			s.pending = append(s.pending, t)
		}
	}
	s.cond.Broadcast()
}

// done marks a task finished.
func (s *schedule) done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.left--
	s.cond.Broadcast()
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

// fetchGroup does one fetch of the group's partitions from their leader
// lead (or handles err, the reason there is no fetch to make), hands out
// their records and gives the tasks back to s: finished, for another
// fetch, or (after a failure) for another after the backoff slept here. It
// returns an error when reading must stop.
func (c *Client) fetchGroup(ctx context.Context, w *worker, s *schedule, group []*task, lead int32, err error, o ReadOptions, fn func([]Record) error) error {
	gen := c.generation()
	var res *fetchResponse
	if err == nil {
		res, err = c.fetch(ctx, w, group, lead)
	}
	var (
		wait    time.Duration
		again   []*task
		later   []*task
		lastErr = err
	)
	for i, t := range group {
		var done bool
		var twait time.Duration
		terr := err
		if terr == nil {
			done, twait, terr = c.handle(ctx, w, t, res, i == 0, o, fn)
		}
		if terr != nil {
			var cb *callbackError
			if errors.As(terr, &cb) {
				return cb.err
			}
			what := fmt.Sprintf("%s[%d] at %d", t.rng.Topic, t.rng.Partition, t.next)
			d, ferr := c.judge(ctx, &t.failures, what, gen, terr)
			if ferr != nil {
				return c.readErr(t, ferr)
			}
			t.stats.Retries++
			lastErr = terr
			wait = max(wait, d)
			later = append(later, t)
			continue
		}
		switch {
		case done:
			s.done()
		case twait > 0:
			wait = max(wait, twait)
			later = append(later, t)
		default:
			again = append(again, t)
		}
	}
	s.put(again...)
	if len(later) > 0 {
		if serr := sleep(ctx, wait); serr != nil {
			if lastErr == nil {
				return c.readErr(later[0], serr)
			}
			return c.readErr(later[0], fmt.Errorf("%w (last error: %v)", serr, lastErr))
		}
		s.put(later...)
	}
	return nil
}

// fetch sends one Fetch for the group to its leader.
func (c *Client) fetch(ctx context.Context, w *worker, group []*task, lead int32) (*fetchResponse, error) {
	req := w.req
	if req == nil {
		req = &fetchRequest{clientID: c.o.ClientID, maxWait: fetchMaxWaitMs}
	}
	w.req = nil // not reused unless the exchange completes
	req.leader = lead
	req.parts = req.parts[:0]
	for _, t := range group {
		req.parts = append(req.parts, fetchPart{topic: t.rng.Topic, partition: t.rng.Partition, offset: t.next, maxBytes: t.maxBytes})
	}
	// The partitions' own limits bound the response (the group is at most
	// an even share of the partitions, see take); FetchMaxBytes bounds the
	// whole as fetch.max.bytes does for the Java consumer. (kfake leaves out
	// the aborted transactions of the partition it was filling when the
	// response's limit is reached; Kafka does not.)
	req.maxBytes = c.o.FetchMaxBytes
	r, err := c.roundTrip(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("fetch: %w", err)
	}
	if r != req {
		return nil, fmt.Errorf("fetch: unexpected response %T", r)
	}
	w.req = req
	if err := codeErr(req.resp.errorCode); err != nil {
		return nil, fmt.Errorf("fetch: %w%s", err, readHint(err))
	}
	return &req.resp, nil
}

// readHint names the permission a Fetch refused with
// TOPIC_AUTHORIZATION_FAILED needs (the topic was described, so DESCRIBE
// is there); "" for any other error.
func readHint(err error) string {
	if errors.Is(err, kafka.TopicAuthorizationFailed) {
		return " (the principal needs READ on the topic; docs/security.md)"
	}
	return ""
}

func (c *Client) readErr(t *task, err error) error {
	return fmt.Errorf("reading %s[%d] at %d: %w", t.rng.Topic, t.rng.Partition, t.next, err)
}

// handle processes t's part of a fetch response (first: t came first in
// the request). wait > 0 asks for a pause before t's next fetch (broker
// throttling).
func (c *Client) handle(ctx context.Context, w *worker, t *task, res *fetchResponse, first bool, o ReadOptions, fn func([]Record) error) (done bool, wait time.Duration, err error) {
	p := res.find(t.rng.Topic, t.rng.Partition)
	if p == nil {
		return false, 0, errors.New("fetch: partition missing from the response")
	}
	switch kafka.Error(p.errorCode) {
	case 0:
	case kafka.OffsetOutOfRange:
		done, err := c.outOfRange(ctx, t)
		return done, 0, err
	default:
		err := codeErr(p.errorCode)
		return false, 0, fmt.Errorf("fetch: %w%s", err, readHint(err))
	}

	d := &w.dec
	d.topic, d.partition, d.header = t.rng.Topic, t.rng.Partition, o.Header
	recs, cnt, next, err := d.decodeEmit(p.records, res.aborted(p), t.next, t.rng.To, o.Aborted, fn)
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
		t.failures.reset()
		t.empties, t.atLSO, t.first = 0, 0, false
		t.maxBytes = c.o.PartitionMaxBytes
		c.progress(t, o)
		return t.next >= t.rng.To, 0, nil
	}

	// Nothing at or after t.next came back.
	if res.throttleMs > 0 {
		return false, time.Duration(res.throttleMs) * time.Millisecond, nil
	}
	if p.lso >= 0 && p.lso <= t.next {
		if p.hw > t.next {
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
		return false, 0, fmt.Errorf("high watermark %d is below the range end %d (leader catching up, or log truncated)", p.hw, t.rng.To)
	}
	if !first {
		t.first = true // the response may have been full before its turn
		return false, 0, nil
	}
	if d.partial && t.maxBytes < c.o.FetchMaxBytes {
		// Only part of a batch came back (older brokers cut batches at the
		// size limit): ask for more of the log at once.
		t.maxBytes = min(c.o.FetchMaxBytes, 2*t.maxBytes)
		return false, 0, nil
	}
	// Nothing at or after t.next below the LSO, though it came first: the
	// offsets [t.next, LSO) hold no records (compacted away, batches and
	// all). Confirm once, then move on.
	t.empties++
	if t.empties < 2 {
		return false, 0, nil
	}
	t.empties = 0
	t.next = min(p.lso, t.rng.To)
	c.progress(t, o)
	return t.next >= t.rng.To, 0, nil
}

func (c *Client) progress(t *task, o ReadOptions) {
	if o.Progress != nil {
		o.Progress(t.tp(), t.next)
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
	t.failures.reset()
	return t.next >= t.rng.To, nil
}
