package schema

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeRegistry speaks the Confluent API for GET /schemas/ids/{id}.
type fakeRegistry struct {
	schemas  map[string]string // id -> schema
	user     string
	pass     string
	fail5xx  atomic.Int32 // answer 500 this many more times
	delay    time.Duration
	requests atomic.Int32
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	if f.user != "" {
		u, p, ok := r.BasicAuth()
		if !ok || u != f.user || p != f.pass {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error_code":401,"message":"Unauthorized"}`))
			return
		}
	}
	if f.fail5xx.Add(-1) >= 0 {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"error_code":50001,"message":"Error in the backend data store"}`))
		return
	}
	id, ok := strings.CutPrefix(r.URL.Path, "/schemas/ids/")
	if sid, isVersions := strings.CutSuffix(id, "/versions"); isVersions {
		if _, found := f.schemas[sid]; found {
			_, _ = w.Write([]byte(`[{"subject":"orders-value","version":` + sid + `},{"subject":"audit-value","version":1}]`))
			return
		}
	}
	js, found := f.schemas[id]
	if !ok || !found || r.Method != http.MethodGet {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error_code":40403,"message":"Schema ` + id + ` not found"}`))
		return
	}
	b, _ := json.Marshal(map[string]string{"schema": js})
	_, _ = w.Write(b)
}

const tinySchema = `{"type":"record","name":"A","fields":[{"name":"k","type":"string"}]}`

func TestRegistryClient(t *testing.T) {
	tests := []struct {
		name     string
		reg      *fakeRegistry
		opts     RegistryOptions
		id       uint32
		want     string
		is       error  // errors.Is target
		contains string // in the error text
		requests int32
	}{
		{name: "found", reg: &fakeRegistry{schemas: map[string]string{"7": tinySchema}}, id: 7, want: tinySchema, requests: 1},
		{name: "404", reg: &fakeRegistry{}, id: 7, is: ErrNotFound, contains: "schema id 7 not found in registry", requests: 1},
		{name: "500 then success", reg: func() *fakeRegistry {
			f := &fakeRegistry{schemas: map[string]string{"7": tinySchema}}
			f.fail5xx.Store(2)
			return f
		}(), id: 7, want: tinySchema, requests: 3},
		{name: "500 forever", reg: func() *fakeRegistry {
			f := &fakeRegistry{}
			f.fail5xx.Store(100)
			return f
		}(), opts: RegistryOptions{Retries: 2}, id: 7, is: ErrUnavailable, contains: "HTTP 500", requests: 3},
		{name: "basic auth ok", reg: &fakeRegistry{schemas: map[string]string{"7": tinySchema}, user: "audit", pass: "s3cret-pw"},
			opts: RegistryOptions{Username: "audit", Password: "s3cret-pw"}, id: 7, want: tinySchema, requests: 1},
		{name: "bad credentials", reg: &fakeRegistry{schemas: map[string]string{"7": tinySchema}, user: "audit", pass: "right"},
			opts: RegistryOptions{Username: "audit", Password: "s3cret-pw"}, id: 7, contains: `rejected the request for user "audit" (HTTP 401)`, requests: 1},
		{name: "no credentials", reg: &fakeRegistry{user: "audit", pass: "right"}, id: 7, contains: "rejected the request made without credentials", requests: 1},
		{name: "slow server", reg: &fakeRegistry{delay: 2 * time.Second},
			opts: RegistryOptions{Timeout: 100 * time.Millisecond, Retries: 1}, id: 7, is: ErrUnavailable, contains: "no answer within 100ms", requests: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.reg)
			defer srv.Close()
			o := tt.opts
			o.URL = srv.URL
			if o.Backoff == 0 {
				o.Backoff = time.Millisecond
			}
			c, err := NewRegistryClient(o)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			js, err := c.Schema(context.Background(), tt.id)
			if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
				t.Errorf("lookup took %v", elapsed)
			}
			if got := tt.reg.requests.Load(); got != tt.requests {
				t.Errorf("registry saw %d requests, want %d", got, tt.requests)
			}
			if tt.want != "" {
				if err != nil || js != tt.want {
					t.Fatalf("got (%q, %v), want %q", js, err, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %q, want an error", js)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if tt.is == nil && (errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnavailable)) {
				t.Errorf("error %v must stop the chain, not fall back", err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
			if strings.Contains(err.Error(), "s3cret-pw") {
				t.Errorf("error %q leaks the password", err)
			}
		})
	}
}

func TestRegistryClientURLCredentialsAndTLS(t *testing.T) {
	reg := &fakeRegistry{schemas: map[string]string{"3": tinySchema}, user: "u", pass: "s3cret-pw"}
	srv := httptest.NewTLSServer(reg)
	defer srv.Close()

	// Without the CA the certificate is not trusted: a clear, non-retried error.
	c, err := NewRegistryClient(RegistryOptions{URL: strings.Replace(srv.URL, "https://", "https://u:s3cret-pw@", 1), Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.String(), "s3cret-pw") {
		t.Fatalf("String() %q leaks the password", c)
	}
	_, err = c.Schema(context.Background(), 3)
	if err == nil || !strings.Contains(err.Error(), "not trusted") || strings.Contains(err.Error(), "s3cret-pw") || errors.Is(err, ErrUnavailable) {
		t.Fatalf("untrusted TLS: err = %v", err)
	}

	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	o := RegistryOptions{}
	o.ApplyProperties(map[string]string{
		"schema.registry.url":             strings.Replace(srv.URL, "127.0.0.1", "localhost", 1),
		"basic.auth.credentials.source":   "USER_INFO",
		"basic.auth.user.info":            "u:s3cret-pw",
		"schema.registry.ssl.ca.location": ca,
	})
	o.URL = srv.URL // the test certificate is for 127.0.0.1
	c, err = NewRegistryClient(o)
	if err != nil {
		t.Fatal(err)
	}
	js, err := c.Schema(context.Background(), 3)
	if err != nil || js != tinySchema {
		t.Fatalf("with CA file and properties credentials: (%q, %v)", js, err)
	}
}

func TestRegistryClientNotAvroAndCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"schema":"syntax = \"proto3\";","schemaType":"PROTOBUF"}`))
	}))
	defer srv.Close()
	c, err := NewRegistryClient(RegistryOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var na *NotAvroError
	if _, err := c.Schema(context.Background(), 4); !errors.As(err, &na) || na.Type != "PROTOBUF" {
		t.Fatalf("err = %v, want NotAvroError", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Schema(ctx, 4); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v", err)
	}
	if _, err := NewRegistryClient(RegistryOptions{URL: "ftp://x"}); err == nil {
		t.Fatal("ftp URL accepted")
	}
}

func TestRegistryClientSubjects(t *testing.T) {
	reg := &fakeRegistry{schemas: map[string]string{"7": tinySchema}}
	srv := httptest.NewServer(reg)
	defer srv.Close()
	c, err := NewRegistryClient(RegistryOptions{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	r := NewRegistry(c)
	want := []SubjectVersion{{Subject: "orders-value", Version: 7}, {Subject: "audit-value", Version: 1}}
	for range 2 {
		got := r.Subjects(context.Background(), 7)
		if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("subjects = %v, want %v", got, want)
		}
	}
	if n := reg.requests.Load(); n != 1 {
		t.Fatalf("%d requests for two Subjects calls, want 1 (cached)", n)
	}
	if got := r.Subjects(context.Background(), 8); got != nil {
		t.Fatalf("subjects of unknown id = %v", got)
	}
}
