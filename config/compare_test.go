package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestLoadCompare(t *testing.T) {
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
