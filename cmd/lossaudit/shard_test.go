package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/audit/shard/shardtest"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

// TestShardedAuditCommand runs `lossaudit audit --shards 2` as two
// processes of an Indexed Job would (index 0 from JOB_COMPLETION_INDEX,
// index 1 from --shard-index): index 0 writes the CSV a single audit
// writes and exits with its verdict, index 1 exits 0; a shard of another
// run, an index out of range and a windowed audit are refused (exit 2).
func TestShardedAuditCommand(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	cfg := f.yaml(t, nil)
	dir := t.TempDir()
	single := filepath.Join(dir, "single.csv")
	var stdout, stderr bytes.Buffer
	if code := testRun([]string{"audit", "-q", "-c", cfg, "--csv", single, "--store-dir", filepath.Join(dir, "single")}, &stdout, &stderr); code != 0 {
		t.Fatalf("single audit: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	shards, sharded := filepath.Join(dir, "shards"), filepath.Join(dir, "sharded.csv")
	t.Setenv("JOB_COMPLETION_INDEX", "0")
	args := func(store string, extra ...string) []string {
		return append([]string{"audit", "-q", "-c", cfg, "--csv", sharded, "--store-dir", filepath.Join(dir, store), "--shards", "2", "--shard-dir", shards}, extra...)
	}
	var wg sync.WaitGroup
	codes := make([]int, 2)
	outs := make([]bytes.Buffer, 2)
	errs := make([]bytes.Buffer, 2)
	for i, a := range [][]string{args("s0"), args("s1", "--shard-index", "1")} {
		wg.Add(1)
		go func(i int, a []string) {
			defer wg.Done()
			codes[i] = testRun(a, &outs[i], &errs[i])
		}(i, a)
	}
	wg.Wait()
	for i, want := range []string{"NO LOSS FOUND", ""} {
		if codes[i] != 0 || !strings.Contains(outs[i].String(), want) {
			t.Errorf("shard %d: exit %d, want 0 and %q on stdout\nstdout:\n%s\nstderr:\n%s", i, codes[i], want, outs[i].String(), errs[i].String())
		}
	}
	if !strings.Contains(errs[1].String(), "index 0 writes the reports") || !strings.Contains(errs[1].String(), "shard 1 of 2 (run ") {
		t.Errorf("shard 1's stderr does not say what it did and who writes the reports:\n%s", errs[1].String())
	}
	want, err := os.ReadFile(single)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(sharded)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the sharded CSV differs from the single audit's:\n got %s\nwant %s", got, want)
	}

	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"another shard count on the same directory", []string{"audit", "-q", "-c", cfg, "--store-dir", filepath.Join(dir, "x"), "--shards", "3", "--shard-dir", shards},
			"--shard-dir: " + filepath.Join(shards, "manifest") + " is of a run of 2 shards, this shard is one of 3"},
		{"an index out of range", []string{"audit", "-q", "-c", cfg, "--shards", "2", "--shard-index", "2", "--shard-dir", shards},
			`--shard-index: shard-index "2" is not a shard index of 0 to 1`},
		{"no shard directory", []string{"audit", "-q", "-c", cfg, "--shards", "2"}, "--shard-dir: a sharded audit needs the directory its shards share"},
		{"no poll interval", []string{"audit", "-q", "-c", cfg, "--shards", "2", "--shard-dir", shards, "--shard-poll", "0s"}, "--shard-poll: give a positive duration"},
		{"a windowed audit", []string{"audit", "-q", "-c", cfg, "--store-dir", filepath.Join(dir, "y"), "--shards", "2", "--shard-dir", filepath.Join(dir, "other"), "--from", "2026-01-01T00:00:00Z"},
			"the audit cannot be sharded: a windowed audit (window.from, window.to) is not sharded yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := testRun(tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, want 2 and %q on stderr\nstdout:\n%s\nstderr:\n%s", code, tt.stderr, stdout.String(), stderr.String())
			}
		})
	}
}

