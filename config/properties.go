package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parseProperties parses the java.util.Properties text format: `key=value`,
// `key: value` or `key value` lines; # and ! comment lines; a backslash at the
// end of a line continues it on the next (whose leading blanks are dropped);
// escapes \t \n \r \f \uXXXX, and a backslash before any other character
// stands for that character. Later keys win. The file is read as UTF-8.
// lines holds the line each key was (last) set on.
func parseProperties(text string) (props map[string]string, lines map[string]int, err error) {
	props, lines = map[string]string{}, map[string]int{}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	rows := strings.Split(text, "\n")
	var logical strings.Builder
	cont := false
	start := 0
	for i, raw := range rows {
		line := strings.TrimLeft(raw, " \t\f")
		if !cont {
			if line == "" || line[0] == '#' || line[0] == '!' {
				continue
			}
			start = i + 1
		}
		if trailingBackslashes(line)%2 == 1 {
			logical.WriteString(line[:len(line)-1])
			cont = true
			if i < len(rows)-1 {
				continue
			}
		} else {
			logical.WriteString(line)
		}
		cont = false
		key, value, err := splitProperty(logical.String())
		logical.Reset()
		if err != nil {
			return nil, nil, &propertyError{line: start, err: err}
		}
		props[key] = value
		lines[key] = start
	}
	return props, lines, nil
}

// parsePropertiesFile is parseProperties of text, the content of path,
// with a syntax error as an *Error naming the file and line.
func parsePropertiesFile(path, text string) (props map[string]string, lines map[string]int, err error) {
	props, lines, err = parseProperties(text)
	if err != nil {
		var pe *propertyError
		if errors.As(err, &pe) {
			return nil, nil, &Error{File: path, Line: pe.line, Msg: pe.err.Error()}
		}
		return nil, nil, &Error{File: path, Msg: err.Error()}
	}
	return props, lines, nil
}

// propertyError is a syntax error on a line of a properties file.
type propertyError struct {
	line int
	err  error
}

func (e *propertyError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitProperty splits one logical line into its unescaped key and value.
func splitProperty(line string) (key, value string, err error) {
	i := 0
	sep := false
	for i < len(line) {
		c := line[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' {
			sep = true
			break
		}
		if c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	if i > len(line) {
		i = len(line)
	}
	rawKey := line[:i]
	rest := line[i:]
	if sep {
		rest = rest[1:]
	}
	rest = strings.TrimLeft(rest, " \t\f")
	if !sep && rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	if key, err = unescapeProperty(rawKey); err != nil {
		return "", "", err
	}
	if value, err = unescapeProperty(rest); err != nil {
		return "", "", fmt.Errorf("value of %s: %w", key, err)
	}
	return key, value, nil
}

func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing backslash is dropped, as Java does
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\uxxxx escape")
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\uxxxx escape")
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// jaasLogin is the one login module of a sasl.jaas.config value.
type jaasLogin struct {
	Module  string
	Options map[string]string
}

// parseJAAS parses a sasl.jaas.config value, e.g.
// `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";`.
// Values may be double- or single-quoted with backslash escapes, or bare words.
// Error messages never contain option values.
func parseJAAS(s string) (jaasLogin, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return jaasLogin{}, err
	}
	var logins []jaasLogin
	for i := 0; i < len(toks); {
		if toks[i].kind != tokWord {
			return jaasLogin{}, fmt.Errorf("expected a login module class name")
		}
		login := jaasLogin{Module: toks[i].text, Options: map[string]string{}}
		i++
		if i >= len(toks) || toks[i].kind != tokWord {
			return jaasLogin{}, fmt.Errorf("login module %s: expected a control flag (required, requisite, sufficient or optional)", login.Module)
		}
		switch strings.ToLower(toks[i].text) {
		case "required", "requisite", "sufficient", "optional":
		default:
			return jaasLogin{}, fmt.Errorf("login module %s: %q is not a control flag (required, requisite, sufficient or optional)", login.Module, toks[i].text)
		}
		i++
		for {
			if i >= len(toks) {
				return jaasLogin{}, fmt.Errorf("login module %s: missing the final ';'", login.Module)
			}
			if toks[i].kind == tokSemi {
				i++
				break
			}
			if i+2 >= len(toks) || toks[i].kind != tokWord || toks[i+1].kind != tokEq ||
				(toks[i+2].kind != tokWord && toks[i+2].kind != tokQuoted) {
				return jaasLogin{}, fmt.Errorf("login module %s: expected option=value", login.Module)
			}
			login.Options[toks[i].text] = toks[i+2].text
			i += 3
		}
		logins = append(logins, login)
	}
	if len(logins) != 1 {
		return jaasLogin{}, fmt.Errorf("holds %d login modules, should hold exactly 1", len(logins))
	}
	return logins[0], nil
}

type tokKind int

const (
	tokWord tokKind = iota
	tokQuoted
	tokEq
	tokSemi
)

type jaasToken struct {
	kind tokKind
	text string
}

func jaasTokens(s string) ([]jaasToken, error) {
	var toks []jaasToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '=':
			toks = append(toks, jaasToken{kind: tokEq})
			i++
		case c == ';':
			toks = append(toks, jaasToken{kind: tokSemi})
			i++
		case c == '"' || c == '\'':
			var b strings.Builder
			j := i + 1
			closed := false
			for j < len(s) {
				if s[j] == '\\' && j+1 < len(s) {
					switch s[j+1] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					case 'r':
						b.WriteByte('\r')
					default:
						b.WriteByte(s[j+1])
					}
					j += 2
					continue
				}
				if s[j] == c {
					closed = true
					j++
					break
				}
				b.WriteByte(s[j])
				j++
			}
			if !closed {
				return nil, fmt.Errorf("unterminated quoted value")
			}
			toks = append(toks, jaasToken{kind: tokQuoted, text: b.String()})
			i = j
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r\f=;\"'", rune(s[j])) {
				j++
			}
			toks = append(toks, jaasToken{kind: tokWord, text: s[i:j]})
			i = j
		}
	}
	return toks, nil
}
