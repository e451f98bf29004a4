package kread

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/segmentio/kafka-go/protocol"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TxnHolder is the open transaction holding a partition's last stable
// offset: the producer DescribeProducers lists with the earliest current
// transaction start offset, and, when a transaction coordinator lists it,
// its transactional id (ListTransactions, Kafka 3.0+, KIP-664).
type TxnHolder struct {
	// Leader is the partition's leader, which answered DescribeProducers
	// (kafka-transactions.sh find-hanging --broker-id takes it).
	Leader        int32
	ProducerID    int64
	ProducerEpoch int32
	// StartOffset is the first offset of the open transaction: the LSO.
	StartOffset int64
	// LastTimestamp is the producer's last write (Unix ms).
	LastTimestamp int64
	// TransactionalID and State are "" when no coordinator lists the
	// producer id (a hanging transaction its coordinator forgot, KIP-890's
	// case).
	TransactionalID string
	State           string
}

// rawBroker is a request of the kmsg family sent to one broker (a
// partition's leader, or each broker in turn), on kafka-go's connection.
type rawBroker struct {
	pick     func(protocol.Cluster) (protocol.Broker, error)
	clientID string
	req      kmsg.Request
	resp     kmsg.Response
	// unsupported is set when the broker does not speak the request.
	unsupported bool
}

// ApiKey implements protocol.Message.
func (r *rawBroker) ApiKey() protocol.ApiKey { return protocol.ApiKey(r.req.Key()) }

// Broker implements protocol.BrokerMessage.
func (r *rawBroker) Broker(c protocol.Cluster) (protocol.Broker, error) { return r.pick(c) }

// Required implements protocol.RawExchanger: always.
func (r *rawBroker) Required(map[protocol.ApiKey]int16) bool { return true }

// RawExchange implements protocol.RawExchanger.
func (r *rawBroker) RawExchange(rw io.ReadWriter) (protocol.Message, error) {
	body, err := frameExchange(rw, apiVersionsKey, 0, 1, r.clientID, false, nil)
	if err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	max, err := maxVersion(body, r.req.Key())
	if err != nil {
		return nil, fmt.Errorf("api versions: %w", err)
	}
	if max < 0 {
		r.unsupported = true
		return r, nil
	}
	v := min(max, r.req.MaxVersion())
	r.req.SetVersion(v)
	r.resp.SetVersion(v)
	name := kmsg.NameForKey(r.req.Key())
	body, err = frameExchange(rw, r.req.Key(), v, 2, r.clientID, r.req.IsFlexible(), r.req.AppendTo(nil))
	if err != nil {
		return nil, fmt.Errorf("%s v%d: %w", name, v, err)
	}
	if err := r.resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s v%d response: %w", name, v, err)
	}
	return r, nil
}

// TransactionHolder returns the open transaction holding the LSO of topic's
// partition (nil when no producer has a transaction open there), so that
// a stuck_lso finding can name it and the command that aborts it.
func (c *Client) TransactionHolder(ctx context.Context, topic string, partition int32) (*TxnHolder, error) {
	var h *TxnHolder
	err := c.retry(ctx, fmt.Sprintf("describing the producers of %s[%d]", topic, partition), func(ctx context.Context) error {
		req, resp := kmsg.NewPtrDescribeProducersRequest(), kmsg.NewPtrDescribeProducersResponse()
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{partition}
		req.Topics = []kmsg.DescribeProducersRequestTopic{rt}
		leader := int32(-1)
		r, err := c.roundTrip(ctx, &rawBroker{clientID: c.o.ClientID, req: req, resp: resp, pick: func(cl protocol.Cluster) (protocol.Broker, error) {
			p, ok := cl.Topics[topic].Partitions[partition]
			if !ok || p.Leader < 0 {
				return protocol.Broker{}, fmt.Errorf("no leader known for %s[%d]", topic, partition)
			}
			leader = p.Leader
			return cl.Brokers[p.Leader], nil
		}})
		if err != nil {
			return err
		}
		if rb, _ := r.(*rawBroker); rb == nil || rb.unsupported {
			return &permanentError{fmt.Errorf("the leader does not answer DescribeProducers (Kafka 2.8+)")}
		}
		h = nil
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := codeErr(p.ErrorCode); err != nil {
					return err
				}
				for _, ap := range p.ActiveProducers {
					if ap.CurrentTxnStartOffset >= 0 && (h == nil || ap.CurrentTxnStartOffset < h.StartOffset) {
						h = &TxnHolder{Leader: leader, ProducerID: ap.ProducerID, ProducerEpoch: ap.ProducerEpoch,
							StartOffset: ap.CurrentTxnStartOffset, LastTimestamp: ap.LastTimestamp}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the transaction holding the LSO of %s[%d]: %w", topic, partition, err)
	}
	if h == nil {
		return nil, nil
	}
	id, state, err := c.transactionOf(ctx, h.ProducerID)
	if err != nil {
		return nil, fmt.Errorf("the transaction holding the LSO of %s[%d]: %w", topic, partition, err)
	}
	h.TransactionalID, h.State = id, state
	return h, nil
}

// transactionOf asks every broker (each coordinates the transactions of
// its __transaction_state partitions) for the transactional id of
// producer id pid; "" when none lists it.
func (c *Client) transactionOf(ctx context.Context, pid int64) (id, state string, err error) {
	m, err := c.meta(ctx)
	if err != nil {
		return "", "", err
	}
	var brokers []int32
	for _, b := range m.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	for _, b := range brokers {
		err := c.retry(ctx, fmt.Sprintf("listing the transactions of broker %d", b), func(ctx context.Context) error {
			req, resp := kmsg.NewPtrListTransactionsRequest(), kmsg.NewPtrListTransactionsResponse()
			req.ProducerIDFilters = []int64{pid}
			r, err := c.roundTrip(ctx, &rawBroker{clientID: c.o.ClientID, req: req, resp: resp, pick: func(cl protocol.Cluster) (protocol.Broker, error) {
				br, ok := cl.Brokers[b]
				if !ok {
					return protocol.Broker{}, fmt.Errorf("broker %d left the cluster", b)
				}
				return br, nil
			}})
			if err != nil {
				return err
			}
			if rb, _ := r.(*rawBroker); rb == nil || rb.unsupported {
				return nil // before Kafka 3.0: the id stays unknown
			}
			if err := codeErr(resp.ErrorCode); err != nil {
				return err
			}
			for _, ts := range resp.TransactionStates {
				if ts.ProducerID == pid {
					id, state = ts.TransactionalID, ts.TransactionState
				}
			}
			return nil
		})
		if err != nil {
			return "", "", err
		}
		if id != "" {
			return id, state, nil
		}
	}
	return "", "", nil
}
