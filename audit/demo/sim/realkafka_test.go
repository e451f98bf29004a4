package sim

import (
	"testing"
	"time"

	tkafka "github.com/lossaudit/lossaudit/testbed/kafka"
)

// startRealKafka starts a one-node Apache Kafka (Java and the Maven jars
// needed), unless LOSSAUDIT_REAL_KAFKA=0.
func startRealKafka(t *testing.T) []string {
	t.Helper()
	return tkafka.StartForTest(t, 1).Bootstrap()
}

// TestRealKafka runs the simulator against real Apache Kafka (kfake is not
// Kafka): the transactional offset commits outside a group, DeleteRecords,
// an open transaction, and the topics read back must all agree with the
// simulator's log, and demo-mode findings must still be the injected ones.
func TestRealKafka(t *testing.T) {
	brokers := startRealKafka(t)
	sc := DemoScenario(4)
	sc.RecordsPerInput, sc.Keys, sc.RightOnlyKeys = 4000, 400, 20
	sc.Faults.HangingTxns = 1
	sc.BaseTime = time.Now().Add(-time.Hour).Truncate(time.Second)
	start := time.Now()
	tr := run(t, brokers, sc)
	t.Logf("demo-sized run on real Kafka: %v, %+v", time.Since(start), tr.Stats)
	// Every keyed fault is a finding, except output-stage ones on the output
	// partition the open transaction holds (withheld); every finding is a
	// fault or a purged record.
	faults := map[string]bool{}
	for _, in := range tr.Injected {
		switch in.Kind {
		case KindBeforeRepartition, KindBeforeStore, KindBeforeOutput, KindAbortedChangelog, KindAbortedOutput:
			withheld := stageOf(in.Kind) == "output" && partitionFor([]byte(in.Key), sc.Partitions) == 0
			if in.Loss == withheld {
				t.Errorf("fault %+v: reported %v, withheld %v", in, in.Loss, withheld)
			}
			fallthrough
		case KindPurgedRecord:
			faults[in.Input+"/"+in.Key] = true
		}
	}
	for _, r := range tr.Rows {
		if !faults[r.Input+"/"+string(r.Key)] {
			t.Errorf("finding without a fault: %s", rowString(r))
		}
	}
	if !tr.Partial {
		t.Error("an open transaction must make the expectation partial")
	}
	checkTopics(t, brokers, tr)
	checkSchemas(t, brokers, tr)
	for seed := int64(1); seed <= 3; seed++ {
		sc := RandomScenario(seed)
		sc.BaseTime = time.Now().Add(-time.Hour)
		tr := run(t, brokers, sc)
		checkTopics(t, brokers, tr)
	}
}
