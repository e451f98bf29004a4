package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// globalFlagSet is a flag set with every configuration flag, as the CLI
// registers them, parsed from args.
func globalFlagSet(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	var names []string
	for _, f := range Flags() {
		names = append(names, f.Name)
	}
	if err := AddFlags(fs, names...); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs
}

func TestPrecedence(t *testing.T) {
	file := `
kafka:
  brokers: ["file1:9092", "file2:9092"]
  timeout: 10s
report:
  csv: file.csv
store:
  dir: /file/store
window:
  from: "2026-01-01T00:00:00Z"
schema:
  registry_url: http://file:8081
`
	type want struct {
		brokers  []string
		csv      string
		storeDir string
		from     string
		timeout  time.Duration
		registry string
	}
	tests := []struct {
		name  string
		file  bool
		env   map[string]string
		flags []string
		want  want
	}{
		{
			name: "defaults",
			want: want{[]string{"localhost:9092"}, "loss-report.csv", "./lossaudit-data", "", 30 * time.Second, ""},
		},
		{
			name: "file over defaults",
			file: true,
			want: want{[]string{"file1:9092", "file2:9092"}, "file.csv", "/file/store", "2026-01-01T00:00:00Z", 10 * time.Second, "http://file:8081"},
		},
		{
			name: "env over file",
			file: true,
			env: map[string]string{
				"LOSSAUDIT_KAFKA_BROKERS":       "env1:9092,env2:9093",
				"LOSSAUDIT_REPORT_CSV":          "env.csv",
				"LOSSAUDIT_STORE_DIR":           "/env/store",
				"LOSSAUDIT_WINDOW_FROM":         "2026-02-01T00:00:00Z",
				"LOSSAUDIT_KAFKA_TIMEOUT":       "5s",
				"LOSSAUDIT_SCHEMA_REGISTRY_URL": "https://env:8081",
			},
			want: want{[]string{"env1:9092", "env2:9093"}, "env.csv", "/env/store", "2026-02-01T00:00:00Z", 5 * time.Second, "https://env:8081"},
		},
		{
			name: "flags over env over file",
			file: true,
			env: map[string]string{
				"LOSSAUDIT_KAFKA_BROKERS": "env1:9092",
				"LOSSAUDIT_REPORT_CSV":    "env.csv",
				"LOSSAUDIT_STORE_DIR":     "/env/store",
				"LOSSAUDIT_WINDOW_FROM":   "2026-02-01T00:00:00Z",
				"LOSSAUDIT_KAFKA_TIMEOUT": "5s",
			},
			flags: []string{"--brokers", "flag1:9092", "--brokers", "flag2:9092", "--csv", "flag.csv",
				"--store-dir", "/flag/store", "--from", "2026-03-01T00:00:00.5Z"},
			want: want{[]string{"flag1:9092", "flag2:9092"}, "flag.csv", "/flag/store", "2026-03-01T00:00:00.5Z", 5 * time.Second, "http://file:8081"},
		},
		{
			name:  "flags over file without env",
			file:  true,
			flags: []string{"--brokers", "a:1,b:2", "--csv", ""},
			want:  want{[]string{"a:1", "b:2"}, "", "/file/store", "2026-01-01T00:00:00Z", 10 * time.Second, "http://file:8081"},
		},
		{
			name: "empty env var overrides the file",
			file: true,
			env:  map[string]string{"LOSSAUDIT_REPORT_CSV": ""},
			want: want{[]string{"file1:9092", "file2:9092"}, "", "/file/store", "2026-01-01T00:00:00Z", 10 * time.Second, "http://file:8081"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			opts := LoadOptions{Flags: globalFlagSet(t, tc.flags...)}
			if tc.file {
				opts.File = writeFile(t, t.TempDir(), "audit.yaml", file)
			}
			c, err := Load(opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			var from string
			if !c.Window.From.IsZero() {
				from = c.Window.From.Format(time.RFC3339Nano)
			}
			got := want{c.Kafka.Brokers, c.Report.CSV, c.Store.Dir, from, c.Kafka.Timeout, c.Schema.RegistryURL}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestDefaultsOfExtraKeys(t *testing.T) {
	clearEnv(t)
	c, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Kafka.FetchMaxBytes != 52428800 || c.Kafka.PartitionMaxBytes != 1048576 || c.Kafka.Concurrency != 8 ||
		c.Kafka.Timeout != 30*time.Second || c.Audit.SettleTimeout != 60*time.Second || c.Audit.UnprocessedAfter != 10*time.Minute ||
		c.Schema.SchemasTopic != "_schemas" || c.Report.JSON != "" || c.Kafka.TLS.Enabled || c.Kafka.SASL.Mechanism != "" ||
		c.Report.MetricsFile != "" || c.Watch.Interval != time.Minute || c.Watch.Listen != "127.0.0.1:9464" || c.Watch.LogFormat != LogText {
		t.Errorf("unexpected defaults:\n%s", c.Redacted())
	}
}

func TestEnvOverridesEveryKind(t *testing.T) {
	clearEnv(t)
	env := map[string]string{
		"LOSSAUDIT_KAFKA_BROKERS":           " h1:9092 , h2:9092 ,",
		"LOSSAUDIT_KAFKA_TLS_ENABLED":       "true",
		"LOSSAUDIT_KAFKA_FETCH_MAX_BYTES":   "1048576",
		"LOSSAUDIT_KAFKA_CONCURRENCY":       "3",
		"LOSSAUDIT_AUDIT_SETTLE_TIMEOUT":    "2m",
		"LOSSAUDIT_KAFKA_SASL_MECHANISM":    "scram-sha-256",
		"LOSSAUDIT_KAFKA_SASL_USERNAME":     "u",
		"LOSSAUDIT_KAFKA_SASL_PASSWORD":     "p",
		"LOSSAUDIT_PIPELINE_APPLICATION_ID": "app",
		"LOSSAUDIT_PIPELINE_OUTPUT":         "out",
		"LOSSAUDIT_PIPELINE_INPUTS":         `[{name: a, topic: ta, rekey: customerId}, {name: b, topic: tb, key_format: bytes}]`,
		"LOSSAUDIT_WINDOW_TO":               "2026-11-29T10:15:02.123Z",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	c, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"h1:9092", "h2:9092"}; !reflect.DeepEqual(c.Kafka.Brokers, want) {
		t.Errorf("brokers = %q, want %q", c.Kafka.Brokers, want)
	}
	if !c.Kafka.TLS.Enabled || c.Kafka.FetchMaxBytes != 1048576 || c.Kafka.Concurrency != 3 ||
		c.Audit.SettleTimeout != 2*time.Minute || c.Kafka.SASL.Mechanism != MechanismScramSHA256 {
		t.Errorf("env not applied:\n%s", c.Redacted())
	}
	wantInputs := []Input{
		{Name: "a", Topic: "ta", Rekey: "customerId", KeyFormat: "string"},
		{Name: "b", Topic: "tb", KeyFormat: "bytes"},
	}
	if !reflect.DeepEqual(c.Pipeline.Inputs, wantInputs) {
		t.Errorf("inputs = %+v, want %+v", c.Pipeline.Inputs, wantInputs)
	}
	if err := c.ValidatePipeline(); err != nil {
		t.Errorf("ValidatePipeline: %v", err)
	}
	if got := c.Window.To.UTC().Format(time.RFC3339Nano); got != "2026-11-29T10:15:02.123Z" {
		t.Errorf("window.to = %s", got)
	}
}

func TestFullFile(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	writeFile(t, dir, "topology.txt", "Topologies:\n")
	file := writeFile(t, dir, "audit.yaml", `
kafka:
  brokers: ["[::1]:9092", "kafka-1.example.com:19092"]
  tls: {enabled: false, ca_file: "", cert_file: "", key_file: "", insecure_skip_verify: false}
  sasl: {mechanism: "", username: "", password: ""}
schema:
  registry_url: ""
  schemas_topic: "_schemas"
  avsc_dir: "`+dir+`"
pipeline:
  application_id: "myapp"
  topology_file: "`+dir+`/topology.txt"
  output: "joined"
  inputs:
    - name: a
      topic: "topicA"
      rekey: "customerId"
      key_format: string
      timestamp_field: ""
      store: "s-a"
      repartition_topic: "r-a"
      changelog_topic: "c-a"
    - name: b
      topic: "topicB"
      key_format: avro
window:
  from: 2026-11-29T10:00:00Z
  to: "2026-11-29T12:00:00+01:00"
store:
  dir: "./lossaudit-data"
report:
  csv: "loss-report.csv"
  json: "summary.json"
`)
	c, err := Load(LoadOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidatePipeline(); err != nil {
		t.Fatal(err)
	}
	want := []Input{
		{Name: "a", Topic: "topicA", Rekey: "customerId", KeyFormat: "string", Store: "s-a", RepartitionTopic: "r-a", ChangelogTopic: "c-a"},
		{Name: "b", Topic: "topicB", KeyFormat: "avro"},
	}
	if !reflect.DeepEqual(c.Pipeline.Inputs, want) {
		t.Errorf("inputs = %+v\nwant %+v", c.Pipeline.Inputs, want)
	}
	if got, want := c.Window.From.UTC(), time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("window.from = %s, want %s", got, want)
	}
	if got, want := c.Window.To.UTC(), time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("window.to = %s, want %s", got, want)
	}
	if c.Report.JSON != "summary.json" || c.Pipeline.ApplicationID != "myapp" || c.Pipeline.Output != "joined" {
		t.Errorf("unexpected:\n%s", c.Redacted())
	}
}

// TestBadInput: every problem is an *Error whose one-line message names
// where the value was written (file:line, variable or flag), the key, and
// what is wrong, in words (no Go types).
func TestBadInput(t *testing.T) {
	certPEM, keyPEM := pemPair(t)
	tests := []struct {
		name     string
		file     string            // YAML; %DIR% is replaced by a temp dir
		files    map[string]string // extra files in that dir
		env      map[string]string
		flags    []string
		pipeline bool   // the error comes from ValidatePipeline
		key      string // want Error.Key
		want     string // want Error(), exactly; %DIR% replaced, %F% is %DIR%/audit.yaml
	}{
		{name: "unknown top-level key", file: "kafak:\n  brokers: [a:1]\n", key: "kafak",
			want: "%F%:1: kafak: unknown key (did you mean kafka?)"},
		{name: "unknown nested key", file: "kafka:\n  tls:\n    enabeld: true\n", key: "kafka.tls.enabeld",
			want: "%F%:3: kafka.tls.enabeld: unknown key (did you mean kafka.tls.enabled?)"},
		{name: "unknown key, nothing close", file: "report:\n  pdf: r.pdf\n", key: "report.pdf",
			want: "%F%:2: report.pdf: unknown key; report takes csv, json, html, metrics_file, file_mode, redact_keys, redact_key_file"},
		{name: "unknown section, nothing close", file: "metrics: {}\n", key: "metrics",
			want: "%F%:1: metrics: unknown key; the sections are kafka, sink_kafka, schema, pipeline, window, store, report, audit, compare, watch"},
		{name: "scalar for a section", file: "kafka:\n  tls: true\n", key: "kafka.tls",
			want: "%F%:2: kafka.tls: must be a mapping of enabled, ca_file, cert_file, key_file, insecure_skip_verify, not the value true"},
		{name: "key set twice", file: "kafka:\n  timeout: 5s\n  concurrency: 2\n  timeout: 6s\n", key: "kafka.timeout",
			want: "%F%:4: kafka.timeout: set twice (first on line 2)"},
		{name: "top level is a list", file: "- kafka\n", want: "%F%:1: must be a mapping of sections (kafka:, schema:, pipeline:, ...), not a list"},
		{name: "two documents", file: "kafka: {}\n---\nkafka: {}\n", want: "%F%:2: a second YAML document (after ---); lossaudit reads one"},
		{name: "unknown input key", file: "pipeline:\n  inputs:\n    - {name: a, topic: t}\n    - {name: b, topic: u, keyformat: avro}\n",
			key: "pipeline.inputs[1].keyformat", want: "%F%:4: pipeline.inputs[1].keyformat: unknown key (did you mean key_format?)"},
		{name: "input is not a mapping", file: "pipeline:\n  inputs:\n    - a\n", key: "pipeline.inputs[0]",
			want: `%F%:3: pipeline.inputs[0]: must be a mapping of name, topic, rekey, key_format, timestamp_field, store, repartition_topic, changelog_topic, not the value "a"`},
		{name: "inputs is a mapping", file: "pipeline:\n  inputs: {name: a}\n", key: "pipeline.inputs",
			want: "%F%:2: pipeline.inputs: must be a list of inputs (- name: ..., topic: ...), not a mapping"},
		{name: "list for an input field", file: "pipeline:\n  inputs:\n    - {name: a, topic: [t1, t2]}\n", key: "pipeline.inputs[0].topic",
			want: "%F%:3: pipeline.inputs[0].topic: must be a single value, not a list"},
		{name: "list for a string", file: "pipeline:\n  output:\n    - a\n    - b\n", key: "pipeline.output",
			want: "%F%:3: pipeline.output: must be a single value, not a list"},
		{name: "mapping in the broker list", file: "kafka:\n  brokers:\n    - h1:9092\n    - {host: h2}\n", key: "kafka.brokers[1]",
			want: "%F%:4: kafka.brokers[1]: must be a single value, not a mapping"},
		{name: "watch interval negative", file: "watch:\n  interval: -1m\n", key: "watch.interval",
			want: "%F%:2: watch.interval: must be positive, is -1m0s"},
		{name: "watch listen without a port", file: "watch:\n  listen: localhost\n", key: "watch.listen",
			want: `%F%:2: watch.listen: "localhost" is not host:port (e.g. 127.0.0.1:9464)`},
		{name: "watch log format", file: "watch:\n  log_format: yaml\n", key: "watch.log_format",
			want: `%F%:2: watch.log_format: "yaml" is not text or json`},
		{name: "bad YAML", file: "kafka: [\n", want: "%F%:1: invalid YAML: did not find expected node content"},
		{name: "bad YAML indentation", file: "kafka:\n  brokers: [a:1]\n timeout: 5s\n", want: "%F%:2: invalid YAML: did not find expected key"}, // yaml.v3 names the line of the mapping it was parsing
		{name: "tab in YAML", file: "kafka:\n\tbrokers: [a:1]\n", want: "%F%:2: invalid YAML: found character that cannot start any token"},
		{name: "missing config file", file: "-", want: "%DIR%/nope.yaml: cannot read the configuration file: no such file or directory"},
		{name: "broker without port", file: "kafka:\n  brokers: [localhost]\n", key: "kafka.brokers[0]",
			want: `%F%:2: kafka.brokers[0]: "localhost" is not a host:port address: missing port in address`},
		{name: "broker port out of range", file: "kafka:\n  brokers:\n    - ok:9092\n    - h:99999\n", key: "kafka.brokers[1]",
			want: `%F%:4: kafka.brokers[1]: "h:99999" is not a host:port address: port "99999" is not a number in 1..65535`},
		{name: "broker from env", env: map[string]string{"LOSSAUDIT_KAFKA_BROKERS": "h1:9092,h2"}, key: "kafka.brokers[1]",
			want: `LOSSAUDIT_KAFKA_BROKERS: "h2" is not a host:port address: missing port in address`},
		{name: "broker from flag", flags: []string{"--brokers", ":9092"}, key: "kafka.brokers[0]",
			want: `--brokers: ":9092" is not a host:port address: empty host`},
		{name: "no brokers", env: map[string]string{"LOSSAUDIT_KAFKA_BROKERS": ""}, key: "kafka.brokers",
			want: "LOSSAUDIT_KAFKA_BROKERS: no broker address given"},
		{name: "unknown SASL mechanism", file: "kafka:\n  sasl: {mechanism: GSSAPI, username: u}\n", key: "kafka.sasl.mechanism",
			want: `%F%:2: kafka.sasl.mechanism: "GSSAPI" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{name: "SASL without user", file: "kafka:\n  sasl: {mechanism: PLAIN}\n", key: "kafka.sasl.username",
			want: "%F%: kafka.sasl.username: must be set when kafka.sasl.mechanism is PLAIN"},
		{name: "unreadable CA file", file: "kafka:\n  tls: {enabled: true, ca_file: %DIR%/missing.pem}\n", key: "kafka.tls.ca_file",
			want: "%F%:2: kafka.tls.ca_file: cannot read %DIR%/missing.pem: no such file or directory"},
		{name: "JKS CA file", file: "kafka:\n  tls: {enabled: true, ca_file: %DIR%/trust.jks}\n",
			files: map[string]string{"trust.jks": "\xfe\xed\xfe\xed\x00\x00\x00\x02"}, key: "kafka.tls.ca_file",
			want: "%F%:2: kafka.tls.ca_file: %DIR%/trust.jks is a Java key store (JKS); lossaudit reads PEM files only. Convert it, e.g. " +
				"`keytool -importkeystore -srckeystore %DIR%/trust.jks -destkeystore store.p12 -deststoretype PKCS12` then " +
				"`openssl pkcs12 -in store.p12 -out store.pem -nodes` (for a truststore add -nokeys)"},
		{name: "PKCS12 cert file", file: "kafka:\n  tls: {enabled: true, cert_file: %DIR%/client.p12, key_file: %DIR%/key.pem}\n",
			files: map[string]string{"client.p12": "\x30\x82\x01\x00", "key.pem": keyPEM}, key: "kafka.tls.cert_file",
			want: "%F%:2: kafka.tls.cert_file: %DIR%/client.p12 is a PKCS12 key store; lossaudit reads PEM files only. Convert it, e.g. " +
				"`openssl pkcs12 -in %DIR%/client.p12 -out store.pem -nodes` (for a truststore add -nokeys)"},
		{name: "cert without key", file: "kafka:\n  tls: {enabled: true, cert_file: %DIR%/c.pem}\n",
			files: map[string]string{"c.pem": certPEM}, key: "kafka.tls.key_file",
			want: "%F%: kafka.tls.key_file: must be set when kafka.tls.cert_file is: a client certificate needs both"},
		{name: "encrypted key", file: "kafka:\n  tls: {enabled: true, cert_file: %DIR%/c.pem, key_file: %DIR%/k.pem}\n",
			files: map[string]string{"c.pem": certPEM, "k.pem": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"},
			key:   "kafka.tls.key_file",
			want:  "%F%:2: kafka.tls.key_file: %DIR%/k.pem holds an encrypted private key, which lossaudit cannot use; decrypt it, e.g. `openssl pkey -in %DIR%/k.pem -out key.pem`"},
		{name: "unreadable client.properties", file: "kafka:\n  client_properties: %DIR%/client.properties\n", key: "kafka.client_properties",
			want: "%F%:2: kafka.client_properties: cannot read %DIR%/client.properties: no such file or directory"},
		{name: "unreadable --command-config", flags: []string{"--command-config", "%DIR%/client.properties"}, key: "kafka.client_properties",
			want: "--command-config: cannot read %DIR%/client.properties: no such file or directory"},
		{name: "bad time from flag", flags: []string{"--from", "2026-11-29 10:00"}, key: "window.from",
			want: `--from: "2026-11-29 10:00" is not a time: write RFC 3339 (2026-11-29T10:00:00Z), a duration before now (-2h, 30m) or now`},
		{name: "bad time from env", env: map[string]string{"LOSSAUDIT_WINDOW_TO": "yesterday"}, key: "window.to",
			want: `LOSSAUDIT_WINDOW_TO: "yesterday" is not a time: write RFC 3339 (2026-11-29T10:00:00Z), a duration before now (-2h, 30m) or now`},
		{name: "time in days", file: "window:\n  from: -2d\n", key: "window.from",
			want: "%F%:2: window.from: -2d is not a time: durations have no days; write -48h"},
		{name: "time in the future", flags: []string{"--to", "+1h"}, key: "window.to",
			want: "--to: +1h is in the future: a duration means that long before now, like -2h or 2h"},
		{name: "from not before to", flags: []string{"--from", "2026-11-29T10:00:00Z", "--to", "2026-11-29T09:00:00Z"}, key: "window.from",
			want: "--from: 2026-11-29T10:00:00.000Z is not before window.to 2026-11-29T09:00:00.000Z"},
		{name: "relative from not before to", flags: []string{"--from", "1h", "--to", "2h"}, key: "window.from",
			want: "--from: 2026-11-29T09:00:00.000Z is not before window.to 2026-11-29T08:00:00.000Z"},
		{name: "bad duration", file: "kafka:\n  timeout: soon\n", key: "kafka.timeout",
			want: `%F%:2: kafka.timeout: "soon" is not a duration like "30s" or "2m"`},
		{name: "duration without unit", file: "audit:\n  settle_timeout: 60\n", key: "audit.settle_timeout",
			want: `%F%:2: audit.settle_timeout: 60 has no unit; write a duration like "60s" or "2m"`},
		{name: "negative unprocessed_after", file: "audit:\n  unprocessed_after: -1m\n", key: "audit.unprocessed_after",
			want: "%F%:2: audit.unprocessed_after: must not be negative, is -1m0s"},
		{name: "bad int from env", env: map[string]string{"LOSSAUDIT_KAFKA_CONCURRENCY": "abc"}, key: "kafka.concurrency",
			want: `LOSSAUDIT_KAFKA_CONCURRENCY: "abc" is not a whole number`},
		{name: "fraction", file: "kafka:\n  concurrency: 2.5\n", key: "kafka.concurrency",
			want: "%F%:2: kafka.concurrency: 2.5 is not a whole number"},
		{name: "huge number", file: "kafka:\n  concurrency: 1e+20\n", key: "kafka.concurrency",
			want: "%F%:2: kafka.concurrency: 1e+20 is too large (at most 2147483647)"},
		{name: "huge integer", env: map[string]string{"LOSSAUDIT_KAFKA_FETCH_MAX_BYTES": "100000000000000000000"}, key: "kafka.fetch_max_bytes",
			want: "LOSSAUDIT_KAFKA_FETCH_MAX_BYTES: 100000000000000000000 is too large (at most 2147483647)"},
		{name: "zero concurrency", file: "kafka:\n  concurrency: 0\n", key: "kafka.concurrency",
			want: "%F%:2: kafka.concurrency: must be at least 1, is 0"},
		{name: "fetch size out of int32", file: "kafka:\n  fetch_max_bytes: 4294967296\n", key: "kafka.fetch_max_bytes",
			want: "%F%:2: kafka.fetch_max_bytes: 4294967296 is too large (at most 2147483647)"},
		{name: "bad bool", env: map[string]string{"LOSSAUDIT_KAFKA_TLS_ENABLED": "yes please"}, key: "kafka.tls.enabled",
			want: `LOSSAUDIT_KAFKA_TLS_ENABLED: "yes please" is not a boolean (true or false)`},
		{name: "YAML 1.1 yes is not a boolean", file: "kafka:\n  tls:\n    enabled: yes\n", key: "kafka.tls.enabled",
			want: `%F%:3: kafka.tls.enabled: "yes" is not a boolean (true or false)`},
		{name: "empty store dir", flags: []string{"--store-dir", ""}, key: "store.dir", want: "--store-dir: must not be empty"},
		{name: "registry not a URL", file: "schema:\n  registry_url: localhost:8081\n", key: "schema.registry_url",
			want: `%F%:2: schema.registry_url: "localhost:8081" is not an http:// or https:// URL`},
		{name: "avsc dir missing", file: "schema:\n  avsc_dir: %DIR%/avsc\n", key: "schema.avsc_dir",
			want: "%F%:2: schema.avsc_dir: %DIR%/avsc: no such file or directory"},
		{name: "misspelt variable", env: map[string]string{"LOSSAUDIT_KAFKA_BROKER": "h:9092"},
			want: "LOSSAUDIT_KAFKA_BROKER: is not a lossaudit setting (did you mean LOSSAUDIT_KAFKA_BROKERS?); unset it or correct its name"},
		{name: "unknown variables", env: map[string]string{"LOSSAUDIT_FOO": "1", "LOSSAUDIT_WINDOW_FORM": "-1h"},
			want: "LOSSAUDIT_FOO: is not a lossaudit setting; the variables are LOSSAUDIT_<KEY> for the configuration keys, " +
				"e.g. LOSSAUDIT_KAFKA_BROKERS for kafka.brokers; unset it or correct its name (also not settings: LOSSAUDIT_WINDOW_FORM)"},
		{name: "inputs variable is not YAML", env: map[string]string{"LOSSAUDIT_PIPELINE_INPUTS": "[{name: a"}, key: "pipeline.inputs",
			want: "LOSSAUDIT_PIPELINE_INPUTS: invalid YAML: did not find expected ',' or '}' (line 1 of the value)"},
		{name: "bad input key in variable", env: map[string]string{"LOSSAUDIT_PIPELINE_INPUTS": "[{name: a, topic: t, key_fromat: avro}]"},
			key: "pipeline.inputs[0].key_fromat", want: "LOSSAUDIT_PIPELINE_INPUTS: pipeline.inputs[0].key_fromat: unknown key (did you mean key_format?)"},
		{name: "bad key_format", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  inputs:\n    - {name: a, topic: ta}\n    - {name: b, topic: tb, key_format: json}\n",
			key:  "pipeline.inputs[1].key_format", want: `%F%:6: pipeline.inputs[1].key_format: "json" is not one of string, avro, bytes`},
		{name: "duplicate input name", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  inputs:\n    - {name: a, topic: ta}\n    - name: a\n      topic: tb\n",
			key:  "pipeline.inputs[1].name", want: `%F%:6: pipeline.inputs[1].name: "a" is already the name of pipeline.inputs[0]`},
		{name: "empty input name", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  inputs:\n    - {topic: ta}\n",
			key:  "pipeline.inputs[0].name", want: "%F%:5: pipeline.inputs[0].name: must not be empty"},
		{name: "empty topic", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  inputs:\n    - name: a\n",
			key:  "pipeline.inputs[0].topic", want: "%F%:5: pipeline.inputs[0].topic: must not be empty"},
		{name: "no inputs", pipeline: true, file: "pipeline:\n  application_id: app\n  output: out\n", key: "pipeline.inputs",
			want: "%F%: pipeline.inputs: must list at least one input"},
		{name: "no application id", pipeline: true, file: "pipeline:\n  output: out\n", key: "pipeline.application_id",
			want: "%F%: pipeline.application_id: must be set to the Kafka Streams application.id"},
		{name: "no configuration file", pipeline: true,
			want: "no configuration file was given (pass one with -c audit.yaml); pipeline.application_id is not set"},
		{name: "no configuration file, pipeline partly in the environment", pipeline: true,
			env:  map[string]string{"LOSSAUDIT_PIPELINE_APPLICATION_ID": "app", "LOSSAUDIT_PIPELINE_OUTPUT": "out"},
			want: "no configuration file was given (pass one with -c audit.yaml); pipeline.inputs is not set"},
		{name: "missing topology file", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  topology_file: %DIR%/topo.txt\n  inputs:\n    - {name: a, topic: ta}\n",
			key:  "pipeline.topology_file", want: "%F%:4: pipeline.topology_file: cannot read %DIR%/topo.txt: no such file or directory"},
	}
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			dir := t.TempDir()
			sub := func(s string) string {
				return strings.ReplaceAll(strings.ReplaceAll(s, "%F%", dir+"/audit.yaml"), "%DIR%", dir)
			}
			for name, content := range tc.files {
				writeFile(t, dir, name, content)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var flags []string
			for _, f := range tc.flags {
				flags = append(flags, sub(f))
			}
			opts := LoadOptions{Flags: globalFlagSet(t, flags...), Now: func() time.Time { return now }}
			switch tc.file {
			case "":
			case "-":
				opts.File = dir + "/nope.yaml"
			default:
				opts.File = writeFile(t, dir, "audit.yaml", sub(tc.file))
			}
			c, err := Load(opts)
			if tc.pipeline {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				err = c.ValidatePipeline()
			}
			if err == nil {
				t.Fatalf("no error, want %s", sub(tc.want))
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %q is not a *config.Error", err, err)
			}
			if got := err.Error(); got != sub(tc.want) {
				t.Errorf("error\n got %s\nwant %s", got, sub(tc.want))
			}
			if ce.Key != tc.key {
				t.Errorf("Key = %q, want %q", ce.Key, tc.key)
			}
		})
	}
}

// TestPipelineDeclarations: pipeline.join defaults to left; pipeline.nodes
// is a list of {name, kind} from the file or LOSSAUDIT_PIPELINE_NODES, node
// names keep their case; empty entries and a missing output without a
// topology file are errors naming the key.
func TestPipelineDeclarations(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	topo := writeFile(t, dir, "topology.txt", "Topologies:\n")
	file := writeFile(t, dir, "audit.yaml", `
pipeline:
  application_id: app
  topology_file: `+topo+`
  inputs: [{name: a, topic: ta}]
  nodes:
    - {name: KSTREAM-REDUCE-0000000003, kind: windowed}
    - {name: hold, kind: suppress}
`)
	c, err := Load(LoadOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{{Name: "KSTREAM-REDUCE-0000000003", Kind: "windowed"}, {Name: "hold", Kind: "suppress"}}
	if c.Pipeline.Join != "" || c.Pipeline.Reduce != "" || !reflect.DeepEqual(c.Pipeline.Nodes, want) {
		t.Errorf("join %q nodes %+v", c.Pipeline.Join, c.Pipeline.Nodes)
	}
	// No pipeline.output: the topology file names it.
	if err := c.ValidatePipeline(); err != nil {
		t.Errorf("ValidatePipeline: %v", err)
	}

	t.Setenv("LOSSAUDIT_PIPELINE_NODES", `[{name: latest, kind: reduce}, {name: hold, kind: ""}]`)
	t.Setenv("LOSSAUDIT_PIPELINE_JOIN", "inner")
	t.Setenv("LOSSAUDIT_PIPELINE_REDUCE", "windowed")
	c, err = Load(LoadOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if c.Pipeline.Reduce != "windowed" {
		t.Errorf("reduce %q, want windowed from LOSSAUDIT_PIPELINE_REDUCE", c.Pipeline.Reduce)
	}
	if c.Pipeline.Join != "inner" || len(c.Pipeline.Nodes) != 2 || !reflect.DeepEqual(c.Pipeline.Nodes[0], Node{Name: "latest", Kind: "reduce"}) {
		t.Errorf("join %q nodes %+v", c.Pipeline.Join, c.Pipeline.Nodes)
	}
	if err := c.ValidatePipeline(); err == nil || !strings.Contains(err.Error(), "pipeline.nodes[1].kind: must be a node kind") {
		t.Errorf("ValidatePipeline: %v, want pipeline.nodes[1].kind named", err)
	}

	noTopo := writeFile(t, dir, "plain.yaml", "pipeline:\n  application_id: app\n  inputs: [{name: a, topic: ta}]\n")
	clearEnv(t)
	c, err = Load(LoadOptions{File: noTopo})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidatePipeline(); err == nil || !strings.Contains(err.Error(), "pipeline.output: must name the output topic (or set pipeline.topology_file") {
		t.Errorf("ValidatePipeline: %v, want pipeline.output named", err)
	}
}

// TestPipelineNodeWindow: a windowed aggregation's node carries its window
// as durations.
func TestPipelineNodeWindow(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	topo := writeFile(t, dir, "topology.txt", "Topologies:\n")
	file := writeFile(t, dir, "audit.yaml", `
pipeline:
  application_id: app
  topology_file: `+topo+`
  inputs: [{name: a, topic: ta}]
  nodes:
    - {name: KSTREAM-AGGREGATE-0000000003, kind: windowed-count, window: {size: 1m, grace: 30s, emit: eager}}
    - {name: hold, kind: suppress}
`)
	c, err := Load(LoadOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	w := c.Pipeline.Nodes[0].Window
	if w == nil || w.Size != time.Minute || w.Grace != 30*time.Second || w.Advance != 0 || w.Emit != "eager" || c.Pipeline.Nodes[1].Window != nil {
		t.Fatalf("nodes %+v, window %+v", c.Pipeline.Nodes, w)
	}
}
