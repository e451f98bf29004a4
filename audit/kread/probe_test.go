package kread

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	fplain "github.com/twmb/franz-go/pkg/sasl/plain"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want class
	}{
		{"connection refused", fmt.Errorf("fetch: %w", syscall.ECONNREFUSED), transient},
		{"timeout", fmt.Errorf("fetch: %w", context.DeadlineExceeded), transient},
		{"not leader", fmt.Errorf("fetch: %w", kafka.NotLeaderForPartition), transient},
		{"leader not available", kafka.LeaderNotAvailable, transient},
		{"broker not available", kafka.BrokerNotAvailable, transient},
		{"coordinator loading", kafka.GroupLoadInProgress, transient},
		{"request timed out", kafka.RequestTimedOut, transient},
		{"unknown topic on fetch", fmt.Errorf("fetch: %w", kafka.UnknownTopicOrPartition), suspect},
		{"kafka-go has no such topic in its layout", protocol.NewErrNoTopic("__consumer_offsets"), suspect},
		{"topic authorization", fmt.Errorf("fetch: %w", kafka.TopicAuthorizationFailed), permanent},
		{"group authorization", kafka.GroupAuthorizationFailed, permanent},
		{"cluster authorization", kafka.ClusterAuthorizationFailed, permanent},
		{"SASL authentication failed", kafka.SASLAuthenticationFailed, permanent},
		{"unsupported SASL mechanism", kafka.UnsupportedSASLMechanism, permanent},
		{"illegal SASL state", kafka.IllegalSASLState, permanent},
		{"unsupported version", kafka.UnsupportedVersion, permanent},
		{"invalid request", kafka.InvalidRequest, permanent},
		{"unknown topic (ours)", fmt.Errorf("topic %q: %w", "x", ErrUnknownTopic), permanent},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), permanent},
		{"marked permanent", &permanentError{errors.New("x")}, permanent},
		{"no broker, one still possible", &noBrokerError{[]*brokerProblem{{"a:1", "x", suspect}, {"b:1", "y", transient}}}, transient},
		{"no broker, all misconfigured", &noBrokerError{[]*brokerProblem{{"a:1", "x", suspect}, {"b:1", "y", permanent}}}, suspect},
		{"no broker, all rejected", &noBrokerError{[]*brokerProblem{{"a:1", "x", permanent}}}, permanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.err); got != tt.want {
				t.Errorf("classify(%v) = %s, want %s", tt.err, got, tt.want)
			}
		})
	}
}

// Fake listeners: what a user can point lossaudit at by mistake.

// listen starts a loopback listener handling each connection with serve,
// closed at the end of the test.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				stop := context.AfterFunc(contextOf(done), func() { c.Close() })
				defer stop()
				serve(c)
			})
		}
	})
	return ln.Addr().String()
}

func contextOf(done <-chan struct{}) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-done; cancel() }()
	return ctx
}

// silent accepts and says nothing, like a registry port or a proxy would
// to a Kafka request.
func silent(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// hangUp closes the connection as soon as something arrives.
func hangUp(c net.Conn) {
	var b [1]byte
	_, _ = c.Read(b[:])
}

// refusedAddr is a loopback address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// lines collects what a client says while it waits.
type lines struct {
	mu sync.Mutex
	l  []string
}

func (l *lines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.l = append(l.l, s)
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.l...)
}

// Generous bounds: the point is minutes versus seconds, not exact timing.
const callBound = 45 * time.Second

