package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// SchemasTopic is the Schema Registry storage topic the simulator writes.
const SchemasTopic = "_schemas"

// kafkaSink writes the engine's transactions to a real cluster with one
// transactional producer, as one exactly_once_v2 stream thread does.
type kafkaSink struct {
	cl    *kgo.Client
	group string
	txid  string
	stats *Stats
}

// newClient returns a franz-go client limited to the protocol versions of
// Kafka 3.6 (the application's client version).
func newClient(brokers []string, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.MaxVersions(kversion.V3_6_0()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(1 << 20),
		kgo.RetryTimeout(30 * time.Second),
	}, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating Kafka client for %v: %w", brokers, err)
	}
	return cl, nil
}

func (k *kafkaSink) transact(ctx context.Context, recs []*outRec, offsets map[tp]int64, commit bool) error {
	if len(recs) == 0 && len(offsets) == 0 {
		return nil
	}
	if err := k.cl.BeginTransaction(); err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	krs := make([]*kgo.Record, len(recs))
	parts := map[tp]bool{}
	for i, r := range recs {
		krs[i] = &kgo.Record{Topic: r.topic, Partition: r.p, Key: r.key, Value: r.value, Timestamp: time.UnixMilli(r.ts)}
		parts[tp{r.topic, r.p}] = true
	}
	if err := addPartitions(ctx, k.cl, k.txid, parts); err != nil {
		_ = endTxn(ctx, k.cl, k.txid, false)
		return err
	}
	if err := k.cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
		_ = endTxn(ctx, k.cl, k.txid, false)
		return fmt.Errorf("producing %d records in a transaction: %w", len(krs), err)
	}
	for i, r := range recs {
		*r.off = krs[i].Offset
	}
	if len(offsets) > 0 {
		if err := k.commitOffsets(ctx, offsets); err != nil {
			_ = endTxn(ctx, k.cl, k.txid, false)
			return err
		}
	}
	k.stats.Transactions++
	if !commit {
		k.stats.Aborted++
	}
	k.stats.Written += int64(len(recs))
	if err := endTxn(ctx, k.cl, k.txid, commit); err != nil {
		return fmt.Errorf("ending transaction %d of %s (commit=%v): %w", k.stats.Transactions, k.txid, commit, err)
	}
	if len(recs) == 0 {
		return nil
	}
	if err := awaitMarkers(ctx, k.cl, parts); err != nil {
		return fmt.Errorf("after transaction %d of %s (commit=%v): %w", k.stats.Transactions, k.txid, commit, err)
	}
	return nil
}

// The simulator registers the partitions of its transactions and ends
// them itself (AddPartitionsToTxn, EndTxn, with the client's producer id
// and epoch) rather than leaving both to kgo. kgo registers a partition
// when it first drains a batch for it in a transaction, and ends only a
// transaction it registered partitions in; rarely (a few property runs in
// a hundred under -race, franz-go v1.22.3 against kfake) its account of
// the registered partitions is wrong: it then produced to a partition of
// the next transaction without registering it (INVALID_TXN_STATE), or
// skipped the EndTxn of a transaction whose only partition it lost (the
// transaction stayed open until its timeout aborted it, and the simulator
// waited for its markers meanwhile). Registering again what kgo registers
// is harmless, and kgo's own EndTxn after ours is a retry of a completed
// transaction, which brokers (and kfake) answer with success.

// addPartitions adds parts to txid's open transaction.
func addPartitions(ctx context.Context, cl *kgo.Client, txid string, parts map[tp]bool) error {
	if len(parts) == 0 {
		return nil
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("producer id of %s: %w", txid, err)
	}
	byTopic := map[string][]int32{}
	for k := range parts {
		byTopic[k.topic] = append(byTopic[k.topic], k.p)
	}
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = txid, pid, epoch
	for _, topic := range sortedKeys(byTopic) {
		t := kmsg.NewAddPartitionsToTxnRequestTopic()
		t.Topic, t.Partitions = topic, byTopic[topic]
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("AddPartitionsToTxn for %s: %w", txid, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("AddPartitionsToTxn %s[%d] for %s: %w", t.Topic, p.Partition, txid, err)
			}
		}
	}
	return nil
}

