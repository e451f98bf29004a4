package report

import (
	"bytes"
	"encoding/csv"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestWriteCSVGolden(t *testing.T) {
	tests := []struct {
		name   string
		res    *finding.Result
		golden string
	}{
		{"findings", findingsResult(), "findings.csv"},
		{"clean", cleanResult(), "clean.csv"},
		{"step", stepResult(), "step.csv"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteResultCSV(&buf, tt.res); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, buf.Bytes())
		})
	}
}

// TestWriteCSVReadsBack checks what a replay script would rely on: the
// header, one record per row in report order, every field recoverable.
func TestWriteCSVReadsBack(t *testing.T) {
	res := findingsResult()
	orig := slices.Clone(res.Rows)
	var buf bytes.Buffer
	if err := WriteResultCSV(&buf, res); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte("\r")) {
		t.Error("CSV contains CR: records must end with LF only")
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("finding,stage,input,key,topic,partition,offset,timestamp,expected_ts,observed_ts,detail\n")) {
		t.Errorf("header line wrong: %q", strings.SplitN(buf.String(), "\n", 2)[0])
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v", err)
	}
	if len(recs) != 1+len(orig) {
		t.Fatalf("got %d records, want header + %d rows", len(recs), len(orig))
	}
	want := slices.Clone(orig)
	for i, rec := range recs[1:] {
		w := want[i]
		key, err := ParseKey(rec[3])
		if err != nil {
			t.Fatal(err)
		}
		part, _ := strconv.ParseInt(rec[5], 10, 32)
		off, _ := strconv.ParseInt(rec[6], 10, 64)
		ts, err := time.Parse(time.RFC3339Nano, rec[7])
		if err != nil {
			t.Fatalf("row %d timestamp %q: %v", i, rec[7], err)
		}
		if rec[0] != string(w.Kind) || rec[1] != string(w.Stage) || rec[2] != w.Input || !bytes.Equal(key, w.Key) ||
			rec[4] != w.Topic || int32(part) != w.Partition || off != w.Offset || ts.UnixMilli() != w.Timestamp ||
			rec[8] != FormatTS(w.ExpectedTS) || rec[10] != Detail(&w) {
			t.Errorf("row %d = %q, want %+v", i, rec, w)
		}
		if (rec[9] == "") != !w.HasObserved {
			t.Errorf("row %d observed_ts %q with HasObserved=%v", i, rec[9], w.HasObserved)
		}
		if w.HasObserved && rec[9] != FormatTS(w.ObservedTS) {
			t.Errorf("row %d observed_ts %q, want %q", i, rec[9], FormatTS(w.ObservedTS))
		}
	}
	// Report order: changelog rows first, input a before b before c.
	var order []string
	for _, rec := range recs[1:] {
		order = append(order, rec[1]+"/"+rec[2])
	}
	wantOrder := []string{"changelog/a", "changelog/a", "changelog/a", "changelog/a", "changelog/b", "changelog/c", "output/a"}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("row order %v, want %v", order, wantOrder)
	}
}

type failWriter struct{ after int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk full")
	}
	f.after--
	return len(p), nil
}

func TestWriteCSVReportsWriteErrors(t *testing.T) {
	err := WriteCSV(&failWriter{}, findingRows())
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("error = %v, want the writer's error", err)
	}
}
