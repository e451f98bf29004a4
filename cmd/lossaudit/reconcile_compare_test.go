package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lossaudit/lossaudit/audit/demo/copysim"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/testbed/poll"
)

// TestReconcileAndWatchCompare runs `lossaudit reconcile` and `lossaudit
// watch` on a comparison's configuration, a mirror growing round by round
// on an in-process cluster: the baseline, then an incremental step that
// reads only what is new, each reporting exactly the copies the simulator
// lost, with first_seen kept; the lost records replayed, the next step
// resolves them (exit 0); watch continues the same store, serving the step.
func TestReconcileAndWatchCompare(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sc := copysim.Scenario{Seed: 11, Match: copysim.MatchRecord, Group: "mirror", LossRate: 0.1, PendingRate: 0.2, PendingCopyRate: 0.5,
		Pairs: []copysim.PairSpec{{Name: "orders", Source: "orders", Sink: "dr.orders", Partitions: 2, SinkPartitions: 2, Records: 60}}}
	live, err := copysim.StartLive(ctx, brokers, sc, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dir := t.TempDir()
	csvPath, jsonPath := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out.json")
	prefix := live.Truth().Prefix
	yaml := writeConfig(t, fmt.Sprintf("kafka: {brokers: [%q]}\nstore: {dir: %q}\naudit: {settle_timeout: 2s}\nreport: {csv: %q, json: %q}\n"+
		"compare:\n  group: mirror\n  pairs:\n    - {name: orders, source: %sorders, sink: %sdr.orders}\n",
		brokers[0], filepath.Join(dir, "store"), csvPath, jsonPath, prefix, prefix))

	type report struct {
		Step struct {
			Number   int64
			Baseline bool
			Read     map[string]int64
		}
		Resolved []map[string]any
		Index    struct {
			RecordsRead int64 `json:"records_read"`
		}
	}
	firstSeen := map[string]string{}
	step := func(label string, wantCode int) report {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := testRun([]string{"reconcile", "-q", "-c", yaml}, &stdout, &stderr)
		if code != wantCode || !strings.Contains(stdout.String(), "Reconcile step") {
			t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", label, code, wantCode, stdout.String(), stderr.String())
		}
		// The CSV names exactly the records whose copies were lost, each
		// with the first_seen of the step that first reported it.
		f, err := os.Open(csvPath)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(f).ReadAll()
		f.Close()
		if err != nil || len(recs) == 0 || recs[0][len(recs[0])-1] != "first_seen" {
			t.Fatalf("%s: CSV %v (%v), want a header ending in first_seen", label, recs, err)
		}
		var got, want []string
		for _, r := range recs[1:] {
			id := fmt.Sprintf("%s %s[%s]@%s", r[0], r[4], r[5], r[6])
			got = append(got, id)
			if fs, ok := firstSeen[id]; ok && fs != r[len(r)-1] {
				t.Errorf("%s: %s first seen %s, earlier %s", label, id, r[len(r)-1], fs)
			}
			firstSeen[id] = r[len(r)-1]
		}
		for _, r := range live.Truth().Rows {
			want = append(want, fmt.Sprintf("%s %s[%d]@%d", r.Kind, r.Topic, r.Partition, r.Offset))
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: CSV rows\n  %v\nwant the lost copies\n  %v", label, got, want)
		}
		var rep report
		if b, err := os.ReadFile(jsonPath); err != nil {
			t.Fatal(err)
		} else if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}

	if err := live.Advance(ctx); err != nil {
		t.Fatal(err)
	}
	first := step("baseline", exitFindings)
	if !first.Step.Baseline || first.Step.Number != 1 {
		t.Errorf("baseline: step %+v", first.Step)
	}
	if err := live.Advance(ctx); err != nil {
		t.Fatal(err)
	}
	second := step("step 2", exitFindings)
	// Step 2 reads the records new since the baseline and the pending
	// ones again: fewer than the baseline and round 2 hold together.
	if second.Step.Number != 2 || second.Step.Baseline || second.Step.Read["source"] == 0 || second.Step.Read["sink"] == 0 ||
		second.Index.RecordsRead >= first.Index.RecordsRead*2 {
		t.Errorf("step 2: %+v, read %d records (the baseline %d)", second.Step, second.Index.RecordsRead, first.Index.RecordsRead)
	}
	var lost []finding.Row
	for _, r := range live.Truth().Rows {
		lost = append(lost, finding.Row{Kind: r.Kind, Input: r.Input, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset})
	}
	if len(lost) == 0 {
		t.Fatal("the scenario lost no copy: the test would prove nothing")
	}
	if err := live.Replay(ctx, lost); err != nil {
		t.Fatal(err)
	}
	third := step("after the replay", exitOK)
	if len(third.Resolved) != len(lost) {
		t.Errorf("after the replay: %d resolved, want %d", len(third.Resolved), len(lost))
	}

	// watch continues the same store.
	if err := live.Advance(ctx); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	wctx, stop := context.WithCancelCause(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- execute(wctx, newTestRootCmd(&stdout, &stderr), []string{"watch", "-c", yaml, "--interval", "200ms", "--listen", addr, "--log-format", "json"}, &stderr)
	}()
	var code int
	var body string
	if err := poll.Until(ctx, 90*time.Second, 50*time.Millisecond, "watch at step 5", func() bool {
		code, body = httpGet("http://" + addr + "/metrics")
		return code == 200 && strings.Contains(body, "lossaudit_step_number 5")
	}); err != nil {
		t.Errorf("%v: /metrics %d\n%s\nstderr:\n%s", err, code, body, stderr.String())
	}
	if code, body := httpGet("http://" + addr + "/report.json"); code != 200 || !strings.Contains(body, `"compare": {`) || !strings.Contains(body, `"step": {`) {
		t.Errorf("/report.json %d:\n%.2000s", code, body)
	}
	if code, body := httpGet("http://" + addr + "/"); code != 200 || !strings.Contains(body, "<html") || !strings.Contains(body, `id="verdict-line"`) {
		t.Errorf("/ %d:\n%.300s", code, body)
	}
	stop(&interrupted{sig: syscall.SIGTERM})
	select {
	case code := <-done:
		if code != 143 {
			t.Errorf("watch exited %d after SIGTERM, want 143\n%s", code, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("watch did not stop after SIGTERM")
	}
	if !strings.Contains(stderr.String(), `"read_source":`) || !strings.Contains(stderr.String(), `"read_sink":`) {
		t.Errorf("watch's step lines do not say what was read of sources and sinks:\n%s", stderr.String())
	}
}
