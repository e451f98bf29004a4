package kread

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/protocol/apiversions"
	"github.com/segmentio/kafka-go/protocol/metadata"
	"github.com/segmentio/kafka-go/protocol/saslauthenticate"
	"github.com/segmentio/kafka-go/protocol/saslhandshake"
	"github.com/segmentio/kafka-go/sasl"
)

// Probing: kafka-go's Transport opens a connection with one deadline for
// the dial, the TLS handshake and ApiVersions, and reports what went wrong
// in its own terms (`metadata: EOF`, `Illegal SASL State`, a topic the
// layout does not know). Before the first request of a client, and again
// when a request fails below the Kafka protocol, kread connects to every
// bootstrap address itself, step by step under ConnectTimeout, and says in
// words which step failed and what it probably means.

// class tells how a failure is retried.
type class uint8

const (
	// transient failures may go away (a broker restarting, a leader
	// moving): retried for Options.RetryTimeout.
	transient class = iota
	// suspect failures look like a misconfiguration (a listener that is
	// not Kafka, TLS against plaintext) but could also be a broker in the
	// middle of starting or stopping: tried once more, then given up.
	suspect
	// permanent failures cannot be fixed by retrying (rejected
	// credentials, an unknown topic, a refused authorization).
	permanent
)

func (k class) String() string {
	switch k {
	case transient:
		return "transient"
	case suspect:
		return "suspect"
	}
	return "permanent"
}

// suspectAttempts is how many attempts a suspect failure gets.
const suspectAttempts = 2

// brokerProblem is what one broker address said when probed.
type brokerProblem struct {
	addr  string
	what  string // in words, without the address
	class class
}

func (p *brokerProblem) String() string {
	if strings.HasPrefix(p.what, ":") {
		return p.addr + p.what
	}
	return p.addr + " " + p.what
}

// noBrokerError is the error of a client none of whose bootstrap brokers
// answered: it names every broker and what each said.
type noBrokerError struct {
	problems []*brokerProblem
}

func (e *noBrokerError) Error() string {
	parts := make([]string, len(e.problems))
	for i, p := range e.problems {
		parts[i] = p.String()
	}
	return "no broker answered: " + strings.Join(parts, "; ")
}

// class is the mildest class of the brokers' problems: retrying is worth it
// as long as one broker may still come up.
func (e *noBrokerError) class() class {
	k := permanent
	for _, p := range e.problems {
		k = min(k, p.class)
	}
	return k
}

// probe connects to addr the way kafka-go's Transport does (TCP, TLS,
// ApiVersions, SASL) and sends a Metadata request without topics, each
// step bounded by ConnectTimeout as a whole. It returns nil when the broker
// answered everything.
func (c *Client) probe(ctx context.Context, addr string) *brokerProblem {
	return c.probeWith(ctx, addr, []string{}, nil)
}

