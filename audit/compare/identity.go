package compare

import (
	"encoding/binary"
	"hash/maphash"

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

// hasher computes digests; its seeds are drawn once per run.
type hasher struct{ s1, s2 maphash.Seed }

func newHasher() hasher { return hasher{maphash.MakeSeed(), maphash.MakeSeed()} }

func (h hasher) sum(parts [][]byte) digest {
	var a, b maphash.Hash
	a.SetSeed(h.s1)
	b.SetSeed(h.s2)
	var n [8]byte
	for _, p := range parts {
		l := uint64(len(p))
		if p == nil {
			l = ^uint64(0)
		}
		binary.BigEndian.PutUint64(n[:], l)
		a.Write(n[:])
		b.Write(n[:])
		a.Write(p)
		b.Write(p)
	}
	var d digest
	binary.BigEndian.PutUint64(d[:8], a.Sum64())
	binary.BigEndian.PutUint64(d[8:], b.Sum64())
	return d
}
