package kread

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	tkafka "github.com/lossaudit/lossaudit/testbed/kafka"
)

// TestRealKafkaCommittedAbortedOpen runs the transaction scenario of
// TestReadCommittedAbortedOpen against a real Apache Kafka broker (kfake is
// not Kafka). It needs Java and Maven and starts a JVM, so it only runs
// with LOSSAUDIT_REAL_KAFKA=1.
func TestRealKafkaCommittedAbortedOpen(t *testing.T) {
	if os.Getenv("LOSSAUDIT_REAL_KAFKA") != "1" {
		t.Skip("set LOSSAUDIT_REAL_KAFKA=1 to run against a real Kafka broker")
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := tkafka.Start(ctx, tkafka.Options{Dir: t.TempDir(), Nodes: 1, Version: os.Getenv("LOSSAUDIT_KAFKA_VERSION")})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Apache Kafka %s", cl.Version())
	adm, err := tkafka.NewAdmin(cl.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	const topic = "mix"
	if err := adm.CreateTopics(ctx, tkafka.TopicSpec{Name: topic, Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	m := newModel()
	newP := func(id string, o ...kgo.Opt) *producer {
		return newProducerAt(t, cl.Bootstrap(), m, topic, id, o...)
	}
	writeMixed(t, topic, m, newP)

	r, err := New(Options{Brokers: cl.Bootstrap(), Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	offs, err := r.Offsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, withAborted := range []bool{false, true} {
		col := newCollector()
		var ranges []Range
		for p, o := range offs {
			ranges = append(ranges, Range{Topic: topic, Partition: p, From: o.LogStart, To: o.HighWatermark})
		}
		stats, err := r.Read(ctx, ranges, ReadOptions{Aborted: withAborted}, col.fn(nil))
		if err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 3; p++ {
			tp := TP{topic, p}
			want, wst := m.expect(p, 0, offs[p].HighWatermark, withAborted)
			checkRecords(t, tp, col.recs[tp], want)
			got := stats[tp]
			if got.Committed != wst.Committed || got.Aborted != wst.Aborted || got.Next != wst.Next || got.Control != m.ctrl[p] {
				t.Errorf("%v stats %+v, want committed %d aborted %d control %d next %d", tp, got, wst.Committed, wst.Aborted, m.ctrl[p], wst.Next)
			}
			if offs[p].LSO != wst.Next {
				t.Errorf("%v LSO %d, want %d", tp, offs[p].LSO, wst.Next)
			}
		}
	}
}
