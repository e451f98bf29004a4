package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/audit/streams/predicate"
)

// Validate checks everything but the pipeline section and returns the first
// problem as an *Error, located at the value's source. Load calls it.
func (c *Config) Validate() error {
	return c.Locate(c.validate())
}

func (c *Config) validate() error {
	if err := c.validateConnection(sectionKafka); err != nil {
		return err
	}
	if err := c.checkBounds(func(key string) bool { return !strings.HasPrefix(key, sectionCompare+".") }); err != nil {
		return err
	}

	s := &c.Schema
	if s.RegistryURL != "" {
		u, err := url.Parse(s.RegistryURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errorf(c.keyOf(&s.RegistryURL), "%q is not an http:// or https:// URL", redactURL(s.RegistryURL))
		}
	}
	if s.AvscDir != "" {
		st, err := os.Stat(s.AvscDir)
		if err != nil {
			return errorf(c.keyOf(&s.AvscDir), "%s: %s", s.AvscDir, describeFileErr(err))
		}
		if !st.IsDir() {
			return errorf(c.keyOf(&s.AvscDir), "%s is not a directory", s.AvscDir)
		}
	}

	if !c.Window.From.IsZero() && !c.Window.To.IsZero() && !c.Window.From.Before(c.Window.To) {
		return errorf(c.keyOf(&c.Window.From), "%s is not before %s %s", c.Window.From.Format("2006-01-02T15:04:05.000Z07:00"),
			c.keyOf(&c.Window.To), c.Window.To.Format("2006-01-02T15:04:05.000Z07:00"))
	}
	if err := c.loadRedactKey(); err != nil {
		return err
	}
	return c.validateWatch(false)
}

// minRedactKey is the shortest secret report.redact_key_file may hold.
const minRedactKey = 16

// loadRedactKey checks report.redact_keys and report.redact_key_file and
// loads the secret into Report.RedactKey.
func (c *Config) loadRedactKey() error {
	r := &c.Report
	r.RedactKey = nil
	if !r.RedactKeys {
		return nil
	}
	fileKey := c.keyOf(&r.RedactKeyFile)
	if r.RedactKeyFile == "" {
		return errorf(c.keyOf(&r.RedactKeys), "needs %s: a file holding the secret of the keyed hash (at least %d bytes, e.g. from `head -c 32 /dev/urandom | base64`)", fileKey, minRedactKey)
	}
	if err := checkReadable(fileKey, r.RedactKeyFile); err != nil {
		return err
	}
	data, err := os.ReadFile(r.RedactKeyFile)
	if err != nil {
		return errorf(fileKey, "cannot read %s: %s", r.RedactKeyFile, describeFileErr(err))
	}
	data = []byte(strings.TrimRight(string(data), "\r\n"))
	if len(data) < minRedactKey {
		return errorf(fileKey, "%s holds %d bytes; the secret must have at least %d", r.RedactKeyFile, len(data), minRedactKey)
	}
	r.RedactKey = data
	return nil
}

// checkBounds checks the bound each key that keep accepts declares in its
// `check` tag (positive, atleast1, nonnegative, nonempty), in declaration
// order.
func (c *Config) checkBounds(keep func(key string) bool) error {
	cv := reflect.ValueOf(c).Elem()
	for _, s := range keySpecs() {
		if s.check == "" || !keep(s.key) {
			continue
		}
		v := cv.FieldByIndex(s.index)
		var n int64
		var shown any
		switch x := v.Interface().(type) {
		case time.Duration:
			n, shown = int64(x), x
		case int, int32:
			n, shown = v.Int(), x
		case string:
			if s.check == "nonempty" && strings.TrimSpace(x) == "" {
				return errorf(s.key, "must not be empty")
			}
			continue
		}
		switch {
		case s.check == "positive" && n <= 0:
			return errorf(s.key, "must be positive, is %v", shown)
		case s.check == "atleast1" && n < 1:
			return errorf(s.key, "must be at least 1, is %v", shown)
		case s.check == "nonnegative" && n < 0:
			return errorf(s.key, "must not be negative, is %v", shown)
		}
	}
	return nil
}

// ValidateWatch checks the watch section for `lossaudit watch`, which
// needs every key of it set.
func (c *Config) ValidateWatch() error { return c.Locate(c.validateWatch(true)) }

