package kafka

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Security makes Start build a secured cluster. Each node then has three
// listeners: CLIENT (SASL_SSL with SCRAM-SHA-512; Node.BrokerPort, what
// Bootstrap returns), MTLS (SSL with client certificates; Node.MTLSPort,
// BootstrapMTLS, also the inter-broker listener) and CONTROLLER (SSL with
// client certificates). The StandardAuthorizer is on with
// allow.everyone.if.no.acl.found=false; the only super users are the
// harness (User:HarnessPrincipal, by certificate on MTLS) and the brokers
// themselves (User:BrokerPrincipal). A certificate's principal is its
// common name (ssl.principal.mapping.rules). Certificates are generated at
// start under Options.Dir/tls (ECDSA P-256, one CA, PEM key and trust
// stores); SCRAM users are created when the storage is formatted. Every
// node logs the authorizer's decisions (kafka.authorizer.logger: denied
// operations at INFO) to authorizer.log in its directory (AuthorizerLog).
type Security struct {
	// SCRAM lists the SCRAM-SHA-512 users to create: name -> password.
	SCRAM map[string]string
}

// Principals of the secured cluster that are super users.
const (
	HarnessPrincipal = "admin"  // the test harness, by client certificate
	BrokerPrincipal  = "broker" // the brokers and controllers, by certificate
)

// pki is the certificate authority of a secured cluster and the files it wrote.
type pki struct {
	dir    string
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	caFile string // PEM of the CA certificate (the trust store)

	mu      sync.Mutex
	serial  int64
	clients map[string][2]string // principal -> cert file, key file
}

// newPKI creates a CA in dir and writes its certificate to dir/ca.pem.
func newPKI(dir string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the test CA's key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "lossaudit testbed CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating the test CA: %w", err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the test CA: %w", err)
	}
	p := &pki{dir: dir, ca: ca, caKey: key, caFile: filepath.Join(dir, "ca.pem"), serial: 1, clients: map[string][2]string{}}
	if err := os.WriteFile(p.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, fmt.Errorf("writing %s: %w", p.caFile, err)
	}
	return p, nil
}

