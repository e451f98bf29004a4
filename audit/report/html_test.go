package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// withTimeline adds a pipeline and a timeline to res: every fine bucket
// from the first row's minute to the last row's holds audited records.
func withTimeline(res *finding.Result, fine time.Duration, from, to int64) *finding.Result {
	s := streamsOf(res)
	s.Pipeline = &finding.Pipeline{Output: "joined"}
	s.Timeline = &finding.Timeline{Bucket: fine, Inputs: map[string]map[int64]finding.BucketCounts{}}
	for _, name := range res.Summary.InputOrder {
		s.Pipeline.Inputs = append(s.Pipeline.Inputs, finding.PipelineInput{Name: name, Topic: "topic" + strings.ToUpper(name),
			RepartitionTopic: "app-" + strings.ToUpper(name) + "-repartition", ChangelogTopic: "app-" + strings.ToUpper(name) + "-changelog"})
		m := map[int64]finding.BucketCounts{}
		for t := floorMS(from, fine.Milliseconds()); t <= to; t += fine.Milliseconds() {
			m[t] = finding.BucketCounts{Audited: 10, Pending: 1}
		}
		s.Timeline.Inputs[name] = m
	}
	return res
}

// streamsOf returns the Kafka Streams section of res, adding one if there
// is none.
func streamsOf(res *finding.Result) *finding.Streams {
	if sec, ok := finding.SectionOf[*finding.Streams](&res.Summary); ok {
		return sec
	}
	sec := &finding.Streams{}
	res.Summary.Sections = append(res.Summary.Sections, sec)
	return sec
}

func renderHTML(t *testing.T, res *finding.Result, opt HTMLOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, res, opt); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHTMLIsSelfContained(t *testing.T) {
	res := withTimeline(findingsResult(), time.Second, ms(10, 0, 0, 0), ms(10, 20, 0, 0))
	page := renderHTML(t, res, HTMLOptions{CSVPath: "loss-report.csv", Config: "kafka.sasl.password = ***"})

	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(page)
	if csp == nil {
		t.Fatal("no Content-Security-Policy meta tag")
	}
	policy := html.UnescapeString(csp[1])
	// The policy allows exactly the inline style and script by hash.
	hash := func(re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("no %s in the page", re)
		}
		sum := sha256.Sum256([]byte(m[1]))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	want := "default-src 'none'; style-src " + hash(`(?s)<style>(.*?)</style>`) + "; script-src " + hash(`(?s)<script>(.*?)</script>`) +
		"; img-src data:; base-uri 'none'; form-action 'none'"
	if policy != want {
		t.Errorf("CSP = %q\nwant %q", policy, want)
	}
	if i := strings.Index(page, "<meta http-equiv"); i < 0 || i > strings.Index(page, "<style>") {
		t.Error("the CSP must come before the style it governs")
	}
	// Nothing refers to another resource: no external script, style, font,
	// image or frame, and no URL but the relative link to the CSV.
	for _, bad := range []string{"http://", "https://", "//fonts", "@import", "url(", "<iframe", "<img", "<object", "<embed", " src=", "style=\""} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if n := strings.Count(page, "<script"); n != 1 {
		t.Errorf("%d script elements, want the one inline script", n)
	}
	if !strings.Contains(page, `<a href="loss-report.csv">loss-report.csv</a>`) {
		t.Error("no relative link to the CSV report")
	}
}

func TestHTMLVerdictIsTheSummarys(t *testing.T) {
	for name, res := range map[string]*finding.Result{
		"clean": cleanResult(), "findings": findingsResult(), "partitions": partitionsResult(), "partial": partialResult(),
		"compare": compareResult(),
	} {
		t.Run(name, func(t *testing.T) {
			var sum bytes.Buffer
			if err := WriteSummary(&sum, res, SummaryOptions{}); err != nil {
				t.Fatal(err)
			}
			// The summary wraps the verdict for the terminal; continuation
			// lines are indented by two spaces.
			lines := strings.Split(sum.String(), "\n")
			verdict := lines[0]
			for _, l := range lines[1:] {
				if !strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "  why: ") || strings.HasPrefix(l, "  next: ") {
					break
				}
				verdict += " " + strings.TrimSpace(l)
			}
			m := regexp.MustCompile(`<h1 id="verdict-line">([^<]*)</h1>`).FindStringSubmatch(renderHTML(t, res, HTMLOptions{}))
			if m == nil || html.UnescapeString(m[1]) != verdict {
				t.Errorf("HTML verdict = %q, want the summary's %q", m, verdict)
			}
		})
	}
}

