package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestScanDecode checks `scan --decode` on values whose fate is known:
// two schema versions registered in _schemas, plus a short value, a bad
// magic byte, an unknown schema id, a truncated Avro payload and a
// tombstone (which is not an error).
func TestScanDecode(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "_schemas", "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	v1 := `{"type":"record","name":"Order","fields":[{"name":"customerId","type":"string"}]}`
	v2 := `{"type":"record","name":"Order","fields":[{"name":"customerId","type":"string"},{"name":"n","type":"long","default":0}]}`
	register := func(id, version int, schema string) {
		key := fmt.Sprintf(`{"keytype":"SCHEMA","subject":"orders-value","version":%d,"magic":1}`, version)
		val, _ := json.Marshal(map[string]any{"subject": "orders-value", "version": version, "id": id, "schema": schema, "deleted": false})
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "_schemas", Key: []byte(key), Value: val}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	register(11, 1, v1)
	register(12, 2, v2)
	frame := func(id uint32, schema string, datum map[string]any) []byte {
		codec, err := goavro.NewCodec(schema)
		if err != nil {
			t.Fatal(err)
		}
		b := []byte{0, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], id)
		b, err = codec.BinaryFromNative(b, datum)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	good1 := frame(11, v1, map[string]any{"customerId": "c1"})
	good2 := frame(12, v2, map[string]any{"customerId": "c2", "n": int64(7)})
	values := [][]byte{
		good1, good1, good1, // 3 x schema 11
		good2, good2, // 2 x schema 12
		{0, 0},                   // short
		{1, 0, 0, 0, 11, 2, 'x'}, // bad magic
		frame(99, v1, map[string]any{"customerId": "c"}), // unknown schema id 99
		good2[:len(good2)-3],                             // truncated: avro error, schema 12
		nil,                                              // tombstone: not an error
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "orders", Key: []byte("k"), Value: v}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cfgFile := filepath.Join(t.TempDir(), "audit.yaml")
	cfgText := fmt.Sprintf("kafka:\n  brokers: [%q]\nschema:\n  schemas_topic: _schemas\n", c.ListenAddrs()[0])
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}

	var stdout, stderr bytes.Buffer
	if code := testRun([]string{"scan", "-c", cfgFile, "--topic", "orders", "--decode", "--json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("scan --decode --json exit %d, stderr: %s", code, stderr.String())
	}
	var row struct {
		Committed    int64 `json:"committed"`
		DecodeErrors int64 `json:"decode_errors"`
		Schemas      []struct {
			ID       uint32   `json:"id"`
			Subjects []string `json:"subjects"`
			Records  int64    `json:"records"`
		} `json:"schemas"`
		Errors map[string]int64 `json:"decode_errors_by_kind"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &row); err != nil {
		t.Fatalf("parsing %q: %v", stdout.String(), err)
	}
	if row.Committed != 10 || row.DecodeErrors != 4 {
		t.Errorf("committed %d, decode errors %d; want 10 and 4", row.Committed, row.DecodeErrors)
	}
	wantErrs := map[string]int64{"short": 1, "bad_magic": 1, "unknown_schema": 1, "avro": 1}
	if fmt.Sprint(row.Errors) != fmt.Sprint(wantErrs) {
		t.Errorf("decode errors by kind = %v, want %v", row.Errors, wantErrs)
	}
	got := fmt.Sprint(row.Schemas)
	want := "[{11 [orders-value/1] 3} {12 [orders-value/2] 3} {99 [] 1}]"
	if got != want {
		t.Errorf("schemas = %s, want %s (schema 12 includes the truncated value)", got, want)
	}

	stdout.Reset()
	if code := testRun([]string{"scan", "-c", cfgFile, "--topic", "orders", "--decode"}, &stdout, &stderr); code != 0 {
		t.Fatalf("scan --decode exit %d, stderr: %s", code, stderr.String())
	}
	for _, line := range []string{"schema id 11 (orders-value/1): 3 records", "schema id 99 (subject unknown): 1 records", "decode errors, bad_magic: 1"} {
		if !strings.Contains(stdout.String(), line) {
			t.Errorf("table output lacks %q:\n%s", line, stdout.String())
		}
	}

	// Without a schema source, --decode is a usage error.
	noSchema := filepath.Join(t.TempDir(), "plain.yaml")
	os.WriteFile(noSchema, []byte(fmt.Sprintf("kafka:\n  brokers: [%q]\nschema:\n  schemas_topic: \"\"\n", c.ListenAddrs()[0])), 0o644)
	stderr.Reset()
	if code := testRun([]string{"scan", "-c", noSchema, "--topic", "orders", "--decode"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "needs a schema source") {
		t.Errorf("--decode without schema source: exit %d, stderr %q; want 2 naming the missing source", code, stderr.String())
	}
}
