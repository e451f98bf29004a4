package shard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// s3PartSize is the part size of a streamed upload (a map's bucket): an
// object up to it is one PUT, a larger one a multipart upload of parts of
// it (one buffer of it per bucket being written, at most 10,000 parts: a
// bucket object is at most 80 GB; docs/scale.md#storage).
const s3PartSize = 8 << 20

// s3Store is an S3 bucket and prefix: a PUT is atomic per object (readers
// see the whole object or none), a streamed object is a multipart upload
// that appears when it completes, and create-if-absent is a conditional
// PUT (If-None-Match: *).
type s3Store struct {
	c              *minio.Client
	bucket, prefix string
	// endpoint is the server's URL for messages (never a credential).
	endpoint string
}

// openS3 opens s3://bucket/prefix (rest is bucket/prefix) and checks,
// before anything is read from Kafka, that the bucket exists and takes
// the credentials, and that the server honours conditional writes.
func openS3(ctx context.Context, rest string, cfg S3Config) (Store, error) {
	bucket, prefix, _ := strings.Cut(rest, "/")
	prefix = strings.Trim(prefix, "/")
	if bucket == "" {
		return nil, &StorageError{Msg: fmt.Sprintf("s3://%s names no bucket: give s3://bucket/prefix", rest)}
	}
	endpoint := cfg.Endpoint
	for _, env := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"} {
		if endpoint == "" {
			endpoint = os.Getenv(env)
		}
	}
	if endpoint == "" {
		endpoint = "https://s3.amazonaws.com"
	}
	if !strings.Contains(endpoint, "://") {
		endpoint = "https://" + endpoint
	}
	u, err := url.Parse(endpoint)
	switch {
	case err != nil:
		return nil, &StorageError{Msg: fmt.Sprintf("the S3 endpoint is not a URL: %v", errors.Unwrap(err))}
	case u.User != nil:
		return nil, &StorageError{Msg: "the S3 endpoint holds credentials: give them as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"}
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.Path != "" && u.Path != "/":
		return nil, &StorageError{Msg: fmt.Sprintf("the S3 endpoint %s://%s%s is not http(s)://host[:port]", u.Scheme, u.Host, u.Path)}
	}
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_DEFAULT_REGION")
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
	})
	c, err := minio.New(u.Host, &minio.Options{Creds: creds, Secure: u.Scheme == "https", Region: region, BucketLookup: lookup, MaxRetries: 3})
	if err != nil {
		return nil, &StorageError{Msg: fmt.Sprintf("the S3 endpoint %s: %v", u.Host, err)}
	}
	s := &s3Store{c: c, bucket: bucket, prefix: prefix, endpoint: u.Scheme + "://" + u.Host}
	ok, err := c.BucketExists(ctx, bucket)
	if err != nil {
		return nil, s.error("s3://"+bucket, err)
	}
	if !ok {
		return nil, &StorageError{Msg: fmt.Sprintf("s3://%s: the bucket does not exist at %s", bucket, s.endpoint)}
	}
	if err := s.probe(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// probe checks that the server refuses a second conditional PUT of one
// name: a server that ignores If-None-Match would let two index-0
// attempts both write a manifest (and split the run), so it is refused.
func (s *s3Store) probe(ctx context.Context) error {
	id, err := newAttempt()
	if err != nil {
		return err
	}
	name := "probe-" + id
	if err := s.PutIfAbsent(ctx, name, []byte("lossaudit")); err != nil {
		return err
	}
	defer s.c.RemoveObject(context.WithoutCancel(ctx), s.bucket, s.key(name), minio.RemoveObjectOptions{})
	if err := s.PutIfAbsent(ctx, name, []byte("lossaudit")); !errors.Is(err, os.ErrExist) {
		if err == nil {
			return &StorageError{Msg: fmt.Sprintf("the S3 server at %s ignores conditional writes (If-None-Match: *): a sharded audit needs them to write its manifest and markers once", s.endpoint)}
		}
		return err
	}
	return nil
}

func (s *s3Store) key(name string) string {
	if s.prefix == "" {
		return name
	}
	return s.prefix + "/" + name
}

func (s *s3Store) Describe(name string) string {
	return "s3://" + s.bucket + "/" + s.key(name)
}

// error names what failed with the object what: the credentials refused
// and a missing bucket are a *StorageError (a problem of the
// configuration), an endpoint that does not answer says so; the message
// is the server's code and message, never a credential.
func (s *s3Store) error(what string, err error) error {
	resp := minio.ToErrorResponse(err)
	switch resp.Code {
	case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "AllAccessDisabled":
		return &StorageError{Msg: fmt.Sprintf("%s: access denied by %s (%s: check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and the bucket's policy)", what, s.endpoint, resp.Code)}
	case "NoSuchBucket":
		return &StorageError{Msg: fmt.Sprintf("%s: the bucket does not exist at %s", what, s.endpoint)}
	case "":
		var ne net.Error
		var ue *url.Error
		if errors.As(err, &ne) || errors.As(err, &ue) {
			return fmt.Errorf("shard: %s: the S3 endpoint %s is unreachable: %w", what, s.endpoint, err)
		}
		return fmt.Errorf("shard: %s: %w", what, err)
	}
	return fmt.Errorf("shard: %s: %s (%s, HTTP %d)", what, resp.Message, resp.Code, resp.StatusCode)
}

// s3Writer writes an object: up to one part in memory, then one PUT; a
// larger object is streamed as a multipart upload from its first part on.
// The object appears when Commit completes it; a dropped upload is
// aborted (and one a killed process leaves is invisible: docs/scale.md).
type s3Writer struct {
	ctx  context.Context
	s    *s3Store
	name string
	buf  []byte
	// pw and done are the multipart upload once buf filled a part.
	pw   *io.PipeWriter
	done chan error
}

func (s *s3Store) Create(ctx context.Context, name string) (Writer, error) {
	return &s3Writer{ctx: ctx, s: s, name: name}, nil
}

func (w *s3Writer) Write(b []byte) (int, error) {
	if w.pw == nil {
		if len(w.buf)+len(b) <= s3PartSize {
			w.buf = append(w.buf, b...)
			return len(b), nil
		}
		pr, pw := io.Pipe()
		w.pw, w.done = pw, make(chan error, 1)
		first := w.buf
		w.buf = nil
		go func() {
			_, err := w.s.c.PutObject(w.ctx, w.s.bucket, w.s.key(w.name), io.MultiReader(bytes.NewReader(first), pr), -1,
				minio.PutObjectOptions{PartSize: s3PartSize, ContentType: "application/octet-stream"})
			pr.CloseWithError(err)
			w.done <- err
		}()
	}
	n, err := w.pw.Write(b)
	if err != nil {
		return n, w.s.error(w.s.Describe(w.name), err)
	}
	return n, nil
}

func (w *s3Writer) Commit() error {
	var err error
	if w.pw == nil {
		_, err = w.s.c.PutObject(w.ctx, w.s.bucket, w.s.key(w.name), bytes.NewReader(w.buf), int64(len(w.buf)), minio.PutObjectOptions{ContentType: "application/octet-stream"})
		w.buf = nil
	} else {
		w.pw.Close()
		err = <-w.done
	}
	if err != nil {
		return w.s.error(w.s.Describe(w.name), err)
	}
	return nil
}

// errAborted ends an upload that is dropped: the client aborts the
// multipart upload, nothing appears.
var errAborted = errors.New("shard: upload aborted")

func (w *s3Writer) Abort() {
	w.buf = nil
	if w.pw != nil {
		w.pw.CloseWithError(errAborted)
		<-w.done
	}
}

func (s *s3Store) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	for try := 0; ; try++ {
		opts := minio.PutObjectOptions{ContentType: "application/octet-stream"}
		opts.SetMatchETagExcept("*")
		_, err := s.c.PutObject(ctx, s.bucket, s.key(name), bytes.NewReader(data), int64(len(data)), opts)
		if err == nil {
			return nil
		}
		switch minio.ToErrorResponse(err).Code {
		case "PreconditionFailed":
			return fmt.Errorf("shard: writing %s: %w", s.Describe(name), os.ErrExist)
		case "ConditionalRequestConflict":
			// Another conditional write of the name is in flight (AWS S3
			// answers 409): ask again, the loser then sees 412.
			if try < 10 {
				t := time.NewTimer(time.Duration(try+1) * 100 * time.Millisecond)
				select {
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				case <-t.C:
				}
				continue
			}
		}
		return s.error(s.Describe(name), err)
	}
}