// hostile is text an attacker can put in keys, topic names and details.
var hostile = []string{
	`<img src=x onerror=alert(1)>`,
	`</script><script>alert(1)</script>`,
	"\x1b[31mred\x00\x07\u2028end",
	`"><svg onload=alert(3)>`,
	`</title></style><script>alert(4)</script>`,
}

// hostileResult puts hostile text everywhere the data reaches the page.
func hostileResult() *finding.Result {
	res := findingsResult()
	s := &res.Summary
	s.InputOrder = []string{hostile[3], "b"}
	s.Inputs = map[string]*finding.InputCounts{hostile[3]: {Scanned: 10, Audited: 10}, "b": {Scanned: 5, Audited: 5}}
	streamsOf(res).Pipeline = &finding.Pipeline{Output: hostile[4], Inputs: []finding.PipelineInput{
		{Name: hostile[3], Topic: hostile[0], RepartitionTopic: hostile[1], ChangelogTopic: hostile[2]},
		{Name: "b", Topic: "topicB", RepartitionTopic: "rep-b", ChangelogTopic: "cl-b"},
	}}
	streamsOf(res).Timeline = &finding.Timeline{Bucket: time.Second, Inputs: map[string]map[int64]finding.BucketCounts{
		hostile[3]: {ms(10, 15, 0, 0): {Audited: 10}}, "b": {ms(10, 15, 2, 0): {Audited: 5}}}}
	s.Partitions = []finding.PartitionFinding{{Kind: finding.PurgedPastCommit, Topic: hostile[1], Partition: 0,
		Evidence: &finding.PurgeEvidence{Group: hostile[0], LogStart: 10, Committed: 5}}}
	s.Reads = []finding.ReadIssue{{Topic: hostile[0], Partition: 1, Gaps: 3}}
	s.SchemaSources = []finding.SchemaSource{{Source: hostile[1], Error: hostile[0], ServedBy: hostile[4]}}
	s.DecodeErrorsBySchema = map[string]int64{hostile[0]: 2}
	s.DecodeErrorSamples = []finding.DecodeErrorSample{{Topic: hostile[1], Partition: 0, Offset: 1, Error: hostile[4]}}
	res.Rows = nil
	for i, h := range hostile {
		res.Rows = append(res.Rows, finding.Row{Kind: finding.Missing, Stage: finding.StageChangelog, Input: hostile[3], Key: []byte(h),
			Topic: hostile[0], Partition: int32(i), Offset: int64(i), Timestamp: ms(10, 15, 0, i), ExpectedTS: ms(10, 15, 0, i),
			Evidence: &finding.Witness{Topic: hostile[1], Seen: true}})
	}
	res.Rows = append(res.Rows, finding.Row{Kind: finding.Kind(hostile[0]), Stage: finding.Stage(hostile[4]), Input: "b", Key: []byte("k"),
		Topic: "topicB", Timestamp: ms(10, 15, 2, 0), ExpectedTS: ms(10, 15, 2, 0)})
	return res
}

// hostileConfig is a configuration text with hostile values.
var hostileConfig = "pipeline.output = " + hostile[4] + "\nkafka.sasl.username = " + hostile[0] + "\n"

func TestHTMLEscapesTheData(t *testing.T) {
	page := renderHTML(t, hostileResult(), HTMLOptions{Config: hostileConfig})
	for _, raw := range []string{"<img", "<svg onload", "alert(1)</script>", "<script>alert", "\x1b", "\x00", "\x07"} {
		if strings.Contains(page, raw) {
			t.Errorf("page contains %q unescaped", raw)
		}
	}
	// The text is there, escaped, for people to read.
	for _, shown := range []string{
		"&lt;img src=x onerror=alert(1)&gt;",
		"&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;",
		`\x1b[31mred\x00\a` + "\u2028end",
	} {
		if !strings.Contains(page, shown) {
			t.Errorf("page lacks %q", shown)
		}
	}
}

func TestHTMLRowLimitPointsAtTheCSV(t *testing.T) {
	res := findingsResult()
	page := renderHTML(t, res, HTMLOptions{MaxRows: 3, CSVPath: "out/loss report#1.csv"})
	if n := strings.Count(page, `<tr data-order=`); n != 3 {
		t.Errorf("%d rows listed, want 3", n)
	}
	if !strings.Contains(page, "This page lists the first 3; all 7 are in <a href=\"out/loss%20report%231.csv\">loss report#1.csv</a>") {
		t.Errorf("no pointer to the CSV for the other rows:\n%s", page[strings.Index(page, `id="findings"`):][:800])
	}
	page = renderHTML(t, res, HTMLOptions{MaxRows: 3})
	if !strings.Contains(page, "all 7 are in the CSV report (set report.csv or pass --csv)") {
		t.Error("without a CSV the page must say how to get all rows")
	}
}

