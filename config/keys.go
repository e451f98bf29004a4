package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/config/typo"
)

// keySpec is one configuration key, derived from the struct tags of Config
// (see Config): the tags are the only place a key is spelled.
type keySpec struct {
	// key is the dotted name (kafka.fetch_max_bytes).
	key string
	// index is the field's path from Config (reflect.Value.FieldByIndex).
	index []int
	typ   reflect.Type
	// def is the default, as text ("" when the tag gives none).
	def string
	// flag is the overriding flag's name, usage its help text.
	flag, usage string
	// redact is "secret" (masked), "url" (password in it masked) or "".
	redact string
	// check is a bound Validate enforces: positive, atleast1, nonnegative,
	// nonempty; "" for none.
	check string
	// entry describes a list of mappings (pipeline.inputs); nil otherwise.
	entry *entrySpec
}

// entrySpec describes a key holding a list of mappings.
type entrySpec struct {
	// fields are the names an entry takes, in declaration order.
	fields []string
	// defaults are the entry fields' defaults, by name.
	defaults map[string]string
	// list and one describe the whole value and one entry, for messages.
	list, one string
	typ       reflect.Type
	// sub describes the entry fields that are lists of mappings
	// themselves (pipeline.nodes[i].branches), by name.
	sub map[string]*entrySpec
}

var timeType = reflect.TypeOf(time.Time{})

// isLeafStruct reports whether t is a struct read as one value.
func isLeafStruct(t reflect.Type) bool { return t == timeType }

// keySpecs derives every key from Config's struct tags, in declaration
// order (the order of the reference).
func keySpecs() []keySpec {
	var out []keySpec
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := f.Tag.Get("mapstructure")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			key := name
			if prefix != "" {
				key = prefix + "." + name
			}
			idx := append(append([]int(nil), index...), i)
			if f.Type.Kind() == reflect.Struct && !isLeafStruct(f.Type) {
				walk(f.Type, key, idx)
				continue
			}
			s := keySpec{key: key, index: idx, typ: f.Type, def: f.Tag.Get("default"),
				flag: f.Tag.Get("flag"), usage: f.Tag.Get("usage"), redact: f.Tag.Get("redact"), check: f.Tag.Get("check")}
			if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
				s.entry = entryOf(f)
			}
			out = append(out, s)
		}
	}
	walk(reflect.TypeOf(Config{}), "", nil)
	return out
}

// entryOf describes the list-of-mappings field f.
func entryOf(f reflect.StructField) *entrySpec {
	e := &entrySpec{defaults: map[string]string{}, list: f.Tag.Get("list"), one: f.Tag.Get("entry"), typ: f.Type.Elem()}
	for i := 0; i < e.typ.NumField(); i++ {
		ef := e.typ.Field(i)
		name := ef.Tag.Get("mapstructure")
		if name == "" || name == "-" {
			continue
		}
		e.fields = append(e.fields, name)
		if d := ef.Tag.Get("default"); d != "" {
			e.defaults[name] = d
		}
		if ef.Type.Kind() == reflect.Slice && ef.Type.Elem().Kind() == reflect.Struct {
			if e.sub == nil {
				e.sub = map[string]*entrySpec{}
			}
			e.sub[name] = entryOf(ef)
		}
	}
	return e
}

// fieldNames returns the names of the declared fields of struct type t.
func fieldNames(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if name := t.Field(i).Tag.Get("mapstructure"); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// Keys returns every configuration key, in the order of the reference.
func Keys() []string {
	specs := keySpecs()
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.key
	}
	return out
}

// Defaults returns every key with its default value as the reference
// shows it: a list of strings for a list key with a default, []any{} for
// a list of mappings, false for a flag, a number for a number, else the
// text ("" when none). Every key lossaudit reads appears here.
func Defaults() map[string]any {
	out := map[string]any{}
	for _, s := range keySpecs() {
		out[s.key] = s.defaultValue()
	}
	return out
}

// defaultValue is s's default as Defaults shows it.
func (s keySpec) defaultValue() any {
	switch {
	case s.entry != nil:
		return []any{}
	case s.typ.Kind() == reflect.Slice && s.def != "":
		return splitList(s.def)
	case s.typ.Kind() == reflect.Bool:
		return s.def == "true"
	case s.typ.Kind() == reflect.Int || s.typ.Kind() == reflect.Int32:
		n, _ := parseWhole(s.def, 1<<62)
		return n
	}
	return s.def
}

// EnvName returns the environment variable that overrides key.
func EnvName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// sections returns the sections (key prefixes such as "kafka" and
// "kafka.tls", and "" for the top level) of the keys, each with the names
// directly under it in declaration order.
func sections(specs []keySpec) map[string][]string {
	out := map[string][]string{}
	for _, s := range specs {
		parts := strings.Split(s.key, ".")
		for i := 0; i < len(parts); i++ {
			sec := strings.Join(parts[:i], ".")
			if name := parts[i]; !contains(out[sec], name) {
				out[sec] = append(out[sec], name)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// nearest returns the candidate closest to name by edit distance, or ""
// when none is within two typos (and closer than half of name's length).
func nearest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := typo.Distance(name, c)
		if d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	if best != "" && bestD*2 >= len(name) && bestD > 0 {
		return ""
	}
	return best
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// keyOf returns the key of the field ptr points at in c (a field of a
// section, or of an entry of a list of mappings), e.g. "kafka.tls.ca_file"
// or "pipeline.inputs[1].name", so that code about a value names its key
// from the declaration. A pointer that is not into c is a programming
// error: keyOf panics (the tests reach every call).
func (c *Config) keyOf(ptr any) string {
	p := reflect.ValueOf(ptr)
	want, typ := p.Pointer(), p.Type().Elem()
	var find func(v reflect.Value, prefix string) (string, bool)
	find = func(v reflect.Value, prefix string) (string, bool) {
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name := f.Tag.Get("mapstructure")
			if name == "" || name == "-" {
				continue
			}
			key := name
			if prefix != "" {
				key = prefix + "." + name
			}
			fv := v.Field(i)
			if fv.Addr().Pointer() == want && f.Type == typ {
				return key, true
			}
			switch {
			case f.Type.Kind() == reflect.Struct && !isLeafStruct(f.Type):
				if k, ok := find(fv, key); ok {
					return k, true
				}
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
				for j := 0; j < fv.Len(); j++ {
					at := fmt.Sprintf("%s[%d]", key, j)
					if ev := fv.Index(j); ev.Addr().Pointer() == want && ev.Type() == typ {
						return at, true
					} else if k, ok := find(ev, at); ok {
						return k, true
					}
				}
			}
		}
		return "", false
	}
	if k, ok := find(reflect.ValueOf(c).Elem(), ""); ok {
		return k
	}
	panic(fmt.Sprintf("config: keyOf: %s is not a field of the configuration", typ))
}
