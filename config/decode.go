package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"
)

// decodeHook is the one decode hook of viper's UnmarshalExact: it reads
// every value from its text (as written in the file, a variable, a flag or
// a default tag) the way lossaudit documents it, and says in words what is
// wrong. now is the time relative window bounds count back from.
//
// Its errors are *Error values whose Key is "" or relative to the value's
// key ("[0].key_fromat"); the loader adds the key mapstructure names and
// the source.
func decodeHook(now time.Time) mapstructure.DecodeHookFuncValue {
	return func(from, to reflect.Value) (any, error) {
		in := from.Interface()
		t := to.Type()
		switch {
		case t == reflect.TypeOf(time.Duration(0)):
			s, err := scalar(in)
			if err != nil {
				return nil, err
			}
			return parseDuration(s)
		case t == timeType:
			s, err := scalar(in)
			if err != nil {
				return nil, err
			}
			v, problem := parseTime(strings.TrimSpace(s), now)
			if problem != "" {
				return nil, &Error{Msg: problem}
			}
			return v, nil
		}
		switch t.Kind() {
		case reflect.String:
			return scalar(in)
		case reflect.Bool:
			s, err := scalar(in)
			if err != nil || strings.TrimSpace(s) == "" {
				return false, err
			}
			b, perr := strconv.ParseBool(strings.TrimSpace(s))
			if perr != nil {
				return nil, &Error{Msg: quoteValue(s) + " is not a boolean (true or false)"}
			}
			return b, nil
		case reflect.Int, reflect.Int32:
			s, err := scalar(in)
			if err != nil {
				return nil, err
			}
			n, problem := parseWhole(strings.TrimSpace(s), math.MaxInt32)
			if problem != "" {
				return nil, &Error{Msg: problem}
			}
			return n, nil
		case reflect.Slice:
			if t.Elem().Kind() == reflect.Struct {
				return entries(in, t.Elem())
			}
			return list(in)
		case reflect.Struct:
			if _, ok := in.(map[string]any); !ok && in != nil {
				return nil, &Error{Msg: fmt.Sprintf("must be a mapping of %s, not %s", strings.Join(fieldNames(t), ", "), describeValue(in))}
			}
		}
		return in, nil
	}
}

// scalar returns the text of a single value, or an *Error when in is a
// list or a mapping.
func scalar(in any) (string, error) {
	switch v := in.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []any, []string, map[string]any:
		return "", &Error{Msg: "must be a single value, not " + describeValue(in)}
	}
	return fmt.Sprint(in), nil
}

// list reads a list of strings: a YAML list, a comma-separated string
// (file or variable), or the values of a repeatable flag.
func list(in any) ([]string, error) {
	switch v := in.(type) {
	case nil:
		return nil, nil
	case []string:
		var out []string
		for _, s := range v {
			out = append(out, splitList(s)...)
		}
		return out, nil
	case []any:
		out := make([]string, 0, len(v))
		for i, e := range v {
			s, err := scalar(e)
			if err == nil && s == "" {
				err = &Error{Msg: "must be a single value, not empty"}
			}
			if err != nil {
				var ce *Error
				if errors.As(err, &ce) {
					ce.Key = fmt.Sprintf("[%d]", i)
				}
				return nil, err
			}
			out = append(out, strings.TrimSpace(s))
		}
		return out, nil
	case map[string]any:
		return nil, &Error{Msg: "must be a list, not a mapping"}
	}
	s, _ := scalar(in)
	return splitList(s), nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// entries reads a list of mappings of type elem: from the file, already
// walked by readYAML; from a variable, the same list written as YAML (or
// JSON) flow text, walked here. Entry fields left empty take their
// declared default.
func entries(in any, elem reflect.Type) (any, error) {
	spec := entryOf(reflect.StructField{Type: reflect.SliceOf(elem)})
	if s, ok := in.(string); ok {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(s), &doc); err != nil {
			e := yamlError("", "the value", err) // says "line N of the value"
			e.Env = ""
			return nil, e
		}
		n := resolve(&doc)
		if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
			n = resolve(n.Content[0])
		}
		if isNull(n) {
			return nil, nil
		}
		var err error
		if in, err = walkEntries(n, "", spec, nil); err != nil {
			return nil, err
		}
	}
	switch v := in.(type) {
	case nil:
		return nil, nil
	case []any:
		for _, e := range v {
			if m, ok := e.(map[string]any); ok {
				for name, def := range spec.defaults {
					if s, _ := m[name].(string); s == "" {
						m[name] = def
					}
				}
			}
		}
		return v, nil
	}
	return nil, &Error{Msg: fmt.Sprintf("must be %s, not %s", listDescription(elem), describeValue(in))}
}

