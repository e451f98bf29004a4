package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/linkedin/goavro/v2"

	"github.com/lossaudit/lossaudit/schema/avroproj"
)

// Options select the schema sources of a run; empty fields leave a source
// out. The chain is registry, then schemas topic, then avsc dir.
type Options struct {
	// Registry configures the Schema Registry client; used when URL is set.
	Registry RegistryOptions
	// SchemasTopic is the registry's storage topic (e.g. "_schemas"); used
	// when it and Reader are set.
	SchemasTopic string
	Reader       TopicReader
	// AvscDir is a directory of <id>.avsc / <subject>-<id>.avsc files.
	AvscDir string
}

// New builds the Registry for o. It fails when no source is configured, the
// registry URL is invalid, or the avsc dir cannot be read.
func New(o Options) (*Registry, error) {
	var srcs []Source
	if o.Registry.URL != "" {
		rc, err := NewRegistryClient(o.Registry)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, rc)
	}
	if o.SchemasTopic != "" && o.Reader != nil {
		srcs = append(srcs, NewTopicSource(o.SchemasTopic, o.Reader))
	}
	if o.AvscDir != "" {
		ds, err := NewDirSource(o.AvscDir)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, ds)
	}
	if len(srcs) == 0 {
		return nil, errors.New("no schema source configured: set schema.registry_url, schema.schemas_topic or schema.avsc_dir")
	}
	return NewRegistry(srcs...), nil
}

// Writer is a compiled writer schema.
type Writer struct {
	// ID is the schema id.
	ID uint32
	// JSON is the schema text as the source returned it.
	JSON string
	// Source names the source that supplied it.
	Source string
	codec  *goavro.Codec
	proj   *avroproj.Schema

	// tree is JSON parsed once, named its named types (DecodePlain).
	treeOnce sync.Once
	tree     any
	named    map[string]any
	treeErr  error
}

// Codec returns the goavro codec of the schema (the reference decoder).
func (w *Writer) Codec() *goavro.Codec { return w.codec }

// Registry looks schema ids up in a chain of Sources and caches the
// compiled writer schema (or the per-record error) of each id for its
// lifetime; safe for concurrent use, and each id is looked up once even
// when many goroutines ask at the same time.
//
// The chain, per id: sources are asked in order; the first that has the id
// wins. A source answering ErrUnavailable is marked down for the rest of the
// run (later ids skip it) and the next source is asked. A not-found answer
// from the registry or the schemas topic (both hold the registry's complete
// set of ids) skips the other of the two but still asks the avsc dir. Any
// other error (credentials rejected, malformed answer) is returned as is,
// not cached, and does not fall back: it is a configuration problem to fix.
// When no source has the id, the result is a *DecodeError of kind
// KindUnknownSchema (cached), unless a source was unavailable and no
// registry-backed source answered, in which case the error wraps
// ErrUnavailable (not cached): the run cannot tell whether the id exists.
type Registry struct {
	sources []Source
	down    []atomic.Bool

	mu       sync.Mutex
	entries  map[uint32]*entry
	subjects map[uint32][]SubjectVersion
	downWhy  map[int]string // why source i was found unavailable
	served   map[int]int64  // lookups source i answered
}

type entry struct {
	done chan struct{}
	w    *Writer
	err  error
}

// NewRegistry chains sources in the order given.
func NewRegistry(sources ...Source) *Registry {
	return &Registry{sources: sources, down: make([]atomic.Bool, len(sources)), entries: map[uint32]*entry{},
		subjects: map[uint32][]SubjectVersion{}, downWhy: map[int]string{}, served: map[int]int64{}}
}

// Lookup returns the compiled writer schema of id. Per-record failures are
// *DecodeError (KindUnknownSchema, KindAvro for a schema that does not
// compile or is not Avro); other errors mean schemas cannot be looked up.
func (r *Registry) Lookup(ctx context.Context, id uint32) (*Writer, error) {
	r.mu.Lock()
	e, ok := r.entries[id]
	if ok {
		r.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil || e.w != nil {
			return e.w, e.err
		}
		return r.Lookup(ctx, id) // the loader was not cacheable: try again
	}
	e = &entry{done: make(chan struct{})}
	r.entries[id] = e
	r.mu.Unlock()

	w, cache, err := r.resolve(ctx, id)
	if !cache {
		r.mu.Lock()
		delete(r.entries, id)
		r.mu.Unlock()
		close(e.done)
		return nil, err
	}
	e.w, e.err = w, err
	close(e.done)
	return w, err
}

