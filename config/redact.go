package config

import (
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"time"
)

// Redacted renders the effective configuration, one `key = value` line per
// key in the order of the reference (a list of mappings one line per
// entry), with every value whose declaration says `redact:"secret"`
// replaced by *** and the password in a `redact:"url"` value too. It is
// safe to log.
func (c *Config) Redacted() string {
	var b strings.Builder
	cv := reflect.ValueOf(c).Elem()
	for _, s := range keySpecs() {
		v := cv.FieldByIndex(s.index)
		if s.entry != nil {
			for i := 0; i < v.Len(); i++ {
				e := v.Index(i)
				var fields []string
				for j, name := range s.entry.fields {
					fields = append(fields, fmt.Sprintf("%s: %v", name, e.Field(fieldIndex(e.Type(), j))))
				}
				fmt.Fprintf(&b, "%s[%d] = {%s}\n", s.key, i, strings.Join(fields, ", "))
			}
			continue
		}
		fmt.Fprintf(&b, "%s = %s\n", s.key, redactedValue(s, v))
	}
	return b.String()
}

// redactedValue renders the value v of key s for Redacted.
func redactedValue(s keySpec, v reflect.Value) string {
	switch x := v.Interface().(type) {
	case []string:
		return strings.Join(x, ",")
	case time.Time:
		if x.IsZero() {
			return ""
		}
		return x.Format("2006-01-02T15:04:05.000Z07:00")
	case string:
		switch s.redact {
		case "secret":
			return mask(x)
		case "url":
			return redactURL(x)
		}
		return x
	}
	return fmt.Sprint(v.Interface())
}

// redactedStruct renders the struct v as %+v would ({Field:value ...}),
// with the fields its tags say to redact masked: the String method of a
// section holding a secret, so that printing a Config never leaks it.
func redactedStruct(v any) string {
	rv := reflect.ValueOf(v)
	t := rv.Type()
	var parts []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		val := fmt.Sprint(rv.Field(i).Interface())
		if s, ok := rv.Field(i).Interface().(string); ok {
			val = redactedValue(keySpec{redact: f.Tag.Get("redact")}, reflect.ValueOf(s))
		}
		parts = append(parts, f.Name+":"+val)
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// fieldIndex returns the index in struct type t of its j-th declared
// field (one with a mapstructure tag).
func fieldIndex(t reflect.Type, j int) int {
	for i := 0; i < t.NumField(); i++ {
		if name := t.Field(i).Tag.Get("mapstructure"); name != "" && name != "-" {
			if j == 0 {
				return i
			}
			j--
		}
	}
	return -1
}

// mask hides a secret: "" stays "", anything else becomes "***".
func mask(s string) string {
	if s == "" {
		return ""
	}
	return "***"
}

// redactURL hides a password embedded in a URL's user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if err != nil && strings.Contains(s, "@") {
			return "<unparsable URL>"
		}
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
		return strings.Replace(u.String(), "xxxxx", "***", 1)
	}
	return s
}
