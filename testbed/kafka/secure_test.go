package kafka

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"
	"testing"
)

// TestPKI: a certificate the test CA issues verifies against the CA for
// 127.0.0.1 as a server and a client, and its PEM key store holds the key
// then the certificate (what Kafka's ssl.keystore.type=PEM reads).
func TestPKI(t *testing.T) {
	p, err := newPKI(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, storeFile, err := p.issue("lossaudit")
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(p.ca)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1", KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("usage %v: %v", usage, err)
		}
	}
	if leaf.Subject.String() != "CN=lossaudit" {
		t.Errorf("subject %q, want CN=lossaudit (the principal mapping rule takes the CN)", leaf.Subject)
	}
	store, err := os.ReadFile(storeFile)
	if err != nil {
		t.Fatal(err)
	}
	if k, c := strings.Index(string(store), "-----BEGIN PRIVATE KEY-----"), strings.Index(string(store), "-----BEGIN CERTIFICATE-----"); k != 0 || c < 0 {
		t.Errorf("key store: key at %d, certificate at %d", k, c)
	}
}

// TestSecureConfigs: a secured cluster's nodes get the listeners, the
// authorizer and the authorizer's log; the storage format creates the
// SCRAM users.
func TestSecureConfigs(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{opts: Options{Dir: dir, Security: &Security{SCRAM: map[string]string{"b": "pw-b", "a": "pw-a"}}}}
	var err error
	if c.pki, err = newPKI(dir + "/tls"); err != nil {
		t.Fatal(err)
	}
	c.Nodes = []*Node{{ID: 1, BrokerPort: 1001, ControllerPort: 1002, MTLSPort: 1003, Dir: dir + "/node1"}}
	if err := c.writeConfigs(); err != nil {
		t.Fatal(err)
	}
	props, err := os.ReadFile(dir + "/node1/server.properties")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"listeners=CLIENT://127.0.0.1:1001,MTLS://127.0.0.1:1003,CONTROLLER://127.0.0.1:1002\n",
		"listener.security.protocol.map=CLIENT:SASL_SSL,MTLS:SSL,CONTROLLER:SSL\n",
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n",
		"allow.everyone.if.no.acl.found=false\n",
		"super.users=User:admin;User:broker\n",
	} {
		if !strings.Contains(string(props), want) {
			t.Errorf("server.properties lacks %q", want)
		}
	}
	for _, f := range []string{"log4j.properties", "log4j2.properties"} {
		b, err := os.ReadFile(dir + "/node1/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "kafka.authorizer.logger") || !strings.Contains(string(b), c.Nodes[0].AuthorizerLogFile()) {
			t.Errorf("%s does not log the authorizer to %s:\n%s", f, c.Nodes[0].AuthorizerLogFile(), b)
		}
	}
	if got, want := strings.Join(c.scramArgs(), " "), "--add-scram SCRAM-SHA-512=[name=a,password=pw-a] --add-scram SCRAM-SHA-512=[name=b,password=pw-b]"; got != want {
		t.Errorf("scram arguments %q, want %q", got, want)
	}
}
