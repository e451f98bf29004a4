package index

// radixSortByHash sorts ents by their leading hash, stably, with an LSD
// radix sort of 8 passes of 8 bits through tmp (which must be as long);
// passes where every entry has the same byte are skipped.
func radixSortByHash(ents, tmp []ent) {
	if len(ents) < 2 {
		return
	}
	var counts [8][256]int
	for i := range ents {
		h := ents[i].h
		for p := range 8 {
			counts[p][byte(h>>(8*p))]++
		}
	}
	src, dst := ents, tmp[:len(ents)]
	for p := range 8 {
		c := &counts[p]
		if c[byte(src[0].h>>(8*p))] == len(src) {
			continue // every entry has this byte: nothing moves
		}
		var pos [256]int
		sum := 0
		for i := range 256 {
			pos[i] = sum
			sum += c[i]
		}
		for i := range src {
			b := byte(src[i].h >> (8 * p))
			dst[pos[b]] = src[i]
			pos[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &ents[0] {
		copy(ents, src)
	}
}
