package schema

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestStatusNamesTheSourceThatWasDownAndWhoServed(t *testing.T) {
	down := &fakeSource{name: "schema registry http://r:8081", err: fmt.Errorf("dial tcp: connection refused: %w", ErrUnavailable)}
	topic := &fakeSource{name: "schemas topic _schemas", schemas: map[uint32]string{1: tinySchema}}
	dir := &fakeSource{name: "avsc dir /s"}
	r := NewRegistry(backedSource{down}, backedSource{topic}, dir)
	if got := r.Status(); len(got) != 0 {
		t.Fatalf("before any lookup: %+v", got)
	}
	if _, err := r.Lookup(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	got := r.Status()
	if len(got) != 1 || got[0].Source != down.name || !strings.Contains(got[0].Error, "connection refused") ||
		strings.Join(got[0].ServedBy, ",") != topic.name {
		t.Errorf("status = %+v, want the registry down, served by the schemas topic", got)
	}
}

func TestNearestFields(t *testing.T) {
	const js = `{"type":"record","name":"Order","fields":[
		{"name":"customerId","type":"string"},
		{"name":"amount","type":"long"},
		{"name":"customer","type":["null",{"type":"record","name":"C","fields":[{"name":"id","type":"string"},{"name":"next","type":["null","C"]}]}]}]}`
	r := NewRegistry(StaticSource{3: js})
	paths, err := r.FieldPaths(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := "customerId,amount,customer,customer.id,customer.next"; strings.Join(paths, ",") != want {
		t.Errorf("field paths %v, want %s", paths, want)
	}
	tests := []struct{ path, want string }{
		{"customerID", "customerId"}, // letter case is free
		{"customer.ID", "customer.id"},
		{"amout", "amount"},
		{"customerid", "customerId"},
	}
	for _, tt := range tests {
		got := r.NearestFields(context.Background(), 3, tt.path, 3)
		if len(got) != 3 || got[0] != tt.want {
			t.Errorf("nearest to %q = %v, want 3 paths starting with %s", tt.path, got, tt.want)
		}
	}
	if got := r.NearestFields(context.Background(), 99, "x", 3); got != nil {
		t.Errorf("unknown schema id gave %v", got)
	}
}

func TestRejectedIsAConfigurationProblem(t *testing.T) {
	err := fmt.Errorf("lookup: %w", &RejectedError{"schema registry http://r rejected the request (HTTP 401)"})
	if !errors.Is(err, ErrRejected) {
		t.Error("a registry refusal is not ErrRejected")
	}
	if strings.Contains(err.Error(), ErrRejected.Error()) {
		t.Errorf("message %q repeats the sentinel", err)
	}
}
