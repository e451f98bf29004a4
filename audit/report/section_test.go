package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// deadLetters is a section the report's core has never heard of, written as
// a next family would write one: its own type, its own view (counts and a
// JSON block), no change to the core.
type deadLetters struct {
	Counts map[string]int64
}

func (*deadLetters) SectionName() string { return "dead_letters" }

func (d *deadLetters) counts(*finding.Summary) []countsBlock {
	t := &table{header: []string{"INPUT", "DEAD-LETTERED"}, right: []bool{false, true}}
	t.add("a", Thousands(d.Counts["a"]))
	return []countsBlock{{title: "Dead-letter queue", htmlTitle: "Dead-letter queue", table: t}}
}

func (d *deadLetters) jsonBlock() any { return d.Counts }

// unknownSection has no view: the report leaves it out.
type unknownSection struct{}

func (unknownSection) SectionName() string { return "unknown" }

// TestSectionsAreOpen: a section the core does not know reaches the
// summary, the JSON and the HTML report in its places, after the mode's
// own; a section without a view changes nothing.
func TestSectionsAreOpen(t *testing.T) {
	plain, open := findingsResult(), findingsResult()
	open.Summary.Sections = []finding.Section{unknownSection{}, &deadLetters{Counts: map[string]int64{"a": 1234}}}
	open.Summary.Index = finding.IndexStats{RecordsRead: 10, Entries: 4}
	plain.Summary.Index = open.Summary.Index

	var sum bytes.Buffer
	if err := WriteSummary(&sum, open, SummaryOptions{}); err != nil {
		t.Fatal(err)
	}
	text := sum.String()
	inputs, dlq, stages := strings.Index(text, "\nInputs\n"), strings.Index(text, "\nDead-letter queue\n"), strings.Index(text, "\nStages\n")
	if inputs < 0 || dlq < inputs || stages < dlq || !strings.Contains(text, "  a              1,234\n") {
		t.Errorf("the section's table is not between the inputs and the stages:\n%s", text)
	}

	var js, plainJS bytes.Buffer
	if err := WriteJSON(&js, open); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&plainJS, plain); err != nil {
		t.Fatal(err)
	}
	block := "  \"dead_letters\": {\n    \"a\": 1234\n  },\n  \"index\""
	if !strings.Contains(js.String(), block) || !strings.Contains(js.String(), "\"timings\": {") ||
		strings.Index(js.String(), "\"timings\"") > strings.Index(js.String(), "\"dead_letters\"") {
		t.Errorf("the section's JSON block is not between timings and index:\n%s", js.String())
	}
	if got := strings.Replace(js.String(), strings.TrimSuffix(block, "  \"index\""), "", 1); got != plainJS.String() {
		t.Errorf("besides its block, the section changed the JSON report:\n%s", got)
	}
	var decoded map[string]any
	if err := json.Unmarshal(js.Bytes(), &decoded); err != nil {
		t.Fatalf("the JSON report with a section does not parse: %v", err)
	}

	page := renderHTML(t, open, HTMLOptions{})
	if !strings.Contains(page, "<h3>Dead-letter queue</h3><table class=\"counts\">") {
		t.Errorf("the HTML report lacks the section's table")
	}
}

// TestAResultWithoutSectionsIsAnAudit: results built before sections
// existed (no section at all) render as a Kafka Streams audit's, exactly
// as with its section.
func TestAResultWithoutSectionsIsAnAudit(t *testing.T) {
	bare, with := findingsResult(), findingsResult()
	with.Summary.Sections = []finding.Section{&finding.Streams{}}
	for name, write := range map[string]func(*bytes.Buffer, *finding.Result) error{
		"summary": func(b *bytes.Buffer, r *finding.Result) error { return WriteSummary(b, r, SummaryOptions{}) },
		"json":    func(b *bytes.Buffer, r *finding.Result) error { return WriteJSON(b, r) },
		"html":    func(b *bytes.Buffer, r *finding.Result) error { return WriteHTML(b, r, HTMLOptions{}) },
	} {
		var a, b bytes.Buffer
		if err := write(&a, bare); err != nil {
			t.Fatal(err)
		}
		if err := write(&b, with); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Errorf("%s: a result without sections renders otherwise than an audit's", name)
		}
	}
}

// windows is a section with a column of its own, as windowed keys would
// add one: the window of each row, here from its timestamp.
type windows struct{}

func (windows) SectionName() string { return "windows" }

func (windows) columns() []string { return []string{"window"} }

func (windows) cells(r *finding.Row) []string {
	return []string{FormatTS(r.Timestamp - r.Timestamp%60000)}
}

// TestSectionColumns: a section's column lands in the CSV after detail and
// before a step's first_seen, and in each JSON row's "columns" (resolved
// rows too); without one the CSV is WriteCSV's.
func TestSectionColumns(t *testing.T) {
	res := stepResult()
	res.Summary.Sections = []finding.Section{windows{}}
	var b bytes.Buffer
	if err := WriteResultCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(recs[0], ","), strings.Join(CSVHeader, ",")+",window,first_seen"; got != want {
		t.Errorf("header %q, want %q", got, want)
	}
	for i, r := range res.Rows {
		rec := recs[i+1]
		if got, want := rec[len(rec)-2:], []string{FormatTS(r.Timestamp - r.Timestamp%60000), formatTime(r.FirstSeen)}; !slices.Equal(got, want) {
			t.Errorf("row %d ends with %q, want %q", i, got, want)
		}
	}

	b.Reset()
	if err := WriteJSON(&b, res); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rows     []map[string]any `json:"rows"`
		Resolved []map[string]any `json:"resolved"`
	}
	if err := json.Unmarshal(b.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	for _, row := range append(rep.Rows, rep.Resolved...) {
		cols, _ := row["columns"].(map[string]any)
		if w, _ := cols["window"].(string); !strings.HasSuffix(w, ":00.000Z") {
			t.Errorf("JSON row %v: columns %v, want its window", row["key"], row["columns"])
		}
	}
	if !strings.Contains(b.String(), "\"detail\": \"seen in repartition topic app-A-repartition[2]@88, lost before the store\",\n      \"columns\": {\n        \"window\": ") {
		t.Errorf("columns do not follow detail in the JSON rows:\n%s", b.String())
	}

	plain := stepResult()
	var got, want bytes.Buffer
	if err := WriteResultCSV(&got, plain); err != nil {
		t.Fatal(err)
	}
	if err := WriteStepCSV(&want, plain.Rows); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Error("without a section's columns, the step CSV differs from WriteStepCSV's")
	}
}

// TestInconclusiveInTheModesWords: the same reason reads in the words of
// the mode that ran.
func TestInconclusiveInTheModesWords(t *testing.T) {
	in := finding.Inconclusive{Reason: finding.NoCommittedOffsets, Input: "orders", Group: "mirror", Key: "compare.group"}
	cmp := &finding.Summary{Sections: []finding.Section{&finding.CompareSummary{Group: "mirror"}}}
	if got, want := InconclusiveText(cmp, &in), "pair orders: group mirror has no committed offset on its source"; !strings.HasPrefix(got, want) {
		t.Errorf("comparison: %q, want it to start with %q", got, want)
	}
	if got, want := InconclusiveText(&finding.Summary{}, &in), "input orders: group mirror has no committed offset on its topic"; !strings.HasPrefix(got, want) {
		t.Errorf("audit: %q, want it to start with %q", got, want)
	}
}
