package app

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lossaudit/lossaudit/audit/compare"
	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/schema"
)

func partsText(parts [][]byte) string {
	var s []string
	for _, p := range parts {
		if p == nil {
			s = append(s, "null")
		} else {
			s = append(s, fmt.Sprintf("%q", p))
		}
	}
	return strings.Join(s, " ")
}

// TestIdentify checks what each compare.match rule takes as a record's
// identity, and which records it cannot identify.
func TestIdentify(t *testing.T) {
	reg := schema.NewRegistry(schema.StaticSource{1: `{"type":"record","name":"V","fields":[{"name":"id","type":["null","string"]}]}`})
	field, err := reg.Extractor("id")
	if err != nil {
		t.Fatal(err)
	}
	avro := func(id string) []byte {
		if id == "" {
			return []byte{0, 0, 0, 0, 1, 0} // union branch 0: null
		}
		return append([]byte{0, 0, 0, 0, 1, 2, byte(2 * len(id))}, id...)
	}
	tests := []struct {
		match string
		rec   kread.Record
		want  string
		st    compare.Status
	}{
		{"record", kread.Record{Key: []byte("k"), Value: []byte("v")}, `"k" "v"`, compare.Identified},
		{"record", kread.Record{Key: nil, Value: []byte{}}, `null ""`, compare.Identified},
		{"key", kread.Record{Key: []byte("k"), Value: []byte("v")}, `"k"`, compare.Identified},
		{"key", kread.Record{Value: []byte("v")}, "", compare.NoIdentity},
		{"header:id", kread.Record{Key: []byte("k"), Header: []byte("h-1")}, `"h-1"`, compare.Identified},
		{"header:id", kread.Record{Key: []byte("k")}, "", compare.NoIdentity},
		{"field:id", kread.Record{Value: avro("o-7")}, `"o-7"`, compare.Identified},
		{"field:id", kread.Record{Value: avro("")}, "", compare.NoIdentity},
		{"field:id", kread.Record{Value: nil}, "", compare.NoIdentity},
		{"field:id", kread.Record{Value: []byte("not avro")}, "", compare.DecodeError},
	}
	for _, tt := range tests {
		t.Run(tt.match+" "+tt.want, func(t *testing.T) {
			rule, arg, err := config.ParseMatch(tt.match)
			if err != nil {
				t.Fatal(err)
			}
			parts, st, err := Identify(context.Background(), rule, arg, field)(&tt.rec, nil)
			if st != tt.st || partsText(parts) != tt.want {
				t.Errorf("identity %s, status %v (%v); want %s, %v", partsText(parts), st, err, tt.want, tt.st)
			}
		})
	}
}

// TestLedgerFileIdentity checks that a ledger line's identity is what the
// match takes from the topic's records, and that a line the match cannot
// identify stops the run naming the file and the line.
func TestLedgerFileIdentity(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	vp := write("vp.jsonl", `{"name":"startup_complete"}`+"\n"+
		`{"name":"producer_send_success","topic":"t","partition":1,"offset":5,"key":"k","value":"v"}`+"\n")
	native := write("native.jsonl", `{"topic":"t","acked":false,"key":"`+b64("k")+`","value":"`+b64("v")+`"}`+"\n"+
		`{"topic":"t","acked":false,"id":"order-9"}`+"\n")
	nullKey := write("nullkey.jsonl", `{"name":"producer_send_error","topic":"t","key":null,"value":"3"}`+"\n")
	tests := []struct {
		path, match string
		want        []string
		err         string
	}{
		{vp, "record", []string{`2 t acked [1]@5: "k" "v"`}, ""},
		{vp, "key", []string{`2 t acked [1]@5: "k"`}, ""},
		{native, "key", []string{`1 t failed: "k"`, `2 t failed: "order-9"`}, ""},
		{native, "header:id", nil, "line 1: gives no header to match: give the native format's id"},
		{native, "record", nil, "line 2: names the record by id, but compare.match is record"},
		{nullKey, "key", nil, "line 1: has a null key, which compare.match key cannot identify"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.path)+" "+tt.match, func(t *testing.T) {
			rule, _, err := config.ParseMatch(tt.match)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			_, err = LedgerFile(context.Background(), tt.path, rule, nil)(func(l *compare.LedgerLine) error {
				how := "failed"
				if l.Acked {
					how = fmt.Sprintf("acked [%d]@%d", l.Partition, l.Offset)
				}
				got = append(got, fmt.Sprintf("%d %s %s: %s", l.Line, l.Topic, how, partsText(l.Identity)))
				return nil
			})
			if tt.err != "" {
				var le *ledgerError
				if !errors.As(err, &le) || !strings.Contains(err.Error(), tt.path+": "+tt.err) {
					t.Fatalf("error %v, want one naming %s and %q", err, tt.path, tt.err)
				}
				return
			}
			if err != nil || strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("lines %q (error %v), want %q", got, err, tt.want)
			}
		})
	}
}