func sourceName(s Source) string {
	if st, ok := s.(fmt.Stringer); ok {
		return st.String()
	}
	return fmt.Sprintf("source %T", s)
}

// resolve runs the chain for id; cache reports whether the outcome holds
// for the rest of the run.
func (r *Registry) resolve(ctx context.Context, id uint32) (*Writer, bool, error) {
	var notes []string
	unavailable := false
	authoritative := false
	for i, s := range r.sources {
		_, backed := s.(registryBacked)
		if r.down[i].Load() {
			// Name the first failure: a lookup racing the one that found the
			// source unavailable must say the same thing (an authorization
			// failure, a refused connection), not only that it was skipped.
			notes = append(notes, sourceName(s)+": down since an earlier lookup: "+r.downReason(i))
			unavailable = true
			continue
		}
		if backed && authoritative {
			continue
		}
		js, err := s.Schema(ctx, id)
		if err == nil {
			r.markServed(i)
			w, cerr := compileWriter(id, js, sourceName(s))
			if cerr != nil {
				return nil, true, cerr
			}
			return w, true, nil
		}
		var na *NotAvroError
		switch {
		case errors.As(err, &na):
			return nil, true, decodeErr(KindAvro, id, true, "", err)
		case errors.Is(err, ErrNotFound):
			notes = append(notes, err.Error())
			if backed {
				authoritative = true
			}
		case errors.Is(err, ErrUnavailable):
			r.markDown(i, err)
			unavailable = true
			notes = append(notes, err.Error())
		default:
			return nil, false, fmt.Errorf("looking up schema id %d in %s: %w", id, sourceName(s), err)
		}
	}
	if unavailable && !authoritative {
		return nil, false, fmt.Errorf("schema id %d: no source could answer (%s): %w", id, strings.Join(notes, "; "), ErrUnavailable)
	}
	return nil, true, decodeErr(KindUnknownSchema, id, true, "", fmt.Errorf("schema id %d not found (%s)", id, strings.Join(notes, "; ")))
}

func compileWriter(id uint32, js, src string) (*Writer, error) {
	codec, err := goavro.NewCodec(js)
	if err != nil {
		return nil, decodeErr(KindAvro, id, true, "", fmt.Errorf("schema id %d from %s does not compile: %w", id, src, err))
	}
	proj, err := avroproj.Parse(js)
	if err != nil {
		return nil, decodeErr(KindAvro, id, true, "", fmt.Errorf("schema id %d from %s does not parse: %w", id, src, err))
	}
	return &Writer{ID: id, JSON: js, Source: src, codec: codec, proj: proj}, nil
}

// Subjects returns the subject/versions of id from the first source that
// knows them (registry, schemas topic, avsc dir), cached for the run; nil
// when none does. It never fails: subjects are informative. A source found
// unavailable here is marked down like in Lookup.
func (r *Registry) Subjects(ctx context.Context, id uint32) []SubjectVersion {
	r.mu.Lock()
	l, ok := r.subjects[id]
	r.mu.Unlock()
	if ok {
		return l
	}
	for i, s := range r.sources {
		ss, ok := s.(SubjectSource)
		if !ok || r.down[i].Load() {
			continue
		}
		got, err := ss.Subjects(ctx, id)
		if errors.Is(err, ErrUnavailable) {
			r.markDown(i, err)
		}
		if err == nil && len(got) > 0 {
			l = got
			break
		}
	}
	if ctx.Err() == nil {
		r.mu.Lock()
		r.subjects[id] = l
		r.mu.Unlock()
	}
	return l
}

// Decode frames value and decodes it in full with goavro and the record's
// writer schema (the reference path; Extractor is the fast one).
func (r *Registry) Decode(ctx context.Context, value []byte) (id uint32, datum any, err error) {
	id, payload, err := SplitFrame(value)
	if err != nil {
		return 0, nil, err
	}
	w, err := r.Lookup(ctx, id)
	if err != nil {
		return id, nil, err
	}
	// Validate first: the projection decoder bounds every count by the
	// bytes left, goavro preallocates arrays from the count it reads.
	if _, err := w.proj.Skip(payload); err != nil {
		return id, nil, decodeErr(KindAvro, id, true, "", fmt.Errorf("schema id %d: %w", id, err))
	}
	datum, _, err = w.codec.NativeFromBinary(payload)
	if err != nil {
		return id, nil, decodeErr(KindAvro, id, true, "", fmt.Errorf("schema id %d: %w", id, err))
	}
	return id, datum, nil
}
