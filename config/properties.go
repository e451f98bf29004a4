package config

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// parseProperties parses the java.util.Properties text format: `key=value`,
// `key: value` or `key value` lines; # and ! comment lines; a backslash at the
// end of a line continues it on the next (whose leading blanks are dropped);
// escapes \t \n \r \f \uXXXX, and a backslash before any other character
// stands for that character. Later keys win. The file is read as UTF-8.
func parseProperties(text string) (map[string]string, error) {
	props := map[string]string{}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	lines := strings.Split(text, "\n")
	var logical strings.Builder
	cont := false
	start := 0
	for i, raw := range lines {
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
			if i < len(lines)-1 {
				continue
			}
		} else {
			logical.WriteString(line)
		}
		cont = false
		key, value, err := splitProperty(logical.String())
		logical.Reset()
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		props[key] = value
	}
	return props, nil
}

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

// applyClientProperties merges a Java-style client.properties file into c.
// Keys in explicit were set by the YAML file, the environment or a flag and
// win over the properties file.
func applyClientProperties(c *Config, path string, explicit map[string]bool) error {
	const key = "kafka.client_properties"
	if err := checkReadable(key, path); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	props, err := parseProperties(string(data))
	if err != nil {
		return errorf(key, "%s: %v", path, err)
	}
	at := func(prop string) string { return prop + " (in " + path + ")" }
	set := func(k string, dst *string, v string) {
		if !explicit[k] && v != "" {
			*dst = v
		}
	}

	if bs, ok := props["bootstrap.servers"]; ok && !explicit["kafka.brokers"] {
		var brokers []string
		for _, b := range splitList(bs) {
			if i := strings.Index(b, "://"); i >= 0 {
				b = b[i+3:] // LISTENER://host:port
			}
			if err := checkAddress(b); err != nil {
				return errorf(at("bootstrap.servers"), "%q is not a host:port address: %s", b, err)
			}
			brokers = append(brokers, b)
		}
		if len(brokers) == 0 {
			return errorf(at("bootstrap.servers"), "no broker address given")
		}
		c.Kafka.Brokers = brokers
	}

	proto := strings.ToUpper(strings.TrimSpace(props["security.protocol"]))
	var useTLS, useSASL bool
	switch proto {
	case "", "PLAINTEXT":
	case "SSL":
		useTLS = true
	case "SASL_PLAINTEXT":
		useSASL = true
	case "SASL_SSL":
		useTLS, useSASL = true, true
	default:
		return errorf(at("security.protocol"), "%q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", props["security.protocol"])
	}
	if useTLS && !explicit["kafka.tls.enabled"] {
		c.Kafka.TLS.Enabled = true
	}

	if useSASL {
		mech := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
		switch mech {
		case "":
			if !explicit["kafka.sasl.mechanism"] {
				return errorf(at("sasl.mechanism"), "is not set, so Kafka clients would use GSSAPI (Kerberos), which lossaudit does not support; set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
			}
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		default:
			return errorf(at("sasl.mechanism"), "%q is not one of %s, %s, %s", props["sasl.mechanism"],
				MechanismPlain, MechanismScramSHA256, MechanismScramSHA512)
		}
		set("kafka.sasl.mechanism", &c.Kafka.SASL.Mechanism, mech)
		if jaas, ok := props["sasl.jaas.config"]; ok {
			login, err := parseJAAS(jaas)
			if err != nil {
				return errorf(at("sasl.jaas.config"), "%v", err)
			}
			effective := strings.ToUpper(c.Kafka.SASL.Mechanism)
			switch {
			case strings.HasSuffix(login.Module, "PlainLoginModule"):
				if effective != MechanismPlain {
					return errorf(at("sasl.jaas.config"), "uses %s but the SASL mechanism is %s", login.Module, effective)
				}
			case strings.HasSuffix(login.Module, "ScramLoginModule"):
				if !strings.HasPrefix(effective, "SCRAM-") {
					return errorf(at("sasl.jaas.config"), "uses %s but the SASL mechanism is %s", login.Module, effective)
				}
			default:
				return errorf(at("sasl.jaas.config"), "login module %s is not supported; use PlainLoginModule or ScramLoginModule", login.Module)
			}
			if login.Options["username"] == "" && !explicit["kafka.sasl.username"] {
				return errorf(at("sasl.jaas.config"), "has no username option")
			}
			set("kafka.sasl.username", &c.Kafka.SASL.Username, login.Options["username"])
			set("kafka.sasl.password", &c.Kafka.SASL.Password, login.Options["password"])
		}
	}

	if useTLS {
		if props["ssl.truststore.certificates"] != "" || props["ssl.keystore.certificate.chain"] != "" || props["ssl.keystore.key"] != "" {
			return errorf(at("ssl.truststore.certificates"), "inline PEM values are not supported; put the PEM in a file and name it in ssl.truststore.location / ssl.keystore.location")
		}
		// Key stores must be PEM; the file's content decides, whatever
		// ssl.*store.type says (checkPEM explains how to convert JKS/PKCS12).
		// ssl.endpoint.identification.algorithm is not mapped: host names are
		// verified unless kafka.tls.insecure_skip_verify is set.
		stores := []struct{ prop, cfgKey string }{
			{"ssl.truststore.location", "kafka.tls.ca_file"},
			{"ssl.keystore.location", "kafka.tls.cert_file"},
			{"ssl.ca.location", "kafka.tls.ca_file"},
			{"ssl.certificate.location", "kafka.tls.cert_file"},
			{"ssl.key.location", "kafka.tls.key_file"},
		}
		for _, s := range stores {
			loc := strings.TrimSpace(props[s.prop])
			if loc == "" || explicit[s.cfgKey] {
				continue
			}
			check := checkPEM
			if s.prop == "ssl.keystore.location" || s.prop == "ssl.key.location" {
				check = checkKeyPEM // a PEM key store holds the private key too
			}
			if err := check(at(s.prop), loc); err != nil {
				return err
			}
			switch s.prop {
			case "ssl.truststore.location", "ssl.ca.location":
				c.Kafka.TLS.CAFile = loc
			case "ssl.keystore.location":
				// A PEM key store holds the certificate chain and the private key.
				c.Kafka.TLS.CertFile = loc
				if !explicit["kafka.tls.key_file"] && props["ssl.key.location"] == "" {
					c.Kafka.TLS.KeyFile = loc
				}
			case "ssl.certificate.location":
				c.Kafka.TLS.CertFile = loc
			case "ssl.key.location":
				c.Kafka.TLS.KeyFile = loc
			}
		}
	}

	if u := strings.TrimSpace(props["schema.registry.url"]); u != "" {
		set("schema.registry_url", &c.Schema.RegistryURL, splitList(u)[0])
	}
	info := props["basic.auth.user.info"]
	if info == "" {
		info = props["schema.registry.basic.auth.user.info"]
	}
	if info != "" {
		user, pass, ok := strings.Cut(info, ":")
		if !ok {
			return errorf(at("basic.auth.user.info"), "must be user:password")
		}
		set("schema.registry_username", &c.Schema.RegistryUsername, user)
		set("schema.registry_password", &c.Schema.RegistryPassword, pass)
	}
	return nil
}
