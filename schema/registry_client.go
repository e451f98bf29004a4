package schema

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// RegistryOptions configure the Confluent-compatible Schema Registry client.
type RegistryOptions struct {
	// URL is the registry's base URL, e.g. https://sr:8081. Credentials in
	// it (https://user:pass@sr) are moved to basic auth and never printed.
	URL string
	// Username and Password enable HTTP basic auth when Username is set.
	Username, Password string
	// CAFile is a PEM file of CA certificates to trust for https (added to
	// TLS.RootCAs, or to a fresh pool when TLS is nil).
	CAFile string
	// TLS is the client TLS configuration (client certificates etc.).
	TLS *tls.Config
	// Timeout bounds each HTTP request (default 10s).
	Timeout time.Duration
	// Retries is how many times a request is retried after a connection
	// error, a timeout, HTTP 429 or 5xx (default 3; negative: none).
	Retries int
	// Backoff is the wait before the first retry, doubled each time up to
	// 5s (default 250ms).
	Backoff time.Duration
	// Client replaces the HTTP client (TLS, CAFile and Timeout then come
	// from it; Timeout still bounds each request through its context).
	Client *http.Client
}

// ApplyProperties fills the options left empty from Confluent client
// properties: schema.registry.url, basic.auth.user.info ("user:password",
// used when basic.auth.credentials.source is USER_INFO or unset) and
// schema.registry.ssl.ca.location (a PEM file).
func (o *RegistryOptions) ApplyProperties(props map[string]string) {
	if o.URL == "" {
		o.URL = strings.TrimSpace(props["schema.registry.url"])
	}
	src := strings.ToUpper(strings.TrimSpace(props["basic.auth.credentials.source"]))
	if o.Username == "" && (src == "" || src == "USER_INFO") {
		if ui := props["basic.auth.user.info"]; ui != "" {
			u, p, _ := strings.Cut(ui, ":")
			o.Username, o.Password = u, p
		}
	}
	if o.CAFile == "" {
		o.CAFile = strings.TrimSpace(props["schema.registry.ssl.ca.location"])
	}
}

// RegistryClient reads schemas by id from a Confluent-compatible Schema
// Registry (GET /schemas/ids/{id}). It is a Source; safe for concurrent use.
type RegistryClient struct {
	base    *url.URL // without user info
	user    string
	pass    string
	client  *http.Client
	timeout time.Duration
	retries int
	backoff time.Duration
}

