package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lossaudit/lossaudit/audit/app"
	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/testbed/browsertest"
)

// screenshot names where TestDemoHTMLReportInBrowser saves a picture of
// the demo's report (docs/html-report.png is made so:
// go test -run TestDemoHTMLReportInBrowser ./cmd/lossaudit/ -args -screenshot $PWD/docs/html-report.png).
var screenshot = flag.String("screenshot", "", "save a screenshot of the demo's HTML report to this PNG file")

// chartBucket is one bar group of the timeline as the browser has it.
type chartBucket struct {
	Start   int64 `json:"start"`
	Audited int64 `json:"audited"`
	Pending int64 `json:"pending"`
	Lost    int64 `json:"lost"`
}

func readChart(t *testing.T, p *browsertest.Page) (int64, []chartBucket) {
	t.Helper()
	width := browsertest.Eval[string](p, `document.querySelector("svg.chart").dataset.bucketMs`)
	d, err := strconv.ParseInt(width, 10, 64)
	if err != nil || d <= 0 {
		t.Fatalf("chart bucket width %q", width)
	}
	return d, browsertest.Eval[[]chartBucket](p, `Array.from(document.querySelectorAll("svg.chart g.bucket")).map(g => ({
		start: Number(g.dataset.startMs), audited: Number(g.dataset.audited), pending: Number(g.dataset.pending), lost: Number(g.dataset.lost)}))`)
}

// TestDemoHTMLReportInBrowser runs the demo and reads its HTML report in
// headless Chromium as the person on call would: the loss verdict, the
// outage on the timeline in exactly the buckets the simulation injected
// it, the stages that lost updates marked in the pipeline, and the rows
// to replay.
func TestDemoHTMLReportInBrowser(t *testing.T) {
	browsertest.Require(t)
	dir := t.TempDir()
	var stdout bytes.Buffer
	truth, err := runDemo(context.Background(), &stdout, io.Discard, dir, 1, true)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, stdout.String())
	}
	path := filepath.Join(dir, "report.html")
	if !strings.Contains(stdout.String(), "The HTML report, to open in a browser: "+path+"\n") {
		t.Errorf("the demo does not print the HTML report's path:\n%s", stdout.String())
	}
	// Tall enough for the screenshot to show the verdict, the pipeline, the
	// timeline and the first rows to replay.
	p := browsertest.Open(t, path, browsertest.Options{Width: 1280, Height: 2000})
	p.CheckQuiet()

	if v := browsertest.Eval[string](p, `document.getElementById("verdict-line").textContent`); !strings.HasPrefix(v, "LOSS FOUND: "+strconv.Itoa(len(truth.Rows))+" keys lost an update") {
		t.Errorf("verdict = %q", v)
	}

	// The timeline: one bar group per bucket, contiguous, holding every
	// audited record; the lost updates exactly in the injection's buckets.
	d, buckets := readChart(t, p)
	if len(buckets) < 30 || len(buckets) > 100 {
		t.Errorf("%d buckets of %d ms, want 30 to 100", len(buckets), d)
	}
	var audited, wantAudited int64
	got := map[int64]int64{}
	for i, b := range buckets {
		if b.Start%d != 0 || (i > 0 && b.Start != buckets[i-1].Start+d) {
			t.Fatalf("bucket %d starts at %d: buckets are not contiguous %d ms ones", i, b.Start, d)
		}
		audited += b.Audited
		if b.Lost > 0 {
			got[b.Start] = b.Lost
		}
	}
	for _, c := range truth.Counts {
		wantAudited += c.Audited
	}
	if audited != wantAudited {
		t.Errorf("the timeline holds %d audited records, the simulation %d", audited, wantAudited)
	}
	want := map[int64]int64{}
	for _, r := range truth.Rows {
		want[r.Timestamp-r.Timestamp%d]++
	}
	if !maps.Equal(got, want) {
		t.Errorf("lost updates per bucket = %v, the injection chose %v", got, want)
	}
	if n := browsertest.Eval[int](p, `document.querySelectorAll("svg.chart g.bucket.hot rect.band").length`); n != len(want) {
		t.Errorf("%d buckets marked red, want %d", n, len(want))
	}

	// The pipeline: exactly the stages with findings stand out.
	marked := browsertest.Eval[[]string](p, `Array.from(document.querySelectorAll("#pipeline .node.bad")).map(n => n.dataset.stage + " " + n.dataset.input)`)
	wantMarked := map[string]bool{}
	for _, r := range truth.Rows {
		if r.Stage == finding.StageOutput {
			wantMarked["output "] = true
		} else {
			wantMarked[string(r.Stage)+" "+r.Input] = true
		}
	}
	for _, pf := range truth.Partitions {
		for _, in := range truth.Inputs {
			if pf.Topic == in.RepartitionTopic {
				wantMarked["repartition "+in.Name] = true
			}
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(marked)), slices.Sorted(maps.Keys(wantMarked))) {
		t.Errorf("marked stages %q, want %q", marked, slices.Sorted(maps.Keys(wantMarked)))
	}
	if n := browsertest.Eval[int](p, `document.querySelectorAll("#pipeline .node").length`); n != 3*len(truth.Inputs)+2 {
		t.Errorf("%d boxes in the pipeline, want %d", n, 3*len(truth.Inputs)+2)
	}

	// The rows to replay are the injected ones.
	replay := browsertest.Eval[[]string](p, `Array.from(document.querySelectorAll("#findings-table td.replay")).map(td => td.textContent)`)
	var wantReplay []string
	for _, r := range truth.Rows {
		wantReplay = append(wantReplay, fmt.Sprintf("%s[%d]@%d", r.Topic, r.Partition, r.Offset))
	}
	if !slices.Equal(slices.Sorted(slices.Values(replay)), slices.Sorted(slices.Values(wantReplay))) {
		t.Errorf("replay column %q, want %q", replay, wantReplay)
	}
	if n := browsertest.Eval[int](p, `document.querySelectorAll("#partitions tbody tr").length`); n != len(truth.Partitions) {
		t.Errorf("%d partition findings shown, want %d", n, len(truth.Partitions))
	}

	if *screenshot != "" {
		p.Screenshot(*screenshot, true)
		t.Logf("screenshot saved to %s", *screenshot)
	}
}

