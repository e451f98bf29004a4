package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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