func TestWriteHTMLFile(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "reports", "loss.csv")
	path := filepath.Join(dir, "html", "report.html")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	// A partial run writes beside the complete report, never over it.
	got, err := WriteHTMLFile(path, partialResult(), HTMLOptions{CSVPath: csv}, 0)
	if err != nil || got != path+PartialSuffix {
		t.Fatalf("partial run wrote %q, %v; want %q", got, err, path+PartialSuffix)
	}
	got, err = WriteHTMLFile(path, findingsResult(), HTMLOptions{CSVPath: csv}, 0)
	if err != nil || got != path {
		t.Fatalf("complete run wrote %q, %v; want %q", got, err, path)
	}
	if _, err := os.Stat(path + PartialSuffix); !os.IsNotExist(err) {
		t.Errorf("stale partial report left beside the complete one: %v", err)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(page, []byte(`<a href="../reports/loss.csv">loss.csv</a>`)) {
		t.Error("the CSV link is not relative to the page's directory")
	}
	if _, err := WriteHTMLFile(path, nil, HTMLOptions{}, 0); err == nil {
		t.Error("nil result: no error")
	}
}

func TestChartBucket(t *testing.T) {
	const (
		sec  = int64(1000)
		min  = 60 * sec
		hour = 60 * min
		day  = 24 * hour
	)
	base := ms(10, 0, 0, 0)
	tests := []struct {
		name       string
		fine, span int64
		want       int64
	}{
		{"an hour in minutes", 100, hour - 1, min},
		{"a day in quarter hours", sec, day - 1, 15 * min},
		{"the demo's seven minutes in 5 s", sec, 7 * min, 5 * sec},
		{"ten seconds in 100 ms", 100, 10*sec - 1, 100},
		{"a month in 12 h", 10 * min, 30*day - 1, 12 * hour},
		{"the run's coarse buckets win", 10 * min, 2 * hour, 10 * min},
		{"a single record", 100, 0, 100},
		{"decades double past four weeks", 7 * day, 40 * 365 * day, 28 * day * 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chartBucket(tt.fine, base, base+tt.span)
			if got != tt.want {
				t.Errorf("bucket = %d ms, want %d", got, tt.want)
			}
			if n := (floorMS(base+tt.span, got)-floorMS(base, got))/got + 1; n > maxChartBuckets || got%tt.fine != 0 {
				t.Errorf("%d buckets of %d ms (run's %d ms)", n, got, tt.fine)
			}
		})
	}
}

func TestNiceScale(t *testing.T) {
	tests := []struct {
		n     int64
		top   int64
		ticks string
	}{
		{0, 1, "[0]"}, {1, 1, "[0 1]"}, {3, 3, "[0 1 2 3]"}, {4, 4, "[0 1 2 3 4]"}, {7, 8, "[0 2 4 6 8]"},
		{13, 15, "[0 5 10 15]"}, {850, 1000, "[0 200 400 600 800 1000]"}, {1234567, 1500000, "[0 500000 1000000 1500000]"},
	}
	for _, tt := range tests {
		top, ticks := niceScale(tt.n)
		if top != tt.top || fmt.Sprint(ticks) != tt.ticks {
			t.Errorf("niceScale(%d) = %d %v, want %d %s", tt.n, top, ticks, tt.top, tt.ticks)
		}
	}
}

