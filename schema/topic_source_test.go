package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// schemasKey and schemasValue build records in the Schema Registry's own
// storage format.
func schemasKey(subject string, version int) []byte {
	return fmt.Appendf(nil, `{"keytype":"SCHEMA","subject":%q,"version":%d,"magic":1}`, subject, version)
}

func schemasValue(subject string, version int, id uint32, schemaJSON string, deleted bool) []byte {
	b, _ := json.Marshal(map[string]any{"subject": subject, "version": version, "id": id, "schema": schemaJSON, "deleted": deleted})
	return b
}

type kv struct{ k, v []byte }

func memReader(recs []kv, err error) TopicReader {
	return func(ctx context.Context, topic string, fn func(key, value []byte) error) error {
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r.k, r.v); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestTopicSource(t *testing.T) {
	s1 := `{"type":"record","name":"V1","fields":[{"name":"k","type":"string"}]}`
	s2 := `{"type":"record","name":"V2","fields":[{"name":"k","type":"string"},{"name":"n","type":"int"}]}`
	s3 := `{"type":"record","name":"V3","fields":[{"name":"k","type":"long"}]}`
	recs := []kv{
		{[]byte(`{"keytype":"CONFIG","subject":null,"magic":0}`), []byte(`{"compatibilityLevel":"BACKWARD"}`)},
		{[]byte(`{"keytype":"NOOP","magic":0}`), nil},
		{schemasKey("orders-value", 1), schemasValue("orders-value", 1, 1, s1, false)},
		{schemasKey("orders-value", 2), schemasValue("orders-value", 2, 2, s2, false)},
		{schemasKey("other-value", 1), schemasValue("other-value", 1, 2, s2, false)},
		// soft delete of version 1: still decodes old data
		{schemasKey("orders-value", 1), schemasValue("orders-value", 1, 1, s1, true)},
		// tombstone of version 2 (hard delete): still decodes old data
		{schemasKey("orders-value", 2), nil},
		{[]byte(`{"keytype":"DELETE_SUBJECT","subject":"x","magic":0}`), []byte(`{"subject":"x","version":3}`)},
		{schemasKey("broken", 1), []byte(`{not json`)},
		{[]byte(`not json`), []byte(`{}`)},
		{schemasKey("proto-value", 1), []byte(`{"subject":"proto-value","version":1,"id":5,"schema":"syntax = \"proto3\";","schemaType":"PROTOBUF"}`)},
		// id 3 registered twice: the later record wins
		{schemasKey("c-value", 1), schemasValue("c-value", 1, 3, s1, false)},
		{schemasKey("c-value", 1), schemasValue("c-value", 1, 3, s3, false)},
	}
	ts := NewTopicSource("_schemas", memReader(recs, nil))
	ctx := context.Background()
	for _, tt := range []struct {
		id   uint32
		want string
	}{{1, s1}, {2, s2}, {3, s3}} {
		if got, err := ts.Schema(ctx, tt.id); err != nil || got != tt.want {
			t.Errorf("id %d: got (%q, %v), want %q", tt.id, got, err, tt.want)
		}
	}
	if _, err := ts.Schema(ctx, 4); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "schema id 4 not in schemas topic _schemas") {
		t.Errorf("id 4: err = %v", err)
	}
	var na *NotAvroError
	if _, err := ts.Schema(ctx, 5); !errors.As(err, &na) {
		t.Errorf("id 5: err = %v, want NotAvroError", err)
	}
	subj, err := ts.Subjects(ctx, 2)
	if err != nil || fmt.Sprint(subj) != "[{orders-value 2 false} {other-value 1 false}]" {
		t.Errorf("subjects of 2 = %v, %v", subj, err)
	}
	subj, _ = ts.Subjects(ctx, 1)
	if fmt.Sprint(subj) != "[{orders-value 1 true}]" {
		t.Errorf("subjects of 1 = %v", subj)
	}
	if ts.Skipped() != 2 {
		t.Errorf("skipped = %d, want 2", ts.Skipped())
	}

	down := NewTopicSource("_schemas", memReader(nil, errors.New("broker unreachable")))
	if _, err := down.Schema(ctx, 1); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "broker unreachable") {
		t.Errorf("unreadable topic: err = %v", err)
	}
}
