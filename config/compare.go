package config

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/viper"
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

// compareDefaults returns the keys of sink_kafka and compare with their
// defaults; Defaults includes them.
func compareDefaults() map[string]any {
	return map[string]any{
		"sink_kafka.brokers":                  []string{},
		"sink_kafka.client_properties":        "",
		"sink_kafka.tls.enabled":              false,
		"sink_kafka.tls.ca_file":              "",
		"sink_kafka.tls.cert_file":            "",
		"sink_kafka.tls.key_file":             "",
		"sink_kafka.tls.insecure_skip_verify": false,
		"sink_kafka.sasl.mechanism":           "",
		"sink_kafka.sasl.username":            "",
		"sink_kafka.sasl.password":            "",
		"compare.pairs":                       []any{},
		"compare.match":                       MatchRecord,
		"compare.group":                       "",
		"compare.grace":                       DefaultGrace.String(),
		"compare.ledger":                      "",
		"compare.report_unexpected":           false,
	}
}

// pairKeyList lists the keys of one compare.pairs entry, for error messages.
const pairKeyList = "name, source, sink"

// loadCompare fills c.SinkKafka and c.Compare from g; explicit says which
// keys were set by the file, the environment or a flag.
func loadCompare(g *getter, c *Config, explicit map[string]bool) error {
	s := &c.SinkKafka
	s.Brokers = g.list("sink_kafka.brokers")
	s.ClientProperties = g.str("sink_kafka.client_properties")
	s.TLS.Enabled = g.bool("sink_kafka.tls.enabled")
	s.TLS.CAFile = g.str("sink_kafka.tls.ca_file")
	s.TLS.CertFile = g.str("sink_kafka.tls.cert_file")
	s.TLS.KeyFile = g.str("sink_kafka.tls.key_file")
	s.TLS.InsecureSkipVerify = g.bool("sink_kafka.tls.insecure_skip_verify")
	s.SASL.Mechanism = strings.ToUpper(strings.TrimSpace(g.str("sink_kafka.sasl.mechanism")))
	s.SASL.Username = g.str("sink_kafka.sasl.username")
	s.SASL.Password = g.str("sink_kafka.sasl.password")
	for k := range explicit {
		if strings.HasPrefix(k, "sink_kafka.") {
			c.HasSinkKafka = true
		}
	}
	cp := &c.Compare
	cp.Pairs = g.pairs("compare.pairs")
	cp.Match = strings.TrimSpace(g.str("compare.match"))
	cp.Group = g.str("compare.group")
	cp.Grace = g.duration("compare.grace")
	cp.Ledger = g.str("compare.ledger")
	cp.ReportUnexpected = g.bool("compare.report_unexpected")
	if g.err != nil {
		return g.err
	}
	if c.HasSinkKafka && s.ClientProperties != "" {
		return applySinkClientProperties(c, explicit)
	}
	return nil
}

// sinkKey renames a kafka.* key (in an error from the code shared with the
// kafka section) to its sink_kafka.* twin.
func sinkKey(err error) error {
	if e, ok := err.(*Error); ok && strings.HasPrefix(e.Key, "kafka.") {
		return &Error{Key: "sink_" + e.Key, Msg: e.Msg}
	}
	return err
}

// applySinkClientProperties merges sink_kafka.client_properties into the
// sink's settings the way kafka.client_properties is merged into kafka's.
func applySinkClientProperties(c *Config, explicit map[string]bool) error {
	tmp := &Config{Kafka: c.SinkKafka}
	ex := map[string]bool{}
	for k := range explicit {
		if rest, ok := strings.CutPrefix(k, "sink_kafka."); ok {
			ex["kafka."+rest] = true
		}
	}
	// The schema settings a client.properties may carry belong to the
	// source side; they are not taken from the sink's file.
	for k := range Defaults() {
		if strings.HasPrefix(k, "schema.") {
			ex[k] = true
		}
	}
	if err := applyClientProperties(tmp, c.SinkKafka.ClientProperties, ex); err != nil {
		return sinkKey(err)
	}
	c.SinkKafka = tmp.Kafka
	return nil
}