func TestTimelineView(t *testing.T) {
	res := withTimeline(findingsResult(), time.Second, ms(10, 0, 0, 0), ms(10, 29, 59, 0))
	res.Summary.Window = finding.Window{From: time.UnixMilli(ms(10, 0, 0, 0)).UTC(), To: time.UnixMilli(ms(10, 30, 0, 0)).UTC()}
	v := newTimelineView(res, streamsOf(res).Timeline)
	if v == nil {
		t.Fatal("no timeline")
	}
	// 30 minutes of records: 30 s buckets (60 of them, and the window's
	// end at 10:30 opens a 61st).
	if v.BucketMS != 30_000 || len(v.Buckets) != 61 {
		t.Fatalf("%d buckets of %d ms, want 61 of 30 s", len(v.Buckets), v.BucketMS)
	}
	var audited, lost int64
	for i, b := range v.Buckets {
		if b.StartMS != ms(10, i/2, i%2*30, 0) {
			t.Errorf("bucket %d starts at %s", i, b.Start)
		}
		audited += b.Audited
		lost += b.Lost
	}
	if audited != 3*10*30*60 || lost != int64(len(res.Rows)) {
		t.Errorf("chart holds %d audited and %d lost, want %d and %d", audited, lost, 3*10*30*60, len(res.Rows))
	}
	// Six rows lost between 10:15:00 and 10:15:03, one at 10:16:00.999.
	wantLost := map[int]int64{30: 6, 32: 1}
	for i, b := range v.Buckets {
		if b.Lost != wantLost[i] {
			t.Errorf("bucket %s: %d lost, want %d", b.Start, b.Lost, wantLost[i])
		}
	}
	if len(v.Window) != 2 || v.Window[0].X != chartLeft {
		t.Errorf("window marks = %+v, want both ends, the start at the left edge", v.Window)
	}
	if v.LossFrom != FormatTS(ms(10, 15, 0, 0)) || v.LossTo != FormatTS(ms(10, 16, 0, 999)) {
		t.Errorf("loss from %s to %s", v.LossFrom, v.LossTo)
	}
	if newTimelineView(cleanResult(), nil) != nil {
		t.Error("a run with no timeline and no rows has nothing to chart")
	}
}

func TestPipelineViewMarksTheStagesWithFindings(t *testing.T) {
	res := withTimeline(findingsResult(), time.Second, ms(10, 15, 0, 0), ms(10, 16, 0, 0))
	res.Summary.Partitions = partitionsResult().Summary.Partitions
	res.Summary.Partitions[0].Topic = "app-B-repartition"
	v := newPipelineView(res, streamsOf(res).Pipeline)
	bad := map[string]int64{}
	for _, l := range v.Lanes {
		for _, n := range l.Nodes {
			if n.Findings > 0 {
				bad[n.Stage+" "+n.Input] = n.Findings
			}
		}
	}
	if v.Output.Findings > 0 {
		bad["output"] = v.Output.Findings
	}
	// Rows: changelog a (4), b (1), c (1); output a (1). Purge on B's repartition topic.
	want := map[string]int64{"changelog a": 4, "changelog b": 1, "changelog c": 1, "repartition b": 1, "output": 1}
	if len(bad) != len(want) {
		t.Errorf("marked %v, want %v", bad, want)
	}
	for k, n := range want {
		if bad[k] != n {
			t.Errorf("%s: %d findings, want %d (marked %v)", k, bad[k], n, bad)
		}
	}
	if newPipelineView(res, nil) != nil {
		t.Error("no pipeline described, yet a picture")
	}
}

