package kafka

import (
	"context"
	"testing"
	"time"
)

// startTestCluster starts a cluster for this package's tests, skipped as
// SkipUnlessAvailable says.
func startTestCluster(t *testing.T) *Cluster {
	t.Helper()
	SkipUnlessAvailable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.Nodes {
				t.Logf("node %d log tail:\n%s", n.ID, c.LogTail(n.ID, 40))
			}
		}
		c.Close()
	})
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClusterLifecycle(t *testing.T) {
	start := time.Now()
	c := startTestCluster(t)
	t.Logf("kafka %s ready in %v", c.Version(), time.Since(start))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	adm, err := NewAdmin(c.Bootstrap())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	if err := adm.CreateTopics(ctx, TopicSpec{Name: "t1", Partitions: 3}); err != nil {
		t.Fatal(err)
	}
	ps, err := adm.Partitions(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("t1 has partitions %v, want 3", ps)
	}
	if err := c.KillNode(2); err != nil {
		t.Fatal(err)
	}
	if c.Running(2) {
		t.Fatal("node 2 still running after KillNode")
	}
	if err := c.StartNode(2); err != nil {
		t.Fatal(err)
	}
	if err := c.StopNode(3); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(3); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("ready again %v after restarts", time.Since(t0))
	ids, err := adm.Brokers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 {
		t.Fatalf("brokers %v, want 3", ids)
	}
}

func TestMajor(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{{"3.9.2", 3}, {"4.1.2", 4}, {"10.0", 10}, {"", 0}} {
		if got := Major(tc.in); got != tc.want {
			t.Errorf("Major(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// A cluster id starting with '-' (one in 64 random ids) must still format
// the storage: the storage tool once read it as an option and failed.
func TestFormatClusterIDStartingWithDash(t *testing.T) {
	SkipUnlessAvailable(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{Dir: t.TempDir(), Nodes: 1, ClusterID: "-AAAAAAAAAAAAAAAAAAAAA"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	if c.ClusterID() != "-AAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("cluster id = %q", c.ClusterID())
	}
}
