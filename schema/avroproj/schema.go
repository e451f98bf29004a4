// Package avroproj decodes one projected value out of Avro binary data
// without building the whole datum: it walks the writer schema, skips every
// field it does not need without allocating, and returns only the value at a
// field path (e.g. customer.id). It validates the whole datum while skipping,
// so a truncated or corrupt record is an error exactly where a full decoder
// would fail, and it guards every length against the bytes that remain, so
// hostile input never causes a large allocation.
package avroproj

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Type is an Avro type tag.
type Type uint8

// The Avro types.
const (
	Null Type = iota
	Boolean
	Int
	Long
	Float
	Double
	Bytes
	String
	Record
	Enum
	Array
	Map
	Union
	Fixed
)

var typeNames = [...]string{"null", "boolean", "int", "long", "float", "double", "bytes", "string", "record", "enum", "array", "map", "union", "fixed"}

// String returns the Avro name of the type.
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", t)
}

// node is one type of a parsed schema. Named types are shared, so the graph
// may be cyclic for recursive schemas.
type node struct {
	t        Type
	logical  string
	name     string // full name of a named type
	fields   []field
	items    *node   // array items, map values
	branches []*node // union
	symbols  []string
	size     int // fixed size
	// zero is true when every value of the type encodes to zero bytes
	// (null, fixed of size 0, records made only of those).
	zero bool
	// min is the minimum number of bytes one value of the type encodes to.
	min int
}

type field struct {
	name string
	t    *node
}

// Schema is a parsed Avro schema, safe for concurrent use.
type Schema struct {
	root *node
}

// Root returns the type of the schema's top level.
func (s *Schema) Root() Type { return s.root.t }

// Parse parses an Avro schema in its JSON form.
func Parse(schemaJSON string) (*Schema, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(schemaJSON))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("parsing schema JSON: %w", err)
	}
	p := &parser{named: map[string]*node{}}
	root, err := p.parse(v, "")
	if err != nil {
		return nil, err
	}
	for _, n := range p.all {
		sizes(n, map[*node]bool{})
	}
	return &Schema{root: root}, nil
}

type parser struct {
	named map[string]*node
	all   []*node
}

var primitives = map[string]Type{
	"null": Null, "boolean": Boolean, "int": Int, "long": Long, "float": Float,
	"double": Double, "bytes": Bytes, "string": String,
}

func (p *parser) newNode(t Type) *node {
	n := &node{t: t}
	p.all = append(p.all, n)
	return n
}

func (p *parser) parse(v any, ns string) (*node, error) {
	switch s := v.(type) {
	case string:
		if t, ok := primitives[s]; ok {
			return p.newNode(t), nil
		}
		return p.lookup(s, ns)
	case []any:
		n := p.newNode(Union)
		if len(s) == 0 {
			return nil, fmt.Errorf("union has no branches")
		}
		for i, b := range s {
			bn, err := p.parse(b, ns)
			if err != nil {
				return nil, fmt.Errorf("union branch %d: %w", i, err)
			}
			if bn.t == Union {
				return nil, fmt.Errorf("union branch %d: unions may not immediately contain unions", i)
			}
			n.branches = append(n.branches, bn)
		}
		return n, nil
	case map[string]any:
		return p.parseObject(s, ns)
	}
	return nil, fmt.Errorf("unexpected schema element %T", v)
}

func (p *parser) lookup(name, ns string) (*node, error) {
	if n, ok := p.named[name]; ok {
		return n, nil
	}
	if ns != "" && !strings.Contains(name, ".") {
		if n, ok := p.named[ns+"."+name]; ok {
			return n, nil
		}
	}
	return nil, fmt.Errorf("unknown type name %q", name)
}

func fullName(s map[string]any, ns string) (string, string, error) {
	name, _ := s["name"].(string)
	if name == "" {
		return "", "", fmt.Errorf("named type without a name")
	}
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name, name[:i], nil
	}
	if nsv, ok := s["namespace"].(string); ok {
		ns = nsv
	}
	if ns == "" {
		return name, "", nil
	}
	return ns + "." + name, ns, nil
}

