package app

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lossaudit/lossaudit/config"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, all PEM.
type testPKI struct {
	caPEM, serverCertPEM, serverKeyPEM, clientCertPEM, clientKeyPEM string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	encode := func(typ string, der []byte) string {
		return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	keyPEM := func(k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return encode("PRIVATE KEY", der)
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lossaudit test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, usage x509.ExtKeyUsage) (string, string) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return encode("CERTIFICATE", der), keyPEM(k)
	}
	p := testPKI{caPEM: encode("CERTIFICATE", caDER)}
	p.serverCertPEM, p.serverKeyPEM = leaf(2, x509.ExtKeyUsageServerAuth)
	p.clientCertPEM, p.clientKeyPEM = leaf(3, x509.ExtKeyUsageClientAuth)
	return p
}

// metadata connects with the reader options KafkaOptions derives from the
// loaded configuration (its TLS configuration and SASL mechanism, built by
// kread) and asks for topic t.
func metadata(t *testing.T, c *config.Config) error {
	t.Helper()
	o, err := KafkaOptions(c)
	if err != nil {
		t.Fatalf("KafkaOptions: %v", err)
	}
	transport := &kafka.Transport{TLS: o.TLS, SASL: o.SASL, DialTimeout: 5 * time.Second}
	defer transport.CloseIdleConnections()
	client := &kafka.Client{Addr: kafka.TCP(o.Brokers...), Timeout: 5 * time.Second, Transport: transport}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{"t"}})
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 || resp.Topics[0].Name != "t" || resp.Topics[0].Error != nil {
		t.Fatalf("metadata: unexpected topics %+v", resp.Topics)
	}
	return nil
}

