package report

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dirNames lists the entries of dir, to catch leftover temporary files.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileAtomic(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name     string
		existing *string // content before, nil = no file
		write    func(io.Writer) error
		panics   bool
		wantErr  error
		want     *string // content after, nil = no file
	}{
		{
			name:  "new file",
			write: func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err },
			want:  ptr("new\n"),
		},
		{
			name:     "replaces existing",
			existing: ptr("old report\n"),
			write:    func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err },
			want:     ptr("new\n"),
		},
		{
			name:     "error after partial write leaves existing untouched",
			existing: ptr("old report\n"),
			write: func(w io.Writer) error {
				_, _ = io.WriteString(w, strings.Repeat("half", 100000)) // beyond the buffer: really on disk
				return errBoom
			},
			wantErr: errBoom,
			want:    ptr("old report\n"),
		},
		{
			name:    "error with no existing file creates nothing",
			write:   func(w io.Writer) error { _, _ = io.WriteString(w, "x"); return errBoom },
			wantErr: errBoom,
		},
		{
			name:     "panic leaves existing untouched",
			existing: ptr("old report\n"),
			write:    func(w io.Writer) error { _, _ = io.WriteString(w, strings.Repeat("p", 100000)); panic("writer bug") },
			panics:   true,
			want:     ptr("old report\n"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "loss-report.csv")
			if tt.existing != nil {
				if err := os.WriteFile(path, []byte(*tt.existing), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			func() {
				defer func() {
					if r := recover(); (r != nil) != tt.panics {
						t.Fatalf("panic = %v, want panic %v", r, tt.panics)
					}
				}()
				err := WriteFileAtomic(path, tt.write)
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				if err != nil && !strings.Contains(err.Error(), path) {
					t.Errorf("error %q does not name the file", err)
				}
			}()
			got, err := os.ReadFile(path)
			switch {
			case tt.want == nil && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("file exists (err %v), want none", err)
			case tt.want != nil && string(got) != *tt.want:
				t.Errorf("content %q, want %q", got, *tt.want)
			}
			wantNames := 0
			if tt.want != nil {
				wantNames = 1
			}
			if names := dirNames(t, dir); len(names) != wantNames {
				t.Errorf("directory holds %v: temporary file left behind", names)
			}
			if tt.existing != nil && tt.want != nil {
				if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
					t.Errorf("mode of replaced file %v (err %v), want the old 0640", fi.Mode().Perm(), err)
				}
			}
		})
	}
}

func TestWriteFileAtomicBadDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "r.csv")
	if err := WriteFileAtomic(path, func(io.Writer) error { return nil }); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("error = %v, want one naming %s", err, path)
	}
}

func TestReportFilesPartial(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "loss-report.csv")
	jsonPath := filepath.Join(dir, "report.json")

	// A complete run.
	complete := findingsResult()
	gotCSV, err := WriteCSVFile(csvPath, complete, 0)
	if err != nil || gotCSV != csvPath {
		t.Fatalf("WriteCSVFile = %q, %v", gotCSV, err)
	}
	gotJSON, err := WriteJSONFile(jsonPath, complete, 0)
	if err != nil || gotJSON != jsonPath {
		t.Fatalf("WriteJSONFile = %q, %v", gotJSON, err)
	}
	completeCSV, _ := os.ReadFile(csvPath)
	completeJSON, _ := os.ReadFile(jsonPath)
	var want bytes.Buffer
	if err := WriteResultCSV(&want, complete); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(completeCSV, want.Bytes()) {
		t.Fatal("CSV file differs from WriteResultCSV output")
	}

	// A partial run goes next to it and leaves the complete report alone.
	partial := partialResult()
	gotCSV, err = WriteCSVFile(csvPath, partial, 0)
	if err != nil || gotCSV != csvPath+".partial" {
		t.Fatalf("partial WriteCSVFile = %q, %v; want %s.partial", gotCSV, err, csvPath)
	}
	gotJSON, err = WriteJSONFile(jsonPath, partial, 0)
	if err != nil || gotJSON != jsonPath+".partial" {
		t.Fatalf("partial WriteJSONFile = %q, %v", gotJSON, err)
	}
	if b, _ := os.ReadFile(csvPath); !bytes.Equal(b, completeCSV) {
		t.Error("partial run changed the complete CSV")
	}
	if b, _ := os.ReadFile(jsonPath); !bytes.Equal(b, completeJSON) {
		t.Error("partial run changed the complete JSON")
	}
	if b, _ := os.ReadFile(jsonPath + ".partial"); !bytes.Contains(b, []byte(`"partial": true`)) {
		t.Error("partial JSON does not say partial")
	}
	if b, _ := os.ReadFile(csvPath + ".partial"); !bytes.HasPrefix(b, []byte("finding,stage,")) || bytes.Count(b, []byte("\n")) != 2 {
		t.Errorf("partial CSV content %q, want header + 1 row", b)
	}

	// The next complete run removes the stale partial reports.
	if _, err := WriteCSVFile(csvPath, cleanResult(), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteJSONFile(jsonPath, cleanResult(), 0); err != nil {
		t.Fatal(err)
	}
	names := dirNames(t, dir)
	if len(names) != 2 || names[0] != "loss-report.csv" || names[1] != "report.json" {
		t.Errorf("after a complete run the directory holds %v, want only the two reports", names)
	}
}

func ptr(s string) *string { return &s }
