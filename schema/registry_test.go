package schema

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeSource answers from a map, or with a fixed error, and counts calls.
type fakeSource struct {
	name    string
	schemas map[uint32]string
	err     error // returned for every id when set
	calls   atomic.Int32
}

func (f *fakeSource) String() string { return f.name }

func (f *fakeSource) Schema(_ context.Context, id uint32) (string, error) {
	f.calls.Add(1)
	if f.err != nil {
		return "", f.err
	}
	if js, ok := f.schemas[id]; ok {
		return js, nil
	}
	return "", fmt.Errorf("%s: id %d: %w", f.name, id, ErrNotFound)
}

// backedSource is a fakeSource that holds the registry's ids.
type backedSource struct{ *fakeSource }

func (backedSource) registryBacked() {}

func TestChain(t *testing.T) {
	unavailable := fmt.Errorf("dial tcp: connection refused: %w", ErrUnavailable)
	credentials := errors.New("registry rejected credentials")
	type src struct {
		backed  bool
		schemas map[uint32]string
		err     error
	}
	tests := []struct {
		name    string
		sources []src
		// wantFrom is the index of the source that answers, -1 for none.
		wantFrom  int
		wantKind  ErrorKind // when the result is a *DecodeError
		wantIs    error
		wantCalls []int32 // per source, after two lookups of the id
	}{
		{name: "registry answers", sources: []src{{backed: true, schemas: map[uint32]string{1: tinySchema}}, {backed: true}, {}},
			wantFrom: 0, wantCalls: []int32{1, 0, 0}},
		{name: "registry down: topic answers, registry skipped afterwards", sources: []src{{backed: true, err: unavailable}, {backed: true, schemas: map[uint32]string{1: tinySchema}}, {}},
			wantFrom: 1, wantCalls: []int32{1, 1, 0}},
		{name: "registry and topic down: dir answers", sources: []src{{backed: true, err: unavailable}, {backed: true, err: unavailable}, {schemas: map[uint32]string{1: tinySchema}}},
			wantFrom: 2, wantCalls: []int32{1, 1, 1}},
		{name: "registry 404 skips the topic, asks the dir", sources: []src{{backed: true}, {backed: true, schemas: map[uint32]string{1: tinySchema}}, {schemas: map[uint32]string{1: tinySchema}}},
			wantFrom: 2, wantCalls: []int32{1, 0, 1}},
		{name: "unknown everywhere is a cached decode error", sources: []src{{backed: true}, {backed: true}, {}},
			wantFrom: -1, wantKind: KindUnknownSchema, wantCalls: []int32{1, 0, 1}},
		{name: "registry down, topic says unknown: decode error", sources: []src{{backed: true, err: unavailable}, {backed: true}, {}},
			wantFrom: -1, wantKind: KindUnknownSchema, wantCalls: []int32{1, 1, 1}},
		{name: "registry down, only the dir says unknown: cannot tell", sources: []src{{backed: true, err: unavailable}, {}},
			wantFrom: -1, wantIs: ErrUnavailable, wantCalls: []int32{1, 2}},
		{name: "credentials rejected stops the chain, not cached", sources: []src{{backed: true, err: credentials}, {backed: true, schemas: map[uint32]string{1: tinySchema}}},
			wantFrom: -1, wantIs: credentials, wantCalls: []int32{2, 0}},
		{name: "schema that does not compile", sources: []src{{schemas: map[uint32]string{1: `{"type":"record","name":"A","fields":[{"name":"k","type":"nope"}]}`}}},
			wantFrom: -1, wantKind: KindAvro, wantCalls: []int32{1}},
		{name: "not avro", sources: []src{{err: &NotAvroError{ID: 1, Type: "JSON"}}},
			wantFrom: -1, wantKind: KindAvro, wantCalls: []int32{1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var fakes []*fakeSource
			var srcs []Source
			for i, s := range tt.sources {
				f := &fakeSource{name: fmt.Sprintf("src%d", i), schemas: s.schemas, err: s.err}
				fakes = append(fakes, f)
				if s.backed {
					srcs = append(srcs, backedSource{f})
				} else {
					srcs = append(srcs, f)
				}
			}
			reg := NewRegistry(srcs...)
			for range 2 {
				w, err := reg.Lookup(context.Background(), 1)
				if tt.wantFrom >= 0 {
					if err != nil || w.Source != fakes[tt.wantFrom].name || w.ID != 1 {
						t.Fatalf("got (%+v, %v), want schema from %s", w, err, fakes[tt.wantFrom].name)
					}
					continue
				}
				var de *DecodeError
				isDecode := errors.As(err, &de)
				if tt.wantKind != 0 && (!isDecode || de.Kind != tt.wantKind || de.SchemaID != 1) {
					t.Fatalf("err = %v, want decode error %v", err, tt.wantKind)
				}
				if tt.wantIs != nil && (isDecode || !errors.Is(err, tt.wantIs)) {
					t.Fatalf("err = %v, want a non-decode error wrapping %v", err, tt.wantIs)
				}
			}
			for i, f := range fakes {
				if got := f.calls.Load(); got != tt.wantCalls[i] {
					t.Errorf("%s called %d times, want %d", f.name, got, tt.wantCalls[i])
				}
			}
		})
	}
}

