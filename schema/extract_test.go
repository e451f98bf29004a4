package schema

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestSplitFrame(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		id      uint32
		payload string
		kind    ErrorKind
	}{
		{"empty", nil, 0, "", KindShort},
		{"header only 4 bytes", []byte{0, 0, 0, 1}, 0, "", KindShort},
		{"bad magic", []byte{1, 0, 0, 0, 7, 'x'}, 0, "", KindBadMagic},
		{"json value", []byte(`{"a":1}`), 0, "", KindBadMagic},
		{"empty payload", []byte{0, 0, 0, 0, 7}, 7, "", 0},
		{"big id", []byte{0, 0x80, 0, 0, 1, 'a', 'b'}, 1<<31 + 1, "ab", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, p, err := SplitFrame(tt.in)
			if tt.kind != 0 {
				var de *DecodeError
				if !errors.As(err, &de) || de.Kind != tt.kind || de.HasID {
					t.Fatalf("err = %v, want kind %v without id", err, tt.kind)
				}
				return
			}
			if err != nil || id != tt.id || string(p) != tt.payload {
				t.Fatalf("got (%d, %q, %v), want (%d, %q)", id, p, err, tt.id, tt.payload)
			}
		})
	}
}

func TestExtractKeysAndTimestamps(t *testing.T) {
	reg := NewRegistry(StaticSource{42: orderSchema})
	withCust := frame(t, 42, orderSchema, order(5, true))
	noCust := frame(t, 42, orderSchema, order(6, false))
	type want struct {
		key    string
		isNull bool
		kind   ErrorKind
	}
	tests := []struct {
		path  string
		value []byte
		want  want
	}{
		{"customerId", withCust, want{key: "cust-5"}},
		{"customer.id", withCust, want{key: "cust-5"}},
		{"customer.id", noCust, want{isNull: true}},
		{"customer.address.city", withCust, want{key: "Springfield"}},
		{"customer.accountNo", withCust, want{key: "1000005"}},
		{"customer.tier", withCust, want{key: "GOLD"}},
		{"quantity", withCust, want{key: "5"}},
		{"seq", withCust, want{key: "5"}},
		{"status", withCust, want{key: "PAID"}},
		{"priority", withCust, want{key: "false"}},
		{"sku", withCust, want{key: "SKU00042"}},
		{"note", withCust, want{isNull: true}},
		{"createdAt", withCust, want{key: "1764000000005"}},
		{"amount", withCust, want{kind: KindWrongType}},
		{"customer", withCust, want{kind: KindWrongType}},
		{"tags", withCust, want{kind: KindWrongType}},
		{"customerID", withCust, want{kind: KindFieldMissing}},
		{"customer.zip", withCust, want{kind: KindFieldMissing}},
		{"orderId.x", withCust, want{kind: KindFieldMissing}},
		{"customerId", []byte{0, 0, 0, 0, 43, 2, 'a'}, want{kind: KindUnknownSchema}},
		{"customerId", []byte{0, 0, 0, 0, 42, 20, 'a'}, want{kind: KindAvro}},
		{"customerId", withCust[:len(withCust)-1], want{kind: KindAvro}},
		{"customerId", []byte{0, 0, 0}, want{kind: KindShort}},
		{"customerId", []byte{'{', 0, 0, 0, 42}, want{kind: KindBadMagic}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			ex, err := reg.Extractor(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			key, isNull, err := ex.Extract(tt.value)
			if tt.want.kind != 0 {
				var de *DecodeError
				if !errors.As(err, &de) || de.Kind != tt.want.kind {
					t.Fatalf("err = %v, want kind %v", err, tt.want.kind)
				}
				if tt.want.kind >= KindUnknownSchema && (!de.HasID || de.SchemaID != uint32(tt.value[4])) {
					t.Fatalf("error %v does not carry schema id %d", err, tt.value[4])
				}
				if tt.want.kind == KindFieldMissing && (!strings.Contains(err.Error(), tt.path) || !strings.Contains(err.Error(), "schema id 42")) {
					t.Fatalf("error %q does not name the path and the schema id", err)
				}
				return
			}
			if err != nil || key != tt.want.key || isNull != tt.want.isNull {
				t.Fatalf("got (%q, %v, %v), want (%q, %v)", key, isNull, err, tt.want.key, tt.want.isNull)
			}
			// ExtractKey gives the same bytes, capped so that an append
			// cannot write into the value they may alias.
			kb, kNull, err := ex.ExtractKey(context.Background(), tt.value)
			if err != nil || string(kb) != key || kNull != isNull || cap(kb) != len(kb) {
				t.Fatalf("ExtractKey: (%q cap %d, %v, %v), want (%q, %v)", kb, cap(kb), kNull, err, key, isNull)
			}
		})
	}
}

