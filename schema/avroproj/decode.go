package avroproj

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Limits that keep hostile input bounded.
const (
	// MaxDepth bounds the nesting of values (recursive schemas).
	MaxDepth = 1000
	// MaxZeroSizeItems bounds the item count of an array or map whose items
	// encode to zero bytes (e.g. an array of null), which the remaining input
	// length cannot bound.
	MaxZeroSizeItems = 1 << 20
)

// ErrShort reports input that ends inside a value.
var ErrShort = errors.New("input ends inside a value")

// PathError reports a field path that does not exist in the writer schema,
// or in the union branch the record took.
type PathError struct {
	Path string
	// At is the path prefix that was resolved when the lookup failed.
	At string
	// Reason says what was found instead.
	Reason string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("field path %q does not exist: %s", e.Path, e.Reason)
}

// Value is the projected value. Bytes aliases the decoded input (string,
// bytes, fixed) or the schema (enum symbol): copy it to keep it past the
// next call.
type Value struct {
	// Null is true when the path ran into a null (the field itself, or a
	// nullable record on the way); Type is then Null.
	Null bool
	// Type is the Avro type of the value found (never Union: the branch
	// taken). Record, Array and Map values carry no data: a path ending at
	// one is the caller's wrong-type error.
	Type Type
	// Logical is the value's logicalType, if any.
	Logical string
	// Bytes holds string, bytes, fixed and enum-symbol values.
	Bytes []byte
	// Int holds int, long and boolean (0/1) values.
	Int int64
	// Float holds float and double values.
	Float float64
}

// Plan is a field path compiled against one writer schema; safe for
// concurrent use.
type Plan struct {
	root *pnode
	path string
}

type pkind uint8

const (
	pSkip    pkind = iota // not on the path
	pRecord               // descend into field idx
	pUnion                // per-branch plans
	pLeaf                 // the value itself
	pNullEnd              // a null before the path ended: the value is null
	pMissing              // the path cannot continue here
)

type pnode struct {
	kind     pkind
	idx      int
	next     *pnode
	branches []*pnode
	at       string
	reason   string
}

// Project compiles a dotted field path (e.g. "customer.id") against the
// schema. It fails when no union branch lets the path resolve; when some
// branches resolve and others do not, records taking the others fail at
// decode time with a *PathError.
func (s *Schema) Project(path string) (*Plan, error) {
	segs := strings.Split(path, ".")
	for _, sg := range segs {
		if sg == "" {
			return nil, fmt.Errorf("field path %q has an empty segment", path)
		}
	}
	root := compile(s.root, segs, 0)
	if !resolves(root) {
		r := firstMissing(root)
		return nil, &PathError{Path: path, At: r.at, Reason: r.reason}
	}
	return &Plan{root: root, path: path}, nil
}

// Path returns the field path the plan was compiled for.
func (p *Plan) Path() string { return p.path }

func compile(n *node, segs []string, i int) *pnode {
	at := strings.Join(segs[:i], ".")
	if n.t == Union {
		pn := &pnode{kind: pUnion, at: at}
		for _, b := range n.branches {
			pn.branches = append(pn.branches, compile(b, segs, i))
		}
		return pn
	}
	if i == len(segs) {
		return &pnode{kind: pLeaf}
	}
	switch n.t {
	case Null:
		return &pnode{kind: pNullEnd}
	case Record:
		for fi, f := range n.fields {
			if f.name == segs[i] {
				return &pnode{kind: pRecord, idx: fi, next: compile(f.t, segs, i+1)}
			}
		}
		return &pnode{kind: pMissing, at: at, reason: fmt.Sprintf("record %s has no field %q", n.name, segs[i])}
	}
	where := "the top level"
	if at != "" {
		where = fmt.Sprintf("%q", at)
	}
	return &pnode{kind: pMissing, at: at, reason: fmt.Sprintf("%s is %s, not a record", where, n.t)}
}

