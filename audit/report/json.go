package report

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// JSONVersion is the version of the JSON report schema below. It changes
// only when a field is renamed, removed or changes meaning; new fields may be
// added without a change.
const JSONVersion = 1

// The verdicts of a run, in the JSON "verdict" field.
const (
	// VerdictClean: the audit completed and found nothing (exit 0).
	VerdictClean = "clean"
	// VerdictFindings: the audit completed with per-key or partition-level
	// findings (exit 1).
	VerdictFindings = "findings"
	// VerdictPartial: the audit did not complete (exit 3); findings, if
	// any, are those found so far.
	VerdictPartial = "partial"
	// VerdictInconclusive: the audit ran, but could not check some inputs
	// (exit 3); see "inconclusive".
	VerdictInconclusive = "inconclusive"
)

var errNilResult = errors.New("report: no result to write")

// Verdict returns VerdictPartial, VerdictInconclusive, VerdictFindings or
// VerdictClean for res, in that precedence.
func Verdict(res *finding.Result) string {
	switch {
	case res == nil:
		return VerdictPartial
	case res.Summary.Partial:
		return VerdictPartial
	case len(res.Summary.Inconclusive) > 0:
		return VerdictInconclusive
	case res.HasFindings():
		return VerdictFindings
	}
	return VerdictClean
}

