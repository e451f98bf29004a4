package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// streamsSecret is a password in the application's properties file: no
// error or rendering of the configuration may hold it.
const streamsSecret = "streams-pw-K8d3Qz7r"

// TestStreamsProperties: pipeline.streams_properties gives
// pipeline.dead_letter_topic and pipeline.application_id from the Kafka
// Streams application's own properties file when they are not set, parsed
// as Java's Properties.load does; a value set elsewhere that differs is an
// error naming both; errors name the file and line and never show the
// file's other values (its passwords).
func TestStreamsProperties(t *testing.T) {
	const dlq = "errors.dead.letter.queue.topic.name"
	jaas := `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="` + streamsSecret + "\";\n"
	tests := []struct {
		name  string
		props string
		yaml  string // the YAML file's pipeline section, after application_id-less defaults
		env   map[string]string
		// wantDLQ, wantApp: the loaded keys; want: the error, exactly
		// (%P% is the properties file, %Y% the YAML file).
		wantDLQ, wantApp string
		key, want        string
	}{
		{name: "both from the file", props: "# app\napplication.id=orders\n" + jaas + dlq + "=orders-dlq\n",
			wantDLQ: "orders-dlq", wantApp: "orders"},
		{name: "Java syntax: separators, continuation, escapes, comments", props: "application.id : ord\\\n    ers\n! " + dlq + "=commented\n" +
			"errors.dead.letter.queue.topic.name \\u006frders-dl\\q\n" + "ssl.keystore.password=" + streamsSecret + "\n",
			wantDLQ: "orders-dlq", wantApp: "orders"},
		{name: "a password in ISO-8859-1", props: "application.id=orders\nssl.key.password=caf\xe9-" + streamsSecret + "\n",
			wantApp: "orders"},
		{name: "no dead-letter queue", props: "application.id=orders\n" + dlq + "=  \n", wantApp: "orders"},
		{name: "the YAML file's values win when they agree", props: "application.id=orders\n" + dlq + "=orders-dlq\n",
			yaml: "  application_id: orders\n  dead_letter_topic: orders-dlq\n", wantDLQ: "orders-dlq", wantApp: "orders"},
		{name: "an empty value is unset", props: "application.id=orders\n" + dlq + "=orders-dlq\n",
			yaml: "  application_id: \"\"\n  dead_letter_topic: \"\"\n", wantDLQ: "orders-dlq", wantApp: "orders"},
		{name: "the configuration contradicts the application", props: "application.id=orders\n" + jaas + dlq + "=orders-dlq\n",
			yaml: "  dead_letter_topic: other-dlq\n", key: "pipeline.dead_letter_topic",
			want: `%Y%:4: pipeline.dead_letter_topic: is "other-dlq", but the application's properties file %P% sets errors.dead.letter.queue.topic.name="orders-dlq" on line 3: the audit would not be of that application's configuration; remove one of them`},
		{name: "the environment contradicts the application", props: "application.id=orders\n",
			env: map[string]string{"LOSSAUDIT_PIPELINE_APPLICATION_ID": "billing"}, key: "pipeline.application_id",
			want: `LOSSAUDIT_PIPELINE_APPLICATION_ID: is "billing", but the application's properties file %P% sets application.id="orders" on line 1: the audit would not be of that application's configuration; remove one of them`},
		{name: "a config provider", props: jaas + dlq + "=${env:DLQ}\n", key: dlq,
			want: "%P%:2: errors.dead.letter.queue.topic.name: is taken from a config provider (${...}), which lossaudit does not resolve; set pipeline.dead_letter_topic"},
		{name: "not a topic name", props: "application.id=orders\n" + dlq + "=orders dlq\n", key: dlq,
			want: `%P%:2: errors.dead.letter.queue.topic.name: "orders dlq" holds ' ', which a topic name cannot (only ASCII letters, digits, '.', '_' and '-')`},
		{name: "a malformed escape after a password", props: jaas + "ssl.key.password=" + streamsSecret + "\\u12\n",
			want: "%P%:2: value of ssl.key.password: malformed \\uxxxx escape"},
		{name: "a binary file", props: "\xac\xed\x00\x05" + streamsSecret,
			want: "%P%: is not a text file of key=value lines; pipeline.streams_properties names the Kafka Streams application's properties file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			dir := t.TempDir()
			props := writeFile(t, dir, "streams.properties", tc.props)
			yaml := writeFile(t, dir, "audit.yaml", "kafka:\n  brokers: [h1:9092]\npipeline:\n"+tc.yaml+"  streams_properties: "+props+"\n")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := Load(LoadOptions{File: yaml})
			sub := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "%P%", props), "%Y%", yaml) }
			if tc.want != "" {
				var ce *Error
				if !errors.As(err, &ce) || err.Error() != sub(tc.want) || ce.Key != tc.key {
					t.Fatalf("error\n got %v (key %q)\nwant %s (key %q)", err, keyOfErr(err), sub(tc.want), tc.key)
				}
				if strings.Contains(err.Error(), streamsSecret) {
					t.Errorf("the error shows the file's password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Pipeline.DeadLetterTopic != tc.wantDLQ || c.Pipeline.ApplicationID != tc.wantApp {
				t.Errorf("dead_letter_topic %q, application_id %q; want %q, %q", c.Pipeline.DeadLetterTopic, c.Pipeline.ApplicationID, tc.wantDLQ, tc.wantApp)
			}
			for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
				if strings.Contains(s, streamsSecret) {
					t.Errorf("the configuration shows the file's password: %s", s)
				}
			}
		})
	}
}

// TestStreamsPropertiesSource: a value the application's properties file
// gave is located there when a later check rejects it.
func TestStreamsPropertiesSource(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	props := writeFile(t, dir, "streams.properties", "application.id=orders\n")
	yaml := writeFile(t, dir, "audit.yaml", "kafka:\n  brokers: [h1:9092]\npipeline:\n  streams_properties: "+props+"\n")
	c, err := Load(LoadOptions{File: yaml})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Locate(errorf("pipeline.application_id", "is wrong"))
	if want := props + ":1: application.id: is wrong"; err.Error() != want {
		t.Errorf("located as %q, want %q", err, want)
	}
}

func keyOfErr(err error) string {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Key
	}
	return ""
}
