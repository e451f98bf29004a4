package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

func TestWriteJSONGolden(t *testing.T) {
	tests := []struct {
		name   string
		res    *finding.Result
		golden string
	}{
		{"clean", cleanResult(), "clean.json"},
		{"findings", findingsResult(), "findings.json"},
		{"partitions", partitionsResult(), "partitions.json"},
		{"partial", partialResult(), "partial.json"},
		{"inconclusive", inconclusiveResult(), "inconclusive.json"},
		{"step", stepResult(), "step.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteJSON(&buf, tt.res); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.golden, buf.Bytes())
		})
	}
}

// TestWriteJSONFields checks the schema from a consumer's side.
func TestWriteJSONFields(t *testing.T) {
	tests := []struct {
		name        string
		res         *finding.Result
		verdict     string
		partial     bool
		rows        int
		partitions  int
		stages      []string
		firstInputs []string
	}{
		{"clean", cleanResult(), "clean", false, 0, 0, []string{"changelog", "output"}, []string{"a", "b", "c"}},
		{"findings", findingsResult(), "findings", false, 7, 0, []string{"changelog", "output"}, []string{"a", "b", "c"}},
		{"partitions", partitionsResult(), "findings", false, 0, 2, []string{"changelog", "output"}, []string{"a", "b", "c"}},
		{"partial", partialResult(), "partial", true, 1, 0, []string{"changelog", "output"}, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteJSON(&buf, tt.res); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Version    int              `json:"version"`
				Verdict    string           `json:"verdict"`
				Partial    *bool            `json:"partial"`
				RowCount   int              `json:"row_count"`
				Rows       []map[string]any `json:"rows"`
				Partitions []map[string]any `json:"partition_findings"`
				Stages     []struct {
					Stage    string           `json:"stage"`
					Findings map[string]int64 `json:"findings"`
				} `json:"stages"`
				Inputs []map[string]any `json:"inputs"`
			}
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Version != JSONVersion || got.Verdict != tt.verdict || got.Partial == nil || *got.Partial != tt.partial {
				t.Errorf("version/verdict/partial = %d/%q/%v", got.Version, got.Verdict, got.Partial)
			}
			if got.RowCount != tt.rows || len(got.Rows) != tt.rows || got.Rows == nil {
				t.Errorf("row_count %d, rows %d (nil=%v), want %d", got.RowCount, len(got.Rows), got.Rows == nil, tt.rows)
			}
			if len(got.Partitions) != tt.partitions || got.Partitions == nil {
				t.Errorf("partition_findings %d, want %d (as [] when none)", len(got.Partitions), tt.partitions)
			}
			var stages []string
			for _, s := range got.Stages {
				stages = append(stages, s.Stage)
				for _, k := range []string{"missing", "stale", "aborted"} {
					if _, ok := s.Findings[k]; !ok {
						t.Errorf("stage %s lacks findings.%s", s.Stage, k)
					}
				}
			}
			if len(stages) != len(tt.stages) || stages[0] != tt.stages[0] || stages[1] != tt.stages[1] {
				t.Errorf("stages %v, want %v", stages, tt.stages)
			}
			for i, name := range tt.firstInputs {
				if got.Inputs[i]["name"] != name {
					t.Errorf("inputs[%d].name = %v, want %s", i, got.Inputs[i]["name"], name)
				}
				for _, f := range []string{"scanned", "audited", "pending", "dropped_null_key", "dropped_null_value", "decode_errors", "outside_window"} {
					if _, ok := got.Inputs[i][f]; !ok {
						t.Errorf("inputs[%d] lacks %s", i, f)
					}
				}
			}
			for i, r := range got.Rows {
				obs, present := r["observed_ts"]
				if !present {
					t.Errorf("row %d lacks observed_ts", i)
				}
				if r["finding"] == "missing" && obs != nil {
					t.Errorf("row %d: missing key with observed_ts %v, want null", i, obs)
				}
				if _, err := ParseKey(r["key"].(string)); err != nil {
					t.Errorf("row %d key: %v", i, err)
				}
			}
		})
	}
}

// TestWriteJSONStreamsValidJSON checks the streamed rows form one valid
// document whose rows match row_count, and that text is not HTML-escaped.
func TestWriteJSONStreamsValidJSON(t *testing.T) {
	for _, n := range []int{0, 1, 2, 1000} {
		res := manyRows(n)
		if n > 0 {
			res.Rows[0].Key = []byte("<x>&y")
		}
		var buf bytes.Buffer
		if err := WriteJSON(&buf, res); err != nil {
			t.Fatal(err)
		}
		var got struct {
			RowCount int `json:"row_count"`
			Rows     []struct {
				Key string `json:"key"`
			} `json:"rows"`
		}
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("%d rows: invalid JSON: %v", n, err)
		}
		if got.RowCount != n || len(got.Rows) != n {
			t.Fatalf("%d rows: row_count %d, rows %d", n, got.RowCount, len(got.Rows))
		}
		if n > 0 && !bytes.Contains(buf.Bytes(), []byte(`"key": "<x>&y"`)) {
			t.Errorf("key HTML-escaped or missing")
		}
	}
}
