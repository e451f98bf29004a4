package schema

import (
	"context"
	"encoding/binary"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
)

// TestDecodePlain checks the plain form of decoded values that declared
// predicates read: unions unwrapped to their branch (null to nil, named
// records by full or short name), nested records, arrays and maps
// converted, ints and floats widened, enums as symbols, decimals as
// float64, timestamps as time.Time.
func TestDecodePlain(t *testing.T) {
	const js = `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"string"},
		{"name":"qty","type":"int"},
		{"name":"price","type":"float"},
		{"name":"note","type":["null","string"]},
		{"name":"gone","type":["null","long"]},
		{"name":"customer","type":["null",{"type":"record","name":"Customer","fields":[
			{"name":"name","type":"string"},{"name":"tier","type":{"type":"enum","name":"Tier","symbols":["GOLD","SILVER"]}}]}]},
		{"name":"tags","type":{"type":"array","items":["null","string"]}},
		{"name":"attrs","type":{"type":"map","values":"int"}},
		{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":6,"scale":2}},
		{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
		{"name":"again","type":["null","Customer"]}]}`
	codec, err := goavro.NewCodec(js)
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1764676800000).UTC()
	cust := map[string]any{"name": "ann", "tier": "GOLD"}
	native := map[string]any{
		"id": "o-1", "qty": int32(3), "price": float32(2.5),
		"note": goavro.Union("string", "hi"), "gone": nil,
		"customer": goavro.Union("shop.Customer", cust),
		"tags":     []any{goavro.Union("string", "a"), nil},
		"attrs":    map[string]any{"x": int32(7)},
		"amount":   big.NewRat(1234, 100),
		"at":       at,
		"again":    goavro.Union("shop.Customer", cust),
	}
	b := binary.BigEndian.AppendUint32([]byte{0}, 5)
	if b, err = codec.BinaryFromNative(b, native); err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry(StaticSource{5: js})
	got, err := reg.DecodePlain(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	m := got.(map[string]any)
	want := map[string]any{
		"id": "o-1", "qty": int64(3), "price": float64(2.5), "note": "hi", "gone": nil,
		"customer": map[string]any{"name": "ann", "tier": "GOLD"},
		"tags":     []any{"a", nil},
		"attrs":    map[string]any{"x": int64(7)},
		"amount":   12.34,
		"again":    map[string]any{"name": "ann", "tier": "GOLD"},
	}
	gotAt, _ := m["at"].(time.Time)
	delete(m, "at")
	if !reflect.DeepEqual(m, want) {
		t.Errorf("plain\n%#v\nwant\n%#v", m, want)
	}
	if !gotAt.Equal(at) {
		t.Errorf("at %v, want %v", gotAt, at)
	}
	if _, err := reg.DecodePlain(context.Background(), []byte("junk")); err == nil {
		t.Error("an unframed value decoded")
	}
}
