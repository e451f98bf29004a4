package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix is the prefix of the environment variables that override the
// file: key kafka.tls.ca_file is read from LOSSAUDIT_KAFKA_TLS_CA_FILE.
const EnvPrefix = "LOSSAUDIT"

// Key formats accepted for Input.KeyFormat.
const (
	KeyFormatString = "string"
	KeyFormatAvro   = "avro"
	KeyFormatBytes  = "bytes"
)

// SASL mechanisms accepted for SASL.Mechanism.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// LoadOptions says where Load takes the configuration from.
type LoadOptions struct {
	// File is the YAML file; "" means the file named by the ConfigFlag in
	// Flags, if any, else none (defaults, environment and flags only). A
	// named file that cannot be read is an error.
	File string
	// Flags, if not nil, holds the command-line flags registered with
	// AddFlags. Those set on the command line override their keys; any
	// other flag in the set is not looked at.
	Flags *pflag.FlagSet
	// Now is the time relative times (window.from: -2h) count back from;
	// nil means time.Now.
	Now func() time.Time
}

// EnvName returns the environment variable that overrides key.
func EnvName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Load reads the configuration from defaults, the YAML file, the
// environment and the flags (in increasing precedence), merges a
// client.properties file if one is named, and validates everything except
// the pipeline (see ValidatePipeline). Every problem is an *Error naming
// where the value was written.
func Load(opts LoadOptions) (*Config, error) {
	defs := keyDefs()
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	flags := flagValues(opts.Flags)
	file := opts.File
	if fv, ok := flags[ConfigFlag]; ok && file == "" {
		file = fv.text
	}
	prov := &provenance{file: file, keys: map[string]source{}}

	nodes := map[string]*yaml.Node{}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, &Error{File: file, Msg: "cannot read the configuration file: " + describeFileErr(err)}
		}
		if nodes, err = readYAML(file, data, defs); err != nil {
			return nil, err
		}
	}
	if err := checkEnv(os.Environ(), defs); err != nil {
		return nil, err
	}

	r := &reader{prov: prov, now: now(), vals: map[string]value{}}
	for _, d := range defs {
		env := EnvName(d.key)
		var v value
		if fv, ok := flags[d.key]; ok {
			v = value{text: fv.text, list: fv.list, isList: fv.isList}
			prov.keys[d.key] = source{flag: fv.name}
		} else if text, ok := os.LookupEnv(env); ok {
			v = value{text: text}
			prov.keys[d.key] = source{env: env}
		} else if n, ok := nodes[d.key]; ok {
			v = value{node: n}
			prov.keys[d.key] = source{file: file, line: n.Line}
		} else if list, ok := d.def.([]string); ok {
			v = value{list: list, isList: true}
		} else {
			v = value{text: fmt.Sprint(d.def)}
			if d.kind == kindInputs || d.kind == kindPairs {
				v.text = ""
			}
		}
		r.vals[d.key] = v
	}

	c := &Config{prov: prov}
	c.Kafka = r.connection(sectionKafka)
	c.Kafka.FetchMaxBytes = int32(r.int("kafka.fetch_max_bytes", math.MaxInt32))
	c.Kafka.PartitionMaxBytes = int32(r.int("kafka.partition_max_bytes", math.MaxInt32))
	c.Kafka.Concurrency = int(r.int("kafka.concurrency", math.MaxInt32))
	c.Kafka.Timeout = r.duration("kafka.timeout")
	c.Kafka.ConnectTimeout = r.duration("kafka.connect_timeout")
	c.Kafka.RetryTimeout = r.duration("kafka.retry_timeout")
	c.Schema.RegistryURL = r.str("schema.registry_url")
	c.Schema.RegistryUsername = r.str("schema.registry_username")
	c.Schema.RegistryPassword = r.str("schema.registry_password")
	c.Schema.SchemasTopic = r.str("schema.schemas_topic")
	c.Schema.AvscDir = r.str("schema.avsc_dir")
	c.Pipeline.ApplicationID = r.str("pipeline.application_id")
	c.Pipeline.TopologyFile = r.str("pipeline.topology_file")
	c.Pipeline.Output = r.str("pipeline.output")
	c.Pipeline.Inputs = r.inputs("pipeline.inputs")
	c.Window.From = r.time("window.from")
	c.Window.To = r.time("window.to")
	c.Store.Dir = r.str("store.dir")
	c.Report.CSV = r.str("report.csv")
	c.Report.JSON = r.str("report.json")
	c.Report.HTML = r.str("report.html")
	c.Report.MetricsFile = r.str("report.metrics_file")
	c.Audit.SettleTimeout = r.duration("audit.settle_timeout")
	c.Audit.UnprocessedAfter = r.duration("audit.unprocessed_after")
	readCompare(r, c)
	c.Watch.Interval = r.duration("watch.interval")
	c.Watch.Listen = r.str("watch.listen")
	c.Watch.LogFormat = strings.ToLower(strings.TrimSpace(r.str("watch.log_format")))
	if r.err != nil {
		return nil, r.err
	}

	explicit := map[string]bool{}
	for k := range prov.keys {
		explicit[k] = true
	}
	if c.Kafka.ClientProperties != "" {
		if err := applyClientProperties(c, sectionKafka, c.Kafka.ClientProperties, explicit); err != nil {
			return nil, c.Locate(err)
		}
	}
	if c.HasSinkKafka && c.SinkKafka.ClientProperties != "" {
		if err := applyClientProperties(c, sectionSinkKafka, c.SinkKafka.ClientProperties, explicit); err != nil {
			return nil, c.Locate(err)
		}
	}
	c.Kafka.SASL.Mechanism = strings.ToUpper(strings.TrimSpace(c.Kafka.SASL.Mechanism))
	c.SinkKafka.SASL.Mechanism = strings.ToUpper(strings.TrimSpace(c.SinkKafka.SASL.Mechanism))
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// connection reads the connection settings of section sec (kafka or
// sink_kafka): brokers, client_properties, tls.* and sasl.*.
func (r *reader) connection(sec string) Kafka {
	var k Kafka
	k.Brokers = r.list(sec + ".brokers")
	k.ClientProperties = r.str(sec + ".client_properties")
	k.TLS.Enabled = r.bool(sec + ".tls.enabled")
	k.TLS.CAFile = r.str(sec + ".tls.ca_file")
	k.TLS.CertFile = r.str(sec + ".tls.cert_file")
	k.TLS.KeyFile = r.str(sec + ".tls.key_file")
	k.TLS.InsecureSkipVerify = r.bool(sec + ".tls.insecure_skip_verify")
	k.SASL.Mechanism = r.str(sec + ".sasl.mechanism")
	k.SASL.Username = r.str(sec + ".sasl.username")
	k.SASL.Password = r.str(sec + ".sasl.password")
	return k
}

