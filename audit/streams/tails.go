package streams

import (
	"sync"

	"github.com/cespare/xxhash/v2"
)

// maxTails bounds the repartition-tail records the collector holds in
// memory (about 70 bytes each). Beyond it, input candidates are indexed
// one entry per record and matched against the tails in the check, as
// they always can be; below it, a candidate whose copy is in the tail is
// counted pending as it is read, and the others are coalesced per key.
const maxTails = 500_000

// tailID identifies a repartition-tail record by its input, its key (two
// independent 64-bit hashes, so a collision hiding a loss is out of
// reach), its timestamp and its value fingerprint.
type tailID struct {
	x      uint8
	h1, h2 uint64
	ts     int64
	fp     uint64
}

func newTailID(x uint8, key []byte, ts int64, fp uint64) tailID {
	return tailID{x: x, h1: xxhash.Sum64(key), h2: fnv64a(key), ts: ts, fp: fp}
}

// fnv64a is the 64-bit FNV-1a hash.
func fnv64a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// tailSet holds the repartition tails of a run while they fit; safe for
// concurrent use while it is filled, read-only afterwards.
type tailSet struct {
	mu    sync.Mutex
	limit int // maxTails, unless a test says otherwise
	m     map[tailID]struct{}
	over  bool // more than limit: not held
}

func (t *tailSet) add(id tailID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.over {
		return
	}
	if t.m == nil {
		t.m = map[tailID]struct{}{}
	}
	t.m[id] = struct{}{}
	if len(t.m) > t.limit {
		t.over, t.m = true, nil
	}
}

// complete reports whether every tail record is held.
func (t *tailSet) complete() bool { return !t.over }

// has reports whether id is a tail record; only meaningful when complete.
func (t *tailSet) has(id tailID) bool {
	_, ok := t.m[id]
	return ok
}
