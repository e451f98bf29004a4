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

// readYAML parses the configuration file and returns the value node of
// every key it sets. Syntax errors, a second document, a top level that is
// not a mapping, a section that is not a mapping, a key set twice and an
// unknown key are *Error values naming the file and line.
func readYAML(file string, data []byte, defs []keyDef) (map[string]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return map[string]*yaml.Node{}, nil
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
		return map[string]*yaml.Node{}, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line,
			Msg: fmt.Sprintf("must be a mapping of sections (kafka:, schema:, pipeline:, ...), not %s", describeNode(root))}
	}
	w := &yamlWalker{file: file, leaf: map[string]bool{}, secs: sections(defs), out: map[string]*yaml.Node{}}
	for _, d := range defs {
		w.leaf[d.key] = true
	}
	if err := w.walk("", root); err != nil {
		return nil, err
	}
	return w.out, nil
}

type yamlWalker struct {
	file string
	leaf map[string]bool
	secs map[string][]string
	out  map[string]*yaml.Node
}

func (w *yamlWalker) walk(prefix string, m *yaml.Node) error {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := resolve(m.Content[i]), resolve(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			return &Error{File: w.file, Line: k.Line, Key: prefix, Msg: "a key must be a name, not " + describeNode(k)}
		}
		name := strings.ToLower(k.Value)
		key := name
		if prefix != "" {
			key = prefix + "." + name
		}
		if first, dup := seen[name]; dup {
			return &Error{File: w.file, Line: k.Line, Key: key, Msg: fmt.Sprintf("set twice (first on line %d)", first)}
		}
		seen[name] = k.Line
		switch {
		case w.leaf[key]:
			w.out[key] = v
		case w.secs[key] != nil:
			if isNull(v) {
				continue // an empty section
			}
			if v.Kind != yaml.MappingNode {
				return &Error{File: w.file, Line: v.Line, Key: key,
					Msg: fmt.Sprintf("must be a mapping of %s, not %s", strings.Join(w.secs[key], ", "), describeNode(v))}
			}
			if err := w.walk(key, v); err != nil {
				return err
			}
		default:
			return &Error{File: w.file, Line: k.Line, Key: key, Msg: w.unknown(prefix, name)}
		}
	}
	return nil
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