// resolves reports whether some branch reaches a leaf (or a value that can
// be null on the way).
func resolves(p *pnode) bool {
	switch p.kind {
	case pLeaf:
		return true
	case pRecord:
		return resolves(p.next)
	case pUnion:
		for _, b := range p.branches {
			if b.kind != pNullEnd && resolves(b) {
				return true
			}
		}
	}
	return false
}

func firstMissing(p *pnode) *pnode {
	switch p.kind {
	case pMissing:
		return p
	case pRecord:
		return firstMissing(p.next)
	case pUnion:
		for _, b := range p.branches {
			if m := firstMissing(b); m != nil {
				return m
			}
		}
	}
	return &pnode{reason: "only null along the path"}
}

// Decode walks one datum of the plan's schema in b and returns the value
// at the path. Bytes after the datum are ignored (as Avro's Java decoder
// does).
func (s *Schema) Decode(p *Plan, b []byte) (Value, error) {
	d := decoder{buf: b, path: p.path}
	var v Value
	if err := d.walk(s.root, p.root, &v, 0); err != nil {
		return Value{}, err
	}
	return v, nil
}

// Skip validates one datum of the schema in b and returns the number of
// bytes it takes.
func (s *Schema) Skip(b []byte) (int, error) {
	d := decoder{buf: b}
	if err := d.walk(s.root, nil, nil, 0); err != nil {
		return 0, err
	}
	return d.pos, nil
}

type decoder struct {
	buf  []byte
	pos  int
	path string
}

func (d *decoder) long() (int64, error) {
	var v uint64
	for i := 0; i < 10; i++ {
		if d.pos >= len(d.buf) {
			return 0, ErrShort
		}
		c := d.buf[d.pos]
		d.pos++
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c&0x80 == 0 {
			return int64(v>>1) ^ -int64(v&1), nil
		}
	}
	return 0, errors.New("long varint longer than 10 bytes")
}

func (d *decoder) int() (int32, error) {
	var v uint64
	for i := 0; i < 5; i++ {
		if d.pos >= len(d.buf) {
			return 0, ErrShort
		}
		c := d.buf[d.pos]
		d.pos++
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c&0x80 == 0 {
			return int32(v>>1) ^ -int32(v&1), nil
		}
	}
	return 0, errors.New("int varint longer than 5 bytes")
}

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.buf)-d.pos {
		return nil, ErrShort
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

func (d *decoder) lenPrefixed() ([]byte, error) {
	n, err := d.long()
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("negative length %d", n)
	}
	if n > int64(len(d.buf)-d.pos) {
		return nil, fmt.Errorf("length %d exceeds the %d bytes left: %w", n, len(d.buf)-d.pos, ErrShort)
	}
	return d.take(int(n))
}

