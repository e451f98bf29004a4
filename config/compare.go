package config

import (
	"fmt"
	"strings"
	"time"
)

// Compare configures lossaudit compare: the pairs of source and sink
// topics, how records are identified, what makes a source record due, and
// an optional producer ledger.
type Compare struct {
	Pairs []Pair
	// Match is record, key, field:<avro path> or header:<name> (see
	// MatchRecord etc.).
	Match string
	// Group, when set, is the consumer group whose committed offsets on
	// the sources say which records have been processed (are due).
	Group string
	// Grace: without a group, source records older than the snapshot time
	// minus Grace are due.
	Grace time.Duration
	// Ledger is the path of a producer ledger, "" for none.
	Ledger string
	// ReportUnexpected also reports sink records with no source record.
	ReportUnexpected bool
}

// Pair is one compared source topic and its sink topic.
type Pair struct {
	Name, Source, Sink string
}

// The match rules of compare.match (MatchField and MatchHeader are
// prefixes followed by the path or name).
const (
	MatchRecord = "record"
	MatchKey    = "key"
	MatchField  = "field:"
	MatchHeader = "header:"
)

// DefaultGrace is compare.grace's default.
const DefaultGrace = 5 * time.Minute

// readCompare reads the sink_kafka and compare sections into c. Any
// sink_kafka key given (in the file, the environment or a flag) makes the
// sink another cluster.
func readCompare(r *reader, c *Config) {
	c.SinkKafka = r.connection(sectionSinkKafka)
	for k := range r.prov.keys {
		if strings.HasPrefix(k, sectionSinkKafka+".") {
			c.HasSinkKafka = true
		}
	}
	cp := &c.Compare
	for _, e := range r.entries("compare.pairs", "a list of pairs (- {name: ..., source: ..., sink: ...})", "a pair", pairKeyNames()) {
		p := Pair{Name: e["name"], Source: e["source"], Sink: e["sink"]}
		if strings.TrimSpace(p.Name) == "" {
			p.Name = p.Source
		}
		cp.Pairs = append(cp.Pairs, p)
	}
	cp.Match = strings.TrimSpace(r.str("compare.match"))
	cp.Group = r.str("compare.group")
	cp.Grace = r.duration("compare.grace")
	cp.Ledger = r.str("compare.ledger")
	cp.ReportUnexpected = r.bool("compare.report_unexpected")
}

// Sink returns the connection settings of the sink cluster: sink_kafka's
// brokers, client properties, TLS and SASL with kafka's tuning (fetch
// sizes, concurrency, timeouts), or kafka's when sink_kafka is not
// configured.
func (c *Config) Sink() Kafka {
	s := c.Kafka
	if c.HasSinkKafka {
		k := c.SinkKafka
		s.Brokers, s.ClientProperties, s.TLS, s.SASL = k.Brokers, k.ClientProperties, k.TLS, k.SASL
	}
	return s
}

// ParseMatch splits compare.match into its rule (MatchRecord, MatchKey,
// MatchField or MatchHeader) and the field path or header name.
func ParseMatch(m string) (rule, arg string, err error) {
	switch {
	case m == MatchRecord || m == MatchKey:
		return m, "", nil
	case strings.HasPrefix(m, MatchField):
		if arg = strings.TrimSpace(strings.TrimPrefix(m, MatchField)); arg == "" {
			return "", "", fmt.Errorf("%q names no field path (write field:customer.id)", m)
		}
		return MatchField, arg, nil
	case strings.HasPrefix(m, MatchHeader):
		if arg = strings.TrimPrefix(m, MatchHeader); arg == "" {
			return "", "", fmt.Errorf("%q names no header (write header:message-id)", m)
		}
		return MatchHeader, arg, nil
	}
	return "", "", fmt.Errorf("%q is not one of record, key, field:<avro path>, header:<name>", m)
}

