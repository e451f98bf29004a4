package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// DefaultMaxRows is how many finding rows the summary lists when
// SummaryOptions.MaxRows is 0.
const DefaultMaxRows = 20

// maxKeyWidth bounds how much of a key the summary shows; the CSV has it all.
const maxKeyWidth = 24

// lineWidth is the terminal width the summary's text is wrapped to.
const lineWidth = 80

// SummaryOptions tunes WriteSummary.
type SummaryOptions struct {
	// MaxRows is how many finding rows to list: 0 means DefaultMaxRows,
	// a negative value lists none.
	MaxRows int
	// Color wraps the verdict line in ANSI colour (red: loss, yellow:
	// partial or suspected, green: clean). The caller decides, typically
	// by whether stdout is a terminal and NO_COLOR is unset.
	Color bool
	// CSVPath, JSONPath and HTMLPath name the report files written for
	// this run (as returned by WriteCSVFile/WriteJSONFile/WriteHTMLFile),
	// for the pointer to the full list; "" when not written.
	CSVPath, JSONPath, HTMLPath string
}

const (
	ansiRed    = "\x1b[1;31m"
	ansiYellow = "\x1b[1;33m"
	ansiGreen  = "\x1b[1;32m"
	ansiReset  = "\x1b[0m"
)

// WriteSummary writes the terminal summary of res: a one-line verdict, the
// per-input and per-stage tables, partition-level findings with evidence,
// the first rows of the loss report with a pointer to the CSV for the rest,
// decode errors by schema, and timings. Numbers carry thousands separators;
// text that comes from the audited data (keys, details, topic names) is
// escaped so it cannot move the cursor or change the terminal's colours.
// res is not modified.
func WriteSummary(w io.Writer, res *finding.Result, opt SummaryOptions) error {
	if res == nil {
		return errNilResult
	}
	var b strings.Builder
	s := &res.Summary
	mode := modeOf(s)
	writeVerdict(&b, res, mode, opt)
	for _, c := range countsOf(s) {
		c.write(&b)
	}
	writeGroup(&b, s.Group)
	b.WriteString("\nStages\n")
	st := stageTable(s, mode)
	st.write(&b, "  ")
	if line := pendingLine(s); line != "" {
		b.WriteString(wrap("  ", line, "  "))
	}
	writeStep(&b, res)
	writePartitions(&b, s.Partitions)
	writeReads(&b, s.Reads)
	writeRows(&b, res, mode, opt)
	writeSchemaSources(&b, s.SchemaSources)
	writeDecodeErrors(&b, s)
	writeTimings(&b, s)
	writeReportFiles(&b, s, opt)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing summary: %w", err)
	}
	return nil
}

// writeVerdict writes the verdict line (coloured when asked), why the run
// is partial or inconclusive, and what to do next.
func writeVerdict(b *strings.Builder, res *finding.Result, mode modeView, opt SummaryOptions) {
	s := &res.Summary
	verdict, t := verdictLine(res, mode)
	verdict = strings.TrimSuffix(wrap("", verdict, "  "), "\n")
	if opt.Color {
		verdict = t.ansi() + verdict + ansiReset
	}
	b.WriteString(verdict)
	b.WriteString("\n")
	if why := PartialReason(s); why != "" {
		b.WriteString(wrap("  why: ", safe(why), "       "))
	}
	for i := range s.Inconclusive {
		b.WriteString(wrap("  why: ", safe(InconclusiveText(s, &s.Inconclusive[i])), "       "))
	}
	if hint := nextStep(res, mode, opt); hint != "" {
		b.WriteString(wrap("  next: ", hint, "        "))
	}
}

// write writes a counts block: its title, its table (or what stands for
// an empty one) and its notes.
func (c *countsBlock) write(b *strings.Builder) {
	fmt.Fprintf(b, "\n%s\n", c.title)
	if c.table != nil {
		c.table.write(b, "  ")
	} else {
		b.WriteString("  " + c.empty + "\n")
	}
	for _, note := range c.notes {
		b.WriteString("  " + note + "\n")
	}
}

// writeGroup writes what the group's coordinator said of the group.
func writeGroup(b *strings.Builder, g *finding.Group) {
	if g != nil {
		b.WriteString("\n" + wrap("Group: ", safe(GroupText(g)), "  "))
	}
}

