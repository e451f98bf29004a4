package familye2e

import (
	"context"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/testbed/kafka"
)

// allBrokersDown returns a fault that kills all three brokers, keeps them
// down 8 s and restarts them, waiting until the cluster is ready again.
func allBrokersDown(ctx context.Context, t *testing.T, c *kafka.Cluster) func() {
	return func() {
		t.Helper()
		if err := c.KillAll(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(8 * time.Second) // the outage itself, not a wait for a state
		if err := c.StartAll(); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReady(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
