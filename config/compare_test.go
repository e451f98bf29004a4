package config

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadCompare(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	ledger := writeFile(t, dir, "ledger.jsonl", "")
	props := writeFile(t, dir, "sink.properties", "bootstrap.servers=PLAINTEXT://dr1:9092,dr2:9092\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="s3cret";`+"\nschema.registry.url=http://not-taken:8081\n")
	file := writeFile(t, dir, "compare.yaml", `
kafka:
  brokers: ["src:9092"]
  concurrency: 3
sink_kafka:
  client_properties: `+props+`
compare:
  pairs:
    - {name: orders, source: orders, sink: dr.orders}
    - {source: payments, sink: dr.payments}
  match: header:msg-id
  grace: 90s
  ledger: `+ledger+`
  report_unexpected: true
`)
	c, err := Load(LoadOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateCompare(); err != nil {
		t.Fatal(err)
	}
	want := Compare{
		Pairs: []Pair{{"orders", "orders", "dr.orders"}, {"payments", "payments", "dr.payments"}},
		Match: "header:msg-id", Grace: 90 * time.Second, Ledger: ledger, ReportUnexpected: true,
	}
	if !reflect.DeepEqual(c.Compare, want) {
		t.Errorf("compare = %+v, want %+v", c.Compare, want)
	}
	s := c.Sink()
	if !c.HasSinkKafka || !reflect.DeepEqual(s.Brokers, []string{"dr1:9092", "dr2:9092"}) || s.SASL.Username != "mirror" || s.SASL.Password != "s3cret" || s.Concurrency != 3 {
		t.Errorf("sink = %+v", s)
	}
	if c.Schema.RegistryURL != "" {
		t.Errorf("the sink's client.properties set the schema registry to %q", c.Schema.RegistryURL)
	}
	if strings.Contains(c.Redacted(), "s3cret") {
		t.Error("Redacted shows the sink's password")
	}
}

func TestLoadCompareDefaultsAndEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvName("compare.pairs"), `[{name: a, source: ta, sink: tb}]`)
	c, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ValidateCompare(); err != nil {
		t.Fatal(err)
	}
	if c.Compare.Match != MatchRecord || c.Compare.Grace != DefaultGrace || c.HasSinkKafka {
		t.Errorf("defaults: %+v, sink set %v", c.Compare, c.HasSinkKafka)
	}
	if !reflect.DeepEqual(c.Sink(), c.Kafka) {
		t.Error("without sink_kafka the sink is the source cluster")
	}
	if want := []Pair{{"a", "ta", "tb"}}; !reflect.DeepEqual(c.Compare.Pairs, want) {
		t.Errorf("pairs from the environment = %+v", c.Compare.Pairs)
	}
}

func TestValidateCompareErrors(t *testing.T) {
	tests := []struct {
		name, yaml, key, msg string
	}{
		{"no pairs", "compare: {match: record}", "compare.pairs", "at least one"},
		{"unknown pair key", "compare: {pairs: [{source: a, sink: b, target: c}]}", "compare.pairs[0].target", "unknown key"},
		{"no sink", "compare: {pairs: [{source: a}]}", "compare.pairs[0].sink", "must name the sink"},
		{"same topic, same cluster", "compare: {pairs: [{source: a, sink: a}]}", "compare.pairs[0].sink", "same cluster"},
		{"duplicate names", "compare: {pairs: [{name: x, source: a, sink: b}, {name: x, source: c, sink: d}]}", "compare.pairs[1].name", "already"},
		{"bad match", "compare: {pairs: [{source: a, sink: b}], match: value}", "compare.match", "not one of"},
		{"field without path", "compare: {pairs: [{source: a, sink: b}], match: 'field:'}", "compare.match", "no field path"},
		{"negative grace", "compare: {pairs: [{source: a, sink: b}], grace: -1m}", "compare.grace", "negative"},
		{"missing ledger", "compare: {pairs: [{source: a, sink: b}], ledger: /nonexistent/l.jsonl}", "compare.ledger", "cannot read"},
		{"window", "window: {from: '2026-01-01T00:00:00Z'}\ncompare: {pairs: [{source: a, sink: b}]}", "window.from", "no window"},
		{"sink cluster without brokers", "sink_kafka: {sasl: {mechanism: PLAIN, username: u}}\ncompare: {pairs: [{source: a, sink: b}]}", "sink_kafka.brokers", "no broker"},
		{"bad sink broker", "sink_kafka: {brokers: ['dr1']}\ncompare: {pairs: [{source: a, sink: b}]}", "sink_kafka.brokers[0]", "host:port"},
	}
	clearEnv(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "c.yaml", tt.yaml)
			c, err := Load(LoadOptions{File: file})
			if err == nil {
				err = c.ValidateCompare()
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.msg) {
				t.Fatalf("error %v, want one about %s containing %q", err, tt.key, tt.msg)
			}
		})
	}
}

