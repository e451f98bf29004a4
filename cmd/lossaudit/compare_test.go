package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lossaudit/lossaudit/audit/demo/copysim"
)

// TestCompareCommand runs `lossaudit compare` on a simulated mirror: exit 1
// with the findings in the CSV, and exit 2 with one line naming the key for
// the configuration mistakes a user makes.
func TestCompareCommand(t *testing.T) {
	clearEnv(t)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	brokers := cluster.ListenAddrs()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	sc := copysim.Scenario{Seed: 7, Match: copysim.MatchRecord, LossRate: 0.2,
		Pairs: []copysim.PairSpec{{Name: "orders", Source: "orders", Sink: "dr.orders", Partitions: 2, SinkPartitions: 2, Records: 50}}}
	tr, err := copysim.Run(ctx, brokers, sc, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Rows) == 0 {
		t.Fatal("the scenario lost no copy: the test would prove nothing")
	}
	yaml := fmt.Sprintf("kafka: {brokers: [%q]}\nstore: {dir: %q}\ncompare:\n  pairs:\n    - {name: orders, source: %sorders, sink: %sdr.orders}\n",
		brokers[0], filepath.Join(dir, "index"), tr.Prefix, tr.Prefix)
	good := writeConfig(t, yaml)
	missingTopic := writeConfig(t, strings.Replace(yaml, "dr.orders}", "dr.nothing}", 1))
	csvPath, htmlPath, jsonPath := filepath.Join(dir, "out.csv"), filepath.Join(dir, "out.html"), filepath.Join(dir, "out.json")

	var stdout, stderr bytes.Buffer
	code := testRun([]string{"compare", "-c", good, "--csv", csvPath, "--html", htmlPath, "--json", jsonPath, "-q"}, &stdout, &stderr)
	if code != exitFindings {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFindings, stdout.String(), stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "LOSS FOUND: ") {
		t.Errorf("summary does not start with the verdict:\n%s", stdout.String())
	}
	b, err := os.ReadFile(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\nmissing,sink,orders,"); n != len(tr.Rows) {
		t.Errorf("CSV has %d missing rows, want %d:\n%s", n, len(tr.Rows), b)
	}
	// The JSON report says how much evidence was kept: every source and
	// sink record read, one index entry each.
	var rep struct {
		Inputs  []struct{ Scanned int64 }
		Compare struct {
			Pairs []struct {
				SinkRecords int64 `json:"sink_records"`
			}
		}
		Index struct {
			RecordsRead int64 `json:"records_read"`
			Entries     int64
		}
	}
	if b, err := os.ReadFile(jsonPath); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Inputs) != 1 || len(rep.Compare.Pairs) != 1 {
		t.Fatalf("JSON report: %+v", rep)
	}
	if read := rep.Inputs[0].Scanned + rep.Compare.Pairs[0].SinkRecords; rep.Index.RecordsRead != read || rep.Index.Entries != read {
		t.Errorf("JSON index = %+v, want %d records read and as many entries", rep.Index, read)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(page), `<td class="kind">missing</td>`); !strings.Contains(string(page), `<h1 id="verdict-line">LOSS FOUND: `) || n != len(tr.Rows) {
		t.Errorf("HTML report: %d missing rows (want %d), or no LOSS FOUND verdict", n, len(tr.Rows))
	}

	for _, tt := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"missing sink topic", []string{"compare", "-c", missingTopic, "-q"},
			"lossaudit: " + missingTopic + ":5: compare.pairs[0].sink: topic " + tr.Prefix + "dr.nothing does not exist on the source cluster\n"},
		{"missing ledger file", []string{"compare", "-c", good, "--ledger", filepath.Join(dir, "nope.jsonl"), "-q"},
			"lossaudit: --ledger: cannot read " + filepath.Join(dir, "nope.jsonl") + ": no such file or directory\n"},
		{"a flag compare does not take", []string{"compare", "-c", good, "--from", "-1h", "-q"},
			"lossaudit: unknown flag: --from\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := testRun(tt.args, &stdout, &stderr); code != exitUsage || stderr.String() != tt.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), exitUsage, tt.stderr)
			}
		})
	}
	t.Run("malformed ledger line", func(t *testing.T) {
		ledger := filepath.Join(dir, "bad.jsonl")
		if err := os.WriteFile(ledger, []byte("{\"name\":\"startup_complete\"}\nnot json\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		code := testRun([]string{"compare", "-c", good, "--ledger", ledger, "-q"}, &stdout, &stderr)
		if want := "lossaudit: --ledger: " + ledger + ": line 2: not a JSON object"; code != exitUsage || !strings.HasPrefix(stderr.String(), want) {
			t.Errorf("exit %d, stderr %q; want %d and a line starting %q", code, stderr.String(), exitUsage, want)
		}
	})
}