// endTxn ends txid's open transaction (EndTxn directly), then lets kgo end
// its own account of it: whatever kgo then sends is a retry of the
// completed transaction.
func endTxn(ctx context.Context, cl *kgo.Client, txid string, commit bool) error {
	how := kgo.TryAbort
	if commit {
		how = kgo.TryCommit
	}
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		_ = cl.EndTransaction(ctx, how)
		return fmt.Errorf("producer id of %s: %w", txid, err)
	}
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = txid, pid, epoch, commit
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if kerr := cl.EndTransaction(ctx, how); err == nil && kerr != nil {
		err = kerr
	}
	if err != nil {
		return fmt.Errorf("EndTxn of %s: %w", txid, err)
	}
	return nil
}

// commitOffsets adds the group to the open transaction and stages the
// offsets (AddOffsetsToTxn + TxnOffsetCommit, generation -1 and no member
// id: a committer outside the group protocol, which brokers accept).
func (k *kafkaSink) commitOffsets(ctx context.Context, offsets map[tp]int64) error {
	pid, epoch, err := k.cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("producer id: %w", err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = k.txid, pid, epoch, k.group
	addResp, err := add.RequestWith(ctx, k.cl)
	if err != nil {
		return fmt.Errorf("AddOffsetsToTxn for group %s: %w", k.group, err)
	}
	if err := kerr.ErrorForCode(addResp.ErrorCode); err != nil {
		return fmt.Errorf("AddOffsetsToTxn for group %s: %w", k.group, err)
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = k.txid, k.group, pid, epoch
	req.Generation, req.MemberID = -1, ""
	byTopic := map[string][]kmsg.TxnOffsetCommitRequestTopicPartition{}
	for t, off := range offsets {
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset, p.LeaderEpoch = t.p, off, -1
		byTopic[t.topic] = append(byTopic[t.topic], p)
	}
	for _, topic := range sortedKeys(byTopic) {
		t := kmsg.NewTxnOffsetCommitRequestTopic()
		t.Topic, t.Partitions = topic, byTopic[topic]
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return fmt.Errorf("TxnOffsetCommit for group %s: %w", k.group, err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("TxnOffsetCommit %s[%d] for group %s: %w", t.Topic, p.Partition, k.group, err)
			}
		}
	}
	return nil
}

func (k *kafkaSink) purge(ctx context.Context, topic string, p int32, before int64) error {
	return deleteRecords(ctx, k.cl, topic, p, before)
}

// deleteRecords moves topic[p]'s log start offset to before.
func deleteRecords(ctx context.Context, cl *kgo.Client, topic string, p int32, before int64) error {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 30000
	t := kmsg.NewDeleteRecordsRequestTopic()
	t.Topic = topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = p, before
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("DeleteRecords %s[%d] before %d: %w", topic, p, before, err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("DeleteRecords %s[%d] before %d: %w", topic, p, before, err)
			}
		}
	}
	return nil
}

// topicSpec is a topic to create.
type topicSpec struct {
	name       string
	partitions int32
	compact    bool
}

