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
// corrupt batch must not take the process's memory.
const maxDecompressed = 256 << 20

// inflater decompresses record batches, reusing its decoders and readers
// between batches. It is not safe for concurrent use.
type inflater struct {
	src  bytes.Reader
	gz   *gzip.Reader
	lz   *lz4.Reader
	zstd *zstd.Decoder
}

// inflate appends the decompressed form of src (compressed with codec) to
// dst.
func (f *inflater) inflate(dst, src []byte, codec int16) ([]byte, error) {
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
		return readAll(dst, f.gz, "gzip")
	case codecSnappy:
		return unsnappy(dst, src)
	case codecLZ4:
		f.src.Reset(src)
		if f.lz == nil {
			f.lz = lz4.NewReader(&f.src)
		} else {
			f.lz.Reset(&f.src)
		}
		return readAll(dst, f.lz, "lz4")
	case codecZstd:
		if f.zstd == nil {
			// One goroutine-free decoder, reused: DecodeAll runs in the caller.
			d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecompressed),
				zstd.IgnoreChecksum(true)) // the batch CRC covers the compressed bytes
			if err != nil {
				return dst, fmt.Errorf("zstd: %w", err)
			}
			f.zstd = d
		}
		out, err := f.zstd.DecodeAll(src, dst)
		if err != nil {
			return dst, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
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

// readAll appends everything r yields to dst, at most maxDecompressed bytes.
func readAll(dst []byte, r io.Reader, codec string) ([]byte, error) {
	start := len(dst)
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if errors.Is(err, io.EOF) {
			return dst, nil
		}
		if err != nil {
			return dst[:start], fmt.Errorf("%s: %w", codec, err)
		}
		if len(dst)-start > maxDecompressed {
			return dst[:start], fmt.Errorf("%s: batch decompresses to more than %d bytes", codec, maxDecompressed)
		}
	}
}

// xerialMagic starts snappy data in the framing the Java client writes
// (snappy-java's SnappyOutputStream): magic, version, compatible version,
// then blocks each preceded by its length.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// unsnappy appends the decompressed form of a snappy batch to dst: either
// xerial-framed or one raw block (librdkafka, franz-go).
func unsnappy(dst, src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, xerialMagic) {
		return unsnappyBlock(dst, src)
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
		if dst, err = unsnappyBlock(dst, rest[:n]); err != nil {
			return dst[:start], err
		}
		rest = rest[n:]
	}
	return dst, nil
}

func unsnappyBlock(dst, block []byte) ([]byte, error) {
	n, err := s2.DecodedLen(block)
	if err != nil {
		return dst, fmt.Errorf("snappy: %w", err)
	}
	if n > maxDecompressed {
		return dst, fmt.Errorf("snappy: block decompresses to %d bytes", n)
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