// probeWith is probe asking the metadata of topics (none when empty), and
// handing the answer to check when it is not nil.
func (c *Client) probeWith(ctx context.Context, addr string, topics []string, check func(*metadata.Response)) *brokerProblem {
	to := c.o.ConnectTimeout
	pctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	nc, err := c.dial(pctx, "tcp", addr)
	if err != nil {
		return dialProblem(addr, err, to)
	}
	defer nc.Close()
	deadline, _ := pctx.Deadline()
	_ = nc.SetDeadline(deadline)
	// Closing the connection when the caller's context ends unblocks
	// the reads below (the deadline bounds them otherwise).
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()

	if c.o.TLS != nil {
		cfg := c.o.TLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(pctx); err != nil {
			return tlsProblem(addr, err, to)
		}
		nc = tc
	}

	pc := protocol.NewConn(nc, c.o.ClientID)
	r, err := pc.RoundTrip(new(apiversions.Request))
	if err != nil {
		return c.firstRequestProblem(ctx, addr, err, to)
	}
	av, ok := r.(*apiversions.Response)
	if !ok {
		return &brokerProblem{addr, fmt.Sprintf("answered ApiVersions with %T: is it a Kafka listener?", r), suspect}
	}
	if av.ErrorCode != 0 {
		return &brokerProblem{addr, fmt.Sprintf("refused the API versions request: %s", kafkaWords(kafka.Error(av.ErrorCode))), permanent}
	}
	versions := make(map[protocol.ApiKey]int16, len(av.ApiKeys))
	for _, k := range av.ApiKeys {
		key := protocol.ApiKey(k.ApiKey)
		versions[key] = key.SelectVersion(k.MinVersion, k.MaxVersion)
	}
	pc.SetVersions(versions)

	if c.o.SASL != nil {
		if p := c.saslProbe(pctx, pc, addr, to); p != nil {
			return p
		}
	}
	// Never auto-create a topic asked about (Metadata v4 and later).
	r, err = pc.RoundTrip(&metadata.Request{TopicNames: topics, AllowAutoTopicCreation: false})
	if err != nil {
		switch {
		case isTimeout(err):
			return &brokerProblem{addr, fmt.Sprintf("did not answer a metadata request within %s", to), transient}
		case isClosed(err) && c.o.SASL == nil:
			return &brokerProblem{addr, "closed the connection on the first request after ApiVersions: is it a SASL listener? (set kafka.sasl.mechanism)", suspect}
		}
		return &brokerProblem{addr, ": metadata request failed: " + innermost(err), transient}
	}
	m, ok := r.(*metadata.Response)
	if !ok {
		return &brokerProblem{addr, fmt.Sprintf("answered a metadata request with %T", r), suspect}
	}
	if check != nil {
		check(m)
	}
	return nil
}

// TopicAccess asks a bootstrap broker directly (not the transport's
// metadata cache, which lists only the topics the principal may describe)
// about a topic missing from the metadata. It returns a Kafka error when
// the broker names one for the topic, typically TopicAuthorizationFailed
// when the principal lacks DESCRIBE on it (Kafka then does not say whether
// the topic exists), and nil otherwise.
func (c *Client) TopicAccess(ctx context.Context, topic string) error {
	var code int16
	for _, addr := range c.o.Brokers {
		p := c.probeWith(ctx, addr, []string{topic}, func(m *metadata.Response) {
			for _, t := range m.Topics {
				if t.Name == topic {
					code = t.ErrorCode
				}
			}
		})
		if p == nil {
			break
		}
	}
	if code == 0 || code == int16(kafka.UnknownTopicOrPartition) {
		return nil
	}
	return kafka.Error(code)
}

// dial opens a TCP connection the way the transport does.
func (c *Client) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.o.ConnectTimeout}
	return d.DialContext(ctx, network, addr)
}

func dialProblem(addr string, err error, to time.Duration) *brokerProblem {
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return &brokerProblem{addr, ": connection refused", transient}
	case errors.As(err, &dns):
		return &brokerProblem{addr, ": cannot resolve the host name: " + dns.Err, transient}
	case isTimeout(err):
		return &brokerProblem{addr, fmt.Sprintf("did not accept a connection within %s", to), transient}
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return &brokerProblem{addr, ": host unreachable", transient}
	}
	return &brokerProblem{addr, ": cannot connect: " + innermost(err), transient}
}

