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
// is fixed size: an entry costs its bytes, one ent and about two table
// slots, whatever its key's history.
type part struct {
	buf    []byte
	ents   []ent
	table  []uint64 // open addressing: group hash's high 32 bits << 32 | ents index + 1; 0 is empty
	firsts int      // AddFirst entries in table
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

// maxPartBytes bounds a part's buf (offsets are 32-bit).
const maxPartBytes = 1<<32 - 1

var errPartFull = errors.New("index: a partition of the evidence outgrew 4 GiB (one key's entries?)")

func (p *part) key(e ent) []byte { return p.buf[e.off : e.off+e.klen] }
func (p *part) val(e ent) []byte { return p.buf[e.off+e.klen : e.off+e.klen+e.vlen] }

// bytes is the memory the part holds.
func (p *part) bytes() int64 {
	return int64(cap(p.buf)) + int64(cap(p.ents)+cap(p.staged))*entSize + int64(cap(p.table))*8
}

// size is the memory the part's entries use (not its capacity).
func (p *part) size() int64 {
	return int64(len(p.buf)) + int64(len(p.ents)+len(p.staged))*entSize + int64(p.firsts)*16
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
		if e := ents[i]; e.group != 0 {
			k := src[e.off : e.off+e.klen]
			ghs[j] = groupHash(e.h, k[len(keyPart(k)):e.group])
		}
	}
	if p.firsts == 0 {
		return
	}
	mask := uint64(len(p.table) - 1)
	var sink uint64
	for j, i := range chunk {
		if ents[i].group != 0 {
			sink += p.table[ghs[j]&mask]
		}
	}
	for j, i := range chunk {
		if ents[i].group == 0 {
			continue
		}
		if s := p.table[ghs[j]&mask]; s != 0 && s>>32 == ghs[j]>>32 {
			sink += uint64(p.ents[uint32(s)-1].off)
		}
	}
	for j, i := range chunk {
		if ents[i].group == 0 {
			continue
		}
		if s := p.table[ghs[j]&mask]; s != 0 && s>>32 == ghs[j]>>32 {
			old := p.ents[uint32(s)-1]
			sink += uint64(p.buf[old.off]) + uint64(p.buf[old.off+old.group-1])
		}
	}
	p.sink = sink
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
	if p.firsts+1 > len(p.table)/2 {
		p.grow()
	}
	mask := uint64(len(p.table) - 1)
	tagged := gh >> 32 << 32
	for i := gh & mask; ; i = (i + 1) & mask {
		s := p.table[i]
		if s == 0 {
			p.table[i] = tagged | uint64(len(p.ents)+1)
			p.firsts++
			p.appendEnt(e, b)
			return
		}
		if s>>32 != gh>>32 {
			continue
		}
		old := &p.ents[uint32(s)-1]
		ok := p.key(*old)
		if old.group != e.group || !bytes.Equal(ok[:old.group], k[:e.group]) {
			continue
		}
		if bytes.Compare(k[e.group:], ok[old.group:]) >= 0 {
			return
		}
		if old.klen == e.klen && old.vlen == e.vlen {
			copy(p.buf[old.off:], b)
			return
		}
		e.off = uint32(len(p.buf))
		p.buf = append(p.buf, b...)
		*old = e
		return
	}
}

// appendEnt appends the entry e, whose bytes are b, to buf and ents.
func (p *part) appendEnt(e ent, b []byte) {
	e.off = uint32(len(p.buf))
	p.buf = append(p.buf, b...)
	p.ents = append(p.ents, e)
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
// entries only) and reads, for all of them, the memory their probes will
// read first: the table slot, the entry it names and the start of that
// entry's key. It uses none of it: the table and the entries are far
// larger than the CPU's caches, so each of those reads misses, and done
// one probe after the other (each probe's reads depend on the one before)
// the misses wait in turn. Here the reads of one pass do not depend on
// each other, so the CPU overlaps their misses, and place finds the lines
// in the cache (a software prefetch, which Go does not have). Entries
// filed meanwhile, or a table grown, only make a touch useless, never
// wrong: place probes as before.
func (p *part) touch(ghs []uint64) {
	for i, e := range p.staged {
		if e.group != 0 {
			k := p.key(e)
			ghs[i] = groupHash(e.h, k[len(keyPart(k)):e.group])
		}
	}
	if p.firsts == 0 {
		return
	}
	mask := uint64(len(p.table) - 1)
	var sink uint64
	for i, e := range p.staged {
		if e.group != 0 {
			sink += p.table[ghs[i]&mask]
		}
	}
	for i, e := range p.staged {
		if e.group == 0 {
			continue
		}
		if s := p.table[ghs[i]&mask]; s != 0 && s>>32 == ghs[i]>>32 {
			sink += uint64(p.ents[uint32(s)-1].off)
		}
	}
	for i, e := range p.staged {
		if e.group == 0 {
			continue
		}
		if s := p.table[ghs[i]&mask]; s != 0 && s>>32 == ghs[i]>>32 {
			old := p.ents[uint32(s)-1]
			sink += uint64(p.buf[old.off]) + uint64(p.buf[old.off+old.group-1])
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
	if p.firsts+1 > len(p.table)/2 {
		p.grow()
	}
	mask := uint64(len(p.table) - 1)
	tagged := gh >> 32 << 32
	for i := gh & mask; ; i = (i + 1) & mask {
		s := p.table[i]
		if s == 0 {
			p.table[i] = tagged | uint64(len(p.ents)+1)
			p.firsts++
			p.ents = append(p.ents, e)
			return true
		}
		if s>>32 != gh>>32 {
			continue
		}
		old := &p.ents[uint32(s)-1]
		ok := p.key(*old)
		if old.group != e.group || !bytes.Equal(ok[:old.group], k[:e.group]) {
			continue
		}
		if bytes.Compare(k[e.group:], ok[old.group:]) >= 0 {
			return false
		}
		if old.klen == e.klen && old.vlen == e.vlen {
			copy(p.buf[old.off:], p.buf[e.off:e.off+e.klen+e.vlen])
			return false
		}
		*old = e
		return true
	}
}

// grow doubles the table and files the AddFirst entries again.
func (p *part) grow() {
	n := max(16, 2*len(p.table))
	p.table = make([]uint64, n)
	mask := uint64(n - 1)
	for x, e := range p.ents {
		if e.group == 0 {
			continue
		}
		k := p.key(e)
		gh := groupHash(e.h, k[len(keyPart(k)):e.group])
		i := gh & mask
		for p.table[i] != 0 {
			i = (i + 1) & mask
		}
		p.table[i] = gh>>32<<32 | uint64(x+1)
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