func TestRegistryConcurrentLookupsFetchOnce(t *testing.T) {
	f := &fakeSource{name: "reg", schemas: map[uint32]string{1: tinySchema, 2: tinySchema}}
	reg := NewRegistry(f)
	ex, err := reg.Extractor("k")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var bad atomic.Int32
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				id := byte(1 + (g+i)%2)
				k, _, err := ex.Extract([]byte{0, 0, 0, 0, id, 2, 'x'})
				if err != nil || k != "x" {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d extractions failed", bad.Load())
	}
	if got := f.calls.Load(); got != 2 {
		t.Fatalf("source called %d times for 2 ids", got)
	}
}

func TestNewOptions(t *testing.T) {
	if _, err := New(Options{}); err == nil || !strings.Contains(err.Error(), "no schema source") {
		t.Fatalf("no sources: err = %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "orders-value-12.avsc"), []byte(tinySchema), 0o600); err != nil {
		t.Fatal(err)
	}
	// An unreachable registry (nothing listens on port 1) falls back to the dir.
	reg, err := New(Options{Registry: RegistryOptions{URL: "http://127.0.0.1:1", Retries: -1}, AvscDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	w, err := reg.Lookup(context.Background(), 12)
	if err != nil || w.Source != "avsc dir "+dir {
		t.Fatalf("got (%+v, %v)", w, err)
	}
	if got := reg.Subjects(context.Background(), 12); len(got) != 1 || got[0].Subject != "orders-value" {
		t.Fatalf("subjects = %v", got)
	}
	_, err = reg.Lookup(context.Background(), 13)
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "schema id 13 not in avsc dir "+dir) {
		t.Fatalf("id 13: err = %v", err)
	}
}

func TestDirSource(t *testing.T) {
	tests := []struct {
		name    string
		files   []string
		wantIDs []uint32
		wantErr string
	}{
		{name: "id and subject-id names", files: []string{"7.avsc", "orders-value-8.avsc", "a-b-c-9.avsc", "README.md"}, wantIDs: []uint32{7, 8, 9}},
		{name: "name without id", files: []string{"orders.avsc"}, wantErr: "orders.avsc: name must be"},
		{name: "trailing dash", files: []string{"orders-.avsc"}, wantErr: "orders-.avsc"},
		{name: "duplicate id", files: []string{"7.avsc", "x-7.avsc"}, wantErr: "both give schema id 7"},
		{name: "id too large", files: []string{"x-4294967296.avsc"}, wantErr: "x-4294967296.avsc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(tinySchema), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			d, err := NewDirSource(dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(d.IDs()); got != fmt.Sprint(tt.wantIDs) {
				t.Fatalf("ids %s, want %v", got, tt.wantIDs)
			}
			_, err = d.Schema(context.Background(), 99)
			if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "schema id 99") || !strings.Contains(err.Error(), dir) {
				t.Fatalf("unknown id: err = %v", err)
			}
		})
	}
}