// normalJSON is a JSON report without what differs between two audits of
// the same snapshot: when they ran, the phases' timings, and which decode
// errors were read first (only their number is kept).
func normalJSON(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, k := range []string{"started", "finished", "timings"} {
		delete(v, k)
	}
	if ds, ok := v["decode_error_samples"].([]any); ok {
		v["decode_error_samples"] = len(ds)
	}
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestShardedAuditProcesses runs a sharded audit as three lossaudit
// processes, each told its index by JOB_COMPLETION_INDEX as an Indexed
// Job's pods are: index 1 is killed (SIGKILL) at its first map entry,
// index 2 once its map output is complete but not marked, and index 0 once
// it has merged (and removed the killed attempts' files) but before it
// writes its reports, and each is run again; the reports index 0 writes equal a single audit's (timings
// aside). The peak RSS of every process is logged.
func TestShardedAuditProcesses(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	cfg := f.yaml(t, nil)
	dir := t.TempDir()
	bin, err := lossauditBinary()
	if err != nil {
		t.Fatal(err)
	}
	run := func(label string, env []string, args ...string) (int, syscall.Signal, string) {
		code, sig, stderr, _ := runAudit(t, bin, label, cfg, env, args...)
		return code, sig, stderr
	}
	report := func(name string) []string {
		return []string{"--csv", filepath.Join(dir, name+".csv"), "--json", filepath.Join(dir, name+".json")}
	}
	if code, sig, stderr := run("single audit", nil, append(report("single"), "--store-dir", filepath.Join(dir, "single"))...); code != 0 || sig != 0 {
		t.Fatalf("single audit: exit %d signal %v\n%s", code, sig, stderr)
	}
	crash := map[int]string{0: "shard-merged", 1: "shard-map-entry", 2: "shard-map-written"}
	var wg sync.WaitGroup
	msgs := make([]string, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			env := []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)}
			args := append(report("sharded"), "--shards", "3", "--shard-dir", filepath.Join(dir, "shards"), "--store-dir", filepath.Join(dir, fmt.Sprintf("s%d", i)))
			if at := crash[i]; at != "" {
				code, sig, stderr := run(fmt.Sprintf("shard %d killed at %s", i, at), append(env, "LOSSAUDIT_TESTBED_CRASH_AT="+at), args...)
				if sig != syscall.SIGKILL {
					msgs[i] = fmt.Sprintf("shard %d with a crash at %s: exit %d signal %v, want SIGKILL\n%s", i, at, code, sig, stderr)
					return
				}
			}
			if code, sig, stderr := run(fmt.Sprintf("shard %d", i), env, args...); code != 0 || sig != 0 {
				msgs[i] = fmt.Sprintf("shard %d: exit %d signal %v\n%s", i, code, sig, stderr)
			}
		}(i)
	}
	wg.Wait()
	for _, m := range msgs {
		if m != "" {
			t.Fatal(m)
		}
	}
	// The killed attempts' files went at the merge; the marked ones stayed
	// for index 0's rerun.
	for _, part := range []string{"map-0", "map-1", "map-2", "reduce-0", "reduce-1", "reduce-2"} {
		if left, _ := filepath.Glob(filepath.Join(dir, "shards", "run-*", part, "*")); len(left) != 1 {
			t.Errorf("%s: %d attempts left, want the marked one: %v", part, len(left), left)
		}
	}
	want, _ := os.ReadFile(filepath.Join(dir, "single.csv"))
	got, err := os.ReadFile(filepath.Join(dir, "sharded.csv"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the sharded CSV (%v) differs from the single audit's:\n got %s\nwant %s", err, got, want)
	}
	if g, w := normalJSON(t, filepath.Join(dir, "sharded.json")), normalJSON(t, filepath.Join(dir, "single.json")); g != w {
		t.Errorf("the sharded JSON differs from the single audit's:\n got %s\nwant %s", g, w)
	}
}

// processExit returns the exit code of a child process that ended with
// err, or -1 and the signal that killed it.
func processExit(t *testing.T, err error) (int, syscall.Signal) {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, 0
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return -1, ws.Signal()
		}
		return ws.ExitStatus(), 0
	}
	t.Fatal(err)
	return 0, 0
}