// TestConnectsToCluster proves that what client.properties and the YAML
// file say, loaded by config and built into TLS and SASL objects by
// KafkaOptions, really authenticates against an in-process cluster with mutual
// TLS and SCRAM-SHA-512, and that wrong settings really fail.
func TestConnectsToCluster(t *testing.T) {
	pki := newTestPKI(t)
	serverCert, err := tls.X509KeyPair([]byte(pki.serverCertPEM), []byte(pki.serverKeyPEM))
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	clientCAs.AppendCertsFromPEM([]byte(pki.caPEM))
	tlsCluster, err := kfake.NewCluster(
		kfake.NumBrokers(1), kfake.SeedTopics(1, "t"),
		kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "auditor", "s3cret-512"),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer tlsCluster.Close()
	plainCluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"),
		kfake.EnableSASL(), kfake.Superuser("PLAIN", "plainuser", "plain-pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer plainCluster.Close()

	dir := t.TempDir()
	writeFile(t, dir, "ca.pem", pki.caPEM)
	writeFile(t, dir, "client.pem", pki.clientCertPEM+pki.clientKeyPEM)
	props := func(extra string) string {
		return "bootstrap.servers=" + strings.Join(tlsCluster.ListenAddrs(), ",") + "\n" +
			"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n" +
			"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n" +
			"   username=\"auditor\" password=\"s3cret-512\";\n" +
			"ssl.truststore.type=PEM\nssl.truststore.location=" + dir + "/ca.pem\n" +
			"ssl.keystore.type=PEM\nssl.keystore.location=" + dir + "/client.pem\n" + extra
	}
	// kfake closes the connection when authentication fails; a real broker
	// answers with a SASL error first.
	const authFailed = "EOF|SASL"
	tests := []struct {
		name    string
		props   string // client.properties, "" for none
		yaml    string
		env     map[string]string
		wantErr string // |-separated alternatives, one must be in the connection error; "" for success
	}{
		{name: "client.properties: SASL_SSL, SCRAM-SHA-512, mutual TLS", props: props("")},
		{name: "env password wins and is checked", props: props(""),
			env: map[string]string{"LOSSAUDIT_KAFKA_SASL_PASSWORD": "wrong"}, wantErr: authFailed},
		{name: "YAML mechanism wins and is checked", props: props(""),
			yaml: "kafka:\n  sasl: {mechanism: SCRAM-SHA-256}\n", wantErr: authFailed},
		{name: "server certificate is verified without the CA", props: props(""),
			yaml: "kafka:\n  tls: {ca_file: \"\"}\n", wantErr: "certificate"},
		{name: "client certificate is required and comes from the keystore", props: props(""),
			yaml: "kafka:\n  tls: {cert_file: \"\", key_file: \"\"}\n", wantErr: "certificate|EOF"},
		{name: "YAML only: SASL_PLAINTEXT PLAIN",
			yaml: "kafka:\n  brokers: [\"" + plainCluster.ListenAddrs()[0] + "\"]\n  sasl: {mechanism: PLAIN, username: plainuser, password: plain-pw}\n"},
		{name: "YAML only: wrong PLAIN password",
			yaml:    "kafka:\n  brokers: [\"" + plainCluster.ListenAddrs()[0] + "\"]\n  sasl: {mechanism: PLAIN, username: plainuser, password: nope}\n",
			wantErr: authFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			yaml := tc.yaml
			if tc.props != "" {
				t.Setenv("LOSSAUDIT_KAFKA_CLIENT_PROPERTIES", writeFile(t, t.TempDir(), "client.properties", tc.props))
			}
			c, err := config.Load(config.LoadOptions{File: writeFile(t, t.TempDir(), "audit.yaml", yaml+"\n")})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			err = metadata(t, c)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("connecting: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("connected, want an error containing %q", tc.wantErr)
			case tc.wantErr != "" && !containsAny(err.Error(), strings.Split(tc.wantErr, "|")):
				t.Fatalf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// writeFile writes content to name under dir and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// clearEnv unsets every LOSSAUDIT_ variable but the test bed's for the
// test's duration.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "LOSSAUDIT_") && !config.IsTestbedEnv(name) {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
}

// TestKafkaOptionsErrors: problems building the TLS configuration or the
// SASL mechanism are *config.Error naming the key where it was set.
func TestKafkaOptionsErrors(t *testing.T) {
	pki := newTestPKI(t)
	other := newTestPKI(t)
	dir := t.TempDir()
	cert := writeFile(t, dir, "cert.pem", pki.clientCertPEM)
	wrongKey := writeFile(t, dir, "wrong.pem", other.clientKeyPEM)
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want string // %F% is the YAML file
	}{
		{name: "key of another certificate",
			yaml: "kafka:\n  tls:\n    enabled: true\n    cert_file: " + cert + "\n    key_file: " + wrongKey + "\n",
			want: "%F%:4: kafka.tls.cert_file: loading the client certificate " + cert + " with the key " + wrongKey + ": private key does not match public key"},
		{name: "SCRAM username SASLprep rejects", yaml: "kafka:\n  sasl: {mechanism: SCRAM-SHA-256}\n",
			env:  map[string]string{"LOSSAUDIT_KAFKA_SASL_USERNAME": "bell\a"},
			want: "LOSSAUDIT_KAFKA_SASL_USERNAME: SCRAM-SHA-256: the username holds U+0007, which SASLprep (RFC 4013) does not allow"},
		{name: "SCRAM password SASLprep rejects, never shown", yaml: "kafka:\n  sasl:\n    mechanism: SCRAM-SHA-512\n    username: u\n    password: \"top\\asecret\"\n",
			want: "%F%:5: kafka.sasl.password: SCRAM-SHA-512: the password holds a character that SASLprep (RFC 4013) does not allow (a control or unassigned character)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			file := writeFile(t, t.TempDir(), "audit.yaml", tc.yaml)
			c, err := config.Load(config.LoadOptions{File: file})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			_, err = KafkaOptions(c)
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v (%T), want *config.Error", err, err)
			}
			if want := strings.ReplaceAll(tc.want, "%F%", file); err.Error() != want {
				t.Errorf("got  %s\nwant %s", err, want)
			}
		})
	}
}
