package compare

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
)

// TestIDCodec: an identity's state survives encoding (null keys distinct
// from empty ones), an empty state is empty, and damaged bytes are an
// error, never a wrong state.
func TestIDCodec(t *testing.T) {
	full := idState{
		due:       []detect.Record{{Partition: 0, Offset: 3, TS: 1700000000000, Key: []byte("k")}, {Partition: 2, Offset: 1 << 40, TS: -1, Key: nil}, {Partition: 2, Offset: 5, Key: []byte{}}},
		pending:   2,
		sink:      7,
		sinkAt:    []finding.Coord{{Partition: 1, Offset: 9}, {Partition: 1, Offset: 12}},
		firstSink: detect.Record{Partition: 1, Offset: 9, TS: 5, Key: []byte("k")},
		open: []openRow{{kind: finding.Missing, partition: 2, offset: 5, ts: 4, key: []byte{}, firstSeen: 1700000000001},
			{kind: finding.Duplicated, partition: 0, offset: 3, key: nil, firstSeen: 2, withheld: true}},
	}
	var c idCodec
	for _, tt := range []struct {
		name  string
		k     idState
		empty bool
	}{
		{"empty", idState{}, true},
		{"only copies", idState{sink: 1, sinkAt: []finding.Coord{{Offset: 4}}, firstSink: detect.Record{Offset: 4, Key: []byte("x")}}, false},
		{"only pending", idState{pending: 3}, false},
		{"everything", full, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Empty(&tt.k); got != tt.empty {
				t.Fatalf("Empty = %v, want %v", got, tt.empty)
			}
			b := c.Encode(&tt.k, nil)
			var got idState
			got.due = append(got.due, detect.Record{Offset: 99}) // replaced by Decode
			if err := c.Decode(b, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(norm(got), norm(tt.k)) {
				t.Errorf("decoded %+v, want %+v", got, tt.k)
			}
			if !bytes.Equal(c.Encode(&got, nil), b) {
				t.Error("encoding the decoded state gives other bytes")
			}
			for n := range len(b) - 1 {
				if err := c.Decode(b[:n+1], &got); err == nil && n+1 < len(b) {
					t.Errorf("a state cut to %d of %d bytes decoded without an error", n+1, len(b))
				}
			}
			if err := c.Decode(append(b, 0), &got); err == nil {
				t.Error("a state with a byte too many decoded without an error")
			}
		})
	}
	if err := c.Decode([]byte{9}, &idState{}); err == nil {
		t.Error("a state of an unknown version decoded without an error")
	}
}

// norm makes empty slices nil, so that DeepEqual compares contents (keys
// keep the difference between null and empty).
func norm(k idState) idState {
	if len(k.due) == 0 {
		k.due = nil
	}
	if len(k.sinkAt) == 0 {
		k.sinkAt = nil
	}
	if len(k.open) == 0 {
		k.open = nil
	}
	return k
}

// TestKeyedHasher: a reconciliation's digests are the same for the same
// seed (every step agrees), differ for another seed, keep null distinct
// from empty as the run's hasher does, and a seed of the wrong length is
// refused.
func TestKeyedHasher(t *testing.T) {
	seed := bytes.Repeat([]byte{7}, seedLen)
	h1, err := newKeyedHasher(seed)
	if err != nil {
		t.Fatal(err)
	}
	h2, _ := newKeyedHasher(append([]byte(nil), seed...))
	other, _ := newKeyedHasher(bytes.Repeat([]byte{8}, seedLen))
	parts := [][]byte{[]byte("key"), []byte("value")}
	if h1.sum(parts) != h2.sum(parts) {
		t.Error("two hashers with one seed disagree")
	}
	if h1.sum(parts) == other.sum(parts) {
		t.Error("hashers with different seeds agree")
	}
	if h1.sum([][]byte{nil}) == h1.sum([][]byte{{}}) {
		t.Error("a null part digests like an empty one")
	}
	if h1.sum([][]byte{[]byte("ab"), []byte("c")}) == h1.sum([][]byte{[]byte("a"), []byte("bc")}) {
		t.Error("parts are not delimited")
	}
	if _, err := newKeyedHasher(seed[:16]); err == nil {
		t.Error("a 16-byte seed was accepted")
	}
}
