// Package report renders a finding.Result for people and for programs: the
// terminal summary (WriteSummary), the loss report CSV of docs/reference.md
// (WriteCSV), the JSON report (WriteJSON), the self-contained HTML report
// (WriteHTML; its template, style and script are in html/), and writes
// report files atomically (WriteFileAtomic, WriteCSVFile, WriteJSONFile,
// WriteHTMLFile).
//
// Shared conventions of all the renderings:
//
//   - Keys are text when they can be written and read back unchanged, else
//     "b64:" followed by standard, padded base64 of the raw bytes (FormatKey,
//     ParseKey). Text is used only for valid UTF-8 that neither starts with
//     "b64:" (which would be ambiguous) nor contains a carriage return (CSV
//     readers normalise CR LF inside quoted fields, so the key would not
//     round-trip); everything else is base64.
//   - Timestamps are RFC 3339 in UTC with exactly three fractional digits,
//     e.g. 2026-11-29T10:15:02.123Z (FormatTS).
//   - Rows come in the result's order (finding.SortRows: stage in pipeline
//     order, input in configured order, key bytewise, then offset), and
//     partition findings in finding.SortPartitions order; the reports do
//     not reorder them.
//   - Every word a user reads is written in this package, from the
//     structured values of package finding; no other package writes them.
//     The words every mode shares are in the core (summary.go, json.go,
//     html.go, words.go); the words of one mode are in its section's file
//     (section_streams.go, section_compare.go), and the words of an
//     evidence type beside the others of its mode (words.go,
//     words_compare.go). A mode's counts, words, HTML cards and JSON block
//     reach the core only through its section's view (section.go), so the
//     core never asks which mode ran.
//
// Incomplete runs: a partial or inconclusive audit (not Result.Complete)
// never replaces a complete report. Its files are written to the
// configured path with the suffix ".partial" (ReportPath), the summary's
// verdict line says PARTIAL AUDIT or INCONCLUSIVE, and the JSON's verdict
// says so too. The CSV itself has no room to say so without breaking CSV
// parsers, hence the file name.
package report