func TestBrokerProblemsNamed(t *testing.T) {
	serverTLS, clientTLS := selfSigned(t)
	plainCluster := func(t *testing.T) []string {
		return newCluster(t, 1, 1, "t").ListenAddrs()
	}
	tlsCluster := func(t *testing.T) []string {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.TLS(serverTLS))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.ListenAddrs()
	}
	saslCluster := func(t *testing.T) []string {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"),
			kfake.EnableSASL(), kfake.Superuser("PLAIN", "alice", "s3cret"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c.ListenAddrs()
	}
	var silentConns atomic.Int64
	tests := []struct {
		name    string
		brokers func(t *testing.T) []string
		mod     func(o *Options)
		want    []string // substrings of the error, {addr} replaced
		// retried: whether the client may try again (suspect: once more);
		// permanent problems are not retried at all.
		retried bool
		conns   *atomic.Int64 // connections the listener accepted; want 2
	}{
		{
			// Tried twice (a broker may be starting), each time freshly.
			name: "a listener that accepts and says nothing",
			brokers: func(t *testing.T) []string {
				return []string{listen(t, func(c net.Conn) { silentConns.Add(1); silent(c) })}
			},
			conns:   &silentConns,
			want:    []string{"no broker answered: {addr} accepted a connection but did not answer a Kafka request within 1s: is it a Kafka listener?"},
			retried: true,
		},
		{
			name:    "a listener that accepts and hangs up",
			brokers: func(t *testing.T) []string { return []string{listen(t, hangUp)} },
			want:    []string{"{addr} accepted a connection but closed it on a Kafka request: is it a Kafka listener?"},
			retried: true,
		},
		{
			// Kafka hangs up on a TLS hello (its size field is too large).
			name:    "TLS against a plaintext listener that hangs up",
			brokers: func(t *testing.T) []string { return []string{listen(t, hangUp)} },
			mod:     func(o *Options) { o.TLS = clientTLS.Clone() },
			want:    []string{"{addr} closed the connection during the TLS handshake: is it a TLS listener? (kafka.tls.enabled)"},
			retried: true,
		},
		{
			// kfake waits for the rest of what it takes for a request.
			name:    "TLS against a plaintext listener that waits",
			brokers: plainCluster,
			mod:     func(o *Options) { o.TLS = clientTLS.Clone() },
			want:    []string{"{addr} accepted a connection but did not answer the TLS handshake within 1s: is it a TLS listener? (kafka.tls.enabled)"},
			retried: true,
		},
		{
			name:    "TLS against a silent listener",
			brokers: func(t *testing.T) []string { return []string{listen(t, silent)} },
			mod:     func(o *Options) { o.TLS = clientTLS.Clone() },
			want:    []string{"{addr} accepted a connection but did not answer the TLS handshake within 1s"},
			retried: true,
		},
		{
			name:    "plaintext against a TLS listener",
			brokers: tlsCluster,
			want:    []string{"{addr} is a TLS listener: set kafka.tls.enabled"},
			retried: true,
		},
		{
			name:    "TLS with an untrusted certificate",
			brokers: tlsCluster,
			mod: func(o *Options) {
				_, other := selfSigned(t)
				o.TLS = other
			},
			want: []string{"{addr} presented a TLS certificate signed by an authority that is not trusted (kafka.tls.ca_file)"},
		},
		{
			// kfake hangs up where Kafka answers (see TestSASLAnswersNamed).
			name:    "SASL against a listener without SASL (kfake)",
			brokers: plainCluster,
			mod:     func(o *Options) { o.SASL = plain.Mechanism{Username: "alice", Password: "s3cret"} },
			want:    []string{"{addr} closed the connection during SASL authentication: are the credentials right (kafka.sasl.username, kafka.sasl.password), and is it a SASL listener?"},
		},
		{
			name:    "no SASL against a SASL listener",
			brokers: saslCluster,
			want:    []string{"{addr} closed the connection on the first request after ApiVersions: is it a SASL listener? (set kafka.sasl.mechanism)"},
			retried: true,
		},
		{
			name:    "a wrong password (kfake)",
			brokers: saslCluster,
			mod:     func(o *Options) { o.SASL = plain.Mechanism{Username: "alice", Password: "b4dpass"} },
			want:    []string{"{addr} closed the connection during SASL authentication: are the credentials right"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			brokers := tc.brokers(t)
			var said lines
			o := Options{Brokers: brokers, Timeout: 5 * time.Second, ConnectTimeout: time.Second,
				RetryTimeout: 20 * time.Second, RetryBackoff: 10 * time.Millisecond, Wait: said.add}
			if tc.mod != nil {
				tc.mod(&o)
			}
			r, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			start := time.Now()
			_, err = r.Partitions(ctxT(t), "t")
			took := time.Since(start)
			if err == nil {
				t.Fatal("no error")
			}
			t.Logf("after %s: %v; said %q", took.Round(time.Millisecond), err, said.all())
			for _, w := range tc.want {
				w = strings.ReplaceAll(w, "{addr}", brokers[0])
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "b4dpass") {
				t.Errorf("the error shows a password: %v", err)
			}
			if took > callBound {
				t.Errorf("took %s to give up", took)
			}
			switch n := r.retries.Load(); {
			case !tc.retried && n != 0:
				t.Errorf("a permanent problem was retried %d times", n)
			case tc.retried && n > suspectAttempts-1:
				t.Errorf("a misconfiguration was retried %d times", n)
			}
			if tc.retried && len(said.all()) == 0 {
				t.Errorf("nothing was said while retrying")
			}
			if tc.conns != nil && tc.conns.Load() != suspectAttempts {
				t.Errorf("the listener saw %d connections, want %d probes", tc.conns.Load(), suspectAttempts)
			}
		})
	}
}