// TestCleanAuditHTMLInBrowser audits a healthy simulated pipeline (lag,
// retries, null keys and values, tombstones, no loss) and checks that its
// HTML report says so.
func TestCleanAuditHTMLInBrowser(t *testing.T) {
	browsertest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	truth, err := sim.Run(ctx, cluster.ListenAddrs(), sim.CleanScenario(3))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := truth.Config(cluster.ListenAddrs(), filepath.Join(dir, "index"))
	cfg.Report.CSV, cfg.Report.HTML = filepath.Join(dir, "loss.csv"), filepath.Join(dir, "report.html")
	res, _, err := app.Run(ctx, cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if code := exitCode(finish(io.Discard, io.Discard, cfg, res)); code != exitOK {
		t.Fatalf("clean audit exit code %d", code)
	}
	p := browsertest.Open(t, cfg.Report.HTML, browsertest.Options{})
	p.CheckQuiet()
	if tone := browsertest.Eval[string](p, `document.getElementById("verdict").dataset.tone`); tone != "clean" {
		t.Errorf("verdict tone %q, want clean", tone)
	}
	if v := browsertest.Eval[string](p, `document.getElementById("verdict-line").textContent`); !strings.HasPrefix(v, "NO LOSS FOUND: ") {
		t.Errorf("verdict = %q", v)
	}
	if n := browsertest.Eval[int](p, `document.querySelectorAll(".node.bad, svg.chart g.bucket.hot, #findings-table").length`); n != 0 {
		t.Errorf("%d loss marks on a clean run's page", n)
	}
	if _, buckets := readChart(t, p); len(buckets) == 0 {
		t.Error("a clean run's page charts no audited record")
	}
}