// createTopics creates the topics with replication min(3, brokers); an
// existing topic other than _schemas is an error (offsets would not be
// what the simulator expects).
func createTopics(ctx context.Context, cl *kgo.Client, specs []topicSpec) error {
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("reading cluster metadata: %w", err)
	}
	rf := int16(len(meta.Brokers))
	if rf > 3 {
		rf = 3
	}
	if rf < 1 {
		return errors.New("reading cluster metadata: no brokers")
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	for _, s := range specs {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = s.name, s.partitions, rf
		if s.compact {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = "cleanup.policy", kmsg.StringPtr("compact")
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("creating topics: %w", err)
	}
	for _, t := range resp.Topics {
		if t.Topic == SchemasTopic && t.ErrorCode == kerr.TopicAlreadyExists.Code {
			continue // the registry's topic is shared by every pipeline of the cluster
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("creating topic %s: %w", t.Topic, err)
		}
	}
	return nil
}

// schemaKey and schemaValue are Confluent Schema Registry's storage format
// for a registered schema in the _schemas topic.
type schemaKey struct {
	Keytype string `json:"keytype"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
	Magic   int    `json:"magic"`
}

type schemaValue struct {
	Subject string `json:"subject"`
	Version int    `json:"version"`
	ID      int    `json:"id"`
	Schema  string `json:"schema"`
	Deleted bool   `json:"deleted"`
}

// schemaRecords returns the _schemas records registering the value schema
// of every topic of the pipeline: a NOOP record first, as a registry writes
// at start-up, then one record per subject. Same schema, same id.
func schemaRecords(n names) ([]*kgo.Record, error) {
	recs := []*kgo.Record{{Topic: SchemasTopic, Key: []byte(`{"keytype":"NOOP","magic":0}`)}}
	add := func(topic, schema string, id int) error {
		subject := topic + "-value"
		k, err := json.Marshal(schemaKey{Keytype: "SCHEMA", Subject: subject, Version: 1, Magic: 1})
		if err != nil {
			return fmt.Errorf("encoding schema key of %s: %w", subject, err)
		}
		v, err := json.Marshal(schemaValue{Subject: subject, Version: 1, ID: id, Schema: schema})
		if err != nil {
			return fmt.Errorf("encoding schema of %s: %w", subject, err)
		}
		recs = append(recs, &kgo.Record{Topic: SchemasTopic, Key: k, Value: v})
		return nil
	}
	for x := 0; x < 3; x++ {
		for _, t := range []string{n.inputs[x], n.repart[x], n.changelog[x]} {
			if err := add(t, OrderSchema, orderSchemaID); err != nil {
				return nil, err
			}
		}
	}
	if err := add(n.output, JoinedSchema, joinedSchemaID); err != nil {
		return nil, err
	}
	return recs, nil
}

// produceInputs creates every topic, registers the schemas and produces the
// input records, checking that each lands at the offset the simulator
// assigned.
func produceInputs(ctx context.Context, brokers []string, sc Scenario, n names, in [][][]*inRec) (int64, error) {
	if err := createPipeline(ctx, brokers, sc, n); err != nil {
		return 0, err
	}
	cl, err := newInputClient(brokers, sc)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var total int64
	for x := 0; x < 3; x++ {
		for p := range in[x] {
			if err := produceRecs(ctx, cl, sc, n.inputs[x], in[x][p]); err != nil {
				return 0, err
			}
			total += int64(len(in[x][p]))
		}
	}
	return total, nil
}

// createPipeline creates every topic of the pipeline and registers the
// schemas in _schemas.
func createPipeline(ctx context.Context, brokers []string, sc Scenario, n names) error {
	cl, err := newClient(brokers, kgo.ProducerLinger(0))
	if err != nil {
		return err
	}
	defer cl.Close()
	P := int32(sc.Partitions)
	specs := []topicSpec{{name: SchemasTopic, partitions: 1, compact: true}, {name: n.output, partitions: P}}
	for x := 0; x < 3; x++ {
		specs = append(specs, topicSpec{name: n.inputs[x], partitions: P},
			topicSpec{name: n.repart[x], partitions: P},
			topicSpec{name: n.changelog[x], partitions: P, compact: true})
	}
	if err := createTopics(ctx, cl, specs); err != nil {
		return err
	}
	recs, err := schemaRecords(n)
	if err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("registering schemas in %s: %w", SchemasTopic, err)
	}
	return nil
}

// newInputClient returns the upstream producer of the inputs: plain
// (idempotent) or, with Scenario.InputTxnSize, transactional.
func newInputClient(brokers []string, sc Scenario) (*kgo.Client, error) {
	if sc.InputTxnSize > 0 {
		return newClient(brokers, kgo.TransactionalID(upstreamTxID(sc)), kgo.ProducerLinger(0))
	}
	return newClient(brokers, kgo.ProducerLinger(0))
}

// upstreamTxID is the transactional id of the upstream producer of a
// scenario with transactional inputs.
func upstreamTxID(sc Scenario) string { return sc.AppID + "-sim-upstream" }

// produceRecs produces recs, records of one input partition in offset
// order (starting at a transaction boundary when the inputs are
// transactional), with the upstream producer cl: one batch, or with
// Scenario.InputTxnSize one transaction per InputTxnSize records,
// committed or aborted as generate decided. It checks every offset.
func produceRecs(ctx context.Context, cl *kgo.Client, sc Scenario, topic string, recs []*inRec) error {
	size := len(recs)
	if sc.InputTxnSize > 0 {
		size = sc.InputTxnSize
	}
	for i := 0; i < len(recs); i += size {
		chunk := recs[i:min(i+size, len(recs))]
		txid := upstreamTxID(sc)
		if sc.InputTxnSize > 0 {
			if err := cl.BeginTransaction(); err != nil {
				return fmt.Errorf("upstream transaction on %s: %w", topic, err)
			}
			if err := addPartitions(ctx, cl, txid, map[tp]bool{{topic, chunk[0].P}: true}); err != nil {
				_ = endTxn(ctx, cl, txid, false)
				return fmt.Errorf("upstream transaction on %s: %w", topic, err)
			}
		}
		krs := make([]*kgo.Record, len(chunk))
		for j, r := range chunk {
			krs[j] = &kgo.Record{Topic: topic, Partition: r.P, Key: r.RKey, Value: r.Value, Timestamp: time.UnixMilli(r.TS)}
		}
		if err := cl.ProduceSync(ctx, krs...).FirstErr(); err != nil {
			if sc.InputTxnSize > 0 {
				_ = endTxn(ctx, cl, txid, false)
			}
			return fmt.Errorf("producing input %s: %w", topic, err)
		}
		for j, kr := range krs {
			if kr.Offset != chunk[j].Off {
				return fmt.Errorf("input %s[%d]: record landed at offset %d, expected %d (topic not fresh?)",
					topic, kr.Partition, kr.Offset, chunk[j].Off)
			}
		}
		if sc.InputTxnSize == 0 {
			continue
		}
		if err := endTxn(ctx, cl, txid, !chunk[0].Aborted); err != nil {
			return fmt.Errorf("ending upstream transaction on %s: %w", topic, err)
		}
		if err := awaitMarkers(ctx, cl, map[tp]bool{{topic, chunk[0].P}: true}); err != nil {
			return fmt.Errorf("after an upstream transaction on %s[%d] at offsets %d-%d: %w", topic, chunk[0].P, chunk[0].Off, chunk[len(chunk)-1].Off, err)
		}
	}
	return nil
}

// settle waits until the cluster shows the end state the simulator
// recorded: the group's offsets stable (no transactional commit still
// pending: OffsetFetch with require_stable) and equal to what was
// committed, and every written partition's LSO at its high watermark
// except the `open` ones. A real broker writes transaction markers to
// __consumer_offsets and to the data partitions asynchronously after
// EndTxn returns, so without this an audit started right after Run could
// see the last commit's purge but not yet its offsets.
func settle(ctx context.Context, brokers []string, group string, want map[tp]int64, topics map[string]int32, open map[tp]bool) error {
	// OffsetFetch v7 has require_stable and a single group.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MaxVersions(kversion.V2_5_0()))
	if err != nil {
		return fmt.Errorf("settling: creating client: %w", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var last string
	for {
		why, err := unsettled(ctx, cl, group, want, topics, open)
		if err != nil {
			return fmt.Errorf("settling: %w", err)
		}
		if why == "" {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("settling: still %s: %w", last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// unsettled says what is not settled yet ("" when everything is).
func unsettled(ctx context.Context, cl *kgo.Client, group string, want map[tp]int64, topics map[string]int32, open map[tp]bool) (string, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = group, true
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", fmt.Errorf("OffsetFetch %s: %w", group, err)
	}
	if resp.ErrorCode == kerr.UnstableOffsetCommit.Code {
		return "an offset commit pending", nil
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return "", fmt.Errorf("OffsetFetch %s: %w", group, err)
	}
	got := map[tp]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == kerr.UnstableOffsetCommit.Code {
				return "an offset commit pending", nil
			}
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return "", fmt.Errorf("OffsetFetch %s %s[%d]: %w", group, t.Topic, p.Partition, err)
			}
			if p.Offset >= 0 {
				got[tp{t.Topic, p.Partition}] = p.Offset
			}
		}
	}
	for k, off := range want {
		if got[k] != off {
			return fmt.Sprintf("group offset of %s[%d] at %d, not %d", k.topic, k.p, got[k], off), nil
		}
	}
	for _, topic := range sortedKeys(topics) {
		var ends [2]map[int32]int64
		for iso := int8(0); iso < 2; iso++ {
			lo := kmsg.NewPtrListOffsetsRequest()
			lo.IsolationLevel = iso
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			for p := int32(0); p < topics[topic]; p++ {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp = p, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			lo.Topics = append(lo.Topics, rt)
			lresp, err := lo.RequestWith(ctx, cl)
			if err != nil {
				return "", fmt.Errorf("ListOffsets %s: %w", topic, err)
			}
			ends[iso] = map[int32]int64{}
			for _, t := range lresp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						return "", fmt.Errorf("ListOffsets %s[%d]: %w", topic, p.Partition, err)
					}
					ends[iso][p.Partition] = p.Offset
				}
			}
		}
		for p, hw := range ends[0] {
			if !open[tp{topic, p}] && ends[1][p] != hw {
				return fmt.Sprintf("LSO of %s[%d] at %d below high watermark %d", topic, p, ends[1][p], hw), nil
			}
		}
	}
	return "", nil
}

// markerWait bounds awaitMarkers: markers are written when EndTxn is
// handled, so anything longer than a busy machine's scheduling delay means
// a transaction is still open on the partition.
const markerWait = 60 * time.Second

// awaitMarkers waits until every partition in parts has its LSO at its high
// watermark: the transaction just ended has its markers written. Brokers
// write markers after EndTxn returns; starting the next transaction first
// would let its records take the offsets the simulator expects the markers
// at (seen on kfake).
func awaitMarkers(ctx context.Context, cl *kgo.Client, parts map[tp]bool) error {
	byTopic := map[string][]int32{}
	for k := range parts {
		byTopic[k.topic] = append(byTopic[k.topic], k.p)
	}
	deadline := time.Now().Add(markerWait)
	for {
		var ends [2]map[tp]int64
		for iso := int8(0); iso < 2; iso++ {
			req := kmsg.NewPtrListOffsetsRequest()
			req.IsolationLevel = iso
			for _, topic := range sortedKeys(byTopic) {
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = topic
				for _, p := range byTopic[topic] {
					rp := kmsg.NewListOffsetsRequestTopicPartition()
					rp.Partition, rp.Timestamp = p, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				req.Topics = append(req.Topics, rt)
			}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				return fmt.Errorf("waiting for transaction markers: %w", err)
			}
			ends[iso] = map[tp]int64{}
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
						return fmt.Errorf("waiting for transaction markers on %s[%d]: %w", t.Topic, p.Partition, err)
					}
					ends[iso][tp{t.Topic, p.Partition}] = p.Offset
				}
			}
		}
		done := true
		for k := range parts {
			if ends[1][k] != ends[0][k] {
				done = false
			}
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for transaction markers: LSO still below the high watermark after %s: %s",
				markerWait, stuckDetail(ctx, cl, parts, ends))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for transaction markers: %w", ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// stuckDetail says, for each partition of parts whose LSO is below its high
// watermark, both offsets and the producers the cluster reports with an
// open transaction on it (DescribeProducers): what a failed awaitMarkers
// needs to be diagnosed from a CI log.
func stuckDetail(ctx context.Context, cl *kgo.Client, parts map[tp]bool, ends [2]map[tp]int64) string {
	var out []string
	req := kmsg.NewPtrDescribeProducersRequest()
	for k := range parts {
		if ends[1][k] == ends[0][k] {
			continue
		}
		out = append(out, fmt.Sprintf("%s[%d] LSO %d, high watermark %d", k.topic, k.p, ends[1][k], ends[0][k]))
		rt := kmsg.NewDescribeProducersRequestTopic()
		rt.Topic, rt.Partitions = k.topic, []int32{k.p}
		req.Topics = append(req.Topics, rt)
	}
	shards := cl.RequestSharded(ctx, req)
	for _, sh := range shards {
		if sh.Err != nil {
			out = append(out, fmt.Sprintf("describing producers: %v", sh.Err))
			continue
		}
		resp, ok := sh.Resp.(*kmsg.DescribeProducersResponse)
		if !ok {
			continue
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				for _, ps := range p.ActiveProducers {
					if ps.CurrentTxnStartOffset >= 0 {
						out = append(out, fmt.Sprintf("%s[%d]: producer %d epoch %d has a transaction open since offset %d (last sequence %d)",
							t.Topic, p.Partition, ps.ProducerID, ps.ProducerEpoch, ps.CurrentTxnStartOffset, ps.LastSequence))
					}
				}
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}
