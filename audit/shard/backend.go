package shard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Store is the storage the shards share (docs/scale.md#storage): a
// directory (dirStore) or an S3 bucket and prefix (s3Store). Names are
// slash-separated and relative to the store's root ("manifest",
// "run-<run>/map-0.done").
type Store interface {
	// Create starts writing the object name; nothing is visible under
	// name until the writer's Commit succeeds, and then all of it is.
	Create(ctx context.Context, name string) (Writer, error)
	// PutIfAbsent writes data as the object name atomically unless name
	// exists: then it fails with an error wrapping os.ErrExist and the
	// object is unchanged. Of two concurrent calls at most one succeeds.
	PutIfAbsent(ctx context.Context, name string, data []byte) error
	// Open reads the object name; a missing object is an error wrapping
	// os.ErrNotExist.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Exists reports whether the object name exists.
	Exists(ctx context.Context, name string) (bool, error)
	// List returns every name under the root (a directory's own name
	// with a trailing slash, so that an empty one is seen too).
	List(ctx context.Context) ([]string, error)
	// RemoveAll removes the object name and everything under name + "/".
	RemoveAll(ctx context.Context, name string) error
	// Describe names the object name for messages: a path, or
	// s3://bucket/key (never a credential).
	Describe(name string) string
}

// Writer is an object being written: Commit makes it visible whole,
// Abort drops it.
type Writer interface {
	io.Writer
	Commit() error
	Abort()
}

// StorageError says the shared storage cannot be used as given (an S3
// bucket that does not exist, credentials it refuses, a server that
// ignores conditional writes): a problem of the configuration, not of the
// run.
type StorageError struct{ Msg string }

func (e *StorageError) Error() string { return e.Msg }

// S3Config are the S3 backend's settings beyond the s3://bucket/prefix
// address; credentials and the region come from the standard AWS
// environment (docs/reference.md).
type S3Config struct {
	// Endpoint is the S3 endpoint URL (default: $AWS_ENDPOINT_URL_S3,
	// $AWS_ENDPOINT_URL, then AWS S3).
	Endpoint string
	// PathStyle addresses the bucket in the path (MinIO and the like)
	// instead of the host name.
	PathStyle bool
}

// OpenStore opens the shared storage dir: s3://bucket/prefix is an S3
// bucket (s3 its settings), anything else a directory, created if needed.
func OpenStore(ctx context.Context, dir string, s3 S3Config) (Store, error) {
	if rest, ok := strings.CutPrefix(dir, "s3://"); ok {
		return openS3(ctx, rest, s3)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("shard: creating %s: %w", dir, err)
	}
	return dirStore(dir), nil
}

// dirStore is a directory on a file system every shard mounts (a
// ReadWriteMany volume): a write goes to a temporary file that is fsynced
// and renamed (or, to create it only if absent, hard-linked) into place,
// then the directory is fsynced.
type dirStore string

func (d dirStore) path(name string) string { return filepath.Join(string(d), filepath.FromSlash(name)) }

func (d dirStore) Describe(name string) string { return d.path(name) }

// fileWriter writes a temporary file renamed into place by Commit.
type fileWriter struct {
	path, tmp string
	f         *os.File
	w         *bufio.Writer
}

func (d dirStore) Create(_ context.Context, name string) (Writer, error) {
	p := d.path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("shard: creating %s: %w", filepath.Dir(p), err)
	}
	suffix, err := newAttempt()
	if err != nil {
		return nil, err
	}
	tmp := p + ".tmp-" + suffix
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("shard: creating %s: %w", tmp, err)
	}
	return &fileWriter{path: p, tmp: tmp, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (w *fileWriter) Write(b []byte) (int, error) { return w.w.Write(b) }

// finish flushes, fsyncs and closes the temporary file.
func (w *fileWriter) finish() error {
	err := w.w.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (w *fileWriter) Commit() error {
	err := w.finish()
	if err == nil {
		err = os.Rename(w.tmp, w.path)
	}
	if err != nil {
		os.Remove(w.tmp)
		return fmt.Errorf("shard: writing %s: %w", w.path, err)
	}
	return syncDir(filepath.Dir(w.path))
}

func (w *fileWriter) Abort() {
	w.f.Close()
	os.Remove(w.tmp)
}

func (d dirStore) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	wr, err := d.Create(ctx, name)
	if err != nil {
		return err
	}
	w := wr.(*fileWriter)
	w.Write(data)
	err = w.finish()
	if err == nil {
		// A link fails when the name exists: the first writer wins.
		err = os.Link(w.tmp, w.path)
	}
	os.Remove(w.tmp)
	if err != nil {
		return fmt.Errorf("shard: writing %s: %w", w.path, err)
	}
	return syncDir(filepath.Dir(w.path))
}

func (d dirStore) Open(_ context.Context, name string) (io.ReadCloser, error) {
	f, err := os.Open(d.path(name))
	if err != nil {
		return nil, fmt.Errorf("shard: opening %s: %w", d.path(name), err)
	}
	return f, nil
}

func (d dirStore) Exists(_ context.Context, name string) (bool, error) {
	_, err := os.Stat(d.path(name))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("shard: %w", err)
}

func (d dirStore) List(context.Context) ([]string, error) {
	var out []string
	err := filepath.WalkDir(string(d), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(string(d), p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if e.IsDir() {
			rel += "/"
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("shard: listing %s: %w", string(d), err)
	}
	return out, nil
}

func (d dirStore) RemoveAll(_ context.Context, name string) error {
	p := d.path(name)
	if err := os.RemoveAll(p); err != nil {
		return fmt.Errorf("shard: removing %s: %w", p, err)
	}
	return syncDir(filepath.Dir(p))
}

// syncDir fsyncs a directory, so that a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("shard: opening %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("shard: syncing %s: %w", dir, err)
	}
	return nil
}

// joinName joins the parts of an object name.
func joinName(parts ...string) string { return path.Join(parts...) }
