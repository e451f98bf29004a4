package kread

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pemFiles writes a self-signed certificate, its key, a second unrelated
// key and a file with no certificate into a temp dir.
func pemFiles(t *testing.T) (dir, cert, key, otherKey, junk string) {
	t.Helper()
	dir = t.TempDir()
	newKey := func() (*ecdsa.PrivateKey, []byte) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return k, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	k, kPEM := newKey()
	_, otherPEM := newKey()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "t"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return dir, write("cert.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		write("key.pem", kPEM), write("other.pem", otherPEM), write("junk.pem", []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n"))
}

func TestTLSConfig(t *testing.T) {
	dir, cert, key, otherKey, junk := pemFiles(t)
	cfg, err := TLSConfig(TLSFiles{})
	if err != nil || cfg.RootCAs != nil || len(cfg.Certificates) != 0 || cfg.InsecureSkipVerify || cfg.MinVersion != tls.VersionTLS12 {
		t.Errorf("no files: %+v, %v; want system roots, TLS 1.2, verification on", cfg, err)
	}
	cfg, err = TLSConfig(TLSFiles{CAFile: cert, CertFile: cert, KeyFile: key, InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootCAs == nil || len(cfg.Certificates) != 1 || !cfg.InsecureSkipVerify {
		t.Errorf("roots=%v certs=%d insecure=%v", cfg.RootCAs != nil, len(cfg.Certificates), cfg.InsecureSkipVerify)
	}
	tests := []struct {
		name  string
		files TLSFiles
		file  TLSFile
		msg   string // %D% is dir
	}{
		{"missing CA", TLSFiles{CAFile: dir + "/nope.pem"}, TLSCAFile, "cannot read %D%/nope.pem: no such file or directory"},
		{"CA without a certificate", TLSFiles{CAFile: junk}, TLSCAFile, "%D%/junk.pem holds no PEM certificate"},
		{"key without certificate", TLSFiles{KeyFile: key}, TLSCertFile, "a client certificate needs a certificate file as well as the key file %D%/key.pem"},
		{"certificate without key", TLSFiles{CertFile: cert}, TLSKeyFile, "a client certificate needs a key file as well as the certificate file %D%/cert.pem"},
		{"key of another certificate", TLSFiles{CertFile: cert, KeyFile: otherKey}, TLSCertFile,
			"loading the client certificate %D%/cert.pem with the key %D%/other.pem: private key does not match public key"},
	}
	for _, tc := range tests {
		_, err := TLSConfig(tc.files)
		var te *TLSError
		if !errors.As(err, &te) {
			t.Errorf("%s: err = %v, want a *TLSError", tc.name, err)
			continue
		}
		if want := strings.ReplaceAll(tc.msg, "%D%", dir); te.File != tc.file || err.Error() != want {
			t.Errorf("%s: got %s %q, want %s %q", tc.name, te.File, err, tc.file, want)
		}
	}
}

func TestSASL(t *testing.T) {
	tests := []struct {
		mech, user, pass string
		name             string // want Mechanism.Name(), "" for nil
		field            SASLField
		msg              string
	}{
		{mech: ""},
		{mech: "PLAIN", user: "u", pass: "p", name: "PLAIN"},
		{mech: "SCRAM-SHA-256", user: "u", pass: "p", name: "SCRAM-SHA-256"},
		{mech: "scram-sha-512", user: "u", pass: "p", name: "SCRAM-SHA-512"},
		{mech: "GSSAPI", field: SASLMechanismField, msg: `"GSSAPI" is not one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512`},
		{mech: "SCRAM-SHA-256", user: "bell\a", pass: "p", field: SASLUsernameField,
			msg: "SCRAM-SHA-256: the username holds U+0007, which SASLprep (RFC 4013) does not allow"},
		{mech: "SCRAM-SHA-512", user: "u", pass: "s3cr\u0007t", field: SASLPasswordField,
			msg: "SCRAM-SHA-512: the password holds a character that SASLprep (RFC 4013) does not allow (a control or unassigned character)"},
	}
	for _, tc := range tests {
		m, err := SASL(tc.mech, tc.user, tc.pass)
		if tc.msg != "" {
			var se *SASLError
			if !errors.As(err, &se) || se.Field != tc.field || err.Error() != tc.msg {
				t.Errorf("%q: err = %v, want %s %q", tc.mech, err, tc.field, tc.msg)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr") {
				t.Errorf("%q: error leaks the password: %v", tc.mech, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.mech, err)
			continue
		}
		var name string
		if m != nil {
			name = m.Name()
		}
		if name != tc.name {
			t.Errorf("%q: mechanism %q, want %q", tc.mech, name, tc.name)
		}
	}
}
