package kread

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// Bounded, visible waits: every operation that can fail retries one problem
// at a time (a partition's fetch, a metadata lookup) through an attempts
// value. Transient failures are retried with backoff for at most
// Options.RetryTimeout in a row, suspect ones (a misconfiguration, unless
// it goes away at once) suspectAttempts times, permanent ones never; while
// retrying, Options.Wait hears one line every waitEvery saying what is
// awaited.

const (
	// waitEvery is the least time between two lines to Options.Wait.
	waitEvery = 5 * time.Second
	// waitQuiet is how long a transient problem may last before it is
	// worth a line (leader moves usually resolve faster).
	waitQuiet = time.Second
)

// attempts tracks the consecutive failed attempts at one problem.
type attempts struct {
	n     int
	since time.Time // first failure of the current streak
}

// reset forgets the failures after a success.
func (a *attempts) reset() { a.n = 0 }

// failed handles the failure err of an attempt at what (started at
// metadata generation gen). It returns nil once it has waited the backoff
// and another attempt should be made, or the error to give up with.
func (c *Client) failed(ctx context.Context, a *attempts, what string, gen uint64, err error) error {
	d, err := c.judge(ctx, a, what, gen, err)
	if err != nil {
		return err
	}
	if serr := sleep(ctx, d); serr != nil {
		return fmt.Errorf("%w (last error: %v)", serr, err)
	}
	return nil
}

// judge is failed without the sleep: it returns the backoff to wait
// before the next attempt, or the error to give up with.
func (c *Client) judge(ctx context.Context, a *attempts, what string, gen uint64, err error) (time.Duration, error) {
	if ctx.Err() != nil {
		return 0, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
	}
	var nb *noBrokerError
	if errors.As(err, &nb) {
		err = nb // what kafka-go's wrapping added says nothing more
	}
	k := classify(err)
	if k != permanent && belowKafka(err) {
		// Say which brokers are not answering, and why, rather than what
		// kafka-go made of it.
		if derr := c.diagnose(ctx); derr != nil {
			if ctx.Err() != nil {
				return 0, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
			}
			err, k = derr, classify(derr)
		}
	}
	if k == permanent {
		return 0, err
	}
	a.n++
	now := time.Now()
	if a.n == 1 {
		a.since = now
	}
	elapsed := now.Sub(a.since)
	switch {
	case k == suspect && a.n >= suspectAttempts:
		return 0, err
	case c.o.MaxRetries > 0 && a.n >= c.o.MaxRetries:
		return 0, fmt.Errorf("giving up after %d attempts: %w", a.n, err)
	case elapsed >= c.o.RetryTimeout:
		return 0, fmt.Errorf("gave up after retrying for %s: %w", elapsed.Round(time.Second), err)
	}
	c.retries.Add(1)
	c.refresh(gen)
	left := c.o.RetryTimeout - elapsed
	if k == suspect || elapsed >= waitQuiet {
		c.waitLine(what, err, left, k)
	}
	d := min(c.backoff(a.n), left)
	if k == suspect {
		// The next attempt must probe again, not reuse this probe.
		d = max(d, probeTTL)
	}
	return d, nil
}

// waitLine tells Options.Wait what is awaited, at most once every waitEvery
// for the whole client (many partitions fail together when a broker goes).
func (c *Client) waitLine(what string, err error, left time.Duration, k class) {
	if c.o.Wait == nil {
		return
	}
	c.waitMu.Lock()
	defer c.waitMu.Unlock() // also keeps calls of Wait apart
	now := time.Now()
	if !c.lastWait.IsZero() && now.Sub(c.lastWait) < waitEvery {
		return
	}
	c.lastWait = now
	var nb *noBrokerError
	if errors.As(err, &nb) {
		what = "a broker"
		if len(nb.problems) == 1 {
			err = errors.New(nb.problems[0].String())
			what = ""
		}
	}
	more := fmt.Sprintf("retrying for %s more", left.Round(time.Second))
	if k == suspect {
		more = "trying once more"
	}
	if what == "" {
		c.o.Wait(fmt.Sprintf("waiting for %v (%s)", err, more))
		return
	}
	c.o.Wait(fmt.Sprintf("waiting for %s: %v (%s)", what, err, more))
}

// waitState is the Client's part of the wait lines.
type waitState struct {
	waitMu   sync.Mutex
	lastWait time.Time
}

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// suspectError marks an error that retrying once may fix.
type suspectError struct{ err error }

func (e *suspectError) Error() string { return e.err.Error() }
func (e *suspectError) Unwrap() error { return e.err }

// classify tells how err is retried. Kafka errors are transient when
// Kafka calls them retriable (kafka-go's Temporary) or when they come from
// a broker or coordinator being away; an unknown topic or partition is
// suspect (the topic was deleted, or metadata is catching up); every other
// Kafka error (authorization, authentication, unsupported version, invalid
// request...) is permanent. Errors below the protocol (connections) are
// transient unless a probe of the brokers says otherwise.
func classify(err error) class {
	var (
		p  *permanentError
		s  *suspectError
		nb *noBrokerError
		ke kafka.Error
	)
	switch {
	case errors.As(err, &p), errors.Is(err, context.Canceled), errors.Is(err, ErrUnknownTopic):
		return permanent
	case errors.As(err, &s):
		return suspect
	case errors.As(err, &nb):
		return nb.class()
	case errors.As(err, &ke):
		return kafkaClass(ke)
	case errors.Is(err, protocol.ErrNoTopic), errors.Is(err, protocol.ErrNoPartition):
		return suspect
	}
	return transient
}

func kafkaClass(e kafka.Error) class {
	switch e {
	case kafka.UnknownTopicOrPartition:
		return suspect
	case kafka.BrokerNotAvailable, kafka.ReplicaNotAvailable, kafka.Unknown,
		kafka.GroupCoordinatorNotAvailable, kafka.GroupLoadInProgress, kafka.NotCoordinatorForGroup,
		kafka.KafkaStorageError, kafka.FetchSessionIDNotFound, kafka.InvalidFetchSessionEpoch,
		kafka.UnstableOffsetCommit:
		return transient
	}
	if e.Temporary() {
		return transient
	}
	return permanent
}

// belowKafka reports an error that did not come from a broker's answer:
// a connection problem, or kafka-go having no layout for a request.
func belowKafka(err error) bool {
	var ke kafka.Error
	var cb *callbackError
	return !errors.As(err, &ke) && !errors.As(err, &cb) && !errors.Is(err, ErrUnknownTopic)
}
