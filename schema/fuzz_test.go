package schema

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Schemas the fuzzer decodes against, by id (the id is bytes 1-4 of the
// input, so the fuzzer reaches each by mutating them).
var fuzzSchemas = StaticSource{
	1: orderSchema,
	2: evoV1,
	3: evoV2,
	4: `{"type":"record","name":"Node","fields":[{"name":"customerId","type":"long"},{"name":"next","type":["null","Node"]}]}`,
	5: `{"type":"record","name":"Z","fields":[{"name":"nulls","type":{"type":"array","items":"null"}},{"name":"m","type":{"type":"map","values":{"type":"array","items":"string"}}},{"name":"customerId","type":"string"}]}`,
	6: `{"type":"record","name":"U","fields":[{"name":"customer","type":["null","string","long",{"type":"record","name":"C","fields":[{"name":"id","type":"int"}]}]},{"name":"createdAt","type":{"type":"long","logicalType":"timestamp-micros"}}]}`,
}

var fuzzPaths = []string{"customerId", "customer.id", "customer", "createdAt", "next.next.customerId", "updatedAt"}

// FuzzDecode feeds arbitrary bytes through framing, schema lookup, the
// projection decoder and extraction: no panic, a bounded allocation per
// record, and whenever the projection accepts a datum goavro must decode it
// to the same key.
func FuzzDecode(f *testing.F) {
	f.Add(frame(f, 1, orderSchema, order(3, true)))
	f.Add(frame(f, 1, orderSchema, order(4, false)))
	f.Add(frame(f, 2, evoV1, evoRecord(1, "c-1")))
	f.Add(frame(f, 3, evoV2, evoRecordV2(2, "c-2")))
	f.Add([]byte{0, 0, 0, 0, 4, 2, 2, 4, 2, 6, 0})                   // a three-node list
	f.Add([]byte{0, 0, 0, 0, 5, 0xfe, 0xff, 0xff, 0xff, 0x0f, 0, 0}) // a huge array of nulls
	f.Add([]byte{0, 0, 0, 0, 6, 6, 0x54, 2})                         // union branch record
	f.Add([]byte{0, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0x7f})       // huge string length
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{1, 2, 3, 4, 5, 6})
	reg := NewRegistry(fuzzSchemas)
	var exs []*Extractor
	for _, p := range fuzzPaths {
		ex, err := reg.Extractor(p)
		if err != nil {
			f.Fatal(err)
		}
		exs = append(exs, ex)
	}
	ctx := context.Background()
	var ms runtime.MemStats
	f.Fuzz(func(t *testing.T, data []byte) {
		keys := make([]string, len(exs))
		keyErrs := make([]error, len(exs))
		for _, ex := range exs {
			// Warm up: the first record of a schema id compiles the schema
			// (a cost per id, bounded by the schema, not by the data).
			_, _, _ = ex.ExtractContext(ctx, data)
		}
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		for i, ex := range exs {
			keys[i], _, keyErrs[i] = ex.ExtractContext(ctx, data)
			checkErr(t, keyErrs[i])
			_, _, err := ex.TimestampContext(ctx, data)
			checkErr(t, err)
		}
		runtime.ReadMemStats(&ms)
		// Keys are copies of at most the input; the rest is small and fixed.
		if got, limit := ms.TotalAlloc-before, uint64(len(exs)*(2*len(data)+4096)); got > limit {
			t.Fatalf("extraction allocated %d bytes for a %d-byte input (limit %d)", got, len(data), limit)
		}

		// The reference decoder must accept whatever the projection
		// accepted, and agree on the key.
		_, native, err := reg.Decode(ctx, data)
		if err != nil {
			checkErr(t, err)
			if strings.Contains(err.Error(), "duplicate key") {
				return // goavro rejects duplicate map keys; Avro (and Java) allow them
			}
			for i, kerr := range keyErrs {
				if kerr == nil {
					t.Fatalf("path %s: projection extracted %q but goavro fails: %v", fuzzPaths[i], keys[i], err)
				}
			}
			return
		}
		for i, kerr := range keyErrs {
			if kerr != nil {
				var de *DecodeError
				if errors.As(kerr, &de) && de.Kind == KindAvro {
					t.Fatalf("path %s: projection fails (%v) on a datum goavro decodes", fuzzPaths[i], kerr)
				}
				continue
			}
			if want, ok := genericKey(native, fuzzPaths[i]); ok && want != keys[i] {
				t.Fatalf("path %s: projection %q, goavro %q", fuzzPaths[i], keys[i], want)
			}
		}
	})
}

// checkErr requires every failure on arbitrary input to be a per-record
// *DecodeError: the static source never makes lookups unavailable.
func checkErr(t *testing.T, err error) {
	t.Helper()
	var de *DecodeError
	if err != nil && !errors.As(err, &de) {
		t.Fatalf("not a *DecodeError: %v", err)
	}
}

// genericKey walks a goavro datum along path, for the key types the
// fuzz schemas use (string, int, long); ok is false when it cannot tell.
func genericKey(native any, path string) (string, bool) {
	v := native
	for _, seg := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		v = unwrapUnion(m[seg])
	}
	switch x := v.(type) {
	case string:
		return x, true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

// unwrapUnion turns goavro's {"branch name": value} union form into value
// for the branch names of the fuzz schemas.
func unwrapUnion(v any) any {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return v
	}
	for k, inner := range m {
		switch k {
		case "string", "long", "int", "Node", "C", "com.acme.Customer", "com.acme.Address", "long.timestamp-micros":
			return inner
		}
	}
	return v
}
