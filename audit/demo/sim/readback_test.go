package sim

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	tkafka "github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seen is one record read back from the cluster.
type seen struct {
	off   int64
	key   string
	ts    int64
	tomb  bool
	value []byte
}

// readBack reads every partition of the topics from the log start to the
// end offsets listed first (the last stable offset when committed, the high
// watermark otherwise) with franz-go's consumer, read_committed or
// read_uncommitted (never control records), and returns once the
// consumer's position on every partition has reached its end offset; it
// fails the test if that takes longer than a minute.
func readBack(t *testing.T, brokers []string, topics []string, committed bool) map[tp][]seen {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm, err := tkafka.NewAdmin(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	ranges, err := adm.Ranges(ctx, committed, topics...)
	if err != nil {
		t.Fatalf("listing the end offsets of %v: %v", topics, err)
	}
	out := map[tp][]seen{}
	err = tkafka.Consume(ctx, brokers, ranges, committed, func(r *kgo.Record) error {
		k := tp{r.Topic, r.Partition}
		out[k] = append(out[k], seen{off: r.Offset, key: string(r.Key), ts: r.Timestamp.UnixMilli(),
			tomb: r.Value == nil, value: r.Value})
		return nil
	})
	if err != nil {
		t.Fatalf("reading back %v (committed %v): %v", topics, committed, err)
	}
	return out
}

// listOffsets returns topic[p] -> offset for timestamp -2 (log start) or -1
// (high watermark, or the LSO with isolation level 1).
func listOffsets(t *testing.T, cl *kgo.Client, topic string, parts int, which int64, iso int8) []int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.IsolationLevel = iso
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := 0; p < parts; p++ {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = int32(p), which
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("ListOffsets %s: %v", topic, err)
	}
	offs := make([]int64, parts)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("ListOffsets %s[%d]: %v", topic, rp.Partition, err)
			}
			offs[rp.Partition] = rp.Offset
		}
	}
	return offs
}

// groupOffsets reads the application's committed offsets (OffsetFetch).
func groupOffsets(t *testing.T, cl *kgo.Client, group string) map[tp]int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatalf("OffsetFetch %s: %v", group, err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("OffsetFetch %s: %v", group, err)
	}
	out := map[tp]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Offset >= 0 {
				out[tp{rt.Topic, rp.Partition}] = rp.Offset
			}
		}
	}
	return out
}

// checkTopics asserts that the cluster holds exactly what the simulator's
// log says: every changelog, output and repartition record (committed and
// aborted, same offsets, keys, timestamps, tombstones), the inputs, the
// purge positions and the group's committed offsets.
func checkTopics(t *testing.T, brokers []string, tr *Truth) {
	t.Helper()
	l, n, P := tr.log, tr.n, tr.Scenario.Partitions
	var topics []string
	for x := 0; x < 3; x++ {
		topics = append(topics, n.inputs[x], n.repart[x], n.changelog[x])
	}
	topics = append(topics, n.output)
	all := readBack(t, brokers, topics, false)
	com := readBack(t, brokers, topics, true)

	compare := func(what string, k tp, want []seen, committedOnly []seen) {
		t.Helper()
		if err := sameRecords(all[k], want); err != nil {
			t.Errorf("%s %s[%d] read_uncommitted: %v", what, k.topic, k.p, err)
		}
		if err := sameRecords(com[k], committedOnly); err != nil {
			t.Errorf("%s %s[%d] read_committed: %v", what, k.topic, k.p, err)
		}
	}
	kvSeen := func(recs []*kvRec, p int32, committedOnly bool) []seen {
		var s []seen
		for _, r := range recs {
			if r.P == p && (r.Committed || !committedOnly) {
				s = append(s, seen{off: r.Off, key: r.Key, ts: r.TS, tomb: r.Tomb})
			}
		}
		return s
	}
	cl, err := newClient(brokers)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	groups := groupOffsets(t, cl, tr.AppID)
	for x := 0; x < 3; x++ {
		starts := listOffsets(t, cl, n.repart[x], P, -2, 0)
		for p := int32(0); p < int32(P); p++ {
			compare("changelog", tp{n.changelog[x], p}, kvSeen(l.cl[x], p, false), kvSeen(l.cl[x], p, true))
			var rpAll, rpCom []seen
			for _, r := range l.rp[x][p] {
				if r.Off < l.rpStart[x][p] {
					continue
				}
				s := seen{off: r.Off, key: r.Key, ts: r.TS}
				rpAll = append(rpAll, s)
				if r.Committed {
					rpCom = append(rpCom, s)
				}
			}
			compare("repartition", tp{n.repart[x], p}, rpAll, rpCom)
			if starts[p] != l.rpStart[x][p] {
				t.Errorf("%s[%d] log start %d, simulator says %d", n.repart[x], p, starts[p], l.rpStart[x][p])
			}
			var in, inCom []seen
			for _, r := range l.in[x][p] {
				s := seen{off: r.Off, key: string(r.RKey), ts: r.TS, tomb: r.Value == nil}
				in = append(in, s)
				if !r.Aborted {
					inCom = append(inCom, s)
				}
			}
			compare("input", tp{n.inputs[x], p}, in, inCom)
			for _, g := range []struct {
				topic string
				want  int64
			}{{n.inputs[x], l.inCommit[x][p]}, {n.repart[x], l.rpCommit[x][p]}} {
				got, ok := groups[tp{g.topic, p}]
				if g.want < 0 && ok {
					t.Errorf("group offset of %s[%d] is %d, simulator never committed", g.topic, p, got)
				} else if g.want >= 0 && got != g.want {
					t.Errorf("group offset of %s[%d] is %d (present %v), simulator committed %d", g.topic, p, got, ok, g.want)
				}
			}
		}
	}
	for p := int32(0); p < int32(P); p++ {
		compare("output", tp{n.output, p}, kvSeen(l.out, p, false), kvSeen(l.out, p, true))
	}
	checkValues(t, tr, com)
}