// runAudit runs `lossaudit audit -q -c cfg args...` as a child process with
// env added and returns its exit code (or the signal that killed it), its
// stderr and its wall time; its peak RSS is logged under label.
func runAudit(t *testing.T, bin, label, cfg string, env []string, args ...string) (int, syscall.Signal, string, time.Duration) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"audit", "-q", "-c", cfg}, args...)...)
	cmd.Env = append(testbedenv.Strip(os.Environ()), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	// The child's own peak RSS: VmHWM of its /proc status, sampled until
	// it exits (the rusage of a child started by vfork counts the parent's
	// memory at the fork: this test's in-process cluster).
	var hwm atomic.Int64
	done := make(chan struct{})
	go func() {
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if b, err := os.ReadFile(status); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						if v, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(kb, "kB")), 10, 64); err == nil && v > hwm.Load() {
							hwm.Store(v)
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	took := time.Since(began)
	t.Logf("%s: %s, peak RSS at least %d MiB (VmHWM sampled every 20 ms)", label, took.Round(time.Millisecond), hwm.Load()>>10)
	code, sig := processExit(t, err)
	return code, sig, stderr.String(), took
}

// TestShardedAuditProcessesMeasure (LOSSAUDIT_SHARD_MEASURE=records per
// input; skipped without) audits a larger simulated pipeline once in one
// process and as 1, 2 and 4 processes at once: the wall time of each run
// and the peak RSS of every process are logged, and the reports must be
// equal.
func TestShardedAuditProcessesMeasure(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("LOSSAUDIT_SHARD_MEASURE"))
	if n <= 0 {
		t.Skip("LOSSAUDIT_SHARD_MEASURE (records per input) is not set")
	}
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	sc := sim.RandomScenario(54)
	sc.AppID, sc.TopicPrefix, sc.Output = "pmeasure", "pmeasure-topic", "pmeasure-joined"
	sc.Partitions, sc.Keys, sc.RecordsPerInput, sc.Rounds = 8, n/10, n, 20
	truth, err := sim.Run(context.Background(), cluster.ListenAddrs(), sc)
	if err != nil {
		t.Fatal(err)
	}
	f := &pipelineFixture{brokers: cluster.ListenAddrs(), truth: truth}
	cfg := f.yaml(t, nil)
	dir := t.TempDir()
	bin, err := lossauditBinary()
	if err != nil {
		t.Fatal(err)
	}
	report := func(name string) []string {
		return []string{"--csv", filepath.Join(dir, name+".csv"), "--json", filepath.Join(dir, name+".json")}
	}
	if code, sig, stderr, _ := runAudit(t, bin, "single audit", cfg, nil, append(report("single"), "--store-dir", filepath.Join(dir, "single"))...); sig != 0 || code > 1 {
		t.Fatalf("single audit: exit %d signal %v\n%s", code, sig, stderr)
	}
	want := normalJSON(t, filepath.Join(dir, "single.json"))
	for _, shards := range []int{1, 2, 4} {
		var wg sync.WaitGroup
		msgs := make([]string, shards)
		began := time.Now()
		for i := 0; i < shards; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				name := fmt.Sprintf("n%d", shards)
				code, sig, stderr, _ := runAudit(t, bin, fmt.Sprintf("%d shards, index %d", shards, i), cfg, []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)},
					append(report(name), "--shards", strconv.Itoa(shards), "--shard-dir", filepath.Join(dir, name), "--store-dir", filepath.Join(dir, fmt.Sprintf("%s-s%d", name, i)))...)
				if sig != 0 || code > 1 || (i > 0 && code != 0) {
					msgs[i] = fmt.Sprintf("%d shards, index %d: exit %d signal %v\n%s", shards, i, code, sig, stderr)
				}
				if i == 1 || shards == 1 {
					t.Logf("%d shards, index %d: %s", shards, i, strings.TrimSpace(stderr))
				}
			}(i)
		}
		wg.Wait()
		t.Logf("%d shards: %s wall time", shards, time.Since(began).Round(time.Millisecond))
		for _, m := range msgs {
			if m != "" {
				t.Fatal(m)
			}
		}
		if got := normalJSON(t, filepath.Join(dir, fmt.Sprintf("n%d.json", shards))); got != want {
			t.Errorf("%d shards: the JSON differs from the single audit's", shards)
		}
	}
}

