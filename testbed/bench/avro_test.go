package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"

	"github.com/lossaudit/lossaudit/audit/demo/sim"
)

// TestAvroMatchesGoavro decodes the hand-encoded values with goavro and the
// simulator's schemas: the loader writes what the simulator would.
func TestAvroMatchesGoavro(t *testing.T) {
	order, err := goavro.NewCodec(sim.OrderSchema)
	if err != nil {
		t.Fatal(err)
	}
	joined, err := goavro.NewCodec(sim.JoinedSchema)
	if err != nil {
		t.Fatal(err)
	}
	cust := "cust-00000042"
	ts := int64(1795946400123)
	for _, tc := range []struct {
		name string
		cust *string
		want map[string]any
	}{
		{"with customer", &cust, map[string]any{"customerId": map[string]any{"string": cust}}},
		{"null customer", nil, map[string]any{"customerId": nil}},
	} {
		v := appendOrder(nil, tc.cust, "B000000123", 4567, ts)
		if v[0] != 0 || v[4] != orderSchemaID {
			t.Fatalf("%s: header % x", tc.name, v[:5])
		}
		got, rest, err := order.NativeFromBinary(v[5:])
		if err != nil || len(rest) != 0 {
			t.Fatalf("%s: decode: %v, %d bytes left", tc.name, err, len(rest))
		}
		m := got.(map[string]any)
		want := map[string]any{"customerId": tc.want["customerId"], "orderId": "B000000123",
			"item": map[string]any{"sku": "sku-123", "quantity": int32(1 + 4567%7)}, "amountCents": int64(4567),
			"price": 45.67, "eventTime": time.UnixMilli(ts).UTC(), "op": "UPSERT"}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("%s: decoded %v, want %v", tc.name, m, want)
		}
	}
	v := appendJoined(nil, cust, 1, 2, 0, true, false, ts)
	got, rest, err := joined.NativeFromBinary(v[5:])
	if err != nil || len(rest) != 0 || v[4] != joinedSchemaID {
		t.Fatalf("joined: %v, %d bytes left, id %d", err, len(rest), v[4])
	}
	want := map[string]any{"customerId": cust, "aAmountCents": int64(1), "bAmountCents": map[string]any{"long": int64(2)},
		"cAmountCents": nil, "updatedAt": time.UnixMilli(ts).UTC()}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("joined decoded %v, want %v", got, want)
	}
}
