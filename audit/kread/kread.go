// Package kread is lossaudit's only read path for audited data: it reads
// Kafka partitions exactly as a read_committed Java consumer sees them.
//
// kafka-go's Reader and Conn hand out records of aborted transactions and
// transaction markers as ordinary messages, so kread works one level lower:
// it sends Fetch requests at isolation level 1 to the partitions' leaders,
// several partitions of a leader per request, and filters the answer with
// each partition's aborted-transaction list and each batch's producer id,
// the way CompletedFetch.java does. kafka-go stays the client (connections,
// TLS, SASL, metadata, routing); the Fetch request is written and its
// response parsed by kread itself (fetch.go, through kafka-go's
// protocol.RawExchanger), and record batches (format v2, every codec) are
// decoded by kread's own decoder (batch.go), which hands records out from
// the fetched or decompressed bytes without allocating per record. Every
// record is classified Committed, Aborted or Control; committed (and, on
// request, aborted) records reach the caller, all of them are counted.
//
// kread never produces, never joins or commits to a consumer group and never
// deletes anything.
//
// Waits are bounded and visible: the first request of a Client, and any
// request failing below the Kafka protocol, probes every bootstrap broker
// (TCP, TLS, ApiVersions, SASL, Metadata, under Options.ConnectTimeout) and
// names each one that does not answer and why, in words (a listener that
// is not Kafka, TLS or SASL against the wrong listener, rejected
// credentials). One problem is retried for at most Options.RetryTimeout,
// a likely misconfiguration twice, a permanent error (authorization,
// authentication, unknown topic, unsupported version) not at all; while
// retrying, Options.Wait hears every few seconds what is awaited.
//
// Record batches in the message formats before Kafka 0.11 (magic 0 and 1)
// are not read: a partition holding one fails with an error naming it.
package kread

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/segmentio/kafka-go/sasl"
)

// Defaults applied by New to zero Options fields.
const (
	DefaultTimeout           = 30 * time.Second
	DefaultConcurrency       = 8
	DefaultFetchMaxBytes     = 52428800
	DefaultPartitionMaxBytes = 1048576
	DefaultRetryTimeout      = time.Minute
	DefaultConnectTimeout    = 10 * time.Second
	DefaultRetryBackoff      = 100 * time.Millisecond
	DefaultMaxRetryBackoff   = 2 * time.Second
	DefaultClientID          = "lossaudit"
)

// ErrUnknownTopic is wrapped by errors about a topic the cluster does not
// have; the message names the topic.
var ErrUnknownTopic = errors.New("topic does not exist")

// Options configures a Client. Zero fields take the Default* values.
type Options struct {
	// Brokers are the bootstrap addresses, host:port.
	Brokers []string
	// TLS, when non-nil, encrypts every connection.
	TLS *tls.Config
	// SASL, when non-nil, authenticates every connection.
	SASL sasl.Mechanism
	// ClientID is sent to the brokers with every request.
	ClientID string
	// Timeout bounds each request's round trip.
	Timeout time.Duration
	// ConnectTimeout bounds opening a connection to a broker: the TCP
	// dial, the TLS handshake and the first Kafka request (ApiVersions),
	// so that a listener that accepts connections but does not speak Kafka
	// is named after this long instead of hanging (default
	// DefaultConnectTimeout, like the Java client's
	// socket.connection.setup.timeout.ms; at most Timeout).
	ConnectTimeout time.Duration
	// Concurrency is the maximum number of fetches in flight across all
	// partitions of one Read.
	Concurrency int
	// FetchMaxBytes and PartitionMaxBytes are the Fetch request's MaxBytes
	// and per-partition PartitionMaxBytes. A fetch carries at most
	// FetchMaxBytes/Concurrency/PartitionMaxBytes partitions (at least
	// one), so the fetches in flight hold roughly
	// max(FetchMaxBytes, Concurrency*PartitionMaxBytes) (a single batch
	// larger than its limit is still returned whole by the broker).
	FetchMaxBytes, PartitionMaxBytes int32
	// RetryTimeout bounds the time spent retrying one problem (a
	// partition's fetch, a metadata or offsets lookup): after failing for
	// this long in a row it is given up (default DefaultRetryTimeout, like
	// the Java consumer's default.api.timeout.ms). Problems that look like
	// a misconfiguration are tried twice, permanent errors (authorization,
	// authentication, unknown topic, unsupported version) once.
	RetryTimeout time.Duration
	// MaxRetries, when positive, also bounds the number of consecutive
	// failed attempts at one problem; zero means only RetryTimeout does.
	MaxRetries int
	// Wait, when set, is told what the client waits for while it retries,
	// in one line at most every few seconds, e.g. "waiting for
	// 127.0.0.1:9092: connection refused (retrying for 52s more)". It may
	// be called from several goroutines, never concurrently.
	Wait func(msg string)
	// RetryBackoff is the first backoff; it doubles up to MaxRetryBackoff.
	RetryBackoff, MaxRetryBackoff time.Duration
	// StableWait bounds how long GroupOffsets waits for transactions
	// committing the group's offsets to be decided (default
	// DefaultStableWait).
	StableWait time.Duration
	// MaxBatchBytes bounds what one record batch may decompress to: a
	// batch inflating past it is an error naming the topic, partition and
	// offset, not retried (default 256 MiB; tests lower it).
	MaxBatchBytes int
}

