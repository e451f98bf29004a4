package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
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
	// File is the YAML file; "" means none (defaults, environment and flags
	// only). A named file that cannot be read is an error.
	File string
	// Flags, if not nil, holds command-line flags. A flag named in FlagKeys
	// that was set on the command line overrides its key. Flags whose type
	// does not fit the key (e.g. a command's own boolean --json shadowing the
	// global report path) are ignored.
	Flags *pflag.FlagSet
}

// FlagKeys maps the global flag names to the keys they override.
func FlagKeys() map[string]string {
	return map[string]string{
		"brokers":   "kafka.brokers",
		"csv":       "report.csv",
		"json":      "report.json",
		"from":      "window.from",
		"to":        "window.to",
		"store-dir": "store.dir",
	}
}

// EnvName returns the environment variable that overrides key.
func EnvName(key string) string {
	return EnvPrefix + "_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// Defaults returns every key with its default value. Every key lossaudit
// reads appears here.
func Defaults() map[string]any {
	m := map[string]any{
		"kafka.brokers":                  []string{"localhost:9092"},
		"kafka.client_properties":        "",
		"kafka.tls.enabled":              false,
		"kafka.tls.ca_file":              "",
		"kafka.tls.cert_file":            "",
		"kafka.tls.key_file":             "",
		"kafka.tls.insecure_skip_verify": false,
		"kafka.sasl.mechanism":           "",
		"kafka.sasl.username":            "",
		"kafka.sasl.password":            "",
		"kafka.fetch_max_bytes":          52428800,
		"kafka.partition_max_bytes":      1048576,
		"kafka.concurrency":              8,
		"kafka.timeout":                  "30s",
		"schema.registry_url":            "",
		"schema.registry_username":       "",
		"schema.registry_password":       "",
		"schema.schemas_topic":           "_schemas",
		"schema.avsc_dir":                "",
		"pipeline.application_id":        "",
		"pipeline.topology_file":         "",
		"pipeline.output":                "",
		"pipeline.inputs":                []any{},
		"window.from":                    "",
		"window.to":                      "",
		"store.dir":                      "./lossaudit-data",
		"report.csv":                     "loss-report.csv",
		"report.json":                    "",
		"audit.settle_timeout":           "60s",
	}
	for k, v := range compareDefaults() {
		m[k] = v
	}
	return m
}

// inputKeyList lists the keys of one pipeline.inputs entry, for error messages.
const inputKeyList = "name, topic, rekey, key_format, timestamp_field, store, repartition_topic, changelog_topic"

// Load reads the configuration from defaults, opts.File, the environment and
// opts.Flags (in increasing precedence), merges a client.properties file if
// one is named, and validates everything except the pipeline (see
// ValidatePipeline). Every problem is an *Error.
func Load(opts LoadOptions) (*Config, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	v.AllowEmptyEnv(true)
	defaults := Defaults()
	explicit := map[string]bool{}
	for key, def := range defaults {
		v.SetDefault(key, def)
		if err := v.BindEnv(key, EnvName(key)); err != nil {
			return nil, fmt.Errorf("binding %s: %w", key, err)
		}
		if _, ok := os.LookupEnv(EnvName(key)); ok {
			explicit[key] = true
		}
	}

	if opts.File != "" {
		data, err := os.ReadFile(opts.File)
		if err != nil {
			return nil, &Error{Key: opts.File, Msg: "cannot read config file: " + describeFileErr(err)}
		}
		fileKeys, err := checkFileKeys(opts.File, data, defaults)
		if err != nil {
			return nil, err
		}
		for _, k := range fileKeys {
			explicit[k] = true
		}
		if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
			return nil, &Error{Key: opts.File, Msg: "invalid YAML: " + err.Error()}
		}
	}

	if opts.Flags != nil {
		keys := FlagKeys()
		names := make([]string, 0, len(keys))
		for name := range keys {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			key := keys[name]
			f := opts.Flags.Lookup(name)
			if f == nil || !f.Changed {
				continue
			}
			switch f.Value.Type() {
			case "string":
				v.Set(key, f.Value.String())
			case "stringSlice", "stringArray":
				vals, err := opts.Flags.GetStringSlice(name)
				if err != nil {
					vals, err = opts.Flags.GetStringArray(name)
				}
				if err != nil {
					return nil, errorf("--"+name, "%v", err)
				}
				v.Set(key, vals)
			default:
				continue // a command's own flag of the same name, not ours
			}
			explicit[key] = true
		}
	}

	g := &getter{v: v}
	c := &Config{}
	c.Kafka.Brokers = g.list("kafka.brokers")
	c.Kafka.ClientProperties = g.str("kafka.client_properties")
	c.Kafka.TLS.Enabled = g.bool("kafka.tls.enabled")
	c.Kafka.TLS.CAFile = g.str("kafka.tls.ca_file")
	c.Kafka.TLS.CertFile = g.str("kafka.tls.cert_file")
	c.Kafka.TLS.KeyFile = g.str("kafka.tls.key_file")
	c.Kafka.TLS.InsecureSkipVerify = g.bool("kafka.tls.insecure_skip_verify")
	c.Kafka.SASL.Mechanism = g.str("kafka.sasl.mechanism")
	c.Kafka.SASL.Username = g.str("kafka.sasl.username")
	c.Kafka.SASL.Password = g.str("kafka.sasl.password")
	c.Kafka.FetchMaxBytes = g.int32("kafka.fetch_max_bytes")
	c.Kafka.PartitionMaxBytes = g.int32("kafka.partition_max_bytes")
	c.Kafka.Concurrency = g.int("kafka.concurrency")
	c.Kafka.Timeout = g.duration("kafka.timeout")
	c.Schema.RegistryURL = g.str("schema.registry_url")
	c.Schema.RegistryUsername = g.str("schema.registry_username")
	c.Schema.RegistryPassword = g.str("schema.registry_password")
	c.Schema.SchemasTopic = g.str("schema.schemas_topic")
	c.Schema.AvscDir = g.str("schema.avsc_dir")
	c.Pipeline.ApplicationID = g.str("pipeline.application_id")
	c.Pipeline.TopologyFile = g.str("pipeline.topology_file")
	c.Pipeline.Output = g.str("pipeline.output")
	c.Pipeline.Inputs = g.inputs("pipeline.inputs")
	c.Window.From = g.time("window.from")
	c.Window.To = g.time("window.to")
	c.Store.Dir = g.str("store.dir")
	c.Report.CSV = g.str("report.csv")
	c.Report.JSON = g.str("report.json")
	c.Audit.SettleTimeout = g.duration("audit.settle_timeout")
	if g.err != nil {
		return nil, g.err
	}
	if err := loadCompare(g, c, explicit); err != nil {
		return nil, err
	}

	if c.Kafka.ClientProperties != "" {
		if err := applyClientProperties(c, c.Kafka.ClientProperties, explicit); err != nil {
			return nil, err
		}
	}
	c.Kafka.SASL.Mechanism = strings.ToUpper(strings.TrimSpace(c.Kafka.SASL.Mechanism))
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// checkFileKeys parses the YAML file on its own and returns its keys, or an
// *Error naming the first key lossaudit does not know.
func checkFileKeys(file string, data []byte, defaults map[string]any) ([]string, error) {
	fv := viper.New()
	fv.SetConfigType("yaml")
	if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
		return nil, &Error{Key: file, Msg: "invalid YAML: " + err.Error()}
	}
	sections := map[string]bool{}
	for key := range defaults {
		parts := strings.Split(key, ".")
		for i := 1; i < len(parts); i++ {
			sections[strings.Join(parts[:i], ".")] = true
		}
	}
	keys := fv.AllKeys()
	sort.Strings(keys)
	var found []string
	for _, key := range keys {
		if _, ok := defaults[key]; ok {
			found = append(found, key)
			continue
		}
		if sections[key] {
			if fv.Get(key) == nil {
				continue // an empty section
			}
			return nil, errorf(key, "must be a mapping, not %T", fv.Get(key))
		}
		if near := nearest(key, defaults); near != "" {
			return nil, errorf(key, "unknown key in %s (did you mean %s?)", file, near)
		}
		return nil, errorf(key, "unknown key in %s", file)
	}
	return found, nil
}

