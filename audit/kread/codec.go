package kread

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Compression codecs of a record batch (attributes bits 0-2).
const (
	codecNone   = 0
	codecGzip   = 1
	codecSnappy = 2
	codecLZ4    = 3
	codecZstd   = 4
)

// maxDecompressed bounds what one batch may decompress to: a hostile or
// corrupt batch must not take the process's memory. Kafka's own limit on a
// batch (message.max.bytes, 1 MiB by default) applies to its compressed
// size; 256 MiB leaves room for any sane compression ratio.
const maxDecompressed = 256 << 20

// TooLargeError is a record batch that decompresses to more than the limit:
// a hostile or corrupt batch, reported rather than let take the memory.
// Retrying cannot help (the error wrapping it names the topic, partition
// and offset).
type TooLargeError struct {
	Codec string
	Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: batch decompresses to more than %d MiB (the limit on one batch); the batch is corrupt or hostile", e.Codec, e.Limit>>20)
}

// inflater decompresses record batches, reusing its decoders and readers
// between batches. It is not safe for concurrent use.
type inflater struct {
	src  bytes.Reader
	gz   *gzip.Reader
	lz   *lz4.Reader
	zstd *zstd.Decoder
	// limit bounds one batch's decompressed size: maxDecompressed when 0
	// (tests lower it).
	limit int
}

func (f *inflater) max() int {
	if f.limit > 0 {
		return f.limit
	}
	return maxDecompressed
}

// inflate appends the decompressed form of src (compressed with codec) to
// dst, at most the inflater's limit of bytes.
func (f *inflater) inflate(dst, src []byte, codec int16) ([]byte, error) {
	limit := f.max()
	switch codec {
	case codecGzip:
		f.src.Reset(src)
		if f.gz == nil {
			gz, err := gzip.NewReader(&f.src)
			if err != nil {
				return dst, fmt.Errorf("gzip: %w", err)
			}
			f.gz = gz
		} else if err := f.gz.Reset(&f.src); err != nil {
			return dst, fmt.Errorf("gzip: %w", err)
		}
		return readAll(dst, f.gz, "gzip", limit)
	case codecSnappy:
		return unsnappy(dst, src, limit)
	case codecLZ4:
		f.src.Reset(src)
		if f.lz == nil {
			f.lz = lz4.NewReader(&f.src)
		} else {
			f.lz.Reset(&f.src)
		}
		return readAll(dst, f.lz, "lz4", limit)
	case codecZstd:
		if f.zstd == nil {
			// One goroutine-free decoder, reused: DecodeAll runs in the caller.
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)),
				zstd.IgnoreChecksum(true)) // the batch CRC covers the compressed bytes
			if err != nil {
				return dst, fmt.Errorf("zstd: %w", err)
			}
			f.zstd = d
		}
		// Decoded after dst's bytes but not appended to them: the decoder's
		// limit counts what dst already holds (earlier batches).
		n0 := len(dst)
		out, err := f.zstd.DecodeAll(src, dst[n0:])
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) || err == nil && len(out) > limit {
			return dst, &permanentError{&TooLargeError{Codec: "zstd", Limit: limit}}
		}
		if err != nil {
			return dst, fmt.Errorf("zstd: %w", err)
		}
		if len(out) == 0 {
			return dst, nil
		}
		if cap(dst) > n0 && &dst[:n0+1][n0] == &out[0] { // decoded in place
			return dst[:n0+len(out)], nil
		}
		return append(dst, out...), nil
	}
	return dst, fmt.Errorf("unknown compression codec %d", codec)
}

// close releases the zstd decoder.
func (f *inflater) close() {
	if f.zstd != nil {
		f.zstd.Close()
		f.zstd = nil
	}
}

// readAll appends everything r yields to dst, at most limit bytes: it never
// reads more than one byte past the limit, so that memory stays bounded
// whatever the input claims.
func readAll(dst []byte, r io.Reader, codec string, limit int) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		end := min(cap(dst), start+limit+1)
		n, err := r.Read(dst[len(dst):end])
		dst = dst[:len(dst)+n]
		if len(dst)-start > limit {
			return dst[:start], &permanentError{&TooLargeError{Codec: codec, Limit: limit}}
		}
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return dst[:start], fmt.Errorf("%s: %w", codec, err)
		}
	}
}

// xerialMagic starts snappy data in the framing the Java client writes
// (snappy-java's SnappyOutputStream): magic, version, compatible version,
// then blocks each preceded by its length.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// unsnappy appends the decompressed form of a snappy batch to dst: either
// xerial-framed or one raw block (librdkafka, franz-go).
func unsnappy(dst, src []byte, limit int) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return unsnappyBlock(dst, src, limit)
	}
	if len(src) < 16 {
		return dst, errors.New("snappy: short xerial header")
	}
	start := len(dst)
	for rest := src[16:]; len(rest) > 0; {
		if len(rest) < 4 {
			return dst[:start], errors.New("snappy: truncated xerial block length")
		}
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(n) > uint64(len(rest)) {
			return dst[:start], errors.New("snappy: truncated xerial block")
		}
		var err error
		if dst, err = unsnappyBlock(dst, rest[:n], limit-(len(dst)-start)); err != nil {
			return dst[:start], err
		}
		rest = rest[n:]
	}
	return dst, nil
}

func unsnappyBlock(dst, block []byte, limit int) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return dst, fmt.Errorf("snappy: %w", err)
	}
	if n > limit {
		return dst, &permanentError{&TooLargeError{Codec: "snappy", Limit: limit}}
	}
	off := len(dst)
	dst = grow(dst, n)
	if _, err := s2.Decode(dst[off:off+n], block); err != nil {
		return dst[:off], fmt.Errorf("snappy: %w", err)
	}
	return dst[:off+n], nil
}

// grow returns b extended by n bytes (contents of the new bytes undefined).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}