// TestShardedAuditProcessesS3 runs a sharded audit as two lossaudit
// processes sharing an S3 bucket (an in-process S3 server on loopback,
// reached through the standard AWS environment): index 1 is killed
// (SIGKILL) at its first map entry and run again; the reports index 0
// writes equal a single audit's (timings aside). Then what a user meets:
// a missing bucket and refused credentials exit 2 naming them, an
// endpoint that does not answer exits 3, a server that ignores
// conditional writes exits 2; the secret key is never printed.
func TestShardedAuditProcessesS3(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	cfg := f.yaml(t, nil)
	dir := t.TempDir()
	bin, err := lossauditBinary()
	if err != nil {
		t.Fatal(err)
	}
	srv := shardtest.Start(t, "audits")
	var s3env []string
	for k, v := range srv.Environ() {
		s3env = append(s3env, k+"="+v)
	}
	run := func(label string, env []string, args ...string) (int, syscall.Signal, string) {
		code, sig, stderr, _ := runAudit(t, bin, label, cfg, append(env, s3env...), args...)
		if strings.Contains(stderr, shardtest.SecretKey) {
			t.Errorf("%s: the secret key is on stderr:\n%s", label, stderr)
		}
		return code, sig, stderr
	}
	report := func(name string) []string {
		return []string{"--csv", filepath.Join(dir, name+".csv"), "--json", filepath.Join(dir, name+".json")}
	}
	if code, sig, stderr := run("single audit", nil, append(report("single"), "--store-dir", filepath.Join(dir, "single"))...); code != 0 || sig != 0 {
		t.Fatalf("single audit: exit %d signal %v\n%s", code, sig, stderr)
	}
	shards := "s3://audits/lossaudit/run-1"
	var wg sync.WaitGroup
	msgs := make([]string, 2)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			env := []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)}
			args := append(report("sharded"), "--shards", "2", "--shard-dir", shards, "--shard-s3-path-style", "--shard-poll", "100ms", "--store-dir", filepath.Join(dir, fmt.Sprintf("s%d", i)))
			if i == 1 {
				code, sig, stderr := run("shard 1 killed at its first map entry", append(env, "LOSSAUDIT_TESTBED_CRASH_AT=shard-map-entry"), args...)
				if sig != syscall.SIGKILL {
					msgs[i] = fmt.Sprintf("shard 1 with a crash: exit %d signal %v, want SIGKILL\n%s", code, sig, stderr)
					return
				}
			}
			if code, sig, stderr := run(fmt.Sprintf("shard %d", i), env, args...); code != 0 || sig != 0 {
				msgs[i] = fmt.Sprintf("shard %d: exit %d signal %v\n%s", i, code, sig, stderr)
			}
		}(i)
	}
	wg.Wait()
	for _, m := range msgs {
		if m != "" {
			t.Fatal(m)
		}
	}
	want, _ := os.ReadFile(filepath.Join(dir, "single.csv"))
	got, err := os.ReadFile(filepath.Join(dir, "sharded.csv"))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the sharded CSV (%v) differs from the single audit's:\n got %s\nwant %s", err, got, want)
	}
	if g, w := normalJSON(t, filepath.Join(dir, "sharded.json")), normalJSON(t, filepath.Join(dir, "single.json")); g != w {
		t.Errorf("the sharded JSON differs from the single audit's:\n got %s\nwant %s", g, w)
	}

	// An endpoint where nothing listens: a port just closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	for _, tt := range []struct {
		name   string
		env    []string
		dir    string
		code   int
		stderr string
	}{
		{"a missing bucket", nil, "s3://nobucket/x", 2, "--shard-dir: s3://nobucket: the bucket does not exist at " + srv.URL},
		{"refused credentials", []string{"AWS_ACCESS_KEY_ID=someone-else"}, "s3://audits/y", 2, "--shard-dir: s3://audits: access denied by " + srv.URL + " (AccessDenied: check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy)"},
		{"an endpoint that does not answer", []string{"AWS_ENDPOINT_URL_S3=" + closed}, "s3://audits/z", 3, "the S3 endpoint " + closed + " is unreachable"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := append(append([]string{"JOB_COMPLETION_INDEX=0"}, s3env...), tt.env...)
			code, _, stderr, _ := runAudit(t, bin, tt.name, cfg, env, "--shards", "2", "--shard-dir", tt.dir, "--shard-s3-path-style", "--store-dir", filepath.Join(dir, "x"))
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d, want %d and %q on stderr:\n%s", code, tt.code, tt.stderr, stderr)
			}
			if strings.Contains(stderr, shardtest.SecretKey) {
				t.Errorf("the secret key is on stderr:\n%s", stderr)
			}
		})
	}
	t.Run("a server that ignores conditional writes", func(t *testing.T) {
		srv.IgnoreConditions.Store(true)
		defer srv.IgnoreConditions.Store(false)
		code, _, stderr := run("no conditional writes", []string{"JOB_COMPLETION_INDEX=0"}, "--shards", "2", "--shard-dir", "s3://audits/w", "--shard-s3-path-style", "--store-dir", filepath.Join(dir, "w"))
		if want := "ignores conditional writes (If-None-Match: *)"; code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, want 2 and %q on stderr:\n%s", code, want, stderr)
		}
	})
}

