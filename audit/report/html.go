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
	if err := htmlAssets.tmpl.Execute(w, newHTMLPage(res, opt)); err != nil {
		return fmt.Errorf("writing the HTML report: %w", err)
	}
	return nil
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

	Verdict    string
	Tone       string
	Why        []string
	Next       string
	Inputs     htmlTable
	InputNotes []string
	Stages     htmlTable
	// Compare is set for lossaudit compare: Inputs is then the pairs
	// table (empty without pairs), CountsTitle its title and Ledger the
	// ledger's counts (nil without a ledger).
	Compare     bool
	CountsTitle string
	Ledger      *htmlTable

	Pipeline *pipelineView
	Timeline *timelineView

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

func newHTMLPage(res *finding.Result, opt HTMLOptions) *htmlPage {
	s := &res.Summary
	names := inputNames(s)
	verdict, t := verdictLine(res, names)
	head, _, _ := strings.Cut(verdict, ":")
	p := &htmlPage{
		CSP: htmlAssets.csp, CSS: htmlAssets.css, JS: htmlAssets.js,
		Title:   "lossaudit: " + head,
		Verdict: verdict, Tone: toneClass[t],
		Next:   nextStep(res, SummaryOptions{CSVPath: opt.CSVPath}),
		Stages: fromTable(stageTable(s)),
	}
	if s.Compare != nil {
		title, pairs, ledger := compareTables(s)
		p.Compare, p.CountsTitle = true, title
		if pairs != nil {
			p.Inputs = fromTable(*pairs)
		}
		if ledger != nil {
			t := fromTable(*ledger)
			p.Ledger = &t
		}
	} else {
		in, total := inputTable(s, names)
		p.Inputs, p.InputNotes = fromTable(in), inputNotes(&total)
	}
	if why := PartialReason(s); why != "" {
		p.Why = append(p.Why, safe(why))
	}
	for i := range s.Inconclusive {
		p.Why = append(p.Why, safe(InconclusiveText(&s.Inconclusive[i])))
	}
	p.Pipeline = newPipelineView(res)
	if s.Compare == nil {
		// The chart counts audited input records and lost updates; a
		// comparison keeps no timeline of its records.
		p.Timeline = newTimelineView(res)
	}

	limit := opt.MaxRows
	if limit == 0 {
		limit = DefaultHTMLRows
	}
	limit = max(0, min(limit, len(res.Rows)))
	p.RowsShown, p.RowsTotal = int64(limit), int64(len(res.Rows))
	rank := map[string]int{}
	for i, n := range names {
		rank[n] = i
	}
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
		p.Rows = append(p.Rows, htmlRow{
			Order: i, Kind: safe(string(r.Kind)), Stage: safe(string(r.Stage)), StageSort: r.Stage.Order(),
			Input: safe(r.Input), InputSort: inRank, Key: safe(keyText(res.Summary.KeysRedacted, r.Key)),
			Replay:    fmt.Sprintf("%s[%d]@%d", safe(r.Topic), r.Partition, r.Offset),
			Timestamp: FormatTS(r.Timestamp), TSSort: r.Timestamp, Expected: FormatTS(r.ExpectedTS),
			Observed: obs, Detail: safe(Detail(r)),
		})
	}
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
	p.DecodeSchemas = htmlTable{Header: []string{"SCHEMA", "ERRORS"}, Right: []bool{false, true}}
	for _, k := range slices.Sorted(maps.Keys(s.DecodeErrorsBySchema)) {
		p.DecodeSchemas.Rows = append(p.DecodeSchemas.Rows, []string{safe(k), Thousands(s.DecodeErrorsBySchema[k])})
		p.DecodeTotal += s.DecodeErrorsBySchema[k]
	}
	p.DecodeShown = int64(len(s.DecodeErrorSamples))
	for _, d := range s.DecodeErrorSamples {
		p.DecodeSamples = append(p.DecodeSamples, htmlTextItem{Where: fmt.Sprintf("%s[%d]@%d", safe(d.Topic), d.Partition, d.Offset), Text: safe(d.Error)})
	}
	p.Timings = htmlTable{Header: []string{"PHASE", "TOOK"}, Right: []bool{false, true}}
	for _, k := range timingNames(s.Timings) {
		p.Timings.Rows = append(p.Timings.Rows, []string{safe(k), Timing(s.Timings[k])})
	}
	if !s.Started.IsZero() && !s.Finished.IsZero() {
		p.Timings.Rows = append(p.Timings.Rows, []string{"total", Timing(s.Finished.Sub(s.Started))})
	}
	p.Started, p.Finished = formatTime(s.Started), formatTime(s.Finished)
	if !s.Window.From.IsZero() || !s.Window.To.IsZero() {
		p.Window = windowText(s.Window)
	}
	if opt.Config != "" {
		for _, line := range strings.Split(strings.TrimRight(opt.Config, "\n"), "\n") {
			p.Config = append(p.Config, safe(line))
		}
	}
	return p
}
