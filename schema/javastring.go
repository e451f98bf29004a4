package schema

import "unicode/utf8"

// replacement is U+FFFD in UTF-8, what Java's decoder puts in place of each
// malformed sequence.
var replacement = []byte{0xEF, 0xBF, 0xBD}

// JavaStringBytes returns the bytes a Java application writes for the
// string it decoded from b: new String(b, StandardCharsets.UTF_8)
// .getBytes(StandardCharsets.UTF_8), as OpenJDK 17 computes it. That is the
// key a Kafka Streams application selects from an Avro string field
// (Utf8#toString) or reads with the String serde, and writes back with
// the String serde.
//
// Valid UTF-8 is returned as is (the same slice, no allocation). Otherwise
// each malformed sequence becomes one U+FFFD (EF BF BD), where Java counts
// a sequence as follows:
//   - a byte that cannot start a sequence (80..BF, C0, C1, F5..FF) is one;
//   - a lead byte followed by a byte that cannot continue it is one, and
//     that byte starts over: E0 80..9F (overlong), F0 80..8F (overlong),
//     F4 90..BF (above U+10FFFF) and any non-continuation byte end the
//     sequence at the lead;
//   - otherwise the sequence runs as far as its continuation bytes go, so a
//     3- or 4-byte sequence cut short (by a non-continuation byte or by the
//     end of b) is one, however many of its bytes were present;
//   - unlike the Unicode "maximal subpart" practice, ED A0..BF is taken as
//     the start of a sequence: an encoded surrogate (ED A0..BF 80..BF, as
//     CESU-8 writes) is one U+FFFD for its three bytes, not three.
//
// The rules were read off the real decoder: testbed/javastring runs a Java
// program over handcrafted and random inputs and compares.
func JavaStringBytes(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+2*len(replacement))
	for i := 0; i < len(b); {
		n, ok := javaSequence(b[i:])
		if ok {
			out = append(out, b[i:i+n]...)
		} else {
			out = append(out, replacement...)
		}
		i += n
	}
	return out
}

// javaSequence returns the length of the sequence at the start of b (never
// 0 for a non-empty b) and whether it is a well-formed character, following
// Java's UTF-8 decoder. b must not be empty.
func javaSequence(b []byte) (n int, ok bool) {
	c := b[0]
	switch {
	case c < 0x80:
		return 1, true
	case c >= 0xC2 && c <= 0xDF:
		if len(b) > 1 && isCont(b[1]) {
			return 2, true
		}
		return 1, false
	case c >= 0xE0 && c <= 0xEF:
		// The second byte: any continuation byte, except 80..9F after E0.
		// Java does not narrow ED to 80..9F here; it rejects the
		// surrogate once the sequence is complete.
		if len(b) < 2 || !isCont(b[1]) || (c == 0xE0 && b[1] < 0xA0) {
			return 1, false
		}
		if len(b) < 3 || !isCont(b[2]) {
			return 2, false
		}
		if c == 0xED && b[1] >= 0xA0 {
			return 3, false // U+D800..U+DFFF
		}
		return 3, true
	case c >= 0xF0 && c <= 0xF4:
		if len(b) < 2 || !isCont(b[1]) || (c == 0xF0 && b[1] < 0x90) || (c == 0xF4 && b[1] > 0x8F) {
			return 1, false
		}
		if len(b) < 3 || !isCont(b[2]) {
			return 2, false
		}
		if len(b) < 4 || !isCont(b[3]) {
			return 3, false
		}
		return 4, true
	}
	return 1, false
}

func isCont(c byte) bool { return c&0xC0 == 0x80 }
