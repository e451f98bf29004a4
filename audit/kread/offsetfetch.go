package kread

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// stableOffsetFetch is an OffsetFetch v7 with require_stable set, which
// kafka-go (OffsetFetch up to v5) cannot send: the group coordinator then
// answers UNSTABLE_OFFSET_COMMIT for a partition while a transaction
// committing an offset for it is undecided or its outcome not yet applied,
// instead of the offset committed before it.
//
// It implements kafka-go's protocol.RawExchanger and protocol.GroupMessage,
// so kafka-go routes it to the group's coordinator on a connection it has
// set up (TLS, SASL); on that connection it asks ApiVersions first, since
// the version kafka-go negotiated is capped at its own v5. The request and
// response bodies are encoded and parsed by franz-go's kmsg (already the
// test suite's protocol library), the frames by kread.
type stableOffsetFetch struct {
	group    string
	clientID string
	topics   []kmsg.OffsetFetchRequestTopic

	// After the exchange: unsupported when the broker speaks OffsetFetch
	// below v7 (Kafka before 2.5); resp otherwise.
	unsupported bool
	resp        *kmsg.OffsetFetchResponse
}

const (
	apiVersionsKey   = 18
	offsetFetchKey   = 9
	stableFetchVer   = 7
	maxSmallResponse = 64 << 20
)

// ApiKey implements protocol.Message.
func (r *stableOffsetFetch) ApiKey() protocol.ApiKey { return protocol.OffsetFetch }

// Group implements protocol.GroupMessage: sent to the group's coordinator.
func (r *stableOffsetFetch) Group() string { return r.group }

// Required implements protocol.RawExchanger: always.
func (r *stableOffsetFetch) Required(map[protocol.ApiKey]int16) bool { return true }

// RawExchange implements protocol.RawExchanger.
func (r *stableOffsetFetch) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	body, err := frameExchange(rw, apiVersionsKey, 0, 1, r.clientID, false, nil)
	if err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	max, err := maxVersion(body, offsetFetchKey)
	if err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	if max < stableFetchVer {
		r.unsupported = true
		return r, nil
	}
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group, req.Topics, req.RequireStable = stableFetchVer, r.group, r.topics, true
	body, err = frameExchange(rw, offsetFetchKey, stableFetchVer, 2, r.clientID, true, req.AppendTo(nil))
	if err != nil {
		return nil, fmt.Errorf("offset fetch v%d: %w", stableFetchVer, err)
	}
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = stableFetchVer
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("offset fetch v%d response: %w", stableFetchVer, err)
	}
	r.resp = resp
	return r, nil
}

// frameExchange writes one request (header v1, or v2 when flexible) with body
// and returns the response body after its header (v0, or v1 when
// flexible).
func frameExchange(rw io.ReadWriter, key, version int16, corr int32, clientID string, flexible bool, body []byte) ([]byte, error) {
	be := binary.BigEndian
	req := be.AppendUint32(nil, 0)
	req = be.AppendUint16(req, uint16(key))
	req = be.AppendUint16(req, uint16(version))
	req = be.AppendUint32(req, uint32(corr))
	req = appendString(req, clientID)
	if flexible {
		req = append(req, 0) // no tagged fields
	}
	req = append(req, body...)
	be.PutUint32(req, uint32(len(req)-4))
	if _, err := rw.Write(req); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(rw, size[:]); err != nil {
		return nil, err
	}
	n := int(int32(be.Uint32(size[:])))
	if n < 4 || n > maxSmallResponse {
		return nil, fmt.Errorf("response of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(rw, buf); err != nil {
		return nil, err
	}
	if got := int32(be.Uint32(buf)); got != corr {
		return nil, fmt.Errorf("response for correlation id %d, want %d", got, corr)
	}
	buf = buf[4:]
	if flexible {
		var err error
		if buf, err = skipTags(buf); err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, errShortResponse
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 {
			return nil, errShortResponse
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < size {
			return nil, errShortResponse
		}
		b = b[k+int(size):]
	}
	return b, nil
}

// maxVersion returns the highest version of key in an ApiVersions v0
// response body, -1 when the broker does not list it.
func maxVersion(body []byte, key int16) (int16, error) {
	w := wire{b: body}
	if err := codeErr(w.int16()); err != nil {
		return 0, err
	}
	max := int16(-1)
	for n := w.count(); n > 0; n-- {
		k, _, hi := w.int16(), w.int16(), w.int16()
		if k == key {
			max = hi
		}
	}
	return max, w.err
}

// errUnstable is returned by offsetsStable while the coordinator answers
// UNSTABLE_OFFSET_COMMIT for some partition.
var errUnstable = errors.New("unstable offset commit")

// offsetsStable reads group's committed offsets of topics (partitions by
// topic) with require_stable. ok is false when the broker is older than
// Kafka 2.5 and cannot be asked so.
func (c *Client) offsetsStable(ctx context.Context, group string, topics map[string][]int32) (out map[TP]int64, ok bool, err error) {
	req := &stableOffsetFetch{group: group, clientID: c.o.ClientID}
	for t, parts := range topics {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = t, parts
		req.topics = append(req.topics, rt)
	}
	r, err := c.roundTrip(ctx, req)
	if err != nil {
		return nil, false, err
	}
	res, _ := r.(*stableOffsetFetch)
	if res == nil {
		return nil, false, fmt.Errorf("unexpected response %T", r)
	}
	if res.unsupported {
		return nil, false, nil
	}
	if err := codeErr(res.resp.ErrorCode); err != nil {
		if errors.Is(err, kafka.GroupIdNotFound) {
			return map[TP]int64{}, true, nil // a group that never committed anything
		}
		return nil, true, err
	}
	out = map[TP]int64{}
	unstable := false
	for _, t := range res.resp.Topics {
		for _, p := range t.Partitions {
			if err := codeErr(p.ErrorCode); err != nil {
				switch {
				case errors.Is(err, kafka.UnknownTopicOrPartition):
					continue
				case errors.Is(err, kafka.UnstableOffsetCommit):
					unstable = true
					continue
				}
				return nil, true, fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, err)
			}
			if p.Offset >= 0 {
				out[TP{Topic: t.Topic, Partition: p.Partition}] = p.Offset
			}
		}
	}
	if unstable {
		return nil, true, errUnstable
	}
	return out, true, nil
}

// groupOffsetsStable reads group's committed offsets with require_stable,
// asking again every 50 ms while a transaction committing them is
// undecided, for at most Options.StableWait. ok is false when the broker
// cannot be asked so.
func (c *Client) groupOffsetsStable(ctx context.Context, group string, topics map[string][]int32) (map[TP]int64, bool, error) {
	deadline := time.Now().Add(c.o.StableWait)
	for {
		var out map[TP]int64
		var ok, unstable bool
		err := c.retry(ctx, fmt.Sprintf("the committed offsets of group %q", group), func(ctx context.Context) error {
			var err error
			out, ok, err = c.offsetsStable(ctx, group, topics)
			unstable = errors.Is(err, errUnstable)
			if unstable {
				return nil
			}
			return err
		})
		switch {
		case err != nil:
			return nil, true, fmt.Errorf("committed offsets of group %q: %w%s", group, err, groupHint(err))
		case !unstable:
			return out, ok, nil
		case time.Now().After(deadline):
			return nil, true, fmt.Errorf("%w: group %q: a transaction committing its offsets stayed undecided for %s (the coordinator answered UNSTABLE_OFFSET_COMMIT)",
				ErrUnstableOffsets, group, c.o.StableWait)
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return nil, true, err
		}
	}
}