// Sink returns the connection settings of the sink cluster: sink_kafka's
// with kafka's tuning (fetch sizes, concurrency, timeout), or kafka's when
// sink_kafka is not configured.
func (c *Config) Sink() Kafka {
	if !c.HasSinkKafka {
		return c.Kafka
	}
	s := c.SinkKafka
	s.FetchMaxBytes, s.PartitionMaxBytes = c.Kafka.FetchMaxBytes, c.Kafka.PartitionMaxBytes
	s.Concurrency, s.Timeout = c.Kafka.Concurrency, c.Kafka.Timeout
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
// lossaudit compare needs.
func (c *Config) ValidateCompare() error {
	cp := c.Compare
	if len(cp.Pairs) == 0 && cp.Ledger == "" {
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
		return errorf("window.from", "compare reads the whole topics and takes no window; remove window.from/window.to (--from/--to)")
	}
	if c.HasSinkKafka {
		if len(c.SinkKafka.Brokers) == 0 {
			return errorf("sink_kafka.brokers", "no broker address given (sink_kafka is set, so the sink is another cluster)")
		}
		t := *c
		t.Kafka = c.Sink()
		if err := t.Validate(); err != nil {
			return sinkKey(err)
		}
	}
	return nil
}

// pairs decodes compare.pairs: a YAML list of mappings, or, from the
// environment, the same list written as YAML/JSON flow text.
func (g *getter) pairs(key string) []Pair {
	raw := g.v.Get(key)
	if s, ok := raw.(string); ok {
		if strings.TrimSpace(s) == "" {
			return nil
		}
		tmp := viper.New()
		tmp.SetConfigType("yaml")
		if err := tmp.ReadConfig(strings.NewReader("pairs: " + s)); err != nil {
			g.fail(key, "cannot parse %s as a YAML list: %v", EnvName(key), err)
			return nil
		}
		raw = tmp.Get("pairs")
	}
	var list []any
	switch x := raw.(type) {
	case nil:
		return nil
	case []any:
		list = x
	case []map[string]any:
		for _, m := range x {
			list = append(list, m)
		}
	default:
		g.fail(key, "must be a list of {name, source, sink} pairs, not %T", raw)
		return nil
	}
	out := make([]Pair, 0, len(list))
	for i, e := range list {
		at := fmt.Sprintf("%s[%d]", key, i)
		m, ok := toStringMap(e)
		if !ok {
			g.fail(at, "must be a mapping with name, source and sink, not %T", e)
			return nil
		}
		var p Pair
		fields := map[string]*string{"name": &p.Name, "source": &p.Source, "sink": &p.Sink}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			dst, ok := fields[strings.ToLower(k)]
			if !ok {
				g.fail(at+"."+k, "unknown key (known: %s)", pairKeyList)
				return nil
			}
			switch val := m[k].(type) {
			case nil:
			case string:
				*dst = val
			case int, int64, float64, bool:
				*dst = fmt.Sprint(val)
			default:
				g.fail(at+"."+k, "must be a string, not %T", val)
				return nil
			}
		}
		if strings.TrimSpace(p.Name) == "" {
			p.Name = p.Source
		}
		out = append(out, p)
	}
	return out
}

// redactedCompare adds the sink_kafka and compare keys to Redacted, with
// the sink's password masked.
func (c *Config) redactedCompare(line func(key string, v any)) {
	s := c.SinkKafka
	line("sink_kafka.brokers", strings.Join(s.Brokers, ","))
	line("sink_kafka.client_properties", s.ClientProperties)
	line("sink_kafka.tls.enabled", s.TLS.Enabled)
	line("sink_kafka.tls.ca_file", s.TLS.CAFile)
	line("sink_kafka.tls.cert_file", s.TLS.CertFile)
	line("sink_kafka.tls.key_file", s.TLS.KeyFile)
	line("sink_kafka.tls.insecure_skip_verify", s.TLS.InsecureSkipVerify)
	line("sink_kafka.sasl.mechanism", s.SASL.Mechanism)
	line("sink_kafka.sasl.username", s.SASL.Username)
	line("sink_kafka.sasl.password", mask(s.SASL.Password))
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