// TestShardedReconcileCommand runs `lossaudit reconcile --shards 2` as the
// two pods of an Indexed Job would, step after step of a growing lossy
// pipeline: index 0 writes the reports the single-process step writes of
// the same moment and exits with its verdict, index 1 exits 0, each
// keeping its state in <store.dir>/shard-<i>; watch takes no --shards, and
// what reconcile refuses stays refused (exit 2).
func TestShardedReconcileCommand(t *testing.T) {
	clearEnv(t)
	f := newLiveFixture(t, lossyScenario(12, "shrec"))
	single, sharded := f.store(t), f.store(t)
	shards := filepath.Join(t.TempDir(), "shards")
	findings := 0
	for step := 1; step <= 3; step++ {
		f.advance(t, 5)
		var stdout, stderr bytes.Buffer
		want := testRun([]string{"reconcile", "-q", "-c", single.yaml}, &stdout, &stderr)
		if want != 0 && want != 1 {
			t.Fatalf("step %d, single: exit %d\n%s", step, want, stderr.String())
		}
		findings += want
		var wg sync.WaitGroup
		codes := make([]int, 2)
		outs, errs := make([]bytes.Buffer, 2), make([]bytes.Buffer, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				codes[i] = testRun([]string{"reconcile", "-q", "-c", sharded.yaml, "--shards", "2", "--shard-index", strconv.Itoa(i), "--shard-dir", shards,
					"--shard-poll", "20ms", "--shard-job", fmt.Sprintf("job-%d", step)}, &outs[i], &errs[i])
			}()
		}
		wg.Wait()
		if codes[0] != want || codes[1] != 0 {
			t.Fatalf("step %d: exits %v, want %d (the single step's) and 0\nindex 0:\n%s%s\nindex 1:\n%s", step, codes, want, outs[0].String(), errs[0].String(), errs[1].String())
		}
		if !strings.Contains(errs[1].String(), fmt.Sprintf("shard 1 of 2, step %d (run ", step)) {
			t.Errorf("step %d: index 1's stderr does not name the step:\n%s", step, errs[1].String())
		}
		sameStep(t, fmt.Sprintf("step %d", step), readReport(t, sharded), readReport(t, single))
	}
	if findings == 0 {
		t.Errorf("no step found loss: the equality holds vacuously")
	}
	for i := range 2 {
		if _, err := os.Stat(filepath.Join(filepath.Dir(sharded.csv), "store", fmt.Sprintf("shard-%d", i), app.StateDir)); err != nil {
			t.Errorf("index %d's state: %v", i, err)
		}
	}
	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"watch", []string{"watch", "-c", sharded.yaml, "--shards", "2"}, "unknown flag: --shards"},
		{"a windowed step", []string{"reconcile", "-q", "-c", sharded.yaml, "--shards", "2", "--shard-index", "0", "--shard-dir", filepath.Join(t.TempDir(), "w"), "--from", "-1h"},
			"not sharded yet"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := testRun(tt.args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("exit %d, want 2 and %q on stderr\nstdout:\n%s\nstderr:\n%s", code, tt.stderr, stdout.String(), stderr.String())
			}
		})
	}
}

