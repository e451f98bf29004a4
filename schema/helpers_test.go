package schema

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
)

// orderSchema is a realistic value: 15 fields, a nested record, nullable
// unions, logical types, strings, an array, a map, an enum and a fixed.
const orderSchema = `{
 "type": "record", "name": "Order", "namespace": "com.acme",
 "fields": [
  {"name": "orderId", "type": "string"},
  {"name": "customerId", "type": "string"},
  {"name": "customer", "type": ["null", {"type": "record", "name": "Customer", "fields": [
     {"name": "id", "type": "string"},
     {"name": "name", "type": "string"},
     {"name": "tier", "type": {"type": "enum", "name": "Tier", "symbols": ["BRONZE", "SILVER", "GOLD"]}},
     {"name": "accountNo", "type": "long"},
     {"name": "address", "type": ["null", {"type": "record", "name": "Address", "fields": [
        {"name": "street", "type": "string"}, {"name": "city", "type": "string"}, {"name": "zip", "type": "string"}]}], "default": null}
  ]}], "default": null},
  {"name": "amount", "type": "double"},
  {"name": "currency", "type": "string"},
  {"name": "quantity", "type": "int"},
  {"name": "createdAt", "type": {"type": "long", "logicalType": "timestamp-millis"}},
  {"name": "updatedAt", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}], "default": null},
  {"name": "tags", "type": {"type": "array", "items": "string"}},
  {"name": "attrs", "type": {"type": "map", "values": "string"}},
  {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID", "SHIPPED", "CANCELLED"]}},
  {"name": "note", "type": ["null", "string"], "default": null},
  {"name": "sku", "type": {"type": "fixed", "name": "Sku", "size": 8}},
  {"name": "priority", "type": "boolean"},
  {"name": "seq", "type": "long"}
 ]}`

func order(i int, withCustomer bool) map[string]any {
	var cust any
	if withCustomer {
		cust = goavro.Union("com.acme.Customer", map[string]any{
			"id": "cust-" + itoa(i%97), "name": "Customer Name " + itoa(i), "tier": "GOLD",
			"accountNo": int64(1000000 + i),
			"address":   goavro.Union("com.acme.Address", map[string]any{"street": "1 Long Street Name", "city": "Springfield", "zip": "12345"}),
		})
	}
	return map[string]any{
		"orderId": "order-" + itoa(i), "customerId": "cust-" + itoa(i%97), "customer": cust,
		"amount": 12.5 * float64(i), "currency": "EUR", "quantity": int32(i % 10),
		"createdAt": time.UnixMilli(1764000000000 + int64(i)).UTC(),
		"updatedAt": goavro.Union("long.timestamp-micros", time.UnixMicro(1764000000000123+int64(i)).UTC()),
		"tags":      []any{"express", "gift"}, "attrs": map[string]any{"channel": "web", "campaign": "black-friday"},
		"status": "PAID", "note": nil, "sku": []byte("SKU00042"), "priority": i%2 == 0, "seq": int64(i),
	}
}

func itoa(i int) string {
	return string(appendInt(nil, i))
}

func appendInt(b []byte, i int) []byte {
	if i >= 10 {
		b = appendInt(b, i/10)
	}
	return append(b, byte('0'+i%10))
}

// frame encodes native with schema js and prepends the Confluent header.
func frame(t testing.TB, id uint32, js string, native any) []byte {
	t.Helper()
	c, err := goavro.NewCodec(js)
	if err != nil {
		t.Fatalf("codec: %v", err)
	}
	b := make([]byte, 5, 256)
	binary.BigEndian.PutUint32(b[1:], id)
	b, err = c.BinaryFromNative(b, native)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}