// jsonReport is the JSON report (docs/reference.md). Schema (all names snake_case; every field
// is always present unless marked optional; timestamps are RFC 3339 UTC
// strings with milliseconds, like the CSV):
//
//	{
//	  "version": 1,
//	  "verdict": "clean" | "findings" | "partial" | "inconclusive",
//	  "partial": bool,
//	  "partial_reason": string,            // "" unless partial
//	  "started": timestamp, "finished": timestamp,   // "" when unknown
//	  "input_order": [string],             // configured (join) order
//	  "inputs": [{                         // in input_order, then others by name
//	    "name": string, "scanned": n, "audited": n, "pending": n,
//	    "dropped_null_key": n, "dropped_null_value": n,
//	    "decode_errors": n, "outside_window": n,
//	    "dropped_filtered": n, "uncertain": n }],   // only when not 0: declared filters and re-keys
//	  "stages": [{                         // pipeline order
//	    "stage": "changelog" | "output", "keys_checked": n,
//	    "findings": {"missing": n, "stale": n, "aborted": n, ...} }],
//	  "inconclusive": [{                   // optional: why inputs could not be checked
//	    "reason": "no_committed_offsets" | "mostly_undecodable" | "nothing_audited" | "empty_window" | "no_records",
//	    "input": string,                   // "" for the whole run
//	    "detail": string }],
//	  "partition_findings": [{             // by topic, partition, kind
//	    "kind": "purged_past_commit" | "stuck_lso" | "offset_reset" | "truncated" | "poison_pill" |
//	            "offset_out_of_range" | "unprocessed_partition",
//	    "topic": string, "partition": n, "evidence": string,
//	    "offsets": {name: n} }],           // optional
//	  "read_issues": [{                    // optional: partitions whose reads met gaps or retries
//	    "topic": string, "partition": n, "gaps": n, "retries": n }],
//	  "schema_sources_unavailable": [{     // optional: schema sources that were down
//	    "source": string, "error": string, "served_by": string }],
//	  "decode_errors_by_schema": {string: n},   // optional
//	  "decode_error_samples": [{               // optional: the first few
//	    "topic": string, "partition": n, "offset": n, "error": string }],
//	  "timings": {string: string},         // optional, phase -> duration text
//	  // the sections' blocks, under their names (finding.Section):
//	  "compare": {                         // optional: lossaudit compare only
//	    "match": string, "group": string,  // group "" when grace decided what is due
//	    "grace": string,                   // duration text
//	    "pairs": [{"name": string, "source": string, "sink": string,
//	      "source_no_identity": n, "sink_records": n, "sink_no_identity": n,
//	      "sink_decode_errors": n, "identities": n, "no_source_record": n }],
//	    "ledger": {"sends": n, "acked": n, "failed": n, "verified": n,
//	      "expired": n, "unsettled": n, "other_lines": n } },   // optional
//	  "index": {"records_read": n, "entries": n},  // optional: evidence kept on disk
//	  "step": {                            // reconcile only: what the step did
//	    "number": n, "baseline": bool, "baseline_at": timestamp, "previous": timestamp,
//	    "read": {"input": n, "repartition": n, "changelog": n, "output": n},
//	    "keys_judged": n, "resolved": n, "rebuilt": [string] },
//	  "group": {"id": string,              // optional: the application's group when its offsets were read
//	    "type": "classic" | "consumer" | "streams" | "share" | "",   // "" unknown to the coordinator
//	    "state": string, "members": n,     // members -1 when unknown
//	    "described_by": string, "error": string },   // error optional: describing failed
//	  "resolved": [row],                   // reconcile only: findings this step found fixed
//	  "keys_redacted": true,               // only when report.redact_keys: keys are "hmac:..."
//	  "row_count": n,                      // len(rows)
//	  "rows": [{                           // same order and content as the CSV
//	    "finding": "missing" | "stale" | "aborted",
//	    "stage": string, "input": string,
//	    "key": string,                     // text, "b64:..." (FormatKey) or "hmac:..." (RedactKeys)
//	    "topic": string, "partition": n, "offset": n,
//	    "timestamp": timestamp, "expected_ts": timestamp,
//	    "observed_ts": timestamp | null,   // null when missing at the stage
//	    "detail": string,
//	    "columns": {string: string},      // optional: the CSV columns a mode adds, by name
//	    "first_seen": timestamp }]         // reconcile only: when first reported
//	}
type jsonReport struct {
	Version       int                `json:"version"`
	Verdict       string             `json:"verdict"`
	Partial       bool               `json:"partial"`
	PartialReason string             `json:"partial_reason"`
	Started       string             `json:"started"`
	Finished      string             `json:"finished"`
	InputOrder    []string           `json:"input_order"`
	Inputs        []jsonInput        `json:"inputs"`
	Stages        []jsonStage        `json:"stages"`
	Inconclusive  []jsonInconclusive `json:"inconclusive,omitempty"`
	Partitions    []jsonPartition    `json:"partition_findings"`
	ReadIssues    []jsonReadIssue    `json:"read_issues,omitempty"`
	SchemaSources []jsonSchemaSource `json:"schema_sources_unavailable,omitempty"`
	DecodeErrors  map[string]int64   `json:"decode_errors_by_schema,omitempty"`
	DecodeSamples []jsonDecodeSample `json:"decode_error_samples,omitempty"`
	Timings       map[string]string  `json:"timings,omitempty"`
	// The sections' blocks follow ("compare"), then jsonTail.
}

// jsonTail is the part of the JSON report after the sections' blocks.
type jsonTail struct {
	Index        *jsonIndex `json:"index,omitempty"`
	Step         *jsonStep  `json:"step,omitempty"`
	Group        *jsonGroup `json:"group,omitempty"`
	Resolved     *[]jsonRow `json:"resolved,omitempty"`
	KeysRedacted bool       `json:"keys_redacted,omitempty"`
	RowCount     int        `json:"row_count"`
	// "rows" follows, streamed by writeJSONStream.
}

// jsonField is one member of a JSON object, written in its place.
type jsonField struct {
	key   string
	value any
}

type jsonInput struct {
	Name          string `json:"name"`
	Scanned       int64  `json:"scanned"`
	Audited       int64  `json:"audited"`
	Pending       int64  `json:"pending"`
	NullKey       int64  `json:"dropped_null_key"`
	NullValue     int64  `json:"dropped_null_value"`
	DecodeErrors  int64  `json:"decode_errors"`
	OutsideWindow int64  `json:"outside_window"`
	Filtered      int64  `json:"dropped_filtered,omitempty"`
	Uncertain     int64  `json:"uncertain,omitempty"`
}

