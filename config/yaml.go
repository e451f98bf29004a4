package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// readYAML parses the configuration file for viper's file layer and
// records the line of every key it sets in prov. It is kept only for what
// viper cannot say: where each value was written and, for a key that is
// not one, the nearest that is. The values keep the text as written (a
// scalar is its text, a list a []any, a mapping a map[string]any, null
// ""), so that the decode hooks see "2.50", "0042" or "yes" as the user
// wrote them. Syntax errors, a second document, a top level or section
// that is not a mapping, a key set twice and an unknown key are *Error
// values naming the file and line.
func readYAML(file string, data []byte, specs []keySpec, prov *provenance) (map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]any{}, nil
		}
		return nil, yamlError(file, "", err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return nil, &Error{File: file, Line: next.Line, Msg: "a second YAML document (after ---); lossaudit reads one"}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlError(file, "", err)
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = resolve(root.Content[0])
	}
	if isNull(root) {
		return map[string]any{}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line,
			Msg: fmt.Sprintf("must be a mapping of sections (kafka:, schema:, pipeline:, ...), not %s", describeNode(root))}
	}
	w := &yamlWalker{file: file, leaf: map[string]keySpec{}, secs: sections(specs), prov: prov}
	for _, s := range specs {
		w.leaf[s.key] = s
	}
	return w.walk("", root)
}

type yamlWalker struct {
	file string
	leaf map[string]keySpec
	secs map[string][]string
	prov *provenance
}

// at records that key was written on line.
func (w *yamlWalker) at(key string, line int) {
	w.prov.keys[key] = source{file: w.file, line: line}
}

func (w *yamlWalker) walk(prefix string, m *yaml.Node) (map[string]any, error) {
	out := map[string]any{}
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return nil, &Error{File: w.file, Line: k.Line, Key: prefix, Msg: "a key must be a name, not " + describeNode(k)}
		}
		name := strings.ToLower(k.Value)
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		if first, dup := seen[name]; dup {
			return nil, &Error{File: w.file, Line: k.Line, Key: key, Msg: fmt.Sprintf("set twice (first on line %d)", first)}
		}
		seen[name] = k.Line
		spec, leaf := w.leaf[key]
		switch {
		case leaf && spec.entry != nil:
			w.at(key, v.Line)
			val, err := walkEntries(v, key, spec.entry, w)
			if err != nil {
				return nil, err
			}
			out[name] = val
		case leaf:
			w.at(key, v.Line)
			if v.Kind == yaml.SequenceNode {
				for j, e := range v.Content {
					w.at(fmt.Sprintf("%s[%d]", key, j), resolve(e).Line)
				}
			}
			out[name] = plain(v)
		case w.secs[key] != nil:
			if isNull(v) {
				continue // an empty section
			}
			if v.Kind != yaml.MappingNode {
				return nil, &Error{File: w.file, Line: v.Line, Key: key,
					Msg: fmt.Sprintf("must be a mapping of %s, not %s", strings.Join(w.secs[key], ", "), describeNode(v))}
			}
			sub, err := w.walk(key, v)
			if err != nil {
				return nil, err
			}
			out[name] = sub
		default:
			return nil, &Error{File: w.file, Line: k.Line, Key: key, Msg: w.unknown(prefix, name)}
		}
	}
	return out, nil
}

// plain converts n to the value viper holds, keeping the text as written:
// a scalar is its text ("" for null), a list a []any, a mapping a
// map[string]any (keys lower-cased).
func plain(n *yaml.Node) any {
	n = resolve(n)
	switch {
	case isNull(n):
		return ""
	case n.Kind == yaml.SequenceNode:
		out := make([]any, len(n.Content))
		for i, e := range n.Content {
			out[i] = plain(e)
		}
		return out
	case n.Kind == yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			out[strings.ToLower(resolve(n.Content[i]).Value)] = plain(n.Content[i+1])
		}
		return out
	}
	return n.Value
}