func TestTimestamp(t *testing.T) {
	js := `{"type":"record","name":"T","fields":[
	  {"name":"plain","type":"long"},
	  {"name":"millis","type":{"type":"long","logicalType":"timestamp-millis"}},
	  {"name":"micros","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
	  {"name":"neg","type":{"type":"long","logicalType":"timestamp-micros"}},
	  {"name":"day","type":{"type":"int","logicalType":"date"}},
	  {"name":"s","type":"string"}]}`
	reg := NewRegistry(StaticSource{3: js})
	// Encode by hand (goavro would need time.Time): zigzag varints.
	payload := []byte{0, 0, 0, 0, 3}
	payload = appendLong(payload, 1764000000001)
	payload = appendLong(payload, 1764000000002)
	payload = appendLong(payload, 1) // union branch 1
	payload = appendLong(payload, 1764000000003999)
	payload = appendLong(payload, -1500)
	payload = appendLong(payload, 20000)
	payload = appendLong(payload, 1)
	payload = append(payload, 'x')
	nullMicros := []byte{0, 0, 0, 0, 3}
	nullMicros = appendLong(nullMicros, 1)
	nullMicros = appendLong(nullMicros, 2)
	nullMicros = appendLong(nullMicros, 0) // null branch
	nullMicros = appendLong(nullMicros, 5)
	nullMicros = appendLong(nullMicros, 6)
	nullMicros = appendLong(nullMicros, 0)
	tests := []struct {
		path   string
		value  []byte
		ms     int64
		isNull bool
		kind   ErrorKind
	}{
		{"plain", payload, 1764000000001, false, 0},
		{"millis", payload, 1764000000002, false, 0},
		{"micros", payload, 1764000000003, false, 0},
		{"micros", nullMicros, 0, true, 0},
		{"neg", payload, -2, false, 0},
		{"day", payload, 0, false, KindWrongType},
		{"s", payload, 0, false, KindWrongType},
		{"nope", payload, 0, false, KindFieldMissing},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			ex, err := reg.Extractor(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			ms, isNull, err := ex.Timestamp(tt.value)
			if tt.kind != 0 {
				var de *DecodeError
				if !errors.As(err, &de) || de.Kind != tt.kind || de.SchemaID != 3 {
					t.Fatalf("err = %v, want kind %v for schema id 3", err, tt.kind)
				}
				return
			}
			if err != nil || ms != tt.ms || isNull != tt.isNull {
				t.Fatalf("got (%d, %v, %v), want (%d, %v)", ms, isNull, err, tt.ms, tt.isNull)
			}
		})
	}
}

func appendLong(b []byte, v int64) []byte {
	u := uint64(v<<1) ^ uint64(v>>63)
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func TestLocateAndCounts(t *testing.T) {
	reg := NewRegistry(StaticSource{1: `{"type":"record","name":"A","fields":[{"name":"k","type":"string"}]}`})
	ex, err := reg.Extractor("k")
	if err != nil {
		t.Fatal(err)
	}
	values := [][]byte{{0, 0, 0, 0, 1, 2, 'a'}, {0, 0}, {0, 0, 0, 0, 9, 0}, {0, 0, 0, 0, 1, 9}, {0, 0, 0, 0, 1, 9}, {7, 0, 0, 0, 1}}
	c := Counts{}
	var located []string
	for off, v := range values {
		_, _, err := ex.Extract(v)
		err = Locate(err, "orders", 2, int64(off))
		if c.Add(err) {
			located = append(located, err.Error())
		}
	}
	want := Counts{
		{Kind: KindShort}: 1,
		{Kind: KindUnknownSchema, SchemaID: 9, HasID: true}: 1,
		{Kind: KindAvro, SchemaID: 1, HasID: true}:          2,
		{Kind: KindBadMagic}:                                1,
	}
	if len(c) != len(want) {
		t.Fatalf("counts %v, want %v", c, want)
	}
	for k, n := range want {
		if c[k] != n {
			t.Fatalf("counts %v, want %v", c, want)
		}
	}
	if !strings.HasPrefix(located[0], "orders[2]@1: short: ") {
		t.Fatalf("located error %q lacks coordinates", located[0])
	}
	if got := c.ByKind()[KindAvro]; got != 2 {
		t.Fatalf("ByKind avro = %d, want 2", got)
	}
	if Locate(nil, "t", 0, 0) != nil {
		t.Fatal("Locate(nil) != nil")
	}
	if err := Locate(context.Canceled, "t", 1, 5); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "t[1]@5") {
		t.Fatalf("Locate of a plain error = %v", err)
	}
}

// TestExtractNotUTF8 checks that a string field holding bytes that are not
// UTF-8 gives the key the Java application selects (Utf8#toString, then
// the String serde: each malformed sequence becomes U+FFFD), while bytes
// and fixed fields keep their raw bytes.
func TestExtractNotUTF8(t *testing.T) {
	js := `{"type":"record","name":"K","fields":[
	  {"name":"s","type":"string"},
	  {"name":"n","type":["null","string"]},
	  {"name":"b","type":"bytes"},
	  {"name":"f","type":{"type":"fixed","name":"F","size":3}}]}`
	reg := NewRegistry(StaticSource{9: js})
	raw := []byte("\xff\xfe-notutf8")
	value := []byte{0, 0, 0, 0, 9}
	value = appendLong(value, int64(len(raw)))
	value = append(value, raw...)
	value = appendLong(value, 1) // union branch "string"
	value = appendLong(value, 3)
	value = append(value, 0xE2, 0x82, 0x41) // a 3-byte sequence cut short by "A"
	value = appendLong(value, 2)
	value = append(value, 0xFF, 0x80)
	value = append(value, 0xED, 0xA0, 0x80) // fixed: an encoded surrogate
	tests := []struct{ path, want string }{
		{"s", "\uFFFD\uFFFD-notutf8"},
		{"n", "\uFFFDA"},
		{"b", "\xff\x80"},
		{"f", "\xed\xa0\x80"},
	}
	for _, tt := range tests {
		ex, err := reg.Extractor(tt.path)
		if err != nil {
			t.Fatal(err)
		}
		key, isNull, err := ex.Extract(value)
		if err != nil || isNull || key != tt.want {
			t.Errorf("%s: got (%x, %v, %v), want %x", tt.path, key, isNull, err, tt.want)
		}
	}
}
