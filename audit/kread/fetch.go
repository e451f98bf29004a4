package kread

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// fetchRequest is a Fetch request that kread writes, and whose response it
// parses, itself: it implements kafka-go's protocol.RawExchanger, so
// kafka-go's Transport routes it to the leader (protocol.BrokerMessage) on
// a connection it has set up (TLS, SASL, versions), and hands the
// connection over for the exchange. The response is read into one reused
// buffer, and the records are decoded from there by decoder, without
// kafka-go's per-record objects.
//
// Versions 4 to 11 are spoken (the non-flexible ones that name topics):
// read_committed needs v4, every Kafka since 0.11 has it, and Kafka 4 still
// serves up to v11 by topic name.
type fetchRequest struct {
	leader   int32
	clientID string
	maxWait  int32
	maxBytes int32
	parts    []fetchPart

	version int16  // negotiated on the connection (Required)
	buf     []byte // the request, then the response
	resp    fetchResponse
}

// fetchPart is one partition of a fetchRequest.
type fetchPart struct {
	topic     string
	partition int32
	offset    int64
	maxBytes  int32
}

// fetchResponse is a parsed Fetch response; slices point into the buffer.
type fetchResponse struct {
	throttleMs int32
	errorCode  int16
	parts      []respPart
	txns       []txnMark // aborted transactions of all partitions
}

// respPart is one partition of a fetchResponse.
type respPart struct {
	topic                 []byte
	partition             int32
	errorCode             int16
	hw, lso, logStart     int64
	txnFrom, txnTo        int // its aborted transactions: txns[txnFrom:txnTo]
	records               []byte
	preferredReadReplica  int32
	abortedTransactionsOK bool // the list was present (not null)
}

const (
	minFetchVersion = 4
	maxFetchVersion = 11
	// maxResponse bounds the size of a response kread accepts.
	maxResponse = 1 << 30
)

// ApiKey implements protocol.Message.
func (r *fetchRequest) ApiKey() protocol.ApiKey { return protocol.Fetch }

// Broker implements protocol.BrokerMessage: the partitions' leader.
func (r *fetchRequest) Broker(cluster protocol.Cluster) (protocol.Broker, error) {
	b, ok := cluster.Brokers[r.leader]
	if !ok {
		return protocol.Broker{ID: -1}, fmt.Errorf("leader %d is not among the cluster's brokers: %w", r.leader, kafka.BrokerNotAvailable)
	}
	return b, nil
}

// Required implements protocol.RawExchanger: always, noting the version
// negotiated on the connection.
func (r *fetchRequest) Required(versions map[protocol.ApiKey]int16) bool {
	r.version = versions[protocol.Fetch]
	return true
}

// RawExchange implements protocol.RawExchanger.
func (r *fetchRequest) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	v := min(r.version, maxFetchVersion)
	if v < minFetchVersion {
		return nil, &permanentError{fmt.Errorf("the broker speaks Fetch up to v%d; reading transactions needs v%d (Kafka 0.11)", r.version, minFetchVersion)}
	}
	const corr = 1
	r.buf = r.encode(r.buf[:0], v, corr)
	if _, err := rw.Write(r.buf); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(rw, size[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(size[:])))
	if n < 4 || n > maxResponse {
		return nil, fmt.Errorf("fetch response of %d bytes", n)
	}
	if cap(r.buf) < n {
		r.buf = make([]byte, n, n+n/4)
	}
	buf := r.buf[:n]
	if _, err := io.ReadFull(rw, buf); err != nil {
		return nil, err
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != corr {
		return nil, fmt.Errorf("fetch response for correlation id %d, want %d", got, corr)
	}
	if err := r.resp.parse(buf[4:], v); err != nil {
		return nil, fmt.Errorf("fetch response v%d: %w", v, err)
	}
	return r, nil
}

