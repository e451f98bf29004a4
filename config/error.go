package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error is a usage or configuration problem; the CLI exits 2 on it. It
// names where the offending value was written, so that its message reads
// as one line the user can act on:
//
//	audit.yaml:12: kafka.concurrency: "abc" is not a whole number
//	LOSSAUDIT_KAFKA_CONCURRENCY: "abc" is not a whole number
//	--from: "yesterday" is not a time: write RFC 3339 (...), a duration before now (-2h, 30m) or now
//	client.properties:3: bootstrap.server: not a property lossaudit reads (did you mean bootstrap.servers?)
type Error struct {
	// File is the YAML or client.properties file the value is in, or the
	// file that should hold it; Line is its line there, 0 when unknown.
	File string
	Line int
	// Env is the environment variable the value came from.
	Env string
	// Flag is the command-line flag (without dashes) the value came from.
	Flag string
	// Key is the configuration key (e.g. "kafka.brokers[1]",
	// "pipeline.inputs[1].key_format"), or for a value in a
	// client.properties file the property (e.g. "bootstrap.servers"); ""
	// when the problem is a whole file or variable.
	Key string
	// Msg says what is wrong. It never contains a secret.
	Msg string
}

// Error implements error: the source (file:line, variable or flag), the
// key unless the variable or flag already names it, and the message.
func (e *Error) Error() string {
	var parts []string
	switch {
	case e.Env != "":
		parts = append(parts, e.Env)
	case e.Flag != "":
		parts = append(parts, "--"+e.Flag)
	case e.File != "" && e.Line > 0:
		parts = append(parts, e.File+":"+strconv.Itoa(e.Line))
	case e.File != "":
		parts = append(parts, e.File)
	}
	if e.Key != "" && !e.keyImplied() {
		parts = append(parts, e.Key)
	}
	return strings.Join(append(parts, e.Msg), ": ")
}

// keyImplied reports whether the variable or flag of e names its key
// (or the list the key is an element of).
func (e *Error) keyImplied() bool {
	base := e.Key
	if i := strings.LastIndexByte(base, '['); i > 0 && strings.HasSuffix(base, "]") {
		base = base[:i]
	}
	switch {
	case e.Env != "":
		return EnvName(base) == e.Env
	case e.Flag != "":
		for _, f := range Flags() {
			if f.Name == e.Flag {
				return f.Key == base
			}
		}
	}
	return false
}

// located reports whether e already says where its value came from.
func (e *Error) located() bool { return e.File != "" || e.Env != "" || e.Flag != "" }

// source is where a key's value was written.
type source struct {
	file string // YAML or client.properties file
	line int
	env  string // environment variable
	flag string // command-line flag
	// prop is the client.properties property the value came from.
	prop string
}

// provenance records, for a loaded Config, where each key's value came
// from. Keys that kept their default have no entry.
type provenance struct {
	// file is the YAML file the configuration was loaded from, "" for none.
	file string
	keys map[string]source
}

// set records that key's value came from s, in place of what a lower
// source (the file) said about it and its elements and fields.
func (p *provenance) set(key string, s source) {
	for k := range p.keys {
		if strings.HasPrefix(k, key+"[") || strings.HasPrefix(k, key+".") {
			delete(p.keys, k)
		}
	}
	p.keys[key] = s
}

// lookup returns the source of key, or of the nearest enclosing key
// ("pipeline.inputs[1].rekey", then "pipeline.inputs[1]", then
// "pipeline.inputs").
func (p *provenance) lookup(key string) (source, bool) {
	for k := key; k != ""; {
		if s, ok := p.keys[k]; ok {
			return s, true
		}
		i := strings.LastIndexAny(k, ".[")
		if i <= 0 {
			break
		}
		k = k[:i]
	}
	return source{}, false
}

// locate fills in the source of e's key unless e names one already. A key
// that kept its default is located in the YAML file, where it would be set.
func (p *provenance) locate(e *Error) {
	if p == nil || e.located() {
		return
	}
	s, ok := p.lookup(e.Key)
	if !ok {
		e.File = p.file
		return
	}
	e.File, e.Line, e.Env, e.Flag = s.file, s.line, s.env, s.flag
	if s.prop != "" {
		e.Key = s.prop
	}
}

// Locate fills in, on the *Error in err's chain, where the value of its
// key was written (file and line, variable or flag), when it does not say
// already. Code that finds a problem with a loaded configuration (the
// pipeline model, the schema sources) creates an *Error with the key only;
// the CLI calls Locate before printing it. The result is err itself when
// err is the *Error, else an error whose text is err's with the located
// *Error's text in place of the original (wrapping err, so errors.As still
// finds the *Error).
func (c *Config) Locate(err error) error {
	var e *Error
	if c == nil || c.prov == nil || !errors.As(err, &e) || e.located() {
		return err
	}
	before := e.Error()
	c.prov.locate(e)
	after := e.Error()
	if error(e) == err || before == after {
		return err
	}
	return &relocated{msg: strings.Replace(err.Error(), before, after, 1), err: err}
}

// relocated is an error wrapping an *Error whose text Locate changed.
type relocated struct {
	msg string
	err error
}

func (r *relocated) Error() string { return r.msg }
func (r *relocated) Unwrap() error { return r.err }

// Errorf returns an *Error about key, located like Locate does.
func (c *Config) Errorf(key, format string, args ...any) *Error {
	e := &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
	if c != nil {
		c.prov.locate(e)
	}
	return e
}

// errorf is an *Error about key with no source; Load locates it.
func errorf(key, format string, args ...any) *Error {
	return &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
}