func tlsProblem(addr string, err error, to time.Duration) *brokerProblem {
	var (
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		header    tls.RecordHeaderError
		verify    *tls.CertificateVerificationError
	)
	switch {
	case isTimeout(err):
		return &brokerProblem{addr, fmt.Sprintf("accepted a connection but did not answer the TLS handshake within %s: is it a TLS listener? (kafka.tls.enabled)", to), suspect}
	case isClosed(err):
		return &brokerProblem{addr, "closed the connection during the TLS handshake: is it a TLS listener? (kafka.tls.enabled)", suspect}
	case errors.As(err, &header):
		return &brokerProblem{addr, "answered the TLS handshake with something that is not TLS: is it a TLS listener? (kafka.tls.enabled)", suspect}
	case errors.As(err, &unknownCA):
		return &brokerProblem{addr, "presented a TLS certificate signed by an authority that is not trusted (kafka.tls.ca_file)", permanent}
	case errors.As(err, &hostname):
		return &brokerProblem{addr, "presented a TLS certificate for another host: " + hostname.Error(), permanent}
	case errors.As(err, &invalid):
		return &brokerProblem{addr, "presented an invalid TLS certificate: " + invalid.Error(), permanent}
	case errors.As(err, &verify):
		return &brokerProblem{addr, "presented a TLS certificate that does not verify: " + innermost(verify.Err), permanent}
	}
	return &brokerProblem{addr, ": TLS handshake failed: " + innermost(err), suspect}
}

// firstRequestProblem explains a failed ApiVersions request.
func (c *Client) firstRequestProblem(ctx context.Context, addr string, err error, to time.Duration) *brokerProblem {
	switch {
	case isTimeout(err):
		return &brokerProblem{addr, fmt.Sprintf("accepted a connection but did not answer a Kafka request within %s: is it a Kafka listener?", to), suspect}
	case isClosed(err) || strings.Contains(err.Error(), "expecting TLS"):
		if c.o.TLS == nil && speaksTLS(ctx, addr, to) {
			return &brokerProblem{addr, "is a TLS listener: set kafka.tls.enabled", suspect}
		}
		return &brokerProblem{addr, "accepted a connection but closed it on a Kafka request: is it a Kafka listener?", suspect}
	}
	return &brokerProblem{addr, "did not answer a Kafka request (" + innermost(err) + "): is it a Kafka listener?", suspect}
}

// speaksTLS reports whether addr completes (or at least answers) a TLS
// handshake; certificates are not checked, nothing is sent after it.
func speaksTLS(ctx context.Context, addr string, to time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	d := tls.Dialer{Config: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // only asks whether it is TLS
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		nc.Close()
		return true
	}
	// A server that wants a client certificate still answered in TLS.
	return strings.Contains(err.Error(), "remote error: tls:")
}