// listDescription is the words for the list of mappings of type elem, from
// its field's `list` tag.
func listDescription(elem reflect.Type) string {
	for _, s := range keySpecs() {
		if s.entry != nil && s.entry.typ == elem {
			return s.entry.list
		}
	}
	return "a list"
}

// describeValue says in words what a value handed to the decoder is.
func describeValue(in any) string {
	switch v := in.(type) {
	case []any, []string:
		return "a list"
	case map[string]any:
		return "a mapping"
	case nil:
		return "empty"
	case string:
		if v == "" {
			return "empty"
		}
		return "the value " + quoteValue(v)
	}
	return "the value " + quoteValue(fmt.Sprint(in))
}

// decimal matches a number written in decimal, with a fraction or an
// exponent.
var decimal = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

// parseWhole parses a whole number in [-max-1, max], or says in words why
// s is not one.
func parseWhole(s string, max int64) (int64, string) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil && n <= max && n >= -max-1 {
		return n, ""
	}
	tooLarge := fmt.Sprintf("%s is too large (at most %d)", s, max)
	tooSmall := fmt.Sprintf("%s is too small (at least %d)", s, -max-1)
	if err == nil || errors.Is(err, strconv.ErrRange) {
		if strings.HasPrefix(s, "-") {
			return 0, tooSmall
		}
		return 0, tooLarge
	}
	if decimal.MatchString(s) {
		f, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil || f != math.Trunc(f):
			return 0, s + " is not a whole number"
		case f > float64(max):
			return 0, tooLarge
		case f < float64(-max-1):
			return 0, tooSmall
		}
		return int64(f), ""
	}
	if s == "" {
		return 0, "is empty; write a whole number"
	}
	return 0, quoteValue(s) + " is not a whole number"
}

// parseDuration reads a Go duration; "" and "0" are zero.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, perr := strconv.ParseFloat(s, 64); perr == nil {
			return 0, &Error{Msg: fmt.Sprintf("%s has no unit; write a duration like %q or \"2m\"", s, s+"s")}
		}
		return 0, &Error{Msg: fmt.Sprintf("%s is not a duration like \"30s\" or \"2m\"", quoteValue(s))}
	}
	return d, nil
}

// days matches a number of days, which Go durations do not have.
var days = regexp.MustCompile(`^-?(\d+)d$`)

// parseTime reads a window bound: "" (unbounded), RFC 3339, "now", or a Go
// duration, negative or unsigned, meaning that long before now.
func parseTime(s string, now time.Time) (time.Time, string) {
	if s == "" {
		return time.Time{}, ""
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, ""
	}
	if strings.EqualFold(s, "now") {
		return now, ""
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "-")); err == nil && !strings.HasPrefix(s, "+") {
		if d < 0 {
			return time.Time{}, fmt.Sprintf("%s is not a time: write a duration before now with one sign, like -2h", quoteValue(s))
		}
		return now.Add(-d), ""
	}
	if strings.HasPrefix(s, "+") {
		if _, err := time.ParseDuration(s[1:]); err == nil {
			return time.Time{}, fmt.Sprintf("%s is in the future: a duration means that long before now, like -2h or 2h", s)
		}
	}
	if m := days.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return time.Time{}, fmt.Sprintf("%s is not a time: durations have no days; write -%dh", s, 24*n)
	}
	return time.Time{}, fmt.Sprintf("%s is not a time: write %s", quoteValue(s), timeHelp)
}
