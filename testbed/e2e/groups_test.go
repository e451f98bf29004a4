package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
	"github.com/lossaudit/lossaudit/testbed/poll"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// TestStreamsGroupPoisonPill runs the pipeline as a KIP-1071 streams group
// (group.protocol=streams) on Kafka 4.4.0 brokers with Kafka Streams 4.4.0,
// and puts an undecodable record at the group's committed offset on
// in-a[0]. While the application runs (it skips such records, and its
// next commit is minutes away, so the committed offset stays at the
// record; at_least_once, since exactly-once caps the commit interval at
// the transaction timeout) the audit must not report a poison pill: the group has members,
// although DescribeGroups, which lossaudit used to ask, says Dead with no
// members. Once the application has stopped on the record (the default
// LogAndFail handler, the client shut down), the audit reports exactly one
// poison_pill, at that record. Restarted with a dead-letter queue, the
// application skips it, and the audit lists it with two records the
// application failed to process as dead-lettered, not lost (deadLetters).
// Then, on the same pipeline, records
// deleted past the committed offset of in-c[1] are offset_out_of_range, and
// a partition added to in-b, never committed on, with records an hour old,
// is unprocessed_partition.
func TestStreamsGroupPoisonPill(t *testing.T) {
	const v = "4.4.0"
	res := RunScenario(t, Scenario{KafkaVersion: v, StreamsVersion: v, GroupProtocol: "streams", Records: 300})
	env := res.Env
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	client, err := kread.New(kread.Options{Brokers: env.Cluster.Bootstrap(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	// The pill, at the committed offset of in-a[0] (the application caught
	// up and stopped cleanly).
	prod, err := kgo.NewClient(kgo.SeedBrokers(env.Cluster.Bootstrap()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	r, err := prod.ProduceSync(ctx, &kgo.Record{Topic: Inputs[0], Partition: 0, Key: []byte("pill"), Value: []byte("not Confluent-framed Avro")}).First()
	if err != nil {
		t.Fatal(err)
	}
	pill := r.Offset
	committed, err := env.Admin.GroupOffsets(ctx, ApplicationID, []string{Inputs[0]})
	if err != nil {
		t.Fatal(err)
	}
	if c := committed[Inputs[0]][0]; c != pill {
		t.Fatalf("committed offset of %s[0] is %d, the pill is at %d", Inputs[0], c, pill)
	}

	audit := func(phase string) *finding.Result {
		t.Helper()
		ar, _, err := app.Run(ctx, res.Config, app.Options{})
		if err != nil {
			t.Fatalf("%s: audit: %v", phase, err)
		}
		t.Logf("%s: group %+v, verdict rows %d, partition findings %+v", phase, *ar.Summary.Group, len(ar.Rows), ar.Summary.Partitions)
		if len(ar.Rows) != 0 {
			t.Errorf("%s: %d loss rows, want none", phase, len(ar.Rows))
		}
		return ar
	}

	// Running: skips undecodable records, commits every 10 minutes
	// (at_least_once: exactly-once caps the commit interval at the
	// transaction timeout).
	env.App.SetErrorHandling(true, false)
	env.App.SetGuarantee("at_least_once", 10*time.Minute)
	if err := env.App.Start(); err != nil {
		t.Fatal(err)
	}
	if err := env.App.WaitRunning(ctx); err != nil {
		t.Fatal(err)
	}
	var g kread.Group
	if err := poll.Until(ctx, 2*time.Minute, 500*time.Millisecond, "a member in the streams group", func() bool {
		g, err = client.DescribeGroup(ctx, ApplicationID)
		return err == nil && g.Members > 0
	}); err != nil {
		t.Fatalf("%v (last answer %+v, %v)", err, g, err)
	}
	if g.Type != kread.GroupStreams {
		t.Fatalf("group %+v, want a streams group", g)
	}
	ar := audit("running")
	if n := len(ar.Summary.Partitions); n != 0 {
		t.Errorf("running application: partition findings %+v, want none", ar.Summary.Partitions)
	}
	if sg := ar.Summary.Group; sg.Type != "streams" || sg.Members < 1 {
		t.Errorf("running application: the summary's group %+v, want a streams group with members", *sg)
	}
	if c, _ := env.Admin.GroupOffsets(ctx, ApplicationID, []string{Inputs[0]}); c[Inputs[0]][0] != pill {
		t.Fatalf("the application committed past the pill during the audit (%d, pill %d): the phase proves nothing", c[Inputs[0]][0], pill)
	}
	namesFromGroup(t, ctx, res)

	// Stopped on it: killed (no commit past the pill), then started with the
	// default LogAndFail handler and SHUTDOWN_CLIENT, it fails on the pill
	// and shuts down.
	if err := env.App.Kill(); err != nil {
		t.Fatal(err)
	}
	env.App.SetErrorHandling(false, true)
	env.App.SetGuarantee("exactly_once_v2", 0)
	if err := env.App.Start(); err != nil {
		t.Fatal(err)
	}
	if err := poll.Until(ctx, 4*time.Minute, time.Second, "the application stopping on the pill", func() bool {
		return !env.App.Running()
	}); err != nil {
		t.Fatal(err)
	}
	if log := env.App.LogGrep(5, "not Confluent-framed Avro"); !strings.Contains(log, "not Confluent-framed Avro") {
		t.Errorf("the application stopped, but not on the pill:\n%s", env.App.LogTail(30))
	}
	if err := poll.Until(ctx, 2*time.Minute, 500*time.Millisecond, "the streams group without members", func() bool {
		g, err = client.DescribeGroup(ctx, ApplicationID)
		return err == nil && g.Members == 0
	}); err != nil {
		t.Fatalf("%v (last answer %+v, %v)", err, g, err)
	}
	ar = audit("stopped")
	var got []string
	for _, pf := range ar.Summary.Partitions {
		s := fmt.Sprintf("%s %s[%d]", pf.Kind, pf.Topic, pf.Partition)
		if e, ok := pf.Evidence.(*finding.PoisonEvidence); ok {
			s += fmt.Sprintf("@%d", e.Offset)
		}
		got = append(got, s)
	}
	if want := fmt.Sprintf("%s %s[0]@%d", finding.PoisonPill, Inputs[0], pill); strings.Join(got, "\n") != want {
		t.Errorf("stopped application: partition findings\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}

	// The application restarted with a dead-letter queue skips the pill;
	// it also loses one update (lost, a loss row).
	dlq, lost := deadLetters(t, ctx, res, prod, pill)

	// On the same stopped pipeline, the root-cause signatures:
	// offset_out_of_range: records of in-c[1] deleted past the committed
	// offset before the application processed them;
	// unprocessed_partition: a partition added to in-b, holding records an
	// hour old, that the group never committed on.
	cEnd := produceAt(t, ctx, prod, Inputs[2], 1, 0, 3)
	cCommitted := committedAt(t, ctx, env, Inputs[2], 1)
	if err := env.Admin.DeleteRecords(ctx, Inputs[2], map[int32]int64{1: cEnd}); err != nil {
		t.Fatal(err)
	}
	addPartitions(t, ctx, env, Inputs[1], 4)
	produceAt(t, ctx, prod, Inputs[1], 3, time.Hour, 2)
	cfg := *res.Config
	cfg.Pipeline.DeadLetterTopic = dlq
	cfg.Audit.UnprocessedAfter = 30 * time.Minute
	cfg.Store.Dir = t.TempDir()
	ar, _, err = app.Run(ctx, &cfg, app.Options{})
	if err != nil {
		t.Fatalf("signatures: audit: %v", err)
	}
	got = nil
	for _, pf := range ar.Summary.Partitions {
		s := fmt.Sprintf("%s %s[%d]", pf.Kind, pf.Topic, pf.Partition)
		switch e := pf.Evidence.(type) {
		case *finding.PoisonEvidence:
			s += fmt.Sprintf("@%d", e.Offset)
		case *finding.OutOfRangeEvidence:
			s += fmt.Sprintf(" committed %d log start %d", e.Committed, e.LogStart)
		case *finding.UnprocessedEvidence:
			s += fmt.Sprintf(" [%d, %d)", e.LogStart, e.LSO)
		}
		got = append(got, s)
	}
	want := []string{
		fmt.Sprintf("%s %s[3] [0, 2)", finding.UnprocessedPartition, Inputs[1]),
		fmt.Sprintf("%s %s[1] committed %d log start %d", finding.OffsetOutOfRange, Inputs[2], cCommitted, cEnd),
	}
	if g, w := strings.Join(sorted(got), "\n"), strings.Join(sorted(want), "\n"); g != w {
		t.Errorf("signatures: partition findings\n%s\nwant\n%s", g, w)
	}
	if got := lossRows(ar.Rows); got != lost {
		t.Errorf("signatures: loss rows %s, want only the injected loss %s", got, lost)
	}
}

// lossRows renders rows as finding, stage, input, record and key, one line
// each.
func lossRows(rows []finding.Row) string {
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %s %s %s[%d]@%d key %s", r.Kind, r.Stage, r.Input, r.Topic, r.Partition, r.Offset, r.Key))
	}
	return strings.Join(out, "\n")
}

// namesFromGroup continues TestStreamsGroupPoisonPill while the
// application runs: without pipeline.topology_file, `lossaudit topology`
// takes every input's repartition and changelog topics from the streams
// group (StreamsGroupDescribe), the same names the topology file gives,
// and an audit resolved that way finds nothing, as the one with the file
// did. (Every audit of the test with the file also checks the file against
// the group: a disagreement would stop it.)
func namesFromGroup(t *testing.T, ctx context.Context, res *Result) {
	start := time.Now()
	bin, err := lossauditBin() // built once for the package (the watch tests share it)
	if err != nil {
		t.Fatal(err)
	}
	built := time.Now()
	defer func() {
		t.Logf("names from the group: %v (%v of it building lossaudit)", time.Since(start).Round(time.Second), built.Sub(start).Round(time.Second))
	}()
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "audit.yaml")
	if err := os.WriteFile(cfgFile, []byte(AuditYAML(res.Env.Cluster.Bootstrap(), "", filepath.Join(dir, "store"))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "topology", "-c", cfgFile)
	cmd.Env = testbedenv.Strip(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("lossaudit topology without a topology file: %v\n%s", err, out)
	}
	t.Logf("lossaudit topology without a topology file:\n%s", out)
	for i, in := range loadgen.InputNames[:len(Inputs)] {
		st := res.Stages[in]
		for _, want := range []string{
			fmt.Sprintf(`(?m)^%s\s+repartition\s+streams group\s+ok\s+%s$`, in, regexp.QuoteMeta(st.Repartition)),
			fmt.Sprintf(`(?m)^%s\s+changelog\s+streams group\s+ok\s+%s$`, in, regexp.QuoteMeta(st.Changelog)),
		} {
			if !regexp.MustCompile(want).Match(out) {
				t.Errorf("input %s (%s): no line matching %s", in, Inputs[i], want)
			}
		}
	}
	cfg := *res.Config
	cfg.Pipeline.TopologyFile = ""
	cfg.Store.Dir = filepath.Join(dir, "store")
	ar, m, err := app.Run(ctx, &cfg, app.Options{})
	if err != nil {
		t.Fatalf("names from the group: audit: %v", err)
	}
	if m.Group == nil {
		t.Errorf("names from the group: the model has no streams group")
	}
	for _, s := range m.Stages {
		if s.Origins.RepartitionTopic != topology.FromGroup || s.Origins.ChangelogTopic != topology.FromGroup {
			t.Errorf("names from the group: input %s origins %+v", s.Input.Name, s.Origins)
		}
	}
	if len(ar.Rows) != 0 || len(ar.Summary.Partitions) != 0 {
		t.Errorf("names from the group: %d loss rows, partition findings %+v; want none", len(ar.Rows), ar.Summary.Partitions)
	}
}

// deadLetters continues TestStreamsGroupPoisonPill on its pipeline, stopped
// on the pill (KIP-1034, Kafka Streams 4.4.0): the application restarts with
// a dead-letter queue, LogAndContinue deserialization and processing
// handlers, a selectKey that throws on one new input record and a reduce
// that throws on another's repartition copy. It sends to the queue the
// pill (deserialization), the first record (at the first hop) and the
// second (at the second hop: its dead-letter record names the repartition
// topic's record). Beside them, the application drops one update of a new
// customer before its store (the injected loss). The audit with
// pipeline.dead_letter_topic reports exactly the injected loss and no
// partition finding, and lists exactly these three input records as
// dead-lettered; so does a reconcile step whose baseline ran before the
// restart, when the four records were pending (its dead-letter records
// name records the baseline did not judge); without the key, the two that
// decode are reported lost too. It returns the dead-letter topic and the
// injected loss's row (lossRows).
func deadLetters(t *testing.T, ctx context.Context, res *Result, prod *kgo.Client, pill int64) (dlq, lost string) {
	env := res.Env
	dlq = "lossaudit-tb-dlq"
	if err := env.Admin.CreateTopics(ctx, kafka.TopicSpec{Name: dlq, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	// Two records of in-a, each a copy of an existing one (an update of a
	// customer the store holds, so the reduce runs) with the note that
	// makes the application throw.
	codec, err := goavro.NewCodec(loadgen.SchemaA)
	if err != nil {
		t.Fatal(err)
	}
	var a0 [][]byte
	err = kafka.Consume(ctx, env.Cluster.Bootstrap(), []kafka.Range{{Topic: Inputs[0], Partition: 1, From: 0, To: 2}}, true, func(r *kgo.Record) error {
		a0 = append(a0, r.Value)
		return nil
	})
	if err != nil || len(a0) != 2 {
		t.Fatalf("reading a record of each input: %v", err)
	}
	// Two customers (the first records of a partition are distinct ones),
	// so that without the queue each is a row of its own.
	withNote := func(a0 []byte, note string, customer ...string) []byte {
		native, _, err := codec.NativeFromBinary(a0[5:])
		if err != nil {
			t.Fatal(err)
		}
		m := native.(map[string]any)
		m["note"] = goavro.Union("string", note)
		for _, c := range customer {
			m["customerId"] = c
		}
		b, err := codec.BinaryFromNative(append([]byte(nil), a0[:5]...), m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	produce := func(topic string, partition int32, value []byte) int64 {
		r, err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Key: []byte("dlq"), Value: value}).First()
		if err != nil {
			t.Fatal(err)
		}
		return r.Offset
	}
	atSelect := produce(Inputs[0], 0, withNote(a0[0], "boom-select"))
	atReduce := produce(Inputs[0], 0, withNote(a0[1], "boom-reduce"))
	const lostKey = "dlq-lost"
	atLost := produce(Inputs[0], 0, withNote(a0[0], "lost", lostKey))
	lost = fmt.Sprintf("%s %s a %s[0]@%d key %s", finding.Missing, finding.StageChangelog, Inputs[0], atLost, lostKey)

	// A reconciliation's baseline, while the four records are pending.
	rcfg := *res.Config
	rcfg.Pipeline.DeadLetterTopic = dlq
	rcfg.Store.Dir = t.TempDir()
	step := func(phase string) *finding.Result {
		t.Helper()
		st, err := app.Reconcile(ctx, &rcfg, app.Options{})
		if err != nil {
			t.Fatalf("dead letters: reconcile %s: %v", phase, err)
		}
		defer st.Close()
		if err := st.Commit(); err != nil {
			t.Fatalf("dead letters: reconcile %s: commit: %v", phase, err)
		}
		return st.Result
	}
	if base := step("baseline"); len(base.Rows) != 0 {
		t.Errorf("dead letters: the baseline reports %s, want nothing (the records are pending)", lossRows(base.Rows))
	}

	env.App.SetErrorHandling(true, false)
	env.App.SetDeadLetters(dlq, true, "boom-select", "boom-reduce")
	env.App.SetDropBeforeStore(map[string][]string{"a": {lostKey}})
	if err := env.App.Start(); err != nil {
		t.Fatal(err)
	}
	if err := env.App.WaitRunning(ctx); err != nil {
		t.Fatal(err)
	}
	if err := WaitCaughtUp(ctx, env, res.Stages); err != nil {
		t.Fatal(err)
	}
	if err := env.App.Stop(); err != nil {
		t.Fatal(err)
	}

	cfg := *res.Config
	cfg.Pipeline.DeadLetterTopic = dlq
	cfg.Store.Dir = t.TempDir()
	ar, _, err := app.Run(ctx, &cfg, app.Options{})
	if err != nil {
		t.Fatalf("dead letters: audit: %v", err)
	}
	const deser = "org.apache.kafka.common.errors.SerializationException"
	want := []string{
		fmt.Sprintf("a %s[0]@%d %s", Inputs[0], pill, deser),
		fmt.Sprintf("a %s[0]@%d java.lang.IllegalStateException", Inputs[0], atSelect),
		fmt.Sprintf("a %s[0]@%d java.lang.IllegalArgumentException via %s", Inputs[0], atReduce, res.Stages["a"].Repartition),
	}
	check := func(phase string, ar *finding.Result) {
		t.Helper()
		if got := lossRows(ar.Rows); got != lost {
			t.Errorf("%s: loss rows\n%s\nwant only the injected loss\n%s", phase, got, lost)
		}
		for _, pf := range ar.Summary.Partitions {
			t.Errorf("%s: partition finding %s %s[%d] %+v", phase, pf.Kind, pf.Topic, pf.Partition, pf.Evidence)
		}
		dl, ok := finding.SectionOf[*finding.DeadLetters](&ar.Summary)
		if !ok {
			t.Fatalf("%s: no dead-letter section", phase)
		}
		var got []string
		for _, r := range dl.Records {
			s := fmt.Sprintf("%s %s[%d]@%d %s", r.Input, r.Topic, r.Partition, r.Offset, r.Exception)
			if r.ViaTopic != "" {
				s += " via " + r.ViaTopic
			}
			got = append(got, s)
		}
		if g, w := strings.Join(got, "\n"), strings.Join(want, "\n"); g != w {
			t.Errorf("%s: dead-lettered\n%s\nwant\n%s", phase, g, w)
		}
		if dl.Unreadable != 0 || dl.Unmatched != 0 || dl.Read != 3 {
			t.Errorf("%s: section %+v, want 3 read, none unreadable or unmatched", phase, *dl)
		}
		t.Logf("%s: %d records in %s, listed %v; rows %s", phase, dl.Read, dlq, got, lossRows(ar.Rows))
	}
	check("dead letters", ar)
	check("dead letters, reconcile step 2", step("step 2"))

	// Without the key, the records that decode are lost downstream.
	cfg.Pipeline.DeadLetterTopic = ""
	cfg.Store.Dir = t.TempDir()
	if ar, _, err = app.Run(ctx, &cfg, app.Options{}); err != nil {
		t.Fatalf("without the dead-letter topic: audit: %v", err)
	}
	if got := lossRows(ar.Rows); strings.Count(got, "\n") != 2 || !strings.Contains(got, lost) ||
		!strings.Contains(got, fmt.Sprintf("@%d ", atSelect)) || !strings.Contains(got, fmt.Sprintf("@%d ", atReduce)) {
		t.Errorf("without the dead-letter topic: rows\n%s\nwant the two dead-lettered records that decode and the injected loss", got)
	}
	return dlq, lost
}

// produceAt writes n undecodable records to topic's partition, timestamped
// age ago, and returns the partition's end offset after them. A partition
// just added may be missing from the producer's metadata for a moment
// (kgo: "invalid record partitioning choice"): it refreshes the metadata
// and asks again until a deadline.
func produceAt(t *testing.T, ctx context.Context, prod *kgo.Client, topic string, partition int32, age time.Duration, n int) int64 {
	t.Helper()
	var last int64
	for i := range n {
		var r *kgo.Record
		var err error
		if perr := poll.Until(ctx, time.Minute, 200*time.Millisecond, fmt.Sprintf("%s[%d] in the producer's metadata", topic, partition), func() bool {
			r, err = prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: partition, Timestamp: time.Now().Add(-age),
				Value: []byte(fmt.Sprintf("staged %d", i))}).First()
			if err != nil && strings.Contains(err.Error(), "invalid record partitioning choice") {
				prod.ForceMetadataRefresh()
				return false
			}
			return true
		}); perr != nil {
			t.Fatalf("%v: %v", perr, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		last = r.Offset
	}
	return last + 1
}

// committedAt returns the application's committed offset on a partition.
func committedAt(t *testing.T, ctx context.Context, env *Env, topic string, partition int32) int64 {
	t.Helper()
	c, err := env.Admin.GroupOffsets(ctx, ApplicationID, []string{topic})
	if err != nil {
		t.Fatal(err)
	}
	off, ok := c[topic][partition]
	if !ok {
		t.Fatalf("no committed offset on %s[%d]", topic, partition)
	}
	return off
}

// addPartitions grows topic to n partitions.
func addPartitions(t *testing.T, ctx context.Context, env *Env, topic string, n int32) {
	t.Helper()
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = topic, n
	req.Topics, req.TimeoutMillis = []kmsg.CreatePartitionsRequestTopic{rt}, 30000
	resp, err := req.RequestWith(ctx, env.Admin.Client())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Topics {
		if r.ErrorCode != 0 {
			t.Fatalf("adding partitions to %s: error %d %v", topic, r.ErrorCode, r.ErrorMessage)
		}
	}
	if err := poll.Until(ctx, time.Minute, 200*time.Millisecond, fmt.Sprintf("%s with %d partitions", topic, n), func() bool {
		ps, err := env.Admin.Partitions(ctx, topic)
		return err == nil && len(ps) == int(n)
	}); err != nil {
		t.Fatal(err)
	}
}