// TestCompareErrorsSayWhereTheValueWasWritten: problems with the compare
// and sink_kafka keys name the file and line, the variable or the flag
// that set the value, as the other keys' do.
func TestCompareErrorsSayWhereTheValueWasWritten(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	props := writeFile(t, dir, "sink.properties", "security.protocol=SASL_PLAINTEXT\nbootstrap.servers=dr1\n")
	tests := []struct {
		name, yaml string
		env        [2]string
		args       []string
		want       string // with FILE for the YAML file's path
	}{
		{name: "misspelt pair key", yaml: "compare:\n  pairs:\n    - name: a\n      sorce: x\n",
			want: "FILE:4: compare.pairs[0].sorce: unknown key (did you mean source?)"},
		{name: "misspelt sink key", yaml: "sink_kafka:\n  brokrs: [h:1]\n",
			want: "FILE:2: sink_kafka.brokrs: unknown key (did you mean sink_kafka.brokers?)"},
		{name: "pair not a mapping", yaml: "compare:\n  pairs:\n    - orders\n",
			want: `FILE:3: compare.pairs[0]: must be a mapping of name, source, sink, not the value "orders"`},
		{name: "negative grace", yaml: "compare:\n  pairs:\n    - {source: a, sink: b}\n  grace: -1m\n",
			want: "FILE:4: compare.grace: must not be negative, is -1m0s"},
		{name: "grace without unit", yaml: "compare:\n  grace: 300\n",
			want: `FILE:2: compare.grace: 300 has no unit; write a duration like "300s" or "2m"`},
		{name: "same topic on one cluster", yaml: "compare:\n  pairs:\n    - {source: a, sink: b}\n    - {source: c,\n       sink: c}\n",
			want: `FILE:5: compare.pairs[1].sink: "c" is the source topic on the same cluster; name the copy's topic (or set sink_kafka for another cluster)`},
		{name: "match from the environment", yaml: "compare:\n  pairs: [{source: a, sink: b}]\n", env: [2]string{"LOSSAUDIT_COMPARE_MATCH", "value"},
			want: `LOSSAUDIT_COMPARE_MATCH: "value" is not one of record, key, field:<avro path>, header:<name>`},
		{name: "ledger from the flag", yaml: "compare:\n  pairs: [{source: a, sink: b}]\n", args: []string{"--ledger", filepath.Join(dir, "none.jsonl")},
			want: "--ledger: cannot read " + filepath.Join(dir, "none.jsonl") + ": no such file or directory"},
		{name: "sink address in its client.properties", yaml: "sink_kafka:\n  client_properties: " + props + "\n",
			want: props + `:2: bootstrap.servers: "dr1" is not a host:port address: missing port in address`},
		{name: "sink mechanism from the environment", yaml: "sink_kafka:\n  brokers: [dr1:9092]\ncompare:\n  pairs: [{source: a, sink: a}]\n",
			env:  [2]string{"LOSSAUDIT_SINK_KAFKA_SASL_MECHANISM", "GSSAPI"},
			want: `LOSSAUDIT_SINK_KAFKA_SASL_MECHANISM: "GSSAPI" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{name: "sink username missing", yaml: "sink_kafka:\n  brokers: [dr1:9092]\n  sasl:\n    mechanism: PLAIN\ncompare:\n  pairs: [{source: a, sink: a}]\n",
			want: "FILE: sink_kafka.sasl.username: must be set when sink_kafka.sasl.mechanism is PLAIN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.env[0] != "" {
				t.Setenv(tt.env[0], tt.env[1])
			}
			file := writeFile(t, t.TempDir(), "c.yaml", tt.yaml)
			c, err := Load(LoadOptions{File: file, Flags: globalFlagSet(t, tt.args...)})
			if err == nil {
				err = c.ValidateCompare()
			}
			want := strings.ReplaceAll(tt.want, "FILE", file)
			if err == nil || err.Error() != want {
				t.Errorf("error\n got %v\nwant %s", err, want)
			}
		})
	}
}

// TestSinkClientPropertiesAreLocated: the values a sink's client.properties
// supplies are located there, and those set in the YAML file win.
func TestSinkClientPropertiesAreLocated(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	props := writeFile(t, dir, "sink.properties", "bootstrap.servers=dr1:9092\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"+
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="mirror" password="pw";`+"\n")
	file := writeFile(t, dir, "c.yaml", "sink_kafka:\n  client_properties: "+props+"\n  sasl:\n    username: yaml-user\n")
	c, err := Load(LoadOptions{File: file})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sink()
	if s.SASL.Username != "yaml-user" || s.SASL.Password != "pw" || s.SASL.Mechanism != "PLAIN" || !reflect.DeepEqual(s.Brokers, []string{"dr1:9092"}) {
		t.Errorf("sink = %+v", s)
	}
	if !reflect.DeepEqual(c.Kafka.Brokers, []string{"localhost:9092"}) || c.Kafka.SASL.Username != "" {
		t.Errorf("the sink's properties changed the source cluster: %+v", c.Kafka)
	}
	tests := []struct{ key, want string }{
		{"sink_kafka.brokers", props + ":1: bootstrap.servers: m"},
		{"sink_kafka.sasl.password", props + ":4: sasl.jaas.config: m"},
		{"sink_kafka.sasl.username", file + ":4: sink_kafka.sasl.username: m"},
	}
	for _, tc := range tests {
		if got := c.Locate(&Error{Key: tc.key, Msg: "m"}).Error(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.key, got, tc.want)
		}
	}
}

// TestCompareKeysAreAcceptedByEveryCommand: like the pipeline section, the
// compare and sink_kafka sections load without error for any command; only
// lossaudit compare validates them.
func TestCompareKeysAreAcceptedByEveryCommand(t *testing.T) {
	clearEnv(t)
	file := writeFile(t, t.TempDir(), "c.yaml", "sink_kafka:\n  brokers: [dr1:9092]\ncompare:\n  match: nonsense\n")
	c, err := Load(LoadOptions{File: file})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := c.ValidateCompare(); err == nil {
		t.Error("ValidateCompare accepted a comparison without pairs and with match nonsense")
	}
}
