package avroproj

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/linkedin/goavro/v2"
)

// gen is a random schema on the test side: it renders its JSON and writes
// random valid binary values of itself.
type gen struct {
	t        Type
	logical  string
	name     string // full name for named types
	fields   []genField
	items    *gen
	branches []*gen
	symbols  []string
	size     int
}

type genField struct {
	name string
	t    *gen
}

type schemaGen struct {
	r     *rand.Rand
	names int
}

func (g *schemaGen) newName(prefix string) string {
	g.names++
	return fmt.Sprintf("%s%d", prefix, g.names)
}

func (g *schemaGen) typ(depth int, inUnion bool) *gen {
	k := g.r.IntN(16)
	if depth > 3 && k >= 9 {
		k = g.r.IntN(9)
	}
	switch k {
	case 0:
		return &gen{t: Null}
	case 1:
		return &gen{t: Boolean}
	case 2:
		return &gen{t: Int}
	case 3:
		switch g.r.IntN(3) {
		case 0:
			return &gen{t: Long, logical: "timestamp-millis"}
		case 1:
			return &gen{t: Long, logical: "timestamp-micros"}
		}
		return &gen{t: Long}
	case 4:
		return &gen{t: Float}
	case 5:
		return &gen{t: Double}
	case 6:
		return &gen{t: Bytes}
	case 7, 8:
		return &gen{t: String}
	case 9:
		n := 1 + g.r.IntN(4)
		e := &gen{t: Enum, name: g.newName("E")}
		for i := range n {
			e.symbols = append(e.symbols, fmt.Sprintf("S%d", i))
		}
		return e
	case 10:
		return &gen{t: Fixed, name: g.newName("F"), size: 1 + g.r.IntN(4)}
	case 11:
		return &gen{t: Array, items: g.typ(depth+1, false)}
	case 12:
		return &gen{t: Map, items: g.typ(depth+1, false)}
	case 13, 14:
		if inUnion {
			return g.record(depth + 1)
		}
		// a union of distinct types: null plus up to three others
		u := &gen{t: Union}
		seen := map[string]bool{}
		if g.r.IntN(3) > 0 {
			u.branches = append(u.branches, &gen{t: Null})
			seen["null"] = true
		}
		for range 1 + g.r.IntN(3) {
			b := g.typ(depth+1, true)
			key := b.t.String()
			if b.name != "" {
				key = b.name
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			u.branches = append(u.branches, b)
		}
		return u
	}
	return g.record(depth + 1)
}

func (g *schemaGen) record(depth int) *gen {
	rec := &gen{t: Record, name: g.newName("R")}
	for i := range g.r.IntN(6) {
		rec.fields = append(rec.fields, genField{name: fmt.Sprintf("f%d", i), t: g.typ(depth, false)})
	}
	return rec
}

func (s *gen) json() any {
	switch s.t {
	case Null, Boolean, Int, Float, Double, Bytes, String:
		return s.t.String()
	case Long:
		if s.logical != "" {
			return map[string]any{"type": "long", "logicalType": s.logical}
		}
		return "long"
	case Enum:
		return map[string]any{"type": "enum", "name": s.name, "symbols": s.symbols}
	case Fixed:
		return map[string]any{"type": "fixed", "name": s.name, "size": s.size}
	case Array:
		return map[string]any{"type": "array", "items": s.items.json()}
	case Map:
		return map[string]any{"type": "map", "values": s.items.json()}
	case Union:
		var l []any
		for _, b := range s.branches {
			l = append(l, b.json())
		}
		return l
	}
	fs := []any{}
	for _, f := range s.fields {
		fs = append(fs, map[string]any{"name": f.name, "type": f.t.json()})
	}
	return map[string]any{"type": "record", "name": s.name, "fields": fs}
}

func putLong(b []byte, v int64) []byte {
	return binary.AppendVarint(b, v) // zigzag varint, as Avro
}

func (s *gen) value(r *rand.Rand, b []byte, depth int) []byte {
	switch s.t {
	case Null:
	case Boolean:
		b = append(b, byte(r.IntN(2)))
	case Int:
		b = putLong(b, int64(int32(r.Uint32())>>r.IntN(32)))
	case Long:
		b = putLong(b, int64(r.Uint64())>>r.IntN(64))
	case Float:
		b = binary.LittleEndian.AppendUint32(b, r.Uint32())
	case Double:
		b = binary.LittleEndian.AppendUint64(b, r.Uint64())
	case Bytes, String:
		n := r.IntN(12)
		b = putLong(b, int64(n))
		for range n {
			b = append(b, byte('a'+r.IntN(26)))
		}
	case Enum:
		b = putLong(b, int64(r.IntN(len(s.symbols))))
	case Fixed:
		for range s.size {
			b = append(b, byte(r.Uint32()))
		}
	case Array, Map:
		blocks := r.IntN(3)
		if depth > 4 {
			blocks = 0
		}
		key := 0 // goavro rejects duplicate map keys
		for range blocks {
			n := 1 + r.IntN(3)
			var body []byte
			for range n {
				if s.t == Map {
					k := fmt.Sprintf("k%d", key)
					key++
					body = putLong(body, int64(len(k)))
					body = append(body, k...)
				}
				body = s.items.value(r, body, depth+1)
			}
			if r.IntN(2) == 0 { // negative count: block size follows
				b = putLong(b, int64(-n))
				b = putLong(b, int64(len(body)))
			} else {
				b = putLong(b, int64(n))
			}
			b = append(b, body...)
		}
		b = putLong(b, 0)
	case Union:
		i := r.IntN(len(s.branches))
		b = putLong(b, int64(i))
		b = s.branches[i].value(r, b, depth+1)
	case Record:
		for _, f := range s.fields {
			b = f.t.value(r, b, depth+1)
		}
	}
	return b
}

// paths lists every field path of a record type, through unions.
func (s *gen) paths(prefix string, out map[string]bool, depth int) {
	if depth > 6 {
		return
	}
	switch s.t {
	case Record:
		for _, f := range s.fields {
			p := f.name
			if prefix != "" {
				p = prefix + "." + f.name
			}
			out[p] = true
			f.t.paths(p, out, depth+1)
		}
	case Union:
		for _, b := range s.branches {
			b.paths(prefix, out, depth+1)
		}
	}
}

// unionName is the key goavro uses for a union branch's value.
func (s *gen) unionName() string {
	if s.name != "" {
		return s.name
	}
	if s.logical != "" {
		return s.t.String() + "." + s.logical
	}
	return s.t.String()
}

// reference walks a goavro native datum of schema s along segs, the way
// the projection must: (value, null on the way, path missing).
func reference(s *gen, v any, segs []string) (any, bool, bool) {
	if s.t == Union {
		if v == nil {
			return nil, true, false
		}
		for k, inner := range v.(map[string]any) {
			for _, b := range s.branches {
				if b.unionName() == k {
					return reference(b, inner, segs)
				}
			}
			panic("no union branch named " + k)
		}
	}
	if s.t == Null {
		return nil, true, false
	}
	if len(segs) == 0 {
		return v, false, false
	}
	if s.t != Record {
		return nil, false, true
	}
	for _, f := range s.fields {
		if f.name == segs[0] {
			return reference(f.t, v.(map[string]any)[f.name], segs[1:])
		}
	}
	return nil, false, true
}

func equalValue(t *testing.T, got Value, want any) string {
	switch w := want.(type) {
	case string:
		if (got.Type != String && got.Type != Enum) || string(got.Bytes) != w {
			return fmt.Sprintf("got %v %q, want string %q", got.Type, got.Bytes, w)
		}
	case []byte:
		if (got.Type != Bytes && got.Type != Fixed) || !bytes.Equal(got.Bytes, w) {
			return fmt.Sprintf("got %v %q, want bytes %q", got.Type, got.Bytes, w)
		}
	case int32:
		if got.Type != Int || got.Int != int64(w) {
			return fmt.Sprintf("got %v %d, want int %d", got.Type, got.Int, w)
		}
	case int64:
		if got.Type != Long || got.Int != w {
			return fmt.Sprintf("got %v %d, want long %d", got.Type, got.Int, w)
		}
	case bool:
		if got.Type != Boolean || (got.Int == 1) != w {
			return fmt.Sprintf("got %v %d, want bool %v", got.Type, got.Int, w)
		}
	case float32:
		bothNaN := math.IsNaN(got.Float) && math.IsNaN(float64(w)) // float32->64 may quiet a NaN
		if got.Type != Float || (!bothNaN && math.Float32bits(float32(got.Float)) != math.Float32bits(w)) {
			return fmt.Sprintf("got %v %v, want float %v", got.Type, got.Float, w)
		}
	case float64:
		if got.Type != Double || math.Float64bits(got.Float) != math.Float64bits(w) {
			return fmt.Sprintf("got %v %v, want double %v", got.Type, got.Float, w)
		}
	case time.Time:
		if got.Type != Long || (got.Logical == "timestamp-millis" && got.Int != w.UnixMilli()) || (got.Logical == "timestamp-micros" && got.Int != w.UnixMicro()) {
			return fmt.Sprintf("got %v %s %d, want %v", got.Type, got.Logical, got.Int, w)
		}
	case []any:
		if got.Type != Array {
			return fmt.Sprintf("got %v, want array", got.Type)
		}
	case map[string]any:
		if got.Type != Map && got.Type != Record {
			return fmt.Sprintf("got %v, want map or record", got.Type)
		}
	default:
		return fmt.Sprintf("unexpected goavro value %T", want)
	}
	return ""
}

// TestProjectionMatchesGoavro: random schemas, random valid data, every
// field path; the projection decoder must agree with goavro's full decode on
// the value, on null and on the number of bytes the datum takes.
func TestProjectionMatchesGoavro(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if testing.Short() {
		seed = 1
	}
	r := rand.New(rand.NewPCG(seed, 7))
	checked := 0
	for sc := 0; sc < 300; sc++ {
		g := &schemaGen{r: r}
		root := g.record(0)
		js, _ := json.Marshal(root.json())
		codec, err := goavro.NewCodec(string(js))
		if err != nil {
			t.Fatalf("seed %d: goavro rejects generated schema %s: %v", seed, js, err)
		}
		s, err := Parse(string(js))
		if err != nil {
			t.Fatalf("seed %d: Parse(%s): %v", seed, js, err)
		}
		paths := map[string]bool{}
		root.paths("", paths, 0)
		plans := map[string]*Plan{}
		for p := range paths {
			plan, err := s.Project(p)
			if err != nil {
				continue // only null reachable, or missing in every branch
			}
			plans[p] = plan
		}
		for range 20 {
			data := root.value(r, nil, 0)
			native, rest, err := codec.NativeFromBinary(data)
			if err != nil {
				t.Fatalf("seed %d: goavro cannot decode generated data for %s: %v", seed, js, err)
			}
			n, err := s.Skip(data)
			if err != nil || n != len(data)-len(rest) {
				t.Fatalf("seed %d: Skip = (%d, %v), goavro consumed %d; schema %s", seed, n, err, len(data)-len(rest), js)
			}
			for p, plan := range plans {
				got, err := s.Decode(plan, data)
				want, isNull, missing := reference(root, native, strings.Split(p, "."))
				switch {
				case missing:
					if _, ok := err.(*PathError); !ok {
						t.Fatalf("seed %d: path %s missing in goavro datum %v, projection gave (%+v, %v); schema %s", seed, p, native, got, err, js)
					}
				case err != nil:
					t.Fatalf("seed %d: path %s: %v; datum %v; schema %s", seed, p, err, native, js)
				case isNull:
					if !got.Null {
						t.Fatalf("seed %d: path %s: got %+v, want null; datum %v; schema %s", seed, p, got, native, js)
					}
				default:
					if msg := equalValue(t, got, want); msg != "" {
						t.Fatalf("seed %d: path %s: %s; datum %v; schema %s", seed, p, msg, native, js)
					}
				}
				checked++
			}
		}
	}
	t.Logf("seed %d: %d path extractions agreed with goavro", seed, checked)
	if checked < 1000 {
		t.Fatalf("only %d comparisons: the generator is too weak", checked)
	}
}