func (s *s3Store) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	o, err := s.c.GetObject(ctx, s.bucket, s.key(name), minio.GetObjectOptions{})
	if err == nil {
		_, err = o.Stat()
	}
	if err != nil {
		if o != nil {
			o.Close()
		}
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, fmt.Errorf("shard: opening %s: %w", s.Describe(name), os.ErrNotExist)
		}
		return nil, s.error(s.Describe(name), err)
	}
	return o, nil
}

func (s *s3Store) Exists(ctx context.Context, name string) (bool, error) {
	_, err := s.c.StatObject(ctx, s.bucket, s.key(name), minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return false, nil
	}
	return false, s.error(s.Describe(name), err)
}

func (s *s3Store) List(ctx context.Context) ([]string, error) {
	p := ""
	if s.prefix != "" {
		p = s.prefix + "/"
	}
	var out []string
	for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: p, Recursive: true}) {
		if o.Err != nil {
			return nil, s.error("listing "+s.Describe(""), o.Err)
		}
		out = append(out, strings.TrimPrefix(o.Key, p))
	}
	return out, nil
}

func (s *s3Store) RemoveAll(ctx context.Context, name string) error {
	objs := make(chan minio.ObjectInfo)
	var listErr error
	go func() {
		defer close(objs)
		objs <- minio.ObjectInfo{Key: s.key(name)}
		for o := range s.c.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.key(name) + "/", Recursive: true}) {
			if o.Err != nil {
				listErr = o.Err
				return
			}
			objs <- o
		}
	}()
	var first error
	for e := range s.c.RemoveObjects(ctx, s.bucket, objs, minio.RemoveObjectsOptions{}) {
		if first == nil && e.Err != nil && minio.ToErrorResponse(e.Err).Code != "NoSuchKey" {
			first = e.Err
		}
	}
	if first == nil {
		first = listErr
	}
	if first != nil {
		return s.error("removing "+s.Describe(name), first)
	}
	return nil
}