// value is the raw value of one key, from exactly one source.
type value struct {
	// node is the value in the YAML file.
	node *yaml.Node
	// text is the value of a variable, a flag or a default.
	text string
	// list is the value of a list flag or default (isList).
	list   []string
	isList bool
}

// reader converts raw values to typed fields, keeping the first error,
// located at the value's source.
type reader struct {
	prov *provenance
	now  time.Time
	vals map[string]value
	err  error
}

func (r *reader) fail(key, format string, args ...any) {
	if r.err == nil {
		e := errorf(key, format, args...)
		r.prov.locate(e)
		r.err = e
	}
}

// scalar returns the text of key's value; ok is false (and the error is
// recorded) when the YAML file holds a list or mapping there.
func (r *reader) scalar(key string) (text string, ok bool) {
	v := r.vals[key]
	if v.node == nil {
		return v.text, true
	}
	switch {
	case isNull(v.node):
		return "", true
	case v.node.Kind == yaml.ScalarNode:
		return v.node.Value, true
	}
	r.fail(key, "must be a single value, not %s", describeNode(v.node))
	return "", false
}

func (r *reader) str(key string) string {
	s, _ := r.scalar(key)
	return s
}

func (r *reader) bool(key string) bool {
	s, ok := r.scalar(key)
	if !ok || strings.TrimSpace(s) == "" {
		return false
	}
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		r.fail(key, "%s is not a boolean (true or false)", quoteValue(s))
	}
	return b
}

