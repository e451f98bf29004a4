package index

import (
	"bytes"
	"errors"
	"slices"
	"unsafe"
)

// part is one partition of the evidence in memory: its entries encoded
// back to back in buf (stored key, then value), located by ents, and a
// hash table over the entries added with AddFirst, by group. Every number
// is fixed size: an entry costs its bytes, one ent and one to two table
// slots, whatever its key's history.
type part struct {
	buf    []byte
	ents   []ent
	table  []slot // open addressing, linear probing, at most maxLoad full
	firsts int    // AddFirst entries in table
	// staged are entries in buf (from stageOff on) not filed yet.
	staged   []ent
	stageOff int
	// sink keeps touch's loads (see there) from being optimised away.
	sink uint64
}

// ent locates one entry of a part; h is the key's hash (the order of the
// walk). group is, for an entry added with AddFirst, the length of its
// stored key up to the end of its group bytes (hash, length, key, tag,
// group); 0 otherwise.
type ent struct {
	h          uint64
	off        uint32
	klen, vlen uint32
	group      uint32
}

const entSize = int64(unsafe.Sizeof(ent{}))

// slot is one slot of a part's table: the group's entry as a probe needs
// it, so that a probe that finds its group reads the slot and the entry's
// bytes, not the ent between them (a cache miss fewer per record: the
// table, the ents and buf are far larger than the CPU's caches).
type slot struct {
	w    uint64 // group hash's high 32 bits << 32 | ents index + 1; 0 is empty
	off  uint32 // the entry's offset in buf (its ent's off)
	lens uint32 // its group, klen and vlen (packLens); 0 when they do not fit: then its ent has them
}

const slotSize = int64(unsafe.Sizeof(slot{}))

// The table grows when it would be more than maxLoadNum/maxLoadDen full:
// a slot then costs 16/maxLoad bytes per AddFirst entry at most (and half
// that right after growing).
const maxLoadNum, maxLoadDen = 3, 4

// packLens packs e's group, klen and vlen into a slot's lens: a flag bit,
// the group in 12 bits, klen-group (the fields after the group) in 8 and
// vlen in 11. 0 when they do not fit (keys over about 4 KiB, large
// fields or values): the probe then reads them from the entry's ent.
func packLens(e ent) uint32 {
	tail := e.klen - e.group
	if e.group >= 1<<12 || tail >= 1<<8 || e.vlen >= 1<<11 {
		return 0
	}
	return 1<<31 | e.group<<19 | tail<<11 | e.vlen
}

// lens returns the group, klen and vlen of the entry in slot s.
func (p *part) lens(s *slot) (group, klen, vlen uint32) {
	if s.lens == 0 {
		e := &p.ents[uint32(s.w)-1]
		return e.group, e.klen, e.vlen
	}
	group = s.lens >> 19 & (1<<12 - 1)
	return group, group + s.lens>>11&(1<<8-1), s.lens & (1<<11 - 1)
}

// maxPartBytes bounds a part's buf (offsets are 32-bit).
const maxPartBytes = 1<<32 - 1

var errPartFull = errors.New("index: a partition of the evidence outgrew 4 GiB (one key's entries?)")

func (p *part) key(e ent) []byte { return p.buf[e.off : e.off+e.klen] }
func (p *part) val(e ent) []byte { return p.buf[e.off+e.klen : e.off+e.klen+e.vlen] }

// bytes is the memory the part holds.
func (p *part) bytes() int64 {
	return int64(cap(p.buf)) + int64(cap(p.ents)+cap(p.staged))*entSize + int64(cap(p.table))*slotSize
}

// size is the memory the part's entries use (not its capacity), a table
// at its most full (maxLoad) included.
func (p *part) size() int64 {
	return int64(len(p.buf)) + int64(len(p.ents)+len(p.staged))*entSize + int64(p.firsts)*slotSize*maxLoadDen/maxLoadNum
}

// reset empties the part, keeping its capacity.
func (p *part) reset() {
	p.buf, p.ents, p.staged = p.buf[:0], p.ents[:0], p.staged[:0]
	clear(p.table)
	p.firsts = 0
}

// add adds an entry about key (of hash h); group < 0 for Add, the group's
// length within fields for AddFirst.
func (p *part) add(h uint64, key []byte, tag byte, group int, fields, val []byte) error {
	off := len(p.buf)
	if uint64(off)+headLen+uint64(len(key))+1+uint64(len(fields))+uint64(len(val)) > maxPartBytes {
		return errPartFull
	}
	p.buf = appendHead(p.buf, h, key, tag)
	p.buf = append(p.buf, fields...)
	klen := len(p.buf) - off
	p.buf = append(p.buf, val...)
	e := ent{h: h, off: uint32(off), klen: uint32(klen), vlen: uint32(len(val))}
	if group >= 0 {
		e.group = uint32(klen - len(fields) + group)
	}
	p.stage(e)
	return nil
}