// issue signs a certificate for common name cn (usable by servers on
// 127.0.0.1 and localhost, and by clients) and writes name.crt, name.key
// and name.pem (key then certificate: a Kafka PEM key store).
func (p *pki) issue(cn string) (certFile, keyFile, storeFile string, err error) {
	p.mu.Lock()
	p.serial++
	serial := p.serial
	p.mu.Unlock()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", fmt.Errorf("generating a key for %s: %w", cn, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", "", fmt.Errorf("signing a certificate for %s: %w", cn, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", "", fmt.Errorf("encoding the key of %s: %w", cn, err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
	base := filepath.Join(p.dir, cn)
	for _, f := range []struct {
		path string
		data []byte
	}{{base + ".crt", certPEM}, {base + ".key", keyPEM}, {base + ".pem", append(append([]byte{}, keyPEM...), certPEM...)}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return "", "", "", fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return base + ".crt", base + ".key", base + ".pem", nil
}

// Secured reports whether the cluster was started with Options.Security.
func (c *Cluster) Secured() bool { return c.pki != nil }

// CAFile returns the PEM file of the secured cluster's CA ("" when not secured).
func (c *Cluster) CAFile() string {
	if c.pki == nil {
		return ""
	}
	return c.pki.caFile
}

// BootstrapMTLS returns the addresses of the mutual-TLS listener of a
// secured cluster (nil when not secured).
func (c *Cluster) BootstrapMTLS() []string {
	if c.pki == nil {
		return nil
	}
	var out []string
	for _, n := range c.Nodes {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", n.MTLSPort))
	}
	return out
}

// ClientCert returns a PEM certificate and key (and their concatenation, a
// Kafka PEM key store) for principal, signed by the secured cluster's CA,
// creating them on the first call for that principal.
func (c *Cluster) ClientCert(principal string) (certFile, keyFile string, err error) {
	if c.pki == nil {
		return "", "", errors.New("client certificate: the cluster is not secured")
	}
	c.pki.mu.Lock()
	f, ok := c.pki.clients[principal]
	c.pki.mu.Unlock()
	if ok {
		return f[0], f[1], nil
	}
	certFile, keyFile, _, err = c.pki.issue(principal)
	if err != nil {
		return "", "", err
	}
	c.pki.mu.Lock()
	c.pki.clients[principal] = [2]string{certFile, keyFile}
	c.pki.mu.Unlock()
	return certFile, keyFile, nil
}

// TLSConfig returns a client TLS configuration trusting the secured
// cluster's CA and presenting the certificate of principal (none when
// principal is "").
func (c *Cluster) TLSConfig(principal string) (*tls.Config, error) {
	if c.pki == nil {
		return nil, errors.New("TLS configuration: the cluster is not secured")
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.pki.ca)
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if principal != "" {
		certFile, keyFile, err := c.ClientCert(principal)
		if err != nil {
			return nil, err
		}
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("loading the certificate of %s: %w", principal, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// HarnessOpts returns the franz-go options that connect as the harness:
// for a secured cluster the super user HarnessPrincipal on the mutual-TLS
// listener, else plain Bootstrap.
func (c *Cluster) HarnessOpts() ([]kgo.Opt, error) {
	if c.pki == nil {
		return []kgo.Opt{kgo.SeedBrokers(c.Bootstrap()...)}, nil
	}
	cfg, err := c.TLSConfig(HarnessPrincipal)
	if err != nil {
		return nil, err
	}
	return []kgo.Opt{kgo.SeedBrokers(c.BootstrapMTLS()...), kgo.DialTLSConfig(cfg)}, nil
}

// NewAdmin connects an admin client as the harness (HarnessOpts).
func (c *Cluster) NewAdmin() (*Admin, error) {
	opts, err := c.HarnessOpts()
	if err != nil {
		return nil, err
	}
	return NewAdmin(nil, opts...)
}

// AuthorizerLog returns what every node's authorizer logged (nodes in
// order), for a secured cluster.
func (c *Cluster) AuthorizerLog() (string, error) {
	if c.pki == nil {
		return "", errors.New("authorizer log: the cluster is not secured")
	}
	var b strings.Builder
	for _, n := range c.Nodes {
		data, err := os.ReadFile(n.AuthorizerLogFile())
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("reading the authorizer log of node %d: %w", n.ID, err)
		}
		b.Write(data)
	}
	return b.String(), nil
}

// AuthorizerLogFile is where a secured node's authorizer logs its decisions.
func (n *Node) AuthorizerLogFile() string { return filepath.Join(n.Dir, "authorizer.log") }

// secureProps returns the server.properties entries of node n of a secured cluster.
func (c *Cluster) secureProps(n *Node) map[string]string {
	return map[string]string{
		"listeners": fmt.Sprintf("CLIENT://127.0.0.1:%d,MTLS://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d",
			n.BrokerPort, n.MTLSPort, n.ControllerPort),
		"advertised.listeners":                                fmt.Sprintf("CLIENT://127.0.0.1:%d,MTLS://127.0.0.1:%d", n.BrokerPort, n.MTLSPort),
		"listener.security.protocol.map":                      "CLIENT:SASL_SSL,MTLS:SSL,CONTROLLER:SSL",
		"inter.broker.listener.name":                          "MTLS",
		"controller.listener.names":                           "CONTROLLER",
		"sasl.enabled.mechanisms":                             "SCRAM-SHA-512",
		"listener.name.client.scram-sha-512.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
		"ssl.client.auth":                                     "required",
		"listener.name.client.ssl.client.auth":                "none",
		"ssl.keystore.type":                                   "PEM",
		"ssl.keystore.location":                               filepath.Join(c.pki.dir, BrokerPrincipal+".pem"),
		"ssl.truststore.type":                                 "PEM",
		"ssl.truststore.location":                             c.pki.caFile,
		"ssl.principal.mapping.rules":                         "RULE:^CN=([a-zA-Z0-9._-]+)$/$1/,DEFAULT",
		"authorizer.class.name":                               "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                         "User:" + HarnessPrincipal + ";User:" + BrokerPrincipal,
		"allow.everyone.if.no.acl.found":                      "false",
	}
}

// scramArgs returns the StorageTool arguments creating the SCRAM users.
func (c *Cluster) scramArgs() []string {
	if c.opts.Security == nil {
		return nil
	}
	names := make([]string, 0, len(c.opts.Security.SCRAM))
	for name := range c.opts.Security.SCRAM {
		names = append(names, name)
	}
	sort.Strings(names)
	var args []string
	for _, name := range names {
		args = append(args, "--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", name, c.opts.Security.SCRAM[name]))
	}
	return args
}

// authorizerLog4j returns the log4j 1 and log4j2 entries that write the
// authorizer's decisions of node n to its AuthorizerLogFile.
func authorizerLog4j(n *Node) (v1, v2 string) {
	f := n.AuthorizerLogFile()
	v1 = "log4j.logger.kafka.authorizer.logger=INFO, authorizer\n" +
		"log4j.additivity.kafka.authorizer.logger=false\n" +
		"log4j.appender.authorizer=org.apache.log4j.FileAppender\n" +
		"log4j.appender.authorizer.File=" + f + "\n" +
		"log4j.appender.authorizer.layout=org.apache.log4j.PatternLayout\n" +
		"log4j.appender.authorizer.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
	v2 = "appender.authorizer.type = File\n" +
		"appender.authorizer.name = AUTHORIZER\n" +
		"appender.authorizer.fileName = " + f + "\n" +
		"appender.authorizer.layout.type = PatternLayout\n" +
		"appender.authorizer.layout.pattern = [%d] %p %m (%c)%n\n" +
		"logger.authorizer.name = kafka.authorizer.logger\n" +
		"logger.authorizer.level = info\n" +
		"logger.authorizer.additivity = false\n" +
		"logger.authorizer.appenderRef.authorizer.ref = AUTHORIZER\n"
	return v1, v2
}
