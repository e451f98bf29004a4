package report

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// DefaultHTMLRows is how many finding rows the HTML report lists when
// HTMLOptions.MaxRows is 0; the CSV report has them all.
const DefaultHTMLRows = 1000

// HTMLOptions tunes WriteHTML.
type HTMLOptions struct {
	// MaxRows is how many finding rows the table lists: 0 means
	// DefaultHTMLRows, a negative value lists none.
	MaxRows int
	// CSVPath and JSONPath name the report files written for this run,
	// linked from the page; a relative path is taken relative to the
	// directory the page is in (WriteHTMLFile makes them so). "" when not
	// written.
	CSVPath, JSONPath string
	// Config is the run's effective configuration with its secrets
	// redacted (config.Config.Redacted), shown at the end; "" shows none.
	Config string
}

//go:embed html/report.tmpl html/style.css html/table.js
var htmlFiles embed.FS

// htmlAssets are the page template and its inline style and script, with
// the Content-Security-Policy that allows exactly those two and nothing
// else: no request to any host, not even the page's own directory.
var htmlAssets = func() struct {
	tmpl *template.Template
	css  template.CSS
	js   template.JS
	csp  string
} {
	read := func(name string) string {
		b, err := htmlFiles.ReadFile(name)
		if err != nil {
			panic(err) // embedded at build time
		}
		return string(b)
	}
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	css, js := read("html/style.css"), read("html/table.js")
	t := template.Must(template.New("report.tmpl").Funcs(template.FuncMap{"n": Thousands}).Parse(read("html/report.tmpl")))
	return struct {
		tmpl *template.Template
		css  template.CSS
		js   template.JS
		csp  string
	}{t, template.CSS(css), template.JS(js),
		"default-src 'none'; style-src " + hash(css) + "; script-src " + hash(js) +
			"; img-src data:; base-uri 'none'; form-action 'none'"}
}()

// WriteHTML writes the HTML report of res: one self-contained page that
// opens from disk offline and makes no request to any host (a strict
// Content-Security-Policy forbids it), readable without JavaScript. Top to
// bottom: the verdict line and the counts of the terminal summary; for a
// Kafka Streams audit, the pipeline as a picture with the stages that lost
// updates marked; a timeline of the audited records with the lost updates
// by stage and kind; the findings table (its script only sorts and filters
// it); partition findings with their evidence; read issues, decode errors,
// timings and the configuration. Every text from the audited data is
// escaped by html/template and shown with control characters as escapes.
// res is not modified.
func WriteHTML(w io.Writer, res *finding.Result, opt HTMLOptions) error {
	if res == nil {
		return errNilResult
	}
	p := newHTMLPage(res, opt)
	cards, err := cardsOf(res)
	if err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	p.Cards = cards
	if err := htmlAssets.tmpl.Execute(w, p); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	return nil
}

// executeCard renders one card of a section.
func executeCard(c htmlCard) (template.HTML, error) {
	var b strings.Builder
	if err := htmlAssets.tmpl.ExecuteTemplate(&b, c.Template, c.Data); err != nil {
		return "", err
	}
	return template.HTML(b.String()), nil //nolint:gosec // produced by html/template, escaped there
}

// WriteHTMLFile writes the HTML report of res atomically to
// ReportPath(path, !res.Complete()) with permission mode, as WriteCSVFile
// does, and returns that
// path. The report files named in opt are linked relative to the page's
// directory.
func WriteHTMLFile(path string, res *finding.Result, opt HTMLOptions, mode fs.FileMode) (string, error) {
	out := ReportPath(path, res != nil && !res.Complete())
	dir := filepath.Dir(out)
	opt.CSVPath, opt.JSONPath = relativeTo(dir, opt.CSVPath), relativeTo(dir, opt.JSONPath)
	return writeReportFile(path, res, mode, func(w io.Writer) error { return WriteHTML(w, res, opt) })
}

// relativeTo returns path relative to dir when it can, else path.
func relativeTo(dir, path string) string {
	if path == "" {
		return ""
	}
	absDir, err1 := filepath.Abs(dir)
	absPath, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return path
	}
	if rel, err := filepath.Rel(absDir, absPath); err == nil {
		return rel
	}
	return absPath
}

// fileHref is the link to a report file at path (relative to the page or
// absolute), as a URL reference that no character of the name can change
// the meaning of.
func fileHref(path string) template.URL {
	if path == "" {
		return ""
	}
	u := url.URL{Path: filepath.ToSlash(path)}
	if filepath.IsAbs(path) {
		u.Scheme = "file"
	}
	return template.URL(u.String())
}