// writePartitions lists the partition findings with their evidence.
func writePartitions(b *strings.Builder, pf []finding.PartitionFinding) {
	if len(pf) == 0 {
		b.WriteString("\nPartition findings: none\n")
		return
	}
	fmt.Fprintf(b, "\nPartition findings (%s)\n", Thousands(int64(len(pf))))
	for i := range pf {
		p := &pf[i]
		fmt.Fprintf(b, "  %s  %s[%d]\n", safe(string(p.Kind)), safe(p.Topic), p.Partition)
		ev, offs := Evidence(p)
		if ev != "" {
			b.WriteString(wrap("      ", safe(ev), "      "))
		}
		if len(offs) > 0 {
			fmt.Fprintf(b, "      offsets: %s\n", offsetsText(offs))
		}
	}
}

// writeReads lists the partitions whose reads met gaps or retries.
func writeReads(b *strings.Builder, reads []finding.ReadIssue) {
	if len(reads) == 0 {
		return
	}
	fmt.Fprintf(b, "\nRead issues (%s)\n", plural(int64(len(reads)), "partition", "partitions"))
	for i := range reads {
		r := &reads[i]
		b.WriteString(wrap(fmt.Sprintf("  %s[%d]: ", safe(r.Topic), r.Partition), ReadIssueText(r), "      "))
	}
}

// writeSchemaSources names the schema sources that failed.
func writeSchemaSources(b *strings.Builder, sources []finding.SchemaSource) {
	for _, src := range sources {
		line := fmt.Sprintf("%s (%s)", safe(src.Source), safe(src.Error))
		if src.ServedBy != "" {
			line += "; schemas came from " + safe(src.ServedBy) + " instead"
		}
		b.WriteString("\n" + wrap("Schema source unavailable: ", line, "  "))
	}
}

// writeDecodeErrors counts decode errors by schema and quotes the first
// undecodable records.
func writeDecodeErrors(b *strings.Builder, s *finding.Summary) {
	if len(s.DecodeErrorsBySchema) > 0 {
		b.WriteString("\nDecode errors by schema\n")
		dt := table{header: []string{"SCHEMA", "ERRORS"}, right: []bool{false, true}}
		for _, k := range slices.Sorted(maps.Keys(s.DecodeErrorsBySchema)) {
			dt.add(safe(k), Thousands(s.DecodeErrorsBySchema[k]))
		}
		dt.write(b, "  ")
	}
	if len(s.DecodeErrorSamples) == 0 {
		return
	}
	var total int64
	for _, n := range s.DecodeErrorsBySchema {
		total += n
	}
	if n := int64(len(s.DecodeErrorSamples)); total > n {
		fmt.Fprintf(b, "\nUndecodable records (first %s of %s)\n", Thousands(n), Thousands(total))
	} else {
		fmt.Fprintf(b, "\nUndecodable records (%s)\n", Thousands(n))
	}
	for _, d := range s.DecodeErrorSamples {
		b.WriteString(wrap(fmt.Sprintf("  %s[%d]@%d: ", safe(d.Topic), d.Partition, d.Offset), safe(d.Error), "      "))
	}
}

// writeReportFiles names the report files written for the run.
func writeReportFiles(b *strings.Builder, s *finding.Summary, opt SummaryOptions) {
	var files []string
	for _, p := range []string{opt.CSVPath, opt.JSONPath, opt.HTMLPath} {
		if p != "" {
			files = append(files, safe(p))
		}
	}
	if len(files) == 0 {
		return
	}
	b.WriteString("\nReports: " + strings.Join(files, ", "))
	if s.Partial {
		b.WriteString(" (partial)")
	}
	b.WriteString("\n")
}

// stageTable is the per-stage counts table of the summary: one column per
// kind the stages can report (missing, stale, aborted for an audit).
func stageTable(s *finding.Summary, mode modeView) table {
	stages := stageNames(s, mode)
	kinds := stageKinds(stages)
	st := table{header: []string{"STAGE", mode.checkedHeader()}, right: []bool{false, true}}
	for _, k := range kinds {
		st.header = append(st.header, strings.ToUpper(strings.ReplaceAll(string(k), "_", " ")))
		st.right = append(st.right, true)
	}
	for _, name := range stages {
		c := s.Stages[name]
		if c == nil {
			c = &finding.StageCounts{}
		}
		cells := []string{safe(string(name)), Thousands(c.KeysChecked)}
		for _, k := range kinds {
			cells = append(cells, Thousands(c.Findings[k]))
		}
		st.add(cells...)
	}
	return st
}

