package compare

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/maphash"
	"sync"

	"golang.org/x/crypto/blake2b"

	"github.com/lossaudit/lossaudit/audit/kread"
)

// Status says what identifying a record gave.
type Status uint8

// Identification outcomes.
const (
	// Identified: the record has an identity.
	Identified Status = iota
	// NoIdentity: the match cannot identify the record (a null key under
	// match key, no such header, a null field); it cannot be followed.
	NoIdentity
	// DecodeError: the value could not be decoded (match field:); err
	// says why.
	DecodeError
	// Failed: identification cannot work at all (every schema source
	// down); the run stops with err.
	Failed
)

// Identify returns the parts of rec's identity under the match, appended
// to parts: the key and the value for match record, the key for match key,
// the field's text for field:<path>, the header's value for
// header:<name>. The parts may point into rec. It is called concurrently
// for different partitions.
type Identify func(rec *kread.Record, parts [][]byte) ([][]byte, Status, error)

// digest is the identity of a record as the index keys it: 128 bits of
// two hash/maphash hashes of the identity's parts, each part written as
// its length (all ones for null) and its bytes.
//
// Collisions: two different identities share a digest with probability
// about n²/2¹²⁹ for n distinct identities (below 10⁻¹⁸ for ten billion),
// and a colliding pair would be taken for copies of one record (hiding a
// missing record or inventing a duplicate). The seeds are random and new
// in every run, so records written to a topic cannot be crafted to
// collide: hash/maphash is designed to resist that without the seed. The
// full bytes are not used as the index key because the index would then
// hold a copy of both topics.
type digest [16]byte

// hasher computes digests; its seeds are drawn once per run. A
// reconciliation's digests must stay the same from step to step, so its
// hasher is keyed instead (keyed): a keyed BLAKE2b-128 of the same
// encoding, whose 32-byte key is drawn at the baseline and kept with the
// state (which is as secret as the state: records written to a topic
// cannot be crafted to collide without it, and a collision of BLAKE2b
// costs about 2⁶⁴ work even knowing it).
type hasher struct {
	s1, s2 maphash.Seed
	keyed  *sync.Pool // of keyed BLAKE2b hashes; nil for a run's maphash
}

func newHasher() hasher { return hasher{s1: maphash.MakeSeed(), s2: maphash.MakeSeed()} }

// seedLen is the length of a reconciliation's identity key.
const seedLen = 32

// newKeyedHasher returns the hasher of a reconciliation with key seed.
func newKeyedHasher(seed []byte) (hasher, error) {
	if len(seed) != seedLen {
		return hasher{}, fmt.Errorf("identity seed of %d bytes, want %d", len(seed), seedLen)
	}
	key := append([]byte(nil), seed...)
	if _, err := blake2b.New(len(digest{}), key); err != nil {
		return hasher{}, err
	}
	return hasher{keyed: &sync.Pool{New: func() any {
		h, _ := blake2b.New(len(digest{}), key) // the key was checked above
		return &keyedHash{h: h, d: make([]byte, 0, len(digest{}))}
	}}}, nil
}

func (h hasher) sum(parts [][]byte) digest {
	if h.keyed != nil {
		return h.sumKeyed(parts)
	}
	var d digest
	var a, b maphash.Hash
	a.SetSeed(h.s1)
	b.SetSeed(h.s2)
	for _, p := range parts {
		n := lenPrefix(p)
		a.Write(n[:])
		b.Write(n[:])
		a.Write(p)
		b.Write(p)
	}
	binary.BigEndian.PutUint64(d[:8], a.Sum64())
	binary.BigEndian.PutUint64(d[8:], b.Sum64())
	return d
}

// keyedHash is a keyed BLAKE2b with scratch space, pooled so that a
// digest allocates nothing.
type keyedHash struct {
	h hash.Hash
	n [8]byte
	d []byte
}

// sumKeyed is sum with the keyed hash.
func (h hasher) sumKeyed(parts [][]byte) digest {
	k := h.keyed.Get().(*keyedHash)
	k.h.Reset()
	for _, p := range parts {
		k.n = lenPrefix(p)
		k.h.Write(k.n[:])
		k.h.Write(p)
	}
	k.d = k.h.Sum(k.d[:0])
	d := digest(k.d)
	h.keyed.Put(k)
	return d
}

// lenPrefix is what a part's bytes are preceded by: its length, all ones
// for null.
func lenPrefix(p []byte) [8]byte {
	l := uint64(len(p))
	if p == nil {
		l = ^uint64(0)
	}
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], l)
	return n
}