// Client reads topics with read_committed semantics. It is safe for
// concurrent use.
type Client struct {
	o  Options
	tr *kafka.Transport

	mu   sync.Mutex
	gen  uint64   // bumped by every metadata refresh
	addr net.Addr // the bootstrap addresses the transport uses

	boot      bootstrapState
	contacted atomic.Bool // a probe found a broker answering
	waitState

	retries atomic.Int64 // failed attempts that were retried, for tests
}

// New returns a Client for the cluster in o. It does not connect yet.
func New(o Options) (*Client, error) {
	if len(o.Brokers) == 0 {
		return nil, errors.New("kread: no brokers configured")
	}
	for _, b := range o.Brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			return nil, fmt.Errorf("kread: broker address %q: %w", b, err)
		}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.FetchMaxBytes <= 0 {
		o.FetchMaxBytes = DefaultFetchMaxBytes
	}
	if o.PartitionMaxBytes <= 0 {
		o.PartitionMaxBytes = DefaultPartitionMaxBytes
	}
	if o.PartitionMaxBytes > o.FetchMaxBytes {
		o.PartitionMaxBytes = o.FetchMaxBytes
	}
	if o.RetryTimeout <= 0 {
		o.RetryTimeout = DefaultRetryTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.ConnectTimeout > o.Timeout {
		o.ConnectTimeout = o.Timeout
	}
	if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.RetryBackoff <= 0 {
		o.RetryBackoff = DefaultRetryBackoff
	}
	if o.MaxRetryBackoff <= 0 {
		o.MaxRetryBackoff = DefaultMaxRetryBackoff
	}
	if o.MaxRetryBackoff < o.RetryBackoff {
		o.MaxRetryBackoff = o.RetryBackoff
	}
	if o.ClientID == "" {
		o.ClientID = DefaultClientID
	}
	if o.StableWait <= 0 {
		o.StableWait = DefaultStableWait
	}
	dialer := &net.Dialer{Timeout: o.ConnectTimeout}
	c := &Client{
		o:    o,
		addr: kafka.TCP(o.Brokers...),
		tr: &kafka.Transport{
			Dial:        dialer.DialContext,
			DialTimeout: o.ConnectTimeout,
			ClientID:    o.ClientID,
			TLS:         o.TLS,
			SASL:        o.SASL,
		},
	}
	return c, nil
}

// Close releases the connections of the client.
func (c *Client) Close() error {
	c.tr.CloseIdleConnections()
	return nil
}

// generation returns the current metadata generation; pass it to refresh
// after a failure seen with it.
func (c *Client) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// refresh forces fresh cluster metadata (leaders, brokers, topics) unless
// another caller already refreshed since gen was read. kafka-go's Transport
// caches metadata per connection pool; dropping the pools makes the next
// request bootstrap again.
func (c *Client) refresh(gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	c.gen++
	c.tr.CloseIdleConnections()
}

