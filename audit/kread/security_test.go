package kread

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	fplain "github.com/twmb/franz-go/pkg/sasl/plain"
	fscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// selfSigned returns a server certificate for 127.0.0.1 and a client
// config trusting it.
func selfSigned(t *testing.T) (server *tls.Config, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kfake"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	return server, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

func TestReadOverTLSAndSASL(t *testing.T) {
	serverTLS, clientTLS := selfSigned(t)
	scram256, err := scram.Mechanism(scram.SHA256, "alice", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	scram512, err := scram.Mechanism(scram.SHA512, "alice", "s3cret")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		method    string // kfake superuser mechanism; "" = no SASL
		tls       bool
		mech      sasl.Mechanism
		fixture   kgo.Opt
		wrongPass sasl.Mechanism
	}{
		{name: "TLS only", tls: true},
		{name: "SASL PLAIN", method: "PLAIN", mech: plain.Mechanism{Username: "alice", Password: "s3cret"},
			fixture:   kgo.SASL(fplain.Auth{User: "alice", Pass: "s3cret"}.AsMechanism()),
			wrongPass: plain.Mechanism{Username: "alice", Password: "wrong"}},
		{name: "SASL SCRAM-SHA-256 over TLS", method: "SCRAM-SHA-256", tls: true, mech: scram256,
			fixture: kgo.SASL(fscram.Auth{User: "alice", Pass: "s3cret"}.AsSha256Mechanism())},
		{name: "SASL SCRAM-SHA-512", method: "SCRAM-SHA-512", mech: scram512,
			fixture: kgo.SASL(fscram.Auth{User: "alice", Pass: "s3cret"}.AsSha512Mechanism())},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(1, "sec")}
			var fixture []kgo.Opt
			if tc.method != "" {
				opts = append(opts, kfake.EnableSASL(), kfake.Superuser(tc.method, "alice", "s3cret"))
				fixture = append(fixture, tc.fixture)
			}
			if tc.tls {
				opts = append(opts, kfake.TLS(serverTLS))
				fixture = append(fixture, kgo.DialTLSConfig(clientTLS.Clone()))
			}
			c, err := kfake.NewCluster(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			m := newModel()
			p := newProducer(t, c, m, "sec", "", fixture...)
			p.send(0, "v1", "v2")

			mod := func(o *Options) {
				o.SASL = tc.mech
				if tc.tls {
					o.TLS = clientTLS.Clone()
				}
			}
			r := newReader(t, c, mod)
			col := newCollector()
			stats, err := r.Read(ctxT(t), []Range{{Topic: "sec", Partition: 0, From: 0, To: 2}}, ReadOptions{}, col.fn(nil))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := m.expect(0, 0, 2, false)
			checkRecords(t, TP{"sec", 0}, col.recs[TP{"sec", 0}], want)
			if stats[TP{"sec", 0}].Committed != 2 {
				t.Errorf("stats %+v", stats)
			}
			if tc.wrongPass != nil {
				bad := newReader(t, c, mod, func(o *Options) { o.SASL = tc.wrongPass; o.MaxRetries = 2 })
				_, err := bad.Partitions(ctxT(t), "sec")
				if err == nil {
					t.Fatal("a wrong password was accepted")
				}
				t.Logf("wrong password: %v", err)
				if strings.Contains(err.Error(), "wrong") {
					t.Errorf("the error shows the password: %v", err)
				}
			}
		})
	}
}
