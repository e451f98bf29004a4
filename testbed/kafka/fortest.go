package kafka

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// RealKafkaEnv names the environment variable that turns the tests against
// real Apache Kafka off: LOSSAUDIT_REAL_KAFKA=0 skips them. They run by
// default wherever Java and Maven are installed (Kafka itself is
// downloaded from Maven Central on first use).
const RealKafkaEnv = "LOSSAUDIT_REAL_KAFKA"

// SkipUnlessAvailable skips t when tests against real Kafka are turned off
// or Java or Maven are not installed.
func SkipUnlessAvailable(t testing.TB) {
	t.Helper()
	if os.Getenv(RealKafkaEnv) == "0" {
		t.Skipf("%s=0: tests against real Apache Kafka are turned off", RealKafkaEnv)
	}
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
}

// StartForTest starts an Apache Kafka cluster of nodes nodes (the version
// selected by LOSSAUDIT_KAFKA_VERSION) for one test, waits until it is
// ready and stops it when the test ends; it skips the test as
// SkipUnlessAvailable does.
func StartForTest(t testing.TB, nodes int) *Cluster {
	t.Helper()
	SkipUnlessAvailable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: t.TempDir(), Nodes: nodes, Version: os.Getenv(VersionEnv)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Apache Kafka %s at %v", c.Version(), c.Bootstrap())
	return c
}
