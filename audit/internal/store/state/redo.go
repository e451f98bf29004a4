package state

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// The redo log: a magic header, then one entry per change (op, key length,
// key and, for opPut, value length and value, lengths as uvarints), then a
// trailer (opEnd and the number of entries). The checksum (xxhash64 of
// every byte before it) and the size are kept in the commit record, so a
// log is accepted only whole and unaltered.
const (
	opPut    byte = 1
	opDelete byte = 2
	opMark   byte = 3
	opUnmark byte = 4
	opEnd    byte = 0xff

	logMagic  = "lossaudit-redo-1\n"
	logPrefix = "redo-"
	logSuffix = ".log"
)

func isLogName(n string) bool {
	return strings.HasPrefix(n, logPrefix) && strings.HasSuffix(n, logSuffix)
}

// logRef names a complete log in the commit record.
type logRef struct {
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	Sum     uint64 `json:"sum"`
	Entries int64  `json:"entries"`
}

func (r *logRef) encode() []byte {
	b, _ := json.Marshal(r) // plain fields: cannot fail
	return b
}

func decodeRef(b []byte) (*logRef, error) {
	var r logRef
	if err := json.Unmarshal(b, &r); err != nil || !isLogName(r.Name) || filepath.Base(r.Name) != r.Name {
		return nil, fmt.Errorf("the commit record %q is damaged", b)
	}
	return &r, nil
}

// logWriter appends entries to a new log file.
type logWriter struct {
	f     *os.File
	w     *bufio.Writer
	h     *xxhash.Digest
	size  int64
	count int64
	buf   []byte
	dir   string
}

func createLog(dir string) (*logWriter, error) {
	f, err := os.CreateTemp(dir, logPrefix+"*"+logSuffix)
	if err != nil {
		return nil, fmt.Errorf("state: creating a redo log in %s: %w", dir, err)
	}
	l := &logWriter{f: f, w: bufio.NewWriterSize(f, 1<<20), h: xxhash.New(), dir: dir}
	if err := l.write([]byte(logMagic)); err != nil {
		l.discard()
		return nil, err
	}
	return l, nil
}

func (l *logWriter) write(b []byte) error {
	if _, err := l.w.Write(b); err != nil {
		return fmt.Errorf("state: writing %s: %w", l.f.Name(), err)
	}
	_, _ = l.h.Write(b)
	l.size += int64(len(b))
	return nil
}

func (l *logWriter) add(op byte, key, val []byte) error {
	b := append(l.buf[:0], op)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	if op == opPut {
		b = binary.AppendUvarint(b, uint64(len(val)))
		b = append(b, val...)
	}
	l.buf = b
	l.count++
	return l.write(b)
}

// finish writes the trailer and makes the log durable (file and
// directory synced), returning its reference.
func (l *logWriter) finish() (*logRef, error) {
	b := binary.AppendUvarint([]byte{opEnd}, uint64(l.count))
	if err := l.write(b); err != nil {
		return nil, err
	}
	if err := l.w.Flush(); err != nil {
		return nil, fmt.Errorf("state: writing %s: %w", l.f.Name(), err)
	}
	if err := l.f.Sync(); err != nil {
		return nil, fmt.Errorf("state: syncing %s: %w", l.f.Name(), err)
	}
	if err := l.f.Close(); err != nil {
		return nil, fmt.Errorf("state: closing %s: %w", l.f.Name(), err)
	}
	if err := syncDir(l.dir); err != nil {
		return nil, err
	}
	return &logRef{Name: filepath.Base(l.f.Name()), Size: l.size, Sum: l.h.Sum64(), Entries: l.count}, nil
}

func (l *logWriter) discard() {
	l.f.Close()
	os.Remove(l.f.Name())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("state: syncing %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("state: syncing %s: %w", dir, err)
	}
	return nil
}

var errDamaged = errors.New("the redo log of the committed step is damaged or missing, so the state cannot be recovered: move the state directory away to start a new baseline")

// readLog checks the log at path against ref (size and checksum), then
// calls fn with every entry in order. key and val are valid only during
// the call.
func readLog(path string, ref *logRef, fn func(op byte, key, val []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w (%v)", errDamaged, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%w (%v)", errDamaged, err)
	}
	if st.Size() != ref.Size {
		return fmt.Errorf("%w (%s has %d bytes, the commit says %d)", errDamaged, ref.Name, st.Size(), ref.Size)
	}
	h := xxhash.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("%w (%v)", errDamaged, err)
	}
	if h.Sum64() != ref.Sum {
		return fmt.Errorf("%w (checksum of %s differs)", errDamaged, ref.Name)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	r := bufio.NewReaderSize(f, 1<<20)
	magic := make([]byte, len(logMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != logMagic {
		return fmt.Errorf("%w (%s does not start like a redo log)", errDamaged, ref.Name)
	}
	var key, val []byte
	var n int64
	for {
		op, err := r.ReadByte()
		if err != nil {
			return fmt.Errorf("%w (%s ends early: %v)", errDamaged, ref.Name, err)
		}
		if op == opEnd {
			c, err := binary.ReadUvarint(r)
			if err != nil || int64(c) != n || n != ref.Entries {
				return fmt.Errorf("%w (%s: %d entries, trailer says %d)", errDamaged, ref.Name, n, c)
			}
			return nil
		}
		if key, err = readBytes(r, key); err != nil {
			return fmt.Errorf("%w (%s: %v)", errDamaged, ref.Name, err)
		}
		val = val[:0]
		switch op {
		case opPut:
			if val, err = readBytes(r, val); err != nil {
				return fmt.Errorf("%w (%s: %v)", errDamaged, ref.Name, err)
			}
		case opDelete, opMark, opUnmark:
		default:
			return fmt.Errorf("%w (%s: unknown entry %#x)", errDamaged, ref.Name, op)
		}
		n++
		if err := fn(op, key, val); err != nil {
			return err
		}
	}
}

func readBytes(r *bufio.Reader, buf []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > 64<<20 {
		return nil, fmt.Errorf("entry of %d bytes", n)
	}
	if uint64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	_, err = io.ReadFull(r, buf)
	return buf, err
}