// walk decodes one value of type n. p is its plan (nil: skip); v receives
// the projected value.
func (d *decoder) walk(n *node, p *pnode, v *Value, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("values nested deeper than %d", MaxDepth)
	}
	if p != nil {
		switch p.kind {
		case pSkip:
			p = nil
		case pMissing:
			return &PathError{Path: d.path, At: p.at, Reason: p.reason}
		case pNullEnd:
			v.Null, v.Type = true, Null
			return nil // the type is null: nothing to read
		}
	}
	leaf := p != nil && p.kind == pLeaf
	switch n.t {
	case Null:
		if leaf {
			v.Null, v.Type = true, Null
		}
	case Boolean:
		if d.pos >= len(d.buf) {
			return ErrShort
		}
		c := d.buf[d.pos]
		d.pos++
		if c > 1 {
			return fmt.Errorf("boolean byte %d is neither 0 nor 1", c)
		}
		if leaf {
			v.Type, v.Int, v.Logical = Boolean, int64(c), n.logical
		}
	case Int:
		x, err := d.int()
		if err != nil {
			return err
		}
		if leaf {
			v.Type, v.Int, v.Logical = Int, int64(x), n.logical
		}
	case Long:
		x, err := d.long()
		if err != nil {
			return err
		}
		if leaf {
			v.Type, v.Int, v.Logical = Long, x, n.logical
		}
	case Float:
		b, err := d.take(4)
		if err != nil {
			return err
		}
		if leaf {
			bits := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
			v.Type, v.Float, v.Logical = Float, float64(math.Float32frombits(bits)), n.logical
		}
	case Double:
		b, err := d.take(8)
		if err != nil {
			return err
		}
		if leaf {
			var bits uint64
			for i := 7; i >= 0; i-- {
				bits = bits<<8 | uint64(b[i])
			}
			v.Type, v.Float, v.Logical = Double, math.Float64frombits(bits), n.logical
		}
	case Bytes, String:
		b, err := d.lenPrefixed()
		if err != nil {
			return err
		}
		if leaf {
			v.Type, v.Bytes, v.Logical = n.t, b, n.logical
		}
	case Fixed:
		b, err := d.take(n.size)
		if err != nil {
			return err
		}
		if leaf {
			v.Type, v.Bytes, v.Logical = Fixed, b, n.logical
		}
	case Enum:
		i, err := d.int()
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(n.symbols) {
			return fmt.Errorf("enum %s index %d out of range [0,%d)", n.name, i, len(n.symbols))
		}
		if leaf {
			v.Type, v.Bytes, v.Logical = Enum, []byte(n.symbols[i]), n.logical
		}
	case Union:
		i, err := d.int()
		if err != nil {
			return err
		}
		if i < 0 || int(i) >= len(n.branches) {
			return fmt.Errorf("union index %d out of range [0,%d)", i, len(n.branches))
		}
		var bp *pnode
		if p != nil {
			bp = p.branches[i]
		}
		return d.walk(n.branches[i], bp, v, depth+1)
	case Record:
		for fi, f := range n.fields {
			var fp *pnode
			if p != nil && p.kind == pRecord && p.idx == fi {
				fp = p.next
			}
			if err := d.walk(f.t, fp, v, depth+1); err != nil {
				if p != nil && fp != nil {
					return err
				}
				var pe *PathError
				if errors.As(err, &pe) {
					return err
				}
				return fmt.Errorf("%s.%s: %w", n.name, f.name, err)
			}
		}
		if leaf {
			v.Type, v.Logical = Record, n.logical
		}
	case Array, Map:
		if err := d.blocks(n, depth); err != nil {
			return err
		}
		if leaf {
			v.Type, v.Logical = n.t, n.logical
		}
	}
	return nil
}

// blocks skips the blocks of an array or map.
func (d *decoder) blocks(n *node, depth int) error {
	total := int64(0)
	for {
		count, err := d.long()
		if err != nil {
			return err
		}
		if count == 0 {
			return nil
		}
		if count < 0 {
			if count == math.MinInt64 {
				return fmt.Errorf("bad block count %d", count)
			}
			count = -count
			size, err := d.long()
			if err != nil {
				return err
			}
			if size < 0 || size > int64(len(d.buf)-d.pos) {
				return fmt.Errorf("block size %d exceeds the %d bytes left: %w", size, len(d.buf)-d.pos, ErrShort)
			}
		}
		itemMin := int64(n.items.min)
		if n.t == Map {
			itemMin++ // the key's length
		}
		left := int64(len(d.buf) - d.pos)
		if itemMin > 0 && count > left/itemMin {
			return fmt.Errorf("block of %d items needs more than the %d bytes left: %w", count, left, ErrShort)
		}
		total += count
		if itemMin == 0 && total > MaxZeroSizeItems {
			return fmt.Errorf("more than %d zero-size items in one %s", MaxZeroSizeItems, n.t)
		}
		if n.t == Array && n.items.zero {
			continue // nothing to read for these items
		}
		for i := int64(0); i < count; i++ {
			if n.t == Map {
				if _, err := d.lenPrefixed(); err != nil {
					return fmt.Errorf("map key: %w", err)
				}
			}
			if err := d.walk(n.items, nil, nil, depth+1); err != nil {
				return err
			}
		}
	}
}