// addBatch files the entries order of a Batch (ents, their bytes in src)
// directly, without staging them: each is probed where it lies in src and
// its bytes are appended to buf only when the part keeps them (a new
// group, an Add entry, or a first-sorting entry of another size than its
// group's); one that sorts first with the same sizes is copied over its
// group's bytes, and one that does not sort first costs no copy at all.
// The probes go in chunks of len(ghs) (scratch), their memory touched
// first as in file. With limit > 0 it stops once the part's size exceeds
// limit (a spilled partition's share), returning how many it filed.
func (p *part) addBatch(src []byte, ents []ent, order []int32, limit int64, ghs []uint64) (int, error) {
	p.file() // entries staged by Writer.add first: file compacts buf's tail
	var n uint64
	for _, i := range order {
		n += uint64(ents[i].klen + ents[i].vlen)
	}
	if uint64(len(p.buf))+n > maxPartBytes {
		return 0, errPartFull
	}
	done := 0
	for done < len(order) {
		chunk := order[done:min(len(order), done+len(ghs))]
		p.touchBatch(src, ents, chunk, ghs[:len(chunk)])
		for j, i := range chunk {
			p.placeFrom(ents[i], src, ghs[j])
			done++
			if limit > 0 && p.size() > limit {
				return done, nil
			}
		}
	}
	return done, nil
}

// touchBatch is touch for the entries chunk of a Batch.
func (p *part) touchBatch(src []byte, ents []ent, chunk []int32, ghs []uint64) {
	for j, i := range chunk {
		ghs[j] = 0
		if e := ents[i]; e.group != 0 {
			k := src[e.off : e.off+e.klen]
			ghs[j] = groupHash(e.h, k[len(keyPart(k)):e.group])
		}
	}
	p.touchSlots(ghs)
}

// placeFrom is place for an entry whose bytes are src[e.off:], not buf's
// last: they are appended to buf only when kept (see addBatch).
func (p *part) placeFrom(e ent, src []byte, gh uint64) {
	b := src[e.off : e.off+e.klen+e.vlen]
	if e.group == 0 {
		p.appendEnt(e, b)
		return
	}
	k := b[:e.klen]
	s, found := p.find(k, e.group, gh)
	if !found {
		p.fill(s, gh, p.appendEnt(e, b))
		return
	}
	og, oklen, ovlen := p.lens(s)
	if bytes.Compare(k[e.group:], p.buf[s.off+og:s.off+oklen]) >= 0 {
		return
	}
	if oklen == e.klen && ovlen == e.vlen {
		copy(p.buf[s.off:], b)
		return
	}
	e.off = uint32(len(p.buf))
	p.buf = append(p.buf, b...)
	p.replace(s, e)
}

// find returns the table slot of the group of the AddFirst entry whose
// stored key is k (group its group's length, gh its group hash), and
// whether the group is there; if not, the empty slot where it goes (the
// table grown first when needed).
func (p *part) find(k []byte, group uint32, gh uint64) (*slot, bool) {
	if (p.firsts+1)*maxLoadDen > len(p.table)*maxLoadNum {
		p.grow()
	}
	mask := uint64(len(p.table) - 1)
	for i := gh & mask; ; i = (i + 1) & mask {
		s := &p.table[i]
		if s.w == 0 {
			return s, false
		}
		if s.w>>32 != gh>>32 {
			continue
		}
		og, _, _ := p.lens(s)
		if og == group && bytes.Equal(p.buf[s.off:s.off+og], k[:group]) {
			return s, true
		}
	}
}

// fill files the entry e, the last of ents, in the empty slot s.
func (p *part) fill(s *slot, gh uint64, e ent) {
	*s = slot{w: gh>>32<<32 | uint64(len(p.ents)), off: e.off, lens: packLens(e)}
	p.firsts++
}

// replace makes e, at its own offset, the entry of s's group.
func (p *part) replace(s *slot, e ent) {
	p.ents[uint32(s.w)-1] = e
	s.off, s.lens = e.off, packLens(e)
}

// appendEnt appends the entry e, whose bytes are b, to buf and ents, and
// returns it as appended.
func (p *part) appendEnt(e ent, b []byte) ent {
	e.off = uint32(len(p.buf))
	p.buf = append(p.buf, b...)
	p.ents = append(p.ents, e)
	return e
}

// addStored adds an entry as it was spilled: stored key k, value v and
// group length g (0 for Add).
func (p *part) addStored(h uint64, k, v []byte, g uint32) error {
	off := len(p.buf)
	if uint64(off)+uint64(len(k))+uint64(len(v)) > maxPartBytes {
		return errPartFull
	}
	kp := keyPart(k)
	if kp == nil || g > uint32(len(k)) || (g > 0 && g <= uint32(len(kp))) {
		return errors.New("index: malformed spilled entry")
	}
	p.buf = append(p.buf, k...)
	p.buf = append(p.buf, v...)
	p.stage(ent{h: h, off: uint32(off), klen: uint32(len(k)), vlen: uint32(len(v)), group: g})
	return nil
}

// stageLen is how many entries a part collects before filing them in one
// go: consecutive records go to random partitions, and filing a batch
// while the part's table and entries are in the CPU's cache costs a
// fraction of filing each entry as it arrives (three cache misses).
const stageLen = 512