// validateWatch checks the watch keys that are set (all, with all).
func (c *Config) validateWatch(all bool) error {
	if c.Watch.Interval < 0 || (all && c.Watch.Interval == 0) {
		return errorf(c.keyOf(&c.Watch.Interval), "must be positive, is %s", c.Watch.Interval)
	}
	if _, _, err := net.SplitHostPort(c.Watch.Listen); err != nil && (all || c.Watch.Listen != "") {
		return errorf(c.keyOf(&c.Watch.Listen), "%q is not host:port (e.g. 127.0.0.1:9464)", c.Watch.Listen)
	}
	if c.Watch.LogFormat != LogText && c.Watch.LogFormat != LogJSON && (all || c.Watch.LogFormat != "") {
		return errorf(c.keyOf(&c.Watch.LogFormat), "%q is not %s or %s", c.Watch.LogFormat, LogText, LogJSON)
	}
	if c.Watch.WebConfigFile != "" {
		if err := checkReadable(c.keyOf(&c.Watch.WebConfigFile), c.Watch.WebConfigFile); err != nil {
			return err
		}
	}
	return nil
}

// ValidatePipeline checks the pipeline section, which only the commands that
// audit a pipeline (audit, topology) need. Without a configuration file,
// a missing pipeline says so first.
func (c *Config) ValidatePipeline() error {
	return c.Locate(c.validatePipeline())
}

// NoFileHint says how to name the configuration file.
const NoFileHint = "pass one with -c audit.yaml"

func (c *Config) validatePipeline() error {
	p := &c.Pipeline
	missing := func(key, msg string) error {
		if c.prov != nil && c.prov.file == "" {
			return &Error{Msg: fmt.Sprintf("no configuration file was given (%s); %s is not set", NoFileHint, key)}
		}
		return errorf(key, "%s", msg)
	}
	if strings.TrimSpace(p.ApplicationID) == "" {
		return missing(c.keyOf(&p.ApplicationID), "must be set to the Kafka Streams application.id")
	}
	if strings.TrimSpace(p.Output) == "" && p.TopologyFile == "" {
		return missing(c.keyOf(&p.Output), "must name the output topic (or set pipeline.topology_file, whose sink names it)")
	}
	if len(p.Inputs) == 0 {
		return missing(c.keyOf(&p.Inputs), "must list at least one input")
	}
	if p.TopologyFile != "" {
		if err := checkReadable(c.keyOf(&p.TopologyFile), p.TopologyFile); err != nil {
			return err
		}
	}
	seen := map[string]int{}
	for i := range p.Inputs {
		in := &p.Inputs[i]
		if strings.TrimSpace(in.Name) == "" {
			return errorf(c.keyOf(&in.Name), "must not be empty")
		}
		if j, dup := seen[in.Name]; dup {
			return errorf(c.keyOf(&in.Name), "%q is already the name of %s", in.Name, c.keyOf(&p.Inputs[j]))
		}
		seen[in.Name] = i
		if strings.TrimSpace(in.Topic) == "" {
			return errorf(c.keyOf(&in.Topic), "must not be empty")
		}
		switch in.KeyFormat {
		case KeyFormatString, KeyFormatAvro, KeyFormatBytes:
		default:
			return errorf(c.keyOf(&in.KeyFormat), "%q is not one of %s, %s, %s", in.KeyFormat,
				KeyFormatString, KeyFormatAvro, KeyFormatBytes)
		}
	}
	// The kinds and names are checked against the topology file by the
	// pipeline model, which knows them.
	for i := range p.Nodes {
		n := &p.Nodes[i]
		if strings.TrimSpace(n.Name) == "" {
			return errorf(c.keyOf(&n.Name), "must name a node of pipeline.topology_file")
		}
		if strings.TrimSpace(n.Kind) == "" {
			return errorf(c.keyOf(&n.Kind), "must be a node kind (reduce, suppress, windowed, ...)")
		}
		isFilter := strings.ToLower(strings.TrimSpace(n.Kind)) == "filter"
		switch {
		case n.Predicate != "" && !isFilter:
			return errorf(c.keyOf(&n.Predicate), "is a filter's predicate, but node %s is declared %s", n.Name, n.Kind)
		case n.Negate && n.Predicate == "":
			return errorf(c.keyOf(&n.Negate), "declares a filterNot, which needs its predicate")
		case n.Predicate != "":
			if _, err := predicate.Compile(n.Predicate, n.Negate); err != nil {
				return errorf(c.keyOf(&n.Predicate), "%q does not compile as a CEL expression over value and key: %v", n.Predicate, err)
			}
		}
		isGlobalLeft := strings.ToLower(strings.TrimSpace(n.Kind)) == "global-left-join"
		switch nk := strings.ToLower(strings.TrimSpace(n.NullMappedKey)); {
		case nk != "" && !isGlobalLeft:
			return errorf(c.keyOf(&n.NullMappedKey), "is a KStream-GlobalKTable left join's, but node %s is declared %s", n.Name, n.Kind)
		case isGlobalLeft && nk == "":
			return errorf(c.keyOf(&n.NullMappedKey), "is required for a KStream-GlobalKTable left join (%s): %s (Kafka Streams 4.1 and later join a record whose key mapper returns null with a null table value) or %s (the key mapper returns a key for every record with a value); Kafka Streams before 4.1 drops such records, which cannot be told from the topics", n.Name, NullMappedKeyJoined, NullMappedKeyNever)
		case isGlobalLeft && nk != NullMappedKeyJoined && nk != NullMappedKeyNever:
			return errorf(c.keyOf(&n.NullMappedKey), "%q is not %s or %s (a key mapper that may return null under Kafka Streams before 4.1 drops records the audit cannot tell: not audited)", n.NullMappedKey, NullMappedKeyJoined, NullMappedKeyNever)
		}
		if err := c.validateBranches(n); err != nil {
			return err
		}
	}
	return nil
}

