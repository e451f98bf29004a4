package kread

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Fuzz targets for every byte kread takes from a broker: record batches
// (FuzzDecode), their decompression with each codec (FuzzInflate) and the
// Fetch response around them (FuzzFetchResponse). No input may panic,
// hand out a record outside the range asked for, or take more memory than
// the decompression limit. The seeds are real batches built by the
// test-side encoder (batchenc_test.go), in testdata/fuzz (regenerate them
// with LOSSAUDIT_TESTBED_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds).
//
//	go test -run '^$' -fuzz FuzzDecode -fuzztime 10m -parallel 1 ./audit/kread

// fuzzLimit is the decompression limit under fuzzing: small, so that a
// bomb is found (and rejected) fast.
const fuzzLimit = 1 << 20

// seedBatches are real record batches: every codec, transactions, control
// markers, headers, LogAppendTime, null keys and values.
func seedBatches(t testing.TB) map[string][]byte {
	h := func(k, v string) [2][]byte { return [2][]byte{[]byte(k), []byte(v)} }
	recs := func(n int) []encRec {
		var out []encRec
		for i := range n {
			r := encRec{tsDelta: int64(i), key: fmt.Appendf(nil, "key-%d", i%5), value: []byte(strings.Repeat(fmt.Sprintf("v%d,", i), 1+i%4))}
			switch i % 4 {
			case 1:
				r.key = nil
			case 2:
				r.value = nil
				r.headers = [][2][]byte{h("id", fmt.Sprint(i)), h("x", "")}
			}
			out = append(out, r)
		}
		return out
	}
	seeds := map[string][]byte{}
	for _, c := range []struct {
		name   string
		codec  int16
		xerial bool
	}{{"none", codecNone, false}, {"gzip", codecGzip, false}, {"snappy", codecSnappy, false}, {"snappy-xerial", codecSnappy, true}, {"lz4", codecLZ4, false}, {"zstd", codecZstd, false}} {
		b := encBatch{base: 10, lastOffsetDelta: -1, baseTS: 1_700_000_000_000, maxTS: 1_700_000_000_011, pid: -1, epoch: -1, codec: c.codec, xerial: c.xerial, recs: recs(12)}
		seeds["batch-"+c.name] = b.encode(t)
	}
	appendTime := encBatch{base: 0, lastOffsetDelta: -1, baseTS: 5, maxTS: 99, pid: -1, epoch: -1, logAppendTime: true, recs: recs(3)}
	seeds["batch-logappendtime"] = appendTime.encode(t)
	txn := encBatch{base: 0, lastOffsetDelta: -1, baseTS: 1000, maxTS: 1002, pid: 7, epoch: 0, txn: true, codec: codecZstd, recs: recs(3)}
	abort := encBatch{base: 3, lastOffsetDelta: -1, baseTS: 1003, maxTS: 1003, pid: 7, txn: true, control: true, recs: []encRec{controlRec(true)}}
	commit := encBatch{base: 5, lastOffsetDelta: -1, baseTS: 1005, maxTS: 1005, pid: 7, txn: true, control: true, recs: []encRec{controlRec(false)}}
	seeds["stream-aborted-txn"] = stream(txn.encode(t), abort.encode(t), data(-1, false, 4, "x"), commit.encode(t))
	compacted := encBatch{base: 13, lastOffsetDelta: 4, pid: 7, epoch: 0, txn: true}
	seeds["stream-compacted"] = stream(data(-1, false, 0, "a", "b"), compacted.encode(t), data(-1, false, 18, "e"))
	return seeds
}

// fixCRCs recomputes the CRC of every complete batch in rs, so that
// mutations reach the decoder past the checksum.
func fixCRCs(rs []byte) {
	for pos := 0; len(rs)-pos >= batchHeader; {
		b := rs[pos:]
		length := int64(int32(binary.BigEndian.Uint32(b[8:])))
		if length < batchHeader-batchLengthEnd || int64(len(b)) < batchLengthEnd+length {
			return
		}
		b = b[:batchLengthEnd+length]
		binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
		pos += len(b)
	}
}