// htmlPage is what the template renders; every string in it is plain text
// that html/template escapes for its context.
type htmlPage struct {
	CSP   string
	CSS   template.CSS
	JS    template.JS
	Title string

	Verdict string
	Tone    string
	Why     []string
	Next    string
	// Counts are the sections' counts tables (an audit's inputs, a
	// comparison's pairs and ledger).
	Counts []htmlCounts
	Stages htmlTable
	// Cards are the sections' own cards (an audit's pipeline and
	// timeline), rendered by their templates.
	Cards []template.HTML
	// RowsTitle heads the findings, RowsHint explains them and RowsNone
	// stands for none: the words of the mode.
	RowsTitle, RowsHint, RowsNone string

	Rows      []htmlRow
	RowsShown int64
	RowsTotal int64
	CSVHref   template.URL
	CSVName   string
	JSONHref  template.URL
	JSONName  string

	Partitions    []htmlPartition
	Reads         []htmlTextItem
	SchemaSources []htmlTextItem
	DecodeSchemas htmlTable
	DecodeSamples []htmlTextItem
	DecodeTotal   int64
	DecodeShown   int64
	Timings       htmlTable
	Started       string
	Finished      string
	Window        string
	Config        []string
	// Group is the summary's Group line: what the group's coordinator
	// said of the group (its type, state and members); "" without one.
	Group string
}

// htmlTable is a table of text cells; Right marks right-aligned columns.
type htmlTable struct {
	Header []string
	Right  []bool
	Rows   [][]string
}

func fromTable(t table) htmlTable {
	return htmlTable{Header: t.header, Right: t.right, Rows: t.rows}
}

// htmlCounts is one counts table of the Counts card: its title, the table
// (nil: Empty says why there is none) and notes under it.
type htmlCounts struct {
	Title string
	Table *htmlTable
	Empty string
	Notes []string
}

// htmlRow is one line of the findings table. The *Sort fields are what the
// table's script sorts by.
type htmlRow struct {
	Order     int
	Kind      string
	Stage     string
	StageSort int
	Input     string
	InputSort int
	Key       string
	Replay    string
	Timestamp string
	TSSort    int64
	Expected  string
	Observed  string
	Detail    string
}

type htmlPartition struct {
	Kind     string
	Where    string
	Evidence string
	Offsets  string
}

type htmlTextItem struct {
	Where string
	Text  string
}

var toneClass = map[tone]string{toneClean: "clean", toneWarn: "warn", toneLoss: "loss"}

// newHTMLPage lays out the page of res, but for the sections' cards.
func newHTMLPage(res *finding.Result, opt HTMLOptions) *htmlPage {
	s := &res.Summary
	mode := modeOf(s)
	verdict, t := verdictLine(res, mode)
	head, _, _ := strings.Cut(verdict, ":")
	words := mode.rowWords()
	p := &htmlPage{
		CSP: htmlAssets.csp, CSS: htmlAssets.css, JS: htmlAssets.js,
		Title:   "lossaudit: " + head,
		Verdict: verdict, Tone: toneClass[t],
		Next:      nextStep(res, mode, SummaryOptions{CSVPath: opt.CSVPath}),
		Stages:    fromTable(stageTable(s, mode)),
		RowsTitle: words.htmlTitle, RowsHint: words.htmlHint, RowsNone: words.htmlNone,
	}
	for _, c := range countsOf(s) {
		hc := htmlCounts{Title: c.htmlTitle, Empty: c.htmlEmpty, Notes: c.notes}
		if c.table != nil {
			t := fromTable(*c.table)
			hc.Table = &t
		}
		p.Counts = append(p.Counts, hc)
	}
	if why := PartialReason(s); why != "" {
		p.Why = append(p.Why, safe(why))
	}
	for i := range s.Inconclusive {
		p.Why = append(p.Why, safe(InconclusiveText(s, &s.Inconclusive[i])))
	}
	p.Rows, p.RowsShown, p.RowsTotal = htmlRows(res, opt.MaxRows)
	p.CSVHref, p.CSVName = fileHref(opt.CSVPath), safe(filepath.Base(opt.CSVPath))
	p.JSONHref, p.JSONName = fileHref(opt.JSONPath), safe(filepath.Base(opt.JSONPath))
	for i := range s.Partitions {
		pf := &s.Partitions[i]
		ev, offs := Evidence(pf)
		p.Partitions = append(p.Partitions, htmlPartition{Kind: safe(string(pf.Kind)),
			Where: fmt.Sprintf("%s[%d]", safe(pf.Topic), pf.Partition), Evidence: safe(ev), Offsets: offsetsText(offs)})
	}
	for i := range s.Reads {
		r := &s.Reads[i]
		p.Reads = append(p.Reads, htmlTextItem{Where: fmt.Sprintf("%s[%d]", safe(r.Topic), r.Partition), Text: ReadIssueText(r)})
	}
	for _, src := range s.SchemaSources {
		text := safe(src.Error)
		if src.ServedBy != "" {
			text += "; served by " + safe(src.ServedBy) + " instead"
		}
		p.SchemaSources = append(p.SchemaSources, htmlTextItem{Where: safe(src.Source), Text: text})
	}
	p.setDecodeErrors(s)
	p.setRun(s, opt.Config)
	return p
}

