package predicate

import (
	"strings"
	"testing"
	"time"
)

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		expr, err string
	}{
		{"value.amount > 100", ""},
		{"value.amount > 100 && key.startsWith('c')", ""},
		{"has(value.region) && value.region == 'eu'", ""},
		{"", "empty predicate"},
		{"value.amount >", "Syntax error"},
		{"value.amount + 1", "not bool"},
		{"value.amount", ""}, // dyn: checked per record
		{"key + 1", "found no matching overload"},
		{"key", "not bool"},
		{"amount > 1", "undeclared reference"},
	} {
		_, err := Compile(tc.expr, false)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.expr, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.expr, err, tc.err)
		}
	}
}

func TestEval(t *testing.T) {
	rec := map[string]any{"amount": int64(150), "price": 2.5, "region": "eu", "note": nil,
		"at": time.UnixMilli(1764676800000), "customer": map[string]any{"tier": "GOLD"}, "tags": []any{"a", "b"}}
	for _, tc := range []struct {
		expr   string
		negate bool
		key    []byte
		value  any
		want   bool
		err    bool
	}{
		{expr: "value.amount > 100", value: rec, want: true},
		{expr: "value.amount > 100", negate: true, value: rec, want: false},
		{expr: "value.amount > 200", value: rec, want: false},
		{expr: "value.amount > 200", negate: true, value: rec, want: true},
		{expr: "value.price > 2", value: rec, want: true}, // double against int
		{expr: "key == 'c1'", key: []byte("c1"), value: rec, want: true},
		{expr: "key == 'c1'", value: rec, want: false},         // null key: CEL equality
		{expr: "key.startsWith('c')", value: rec, err: true},   // null key
		{expr: "value.missing > 1", value: rec, err: true},     // no such field
		{expr: "value.note > 1", value: rec, err: true},        // null field
		{expr: "value.region", value: rec, err: true},          // not a bool
		{expr: "value.amount > 100", value: "text", err: true}, // not a record
		{expr: "value.amount / 0 == 1", value: rec, err: true},
		{expr: "value.at > timestamp('2025-01-01T00:00:00Z')", value: rec, want: true},
		{expr: "value.customer.tier == 'GOLD'", value: rec, want: true},
		{expr: "'b' in value.tags", value: rec, want: true},
		{expr: "value.tags.exists(t, t == 'c')", value: rec, want: false},
	} {
		p, err := Compile(tc.expr, tc.negate)
		if err != nil {
			t.Fatalf("%q: %v", tc.expr, err)
		}
		got, err := p.Eval(tc.key, tc.value)
		if (err != nil) != tc.err || (err == nil && got != tc.want) {
			t.Errorf("%q negate=%v key=%q: %v, %v; want %v (error %v)", tc.expr, tc.negate, tc.key, got, err, tc.want, tc.err)
		}
	}
}