// sameRecords compares read records with expected ones by offset, key,
// timestamp and tombstone-ness.
func sameRecords(got, want []seen) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d records, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.off != w.off || g.key != w.key || g.ts != w.ts || g.tomb != w.tomb {
			return fmt.Errorf("record %d is {off %d key %q ts %d tomb %v}, want {off %d key %q ts %d tomb %v}",
				i, g.off, g.key, g.ts, g.tomb, w.off, w.key, w.ts, w.tomb)
		}
	}
	return nil
}

// checkValues decodes changelog and output values with the registered
// schemas: Confluent framing, the right schema id, customerId = the key.
func checkValues(t *testing.T, tr *Truth, com map[tp][]seen) {
	t.Helper()
	c, err := newCodecs()
	if err != nil {
		t.Fatal(err)
	}
	check := func(topic string, id uint32, s seen) {
		t.Helper()
		if len(s.value) < 5 || s.value[0] != 0 || binary.BigEndian.Uint32(s.value[1:5]) != id {
			t.Errorf("%s@%d: value not framed with schema id %d: % x", topic, s.off, id, s.value[:min(5, len(s.value))])
			return
		}
		codec := c.order
		if id == joinedSchemaID {
			codec = c.joined
		}
		native, _, err := codec.NativeFromBinary(s.value[5:])
		if err != nil {
			t.Errorf("%s@%d: undecodable: %v", topic, s.off, err)
			return
		}
		cust := native.(map[string]any)["customerId"]
		if u, ok := cust.(map[string]any); ok {
			cust = u["string"]
		}
		if cust != s.key {
			t.Errorf("%s@%d: customerId %v, key %q", topic, s.off, cust, s.key)
		}
	}
	n := tr.n
	for k, recs := range com {
		var id uint32
		switch k.topic {
		case n.changelog[0], n.changelog[1], n.changelog[2]:
			id = orderSchemaID
		case n.output:
			id = joinedSchemaID
		default:
			continue
		}
		for i, s := range recs {
			if i%50 == 0 && !s.tomb { // a sample keeps goavro off the test's critical path
				check(k.topic, id, s)
			}
		}
	}
}

// checkSchemas asserts the _schemas topic holds the NOOP record and one
// registration per subject in Confluent's storage format.
func checkSchemas(t *testing.T, brokers []string, tr *Truth) {
	t.Helper()
	recs := readBack(t, brokers, []string{SchemasTopic}, true)[tp{SchemasTopic, 0}]
	subjects := map[string]int{}
	for _, r := range recs {
		var k schemaKey
		if err := json.Unmarshal([]byte(r.key), &k); err != nil {
			t.Fatalf("_schemas key %q: %v", r.key, err)
		}
		if k.Keytype == "NOOP" {
			continue
		}
		var v schemaValue
		if err := json.Unmarshal(r.value, &v); err != nil {
			t.Fatalf("_schemas value of %s: %v", k.Subject, err)
		}
		if v.Subject != k.Subject || k.Keytype != "SCHEMA" || k.Magic != 1 || v.Version != 1 || k.Version != 1 || v.Deleted {
			t.Errorf("_schemas record %s / %s is not a version-1 registration", r.key, r.value)
		}
		subjects[v.Subject] = v.ID
	}
	for _, in := range tr.Inputs {
		for _, topic := range []string{in.Topic, in.RepartitionTopic, in.ChangelogTopic} {
			if subjects[topic+"-value"] != orderSchemaID {
				t.Errorf("subject %s-value has id %d, want %d", topic, subjects[topic+"-value"], orderSchemaID)
			}
		}
	}
	if subjects[tr.Output+"-value"] != joinedSchemaID {
		t.Errorf("subject %s-value has id %d, want %d", tr.Output, subjects[tr.Output+"-value"], joinedSchemaID)
	}
}
