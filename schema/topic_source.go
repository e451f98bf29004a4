package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// TopicReader reads every committed record of a topic (all partitions) and
// calls fn with each key and value (nil value = tombstone); the slices are
// valid only during the call. Records of one partition must come in offset
// order (later registrations win); calls may come from several goroutines.
// The command wires it to audit/kread.
type TopicReader func(ctx context.Context, topic string, fn func(key, value []byte) error) error

// TopicSource answers schema ids from the Schema Registry's storage topic
// (`_schemas`), read once, in full, on the first lookup. It is a Source and a
// SubjectSource; safe for concurrent use.
//
// Only records whose key has "keytype":"SCHEMA" count (CONFIG, NOOP,
// DELETE_SUBJECT, ... are ignored). A later record for the same id wins;
// soft-deleted schemas ("deleted":true) and schemas whose key was later
// tombstoned (null value) stay usable, because old data still refers to
// them. Records that are not valid JSON are skipped and counted (Skipped).
type TopicSource struct {
	topic string
	read  TopicReader

	mu      sync.Mutex
	loaded  bool
	loadErr error
	byID    map[uint32]topicEntry
	subj    map[uint32][]SubjectVersion
	skipped int
}

type topicEntry struct {
	schema     string
	schemaType string
}

// NewTopicSource reads schemas from topic through read.
func NewTopicSource(topic string, read TopicReader) *TopicSource {
	return &TopicSource{topic: topic, read: read}
}

// String names the source.
func (t *TopicSource) String() string { return "schemas topic " + t.topic }

func (t *TopicSource) registryBacked() {}

type schemaKey struct {
	KeyType string `json:"keytype"`
}

type schemaValue struct {
	Subject    string `json:"subject"`
	Version    int    `json:"version"`
	ID         *int64 `json:"id"`
	Schema     string `json:"schema"`
	Deleted    bool   `json:"deleted"`
	SchemaType string `json:"schemaType"`
}

func (t *TopicSource) load(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.loaded {
		return t.loadErr
	}
	byID := map[uint32]topicEntry{}
	type sv struct {
		subject string
		version int
	}
	latest := map[sv]SubjectVersion{}
	latestID := map[sv]uint32{}
	skipped := 0
	var cbMu sync.Mutex // in case the reader calls fn from several goroutines
	err := t.read(ctx, t.topic, func(key, value []byte) error {
		cbMu.Lock()
		defer cbMu.Unlock()
		var k schemaKey
		if err := json.Unmarshal(key, &k); err != nil {
			skipped++
			return nil
		}
		if k.KeyType != "SCHEMA" || value == nil {
			return nil // other key types; tombstones remove nothing old data needs
		}
		var v schemaValue
		if err := json.Unmarshal(value, &v); err != nil || v.ID == nil || *v.ID < 0 || *v.ID > 1<<32-1 || v.Schema == "" {
			skipped++
			return nil
		}
		id := uint32(*v.ID)
		byID[id] = topicEntry{schema: v.Schema, schemaType: v.SchemaType}
		key2 := sv{v.Subject, v.Version}
		latest[key2] = SubjectVersion{Subject: v.Subject, Version: v.Version, Deleted: v.Deleted}
		latestID[key2] = id
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // not cached: a later call may succeed
		}
		t.loaded, t.loadErr = true, fmt.Errorf("reading %s: %w: %w", t, ErrUnavailable, err)
		return t.loadErr
	}
	subj := map[uint32][]SubjectVersion{}
	for k, s := range latest {
		id := latestID[k]
		subj[id] = append(subj[id], s)
	}
	for _, l := range subj {
		sort.Slice(l, func(i, j int) bool {
			if l[i].Subject != l[j].Subject {
				return l[i].Subject < l[j].Subject
			}
			return l[i].Version < l[j].Version
		})
	}
	t.loaded, t.byID, t.subj, t.skipped = true, byID, subj, skipped
	return nil
}

// Schema returns the schema of id, reading the topic on first use.
func (t *TopicSource) Schema(ctx context.Context, id uint32) (string, error) {
	if err := t.load(ctx); err != nil {
		return "", err
	}
	e, ok := t.byID[id]
	if !ok {
		return "", fmt.Errorf("schema id %d not in %s: %w", id, t, ErrNotFound)
	}
	if e.schemaType != "" && !strings.EqualFold(e.schemaType, "AVRO") {
		return "", &NotAvroError{ID: id, Type: e.schemaType}
	}
	return e.schema, nil
}

// Subjects returns the subject/versions id is registered under (the latest
// record of each subject/version), sorted.
func (t *TopicSource) Subjects(ctx context.Context, id uint32) ([]SubjectVersion, error) {
	if err := t.load(ctx); err != nil {
		return nil, err
	}
	return t.subj[id], nil
}

// Skipped returns how many SCHEMA records were unreadable (bad JSON, no id,
// no schema) in the topic read; 0 before the first lookup.
func (t *TopicSource) Skipped() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}