// nearest returns the known key closest to key by edit distance, or "" when
// none is within a couple of typos.
func nearest(key string, known map[string]any) string {
	best, bestD := "", 3
	for k := range known {
		if d := editDistance(key, k); d < bestD || (d == bestD && k < best) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// getter converts viper values to typed fields, keeping the first error.
type getter struct {
	v   *viper.Viper
	err error
}

func (g *getter) fail(key, format string, args ...any) {
	if g.err == nil {
		g.err = errorf(key, format, args...)
	}
}

func (g *getter) str(key string) string {
	switch x := g.v.Get(key).(type) {
	case nil:
		return ""
	case string:
		return x
	case int, int64, float64, bool:
		return fmt.Sprint(x)
	default:
		g.fail(key, "must be a string, not %T", x)
		return ""
	}
}

func (g *getter) bool(key string) bool {
	switch x := g.v.Get(key).(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(x))
		if err != nil {
			g.fail(key, "%q is not a boolean (true or false)", x)
		}
		return b
	default:
		g.fail(key, "must be true or false, not %T", x)
		return false
	}
}

func (g *getter) int64(key string) int64 {
	switch x := g.v.Get(key).(type) {
	case nil:
		return 0
	case int:
		return int64(x)
	case int64:
		return x
	case float64:
		if x != float64(int64(x)) {
			g.fail(key, "%v is not a whole number", x)
		}
		return int64(x)
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 64)
		if err != nil {
			g.fail(key, "%q is not a whole number", x)
		}
		return n
	default:
		g.fail(key, "must be a whole number, not %T", x)
		return 0
	}
}

