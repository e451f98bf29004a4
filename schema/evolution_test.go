package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/linkedin/goavro/v2"
)

// Three writer versions of subject orders-value: v2 makes customerId
// nullable and adds fields before it; v3 renames it (the path is missing).
const (
	evoV1 = `{"type":"record","name":"Order","namespace":"com.acme","fields":[
	  {"name":"orderId","type":"string"},
	  {"name":"customerId","type":"string"},
	  {"name":"amount","type":"long"}]}`
	evoV2 = `{"type":"record","name":"Order","namespace":"com.acme","fields":[
	  {"name":"orderId","type":"string"},
	  {"name":"region","type":{"type":"enum","name":"Region","symbols":["EU","US"]},"default":"EU"},
	  {"name":"lines","type":{"type":"array","items":{"type":"record","name":"Line","fields":[{"name":"sku","type":"string"},{"name":"qty","type":"int"}]}},"default":[]},
	  {"name":"customerId","type":["null","string"],"default":null},
	  {"name":"amount","type":"long"}]}`
	evoV3 = `{"type":"record","name":"Order","namespace":"com.acme","fields":[
	  {"name":"orderId","type":"string"},
	  {"name":"clientId","type":"string"}]}`
)

func evoRecord(i int, cust string) map[string]any {
	return map[string]any{"orderId": "o-" + itoa(i), "customerId": cust, "amount": int64(i)}
}

func evoRecordV2(i int, cust string) map[string]any {
	var c any
	if cust != "" {
		c = goavro.Union("string", cust)
	}
	return map[string]any{"orderId": "o-" + itoa(i), "region": "US",
		"lines":      []any{map[string]any{"sku": "s1", "qty": int32(2)}, map[string]any{"sku": "s2", "qty": int32(1)}},
		"customerId": c, "amount": int64(i)}
}

func TestSchemaEvolution(t *testing.T) {
	reg := NewRegistry(StaticSource{1: evoV1, 2: evoV2, 3: evoV3})
	ex, err := reg.Extractor("customerId")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		value  []byte
		key    string
		isNull bool
		kind   ErrorKind
	}{
		{"v1", frame(t, 1, evoV1, evoRecord(1, "c-1")), "c-1", false, 0},
		{"v2", frame(t, 2, evoV2, evoRecordV2(2, "c-2")), "c-2", false, 0},
		{"v2 null", frame(t, 2, evoV2, evoRecordV2(3, "")), "", true, 0},
		{"v1 again", frame(t, 1, evoV1, evoRecord(4, "c-4")), "c-4", false, 0},
		{"v3 lacks the field", frame(t, 3, evoV3, map[string]any{"orderId": "o-5", "clientId": "c-5"}), "", false, KindFieldMissing},
		{"v3 again", frame(t, 3, evoV3, map[string]any{"orderId": "o-6", "clientId": "c-6"}), "", false, KindFieldMissing},
	}
	counts := Counts{}
	for _, tt := range tests {
		key, isNull, err := ex.Extract(tt.value)
		counts.Add(err)
		if tt.kind != 0 {
			var de *DecodeError
			if !errors.As(err, &de) || de.Kind != tt.kind || de.SchemaID != 3 || de.Path != "customerId" {
				t.Errorf("%s: err = %v, want %v for schema id 3", tt.name, err, tt.kind)
			} else if msg := err.Error(); !strings.Contains(msg, `"customerId"`) || !strings.Contains(msg, "schema id 3") || !strings.Contains(msg, "com.acme.Order") {
				t.Errorf("%s: error %q does not name the path, the schema id and the record", tt.name, msg)
			}
			continue
		}
		if err != nil || key != tt.key || isNull != tt.isNull {
			t.Errorf("%s: got (%q, %v, %v), want (%q, %v)", tt.name, key, isNull, err, tt.key, tt.isNull)
		}
	}
	if len(counts) != 1 || counts[CountKey{Kind: KindFieldMissing, SchemaID: 3, HasID: true}] != 2 {
		t.Errorf("counts = %v, want 2 field_missing for schema id 3", counts)
	}
}

// TestUnionBranchWithoutField: a union of two record types where only one
// has the field compiles; records taking the other branch fail per record.
func TestUnionBranchWithoutField(t *testing.T) {
	js := `{"type":"record","name":"E","fields":[{"name":"payload","type":[
	  "null",
	  {"type":"record","name":"Order","fields":[{"name":"customerId","type":"long"}]},
	  {"type":"record","name":"Refund","fields":[{"name":"amount","type":"long"}]}]}]}`
	reg := NewRegistry(StaticSource{9: js})
	ex, err := reg.Extractor("payload.customerId")
	if err != nil {
		t.Fatal(err)
	}
	k, isNull, err := ex.Extract(frame(t, 9, js, map[string]any{"payload": goavro.Union("Order", map[string]any{"customerId": int64(-77)})}))
	if err != nil || k != "-77" || isNull {
		t.Fatalf("Order branch: (%q, %v, %v)", k, isNull, err)
	}
	_, _, err = ex.Extract(frame(t, 9, js, map[string]any{"payload": goavro.Union("Refund", map[string]any{"amount": int64(5)})}))
	var de *DecodeError
	if !errors.As(err, &de) || de.Kind != KindFieldMissing || !strings.Contains(err.Error(), "Refund") {
		t.Fatalf("Refund branch: err = %v", err)
	}
	_, isNull, err = ex.Extract(frame(t, 9, js, map[string]any{"payload": nil}))
	if err != nil || !isNull {
		t.Fatalf("null branch: (%v, %v)", isNull, err)
	}
}
