package config

import (
	"fmt"
	"strings"
	"testing"
)

func TestRedactedHidesSecrets(t *testing.T) {
	c := &Config{
		Kafka: Kafka{Brokers: []string{"h:9092"}, SASL: SASL{Mechanism: "PLAIN", Username: "alice", Password: "s3cr3t-kafka"}},
		Schema: Schema{RegistryURL: "https://reg:pw-in-url@registry:8081", RegistryUsername: "reg",
			RegistryPassword: "s3cr3t-registry"},
		Pipeline: Pipeline{Inputs: []Input{{Name: "a", Topic: "ta"}}},
	}
	outputs := map[string]string{
		"Redacted": c.Redacted(),
		"%v":       fmt.Sprintf("%v", c),
		"%+v":      fmt.Sprintf("%+v", c),
		"%#v":      fmt.Sprintf("%#v", c),
		"%v Kafka": fmt.Sprintf("%v", c.Kafka),
	}
	for name, out := range outputs {
		for _, secret := range []string{"s3cr3t-kafka", "s3cr3t-registry", "pw-in-url"} {
			if strings.Contains(out, secret) {
				t.Errorf("%s output contains %q:\n%s", name, secret, out)
			}
		}
	}
	r := c.Redacted()
	for _, want := range []string{"kafka.sasl.username = alice\n", "kafka.sasl.password = ***\n",
		"schema.registry_password = ***\n", "schema.registry_url = https://reg:***@registry:8081\n", "kafka.brokers = h:9092\n"} {
		if !strings.Contains(r, want) {
			t.Errorf("Redacted lacks %q:\n%s", want, r)
		}
	}
	if empty := (&Config{}).Redacted(); strings.Contains(empty, "***") {
		t.Errorf("empty passwords rendered as ***:\n%s", empty)
	}
}