// encode appends the request, size first, to dst.
func (r *fetchRequest) encode(dst []byte, v int16, corr int32) []byte {
	be := binary.BigEndian
	dst = be.AppendUint32(dst, 0) // size, below
	dst = be.AppendUint16(dst, uint16(protocol.Fetch))
	dst = be.AppendUint16(dst, uint16(v))
	dst = be.AppendUint32(dst, uint32(corr))
	dst = appendString(dst, r.clientID)
	dst = be.AppendUint32(dst, 0xffffffff) // replica id -1: a consumer
	dst = be.AppendUint32(dst, uint32(r.maxWait))
	dst = be.AppendUint32(dst, 1) // min bytes
	dst = be.AppendUint32(dst, uint32(r.maxBytes))
	dst = append(dst, readCommitted)
	if v >= 7 {
		dst = be.AppendUint32(dst, 0)          // session id: no session
		dst = be.AppendUint32(dst, 0xffffffff) // session epoch -1
	}
	// Topics, in order of first appearance; partitions of a topic together.
	countAt := len(dst)
	dst = be.AppendUint32(dst, 0)
	topics := 0
	for i, p := range r.parts {
		if seenBefore(r.parts[:i], p.topic) {
			continue
		}
		topics++
		dst = appendString(dst, p.topic)
		pcAt := len(dst)
		dst = be.AppendUint32(dst, 0)
		n := 0
		for _, q := range r.parts[i:] {
			if q.topic != p.topic {
				continue
			}
			n++
			dst = be.AppendUint32(dst, uint32(q.partition))
			if v >= 9 {
				dst = be.AppendUint32(dst, 0xffffffff) // current leader epoch: unknown
			}
			dst = be.AppendUint64(dst, uint64(q.offset))
			if v >= 5 {
				dst = be.AppendUint64(dst, 0xffffffffffffffff) // log start offset: a consumer
			}
			dst = be.AppendUint32(dst, uint32(q.maxBytes))
		}
		be.PutUint32(dst[pcAt:], uint32(n))
	}
	be.PutUint32(dst[countAt:], uint32(topics))
	if v >= 7 {
		dst = be.AppendUint32(dst, 0) // forgotten topics
	}
	if v >= 11 {
		dst = appendString(dst, "") // rack id
	}
	be.PutUint32(dst, uint32(len(dst)-4))
	return dst
}

func seenBefore(parts []fetchPart, topic string) bool {
	for _, p := range parts {
		if p.topic == topic {
			return true
		}
	}
	return false
}

func appendString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

// find returns the response of a partition, or nil.
func (r *fetchResponse) find(topic string, partition int32) *respPart {
	for i := range r.parts {
		p := &r.parts[i]
		if p.partition == partition && string(p.topic) == topic {
			return p
		}
	}
	return nil
}

// aborted is the aborted-transaction list of p.
func (r *fetchResponse) aborted(p *respPart) []txnMark { return r.txns[p.txnFrom:p.txnTo] }

var errShortResponse = errors.New("response ends early")

// parse reads a response body (after the correlation id) of version v.
func (r *fetchResponse) parse(b []byte, v int16) error {
	d := wire{b: b}
	r.throttleMs = d.int32()
	r.errorCode = 0
	if v >= 7 {
		r.errorCode = d.int16()
		d.int32() // session id
	}
	r.parts, r.txns = r.parts[:0], r.txns[:0]
	topics := d.count()
	for range topics {
		topic := d.str()
		parts := d.count()
		for range parts {
			p := respPart{topic: topic, partition: d.int32(), errorCode: d.int16(), hw: d.int64(), lso: d.int64(), logStart: -1, preferredReadReplica: -1}
			if v >= 5 {
				p.logStart = d.int64()
			}
			p.txnFrom = len(r.txns)
			if n := int(d.int32()); n >= 0 {
				p.abortedTransactionsOK = true
				if n > d.left()/16 {
					return errShortResponse
				}
				for range n {
					r.txns = append(r.txns, txnMark{pid: d.int64(), first: d.int64()})
				}
			}
			p.txnTo = len(r.txns)
			if v >= 11 {
				p.preferredReadReplica = d.int32()
			}
			p.records = d.bytes()
			if d.err != nil {
				return d.err
			}
			r.parts = append(r.parts, p)
		}
	}
	return d.err
}

// wire reads big-endian protocol fields; the first short read sets err
// and every later read returns zero.
type wire struct {
	b   []byte
	err error
}

func (w *wire) left() int { return len(w.b) }

func (w *wire) take(n int) []byte {
	if w.err != nil || n < 0 || len(w.b) < n {
		w.err = errShortResponse
		w.b = nil
		return nil
	}
	out := w.b[:n:n]
	w.b = w.b[n:]
	return out
}

func (w *wire) int16() int16 {
	if b := w.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (w *wire) int32() int32 {
	if b := w.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (w *wire) int64() int64 {
	if b := w.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

// count reads an array length; a null or negative one counts as empty, one
// longer than the bytes left is an error.
func (w *wire) count() int {
	n := int(w.int32())
	if n > len(w.b) {
		w.err = errShortResponse
		return 0
	}
	return max(n, 0)
}

func (w *wire) str() []byte { return w.take(int(w.int16())) }

// bytes reads nullable bytes (null reads as nil).
func (w *wire) bytes() []byte {
	n := int(w.int32())
	if n < 0 {
		return nil
	}
	return w.take(n)
}