// htmlRows are the first rows of the findings table (at most maxRows, 0:
// DefaultHTMLRows), with how many are shown and how many there are.
func htmlRows(res *finding.Result, maxRows int) ([]htmlRow, int64, int64) {
	limit := maxRows
	if limit == 0 {
		limit = DefaultHTMLRows
	}
	limit = max(0, min(limit, len(res.Rows)))
	names := inputNames(&res.Summary)
	rank := map[string]int{}
	for i, n := range names {
		rank[n] = i
	}
	var out []htmlRow
	for i := range res.Rows[:limit] {
		r := &res.Rows[i]
		obs := "-"
		if r.HasObserved {
			obs = FormatTS(r.ObservedTS)
		}
		inRank, ok := rank[r.Input]
		if !ok {
			inRank = len(names)
		}
		out = append(out, htmlRow{
			Order: i, Kind: safe(string(r.Kind)), Stage: safe(string(r.Stage)), StageSort: r.Stage.Order(),
			Input: safe(r.Input), InputSort: inRank, Key: safe(keyText(res.Summary.KeysRedacted, r.Key) + WindowSuffix(r.Window)),
			Replay:    fmt.Sprintf("%s[%d]@%d", safe(r.Topic), r.Partition, r.Offset),
			Timestamp: FormatTS(r.Timestamp), TSSort: r.Timestamp, Expected: FormatTS(r.ExpectedTS),
			Observed: obs, Detail: safe(Detail(r)),
		})
	}
	return out, int64(limit), int64(len(res.Rows))
}

// setDecodeErrors fills the decode errors card.
func (p *htmlPage) setDecodeErrors(s *finding.Summary) {
	p.DecodeSchemas = htmlTable{Header: []string{"SCHEMA", "ERRORS"}, Right: []bool{false, true}}
	for _, k := range slices.Sorted(maps.Keys(s.DecodeErrorsBySchema)) {
		p.DecodeSchemas.Rows = append(p.DecodeSchemas.Rows, []string{safe(k), Thousands(s.DecodeErrorsBySchema[k])})
		p.DecodeTotal += s.DecodeErrorsBySchema[k]
	}
	p.DecodeShown = int64(len(s.DecodeErrorSamples))
	for _, d := range s.DecodeErrorSamples {
		p.DecodeSamples = append(p.DecodeSamples, htmlTextItem{Where: fmt.Sprintf("%s[%d]@%d", safe(d.Topic), d.Partition, d.Offset), Text: safe(d.Error)})
	}
}

// setRun fills the run card: timings, start and end, window and the
// configuration.
func (p *htmlPage) setRun(s *finding.Summary, config string) {
	p.Timings = htmlTable{Header: []string{"PHASE", "TOOK"}, Right: []bool{false, true}}
	for _, k := range timingNames(s.Timings) {
		p.Timings.Rows = append(p.Timings.Rows, []string{safe(k), Timing(s.Timings[k])})
	}
	if !s.Started.IsZero() && !s.Finished.IsZero() {
		p.Timings.Rows = append(p.Timings.Rows, []string{"total", Timing(s.Finished.Sub(s.Started))})
	}
	p.Started, p.Finished = formatTime(s.Started), formatTime(s.Finished)
	if s.Group != nil {
		p.Group = safe(GroupText(s.Group))
	}
	if !s.Window.From.IsZero() || !s.Window.To.IsZero() {
		p.Window = windowText(s.Window)
	}
	if config != "" {
		for _, line := range strings.Split(strings.TrimRight(config, "\n"), "\n") {
			p.Config = append(p.Config, safe(line))
		}
	}
}