// checkDecoded asserts what any answer of the decoder must satisfy.
func checkDecoded(t *testing.T, recs []Record, next, from, to int64, wantAborted bool) {
	if next < from || next > max(to, from) {
		t.Fatalf("next %d outside [%d, %d]", next, from, to)
	}
	for _, r := range recs {
		if r.Offset < from || r.Offset >= to {
			t.Fatalf("record at offset %d outside [%d, %d)", r.Offset, from, to)
		}
		if r.Kind == Control || r.Kind == Aborted && !wantAborted {
			t.Fatalf("record at offset %d handed out as %s", r.Offset, r.Kind)
		}
		// Touch every byte: a slice past its buffer panics here.
		_ = bytes.Count(r.Key, []byte{0}) + bytes.Count(r.Value, []byte{0}) + bytes.Count(r.Header, []byte{0})
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range seedBatches(f) {
		f.Add(s, int64(0), int64(100), false, "id")
	}
	// One decoder for every input, as a worker keeps its own between
	// fetches: what one input leaves behind must not spoil the next.
	d := decoder{inf: inflater{limit: fuzzLimit}}
	f.Cleanup(d.inf.close)
	f.Fuzz(func(t *testing.T, rs []byte, from, span int64, wantAborted bool, header string) {
		rs = bytes.Clone(rs)
		fixCRCs(rs)
		from = max(from, 0) % (1 << 40)
		to := from + max(span, 0)%(1<<20)
		aborted := []txnMark{{pid: 7, first: 0}, {pid: 9, first: 2}}
		d.header = header
		recs, _, next, err := d.decode(rs, aborted, from, to, wantAborted)
		if err == nil {
			checkDecoded(t, recs, next, from, to, wantAborted)
		}
		// Emitting early, with the decoder reused, as a worker does.
		var emitted []Record
		rest, _, next2, err2 := d.decodeEmit(rs, aborted, from, to, wantAborted, func(rs []Record) error {
			checkDecoded(t, rs, from, from, to, wantAborted)
			emitted = append(emitted, rs...)
			return nil
		})
		if (err == nil) != (err2 == nil) {
			t.Fatalf("decode: %v, decodeEmit: %v", err, err2)
		}
		if err2 == nil {
			checkDecoded(t, rest, next2, from, to, wantAborted)
			if next2 != next || len(emitted)+len(rest) != len(recs) {
				t.Fatalf("decodeEmit: next %d and %d records, decode: next %d and %d records", next2, len(emitted)+len(rest), next, len(recs))
			}
		}
	})
}

func FuzzInflate(f *testing.F) {
	raw := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", 40))
	for _, c := range []struct {
		codec  int16
		xerial bool
	}{{codecGzip, false}, {codecSnappy, false}, {codecSnappy, true}, {codecLZ4, false}, {codecZstd, false}} {
		f.Add(uint8(c.codec), compress(f, c.codec, c.xerial, raw))
		f.Add(uint8(c.codec), compress(f, c.codec, c.xerial, nil))
	}
	f.Fuzz(func(t *testing.T, codec uint8, src []byte) {
		inf := inflater{limit: fuzzLimit}
		defer inf.close()
		prefix := []byte("arena")
		for range 2 { // twice: the second reuses the decoders
			out, err := inf.inflate(prefix, src, int16(codec&attrCodec))
			if !bytes.Equal(out[:len(prefix)], prefix) {
				t.Fatalf("inflate changed what dst held before")
			}
			if err != nil {
				if len(out) != len(prefix) {
					t.Fatalf("inflate failed (%v) but left %d bytes", err, len(out)-len(prefix))
				}
				var tl *TooLargeError
				if errors.As(err, &tl) && classify(err) != permanent {
					t.Fatalf("a batch too large is retried: %v", err)
				}
				continue
			}
			if len(out)-len(prefix) > fuzzLimit {
				t.Fatalf("inflate returned %d bytes, limit %d", len(out)-len(prefix), fuzzLimit)
			}
		}
	})
}

// seedFetch is a Fetch response body of version v (after the size and the
// correlation id): a transactional partition, a compressed one, an error.
func seedFetch(seeds map[string][]byte, v int16) []byte {
	raw := encodeFetchResponse(v, 1, "orders",
		encPartition{partition: 0, hw: 6, lso: 6, logS: 0, aborted: [][2]int64{{7, 0}}, records: seeds["stream-aborted-txn"]},
		encPartition{partition: 1, hw: 22, lso: 22, records: seeds["batch-zstd"]},
		encPartition{partition: 2, errorCode: 1})
	return raw[8:]
}

func FuzzFetchResponse(f *testing.F) {
	seeds := seedBatches(f)
	for _, v := range []int16{4, 5, 7, 11} {
		f.Add(v, seedFetch(seeds, v))
	}
	d := decoder{inf: inflater{limit: fuzzLimit}} // reused, as in FuzzDecode
	f.Cleanup(d.inf.close)
	f.Fuzz(func(t *testing.T, v int16, body []byte) {
		v = minFetchVersion + (max(v, 0) % (maxFetchVersion - minFetchVersion + 1))
		var r fetchResponse
		if err := r.parse(body, v); err != nil {
			return
		}
		for i := range r.parts {
			p := &r.parts[i]
			if p.txnFrom > p.txnTo || p.txnTo > len(r.txns) {
				t.Fatalf("partition %d: aborted transactions [%d:%d] of %d", i, p.txnFrom, p.txnTo, len(r.txns))
			}
			if r.find(string(p.topic), p.partition) == nil {
				t.Fatalf("partition %s[%d] parsed but not found", p.topic, p.partition)
			}
			recs, _, next, err := d.decode(p.records, r.aborted(p), 0, 1<<20, true)
			if err == nil {
				checkDecoded(t, recs, next, 0, 1<<20, true)
			}
		}
	})
}

// TestWriteFuzzSeeds writes the seed corpus of the fuzz targets into
// testdata/fuzz when LOSSAUDIT_TESTBED_WRITE_FUZZ_SEEDS=1 (the files are kept in
// the repository; this regenerates them after a change of the encoder).
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("LOSSAUDIT_TESTBED_WRITE_FUZZ_SEEDS") != "1" {
		t.Skip("LOSSAUDIT_TESTBED_WRITE_FUZZ_SEEDS is not 1")
	}
	write := func(target, name string, args ...any) {
		var b strings.Builder
		b.WriteString("go test fuzz v1\n")
		for _, a := range args {
			switch a := a.(type) {
			case []byte:
				fmt.Fprintf(&b, "[]byte(%q)\n", a)
			case string:
				fmt.Fprintf(&b, "string(%q)\n", a)
			default:
				fmt.Fprintf(&b, "%T(%v)\n", a, a)
			}
		}
		dir := filepath.Join("testdata", "fuzz", target)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	seeds := seedBatches(t)
	for name, s := range seeds {
		write("FuzzDecode", name, s, int64(0), int64(100), false, "id")
	}
	raw := []byte(strings.Repeat("the quick brown fox jumps over the lazy dog ", 40))
	for _, c := range []struct {
		name   string
		codec  int16
		xerial bool
	}{{"gzip", codecGzip, false}, {"snappy", codecSnappy, false}, {"snappy-xerial", codecSnappy, true}, {"lz4", codecLZ4, false}, {"zstd", codecZstd, false}} {
		write("FuzzInflate", c.name, uint8(c.codec), compress(t, c.codec, c.xerial, raw))
	}
	for _, v := range []int16{4, 5, 7, 11} {
		write("FuzzFetchResponse", fmt.Sprintf("v%d", v), v, seedFetch(seeds, v))
	}
}
