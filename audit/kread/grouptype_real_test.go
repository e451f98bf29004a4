package kread

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	tkafka "github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/poll"
)

// rawExchange sends req at version v straight to the broker at addr and
// reads its answer into resp.
func rawExchange(t *testing.T, addr string, req kmsg.Request, resp kmsg.Response, v int16) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	req.SetVersion(v)
	resp.SetVersion(v)
	name := kmsg.NameForKey(req.Key())
	body, err := frameExchange(conn, req.Key(), v, 1, "lossaudit-test", req.IsFlexible(), req.AppendTo(nil))
	if err != nil {
		t.Fatalf("%s v%d: %v", name, v, err)
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d response: %v", name, v, err)
	}
}

// rawDescribeGroups sends DescribeGroups at version v straight to the
// broker at addr (the group's coordinator on a one-node cluster) and
// returns its answer for group.
func rawDescribeGroups(t *testing.T, addr, group string, v int16) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req, resp := kmsg.NewPtrDescribeGroupsRequest(), kmsg.NewPtrDescribeGroupsResponse()
	req.Groups = []string{group}
	rawExchange(t, addr, req, resp, v)
	if len(resp.Groups) != 1 {
		t.Fatalf("DescribeGroups v%d: %d groups in the answer", v, len(resp.Groups))
	}
	return resp.Groups[0]
}