// walkEntries reads a list of mappings (pipeline.inputs, compare.pairs)
// from n: each entry's field names are checked (unknown with the nearest
// name, set twice) and, when w is not nil (the file), located. key names
// the list in messages; it is "" for a value from the environment, whose
// messages the loader prefixes with the key. A value of another shape is
// returned as it is, for the decoder to say what it should be.
func walkEntries(n *yaml.Node, key string, e *entrySpec, w *yamlWalker) (any, error) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return plain(n), nil
	}
	out := make([]any, 0, len(n.Content))
	for i, en := range n.Content {
		en = resolve(en)
		at := fmt.Sprintf("%s[%d]", key, i)
		fail := func(line int, key, msg string) error {
			if w == nil {
				return &Error{Key: key, Msg: msg}
			}
			return &Error{File: w.file, Line: line, Key: key, Msg: msg}
		}
		if w != nil {
			w.at(at, en.Line)
		}
		if en.Kind != yaml.MappingNode {
			out = append(out, plain(en))
			continue
		}
		fields := map[string]any{}
		seen := map[string]int{}
		for j := 0; j+1 < len(en.Content); j += 2 {
			k, fv := resolve(en.Content[j]), resolve(en.Content[j+1])
			name := strings.ToLower(k.Value)
			fkey := at + "." + name
			if w != nil {
				w.at(fkey, k.Line)
			}
			switch {
			case k.Kind != yaml.ScalarNode:
				return nil, fail(k.Line, at, "a key must be a name, not "+describeNode(k))
			case !contains(e.fields, name):
				if near := nearest(name, e.fields); near != "" {
					return nil, fail(k.Line, fkey, fmt.Sprintf("unknown key (did you mean %s?)", near))
				}
				return nil, fail(k.Line, fkey, fmt.Sprintf("unknown key; %s takes %s", e.one, strings.Join(e.fields, ", ")))
			case seen[name] > 0:
				return nil, fail(k.Line, fkey, fmt.Sprintf("set twice (first on line %d)", seen[name]))
			}
			seen[name] = max(k.Line, 1)
			if sub := e.sub[name]; sub != nil {
				v, err := walkEntries(fv, fkey, sub, w)
				if err != nil {
					return nil, err
				}
				fields[name] = v
				continue
			}
			fields[name] = plain(fv)
		}
		out = append(out, fields)
	}
	return out, nil
}

// unknown says that name is not a key under prefix, and what is.
func (w *yamlWalker) unknown(prefix, name string) string {
	known := w.secs[prefix]
	if near := nearest(name, known); near != "" {
		if prefix != "" {
			near = prefix + "." + near
		}
		return fmt.Sprintf("unknown key (did you mean %s?)", near)
	}
	if prefix == "" {
		return "unknown key; the sections are " + strings.Join(known, ", ")
	}
	return fmt.Sprintf("unknown key; %s takes %s", prefix, strings.Join(known, ", "))
}

// resolve follows aliases (*name) to the node they stand for.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent, empty or null (~).
func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null") || (n.Kind == yaml.DocumentNode && len(n.Content) == 0)
}

// describeNode says in words what n is, for messages.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if isNull(n) {
			return "empty"
		}
		return "the value " + quoteValue(n.Value)
	}
	return "this"
}

// yamlLine matches the position yaml.v3 puts in its messages.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlError turns a yaml.v3 syntax error into one line naming the file (or
// the variable env) and, when known, the line.
func yamlError(file, env string, err error) *Error {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	e := &Error{File: file, Env: env}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		msg = m[2]
		if env == "" {
			e.Line = line
		} else {
			msg += fmt.Sprintf(" (line %d of the value)", line)
		}
	}
	e.Msg = "invalid YAML: " + msg
	return e
}

// quoteValue renders a value for a message: bare when it is a number or
// true/false, else quoted.
func quoteValue(s string) string {
	if decimal.MatchString(s) || s == "true" || s == "false" {
		return s
	}
	return strconv.Quote(s)
}
