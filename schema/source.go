package schema

import (
	"context"
	"errors"
	"fmt"
)

// Source finds the writer schema (its JSON text) of a schema id.
//
// Errors are classified with errors.Is: ErrNotFound means the source answered
// and does not know the id; ErrUnavailable means it could not answer (the
// chain then tries the next source). Any other error (credentials rejected,
// a malformed response, a cancelled context) stops the lookup.
type Source interface {
	Schema(ctx context.Context, id uint32) (string, error)
}

// SubjectVersion names one registration of a schema under a subject.
type SubjectVersion struct {
	Subject string
	Version int
	// Deleted is true when the registration was soft-deleted (it still
	// decodes old data).
	Deleted bool
}

// SubjectSource is implemented by sources that also know under which
// subjects an id is registered.
type SubjectSource interface {
	Subjects(ctx context.Context, id uint32) ([]SubjectVersion, error)
}

// registryBacked marks sources that hold the registry's complete set of ids
// (the registry itself and its storage topic): a not-found answer from one of
// them is authoritative for all of them.
type registryBacked interface{ registryBacked() }

// Sentinel errors of Source.
var (
	// ErrNotFound: the source does not know the schema id.
	ErrNotFound = errors.New("schema id not found")
	// ErrUnavailable: the source could not be reached or read.
	ErrUnavailable = errors.New("schema source unavailable")
)

// NotAvroError reports a schema registered with another schemaType
// (PROTOBUF, JSON); records using it count as KindAvro decode errors.
type NotAvroError struct {
	ID   uint32
	Type string
}

func (e *NotAvroError) Error() string {
	return fmt.Sprintf("schema id %d is of type %s, not AVRO", e.ID, e.Type)
}

// StaticSource is a fixed id -> schema map, for tests and for callers that
// hold schemas already. A missing id is ErrNotFound.
type StaticSource map[uint32]string

// Schema returns the schema of id.
func (s StaticSource) Schema(_ context.Context, id uint32) (string, error) {
	if js, ok := s[id]; ok {
		return js, nil
	}
	return "", fmt.Errorf("schema id %d not in the static set: %w", id, ErrNotFound)
}
