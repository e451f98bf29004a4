package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
)

// DecodePlain decodes a Confluent-framed Avro value in full, as Decode
// does, and returns it as plain Go values an expression can read: records
// and maps as map[string]any, arrays as []any, unions unwrapped to the
// branch the record took (nil for null), int as int64, float as float64,
// enums as their symbol, decimals as float64 (*big.Rat rounded), other
// logical types as goavro gives them (time.Time for timestamps and dates).
// Errors are Decode's.
func (r *Registry) DecodePlain(ctx context.Context, value []byte) (any, error) {
	id, datum, err := r.Decode(ctx, value)
	if err != nil {
		return nil, err
	}
	w, err := r.Lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	w.treeOnce.Do(func() {
		var t any
		if w.treeErr = json.Unmarshal([]byte(w.JSON), &t); w.treeErr == nil {
			w.tree, w.named = t, map[string]any{}
			collectNamed(t, "", w.named)
		}
	})
	if w.treeErr != nil {
		return nil, decodeErr(KindAvro, id, true, "", fmt.Errorf("schema id %d: %w", id, w.treeErr))
	}
	return plain(datum, w.tree, w.named, 0), nil
}

// collectNamed indexes the named types (records, enums, fixed) of a schema
// tree by full name and by short name.
func collectNamed(t any, ns string, named map[string]any) {
	switch s := t.(type) {
	case []any:
		for _, b := range s {
			collectNamed(b, ns, named)
		}
	case map[string]any:
		name, _ := s["name"].(string)
		if n, ok := s["namespace"].(string); ok && n != "" {
			ns = n
		}
		if name != "" {
			full := name
			if !strings.Contains(name, ".") && ns != "" {
				full = ns + "." + name
			}
			if i := strings.LastIndex(name, "."); i >= 0 {
				ns = name[:i]
			}
			named[full] = s
			if _, ok := named[shortName(full)]; !ok {
				named[shortName(full)] = s
			}
		}
		if fs, ok := s["fields"].([]any); ok {
			for _, f := range fs {
				if fm, ok := f.(map[string]any); ok {
					collectNamed(fm["type"], ns, named)
				}
			}
		}
		for _, k := range []string{"items", "values", "type"} {
			if v, ok := s[k]; ok {
				if _, isStr := v.(string); !isStr {
					collectNamed(v, ns, named)
				}
			}
		}
	}
}

func shortName(full string) string {
	if i := strings.LastIndex(full, "."); i >= 0 {
		return full[i+1:]
	}
	return full
}

// plain converts a goavro native datum of schema s.
func plain(d any, s any, named map[string]any, depth int) any {
	if d == nil || depth > 64 {
		return nil
	}
	switch sc := s.(type) {
	case string:
		if n, ok := named[sc]; ok {
			return plain(d, n, named, depth+1)
		}
		if n, ok := named[shortName(sc)]; ok && sc != shortName(sc) {
			return plain(d, n, named, depth+1)
		}
		return scalar(d)
	case []any: // a union: goavro gives {"branch name": value}
		m, ok := d.(map[string]any)
		if !ok || len(m) != 1 {
			return scalar(d)
		}
		for name, v := range m {
			for _, b := range sc {
				if branchName(b) == name || shortName(branchName(b)) == shortName(name) {
					return plain(v, b, named, depth+1)
				}
			}
			return scalar(v)
		}
	case map[string]any:
		switch sc["type"] {
		case "record", "error":
			m, ok := d.(map[string]any)
			if !ok {
				return scalar(d)
			}
			out := make(map[string]any, len(m))
			fs, _ := sc["fields"].([]any)
			for _, f := range fs {
				fm, _ := f.(map[string]any)
				name, _ := fm["name"].(string)
				if v, ok := m[name]; ok {
					out[name] = plain(v, fm["type"], named, depth+1)
				}
			}
			return out
		case "array":
			a, ok := d.([]any)
			if !ok {
				return scalar(d)
			}
			out := make([]any, len(a))
			for i, v := range a {
				out[i] = plain(v, sc["items"], named, depth+1)
			}
			return out
		case "map":
			m, ok := d.(map[string]any)
			if !ok {
				return scalar(d)
			}
			out := make(map[string]any, len(m))
			for k, v := range m {
				out[k] = plain(v, sc["values"], named, depth+1)
			}
			return out
		default:
			if _, ok := sc["logicalType"]; ok {
				return scalar(d)
			}
			if t, ok := sc["type"]; ok {
				return plain(d, t, named, depth+1)
			}
		}
	}
	return scalar(d)
}

// branchName is the name goavro gives a union branch of schema b.
func branchName(b any) string {
	switch s := b.(type) {
	case string:
		return s
	case map[string]any:
		if name, ok := s["name"].(string); ok {
			if ns, ok := s["namespace"].(string); ok && ns != "" && !strings.Contains(name, ".") {
				return ns + "." + name
			}
			return name
		}
		if lt, ok := s["logicalType"].(string); ok {
			if t, ok := s["type"].(string); ok {
				return t + "." + lt
			}
		}
		if t, ok := s["type"].(string); ok {
			return t
		}
	}
	return ""
}

// scalar widens goavro's scalars to CEL's: int64, float64.
func scalar(d any) any {
	switch v := d.(type) {
	case int32:
		return int64(v)
	case int:
		return int64(v)
	case float32:
		return float64(v)
	case *big.Rat:
		f, _ := v.Float64()
		return f
	}
	return d
}
