package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"unicode/utf8"
)

// readProperties are the client.properties properties lossaudit reads.
func readProperties() []string {
	return []string{
		"bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config",
		"ssl.truststore.location", "ssl.keystore.location", "ssl.ca.location", "ssl.certificate.location", "ssl.key.location",
		"ssl.truststore.certificates", "ssl.keystore.certificate.chain", "ssl.keystore.key",
		"schema.registry.url", "basic.auth.user.info", "schema.registry.basic.auth.user.info",
	}
}

// otherKafkaProperties are client properties of Kafka's Java clients (and
// the Schema Registry client) that lossaudit does not need. They are never
// taken for typos of the properties it reads.
func otherKafkaProperties() []string {
	return []string{
		"ssl.truststore.type", "ssl.truststore.password", "ssl.keystore.type", "ssl.keystore.password", "ssl.key.password",
		"ssl.endpoint.identification.algorithm", "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites", "ssl.provider",
		"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.secure.random.implementation", "ssl.engine.factory.class",
		"sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.login.class", "sasl.login.callback.handler.class",
		"sasl.client.callback.handler.class", "sasl.oauthbearer.token.endpoint.url", "sasl.login.refresh.buffer.seconds",
		"client.id", "client.dns.lookup", "request.timeout.ms", "retries", "retry.backoff.ms", "metadata.max.age.ms",
		"connections.max.idle.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms", "default.api.timeout.ms",
		"security.providers", "group.id", "isolation.level", "auto.offset.reset", "enable.auto.commit",
		"key.deserializer", "value.deserializer", "key.serializer", "value.serializer", "acks",
		"basic.auth.credentials.source", "schema.registry.basic.auth.credentials.source",
	}
}

// checkPropertyNames returns an *Error for the first property (by line)
// that lossaudit does not read but that is within a typo of one it does:
// `bootstrap.server=` would otherwise be ignored and the default broker
// tried.
func checkPropertyNames(path string, props map[string]string, lines map[string]int) error {
	read, other := readProperties(), otherKafkaProperties()
	names := sortedKeys(props)
	sort.SliceStable(names, func(i, j int) bool { return lines[names[i]] < lines[names[j]] })
	for _, name := range names {
		if contains(read, name) || contains(other, name) {
			continue
		}
		if near := nearest(name, read); near != "" {
			return &Error{File: path, Line: lines[name], Key: name,
				Msg: fmt.Sprintf("not a property lossaudit reads (did you mean %s?)", near)}
		}
	}
	return nil
}