type jsonInconclusive struct {
	Reason finding.InconclusiveReason `json:"reason"`
	Input  string                     `json:"input"`
	Detail string                     `json:"detail"`
}

type jsonPartition struct {
	Kind      finding.PartitionKind `json:"kind"`
	Topic     string                `json:"topic"`
	Partition int32                 `json:"partition"`
	Evidence  string                `json:"evidence"`
	Offsets   map[string]int64      `json:"offsets,omitempty"`
}

type jsonReadIssue struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Gaps      int64  `json:"gaps"`
	Retries   int64  `json:"retries"`
}

type jsonGroup struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	State   string `json:"state"`
	Members int    `json:"members"`
	Via     string `json:"described_by"`
	Error   string `json:"error,omitempty"`
}

type jsonIndex struct {
	RecordsRead int64 `json:"records_read"`
	Entries     int64 `json:"entries"`
}

type jsonSchemaSource struct {
	Source   string `json:"source"`
	Error    string `json:"error"`
	ServedBy string `json:"served_by"`
}

type jsonDecodeSample struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error"`
}

type jsonStage struct {
	Stage       finding.Stage          `json:"stage"`
	KeysChecked int64                  `json:"keys_checked"`
	Findings    map[finding.Kind]int64 `json:"findings"`
	// KeysPending: finding.StageCounts.KeysPending, left out when 0.
	KeysPending int64 `json:"keys_pending,omitempty"`
}

type jsonRow struct {
	Finding    finding.Kind  `json:"finding"`
	Stage      finding.Stage `json:"stage"`
	Input      string        `json:"input"`
	Key        string        `json:"key"`
	Topic      string        `json:"topic"`
	Partition  int32         `json:"partition"`
	Offset     int64         `json:"offset"`
	Timestamp  string        `json:"timestamp"`
	ExpectedTS string        `json:"expected_ts"`
	ObservedTS *string       `json:"observed_ts"`
	Detail     string        `json:"detail"`
	// Columns are the cells of the columns a section adds to the CSV.
	Columns   map[string]string `json:"columns,omitempty"`
	FirstSeen string            `json:"first_seen,omitempty"`
}

type jsonStep struct {
	Number     int64            `json:"number"`
	Baseline   bool             `json:"baseline"`
	BaselineAt string           `json:"baseline_at"`
	Previous   string           `json:"previous"`
	Read       map[string]int64 `json:"read"`
	KeysJudged int64            `json:"keys_judged"`
	Resolved   int64            `json:"resolved"`
	Rebuilt    []string         `json:"rebuilt"`
}

// jsonRowOf is the JSON form of a row.
func jsonRowOf(r *finding.Row, cols rowColumns, redacted bool) jsonRow {
	jr := jsonRow{
		Finding: r.Kind, Stage: r.Stage, Input: r.Input, Key: keyText(redacted, r.Key) + WindowSuffix(r.Window),
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
		Timestamp: FormatTS(r.Timestamp), ExpectedTS: FormatTS(r.ExpectedTS), Detail: Detail(r),
		FirstSeen: formatTime(r.FirstSeen), Columns: cols.byName(r),
	}
	if r.HasObserved {
		obs := FormatTS(r.ObservedTS)
		jr.ObservedTS = &obs
	}
	return jr
}

