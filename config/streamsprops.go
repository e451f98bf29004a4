package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
)

// The properties of a Kafka Streams application's properties file that
// lossaudit reads (pipeline.streams_properties); every other property,
// passwords included, is parsed and dropped, never shown.
const (
	propDeadLetterTopic = "errors.dead.letter.queue.topic.name"
	propApplicationID   = "application.id"
)

// applyStreamsProperties reads the application's properties file named by
// pipeline.streams_properties. Its errors.dead.letter.queue.topic.name
// (Kafka Streams 4.2+, KIP-1034) gives pipeline.dead_letter_topic and its
// application.id pipeline.application_id when they are not set or empty
// (keys in explicit were set by the YAML file, the environment or a flag); set to
// another value, they contradict the application and are an error naming
// both. The file is decoded as ISO-8859-1, as Java's
// Properties.load(InputStream) (Kafka's Utils.loadProps) reads it. Errors
// name the file and line; they never quote a value the file holds other
// than the two taken, so passwords in it are never shown.
func applyStreamsProperties(c *Config, explicit map[string]bool) error {
	path := c.Pipeline.StreamsProperties
	key := c.keyOf(&c.Pipeline.StreamsProperties)
	if err := checkReadable(key, path); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return &Error{File: path, Msg: "is not a text file of key=value lines; " + key + " names the Kafka Streams application's properties file"}
	}
	props, lines, err := parsePropertiesFile(path, latin1(data))
	if err != nil {
		return err
	}
	take := func(prop string, dst *string) error {
		v, ok := props[prop]
		// ConfigDef trims a STRING value; an empty one is the default, none.
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return nil
		}
		at := func(format string, args ...any) error {
			return &Error{File: path, Line: lines[prop], Key: prop, Msg: fmt.Sprintf(format, args...)}
		}
		if strings.Contains(v, "${") {
			return at("is taken from a config provider (${...}), which lossaudit does not resolve; set %s", c.keyOf(dst))
		}
		if err := checkTopicChars(v); err != nil {
			return at("%q %v", v, err)
		}
		if explicit[c.keyOf(dst)] && *dst != "" {
			if *dst != v {
				return errorf(c.keyOf(dst), "is %q, but the application's properties file %s sets %s=%q on line %d: the audit would not be of that application's configuration; remove one of them",
					*dst, path, prop, v, lines[prop])
			}
			return nil
		}
		*dst = v
		if c.prov != nil {
			c.prov.keys[c.keyOf(dst)] = source{file: path, line: lines[prop], prop: prop}
		}
		return nil
	}
	if err := take(propDeadLetterTopic, &c.Pipeline.DeadLetterTopic); err != nil {
		return err
	}
	return take(propApplicationID, &c.Pipeline.ApplicationID)
}

// latin1 decodes ISO-8859-1: every byte is the code point of its value.
func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// checkTopicChars checks what Kafka's Topic#validate checks of a topic
// name (an application.id prefixes the internal topics' names): 1 to 249
// characters of [a-zA-Z0-9._-], not "." or "..".
func checkTopicChars(s string) error {
	if s == "." || s == ".." {
		return errors.New(`cannot be "." or ".."`)
	}
	if len(s) > 249 {
		return errors.New("is longer than the 249 characters of a topic name")
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("holds %q, which a topic name cannot (only ASCII letters, digits, '.', '_' and '-')", r)
		}
	}
	return nil
}
