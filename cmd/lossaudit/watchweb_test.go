package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/metrics"
	"github.com/lossaudit/lossaudit/config"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns their paths and the certificate, for a client to trust.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lossaudit watch test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, cert
}

// The endpoints behind a web configuration file with TLS and basic
// authentication, asked by a real HTTP client over a real socket: no or a
// wrong password is 401, plain HTTP is refused, the right credentials get
// the endpoints.
func TestWatchWebConfigTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, cert := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("right-password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webFile := filepath.Join(dir, "web.yml")
	yml := "tls_server_config:\n  cert_file: " + certFile + "\n  key_file: " + keyFile + "\nbasic_auth_users:\n  auditor: " + string(hash) + "\n"
	if err := os.WriteFile(webFile, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	wc, err := readWebConfig(webFile)
	if err != nil || !wc.tls || !wc.auth {
		t.Fatalf("readWebConfig = %+v, %v; want TLS and authentication", wc, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	w := &watcher{interval: time.Minute, m: metrics.New(), now: time.Now}
	srv, _ := serveWatch(ln, w.handler(), webFile, slog.NewTextHandler(&logs, nil))
	defer srv.Close()

	pool := x509.NewCertPool()
	pool.AddCert(cert)
	// Generous: the toolkit checks an unknown user against a bcrypt hash
	// of cost 10 too (so that timing does not tell users apart), which
	// takes seconds under the race detector.
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(url, user, pass string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), nil
	}
	base := "https://" + ln.Addr().String()
	for _, tt := range []struct {
		name, url, user, pass string
		code                  int
		body                  string
	}{
		{"no credentials", base + "/healthz", "", "", 401, ""},
		{"wrong password", base + "/healthz", "auditor", "wrong", 401, ""},
		{"unknown user", base + "/metrics", "root", "right-password", 401, ""},
		{"right credentials, health", base + "/healthz", "auditor", "right-password", 200, "baseline"},
		{"right credentials, metrics", base + "/metrics", "auditor", "right-password", 200, "lossaudit_"},
		{"right credentials, no report yet", base + "/loss-report.csv", "auditor", "right-password", 503, "no step"},
	} {
		code, body, err := get(tt.url, tt.user, tt.pass)
		if err != nil || code != tt.code || !strings.Contains(body, tt.body) {
			t.Errorf("%s: %d %q (err %v), want %d with %q", tt.name, code, body, err, tt.code, tt.body)
		}
	}
	// After a step that found a lost key, every report shows it only to
	// the right credentials.
	res := cleanResultForFinish()
	res.Rows = []finding.Row{{Kind: finding.Missing, Stage: finding.StageOutput, Input: "a", Key: []byte("customer-4711"),
		Topic: "topicA", Offset: 7, Timestamp: 1700000000000, ExpectedTS: 1700000000000}}
	w.completed(res, time.Now())
	for _, path := range []string{"/report.json", "/loss-report.csv", "/"} {
		if code, body, err := get(base+path, "", ""); err != nil || code != 401 || strings.Contains(body, "customer-4711") {
			t.Errorf("%s without credentials: %d (err %v), shows the key: %v; want 401 without it", path, code, err, strings.Contains(body, "customer-4711"))
		}
		if code, body, err := get(base+path, "auditor", "right-password"); err != nil || code != 200 || !strings.Contains(body, "customer-4711") {
			t.Errorf("%s with the right credentials: %d (err %v), want 200 naming the lost key:\n%.300s", path, code, err, body)
		}
	}
	// Plain HTTP, even with the right credentials, gets nothing served.
	plain := &http.Client{Timeout: 2 * time.Minute}
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/healthz", nil)
	req.SetBasicAuth("auditor", "right-password")
	if resp, err := plain.Do(req); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || strings.Contains(string(body), "baseline") {
			t.Errorf("plain HTTP to the TLS listener: %d %q, want refused", resp.StatusCode, body)
		}
	}
	if strings.Contains(logs.String(), "right-password") || strings.Contains(logs.String(), string(hash)) {
		t.Errorf("the log shows a password or its hash:\n%s", logs.String())
	}
}

// A web configuration file that exporter-toolkit rejects is a
// configuration error naming the key.
func TestWatchWebConfigErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ name, yml, want string }{
		{"plain-text password", "basic_auth_users:\n  auditor: secret-password\n", "watch.web_config_file"},
		{"missing certificate", "tls_server_config:\n  cert_file: " + dir + "/none.pem\n  key_file: " + dir + "/none-key.pem\n", "watch.web_config_file"},
		{"not YAML", "tls_server_config: [\n", "watch.web_config_file"},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yml")
		if err := os.WriteFile(p, []byte(tt.yml), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := readWebConfig(p)
		var ce *config.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want a configuration error naming %s", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-password") {
			t.Errorf("%s: the error shows the password: %v", tt.name, err)
		}
	}
}

// watch warns at start when its endpoints are reachable from other hosts
// without TLS or authentication, and only then.
func TestWatchExposureWarning(t *testing.T) {
	tcp := func(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 9464} }
	for _, tt := range []struct {
		name string
		addr net.Addr
		web  webConfig
		want string
	}{
		{"loopback, plain", tcp("127.0.0.1"), webConfig{}, ""},
		{"IPv6 loopback, plain", tcp("::1"), webConfig{}, ""},
		{"all interfaces, plain", tcp("0.0.0.0"), webConfig{}, "without TLS or authentication"},
		{"all IPv6 interfaces, plain", tcp("::"), webConfig{}, "without TLS or authentication"},
		{"another address, TLS only", tcp("10.1.2.3"), webConfig{tls: true}, "without authentication"},
		{"another address, authentication only", tcp("10.1.2.3"), webConfig{auth: true}, "without TLS"},
		{"another address, both", tcp("10.1.2.3"), webConfig{tls: true, auth: true}, ""},
	} {
		got := tt.web.exposure(tt.addr)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: warning %q, want %q", tt.name, got, tt.want)
		}
	}
}
