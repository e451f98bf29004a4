package app_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// propertySeeds is the number of seeds a property test runs:
// LOSSAUDIT_PROPERTY_SEEDS (default 24), divided by share for the slower
// reconcile properties, and at least floor.
func propertySeeds(share, floor int) int {
	n := 24
	if s, err := strconv.Atoi(os.Getenv("LOSSAUDIT_PROPERTY_SEEDS")); err == nil && s > 0 {
		n = s
	}
	return max(floor, n/share)
}

// propertyCluster starts the in-process 3-broker cluster a property test
// runs on, closed when the test ends, and a context bounding the test.
// The cluster's own warnings go to stderr, which go test shows only for a
// failing package: when the simulator meets a cluster state it does not
// expect, kfake's account of it (a transaction it aborted on timeout, for
// example) is beside the failure. (Twice in CI under -race, a transaction
// of the simulator failed with INVALID_TXN_STATE or stayed open until its
// timeout: kgo had lost track of a partition it registered; the simulator
// now registers and ends its transactions itself, sim/kafka.go.)
func propertyCluster(t *testing.T, timeout time.Duration) ([]string, context.Context) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.WithLogger(kfake.BasicLogger(os.Stderr, kfake.LogLevelWarn)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return cluster.ListenAddrs(), ctx
}