// WriteJSON writes res as the JSON report whose schema is documented on
// jsonReport and in docs/reference.md: the summary plus every row, in the
// CSV's order. res is not modified. The output is indented and ends with a
// newline.
func WriteJSON(w io.Writer, res *finding.Result) error {
	if res == nil {
		return errNilResult
	}
	s := &res.Summary
	rep := jsonReport{
		Version:       JSONVersion,
		Verdict:       Verdict(res),
		Partial:       s.Partial,
		PartialReason: PartialReason(s),
		Started:       formatTime(s.Started),
		Finished:      formatTime(s.Finished),
		InputOrder:    nonNil(s.InputOrder),
		Inputs:        jsonInputs(s),
		Stages:        jsonStages(s),
		Partitions:    []jsonPartition{},
		DecodeErrors:  s.DecodeErrorsBySchema,
	}
	for i := range s.Inconclusive {
		in := &s.Inconclusive[i]
		rep.Inconclusive = append(rep.Inconclusive, jsonInconclusive{Reason: in.Reason, Input: in.Input, Detail: InconclusiveText(s, in)})
	}
	for _, p := range s.Partitions {
		ev, offs := Evidence(&p)
		rep.Partitions = append(rep.Partitions, jsonPartition{Kind: p.Kind, Topic: p.Topic, Partition: p.Partition, Evidence: ev, Offsets: offs})
	}
	for _, r := range s.Reads {
		rep.ReadIssues = append(rep.ReadIssues, jsonReadIssue(r))
	}
	for _, src := range s.SchemaSources {
		rep.SchemaSources = append(rep.SchemaSources, jsonSchemaSource(src))
	}
	for _, d := range s.DecodeErrorSamples {
		rep.DecodeSamples = append(rep.DecodeSamples, jsonDecodeSample(d))
	}
	if len(s.Timings) > 0 {
		rep.Timings = map[string]string{}
		for k, d := range s.Timings {
			rep.Timings[k] = Timing(d)
		}
	}
	tail := jsonTail{RowCount: len(res.Rows), KeysRedacted: s.KeysRedacted}
	if s.Index != (finding.IndexStats{}) {
		tail.Index = &jsonIndex{RecordsRead: s.Index.RecordsRead, Entries: s.Index.Entries}
	}
	if s.Step != nil {
		tail.Step, tail.Resolved = jsonStepOf(res)
	}
	if g := s.Group; g != nil {
		tail.Group = &jsonGroup{ID: g.ID, Type: g.Type, State: g.State, Members: g.Members, Via: g.Via, Error: g.Error}
	}
	return writeJSONStream(w, []any{&rep, jsonBlocks(s), &tail}, res.Rows, columnsOf(s), s.KeysRedacted)
}

// jsonInputs are the per-input counters, in inputNames order.
func jsonInputs(s *finding.Summary) []jsonInput {
	out := []jsonInput{}
	for _, name := range inputNames(s) {
		in := jsonInput{Name: name}
		if c := s.Inputs[name]; c != nil {
			in.Scanned, in.Audited, in.Pending, in.NullKey, in.NullValue, in.DecodeErrors, in.OutsideWindow =
				c.Scanned, c.Audited, c.Pending, c.NullKey, c.NullValue, c.DecodeErrors, c.OutsideWindow
			in.Filtered, in.Uncertain = c.Filtered, c.Uncertain
		}
		out = append(out, in)
	}
	return out
}

// jsonStages are the per-stage counters, each with every kind its stage
// can report.
func jsonStages(s *finding.Summary) []jsonStage {
	out := []jsonStage{}
	for _, st := range stageNames(s, modeOf(s)) {
		js := jsonStage{Stage: st, Findings: map[finding.Kind]int64{}}
		for _, k := range st.Kinds() {
			js.Findings[k] = 0
		}
		if c := s.Stages[st]; c != nil {
			js.KeysChecked, js.KeysPending = c.KeysChecked, c.KeysPending
			maps.Copy(js.Findings, c.Findings)
		}
		out = append(out, js)
	}
	return out
}

// jsonStepOf is the "step" block of a reconciliation step and its
// "resolved" rows.
func jsonStepOf(res *finding.Result) (*jsonStep, *[]jsonRow) {
	st := res.Summary.Step
	js := &jsonStep{Number: st.Number, Baseline: st.Baseline, BaselineAt: formatTime(st.BaselineAt),
		Previous: formatTime(st.Previous), Read: map[string]int64{}, KeysJudged: st.KeysJudged, Resolved: st.Resolved,
		Rebuilt: nonNil(st.Rebuilt)}
	maps.Copy(js.Read, st.Read)
	resolved := make([]jsonRow, 0, len(res.Resolved))
	cols := columnsOf(&res.Summary)
	for i := range res.Resolved {
		resolved = append(resolved, jsonRowOf(&res.Resolved[i], cols, res.Summary.KeysRedacted))
	}
	return js, &resolved
}

