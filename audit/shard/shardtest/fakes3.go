// Package shardtest serves an in-process S3 server on loopback for the
// sharded audit's tests (gofakes3 over an in-memory backend).
package shardtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// AccessKey and SecretKey are the credentials the server accepts: a
// request signed with another access key id is refused (403
// AccessDenied). The secret is not checked (gofakes3 does not verify
// signatures); tests assert it never appears in messages.
const (
	AccessKey = "lossaudit-test-key"
	SecretKey = "lossaudit-test-secret-do-not-print"
)

// Server is a running fake S3 server.
type Server struct {
	// URL is the endpoint, http://127.0.0.1:port.
	URL string
	// IgnoreConditions, when set, drops If-None-Match from PUTs (a server
	// without conditional writes).
	IgnoreConditions atomic.Bool
}

// Start serves a fake S3 server with the given buckets until the test
// ends.
func Start(tb testing.TB, buckets ...string) *Server {
	tb.Helper()
	be := s3mem.New()
	for _, b := range buckets {
		if err := be.CreateBucket(b); err != nil {
			tb.Fatal(err)
		}
	}
	h := gofakes3.New(be).Server()
	s := &Server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if !strings.Contains(auth, "Credential="+AccessKey+"/") {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusForbidden)
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
			return
		}
		if r.Header.Get("X-Amz-Content-Sha256") == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" {
			// gofakes3 decodes aws-chunked bodies of a PUT but not of a
			// multipart upload's parts (minio-go signs both so over
			// plain HTTP): decoded here for every request.
			body, err := unchunk(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Length", strconv.Itoa(len(body)))
			r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
			r.Header.Del("X-Amz-Decoded-Content-Length")
			r.Header.Del("Content-Encoding")
		}
		if s.IgnoreConditions.Load() {
			r.Header.Del("If-None-Match")
		}
		h.ServeHTTP(w, r)
	}))
	tb.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// unchunk decodes an aws-chunked body: hex-size;chunk-signature=...\r\n
// data \r\n, ending with a chunk of size 0.
func unchunk(r io.Reader) ([]byte, error) {
	br := bufio.NewReader(r)
	var out []byte
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("aws-chunked: %w", err)
		}
		size, _, _ := strings.Cut(strings.TrimSpace(line), ";")
		n, err := strconv.ParseInt(size, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("aws-chunked: chunk size %q", size)
		}
		if n == 0 {
			return out, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, fmt.Errorf("aws-chunked: %w", err)
		}
		out = append(out, buf[:n]...)
	}
}

// Env sets the AWS environment of the server's credentials for the test.
func (s *Server) Env(tb testing.TB) {
	for k, v := range s.Environ() {
		tb.Setenv(k, v)
	}
}

// Environ is the AWS environment a process needs to reach the server.
func (s *Server) Environ() map[string]string {
	return map[string]string{"AWS_ACCESS_KEY_ID": AccessKey, "AWS_SECRET_ACCESS_KEY": SecretKey, "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": s.URL}
}