// TestShardedReconcileProcesses runs two sharded reconcile steps as three
// lossaudit processes each (JOB_COMPLETION_INDEX), with SIGKILLs where a
// step's state is at risk: at the baseline index 0 after its reports but
// before the step's commit point, index 1 while its state's commit is
// applied (after the state's commit point), index 2 mid-map; at the second
// step index 1 after committing its state, before marking its reduce.
// Each is run again; the CSV of every step equals the single-process
// step's (first_seen aside).
func TestShardedReconcileProcesses(t *testing.T) {
	clearEnv(t)
	f := fixture(t)
	cfg := f.yaml(t, nil)
	dir := t.TempDir()
	bin, err := lossauditBinary()
	if err != nil {
		t.Fatal(err)
	}
	run := func(env []string, args ...string) (int, syscall.Signal, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"reconcile", "-q", "-c", cfg}, args...)...)
		cmd.Env = append(testbedenv.Strip(os.Environ()), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		code, sig := processExit(t, cmd.Run())
		return code, sig, stderr.String()
	}
	// The CSV without first_seen (its last column).
	csvOf := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name+".csv"))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			if i := strings.LastIndex(l, ","); i >= 0 {
				l = l[:i]
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}
	crashes := []map[int]string{{0: "shard-reported", 1: "applying", 2: "shard-map-entry"}, {1: "shard-reduce-committed"}}
	for step, crash := range crashes {
		if code, sig, stderr := run(nil, "--csv", filepath.Join(dir, "single.csv"), "--json", filepath.Join(dir, "single.json"), "--store-dir", filepath.Join(dir, "single")); code != 0 || sig != 0 {
			t.Fatalf("step %d, single: exit %d signal %v\n%s", step+1, code, sig, stderr)
		}
		var wg sync.WaitGroup
		msgs := make([]string, 3)
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				env := []string{fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i)}
				args := []string{"--csv", filepath.Join(dir, "sharded.csv"), "--json", filepath.Join(dir, "sharded.json"), "--shards", "3", "--shard-dir", filepath.Join(dir, "shards"),
					"--store-dir", filepath.Join(dir, "states"), "--shard-poll", "50ms", "--shard-job", fmt.Sprintf("job-%d", step)}
				if at := crash[i]; at != "" {
					if code, sig, stderr := run(append(env, "LOSSAUDIT_TESTBED_CRASH_AT="+at), args...); sig != syscall.SIGKILL {
						msgs[i] = fmt.Sprintf("step %d, index %d with a crash at %s: exit %d signal %v, want SIGKILL\n%s", step+1, i, at, code, sig, stderr)
						return
					}
				}
				if code, sig, stderr := run(env, args...); code != 0 || sig != 0 {
					msgs[i] = fmt.Sprintf("step %d, index %d: exit %d signal %v\n%s", step+1, i, code, sig, stderr)
				}
			}()
		}
		wg.Wait()
		for _, m := range msgs {
			if m != "" {
				t.Fatal(m)
			}
		}
		if g, w := csvOf("sharded"), csvOf("single"); g != w {
			t.Errorf("step %d: the sharded CSV differs from the single step's:\n got %s\nwant %s", step+1, g, w)
		}
		// The JSON: counters, what the step read, keys judged (first_seen,
		// baseline_at and previous aside).
		g, w := readReport(t, store{json: filepath.Join(dir, "sharded.json")}), readReport(t, store{json: filepath.Join(dir, "single.json")})
		for _, k := range []string{"baseline_at", "previous"} {
			delete(g.Step, k)
			delete(w.Step, k)
		}
		sameStep(t, fmt.Sprintf("step %d", step+1), g, w)
		if gs, ws := fmt.Sprint(g.Step), fmt.Sprint(w.Step); gs != ws {
			t.Errorf("step %d: the sharded step block %s, the single step's %s", step+1, gs, ws)
		}
		if _, err := os.Stat(filepath.Join(dir, "shards", fmt.Sprintf("step-%d", step+1), "merged")); err != nil {
			t.Errorf("step %d is not committed: %v", step+1, err)
		}
	}
}