// ValidateCompare checks the sink_kafka and compare sections, which only
// lossaudit compare needs, and returns the first problem as an *Error,
// located at the value's source.
func (c *Config) ValidateCompare() error {
	return c.Locate(c.validateCompare())
}

func (c *Config) validateCompare() error {
	cp := c.Compare
	if len(cp.Pairs) == 0 && cp.Ledger == "" {
		if c.prov != nil && c.prov.file == "" {
			return &Error{Msg: "no configuration file was given (pass one with -c compare.yaml); compare.pairs is not set"}
		}
		return errorf("compare.pairs", "must list at least one {name, source, sink} pair (or set compare.ledger to check a ledger alone)")
	}
	seen := map[string]int{}
	for i, p := range cp.Pairs {
		at := fmt.Sprintf("compare.pairs[%d]", i)
		if strings.TrimSpace(p.Source) == "" {
			return errorf(at+".source", "must name the source topic")
		}
		if strings.TrimSpace(p.Sink) == "" {
			return errorf(at+".sink", "must name the sink topic")
		}
		if p.Source == p.Sink && !c.HasSinkKafka {
			return errorf(at+".sink", "%q is the source topic on the same cluster; name the copy's topic (or set sink_kafka for another cluster)", p.Sink)
		}
		if j, dup := seen[p.Name]; dup {
			return errorf(at+".name", "%q is already the name of compare.pairs[%d]", p.Name, j)
		}
		seen[p.Name] = i
	}
	if _, _, err := ParseMatch(cp.Match); err != nil {
		return errorf("compare.match", "%v", err)
	}
	if cp.Grace < 0 {
		return errorf("compare.grace", "must not be negative, is %s", cp.Grace)
	}
	if cp.Ledger != "" {
		if err := checkReadable("compare.ledger", cp.Ledger); err != nil {
			return err
		}
	}
	if !c.Window.From.IsZero() || !c.Window.To.IsZero() {
		key := "window.from"
		if c.Window.From.IsZero() {
			key = "window.to"
		}
		return errorf(key, "compare reads the whole topics and takes no window; remove window.from and window.to")
	}
	if c.HasSinkKafka {
		if len(c.SinkKafka.Brokers) == 0 {
			return errorf("sink_kafka.brokers", "no broker address given (sink_kafka is set, so the sink is another cluster)")
		}
		if err := validateConnection(sectionSinkKafka, c.SinkKafka); err != nil {
			return err
		}
	}
	return nil
}

// redactedConnection adds the connection keys of section sec (kafka or
// sink_kafka) to Redacted, with the password masked.
func redactedConnection(line func(key string, v any), sec string, k Kafka) {
	line(sec+".brokers", strings.Join(k.Brokers, ","))
	line(sec+".client_properties", k.ClientProperties)
	line(sec+".tls.enabled", k.TLS.Enabled)
	line(sec+".tls.ca_file", k.TLS.CAFile)
	line(sec+".tls.cert_file", k.TLS.CertFile)
	line(sec+".tls.key_file", k.TLS.KeyFile)
	line(sec+".tls.insecure_skip_verify", k.TLS.InsecureSkipVerify)
	line(sec+".sasl.mechanism", k.SASL.Mechanism)
	line(sec+".sasl.username", k.SASL.Username)
	line(sec+".sasl.password", mask(k.SASL.Password))
}

// redactedCompare adds the compare keys to Redacted.
func (c *Config) redactedCompare(line func(key string, v any)) {
	cp := c.Compare
	for i, p := range cp.Pairs {
		line(fmt.Sprintf("compare.pairs[%d]", i), fmt.Sprintf("{name: %s, source: %s, sink: %s}", p.Name, p.Source, p.Sink))
	}
	line("compare.match", cp.Match)
	line("compare.group", cp.Group)
	line("compare.grace", cp.Grace)
	line("compare.ledger", cp.Ledger)
	line("compare.report_unexpected", cp.ReportUnexpected)
}
