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
	Pairs []Pair `mapstructure:"pairs" list:"a list of pairs (- {name: ..., source: ..., sink: ...})" entry:"a pair"`
	// Match is record, key, field:<avro path> or header:<name> (see
	// MatchRecord etc.).
	Match string `mapstructure:"match" default:"record"`
	// Group, when set, is the consumer group whose committed offsets on
	// the sources say which records have been processed (are due).
	Group string `mapstructure:"group"`
	// Grace: without a group, source records older than the snapshot time
	// minus Grace are due.
	Grace time.Duration `mapstructure:"grace" default:"5m" check:"nonnegative"`
	// Ledger is the path of a producer ledger, "" for none.
	Ledger string `mapstructure:"ledger" flag:"ledger" usage:"producer ledger to check against its topic"`
	// ReportUnexpected also reports sink records with no source record.
	ReportUnexpected bool `mapstructure:"report_unexpected"`
}

// Pair is one compared source topic and its sink topic.
type Pair struct {
	Name   string `mapstructure:"name"`
	Source string `mapstructure:"source"`
	Sink   string `mapstructure:"sink"`
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
	cp := &c.Compare
	if len(cp.Pairs) == 0 && cp.Ledger == "" {
		if c.prov != nil && c.prov.file == "" {
			return &Error{Msg: fmt.Sprintf("no configuration file was given (pass one with -c compare.yaml); %s is not set", c.keyOf(&cp.Pairs))}
		}
		return errorf(c.keyOf(&cp.Pairs), "must list at least one {name, source, sink} pair (or set %s to check a ledger alone)", c.keyOf(&cp.Ledger))
	}
	seen := map[string]int{}
	for i := range cp.Pairs {
		p := &cp.Pairs[i]
		if strings.TrimSpace(p.Source) == "" {
			return errorf(c.keyOf(&p.Source), "must name the source topic")
		}
		if strings.TrimSpace(p.Sink) == "" {
			return errorf(c.keyOf(&p.Sink), "must name the sink topic")
		}
		if p.Source == p.Sink && !c.HasSinkKafka {
			return errorf(c.keyOf(&p.Sink), "%q is the source topic on the same cluster; name the copy's topic (or set %s for another cluster)", p.Sink, sectionSinkKafka)
		}
		if j, dup := seen[p.Name]; dup {
			return errorf(c.keyOf(&p.Name), "%q is already the name of %s", p.Name, c.keyOf(&cp.Pairs[j]))
		}
		seen[p.Name] = i
	}
	if _, _, err := ParseMatch(cp.Match); err != nil {
		return errorf(c.keyOf(&cp.Match), "%v", err)
	}
	if err := c.checkBounds(func(key string) bool { return strings.HasPrefix(key, sectionCompare+".") }); err != nil {
		return err
	}
	if cp.Ledger != "" {
		if err := checkReadable(c.keyOf(&cp.Ledger), cp.Ledger); err != nil {
			return err
		}
	}
	if !c.Window.From.IsZero() || !c.Window.To.IsZero() {
		from, to := c.keyOf(&c.Window.From), c.keyOf(&c.Window.To)
		key := from
		if c.Window.From.IsZero() {
			key = to
		}
		return errorf(key, "compare reads the whole topics and takes no window; remove %s and %s", from, to)
	}
	if c.HasSinkKafka {
		if len(c.SinkKafka.Brokers) == 0 {
			return errorf(c.keyOf(&c.SinkKafka.Brokers), "no broker address given (%s is set, so the sink is another cluster)", sectionSinkKafka)
		}
		if err := c.validateConnection(sectionSinkKafka); err != nil {
			return err
		}
	}
	return nil
}