// decimal matches a number written in decimal, with a fraction or an
// exponent.
var decimal = regexp.MustCompile(`^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$`)

// int reads a whole number in [-max-1, max].
func (r *reader) int(key string, max int64) int64 {
	s, ok := r.scalar(key)
	if !ok {
		return 0
	}
	n, problem := parseWhole(strings.TrimSpace(s), max)
	if problem != "" {
		r.fail(key, "%s", problem)
	}
	return n
}

// parseWhole parses a whole number in [-max-1, max], or says in words why
// s is not one.
func parseWhole(s string, max int64) (int64, string) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil && n <= max && n >= -max-1 {
		return n, ""
	}
	tooLarge := fmt.Sprintf("%s is too large (at most %d)", s, max)
	tooSmall := fmt.Sprintf("%s is too small (at least %d)", s, -max-1)
	if err == nil || errors.Is(err, strconv.ErrRange) {
		if strings.HasPrefix(s, "-") {
			return 0, tooSmall
		}
		return 0, tooLarge
	}
	if decimal.MatchString(s) {
		f, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil || f != math.Trunc(f):
			return 0, s + " is not a whole number"
		case f > float64(max):
			return 0, tooLarge
		case f < float64(-max-1):
			return 0, tooSmall
		}
		return int64(f), ""
	}
	if s == "" {
		return 0, "is empty; write a whole number"
	}
	return 0, quoteValue(s) + " is not a whole number"
}

func (r *reader) duration(key string) time.Duration {
	s, ok := r.scalar(key)
	s = strings.TrimSpace(s)
	if !ok || s == "" || s == "0" {
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, perr := strconv.ParseFloat(s, 64); perr == nil {
			r.fail(key, "%s has no unit; write a duration like %q or \"2m\"", s, s+"s")
		} else {
			r.fail(key, "%s is not a duration like \"30s\" or \"2m\"", quoteValue(s))
		}
	}
	return d
}

func (r *reader) time(key string) time.Time {
	s, ok := r.scalar(key)
	if !ok {
		return time.Time{}
	}
	t, problem := parseTime(strings.TrimSpace(s), r.now)
	if problem != "" {
		r.fail(key, "%s", problem)
	}
	return t
}

// days matches a number of days, which Go durations do not have.
var days = regexp.MustCompile(`^-?(\d+)d$`)

// parseTime reads a window bound: "" (unbounded), RFC 3339, "now", or a Go
// duration, negative or unsigned, meaning that long before now.
func parseTime(s string, now time.Time) (time.Time, string) {
	if s == "" {
		return time.Time{}, ""
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, ""
	}
	if strings.EqualFold(s, "now") {
		return now, ""
	}
	if d, err := time.ParseDuration(strings.TrimPrefix(s, "-")); err == nil && !strings.HasPrefix(s, "+") {
		if d < 0 {
			return time.Time{}, fmt.Sprintf("%s is not a time: write a duration before now with one sign, like -2h", quoteValue(s))
		}
		return now.Add(-d), ""
	}
	if strings.HasPrefix(s, "+") {
		if _, err := time.ParseDuration(s[1:]); err == nil {
			return time.Time{}, fmt.Sprintf("%s is in the future: a duration means that long before now, like -2h or 2h", s)
		}
	}
	if m := days.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return time.Time{}, fmt.Sprintf("%s is not a time: durations have no days; write -%dh", s, 24*n)
	}
	return time.Time{}, fmt.Sprintf("%s is not a time: write %s", quoteValue(s), timeHelp)
}