func (p *parser) parseObject(s map[string]any, ns string) (*node, error) {
	tv, ok := s["type"]
	if !ok {
		return nil, fmt.Errorf("schema object without a type")
	}
	ts, isString := tv.(string)
	if !isString {
		// {"type": {...}} or {"type": [...]}: a wrapped type.
		return p.parse(tv, ns)
	}
	logical, _ := s["logicalType"].(string)
	if t, ok := primitives[ts]; ok {
		n := p.newNode(t)
		n.logical = logical
		return n, nil
	}
	switch ts {
	case "record", "error", "enum", "fixed":
		full, inner, err := fullName(s, ns)
		if err != nil {
			return nil, err
		}
		if _, dup := p.named[full]; dup {
			return nil, fmt.Errorf("type %q defined twice", full)
		}
		var n *node
		switch ts {
		case "record", "error":
			n = p.newNode(Record)
			n.name = full
			p.named[full] = n // before the fields: records may be recursive
			fs, ok := s["fields"].([]any)
			if !ok {
				return nil, fmt.Errorf("record %q: fields is not an array", full)
			}
			seen := map[string]bool{}
			for i, fv := range fs {
				fm, ok := fv.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("record %q: field %d is not an object", full, i)
				}
				fname, _ := fm["name"].(string)
				if fname == "" {
					return nil, fmt.Errorf("record %q: field %d has no name", full, i)
				}
				if seen[fname] {
					return nil, fmt.Errorf("record %q: duplicate field %q", full, fname)
				}
				seen[fname] = true
				ft, ok := fm["type"]
				if !ok {
					return nil, fmt.Errorf("record %q: field %q has no type", full, fname)
				}
				fn, err := p.parse(ft, inner)
				if err != nil {
					return nil, fmt.Errorf("record %q field %q: %w", full, fname, err)
				}
				n.fields = append(n.fields, field{name: fname, t: fn})
			}
		case "enum":
			n = p.newNode(Enum)
			n.name = full
			syms, ok := s["symbols"].([]any)
			if !ok || len(syms) == 0 {
				return nil, fmt.Errorf("enum %q: symbols is not a non-empty array", full)
			}
			for _, sv := range syms {
				sym, ok := sv.(string)
				if !ok {
					return nil, fmt.Errorf("enum %q: symbol is not a string", full)
				}
				n.symbols = append(n.symbols, sym)
			}
			p.named[full] = n
		case "fixed":
			n = p.newNode(Fixed)
			n.name = full
			n.logical = logical
			num, ok := s["size"].(json.Number)
			if !ok {
				return nil, fmt.Errorf("fixed %q: size is not a number", full)
			}
			size, err := num.Int64()
			if err != nil || size < 0 || size > 1<<30 {
				return nil, fmt.Errorf("fixed %q: bad size %q", full, num)
			}
			n.size = int(size)
			p.named[full] = n
		}
		return n, nil
	case "array":
		n := p.newNode(Array)
		it, ok := s["items"]
		if !ok {
			return nil, fmt.Errorf("array without items")
		}
		in, err := p.parse(it, ns)
		if err != nil {
			return nil, fmt.Errorf("array items: %w", err)
		}
		n.items = in
		return n, nil
	case "map":
		n := p.newNode(Map)
		it, ok := s["values"]
		if !ok {
			return nil, fmt.Errorf("map without values")
		}
		in, err := p.parse(it, ns)
		if err != nil {
			return nil, fmt.Errorf("map values: %w", err)
		}
		n.items = in
		return n, nil
	}
	return p.lookup(ts, ns)
}

// sizes computes zero and min for n. visiting guards recursive types: a type
// met again while being computed contributes 0 (a lower bound).
func sizes(n *node, visiting map[*node]bool) (zero bool, min int) {
	if n.min > 0 || visiting[n] {
		return n.zero, n.min
	}
	visiting[n] = true
	defer delete(visiting, n)
	switch n.t {
	case Null:
		n.zero, n.min = true, 0
	case Boolean, Int, Long, Bytes, String, Enum, Array, Map:
		n.min = 1
	case Float:
		n.min = 4
	case Double:
		n.min = 8
	case Fixed:
		n.min = n.size
		n.zero = n.size == 0
	case Union:
		m := -1
		for _, b := range n.branches {
			_, bm := sizes(b, visiting)
			if m < 0 || bm < m {
				m = bm
			}
		}
		n.min = 1 + m
	case Record:
		z, m := true, 0
		for _, f := range n.fields {
			fz, fm := sizes(f.t, visiting)
			z = z && fz
			m += fm
		}
		n.zero, n.min = z, m
	}
	return n.zero, n.min
}

// FieldPaths lists the field paths the schema's records reach (e.g.
// "customer.id"), through nested records and unions holding records, in
// schema order; recursive types are followed once.
func (s *Schema) FieldPaths() []string {
	var out []string
	var walk func(n *node, prefix string, seen map[*node]bool)
	walk = func(n *node, prefix string, seen map[*node]bool) {
		switch n.t {
		case Record:
			if seen[n] {
				return
			}
			seen[n] = true
			for _, f := range n.fields {
				p := f.name
				if prefix != "" {
					p = prefix + "." + f.name
				}
				out = append(out, p)
				walk(f.t, p, seen)
			}
			delete(seen, n)
		case Union:
			for _, b := range n.branches {
				walk(b, prefix, seen)
			}
		}
	}
	walk(s.root, "", map[*node]bool{})
	return out
}
