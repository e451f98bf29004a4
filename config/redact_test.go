package config

import (
	"crypto/tls"
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

func TestTLSConfig(t *testing.T) {
	certPEM, keyPEM := pemPair(t)
	dir := t.TempDir()
	ca := writeFile(t, dir, "ca.pem", certPEM)
	key := writeFile(t, dir, "key.pem", keyPEM)
	junk := writeFile(t, dir, "junk.pem", "-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")

	if cfg, err := (Kafka{}).TLSConfig(); cfg != nil || err != nil {
		t.Errorf("disabled: got %v, %v; want nil, nil", cfg, err)
	}
	cfg, err := (Kafka{TLS: TLS{Enabled: true, CAFile: ca, CertFile: ca, KeyFile: key, InsecureSkipVerify: true}}).TLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || len(cfg.Certificates) != 1 || !cfg.InsecureSkipVerify || cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("unexpected TLS config: roots=%v certs=%d insecure=%v", cfg.RootCAs != nil, len(cfg.Certificates), cfg.InsecureSkipVerify)
	}
	cfg, err = (Kafka{TLS: TLS{Enabled: true}}).TLSConfig()
	if err != nil || cfg.RootCAs != nil || cfg.InsecureSkipVerify {
		t.Errorf("system roots: got %+v, %v", cfg, err)
	}
	if _, err := (Kafka{TLS: TLS{Enabled: true, CAFile: junk}}).TLSConfig(); err == nil || !strings.Contains(err.Error(), "kafka.tls.ca_file") {
		t.Errorf("junk CA: err = %v, want one naming kafka.tls.ca_file", err)
	}
	if _, err := (Kafka{TLS: TLS{Enabled: true, CertFile: ca, KeyFile: ca}}).TLSConfig(); err == nil {
		t.Error("cert without a key in the key file: no error")
	}
}

func TestMechanism(t *testing.T) {
	tests := []struct {
		mech, wantName string
		wantErr        bool
	}{
		{"", "", false},
		{"PLAIN", "PLAIN", false},
		{"SCRAM-SHA-256", "SCRAM-SHA-256", false},
		{"scram-sha-512", "SCRAM-SHA-512", false},
		{"GSSAPI", "", true},
	}
	for _, tc := range tests {
		m, err := (Kafka{SASL: SASL{Mechanism: tc.mech, Username: "u", Password: "p"}}).Mechanism()
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err = %v", tc.mech, err)
			continue
		}
		var name string
		if m != nil {
			name = m.Name()
		}
		if name != tc.wantName {
			t.Errorf("%q: mechanism %q, want %q", tc.mech, name, tc.wantName)
		}
	}
}