// saslProbe authenticates on pc like kafka-go's Transport does.
func (c *Client) saslProbe(ctx context.Context, pc *protocol.Conn, addr string, to time.Duration) *brokerProblem {
	mech := c.o.SASL.Name()
	r, err := pc.RoundTrip(&saslhandshake.Request{Mechanism: mech})
	if err != nil {
		if isTimeout(err) {
			return &brokerProblem{addr, fmt.Sprintf("did not answer the SASL handshake within %s", to), transient}
		}
		return &brokerProblem{addr, "closed the connection on the SASL handshake: " + innermost(err), suspect}
	}
	hs, ok := r.(*saslhandshake.Response)
	if !ok {
		return &brokerProblem{addr, fmt.Sprintf("answered the SASL handshake with %T", r), suspect}
	}
	switch kafka.Error(hs.ErrorCode) {
	case 0:
	case kafka.IllegalSASLState:
		return &brokerProblem{addr, "refused the SASL handshake: is it a SASL listener? (kafka.sasl.mechanism)", permanent}
	case kafka.UnsupportedSASLMechanism:
		offered := append([]string(nil), hs.Mechanisms...)
		sort.Strings(offered)
		return &brokerProblem{addr, fmt.Sprintf("does not accept SASL mechanism %s (it accepts %s) (kafka.sasl.mechanism)", mech, orNone(offered)), permanent}
	default:
		return &brokerProblem{addr, "refused the SASL handshake: " + kafkaWords(kafka.Error(hs.ErrorCode)), permanent}
	}
	host, port, _ := net.SplitHostPort(addr)
	var portN int
	fmt.Sscanf(port, "%d", &portN)
	sctx := sasl.WithMetadata(ctx, &sasl.Metadata{Host: host, Port: portN})
	sess, state, err := c.o.SASL.Start(sctx)
	if err != nil {
		return &brokerProblem{addr, "cannot start SASL " + mech + ": " + innermost(err), permanent}
	}
	for done := false; !done; {
		r, err := pc.RoundTrip(&saslauthenticate.Request{AuthBytes: state})
		if err != nil {
			if isTimeout(err) {
				return &brokerProblem{addr, fmt.Sprintf("did not answer SASL authentication within %s", to), transient}
			}
			return &brokerProblem{addr, "closed the connection during SASL authentication: are the credentials right (kafka.sasl.username, kafka.sasl.password), and is it a SASL listener?", permanent}
		}
		ar, ok := r.(*saslauthenticate.Response)
		if !ok {
			return &brokerProblem{addr, fmt.Sprintf("answered SASL authentication with %T", r), suspect}
		}
		if ar.ErrorCode != 0 {
			if kafka.Error(ar.ErrorCode) == kafka.SASLAuthenticationFailed {
				return &brokerProblem{addr, "rejected the SASL credentials (kafka.sasl.username, kafka.sasl.password)", permanent}
			}
			return &brokerProblem{addr, "refused SASL authentication: " + kafkaWords(kafka.Error(ar.ErrorCode)), permanent}
		}
		if done, state, err = sess.Next(sctx, ar.AuthBytes); err != nil {
			return &brokerProblem{addr, "SASL " + mech + " exchange failed: " + innermost(err), permanent}
		}
	}
	return nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// kafkaWords is a Kafka error's title, without kafka-go's long description.
func kafkaWords(e kafka.Error) string {
	if t := e.Title(); t != "" {
		return t
	}
	return e.Error()
}

// isTimeout reports a deadline passing (the connection's or a context's).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout())
}

// isClosed reports the peer closing or resetting the connection.
func isClosed(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// innermost is the message of the innermost wrapped error, which for
// network errors is the useful part ("connection reset by peer").
func innermost(err error) string {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err.Error()
		}
		err = u
	}
}

// bootstrapState is the outcome of the last probe of every bootstrap
// address.
type bootstrapState struct {
	mu       sync.Mutex
	at       time.Time // when the last probe finished; zero: never probed
	problems []*brokerProblem
	good     []string
}

// probeTTL is how long a probe's outcome is reused by failures that ask for
// a diagnosis: many partitions fail at once when a broker goes away.
const probeTTL = time.Second

// diagnose probes every bootstrap address concurrently (or reuses a probe
// younger than probeTTL). It returns a *noBrokerError when none answered,
// otherwise nil, and points the transport at the addresses that answered.
func (c *Client) diagnose(ctx context.Context) error {
	b := &c.boot
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.at.IsZero() || time.Since(b.at) >= probeTTL {
		problems := make([]*brokerProblem, len(c.o.Brokers))
		var wg sync.WaitGroup
		for i, addr := range c.o.Brokers {
			wg.Go(func() { problems[i] = c.probe(ctx, addr) })
		}
		wg.Wait()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.at = time.Now()
		b.problems, b.good = b.problems[:0], b.good[:0]
		for i, p := range problems {
			if p == nil {
				b.good = append(b.good, c.o.Brokers[i])
			} else {
				b.problems = append(b.problems, p)
			}
		}
		if len(b.good) > 0 {
			c.useBootstrap(b.good)
		}
	}
	if len(b.good) == 0 {
		return &noBrokerError{problems: append([]*brokerProblem(nil), b.problems...)}
	}
	return nil
}

// useBootstrap points the transport at addrs (the bootstrap addresses that
// answered), so that it does not spend a connect timeout on a dead one.
func (c *Client) useBootstrap(addrs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.Join(addrs, ",")
	if key == c.addr.String() {
		return
	}
	c.addr = kafka.TCP(addrs...)
	c.gen++
	c.tr.CloseIdleConnections()
}