func TestAllBrokersDownNamesEach(t *testing.T) {
	a, b := refusedAddr(t), refusedAddr(t)
	var said lines
	r, err := New(Options{Brokers: []string{a, b}, Timeout: 2 * time.Second, RetryTimeout: 3 * time.Second,
		RetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond, Wait: said.add})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	start := time.Now()
	_, err = r.Offsets(ctxT(t), "orders")
	took := time.Since(start)
	if err == nil {
		t.Fatal("no error")
	}
	t.Logf("after %s: %v; said %q", took.Round(time.Millisecond), err, said.all())
	for _, w := range []string{"gave up after retrying for 3s", "no broker answered: ", a + ": connection refused", b + ": connection refused"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "orders") && !strings.HasPrefix(err.Error(), "the partitions of orders") {
		// The topic may name the operation, never be blamed.
		if strings.Contains(err.Error(), "topic") {
			t.Errorf("error blames a topic: %v", err)
		}
	}
	if took > callBound {
		t.Errorf("took %s for a 3s retry timeout", took)
	}
	got := said.all()
	if len(got) == 0 || !strings.HasPrefix(got[0], "waiting for a broker: no broker answered: ") || !strings.Contains(got[0], "s more)") {
		t.Errorf("wait lines %q", got)
	}
}

// One bootstrap address that does not speak Kafka must not hold up a
// cluster whose other brokers answer.
func TestBadBootstrapAddressIsSkipped(t *testing.T) {
	c := newCluster(t, 1, 1, "t")
	r, err := New(Options{Brokers: append([]string{listen(t, silent)}, c.ListenAddrs()...), ConnectTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 5 { // kafka-go picks a bootstrap address at random
		r.refresh(r.generation())
		ps, err := r.Partitions(ctxT(t), "t")
		if err != nil || len(ps) != 1 {
			t.Fatalf("partitions %v, %v", ps, err)
		}
	}
}

func TestPermanentFetchErrorNotRetried(t *testing.T) {
	const topic = "secret"
	c := newCluster(t, 1, 1, topic)
	p := newProducer(t, c, nil, topic, "")
	p.send(0, "a")
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.TopicAuthorizationFailed, Count: -1})
	r := newReader(t, c)
	stats, err := r.Read(ctxT(t), []Range{{Topic: topic, Partition: 0, From: 0, To: 1}}, ReadOptions{}, func([]Record) error { return nil })
	if !errors.Is(err, kafka.TopicAuthorizationFailed) || !strings.Contains(err.Error(), "secret[0] at 0") {
		t.Fatalf("err = %v", err)
	}
	if n := r.retries.Load(); n != 0 || stats[TP{topic, 0}].Retries != 0 {
		t.Errorf("retried %d times (stats %+v)", n, stats[TP{topic, 0}])
	}
}

func TestRetryTimeoutBoundsAPartitionAndSaysSo(t *testing.T) {
	const topic = "stuck"
	c := newCluster(t, 1, 1, topic)
	p := newProducer(t, c, nil, topic, "")
	p.send(0, "a")
	c.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.NotLeaderForPartition, Count: -1})
	var said lines
	r := newReader(t, c, func(o *Options) {
		o.MaxRetries, o.RetryTimeout, o.Wait = 0, 2*time.Second, said.add
	})
	start := time.Now()
	stats, err := r.Read(ctxT(t), []Range{{Topic: topic, Partition: 0, From: 0, To: 1}}, ReadOptions{}, func([]Record) error { return nil })
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "reading stuck[0] at 0: gave up after retrying for 2s") {
		t.Fatalf("err = %v", err)
	}
	if took > callBound {
		t.Errorf("took %s", took)
	}
	if s := stats[TP{topic, 0}]; s.Retries == 0 || s.Retries != r.retries.Load() {
		t.Errorf("stats %+v, %d retries in all", s, r.retries.Load())
	}
	got := said.all()
	if len(got) == 0 || !strings.HasPrefix(got[0], "waiting for stuck[0] at 0: fetch: ") || !strings.Contains(got[0], "s more)") {
		t.Errorf("wait lines %q", got)
	}
}

