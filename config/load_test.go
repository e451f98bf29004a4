package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// globalFlagSet mimics the CLI's persistent flags.
func globalFlagSet(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.StringSlice("brokers", nil, "")
	fs.String("csv", "", "")
	fs.String("json", "", "")
	fs.String("from", "", "")
	fs.String("to", "", "")
	fs.String("store-dir", "", "")
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
		c.Kafka.Timeout != 30*time.Second || c.Audit.SettleTimeout != 60*time.Second ||
		c.Schema.SchemasTopic != "_schemas" || c.Report.JSON != "" || c.Kafka.TLS.Enabled || c.Kafka.SASL.Mechanism != "" {
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

// TestFlagOfAnotherTypeIsIgnored: a command's own boolean --json (scan)
// must not be taken for the report path.
func TestFlagOfAnotherTypeIsIgnored(t *testing.T) {
	clearEnv(t)
	fs := pflag.NewFlagSet("scan", pflag.ContinueOnError)
	fs.Bool("json", false, "")
	if err := fs.Parse([]string{"--json"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{Flags: fs})
	if err != nil {
		t.Fatal(err)
	}
	if c.Report.JSON != "" {
		t.Errorf("report.json = %q, want empty", c.Report.JSON)
	}
}

func TestBadInput(t *testing.T) {
	certPEM, keyPEM := pemPair(t)
	tests := []struct {
		name     string
		file     string            // YAML; %DIR% is replaced by a temp dir
		files    map[string]string // extra files in that dir
		env      map[string]string
		flags    []string
		pipeline bool   // the error comes from ValidatePipeline
		key      string // want Error.Key (%DIR% replaced)
		msg      string // want substring of Error() (%DIR% replaced)
	}{
		{name: "unknown top-level key", file: "kafak:\n  brokers: [a:1]\n", key: "kafak.brokers", msg: "unknown key"},
		{name: "unknown nested key", file: "kafka:\n  tls:\n    enabeld: true\n", key: "kafka.tls.enabeld", msg: "(did you mean kafka.tls.enabled?)"},
		{name: "unknown key, nothing close", file: "report:\n  html: r.html\n", key: "report.html", msg: "unknown key in %DIR%/audit.yaml"},
		{name: "scalar for a section", file: "kafka:\n  tls: true\n", key: "kafka.tls", msg: "must be a mapping"},
		{name: "unknown input key", file: "pipeline:\n  inputs:\n    - {name: a, topic: t}\n    - {name: b, topic: u, keyformat: avro}\n",
			key: "pipeline.inputs[1].keyformat", msg: "unknown key"},
		{name: "bad YAML", file: "kafka: [\n", key: "%DIR%/audit.yaml", msg: "invalid YAML"},
		{name: "missing config file", file: "-", key: "%DIR%/nope.yaml", msg: "no such file"},
		{name: "broker without port", file: "kafka:\n  brokers: [localhost]\n", key: "kafka.brokers[0]", msg: `"localhost" is not a host:port address`},
		{name: "broker port out of range", file: "kafka:\n  brokers: [\"ok:9092\", \"h:99999\"]\n", key: "kafka.brokers[1]", msg: `port "99999"`},
		{name: "broker from env", env: map[string]string{"LOSSAUDIT_KAFKA_BROKERS": "h1:9092,h2"}, key: "kafka.brokers[1]", msg: `"h2" is not a host:port`},
		{name: "broker from flag", flags: []string{"--brokers", ":9092"}, key: "kafka.brokers[0]", msg: "empty host"},
		{name: "no brokers", env: map[string]string{"LOSSAUDIT_KAFKA_BROKERS": ""}, key: "kafka.brokers", msg: "no broker"},
		{name: "unknown SASL mechanism", file: "kafka:\n  sasl: {mechanism: GSSAPI, username: u}\n", key: "kafka.sasl.mechanism",
			msg: `"GSSAPI" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{name: "SASL without user", file: "kafka:\n  sasl: {mechanism: PLAIN}\n", key: "kafka.sasl.username", msg: "must be set when kafka.sasl.mechanism is PLAIN"},
		{name: "unreadable CA file", file: "kafka:\n  tls: {enabled: true, ca_file: %DIR%/missing.pem}\n", key: "kafka.tls.ca_file",
			msg: "cannot read %DIR%/missing.pem: no such file or directory"},
		{name: "JKS CA file", file: "kafka:\n  tls: {enabled: true, ca_file: %DIR%/trust.jks}\n",
			files: map[string]string{"trust.jks": "\xfe\xed\xfe\xed\x00\x00\x00\x02"}, key: "kafka.tls.ca_file", msg: "Java key store (JKS)"},
		{name: "PKCS12 cert file", file: "kafka:\n  tls: {enabled: true, cert_file: %DIR%/client.p12, key_file: %DIR%/key.pem}\n",
			files: map[string]string{"client.p12": "\x30\x82\x01\x00", "key.pem": keyPEM}, key: "kafka.tls.cert_file", msg: "PKCS12"},
		{name: "cert without key", file: "kafka:\n  tls: {enabled: true, cert_file: %DIR%/c.pem}\n",
			files: map[string]string{"c.pem": certPEM}, key: "kafka.tls.key_file", msg: "needs both"},
		{name: "encrypted key", file: "kafka:\n  tls: {enabled: true, cert_file: %DIR%/c.pem, key_file: %DIR%/k.pem}\n",
			files: map[string]string{"c.pem": certPEM, "k.pem": "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"},
			key:   "kafka.tls.key_file", msg: "encrypted private key"},
		{name: "unreadable client.properties", file: "kafka:\n  client_properties: %DIR%/client.properties\n",
			key: "kafka.client_properties", msg: "cannot read %DIR%/client.properties"},
		{name: "bad RFC 3339 from flag", flags: []string{"--from", "2026-11-29 10:00"}, key: "window.from", msg: "not an RFC 3339 time"},
		{name: "bad RFC 3339 to env", env: map[string]string{"LOSSAUDIT_WINDOW_TO": "yesterday"}, key: "window.to", msg: `"yesterday" is not an RFC 3339`},
		{name: "from not before to", flags: []string{"--from", "2026-11-29T10:00:00Z", "--to", "2026-11-29T09:00:00Z"}, key: "window.from", msg: "is not before window.to"},
		{name: "bad duration", file: "kafka:\n  timeout: soon\n", key: "kafka.timeout", msg: "not a duration"},
		{name: "duration without unit", file: "audit:\n  settle_timeout: 60\n", key: "audit.settle_timeout", msg: "no unit"},
		{name: "bad int", env: map[string]string{"LOSSAUDIT_KAFKA_CONCURRENCY": "many"}, key: "kafka.concurrency", msg: "not a whole number"},
		{name: "zero concurrency", file: "kafka:\n  concurrency: 0\n", key: "kafka.concurrency", msg: "at least 1"},
		{name: "fetch size out of int32", file: "kafka:\n  fetch_max_bytes: 4294967296\n", key: "kafka.fetch_max_bytes", msg: "out of range"},
		{name: "bad bool", env: map[string]string{"LOSSAUDIT_KAFKA_TLS_ENABLED": "yes please"}, key: "kafka.tls.enabled", msg: "not a boolean"},
		{name: "empty store dir", flags: []string{"--store-dir", ""}, key: "store.dir", msg: "must not be empty"},
		{name: "registry not a URL", file: "schema:\n  registry_url: localhost:8081\n", key: "schema.registry_url", msg: "not an http"},
		{name: "avsc dir missing", file: "schema:\n  avsc_dir: %DIR%/avsc\n", key: "schema.avsc_dir", msg: "no such file"},
		{name: "bad key_format", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  inputs:\n    - {name: a, topic: ta}\n    - {name: b, topic: tb, key_format: json}\n",
			key:  "pipeline.inputs[1].key_format", msg: `config: pipeline.inputs[1].key_format: "json" is not one of string, avro, bytes`},
		{name: "duplicate input name", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  inputs:\n    - {name: a, topic: ta}\n    - {name: a, topic: tb}\n",
			key:  "pipeline.inputs[1].name", msg: `"a" is already the name of pipeline.inputs[0]`},
		{name: "empty input name", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  inputs:\n    - {topic: ta}\n",
			key:  "pipeline.inputs[0].name", msg: "must not be empty"},
		{name: "empty topic", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  inputs:\n    - {name: a}\n",
			key:  "pipeline.inputs[0].topic", msg: "must not be empty"},
		{name: "no inputs", pipeline: true, file: "pipeline:\n  application_id: app\n  output: out\n", key: "pipeline.inputs", msg: "at least one"},
		{name: "no application id", pipeline: true, file: "pipeline:\n  output: out\n", key: "pipeline.application_id", msg: "must be set"},
		{name: "missing topology file", pipeline: true,
			file: "pipeline:\n  application_id: app\n  output: out\n  topology_file: %DIR%/topo.txt\n  inputs:\n    - {name: a, topic: ta}\n",
			key:  "pipeline.topology_file", msg: "cannot read %DIR%/topo.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			dir := t.TempDir()
			sub := func(s string) string { return strings.ReplaceAll(s, "%DIR%", dir) }
			for name, content := range tc.files {
				writeFile(t, dir, name, content)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			opts := LoadOptions{Flags: globalFlagSet(t, tc.flags...)}
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
				t.Fatalf("no error, want one naming %s", sub(tc.key))
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %q is not a *config.Error", err, err)
			}
			if ce.Key != sub(tc.key) {
				t.Errorf("Key = %q, want %q (error: %v)", ce.Key, sub(tc.key), err)
			}
			if !strings.Contains(err.Error(), sub(tc.msg)) {
				t.Errorf("error %q does not contain %q", err, sub(tc.msg))
			}
			t.Log(err)
			if !strings.HasPrefix(err.Error(), "config: ") {
				t.Errorf("error %q does not start with config:", err)
			}
		})
	}
}