// TestRealKafka44GroupsAndTransactions verifies on Kafka 4.4.0 brokers what DescribeGroups
// answers for groups that are not classic (issue 22: reported as Dead with
// no members and no error up to v5, an error from v6 on), and that
// DescribeGroup learns every type, state and member count with the type's
// own API: a classic consumer group, a KIP-848 consumer group, a streams
// group (KIP-1071; one member joined by a raw StreamsGroupHeartbeat, as the
// Kafka Streams client sends it) and a share group (KIP-932). On the same
// cluster, TransactionHolder names the open transaction holding an LSO.
func TestRealKafka44GroupsAndTransactions(t *testing.T) {
	tkafka.SkipUnlessAvailable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := tkafka.Start(ctx, tkafka.Options{Dir: t.TempDir(), Nodes: 1, Version: "4.4.0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	if err := cl.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	adm, err := tkafka.NewAdmin(cl.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	const topic = "gt"
	if err := adm.CreateTopics(ctx, tkafka.TopicSpec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(cl.Bootstrap()...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for i := range 10 {
		if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	// consumer joins group; waitRecords: until it got records (a share
	// group starts at the log end, share.auto.offset.reset=latest, so it
	// gets none: its member joins in the background).
	consumer := func(group string, waitRecords bool, o ...kgo.Opt) *kgo.Client {
		c, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(cl.Bootstrap()...), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, o...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		if !waitRecords {
			go c.PollFetches(ctx)
			return c
		}
		pctx, pcancel := context.WithTimeout(ctx, 60*time.Second)
		defer pcancel()
		if f := c.PollFetches(pctx); f.Err0() != nil {
			t.Fatalf("group %s: %v", group, f.Err0())
		}
		return c
	}
	consumer("g-classic", true, kgo.ConsumerGroup("g-classic"))
	kip848 := consumer("g-consumer", true, kgo.ConsumerGroup("g-consumer"), kgo.Balancers(kgo.RangeBalancer()), kgo.ServerSideBalancer())
	if err := kip848.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("committing in the KIP-848 group: %v", err)
	}
	consumer("g-share", false, kgo.ShareGroup("g-share"))

	// A streams group member, as the Kafka Streams client joins one.
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g-streams", "member-1", 0, 30000
	process := "process-1"
	hb.ProcessID = &process
	// Its topology: gt re-keyed into a repartition topic, read by a
	// second subtopology into a store with a changelog.
	const repartition, changelog = "g-streams-s-repartition", "g-streams-s-changelog"
	sub := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub.SubtopologyID, sub.SourceTopics, sub.RepartitionSinkTopics = "0", []string{topic}, []string{repartition}
	sub1 := kmsg.NewStreamsGroupHeartbeatRequestTopologySubtopology()
	sub1.SubtopologyID = "1"
	rti, cti := kmsg.NewTopicInfo(), kmsg.NewTopicInfo()
	rti.Topic, rti.NumPartitions, cti.Topic = repartition, 2, changelog
	sub1.RepartitionSourceTopics, sub1.StateChangelogTopics = []kmsg.TopicInfo{rti}, []kmsg.TopicInfo{cti}
	hb.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{sub, sub1}}
	hb.ActiveTasks, hb.StandbyTasks, hb.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	hr := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	rawExchange(t, cl.Bootstrap()[0], hb, hr, 0) // franz-go's client does not send it

	if hr.ErrorCode != 0 {
		t.Fatalf("StreamsGroupHeartbeat: %v %s", kmsgErr(hr.ErrorCode), deref(hr.ErrorMessage))
	}

	r, err := New(Options{Brokers: cl.Bootstrap(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		group string
		typ   GroupType
		via   string
	}{
		{"g-classic", GroupClassic, "DescribeGroups"},
		{"g-consumer", GroupConsumer, "ConsumerGroupDescribe"},
		{"g-streams", GroupStreams, "StreamsGroupDescribe"},
		{"g-share", GroupShare, "ShareGroupDescribe"},
	} {
		var g Group
		var gerr error
		// Members join asynchronously: wait until the group has one.
		err := poll.Until(ctx, 60*time.Second, 200*time.Millisecond, "a member in group "+c.group, func() bool {
			g, gerr = r.DescribeGroup(ctx, c.group)
			return gerr == nil && g.Members > 0
		})
		if err != nil {
			t.Errorf("DescribeGroup(%s) = %+v, %v: %v", c.group, g, gerr, err)
			continue
		}
		if g.Type != c.typ || len(g.Via) < len(c.via) || g.Via[:len(c.via)] != c.via {
			t.Errorf("DescribeGroup(%s) = %+v, want type %s described by %s", c.group, g, c.typ, c.via)
		}
		for _, v := range []int16{5, 6} {
			d := rawDescribeGroups(t, cl.Bootstrap()[0], c.group, v)
			t.Logf("%s group %s, %s: DescribeGroups v%d answers error %d (%s) %q, state %q, protocol type %q, %d members",
				c.typ, c.group, g.State, v, d.ErrorCode, deref(d.ErrorMessage), kmsgErr(d.ErrorCode), d.State, d.ProtocolType, len(d.Members))
			if c.typ == GroupClassic {
				if d.ErrorCode != 0 || len(d.Members) == 0 {
					t.Errorf("classic group, DescribeGroups v%d: error %d, %d members", v, d.ErrorCode, len(d.Members))
				}
				continue
			}
			// What issue 22 reported, checked on 4.4.0.
			switch {
			case v == 5 && (d.ErrorCode != 0 || d.State != "Dead" || len(d.Members) != 0):
				t.Errorf("%s group, DescribeGroups v5: error %d state %q members %d, want Dead, none, no error", c.typ, d.ErrorCode, d.State, len(d.Members))
			case v == 6 && d.ErrorCode == 0:
				t.Errorf("%s group, DescribeGroups v6: no error (state %q, %d members), want an error", c.typ, d.State, len(d.Members))
			}
		}
	}
	// The streams group's topology, as the member sent it; none for the
	// other types.
	st, g, err := r.StreamsGroupTopology(ctx, "g-streams")
	if err != nil || st == nil {
		t.Errorf("StreamsGroupTopology(g-streams) = %+v, %+v, %v; want its topology", st, g, err)
	} else {
		got := fmt.Sprintf("%+v", st.Subtopologies)
		want := fmt.Sprintf("%+v", []StreamsSubtopology{
			{ID: "0", SourceTopics: []string{topic}, RepartitionSourceTopics: []string{}, RepartitionSinkTopics: []string{repartition}, ChangelogTopics: []string{}},
			{ID: "1", SourceTopics: []string{}, RepartitionSourceTopics: []string{repartition}, RepartitionSinkTopics: []string{}, ChangelogTopics: []string{changelog}},
		})
		if st.Group != "g-streams" || got != want {
			t.Errorf("StreamsGroupTopology(g-streams) = group %s epoch %d %s, want %s", st.Group, st.Epoch, got, want)
		}
		t.Logf("streams group topology: epoch %d %s (group %+v)", st.Epoch, got, g)
	}
	for _, other := range []string{"g-classic", "g-consumer", "g-share", "g-none"} {
		if st, _, err := r.StreamsGroupTopology(ctx, other); err != nil || st != nil {
			t.Errorf("StreamsGroupTopology(%s) = %+v, %v; want none", other, st, err)
		}
	}

	// A KIP-848 group's committed offsets read as a classic group's are
	// (OffsetFetch v7 with require_stable, what audit and compare use).
	offs, err := r.GroupOffsets(ctx, "g-consumer", []string{topic})
	want := map[TP]int64{}
	for p, eo := range kip848.CommittedOffsets()[topic] {
		want[TP{Topic: topic, Partition: p}] = eo.Offset
	}
	if err != nil || len(want) == 0 || fmt.Sprint(offs) != fmt.Sprint(want) {
		t.Errorf("GroupOffsets(g-consumer) = %v, %v; want the offsets it committed, %v", offs, err, want)
	}
	if g, err := r.DescribeGroup(ctx, "g-none"); err != nil || g.Exists() {
		t.Errorf("DescribeGroup(g-none) = %+v, %v; want a group that does not exist, no error", g, err)
	}

	// The transaction holding a partition's LSO, named for stuck_lso: an
	// open transaction on gt[1], after a committed record.
	if h, err := r.TransactionHolder(ctx, topic, 1); err != nil || h != nil {
		t.Errorf("TransactionHolder before any transaction = %+v, %v; want none", h, err)
	}
	txp, err := kgo.NewClient(kgo.SeedBrokers(cl.Bootstrap()...), kgo.TransactionalID("txn-holder"),
		kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txp.Close()
	if err := txp.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	rec, err := txp.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("open")}).First()
	if err != nil {
		t.Fatal(err)
	}
	h, err := r.TransactionHolder(ctx, topic, 1)
	switch {
	case err != nil:
		t.Errorf("TransactionHolder: %v", err)
	case h == nil:
		t.Errorf("TransactionHolder: none, want the open transaction at offset %d", rec.Offset)
	case h.StartOffset != rec.Offset || h.ProducerID != rec.ProducerID || h.TransactionalID != "txn-holder" || h.State != "Ongoing" || h.Leader != 1:
		t.Errorf("TransactionHolder = %+v, want producer %d from offset %d, transactional id txn-holder, Ongoing, leader 1", *h, rec.ProducerID, rec.Offset)
	default:
		t.Logf("the open transaction: %+v", *h)
	}
	if offs, err := r.Offsets(ctx, topic); err != nil || offs[1].LSO != rec.Offset {
		t.Errorf("LSO of %s[1] = %+v (%v), want the transaction's start %d", topic, offs[1], err, rec.Offset)
	}
	if err := txp.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
}

func kmsgErr(code int16) string {
	if code == 0 {
		return ""
	}
	return codeErr(code).Error()
}