// list accepts a YAML list or a comma-separated string (file or
// variable), or the values of a repeatable flag.
func (r *reader) list(key string) []string {
	v := r.vals[key]
	if v.isList {
		var out []string
		for _, s := range v.list {
			out = append(out, splitList(s)...)
		}
		return out
	}
	if v.node == nil || v.node.Kind == yaml.ScalarNode {
		s, _ := r.scalar(key)
		return splitList(s)
	}
	if v.node.Kind != yaml.SequenceNode {
		r.fail(key, "must be a list, not %s", describeNode(v.node))
		return nil
	}
	var out []string
	for i, e := range v.node.Content {
		e = resolve(e)
		at := fmt.Sprintf("%s[%d]", key, i)
		r.prov.keys[at] = source{file: r.prov.file, line: e.Line}
		if e.Kind != yaml.ScalarNode || isNull(e) {
			r.fail(at, "must be a single value, not %s", describeNode(e))
			return nil
		}
		out = append(out, strings.TrimSpace(e.Value))
	}
	return out
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// inputs decodes pipeline.inputs: a YAML list of mappings, or, from the
// environment, the same list written as YAML (or JSON) flow text.
func (r *reader) inputs(key string) []Input {
	entries := r.entries(key, "a list of inputs (- name: ..., topic: ...)", "an input", inputKeyNames())
	out := make([]Input, 0, len(entries))
	for _, e := range entries {
		in := Input{Name: e["name"], Topic: e["topic"], Rekey: e["rekey"], KeyFormat: e["key_format"],
			TimestampField: e["timestamp_field"], Store: e["store"],
			RepartitionTopic: e["repartition_topic"], ChangelogTopic: e["changelog_topic"]}
		if in.KeyFormat == "" {
			in.KeyFormat = KeyFormatString
		}
		out = append(out, in)
	}
	return out
}

// entries decodes a key holding a list of mappings of known names to
// single values (pipeline.inputs, compare.pairs): a YAML list from the
// file, or, from the environment, the same list written as YAML (or JSON)
// flow text. list describes the whole value and entry one element, for
// messages. It returns nil after recording an error; a null value is
// absent from its entry's map.
func (r *reader) entries(key, list, entry string, known []string) []map[string]string {
	v := r.vals[key]
	n := v.node
	fromFile := n != nil
	if n == nil {
		if strings.TrimSpace(v.text) == "" {
			return nil
		}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(v.text), &doc); err != nil {
			if r.err == nil {
				e := yamlError("", EnvName(key), err)
				e.Key = key
				r.err = e
			}
			return nil
		}
		n = resolve(&doc)
		if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
			n = resolve(n.Content[0])
		}
	}
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		r.fail(key, "must be %s, not %s", list, describeNode(n))
		return nil
	}
	out := make([]map[string]string, 0, len(n.Content))
	for i, e := range n.Content {
		e = resolve(e)
		at := fmt.Sprintf("%s[%d]", key, i)
		if fromFile {
			r.prov.keys[at] = source{file: r.prov.file, line: e.Line}
		}
		if e.Kind != yaml.MappingNode {
			r.fail(at, "must be a mapping of %s, not %s", strings.Join(known, ", "), describeNode(e))
			return nil
		}
		fields := map[string]string{}
		seen := map[string]int{}
		for j := 0; j+1 < len(e.Content); j += 2 {
			k, fv := resolve(e.Content[j]), resolve(e.Content[j+1])
			name := strings.ToLower(k.Value)
			fkey := at + "." + name
			if fromFile {
				r.prov.keys[fkey] = source{file: r.prov.file, line: k.Line}
			}
			switch {
			case k.Kind != yaml.ScalarNode:
				r.fail(at, "a key must be a name, not %s", describeNode(k))
				return nil
			case !contains(known, name):
				if near := nearest(name, known); near != "" {
					r.fail(fkey, "unknown key (did you mean %s?)", near)
				} else {
					r.fail(fkey, "unknown key; %s takes %s", entry, strings.Join(known, ", "))
				}
				return nil
			case seen[name] > 0:
				r.fail(fkey, "set twice (first on line %d)", seen[name])
				return nil
			case fv.Kind != yaml.ScalarNode:
				r.fail(fkey, "must be a single value, not %s", describeNode(fv))
				return nil
			}
			seen[name] = max(k.Line, 1)
			if !isNull(fv) {
				fields[name] = fv.Value
			}
		}
		out = append(out, fields)
	}
	return out
}

// describeFileErr shortens an *os.PathError to its cause; the caller names the file.
func describeFileErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