// stage queues the entry e just appended to buf for filing.
func (p *part) stage(e ent) {
	if len(p.staged) == 0 {
		p.stageOff = int(e.off)
	}
	p.staged = append(p.staged, e)
	if len(p.staged) >= stageLen {
		p.file()
	}
}

// file files the staged entries and compacts their bytes: an entry
// dropped, or copied over its group's entry, leaves none.
func (p *part) file() {
	if len(p.staged) == 0 {
		return
	}
	var ghs [stageLen]uint64
	p.touch(ghs[:len(p.staged)])
	w := p.stageOff
	for i, e := range p.staged {
		n := int(e.klen + e.vlen)
		if int(e.off) != w {
			copy(p.buf[w:], p.buf[e.off:int(e.off)+n])
			e.off = uint32(w)
		}
		if p.place(e, ghs[i]) {
			w += n
		}
	}
	p.buf = p.buf[:w]
	p.staged = p.staged[:0]
}

// touch sets ghs[i] to the group hash of the staged entry i (AddFirst
// entries only; 0 for the others) and reads, for all of them, the memory
// their probes will read first (touchSlots).
func (p *part) touch(ghs []uint64) {
	for i, e := range p.staged {
		ghs[i] = 0
		if e.group != 0 {
			k := p.key(e)
			ghs[i] = groupHash(e.h, k[len(keyPart(k)):e.group])
		}
	}
	p.touchSlots(ghs)
}

// touchSlots reads, for the group hashes ghs (0: none), the memory their
// probes will read first: the table slot and the start and group end of
// the entry it names. It uses none of it: the table and the entries are far
// larger than the CPU's caches, so each of those reads misses, and done
// one probe after the other (each probe's reads depend on the one before)
// the misses wait in turn. Here the reads of one pass do not depend on
// each other, so the CPU overlaps their misses, and place finds the lines
// in the cache (a software prefetch, which Go does not have). Entries
// filed meanwhile, or a table grown, only make a touch useless, never
// wrong: place probes as before. (A hash of 0 is only not touched.)
func (p *part) touchSlots(ghs []uint64) {
	if p.firsts == 0 {
		return
	}
	mask := uint64(len(p.table) - 1)
	var sink uint64
	for _, gh := range ghs {
		if gh != 0 {
			sink += p.table[gh&mask].w
		}
	}
	for _, gh := range ghs {
		if gh == 0 {
			continue
		}
		if s := &p.table[gh&mask]; s.w != 0 && s.w>>32 == gh>>32 {
			sink += uint64(p.buf[s.off])
			if g := s.lens >> 19 & (1<<12 - 1); g != 0 {
				sink += uint64(p.buf[s.off+g-1])
			}
		}
	}
	p.sink = sink
}

// place files the entry e, whose bytes are the last of buf, and says
// whether they are still needed. An AddFirst entry whose group is in the
// table replaces the group's entry if its fields sort first, and is
// dropped otherwise. gh is its group hash (from touch).
func (p *part) place(e ent, gh uint64) bool {
	if e.group == 0 {
		p.ents = append(p.ents, e)
		return true
	}
	k := p.key(e)
	s, found := p.find(k, e.group, gh)
	if !found {
		p.ents = append(p.ents, e)
		p.fill(s, gh, e)
		return true
	}
	og, oklen, ovlen := p.lens(s)
	if bytes.Compare(k[e.group:], p.buf[s.off+og:s.off+oklen]) >= 0 {
		return false
	}
	if oklen == e.klen && ovlen == e.vlen {
		copy(p.buf[s.off:], p.buf[e.off:e.off+e.klen+e.vlen])
		return false
	}
	p.replace(s, e)
	return true
}

// grow doubles the table and files the AddFirst entries again.
func (p *part) grow() {
	n := max(16, 2*len(p.table))
	p.table = make([]slot, n)
	mask := uint64(n - 1)
	for x, e := range p.ents {
		if e.group == 0 {
			continue
		}
		k := p.key(e)
		gh := groupHash(e.h, k[len(keyPart(k)):e.group])
		i := gh & mask
		for p.table[i].w != 0 {
			i = (i + 1) & mask
		}
		p.table[i] = slot{w: gh>>32<<32 | uint64(x+1), off: e.off, lens: packLens(e)}
	}
}

// groupHash mixes the key's hash with the tag and group bytes b.
func groupHash(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// sort orders the part's entries for the walk: by hash (a radix sort of
// integers), then each run of equal hashes (one key's entries, or a rare
// collision) by their stored keys' bytes. The table is dropped.
func (p *part) sort(tmp []ent) []ent {
	p.file()
	p.table, p.firsts, p.staged = nil, 0, nil
	if cap(tmp) < len(p.ents) {
		tmp = make([]ent, len(p.ents))
	}
	radixSortByHash(p.ents, tmp[:len(p.ents)])
	for i := 0; i < len(p.ents); {
		j := i + 1
		for j < len(p.ents) && p.ents[j].h == p.ents[i].h {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(p.ents[i:j], func(a, b ent) int { return bytes.Compare(p.key(a)[8:], p.key(b)[8:]) })
		}
		i = j
	}
	return tmp
}