// pendingLine says how many (input, key) pairs the output does not hold
// yet because a suppress buffer still holds them; "" when none.
func pendingLine(s *finding.Summary) string {
	c := s.Stages[finding.StageOutput]
	if c == nil || c.KeysPending == 0 {
		return ""
	}
	verb := "are"
	if c.KeysPending == 1 {
		verb = "is"
	}
	return plural(c.KeysPending, "key", "keys") + " not yet at the output " + verb +
		" pending in the suppress buffer (emitted when its time limit passes): not lost"
}

// stageKinds returns the finding kinds the stages can report, each once, in
// the order of the stages' own lists.
func stageKinds(stages []finding.Stage) []finding.Kind {
	var out []finding.Kind
	for _, st := range stages {
		for _, k := range st.Kinds() {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	return out
}

// tone is how a verdict should strike the reader: the terminal colours it,
// the HTML report styles it.
type tone uint8

const (
	toneClean tone = iota // nothing lost
	toneWarn              // partial, inconclusive or suspected
	toneLoss              // updates lost
)

func (t tone) ansi() string {
	switch t {
	case toneLoss:
		return ansiRed
	case toneWarn:
		return ansiYellow
	}
	return ansiGreen
}

// verdictLine returns the first line of the summary and its tone.
func verdictLine(res *finding.Result, mode modeView) (string, tone) {
	return verdictOf(res, mode.verdictWords(res))
}

// verdictWords are the words of a verdict that differ between modes.
type verdictWords struct {
	// scope says what was checked; rows counts the rows; found heads a
	// verdict with rows; partial heads a partial one; nothingRows says
	// there are no rows but partition findings.
	scope, rows, found, partial, nothingRows string
	// pending names one and many pending records, and why they are.
	pending [3]string
}

// verdictOf returns the verdict line of res in words w, and its tone.
func verdictOf(res *finding.Result, w verdictWords) (string, tone) {
	s := &res.Summary
	nrows := int64(len(res.Rows))
	npf := int64(len(s.Partitions))
	pending := ""
	if n := s.Pending(); n > 0 {
		pending = "; " + plural(n, w.pending[0], w.pending[1]) + " pending (" + w.pending[2] + ")"
	}
	so := fmt.Sprintf("so far %s, %s, %s", w.scope, w.rows, plural(npf, "partition finding", "partition findings"))
	switch {
	case s.Partial:
		return w.partial + ": results are incomplete; " + so, toneWarn
	case len(s.Inconclusive) > 0:
		return fmt.Sprintf("INCONCLUSIVE: %s could not be checked; %s%s", inconclusiveSubject(s.Inconclusive), so, pending), toneWarn
	case nrows > 0:
		line := fmt.Sprintf("%s (%s); %s", w.found, kindCounts(res.Rows), w.scope)
		if npf > 0 {
			line += "; " + plural(npf, "partition finding", "partition findings")
		}
		return line + pending, toneLoss
	case npf > 0:
		return fmt.Sprintf("LOSS SUSPECTED: %s, but %s (%s); %s%s", w.nothingRows,
			plural(npf, "partition finding", "partition findings"), partitionKindCounts(s.Partitions), w.scope, pending), toneWarn
	}
	return fmt.Sprintf("NO LOSS FOUND: %s, 0 findings%s", w.scope, pending), toneClean
}

// inconclusiveSubject names what could not be checked: "input c", "inputs
// b, c", or "the pipeline" for a reason about the whole run.
func inconclusiveSubject(in []finding.Inconclusive) string {
	var names []string
	for _, i := range in {
		if i.Input == "" {
			return "the pipeline"
		}
		if !slices.Contains(names, i.Input) {
			names = append(names, safe(i.Input))
		}
	}
	if len(names) == 1 {
		return "input " + names[0]
	}
	return "inputs " + strings.Join(names, ", ")
}

// nextStep says what to do about the verdict, or "" when nothing.
func nextStep(res *finding.Result, mode modeView, opt SummaryOptions) string {
	s := &res.Summary
	switch {
	case s.Partial && opt.CSVPath != "":
		return "findings so far are in " + safe(opt.CSVPath) + "; a complete report of an earlier run is left as it was; re-run once the cause is fixed"
	case s.Partial:
		return "re-run once the cause is fixed"
	case len(s.Inconclusive) > 0 && opt.CSVPath != "":
		return "fix what the lines above name and re-run; findings so far are in " + safe(opt.CSVPath)
	case len(s.Inconclusive) > 0:
		return "fix what the lines above name and re-run"
	case len(res.Rows) > 0 && opt.CSVPath != "":
		return "each row of " + safe(opt.CSVPath) + " " + mode.rowWords().next
	case len(res.Rows) > 0:
		return "re-run with --csv FILE to get every row with the input record to replay"
	case len(s.Partitions) > 0:
		return "read the partition findings below: they name records that could not be checked key by key"
	}
	return ""
}

// writeRows lists the first rows of the loss report, each with the mode's
// note under it.
func writeRows(b *strings.Builder, res *finding.Result, mode modeView, opt SummaryOptions) {
	n := len(res.Rows)
	if n == 0 {
		return
	}
	limit := opt.MaxRows
	if limit == 0 {
		limit = DefaultMaxRows
	}
	limit = max(0, min(limit, n))
	words := mode.rowWords()
	where := "in the CSV report (set report.csv or pass --csv)"
	if opt.CSVPath != "" {
		where = "in " + safe(opt.CSVPath)
	}
	if limit == 0 {
		fmt.Fprintf(b, "\n%s (%s): all %s\n", words.title, Thousands(int64(n)), where)
		return
	}
	if limit == n {
		fmt.Fprintf(b, "\n%s (%s)\n", words.title, Thousands(int64(n)))
	} else {
		fmt.Fprintf(b, "\n%s (first %s of %s)\n", words.title, Thousands(int64(limit)), Thousands(int64(n)))
	}
	if res.Summary.KeysRedacted {
		b.WriteString("  (keys are redacted, report.redact_keys: KEY is hmac: and a keyed hash of the\n")
		b.WriteString("  key, the same in every report made with the same report.redact_key_file)\n")
	}
	b.WriteString(words.legend)
	t := table{header: []string{"FINDING", "STAGE", "INPUT", "KEY", "REPLAY"}}
	notes := make([]string, 0, limit)
	for i := range res.Rows[:limit] {
		r := &res.Rows[i]
		t.add(safe(string(r.Kind)), safe(string(r.Stage)), safe(r.Input), truncate(safe(keyText(res.Summary.KeysRedacted, r.Key)), maxKeyWidth)+WindowSuffix(r.Window),
			fmt.Sprintf("%s[%d]@%d", safe(r.Topic), r.Partition, r.Offset))
		notes = append(notes, mode.rowNote(r))
	}
	t.writeWithNotes(b, "  ", notes, "      ")
	if limit < n {
		fmt.Fprintf(b, "  ... and %s more, all %s\n", Thousands(int64(n-limit)), where)
	}
}

// writeStep describes a reconciliation step: what it read, and the
// findings it resolved.
func writeStep(b *strings.Builder, res *finding.Result) {
	st := res.Summary.Step
	if st == nil {
		return
	}
	b.WriteString("\n" + wrap("", StepText(st), "  "))
	var read []string
	for _, role := range stepRoles(st) {
		read = append(read, Thousands(st.Read[role])+" "+safe(role))
	}
	judged, counters := plural(st.KeysJudged, "key", "keys"), "input counters"
	if comparesCopies(st) {
		judged, counters = plural(st.KeysJudged, "record identity", "record identities"), "pair counters"
	}
	b.WriteString(wrap("  ", fmt.Sprintf("read %s records; %s judged (the %s above are totals since the baseline)",
		andList(read), judged, counters), "    "))
	for _, p := range st.Rebuilt {
		b.WriteString(wrap("  ", safe(p)+" was truncated: read again from its start, its keys' state rebuilt", "    "))
	}
	n := len(res.Resolved)
	if n == 0 {
		b.WriteString("  resolved: none\n")
		return
	}
	limit := min(n, DefaultMaxRows)
	b.WriteString(wrap("  ", fmt.Sprintf("resolved: %s fixed since the previous step (a later update or a replay arrived)", plural(int64(n), "finding", "findings")), "    "))
	t := table{header: []string{"FINDING", "STAGE", "INPUT", "KEY", "FIRST SEEN"}}
	for _, r := range res.Resolved[:limit] {
		t.add(safe(string(r.Kind)), safe(string(r.Stage)), safe(r.Input), truncate(safe(keyText(res.Summary.KeysRedacted, r.Key)), maxKeyWidth)+WindowSuffix(r.Window), formatTime(r.FirstSeen))
	}
	t.write(b, "    ")
	if limit < n {
		fmt.Fprintf(b, "    ... and %s more, all in the JSON report's \"resolved\"\n", Thousands(int64(n-limit)))
	}
}

// stepRoleOrder is the order in which a step lists the roles of the topics
// it read: the Kafka Streams audit's in pipeline order, then a
// comparison's; other roles follow by name.
var stepRoleOrder = []string{"input", "repartition", "changelog", "output", "source", "sink", "ledger"}

// stepRoles returns the roles st counts reads for, in stepRoleOrder.
func stepRoles(st *finding.Step) []string {
	roles := slices.Sorted(maps.Keys(st.Read))
	slices.SortStableFunc(roles, func(a, b string) int {
		ra, rb := slices.Index(stepRoleOrder, a), slices.Index(stepRoleOrder, b)
		if ra < 0 {
			ra = len(stepRoleOrder)
		}
		if rb < 0 {
			rb = len(stepRoleOrder)
		}
		return ra - rb
	})
	return roles
}

// andList joins "a", "a and b", "a, b and c".
func andList(parts []string) string {
	if len(parts) < 2 {
		return strings.Join(parts, "")
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func writeTimings(b *strings.Builder, s *finding.Summary) {
	if len(s.Timings) == 0 && s.Started.IsZero() {
		return
	}
	b.WriteString("\nTimings\n")
	t := table{header: []string{"PHASE", "TOOK"}}
	for _, k := range timingNames(s.Timings) {
		t.add(safe(k), Timing(s.Timings[k]))
	}
	if !s.Started.IsZero() && !s.Finished.IsZero() {
		t.add("total", s.Finished.Sub(s.Started).Round(1e6).String())
	}
	t.write(b, "  ")
	if !s.Started.IsZero() {
		fmt.Fprintf(b, "  started %s", formatTime(s.Started))
		if !s.Finished.IsZero() {
			fmt.Fprintf(b, ", finished %s", formatTime(s.Finished))
		}
		b.WriteString("\n")
	}
}

// timingOrder is the order in which an audit (and a comparison) runs its
// phases (the Timings keys of streams.Run and compare.Run), with a
// reconcile step's own around them (app.Reconcile's start, prepare and
// state; the command's reports, commit and close); Summary.Timings is a
// map, so the order is restored here.
var timingOrder = []string{"start", "prepare", "state", "ledger", "snapshot", "read", "check", "lookup", "reports", "commit", "close"}

// timingNames returns the keys of m: known phases in run order, then the
// others by name.
func timingNames(m map[string]time.Duration) []string {
	var names []string
	for _, k := range timingOrder {
		if _, ok := m[k]; ok {
			names = append(names, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(timingOrder, k) {
			names = append(names, k)
		}
	}
	return names
}

// kindCounts renders "9 missing, 2 stale" in the order of the stages' kinds
// (missing, stale, aborted, then the comparison's), then other kinds by
// name, leaving out zeros.
func kindCounts(rows []finding.Row) string {
	counts := map[finding.Kind]int64{}
	for i := range rows {
		counts[rows[i].Kind]++
	}
	var parts []string
	for _, k := range kindOrder(counts) {
		parts = append(parts, Thousands(counts[k])+" "+safe(string(k)))
	}
	return strings.Join(parts, ", ")
}

func partitionKindCounts(pf []finding.PartitionFinding) string {
	counts := map[finding.PartitionKind]int64{}
	for _, p := range pf {
		counts[p.Kind]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, Thousands(counts[k])+" "+safe(string(k)))
	}
	return strings.Join(parts, ", ")
}

func offsetsText(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, safe(k)+"="+strconv.FormatInt(m[k], 10))
	}
	return strings.Join(parts, " ")
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return Thousands(n) + " " + many
}

// TerminalSafe makes text from audited data harmless on a terminal, as
// every report printed to one does (see safe).
func TerminalSafe(s string) string { return safe(s) }

// safe makes text from audited data harmless on a terminal: control
// characters (including ESC, CR, LF, TAB, DEL and C1 controls) and invalid
// UTF-8 are shown as Go escapes.
func safe(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
