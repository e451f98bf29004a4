package report

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/testbed/browsertest"
)

// openHTML writes the HTML report of res and opens it in headless Chromium.
func openHTML(t *testing.T, res *finding.Result, hopt HTMLOptions, bopt browsertest.Options) *browsertest.Page {
	t.Helper()
	browsertest.Require(t)
	path, err := WriteHTMLFile(filepath.Join(t.TempDir(), "report.html"), res, hopt, 0)
	if err != nil {
		t.Fatal(err)
	}
	return browsertest.Open(t, path, bopt)
}

func TestBrowserHostileDataIsShownAsText(t *testing.T) {
	res := hostileResult()
	csvName := `x"><b onmouseover=alert(7)>#?.csv`
	p := openHTML(t, res, HTMLOptions{Config: hostileConfig, CSVPath: filepath.Join(t.TempDir(), csvName)}, browsertest.Options{})
	p.CheckQuiet()
	// No element the data could have smuggled in: the only script is the
	// page's own, no image or frame, no event-handler attribute anywhere.
	if n := browsertest.Eval[int](p, `document.scripts.length`); n != 1 {
		t.Errorf("%d scripts in the page, want 1", n)
	}
	if n := browsertest.Eval[int](p, `document.querySelectorAll("img, iframe, object, embed, svg svg, foreignObject").length`); n != 0 {
		t.Errorf("%d injected elements", n)
	}
	handlers := browsertest.Eval[[]string](p, `Array.from(document.querySelectorAll("*")).flatMap(e =>
		Array.from(e.attributes).filter(a => a.name.startsWith("on")).map(a => e.tagName + " " + a.name))`)
	if len(handlers) > 0 {
		t.Errorf("event-handler attributes: %q", handlers)
	}
	// Every hostile key is in the table, as text, control characters escaped.
	keys := browsertest.Eval[[]string](p, `Array.from(document.querySelectorAll("#findings-table td.key")).map(td => td.textContent)`)
	for _, r := range res.Rows {
		if want := safe(FormatKey(r.Key)); !slices.Contains(keys, want) {
			t.Errorf("key %q not shown as %q; keys shown: %q", r.Key, want, keys)
		}
	}
	topics := browsertest.Eval[[]string](p, `Array.from(document.querySelectorAll(".node .topic")).map(e => e.textContent)`)
	for _, want := range []string{hostile[0], hostile[1], safe(hostile[2]), hostile[4]} {
		if !slices.Contains(topics, want) {
			t.Errorf("topic %q not shown as text; topics: %q", want, topics)
		}
	}
	if cfg := browsertest.Eval[string](p, `document.querySelector("pre.config").textContent`); cfg != hostileConfig {
		t.Errorf("configuration shown as %q, want %q", cfg, hostileConfig)
	}
	link := browsertest.Eval[[]string](p, `(() => { const a = document.querySelector("#findings a"); return [a.textContent, a.getAttribute("href")] })()`)
	if link[0] != csvName || !strings.HasSuffix(link[1], "/x%22%3E%3Cb%20onmouseover=alert%287%29%3E%23%3F.csv") {
		t.Errorf("CSV link = %q, want the text %q and an escaped relative href", link, csvName)
	}
}

func TestBrowserSortsAndFiltersTheFindings(t *testing.T) {
	res := withTimeline(findingsResult(), time.Second, ms(10, 15, 0, 0), ms(10, 16, 1, 0))
	p := openHTML(t, res, HTMLOptions{}, browsertest.Options{})
	p.CheckQuiet()
	column := func(sel string) []string {
		return browsertest.Eval[[]string](p, `Array.from(document.querySelectorAll("#findings-table tbody tr:not([hidden]) `+sel+`")).map(e => e.textContent)`)
	}
	var want []string
	for _, r := range res.Rows {
		want = append(want, FormatTS(r.Timestamp))
	}
	slices.Sort(want)
	p.Click(`#findings-table th:nth-child(6) button`)
	p.WaitFor(`document.querySelector("#findings-table th:nth-child(6)").getAttribute("aria-sort") === "ascending"`)
	if got := column("td.ts:nth-child(6)"); !slices.Equal(got, want) {
		t.Errorf("sorted by timestamp: %q, want %q", got, want)
	}
	p.Click(`#findings-table th:nth-child(6) button`)
	p.WaitFor(`document.querySelector("#findings-table th:nth-child(6)").getAttribute("aria-sort") === "descending"`)
	slices.Reverse(want)
	if got := column("td.ts:nth-child(6)"); !slices.Equal(got, want) {
		t.Errorf("sorted by timestamp, descending: %q, want %q", got, want)
	}
	// Stage sorts in pipeline order (changelog before output), not by name.
	p.Click(`#findings-table th:nth-child(2) button`)
	p.WaitFor(`document.querySelector("#findings-table th:nth-child(2)").getAttribute("aria-sort") === "ascending"`)
	if got := column("td:nth-child(2)"); !slices.Equal(got, []string{"changelog", "changelog", "changelog", "changelog", "changelog", "changelog", "output"}) {
		t.Errorf("sorted by stage: %q", got)
	}
	browsertest.Eval[bool](p, `(() => { const f = document.getElementById("filter"); f.value = "cust-1"; f.dispatchEvent(new Event("input")); return true })()`)
	p.WaitFor(`document.querySelectorAll("#findings-table tbody tr:not([hidden])").length === 3`)
	if got := column("td.key"); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"cust-1", "cust-1", "cust-10"}) {
		t.Errorf("filtered on cust-1: keys %q", got)
	}
}

func TestBrowserReadableWithoutJavaScript(t *testing.T) {
	res := withTimeline(findingsResult(), time.Second, ms(10, 15, 0, 0), ms(10, 16, 1, 0))
	p := openHTML(t, res, HTMLOptions{}, browsertest.Options{NoScript: true})
	p.CheckQuiet()
	if browsertest.Eval[bool](p, `document.documentElement.hasAttribute("data-script")`) {
		t.Fatal("the page's script ran although JavaScript is disabled")
	}
	want := len(newTimelineView(res, streamsOf(res).Timeline).Buckets)
	if n := browsertest.Eval[int](p, `document.querySelectorAll("svg.chart g.bucket").length`); n != want || n == 0 {
		t.Errorf("%d buckets drawn without JavaScript, want %d", n, want)
	}
	if n := browsertest.Eval[int](p, `document.querySelectorAll("#findings-table tbody tr").length`); n != len(res.Rows) {
		t.Errorf("%d rows without JavaScript, want %d", n, len(res.Rows))
	}
	// The chart is drawn, not just present: its bars have a height.
	if h := browsertest.Eval[float64](p, `document.querySelector("svg.chart rect.audited").getBoundingClientRect().height`); h <= 0 {
		t.Errorf("audited bars have height %v", h)
	}
}