// applyClientProperties merges a Java-style client.properties file into
// section sec of c (sectionKafka or sectionSinkKafka; the Schema Registry
// properties are taken for the kafka section only: they describe the
// source's schemas). Keys in explicit were set by the YAML file, the
// environment or a flag and win over the properties file. Problems with
// the file are *Error values naming the file, line and property; the
// values it supplies are located there too (c.prov).
func applyClientProperties(c *Config, sec, path string, explicit map[string]bool) error {
	k := c.section(sec)
	key := c.keyOf(k.ClientProperties)
	named := key
	if sec == sectionKafka {
		named += " (--command-config)"
	}
	if err := checkReadable(key, path); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return &Error{File: path, Msg: "is not a text file of key=value lines; " + named + " names a Java-style client.properties file"}
	}
	props, lines, err := parsePropertiesFile(path, string(data))
	if err != nil {
		return err
	}
	if err := checkPropertyNames(path, props, lines); err != nil {
		return err
	}
	at := func(prop, format string, args ...any) error {
		return &Error{File: path, Line: lines[prop], Key: prop, Msg: fmt.Sprintf(format, args...)}
	}
	// in moves an *Error about a file named by prop to prop's line.
	in := func(prop string, err error) error {
		var e *Error
		if errors.As(err, &e) {
			e.File, e.Line, e.Key = path, lines[prop], prop
		}
		return err
	}
	// from records that the value at dst came from prop.
	from := func(dst any, prop string) {
		if c.prov != nil {
			c.prov.keys[c.keyOf(dst)] = source{file: path, line: lines[prop], prop: prop}
		}
	}
	given := func(dst any) bool { return explicit[c.keyOf(dst)] }
	set := func(prop string, dst *string, v string) {
		if !given(dst) && v != "" {
			*dst = v
			from(dst, prop)
		}
	}

	bs, hasBootstrap := props["bootstrap.servers"]
	switch {
	case given(k.Brokers):
	case !hasBootstrap:
		return &Error{File: path, Msg: "sets no bootstrap.servers, and " + c.keyOf(k.Brokers) + " is not set either: add bootstrap.servers=host:port to it, or set " + c.keyOf(k.Brokers)}
	default:
		var brokers []string
		for _, b := range splitList(bs) {
			if i := strings.Index(b, "://"); i >= 0 {
				b = b[i+3:] // LISTENER://host:port
			}
			if err := checkAddress(b); err != nil {
				return at("bootstrap.servers", "%q is not a host:port address: %s", b, err)
			}
			brokers = append(brokers, b)
		}
		if len(brokers) == 0 {
			return at("bootstrap.servers", "no broker address given")
		}
		*k.Brokers = brokers
		from(k.Brokers, "bootstrap.servers")
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
		return at("security.protocol", "%q is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL", props["security.protocol"])
	}
	if useTLS && !given(&k.TLS.Enabled) {
		k.TLS.Enabled = true
		from(&k.TLS.Enabled, "security.protocol")
	}

	if useSASL {
		mech := strings.ToUpper(strings.TrimSpace(props["sasl.mechanism"]))
		switch mech {
		case "":
			if !given(&k.SASL.Mechanism) {
				return at("sasl.mechanism", "is not set, so Kafka clients would use GSSAPI (Kerberos), which lossaudit does not support; set PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
			}
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		default:
			return at("sasl.mechanism", "%q is not one of %s, %s, %s", props["sasl.mechanism"],
				MechanismPlain, MechanismScramSHA256, MechanismScramSHA512)
		}
		set("sasl.mechanism", &k.SASL.Mechanism, mech)
		if jaas, ok := props["sasl.jaas.config"]; ok {
			login, err := parseJAAS(jaas)
			if err != nil {
				return at("sasl.jaas.config", "%v", err)
			}
			effective := strings.ToUpper(k.SASL.Mechanism)
			switch {
			case strings.HasSuffix(login.Module, "PlainLoginModule"):
				if effective != MechanismPlain {
					return at("sasl.jaas.config", "uses %s but the SASL mechanism is %s", login.Module, effective)
				}
			case strings.HasSuffix(login.Module, "ScramLoginModule"):
				if !strings.HasPrefix(effective, "SCRAM-") {
					return at("sasl.jaas.config", "uses %s but the SASL mechanism is %s", login.Module, effective)
				}
			default:
				return at("sasl.jaas.config", "login module %s is not supported; use PlainLoginModule or ScramLoginModule", login.Module)
			}
			if login.Options["username"] == "" && !given(&k.SASL.Username) {
				return at("sasl.jaas.config", "has no username option")
			}
			set("sasl.jaas.config", &k.SASL.Username, login.Options["username"])
			set("sasl.jaas.config", &k.SASL.Password, login.Options["password"])
		}
	}

	if useTLS {
		for _, inline := range []string{"ssl.truststore.certificates", "ssl.keystore.certificate.chain", "ssl.keystore.key"} {
			if props[inline] != "" {
				return at(inline, "inline PEM values are not supported; put the PEM in a file and name it in ssl.truststore.location / ssl.keystore.location")
			}
		}
		// Key stores must be PEM; the file's content decides, whatever
		// ssl.*store.type says (checkPEM explains how to convert JKS/PKCS12).
		// ssl.endpoint.identification.algorithm is not mapped: host names are
		// verified unless kafka.tls.insecure_skip_verify is set.
		stores := []struct {
			prop string
			dst  *string
		}{
			{"ssl.truststore.location", &k.TLS.CAFile},
			{"ssl.keystore.location", &k.TLS.CertFile},
			{"ssl.ca.location", &k.TLS.CAFile},
			{"ssl.certificate.location", &k.TLS.CertFile},
			{"ssl.key.location", &k.TLS.KeyFile},
		}
		for _, s := range stores {
			loc := strings.TrimSpace(props[s.prop])
			if loc == "" || given(s.dst) {
				continue
			}
			check := checkPEM
			if s.prop == "ssl.keystore.location" || s.prop == "ssl.key.location" {
				check = checkKeyPEM // a PEM key store holds the private key too
			}
			if err := check(c.keyOf(s.dst), loc); err != nil {
				return in(s.prop, err)
			}
			*s.dst = loc
			// A PEM key store holds the certificate chain and the private key.
			if s.prop == "ssl.keystore.location" && !given(&k.TLS.KeyFile) && props["ssl.key.location"] == "" {
				k.TLS.KeyFile = loc
				from(&k.TLS.KeyFile, s.prop)
			}
			from(s.dst, s.prop)
		}
	}

	if sec != sectionKafka {
		return nil
	}
	if u := strings.TrimSpace(props["schema.registry.url"]); u != "" {
		set("schema.registry.url", &c.Schema.RegistryURL, splitList(u)[0])
	}
	infoProp := "basic.auth.user.info"
	if props[infoProp] == "" {
		infoProp = "schema.registry.basic.auth.user.info"
	}
	if info := props[infoProp]; info != "" {
		user, pass, ok := strings.Cut(info, ":")
		if !ok {
			return at(infoProp, "must be user:password")
		}
		set(infoProp, &c.Schema.RegistryUsername, user)
		set(infoProp, &c.Schema.RegistryPassword, pass)
	}
	return nil
}

// The sections holding a cluster's connection settings, and compare's.
const (
	sectionKafka     = "kafka"
	sectionSinkKafka = "sink_kafka"
	sectionCompare   = "compare"
)

// conn points at the connection settings of one section.
type conn struct {
	Brokers          *[]string
	ClientProperties *string
	TLS              *TLS
	SASL             *SASL
}

// section returns the connection settings of section sec.
func (c *Config) section(sec string) conn {
	if sec == sectionSinkKafka {
		return conn{&c.SinkKafka.Brokers, &c.SinkKafka.ClientProperties, &c.SinkKafka.TLS, &c.SinkKafka.SASL}
	}
	return conn{&c.Kafka.Brokers, &c.Kafka.ClientProperties, &c.Kafka.TLS, &c.Kafka.SASL}
}
