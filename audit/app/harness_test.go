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
// expect (twice in CI under -race: an LSO left below the high watermark,
// INVALID_TXN_STATE on a transactional produce), kfake's account of it,
// such as a transaction it aborted on timeout, is beside the failure.
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