// NewRegistryClient checks the options and builds a client. It does not
// contact the registry.
func NewRegistryClient(o RegistryOptions) (*RegistryClient, error) {
	u, err := url.Parse(strings.TrimRight(o.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("schema registry URL %q is not an http(s) URL", redactURL(o.URL))
	}
	c := &RegistryClient{user: o.Username, pass: o.Password, timeout: o.Timeout, retries: o.Retries, backoff: o.Backoff}
	if u.User != nil {
		if c.user == "" {
			c.user = u.User.Username()
			c.pass, _ = u.User.Password()
		}
		u.User = nil
	}
	c.base = u
	if c.timeout <= 0 {
		c.timeout = 10 * time.Second
	}
	if c.retries == 0 {
		c.retries = 3
	} else if c.retries < 0 {
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = 250 * time.Millisecond
	}
	c.client = o.Client
	if c.client == nil {
		tc := o.TLS
		if o.CAFile != "" {
			pem, err := os.ReadFile(o.CAFile)
			if err != nil {
				return nil, fmt.Errorf("reading schema registry CA file: %w", err)
			}
			if tc == nil {
				tc = &tls.Config{MinVersion: tls.VersionTLS12}
			} else {
				tc = tc.Clone()
			}
			if tc.RootCAs == nil {
				tc.RootCAs = x509.NewCertPool()
			}
			if !tc.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("schema registry CA file %s holds no PEM certificate", o.CAFile)
			}
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tc
		c.client = &http.Client{Transport: tr, Timeout: c.timeout}
	}
	return c, nil
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

// String names the registry (without credentials).
func (c *RegistryClient) String() string { return "schema registry " + c.base.String() }

func (c *RegistryClient) registryBacked() {}

type registryResponse struct {
	Schema     string `json:"schema"`
	SchemaType string `json:"schemaType"`
	ErrorCode  int    `json:"error_code"`
	Message    string `json:"message"`
}

// Schema fetches the schema of id. 404 is ErrNotFound; connection errors,
// timeouts, 429 and 5xx are retried with backoff and end as ErrUnavailable;
// 401/403 is a credentials error (never naming the password).
func (c *RegistryClient) Schema(ctx context.Context, id uint32) (string, error) {
	body, err := c.fetch(ctx, c.base.JoinPath("schemas", "ids", strconv.FormatUint(uint64(id), 10)).String(), id)
	if err != nil {
		return "", err
	}
	var r registryResponse
	if err := json.Unmarshal(body, &r); err != nil || r.Schema == "" {
		return "", fmt.Errorf("%s answered schema id %d without a schema", c, id)
	}
	if r.SchemaType != "" && !strings.EqualFold(r.SchemaType, "AVRO") {
		return "", &NotAvroError{ID: id, Type: r.SchemaType}
	}
	return r.Schema, nil
}

// Subjects lists the subject/versions id is registered under
// (GET /schemas/ids/{id}/versions), with the same errors as Schema.
func (c *RegistryClient) Subjects(ctx context.Context, id uint32) ([]SubjectVersion, error) {
	body, err := c.fetch(ctx, c.base.JoinPath("schemas", "ids", strconv.FormatUint(uint64(id), 10), "versions").String(), id)
	if err != nil {
		return nil, err
	}
	var l []struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("%s answered the versions of schema id %d with malformed JSON: %w", c, id, err)
	}
	out := make([]SubjectVersion, 0, len(l))
	for _, sv := range l {
		out = append(out, SubjectVersion{Subject: sv.Subject, Version: sv.Version})
	}
	return out, nil
}

// fetch GETs u with retries and returns the body of a 200 answer.
func (c *RegistryClient) fetch(ctx context.Context, u string, id uint32) ([]byte, error) {
	wait := c.backoff
	var last error
	for attempt := 0; ; attempt++ {
		body, retry, err := c.get(ctx, u, id)
		if err == nil || !retry {
			return body, err
		}
		last = err
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt >= c.retries {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, 5*time.Second)
	}
	return nil, fmt.Errorf("%s unreachable after %d attempts: %w: %w", c, c.retries+1, ErrUnavailable, last)
}

// get does one request; retry reports whether a failure may be retried.
func (c *RegistryClient) get(ctx context.Context, u string, id uint32) ([]byte, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, false, fmt.Errorf("building registry request: %w", err)
	}
	req.Header.Set("Accept", "application/vnd.schemaregistry.v1+json, application/json")
	if c.user != "" {
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL carries no secret, but keep messages short
		}
		var ua x509.UnknownAuthorityError
		var hn x509.HostnameError
		var cv *tls.CertificateVerificationError
		if errors.As(err, &ua) || errors.As(err, &hn) || errors.As(err, &cv) {
			return nil, false, fmt.Errorf("%s: TLS certificate not trusted (set the registry CA file): %w", c, err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", c.timeout)
		}
		return nil, true, fmt.Errorf("GET schema id %d: %w", id, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, true, fmt.Errorf("reading registry answer for schema id %d: %w", id, err)
	}
	var r registryResponse
	_ = json.Unmarshal(body, &r) // error bodies are informative only
	switch {
	case resp.StatusCode == http.StatusOK:
		return body, false, nil
	case resp.StatusCode == http.StatusNotFound:
		return nil, false, fmt.Errorf("schema id %d not found in registry %s: %w", id, c.base, ErrNotFound)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		who := "made without credentials"
		if c.user != "" {
			who = fmt.Sprintf("for user %q", c.user)
		}
		return nil, false, &RejectedError{fmt.Sprintf("%s rejected the request %s (HTTP %d): check schema.registry_username and schema.registry_password", c, who, resp.StatusCode)}
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return nil, true, fmt.Errorf("GET schema id %d: HTTP %d %s", id, resp.StatusCode, snippet(r.Message, body))
	}
	return nil, false, fmt.Errorf("%s answered schema id %d with HTTP %d %s", c, id, resp.StatusCode, snippet(r.Message, body))
}

func snippet(msg string, body []byte) string {
	if msg == "" {
		msg = string(body)
	}
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return strings.TrimSpace(msg)
}
