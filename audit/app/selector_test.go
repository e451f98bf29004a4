package app

import (
	"bytes"
	"context"
	"testing"

	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/schema"
)

// TestSelectorJavaKeys checks that the selected key is the one the Kafka
// Streams application writes to its repartition topic: a string (from an
// Avro string field, or a record key read with the String serde) as Java
// decodes and re-encodes it, so malformed UTF-8 becomes U+FFFD; bytes
// fields, bytes keys and Avro keys keep their bytes.
func TestSelectorJavaKeys(t *testing.T) {
	const valueSchema = `{"type":"record","name":"V","fields":[{"name":"customerId","type":"string"},{"name":"raw","type":"bytes"}]}`
	const keySchema = `{"type":"record","name":"K","fields":[{"name":"id","type":"string"}]}`
	reg := schema.NewRegistry(schema.StaticSource{1: valueSchema, 2: keySchema})
	notUTF8 := []byte("\xff\xfe-notutf8")
	javaForm := []byte("\uFFFD\uFFFD-notutf8")
	avroString := func(id byte, s []byte) []byte {
		b := []byte{0, 0, 0, 0, id, byte(2 * len(s))} // zigzag length, len(s) < 64
		return append(b, s...)
	}
	value := func(cust, raw []byte) []byte {
		v := avroString(1, cust)
		return append(append(v, byte(2*len(raw))), raw...)
	}
	avroKey := avroString(2, notUTF8)
	tests := []struct {
		name  string
		in    config.Input
		key   []byte
		value []byte
		want  []byte
	}{
		{"rekey string field, not UTF-8", config.Input{Rekey: "customerId", KeyFormat: config.KeyFormatString},
			[]byte("k"), value(notUTF8, nil), javaForm},
		{"rekey string field, lone continuation byte", config.Input{Rekey: "customerId", KeyFormat: config.KeyFormatString},
			nil, value([]byte("a\x80b"), nil), []byte("a\uFFFDb")},
		{"rekey string field, truncated 3-byte sequence", config.Input{Rekey: "customerId", KeyFormat: config.KeyFormatString},
			nil, value([]byte("\xe2\x82A"), nil), []byte("\uFFFDA")},
		{"rekey string field, valid", config.Input{Rekey: "customerId", KeyFormat: config.KeyFormatString},
			nil, value([]byte("cust-001"), nil), []byte("cust-001")},
		{"rekey bytes field keeps its bytes", config.Input{Rekey: "raw", KeyFormat: config.KeyFormatString},
			nil, value([]byte("c"), notUTF8), notUTF8},
		{"string record key, not UTF-8", config.Input{KeyFormat: config.KeyFormatString},
			notUTF8, value([]byte("c"), nil), javaForm},
		{"string record key, valid", config.Input{KeyFormat: config.KeyFormatString},
			[]byte("cust-001"), value([]byte("c"), nil), []byte("cust-001")},
		{"bytes record key keeps its bytes", config.Input{KeyFormat: config.KeyFormatBytes},
			notUTF8, value([]byte("c"), nil), notUTF8},
		{"avro record key keeps its payload", config.Input{KeyFormat: config.KeyFormatAvro},
			avroKey, value([]byte("c"), nil), avroKey[5:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.in.Name, tt.in.Topic = "a", "in-a"
			sel, _, err := selector(context.Background(), "pipeline.inputs[0]", tt.in, reg)
			if err != nil {
				t.Fatal(err)
			}
			key, _, st, err := sel(&kread.Record{Topic: "in-a", Key: tt.key, Value: tt.value, Timestamp: 1})
			if err != nil || st != streams.Selected {
				t.Fatalf("selecting: status %v, error %v", st, err)
			}
			if !bytes.Equal(key, tt.want) {
				t.Errorf("selected key %x (%q), want %x (%q)", key, key, tt.want, tt.want)
			}
		})
	}
}
