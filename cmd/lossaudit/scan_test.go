package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/testbed/testbedenv"
)

var updateGolden = flag.Bool("update", false, "rewrite the testdata/*.golden files")

const changelogTopic = "myapp-KSTREAM-REDUCE-STATE-STORE-0000000002-changelog"

// scanFixture starts a 3-broker kfake cluster holding deterministic data:
// committed, aborted and open transactions, plain writes, null and empty
// values, fixed timestamps. It returns a config file pointing at it.
func scanFixture(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "orders"),
		kfake.SeedTopics(1, "joined", changelogTopic, "unrelated"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Far in the past, so that transaction markers (stamped with the wall
	// clock) are always later than the data, whatever the clock says.
	base := time.Date(2021, 3, 4, 5, 6, 7, 89e6, time.UTC)
	n := 0
	rec := func(topic string, part int32, value []byte) *kgo.Record {
		n++
		return &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprintf("k%d", n)), Value: value,
			Timestamp: base.Add(time.Duration(n) * time.Second)}
	}
	client := func(txnID string) *kgo.Client {
		opts := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner())}
		if txnID != "" {
			opts = append(opts, kgo.TransactionalID(txnID))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		return cl
	}
	produce := func(cl *kgo.Client, rs ...*kgo.Record) {
		t.Helper()
		for _, r := range rs {
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	txn := func(id string, commit bool, rs ...*kgo.Record) *kgo.Client {
		t.Helper()
		cl := client(id)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		produce(cl, rs...)
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
		return cl
	}
	plain := client("")

	produce(plain, rec("orders", 0, []byte("o1")))
	txn("a", true, rec("orders", 0, []byte("o2")), rec("orders", 0, []byte("o3")), rec("orders", 1, []byte("o4")))
	txn("b", false, rec("orders", 0, []byte("x1")), rec("orders", 1, []byte("x2")))
	produce(plain, rec("orders", 0, nil), rec("joined", 0, []byte("j1")), rec("joined", 0, []byte("j2")))
	txn("c", true, rec(changelogTopic, 0, []byte("s1")), rec(changelogTopic, 0, []byte{}))
	produce(plain, rec("unrelated", 0, []byte("u1")))
	// A transaction left open on orders[1], then a plain write above it.
	open := client("d")
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	produce(open, rec("orders", 1, []byte("d1")))
	produce(plain, rec("orders", 1, []byte("o5")))

	return writeConfig(t, fmt.Sprintf(`kafka:
  brokers: ["%s"]
pipeline:
  application_id: myapp
  output: joined
  inputs:
    - name: a
      topic: orders
`, strings.Join(c.ListenAddrs(), `", "`)))
}

// runScan runs `lossaudit scan args...` in-process with a short retry
// budget and returns the exit code, stdout and stderr.
func runScan(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	g := &globalFlags{ignoreEnv: testbedenv.Is}
	var stdout, stderr bytes.Buffer
	tweak := func(o *kread.Options) {
		o.MaxRetries, o.RetryBackoff, o.Timeout = 3, 10*time.Millisecond, 2*time.Second
	}
	root := buildRoot(g, &stdout, &stderr, newScanCmdWith(g, tweak))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := execute(ctx, root, append([]string{"scan"}, args...), &stderr)
	return code, stdout.String(), stderr.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestScanGolden(t *testing.T) {
	clearEnv(t)
	cfg := scanFixture(t)
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{"pipeline topics as JSON", []string{"-c", cfg, "--json"}, "scan.json.golden"},
		{"named topics as a table", []string{"-c", cfg, "--topic", "orders", "--topic", "unrelated"}, "scan_table.golden"},
		{"time window as a table", []string{"-c", cfg, "--from", "2021-03-04T05:06:10Z", "--to", "2021-03-04T05:06:16Z"}, "scan_window.golden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runScan(t, tc.args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			checkGolden(t, tc.golden, out)
		})
	}
}

func TestScanErrors(t *testing.T) {
	clearEnv(t)
	cfg := scanFixture(t)
	unreachable := writeConfig(t, "kafka:\n  brokers: [\"127.0.0.1:1\"]\n")
	noTopics := writeConfig(t, "kafka:\n  brokers: [\"127.0.0.1:1\"]\n")
	tests := []struct {
		name      string
		args      []string
		code      int
		stderrHas []string
	}{
		{"unknown topic is named", []string{"-c", cfg, "--topic", "orders", "--topic", "no-such-topic"}, exitUsage,
			[]string{`"no-such-topic"`, "does not exist"}},
		{"cluster unreachable", []string{"-c", unreachable, "--topic", "orders"}, exitIncomplete,
			[]string{"127.0.0.1:1", "giving up after 3 attempts"}},
		{"nothing to scan", []string{"-c", noTopics}, exitUsage, []string{"pass --topic"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runScan(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
			for _, s := range tc.stderrHas {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr %q lacks %q", errOut, s)
				}
			}
		})
	}
}

// TestScanTopics: with no --topic, scan scans the inputs, the output, the
// internal topics the configuration names or the topology file derives
// (even when the listing hides them: a principal without DESCRIBE on them)
// and the listed <application_id>-* topics, each once.
func TestScanTopics(t *testing.T) {
	cfg := &config.Config{}
	cfg.Pipeline.ApplicationID = "app"
	cfg.Pipeline.Output = "out"
	cfg.Pipeline.Inputs = []config.Input{{Name: "a", Topic: "in-a"}, {Name: "b", Topic: "in-b", ChangelogTopic: "app-b-changelog"}}
	listed := func() ([]string, error) { return []string{"in-a", "app-x-repartition", "other"}, nil }
	for _, tc := range []struct {
		name    string
		flagged []string
		derived func() []string
		want    []string
	}{
		{"flags only", []string{"t1", "t2", "t1"}, nil, []string{"t1", "t2"}},
		{"no topology file", nil, nil, []string{"in-a", "in-b", "out", "app-b-changelog", "app-x-repartition"}},
		{"derived from the topology file, hidden from the listing", nil, func() []string { return []string{"app-s-repartition", "app-b-changelog"} },
			[]string{"in-a", "in-b", "out", "app-b-changelog", "app-s-repartition", "app-x-repartition"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := scanTopics(cfg, tc.flagged, listed, tc.derived)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("scanTopics = %v, want %v", got, tc.want)
			}
		})
	}
}
