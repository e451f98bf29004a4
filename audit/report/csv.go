package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// CSVHeader is the header row of the loss report, in column order
// (docs/reference.md, "Loss report (CSV)").
var CSVHeader = []string{"finding", "stage", "input", "key", "topic", "partition", "offset", "timestamp", "expected_ts", "observed_ts", "detail"}

// FirstSeenColumn is the column a reconciliation step's loss report adds
// after CSVHeader's: when the finding was first reported.
const FirstSeenColumn = "first_seen"

// WriteCSV writes the loss report: the header, then one record per row in
// the order given (a Result's rows are in report order, finding.SortRows). Keys are rendered by FormatKey, timestamps by FormatTS, and
// observed_ts is empty when the stage holds nothing for the key.
//
// Fields are quoted per RFC 4180 (encoding/csv: a field is quoted when it
// contains a comma, a double quote, CR or LF, or starts with a space; quotes
// are doubled). Records end with LF, not the CRLF of RFC 4180, on purpose:
// every CSV reader (spreadsheets, Python, pandas, Go) accepts LF; line tools
// (cut, awk, grep) then see no stray CR on the last column; and encoding/csv
// in CRLF mode would rewrite LF inside a quoted field to CRLF and drop bare
// CRs, altering the detail text.
func WriteCSV(w io.Writer, rows []finding.Row) error {
	return writeCSV(w, rows, rowColumns{}, false, false)
}

// WriteStepCSV writes the loss report of a reconciliation step: WriteCSV's
// columns, then first_seen.
func WriteStepCSV(w io.Writer, rows []finding.Row) error {
	return writeCSV(w, rows, rowColumns{}, true, false)
}

// writeCSV writes CSVHeader's columns, then the sections' cols, then
// first_seen when asked; keys redacted when the result's are
// (Summary.KeysRedacted).
func writeCSV(w io.Writer, rows []finding.Row, cols rowColumns, firstSeen, redacted bool) error {
	cw := csv.NewWriter(w)
	cw.UseCRLF = false
	header := append(slices.Clone(CSVHeader), cols.names...)
	if firstSeen {
		header = append(header, FirstSeenColumn)
	}
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("writing CSV header: %w", err)
	}
	rec := make([]string, len(header))
	for i := range rows {
		r := &rows[i]
		rec[0] = string(r.Kind)
		rec[1] = string(r.Stage)
		rec[2] = r.Input
		rec[3] = keyText(redacted, r.Key) + WindowSuffix(r.Window)
		rec[4] = r.Topic
		rec[5] = strconv.FormatInt(int64(r.Partition), 10)
		rec[6] = strconv.FormatInt(r.Offset, 10)
		rec[7] = FormatTS(r.Timestamp)
		rec[8] = FormatTS(r.ExpectedTS)
		rec[9] = ""
		if r.HasObserved {
			rec[9] = FormatTS(r.ObservedTS)
		}
		rec[10] = Detail(r)
		if len(cols.names) > 0 {
			copy(rec[len(CSVHeader):], cols.cells(r))
		}
		if firstSeen {
			rec[len(rec)-1] = formatTime(r.FirstSeen)
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("writing CSV row %d: %w", i+1, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}

// WriteResultCSV writes the rows of res as the loss report: WriteCSV's
// columns, the columns its sections add (none for today's modes), and for
// a reconciliation step first_seen.
func WriteResultCSV(w io.Writer, res *finding.Result) error {
	if res == nil {
		return errNilResult
	}
	return writeCSV(w, res.Rows, columnsOf(&res.Summary), res.Summary.Step != nil, res.Summary.KeysRedacted)
}