// TestPipelineViewDrawsTheModelledShape: the picture draws the stages the
// audit checked, no more: no repartition box for a table source, a buffer
// box for a suppress, no join box for one input, no output box for a
// table that is the pipeline's end.
func TestPipelineViewDrawsTheModelledShape(t *testing.T) {
	res := cleanResult()
	res.Summary.Stages[finding.StageOutput] = &finding.StageCounts{KeysChecked: 10, KeysPending: 3}
	for _, tc := range []struct {
		name  string
		pl    finding.Pipeline
		lanes [][]string // per lane, the roles of its boxes
		join  string     // "" for no join box
		out   bool
		hint  string
	}{
		{"count by a new key", finding.Pipeline{Output: "counts", Inputs: []finding.PipelineInput{
			{Name: "a", Topic: "words", RepartitionTopic: "app-x-repartition", ChangelogTopic: "app-x-changelog", Operator: "count", Count: true}}},
			[][]string{{"input a", "selectKey, repartition", "count store, changelog (recounted)"}}, "", true, "streamed into the output"},
		{"suppress", finding.Pipeline{Output: "o", Inputs: []finding.PipelineInput{
			{Name: "a", Topic: "t", RepartitionTopic: "r", ChangelogTopic: "c", Operator: "aggregate", BufferTopic: "app-buf-changelog"}}},
			[][]string{{"input a", "selectKey, repartition", "aggregate store, changelog", "suppress buffer, changelog"}}, "", true, "streamed into the output"},
		{"table groupBy and count", finding.Pipeline{Output: "counts", Inputs: []finding.PipelineInput{
			{Name: "a", Topic: "profiles", RepartitionTopic: "app-x-repartition", ChangelogTopic: "app-x-changelog", Operator: "table-count"}}},
			[][]string{{"input a", "table, groupBy, repartition", "table count store, changelog"}}, "", true, "streamed into the output"},
		{"table source, changelog only", finding.Pipeline{Inputs: []finding.PipelineInput{
			{Name: "a", Topic: "t", ChangelogTopic: "c", Operator: "table-source", Table: true}}},
			[][]string{{"input a", "table source store, changelog (last record by offset)"}}, "", false, "no output topic"},
		{"outer join", finding.Pipeline{Output: "o", Join: "outer", Inputs: []finding.PipelineInput{
			{Name: "a", Topic: "ta", RepartitionTopic: "ra", ChangelogTopic: "ca"},
			{Name: "b", Topic: "tb", RepartitionTopic: "rb", ChangelogTopic: "cb", Operator: "reduce"}}},
			[][]string{{"input a", "selectKey, repartition", "reduce store, changelog"}, {"input b", "selectKey, repartition", "reduce store, changelog"}},
			"outerJoin", true, "tables are joined"},
		{"cogroup", finding.Pipeline{Output: "o", Join: "cogroup", Inputs: []finding.PipelineInput{
			{Name: "a", Topic: "ta", ChangelogTopic: "c", Operator: "cogroup"},
			{Name: "b", Topic: "tb", RepartitionTopic: "rb", ChangelogTopic: "c", Operator: "cogroup"}}},
			[][]string{{"input a", "cogroup store, changelog"}, {"input b", "selectKey, repartition", "cogroup store, changelog"}},
			"cogroup", true, "the cogroup's one table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newPipelineView(res, &tc.pl)
			var lanes [][]string
			for _, l := range v.Lanes {
				var roles []string
				for _, n := range l.Nodes {
					roles = append(roles, n.Role)
				}
				lanes = append(lanes, roles)
			}
			if !reflect.DeepEqual(lanes, tc.lanes) {
				t.Errorf("lanes %q, want %q", lanes, tc.lanes)
			}
			join := ""
			if v.Join != nil {
				join = v.Join.Role
			}
			if join != tc.join {
				t.Errorf("join box %q, want %q", join, tc.join)
			}
			if (v.Output != nil) != tc.out {
				t.Errorf("output box %v, want %v", v.Output != nil, tc.out)
			}
			if v.Output != nil && !slices.Contains(v.Output.Facts, "3 pending in the suppress buffer") {
				t.Errorf("output facts %q lack the keys pending in the buffer", v.Output.Facts)
			}
			if !strings.Contains(v.Hint, tc.hint) {
				t.Errorf("hint %q lacks %q", v.Hint, tc.hint)
			}
		})
	}
}

// TestHTMLRendersAComparison: the page of lossaudit compare shows its pairs
// and ledger counts, every row with the copies found, and no picture of a
// Streams pipeline or timeline of audited records, which it has not.
func TestHTMLRendersAComparison(t *testing.T) {
	res := compareResult()
	page := html.UnescapeString(renderHTML(t, res, HTMLOptions{CSVPath: "compare.csv"}))
	for _, want := range []string{
		"<h3>Pairs (match record; due: older than 5m0s at the snapshot)</h3>",
		"<td>dr.orders</td>", "<td class=\"num\">119,002</td>",
		"<h3>Ledger</h3>", "<td class=\"num\">5,004</td>",
		"<th>STAGE</th><th class=\"num\">RECORDS CHECKED</th>", "<th class=\"num\">UNACKED PRESENT</th>",
		"<h2>Record findings (9)</h2>", "the copies found",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for i := range res.Rows {
		if d := Detail(&res.Rows[i]); !strings.Contains(page, d) {
			t.Errorf("page lacks row %d's detail %q", i, d)
		}
	}
	for _, absent := range []string{`id="timeline"`, `id="pipeline"`, "lost updates", "INPUT"} {
		if strings.Contains(page, absent) {
			t.Errorf("page of a comparison contains %q", absent)
		}
	}

	cs, _ := finding.SectionOf[*finding.CompareSummary](&res.Summary)
	cs.Pairs = nil
	res.Rows = nil
	page = renderHTML(t, res, HTMLOptions{})
	for _, want := range []string{"No pairs: a ledger only.", "<h3>Ledger</h3>", "No record findings: nothing missing or duplicated."} {
		if !strings.Contains(page, want) {
			t.Errorf("ledger-only page lacks %q", want)
		}
	}
}
