package copye2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/testbed/kafka"
)

// checkLedger compares the ledger the VerifiableProducer printed against
// topic with lossaudit compare and with the truth computed here, and
// returns the truth; the two must agree exactly.
func checkLedger(ctx context.Context, t *testing.T, c *kafka.Cluster, vp *Tool, topic string) *LedgerTruth {
	t.Helper()
	lines, err := ReadLedger(vp.Out)
	if err != nil {
		t.Fatal(err)
	}
	seen, err := ReadTopic(ctx, c.Bootstrap(), topic)
	if err != nil {
		t.Fatal(err)
	}
	truth := Ledger(lines, seen)
	cfg := Config(c.Bootstrap(), filepath.Join(t.TempDir(), "index"))
	cfg.Compare.Ledger = vp.Out
	res, err := app.Compare(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Diff(Rows(res), truth.Rows) {
		t.Error(d)
	}
	cs, ok := finding.SectionOf[*finding.CompareSummary](&res.Summary)
	if !ok || cs.Ledger == nil {
		t.Fatal("the result has no ledger counters")
	}
	l := cs.Ledger
	if l.Verified != truth.Verified || l.Expired != truth.Expired || l.Acked != truth.Acked || l.Failed != truth.Failed {
		t.Errorf("ledger counters %+v; the truth: verified %d, expired %d, acked %d, failed %d", *l, truth.Verified, truth.Expired, truth.Acked, truth.Failed)
	}
	kinds := map[finding.Kind]int{}
	for _, r := range truth.Rows {
		kinds[r.Kind]++
	}
	t.Logf("%d sends (%d acknowledged, %d failed), %d records in %s; findings %v",
		len(lines), truth.Acked, truth.Failed, len(seen.Records), topic, kinds)
	return truth
}

// TestVerifiableProducerAcksOneLosesAcknowledgedRecords runs Kafka's
// VerifiableProducer with acks=1 against a partition on two brokers whose
// leader is killed while its follower is frozen (so the follower, still in
// the ISR, lacks what the leader acknowledged; the topic allows unclean
// leader election too): the new leader truncates away acknowledged records
// and writes new ones at their offsets. lossaudit compare --ledger must
// report as acked_missing exactly the acknowledged records a plain
// consumer no longer finds at their offsets, and classify every failed
// send exactly.
func TestVerifiableProducerAcksOneLosesAcknowledgedRecords(t *testing.T) {
	c := kafka.StartForTest(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	adm, err := kafka.NewAdmin(c.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	const topic = "acks1"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: topic, Assignment: [][]int32{{1, 2}},
		Configs: map[string]string{"unclean.leader.election.enable": "true", "min.insync.replicas": "1"}}); err != nil {
		t.Fatal(err)
	}
	// Which of the two replicas leads is the controller's choice: on a
	// loaded machine the preferred one can be fenced for a late heartbeat
	// and lose the lead before the producer starts. The follower must be in
	// the ISR, so that what the leader acknowledges while the follower is
	// frozen is on the leader alone.
	leader, isr, err := WaitPartition(ctx, c.Bootstrap(), topic, 0, "a leader with both replicas in sync",
		func(l int32, isr []int32) bool { return (l == 1 || l == 2) && len(isr) == 2 })
	if err != nil {
		t.Fatal(err)
	}
	follower := 3 - leader
	t.Logf("broker %d leads %s[0], ISR %v: broker %d is frozen, then broker %d killed", leader, topic, isr, follower, leader)
	vp, err := VerifiableProducer(ctx, t.TempDir(), c.Version(), c.Bootstrap(), topic, "1", 9000, 1500,
		map[string]string{"enable.idempotence": "false", "linger.ms": "0"})
	if err != nil {
		t.Fatal(err)
	}
	defer vp.Kill()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	step("first answers", WaitAnswers(ctx, vp, 1500))
	step("freezing the follower", c.PauseNode(int(follower)))
	acked, _, err := LedgerCounts(vp.Out)
	step("reading the ledger", err)
	// Acknowledgements, not answers: sends that fail prove nothing (they
	// are what a leader change while the follower is frozen would give).
	step("acknowledgements while the follower is frozen", WaitAcked(ctx, vp, acked+500))
	step("killing the leader", c.KillNode(int(leader)))
	step("resuming the follower", c.ResumeNode(int(follower)))
	// The follower must have taken over (truncating what only the killed
	// leader had) before the old leader comes back, however slowly the
	// controller fences it on a loaded machine.
	step("the follower leading", WaitLeader(ctx, c.Bootstrap(), topic, 0, follower))
	step("answers from the new leader", WaitAnswers(ctx, vp, 5000))
	step("restarting the old leader", c.StartNode(int(leader)))
	step("the producer's end", vp.Wait(ctx))
	step("every node up again", c.WaitReady(ctx))
	step("the topic in sync again", WaitInSync(ctx, c.Bootstrap(), topic))

	truth := checkLedger(ctx, t, c, vp, topic)
	lost := 0
	for _, r := range truth.Rows {
		if r.Kind == finding.AckedMissing {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("the leader kill lost no acknowledged record: the scenario proves nothing")
	}
}

// TestIdempotentProducerRollingRestarts runs Kafka's VerifiableProducer
// with acks=all and enable.idempotence=true through a rolling restart of
// every broker (kill -9, start, wait until in sync), with a delivery
// timeout short enough that sends in flight to a dead leader fail — the
// situation of an idempotent producer's fatal error when a broker rejoins,
// where a failed send may or may not be in the topic. lossaudit compare --ledger must report no acked_missing, and
// classify every failed send as unacked_present or unacked_missing
// exactly as a plain consumer finds it.
func TestIdempotentProducerRollingRestarts(t *testing.T) {
	c := kafka.StartForTest(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	adm, err := kafka.NewAdmin(c.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	const topic = "idempotent"
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: topic, Partitions: 3, RF: 3}); err != nil {
		t.Fatal(err)
	}
	vp, err := VerifiableProducer(ctx, t.TempDir(), c.Version(), c.Bootstrap(), topic, "-1", 40000, 1000,
		map[string]string{"enable.idempotence": "true", "retries": "2147483647", "request.timeout.ms": "1500", "delivery.timeout.ms": "3000", "linger.ms": "5"})
	if err != nil {
		t.Fatal(err)
	}
	defer vp.Kill()
	answers := 1000
	if err := WaitAnswers(ctx, vp, answers); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= 3; id++ {
		if err := c.KillNode(id); err != nil {
			t.Fatal(err)
		}
		answers += 2500
		if err := WaitAnswers(ctx, vp, answers); err != nil {
			t.Fatalf("answers with node %d down: %v", id, err)
		}
		if err := c.StartNode(id); err != nil {
			t.Fatal(err)
		}
		// A node killed and restarted within replica.lag.time.max.ms may
		// never have left the ISR: in sync is no sign it is up again.
		if err := c.WaitReady(ctx); err != nil {
			t.Fatalf("after restarting node %d: %v", id, err)
		}
		if err := WaitInSync(ctx, c.Bootstrap(), topic); err != nil {
			t.Fatalf("after restarting node %d: %v", id, err)
		}
	}
	// The rest of the sends are not needed: stop the producer.
	if err := WaitAnswers(ctx, vp, answers+1000); err != nil {
		t.Fatal(err)
	}
	if err := vp.Stop(); err != nil {
		t.Fatal(err)
	}
	truth := checkLedger(ctx, t, c, vp, topic)
	failed := 0
	for _, r := range truth.Rows {
		switch r.Kind {
		case finding.AckedMissing:
			t.Errorf("the idempotent producer lost an acknowledged record: %s", r)
		case finding.UnackedPresent, finding.UnackedMissing:
			failed++
		}
	}
	if failed == 0 {
		t.Fatalf("no send failed through the restarts: the scenario proves nothing about failed sends\n%s", strings.Join(tail(vp.Log), "\n"))
	}
}

func tail(path string) []string { return strings.Split(kafka.Tail(path, 20), "\n") }