func (g *getter) int(key string) int {
	n := g.int64(key)
	if int64(int(n)) != n {
		g.fail(key, "%d is out of range", n)
	}
	return int(n)
}

func (g *getter) int32(key string) int32 {
	n := g.int64(key)
	if n < -1<<31 || n > 1<<31-1 {
		g.fail(key, "%d is out of range (at most %d)", n, int64(1<<31-1))
	}
	return int32(n)
}

func (g *getter) duration(key string) time.Duration {
	switch x := g.v.Get(key).(type) {
	case nil:
		return 0
	case time.Duration:
		return x
	case int:
		if x == 0 {
			return 0
		}
		g.fail(key, "%d has no unit; write a duration like \"30s\" or \"2m\"", x)
		return 0
	case string:
		if strings.TrimSpace(x) == "" {
			return 0
		}
		d, err := time.ParseDuration(strings.TrimSpace(x))
		if err != nil {
			g.fail(key, "%q is not a duration like \"30s\" or \"2m\"", x)
		}
		return d
	default:
		g.fail(key, "must be a duration like \"30s\", not %T", x)
		return 0
	}
}

func (g *getter) time(key string) time.Time {
	switch x := g.v.Get(key).(type) {
	case nil:
		return time.Time{}
	case time.Time:
		return x
	case string:
		s := strings.TrimSpace(x)
		if s == "" {
			return time.Time{}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			g.fail(key, "%q is not an RFC 3339 time like 2026-11-29T10:15:00Z", x)
		}
		return t
	default:
		g.fail(key, "must be an RFC 3339 time, not %T", x)
		return time.Time{}
	}
}

// list accepts a YAML list, a []string from a flag, or a comma-separated
// string from the environment.
func (g *getter) list(key string) []string {
	var out []string
	switch x := g.v.Get(key).(type) {
	case nil:
	case []string:
		for _, s := range x {
			out = append(out, splitList(s)...)
		}
	case []any:
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				g.fail(fmt.Sprintf("%s[%d]", key, i), "must be a string, not %T", e)
				return nil
			}
			out = append(out, strings.TrimSpace(s))
		}
	case string:
		out = splitList(x)
	default:
		g.fail(key, "must be a list of strings, not %T", x)
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
// environment, the same list written as YAML/JSON flow text.
func (g *getter) inputs(key string) []Input {
	raw := g.v.Get(key)
	if s, ok := raw.(string); ok {
		if strings.TrimSpace(s) == "" {
			return nil
		}
		tmp := viper.New()
		tmp.SetConfigType("yaml")
		if err := tmp.ReadConfig(strings.NewReader("inputs: " + s)); err != nil {
			g.fail(key, "cannot parse %s as a YAML list: %v", EnvName(key), err)
			return nil
		}
		raw = tmp.Get("inputs")
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
		g.fail(key, "must be a list of inputs, not %T", raw)
		return nil
	}
	out := make([]Input, 0, len(list))
	for i, e := range list {
		at := fmt.Sprintf("%s[%d]", key, i)
		m, ok := toStringMap(e)
		if !ok {
			g.fail(at, "must be a mapping with name, topic, ..., not %T", e)
			return nil
		}
		var in Input
		fields := map[string]*string{
			"name": &in.Name, "topic": &in.Topic, "rekey": &in.Rekey, "key_format": &in.KeyFormat,
			"timestamp_field": &in.TimestampField, "store": &in.Store,
			"repartition_topic": &in.RepartitionTopic, "changelog_topic": &in.ChangelogTopic,
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			dst, ok := fields[strings.ToLower(k)]
			if !ok {
				g.fail(at+"."+k, "unknown key (known: %s)", inputKeyList)
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
		if in.KeyFormat == "" {
			in.KeyFormat = KeyFormatString
		}
		out = append(out, in)
	}
	return out
}

func toStringMap(e any) (map[string]any, bool) {
	switch m := e.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, v := range m {
			out[fmt.Sprint(k)] = v
		}
		return out, true
	}
	return nil, false
}

// describeFileErr shortens an *os.PathError to its cause; the caller names the file.
func describeFileErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