// The SASL fixtures of TestReadOverTLSAndSASL, reused by the probe: a
// cluster with SASL must still be probed and read with the right password.
func TestProbeAuthenticates(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(1, "t"),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "alice", "s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := newProducer(t, c, nil, "t", "", kgo.SASL(fplain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()))
	p.send(0, "a")
	r := newReader(t, c, func(o *Options) { o.SASL = plain.Mechanism{Username: "alice", Password: "s3cret"} })
	if err := r.diagnose(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	offs, err := r.Offsets(ctxT(t), "t")
	if err != nil || offs[0].HighWatermark != 1 {
		t.Fatalf("offsets %+v, %v", offs, err)
	}
}

// fakeKafka answers Kafka requests on a listener with answer, which gets
// each decoded request and returns the response to send (nil: hang up).
// It speaks only non-flexible versions, enough for the connection setup
// kafka-go does.
func fakeKafka(t *testing.T, answer func(kmsg.Request) kmsg.Response) string {
	return listen(t, func(c net.Conn) {
		for {
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err != nil {
				return
			}
			body := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(c, body); err != nil {
				return
			}
			key, version := int16(binary.BigEndian.Uint16(body)), int16(binary.BigEndian.Uint16(body[2:]))
			corr := body[4:8]
			idLen := int16(binary.BigEndian.Uint16(body[8:]))
			rest := body[10:]
			if idLen > 0 {
				rest = rest[idLen:]
			}
			req := kmsg.RequestForKey(key)
			if req == nil {
				return
			}
			req.SetVersion(version)
			if req.IsFlexible() {
				return // not spoken here
			}
			if err := req.ReadFrom(rest); err != nil {
				t.Errorf("fake broker: decoding key %d v%d: %v", key, version, err)
				return
			}
			resp := answer(req)
			if resp == nil {
				return
			}
			resp.SetVersion(version)
			out := resp.AppendTo(append([]byte{0, 0, 0, 0}, corr...))
			binary.BigEndian.PutUint32(out, uint32(len(out)-4))
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	})
}

// answers is a fake broker's behaviour: ApiVersions and Metadata as a
// broker, SASL as handshake and auth say.
func answers(handshake int16, offered []string, auth int16) func(kmsg.Request) kmsg.Response {
	return func(r kmsg.Request) kmsg.Response {
		switch req := r.(type) {
		case *kmsg.ApiVersionsRequest:
			resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
			for _, k := range []kmsg.Key{kmsg.ApiVersions, kmsg.Metadata, kmsg.SASLHandshake, kmsg.SASLAuthenticate} {
				v := kmsg.NewApiVersionsResponseApiKey()
				v.ApiKey, v.MinVersion, v.MaxVersion = int16(k), 0, 1
				if k == kmsg.ApiVersions {
					v.MaxVersion = 0
				}
				resp.ApiKeys = append(resp.ApiKeys, v)
			}
			return resp
		case *kmsg.SASLHandshakeRequest:
			resp := req.ResponseKind().(*kmsg.SASLHandshakeResponse)
			resp.ErrorCode, resp.SupportedMechanisms = handshake, offered
			return resp
		case *kmsg.SASLAuthenticateRequest:
			resp := req.ResponseKind().(*kmsg.SASLAuthenticateResponse)
			resp.ErrorCode = auth
			if auth != 0 {
				resp.ErrorMessage = kmsg.StringPtr("Authentication failed: Invalid username or password")
			}
			return resp
		case *kmsg.MetadataRequest:
			return req.ResponseKind()
		}
		return nil
	}
}

// The answers a real broker gives to SASL mistakes (kfake answers them all
// by closing the connection).
func TestSASLAnswersNamed(t *testing.T) {
	tests := []struct {
		name   string
		answer func(kmsg.Request) kmsg.Response
		want   string
	}{
		{"SASL against a plaintext listener", answers(int16(kerr.IllegalSaslState.Code), nil, 0),
			"{addr} refused the SASL handshake: is it a SASL listener? (kafka.sasl.mechanism)"},
		{"a mechanism the listener does not offer", answers(int16(kerr.UnsupportedSaslMechanism.Code), []string{"SCRAM-SHA-512", "PLAIN"}, 0),
			"{addr} does not accept SASL mechanism PLAIN (it accepts PLAIN, SCRAM-SHA-512) (kafka.sasl.mechanism)"},
		{"a wrong password", answers(0, nil, int16(kerr.SaslAuthenticationFailed.Code)),
			"{addr} rejected the SASL credentials (kafka.sasl.username, kafka.sasl.password)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr := fakeKafka(t, tc.answer)
			r, err := New(Options{Brokers: []string{addr}, ConnectTimeout: 5 * time.Second, RetryBackoff: time.Millisecond,
				SASL: plain.Mechanism{Username: "alice", Password: "s3cret"}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			_, err = r.Topics(ctxT(t))
			if want := strings.ReplaceAll(tc.want, "{addr}", addr); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want it to say %q", err, want)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("the error shows the password: %v", err)
			}
			if n := r.retries.Load(); n != 0 {
				t.Errorf("retried %d times", n)
			}
		})
	}
	// And the same fake broker with SASL accepted is a broker that answers.
	addr := fakeKafka(t, answers(0, nil, 0))
	r, err := New(Options{Brokers: []string{addr}, SASL: plain.Mechanism{Username: "alice", Password: "s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.diagnose(ctxT(t)); err != nil {
		t.Errorf("a broker accepting the credentials: %v", err)
	}
}
