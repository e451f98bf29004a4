package report

import (
	"html/template"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// How a result's sections (finding.Section) reach the reports. The core of
// the report (summary.go, json.go, csv.go, html.go) assembles what every
// mode shares: the verdict, the counts, the stage table, a reconciliation
// step, partition findings, read issues, decode errors, the rows and the
// timings. Each section is rendered through a view that contributes to
// fixed places of that assembly; a view implements only the contributions
// it has:
//
//   - modeView: the words of the mode that produced the result (its
//     verdict, what its rows are, the stages it always lists, the note
//     under each row). Exactly one per result: the first section whose
//     view has them, else the Kafka Streams audit's (a result built
//     without sections renders as an audit's, as it always did).
//   - countsView: tables of what the mode read, in the summary's counts
//     and the HTML report's Counts card.
//   - cardsView: cards of the HTML report, between the counts and the
//     findings (the Kafka Streams audit's pipeline picture and timeline).
//   - jsonView: one block of the JSON report, after "timings", under the
//     section's name.
//   - csvView: columns of the loss report, after "detail" (and before a
//     step's "first_seen"), also in each JSON row's "columns".
//
// viewOf is the only place the report names a section type. A section type
// may also be its own view (a type of this package implementing the
// interfaces), and then needs no case there.

// modeView gives the words of the mode that produced a result.
type modeView interface {
	// verdictWords are the words of the verdict line.
	verdictWords(res *finding.Result) verdictWords
	// rowWords are the words around the rows.
	rowWords() rowWords
	// rowNote is the line under a row in the summary.
	rowNote(r *finding.Row) string
	// checkedHeader names the stage table's count column.
	checkedHeader() string
	// stages are listed in the stage table and the JSON report even when
	// they counted nothing, so that reports have a stable shape.
	stages() []finding.Stage
	// inconclusiveText says why the mode could not vouch for an input in
	// its own words; "" leaves it to the audit's (InconclusiveText).
	inconclusiveText(i *finding.Inconclusive) string
}

// rowWords say what the rows of a mode are.
type rowWords struct {
	// title heads the rows in the summary; legend explains the columns
	// (whole lines, indented); next ends "each row of FILE ..." in the
	// verdict's next step.
	title, legend, next string
	// htmlTitle heads the findings card, htmlHint explains its table and
	// htmlNone stands for an empty one.
	htmlTitle, htmlHint, htmlNone string
}

// countsView gives tables of what a mode read.
type countsView interface {
	counts(s *finding.Summary) []countsBlock
}

// countsBlock is one titled table of the counts. The summary writes
// title, the table (or empty when nil) and the notes; the HTML report
// htmlTitle, the table (or htmlEmpty) and the notes.
type countsBlock struct {
	title, htmlTitle string
	table            *table
	empty, htmlEmpty string
	notes            []string
}

// cardsView gives cards of the HTML report.
type cardsView interface {
	cards(res *finding.Result) []htmlCard
}

// htmlCard is one card of the HTML report: the template of report.tmpl
// named Template executed with Data.
type htmlCard struct {
	Template string
	Data     any
}

// jsonView gives one block of the JSON report, under the section's name;
// nil leaves the block out.
type jsonView interface {
	jsonBlock() any
}

// csvView gives a mode's own columns of the loss report.
type csvView interface {
	// columns name the columns; cells returns a row's, one per column.
	columns() []string
	cells(r *finding.Row) []string
}

// rowColumns are the columns the sections of a result add to its rows.
type rowColumns struct {
	names []string
	views []csvView
}

// columnsOf returns the columns the sections of s add, in section order.
func columnsOf(s *finding.Summary) rowColumns {
	var out rowColumns
	for _, sec := range s.Sections {
		if c, ok := viewOf(sec).(csvView); ok {
			out.names = append(out.names, c.columns()...)
			out.views = append(out.views, c)
		}
	}
	return out
}

// cells returns the cells of r in the columns' order.
func (c rowColumns) cells(r *finding.Row) []string {
	var out []string
	for _, v := range c.views {
		out = append(out, v.cells(r)...)
	}
	return out
}

// byName returns the cells of r by column name; nil without columns.
func (c rowColumns) byName(r *finding.Row) map[string]string {
	if len(c.names) == 0 {
		return nil
	}
	m := make(map[string]string, len(c.names))
	for i, v := range c.cells(r) {
		if i < len(c.names) {
			m[c.names[i]] = v
		}
	}
	return m
}

// viewOf returns the view of a section: the section itself when it is one,
// else the view of a known section type; nil for a section the report
// cannot render.
func viewOf(sec finding.Section) any {
	switch v := sec.(type) {
	case modeView, countsView, cardsView, jsonView, csvView:
		return v
	case *finding.Streams:
		return streamsView{v}
	case *finding.CompareSummary:
		return compareView{v}
	case *finding.DeadLetters:
		return deadLetterView{v}
	case *finding.Windows:
		return windowView{v}
	}
	return nil
}

// views returns the views of the sections of s, in order, with the mode's
// first: the first section with a modeView, else the Kafka Streams
// audit's.
func views(s *finding.Summary) (modeView, []any) {
	var mode modeView
	out := make([]any, 0, len(s.Sections)+1)
	for _, sec := range s.Sections {
		v := viewOf(sec)
		if v == nil {
			continue
		}
		if m, ok := v.(modeView); ok && mode == nil {
			mode = m
		}
		out = append(out, v)
	}
	if mode == nil {
		d := streamsView{&finding.Streams{}}
		mode, out = d, append([]any{d}, out...)
	}
	return mode, out
}

// modeOf returns the view of the mode that produced s (see views).
func modeOf(s *finding.Summary) modeView {
	m, _ := views(s)
	return m
}

// countsOf returns the counts blocks of every section of s, in order.
func countsOf(s *finding.Summary) []countsBlock {
	_, vs := views(s)
	var out []countsBlock
	for _, v := range vs {
		if c, ok := v.(countsView); ok {
			out = append(out, c.counts(s)...)
		}
	}
	return out
}

// jsonBlocks returns the JSON blocks of the sections of s, in order.
func jsonBlocks(s *finding.Summary) []jsonField {
	var out []jsonField
	for _, sec := range s.Sections {
		if j, ok := viewOf(sec).(jsonView); ok {
			if b := j.jsonBlock(); b != nil {
				out = append(out, jsonField{key: sec.SectionName(), value: b})
			}
		}
	}
	return out
}

// cardsOf renders the HTML cards of every section of res, in order.
func cardsOf(res *finding.Result) ([]template.HTML, error) {
	_, vs := views(&res.Summary)
	var out []template.HTML
	for _, v := range vs {
		c, ok := v.(cardsView)
		if !ok {
			continue
		}
		for _, card := range c.cards(res) {
			h, err := executeCard(card)
			if err != nil {
				return nil, err
			}
			out = append(out, h)
		}
	}
	return out, nil
}