// roundTrip sends one request with the client's timeout. The client's
// first request probes the bootstrap brokers first (see diagnose).
func (c *Client) roundTrip(ctx context.Context, req kafka.Request) (kafka.Response, error) {
	if !c.contacted.Load() {
		if err := c.diagnose(ctx); err != nil {
			return nil, err
		}
		c.contacted.Store(true)
	}
	c.mu.Lock()
	addr := c.addr
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	return c.tr.RoundTrip(ctx, addr, req)
}

// backoff returns the wait before attempt n (n >= 1).
func (c *Client) backoff(n int) time.Duration {
	d := c.o.RetryBackoff
	for i := 1; i < n && d < c.o.MaxRetryBackoff; i++ {
		d *= 2
	}
	if d > c.o.MaxRetryBackoff {
		d = c.o.MaxRetryBackoff
	}
	return d
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retry runs fn until it succeeds or the failure is given up (see failed);
// what names the operation in wait lines. Between attempts the metadata is
// refreshed.
func (c *Client) retry(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	var a attempts
	for {
		gen := c.generation()
		err := fn(ctx)
		if err == nil {
			return nil
		}
		if err := c.failed(ctx, &a, what, gen, err); err != nil {
			return err
		}
	}
}

// codeErr turns a Kafka error code into an error (nil for 0).
func codeErr(code int16) error {
	if code == 0 {
		return nil
	}
	return kafka.Error(code)
}

// meta returns the cluster metadata as cached by the transport.
func (c *Client) meta(ctx context.Context) (*metadata.Response, error) {
	r, err := c.roundTrip(ctx, &metadata.Request{})
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	m, ok := r.(*metadata.Response)
	if !ok {
		return nil, fmt.Errorf("metadata: unexpected response %T", r)
	}
	if len(m.Brokers) == 0 {
		return nil, errors.New("metadata: cluster has no brokers (unreachable?)")
	}
	return m, nil
}

// Topics returns the names of the cluster's non-internal topics, sorted.
func (c *Client) Topics(ctx context.Context) ([]string, error) {
	var names []string
	err := c.retry(ctx, "the list of topics", func(ctx context.Context) error {
		m, err := c.meta(ctx)
		if err != nil {
			return err
		}
		names = names[:0]
		for _, t := range m.Topics {
			if !t.IsInternal && t.ErrorCode == 0 {
				names = append(names, t.Name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing topics: %w", err)
	}
	sort.Strings(names)
	return names, nil
}

// Partitions returns the partition ids of topic, sorted. The error wraps
// ErrUnknownTopic and names the topic when the cluster has no such topic.
func (c *Client) Partitions(ctx context.Context, topic string) ([]int32, error) {
	var ps []int32
	refreshed := false
	err := c.retry(ctx, fmt.Sprintf("the partitions of %s", topic), func(ctx context.Context) error {
		m, err := c.meta(ctx)
		if err != nil {
			return err
		}
		ps = ps[:0]
		for _, t := range m.Topics {
			if t.Name != topic {
				continue
			}
			if t.ErrorCode != 0 && t.ErrorCode != int16(kafka.UnknownTopicOrPartition) {
				return fmt.Errorf("metadata of topic %q: %w", topic, codeErr(t.ErrorCode))
			}
			for _, p := range t.Partitions {
				ps = append(ps, p.PartitionIndex)
			}
		}
		if len(ps) == 0 {
			// The transport's metadata may predate the topic: look once more
			// with fresh metadata before calling it missing.
			if !refreshed {
				refreshed = true
				c.refresh(c.generation())
				return fmt.Errorf("topic %q not in cached metadata", topic)
			}
			if err := c.TopicAccess(ctx, topic); err != nil {
				return &permanentError{fmt.Errorf("topic %q: %w (the principal needs DESCRIBE on it, READ to read it; docs/security.md)", topic, err)}
			}
			return &permanentError{fmt.Errorf("topic %q: %w", topic, ErrUnknownTopic)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps, nil
}
