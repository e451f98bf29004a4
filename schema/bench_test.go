package schema

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
)

// randomOrder fills the realistic schema with random values: random
// (partly non-ASCII) strings, null customers and addresses, extreme numbers.
func randomOrder(r *rand.Rand) map[string]any {
	str := func() string {
		var b strings.Builder
		for range r.IntN(24) {
			if r.IntN(8) == 0 {
				b.WriteRune(rune(0x4e00 + r.IntN(500)))
			} else {
				b.WriteByte(byte('a' + r.IntN(26)))
			}
		}
		return b.String()
	}
	var cust any
	if r.IntN(4) > 0 {
		var addr any
		if r.IntN(2) == 0 {
			addr = goavro.Union("com.acme.Address", map[string]any{"street": str(), "city": str(), "zip": str()})
		}
		cust = goavro.Union("com.acme.Customer", map[string]any{"id": str(), "name": str(),
			"tier": []string{"BRONZE", "SILVER", "GOLD"}[r.IntN(3)], "accountNo": int64(r.Uint64()), "address": addr})
	}
	var upd any
	if r.IntN(2) == 0 {
		upd = goavro.Union("long.timestamp-micros", time.UnixMicro(int64(r.Uint64()>>12)-1<<50).UTC())
	}
	var note any
	if r.IntN(2) == 0 {
		note = goavro.Union("string", str())
	}
	tags := []any{}
	for range r.IntN(4) {
		tags = append(tags, str())
	}
	attrs := map[string]any{}
	for i := range r.IntN(4) {
		attrs[str()+itoa(i)] = str()
	}
	return map[string]any{
		"orderId": str(), "customerId": str(), "customer": cust, "amount": r.NormFloat64() * 1e6,
		"currency": str(), "quantity": int32(r.Uint32()), "createdAt": time.UnixMilli(int64(r.Uint64()>>20) - 1<<43).UTC(),
		"updatedAt": upd, "tags": tags, "attrs": attrs, "status": []string{"NEW", "PAID", "SHIPPED", "CANCELLED"}[r.IntN(4)],
		"note": note, "sku": []byte(str() + "xxxxxxxx")[:8], "priority": r.IntN(2) == 0, "seq": int64(r.Uint64()),
	}
}

// TestExtractorMatchesGoavro: the realistic schema and the evolution
// schemas with random values; every key and timestamp path extracted by the
// projection decoder equals the one read from goavro's full decode.
func TestExtractorMatchesGoavro(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 3))
	reg := NewRegistry(StaticSource{1: orderSchema, 2: evoV1, 3: evoV2})
	paths := []string{"orderId", "customerId", "customer.id", "customer.name", "customer.address.city", "customer.accountNo", "quantity", "seq", "note"}
	exs := map[string]*Extractor{}
	for _, p := range append(paths, "createdAt", "updatedAt") {
		ex, err := reg.Extractor(p)
		if err != nil {
			t.Fatal(err)
		}
		exs[p] = ex
	}
	checked := 0
	for i := range 3000 {
		var v []byte
		switch i % 3 {
		case 0:
			v = frame(t, 1, orderSchema, randomOrder(r))
		case 1:
			v = frame(t, 2, evoV1, evoRecord(r.IntN(1e6), "c-"+itoa(r.IntN(1e6))))
		default:
			c := ""
			if r.IntN(2) == 0 {
				c = "c-" + itoa(r.IntN(1e6))
			}
			v = frame(t, 3, evoV2, evoRecordV2(r.IntN(1e6), c))
		}
		_, native, err := reg.Decode(context.Background(), v)
		if err != nil {
			t.Fatalf("seed %d: goavro: %v", seed, err)
		}
		for _, p := range paths {
			key, isNull, err := exs[p].Extract(v)
			want, ok := genericKey(native, p)
			if err != nil {
				if ok {
					t.Fatalf("seed %d: path %s: projection error %v, goavro has %q", seed, p, err, want)
				}
				continue
			}
			if isNull != !ok || (ok && key != want) {
				t.Fatalf("seed %d: path %s: projection (%q, null=%v), goavro (%q, %v)", seed, p, key, isNull, want, ok)
			}
			checked++
		}
		if i%3 == 0 {
			m := native.(map[string]any)
			ms, _, err := exs["createdAt"].Timestamp(v)
			if err != nil || ms != m["createdAt"].(time.Time).UnixMilli() {
				t.Fatalf("seed %d: createdAt %d (%v), goavro %v", seed, ms, err, m["createdAt"])
			}
			ms, isNull, err := exs["updatedAt"].Timestamp(v)
			if u, ok := m["updatedAt"].(map[string]any); ok {
				want := u["long.timestamp-micros"].(time.Time).UnixMicro()
				if err != nil || isNull || ms != floorDiv(want, 1000) {
					t.Fatalf("seed %d: updatedAt %d (%v), goavro %d us", seed, ms, err, want)
				}
			} else if err != nil || !isNull {
				t.Fatalf("seed %d: updatedAt null: (%d, %v, %v)", seed, ms, isNull, err)
			}
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d comparisons", checked)
	}
}

// BenchmarkDecodeExtract measures decode + extract of the selected key on
// the realistic 15-field value: the projection decoder (the production
// path) against goavro's generic decode of the same bytes.
func BenchmarkDecodeExtract(b *testing.B) {
	reg := NewRegistry(StaticSource{42: orderSchema})
	value := frame(b, 42, orderSchema, order(12345, true))
	for _, path := range []string{"customerId", "customer.id"} {
		ex, err := reg.Extractor(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("projection/"+path, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(value)))
			for b.Loop() {
				if _, _, err := ex.Extract(value); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
		b.Run("goavro/"+path, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(value)))
			for b.Loop() {
				id, payload, err := SplitFrame(value)
				if err != nil {
					b.Fatal(err)
				}
				w, err := reg.Lookup(context.Background(), id)
				if err != nil {
					b.Fatal(err)
				}
				native, _, err := w.Codec().NativeFromBinary(payload)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := genericKey(native, path); !ok {
					b.Fatal("no key")
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
	ts, err := reg.Extractor("createdAt")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("projection/timestamp", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := ts.Timestamp(value); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}
