package schema

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DirSource answers schema ids from a directory of .avsc files, for data
// without a registry. A file's name gives its id: `<id>.avsc` or
// `<subject>-<id>.avsc` (the digits after the last '-'); e.g.
// `orders-value-7.avsc` is id 7 of subject orders-value. It is a Source and
// a SubjectSource; safe for concurrent use (the directory is read once, by
// NewDirSource).
type DirSource struct {
	dir  string
	byID map[uint32]dirEntry
}

type dirEntry struct {
	file, subject, schema string
}

// NewDirSource reads every *.avsc file of dir. A .avsc file whose name does
// not end in an id, or two files with the same id, is an error naming them.
func NewDirSource(dir string) (*DirSource, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading avsc dir: %w", err)
	}
	d := &DirSource{dir: dir, byID: map[uint32]dirEntry{}}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".avsc") {
			continue
		}
		id, subject, ok := parseAvscName(name)
		if !ok {
			return nil, fmt.Errorf("avsc dir %s: file %s: name must be <id>.avsc or <subject>-<id>.avsc", dir, name)
		}
		if prev, dup := d.byID[id]; dup {
			return nil, fmt.Errorf("avsc dir %s: files %s and %s both give schema id %d", dir, prev.file, name, id)
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("avsc dir %s: %w", dir, err)
		}
		d.byID[id] = dirEntry{file: name, subject: subject, schema: string(b)}
	}
	return d, nil
}

func parseAvscName(name string) (id uint32, subject string, ok bool) {
	base := strings.TrimSuffix(name, ".avsc")
	num := base
	if i := strings.LastIndexByte(base, '-'); i >= 0 {
		subject, num = base[:i], base[i+1:]
	}
	n, err := strconv.ParseUint(num, 10, 32)
	if err != nil || num == "" || num[0] == '+' {
		return 0, "", false
	}
	return uint32(n), subject, true
}

// String names the source.
func (d *DirSource) String() string { return "avsc dir " + d.dir }

// IDs returns the ids the directory holds, sorted.
func (d *DirSource) IDs() []uint32 {
	ids := make([]uint32, 0, len(d.byID))
	for id := range d.byID {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Schema returns the schema of id.
func (d *DirSource) Schema(_ context.Context, id uint32) (string, error) {
	e, ok := d.byID[id]
	if !ok {
		return "", fmt.Errorf("schema id %d not in avsc dir %s (no file %d.avsc or <subject>-%d.avsc): %w", id, d.dir, id, id, ErrNotFound)
	}
	return e.schema, nil
}

// Subjects returns the subject from the file name (none for `<id>.avsc`).
func (d *DirSource) Subjects(_ context.Context, id uint32) ([]SubjectVersion, error) {
	e, ok := d.byID[id]
	if !ok || e.subject == "" {
		return nil, nil
	}
	return []SubjectVersion{{Subject: e.subject}}, nil
}