// writeJSONStream writes one JSON object: the members of parts in order
// (a struct's fields, or a []jsonField's), then "rows", one row at a time,
// so that a report with millions of rows never exists in memory as JSON.
// The output is the same as encoding one struct with all those fields and
// a "rows" field last.
func writeJSONStream(w io.Writer, parts []any, rows []finding.Row, cols rowColumns, redacted bool) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("{")
	sep := "\n"
	for _, part := range parts {
		members, err := jsonMembers(part)
		if err != nil {
			return fmt.Errorf("writing JSON report: %w", err)
		}
		for _, m := range members {
			bw.WriteString(sep)
			bw.Write(m)
			sep = ",\n"
		}
	}
	bw.WriteString(sep + "  \"rows\": [")
	var rb bytes.Buffer
	renc := json.NewEncoder(&rb)
	renc.SetEscapeHTML(false)
	renc.SetIndent("    ", "  ")
	for i := range rows {
		jr := jsonRowOf(&rows[i], cols, redacted)
		rb.Reset()
		if err := renc.Encode(&jr); err != nil {
			return fmt.Errorf("writing JSON report row %d: %w", i+1, err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(rb.Bytes(), []byte("\n")))
	}
	if len(rows) > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]\n}\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing JSON report: %w", err)
	}
	return nil
}

// jsonMembers returns the members of part as indented text at depth one
// ("  \"key\": value"): a struct's fields as encoding/json writes them, or
// each jsonField of a []jsonField.
func jsonMembers(part any) ([][]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if fields, ok := part.([]jsonField); ok {
		out := make([][]byte, 0, len(fields))
		for _, f := range fields {
			buf.Reset()
			enc.SetIndent("  ", "  ")
			buf.WriteString("  ")
			if err := enc.Encode(f.key); err != nil {
				return nil, err
			}
			buf.Truncate(buf.Len() - 1)
			buf.WriteString(": ")
			if err := enc.Encode(f.value); err != nil {
				return nil, fmt.Errorf("%s: %w", f.key, err)
			}
			out = append(out, bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))))
		}
		return out, nil
	}
	enc.SetIndent("", "  ")
	if err := enc.Encode(part); err != nil {
		return nil, err
	}
	// "{\n  a,\n  b\n}\n": the members are the lines between the braces,
	// split where a line at depth one starts.
	body := bytes.TrimSuffix(bytes.TrimPrefix(buf.Bytes(), []byte("{\n")), []byte("\n}\n"))
	if len(body) == 0 || bytes.Equal(buf.Bytes(), []byte("{}\n")) {
		return nil, nil
	}
	return [][]byte{bytes.Clone(body)}, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// inputNames returns the inputs of s in configured order, then any input
// that has counters but is not in InputOrder, by name.
func inputNames(s *finding.Summary) []string {
	seen := make(map[string]bool, len(s.InputOrder))
	var names []string
	for _, n := range s.InputOrder {
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	var extra []string
	for n := range s.Inputs {
		if !seen[n] {
			extra = append(extra, n)
		}
	}
	slices.Sort(extra)
	return append(names, extra...)
}

// stageNames returns the stages of s in pipeline order: those the mode
// always lists (an audit's changelog and output, so that its reports have a
// stable shape) and those counted.
func stageNames(s *finding.Summary, mode modeView) []finding.Stage {
	st := slices.Clone(mode.stages())
	for name := range s.Stages {
		if !slices.Contains(st, name) {
			st = append(st, name)
		}
	}
	slices.SortFunc(st, func(a, b finding.Stage) int {
		if c := cmp.Compare(a.Order(), b.Order()); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return st
}