// validateBranches checks the branches of a pipeline.nodes entry: only a
// branch node has them; each names its child and has a predicate that
// compiles, except the default branch, which has none and comes last.
// The names are checked against the topology file by the pipeline model.
func (c *Config) validateBranches(n *Node) error {
	isBranch := strings.ToLower(strings.TrimSpace(n.Kind)) == "branch"
	if len(n.Branches) > 0 && !isBranch {
		return errorf(c.keyOf(&n.Branches), "are a branch node's branches, but node %s is declared %s", n.Name, n.Kind)
	}
	seen := map[string]int{}
	for j := range n.Branches {
		b := &n.Branches[j]
		name := strings.TrimSpace(b.Name)
		switch {
		case name == "":
			return errorf(c.keyOf(&b.Name), "must name the branch's child node of %s as pipeline.topology_file prints it", n.Name)
		case seen[name] > 0:
			return errorf(c.keyOf(&b.Name), "%s is already branch %d of %s", name, seen[name]-1, n.Name)
		case b.Default && b.Predicate != "":
			return errorf(c.keyOf(&b.Predicate), "the default branch (%s) takes the records no predicate accepts: it has no predicate of its own", name)
		case b.Default && j != len(n.Branches)-1:
			return errorf(c.keyOf(&b.Default), "the default branch (%s) must come last: defaultBranch() ends split()", name)
		case !b.Default && strings.TrimSpace(b.Predicate) == "":
			return errorf(c.keyOf(&b.Predicate), "branch %s of %s needs its predicate (a CEL expression over value and key), or default: true for the default branch", name, n.Name)
		case !b.Default:
			if _, err := predicate.Compile(b.Predicate, false); err != nil {
				return errorf(c.keyOf(&b.Predicate), "%q does not compile as a CEL expression over value and key: %v", b.Predicate, err)
			}
		}
		seen[name] = j + 1
	}
	return nil
}

// checkAddress accepts host:port with a non-empty host and a port in 1..65535.
func checkAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if ae, ok := err.(*net.AddrError); ok {
			return fmt.Errorf("%s", ae.Err)
		}
		return err
	}
	if host == "" {
		return fmt.Errorf("empty host")
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("invalid host %q", host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number in 1..65535", port)
	}
	return nil
}

// checkReadable returns an *Error naming key and path unless path is a
// readable regular file.
func checkReadable(key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	if st.IsDir() {
		return errorf(key, "%s is a directory, not a file", path)
	}
	return nil
}

// validateConnection checks the connection settings of section sec
// (kafka or sink_kafka): brokers, TLS files and SASL.
func (c *Config) validateConnection(sec string) error {
	k := c.section(sec)
	brokers := c.keyOf(k.Brokers)
	if len(*k.Brokers) == 0 {
		return errorf(brokers, "no broker address given")
	}
	for i, b := range *k.Brokers {
		if err := checkAddress(b); err != nil {
			return errorf(fmt.Sprintf("%s[%d]", brokers, i), "%q is not a host:port address: %s", b, err)
		}
	}
	ca, cert, key := c.keyOf(&k.TLS.CAFile), c.keyOf(&k.TLS.CertFile), c.keyOf(&k.TLS.KeyFile)
	if err := checkPEM(ca, k.TLS.CAFile); err != nil {
		return err
	}
	if err := checkPEM(cert, k.TLS.CertFile); err != nil {
		return err
	}
	if err := checkKeyPEM(key, k.TLS.KeyFile); err != nil {
		return err
	}
	if (k.TLS.CertFile == "") != (k.TLS.KeyFile == "") {
		if k.TLS.CertFile == "" {
			return errorf(cert, "must be set when %s is: a client certificate needs both", key)
		}
		return errorf(key, "must be set when %s is: a client certificate needs both", cert)
	}
	switch k.SASL.Mechanism {
	case "":
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		if k.SASL.Username == "" {
			return errorf(c.keyOf(&k.SASL.Username), "must be set when %s is %s", c.keyOf(&k.SASL.Mechanism), k.SASL.Mechanism)
		}
	default:
		return errorf(c.keyOf(&k.SASL.Mechanism), "%q is not one of %s, %s, %s", k.SASL.Mechanism,
			MechanismPlain, MechanismScramSHA256, MechanismScramSHA512)
	}
	return nil
}
