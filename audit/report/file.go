package report

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lossaudit/lossaudit/audit/finding"
)

// DefaultFileMode is the permission of report files unless configured
// otherwise (report.file_mode): they hold customer keys, so neither the
// group nor others may read them.
const DefaultFileMode fs.FileMode = 0o600

// PartialSuffix is appended to a report's path when the run was partial.
const PartialSuffix = ".partial"

// ReportPath returns where a report configured at path is written: path
// itself for a complete run, path + ".partial" for a partial one, so that a
// partial audit never replaces a complete report and a script that reads
// path never mistakes an incomplete list for a complete one.
func ReportPath(path string, partial bool) string {
	if partial {
		return path + PartialSuffix
	}
	return path
}

// WriteCSVFile writes the loss report of res atomically to ReportPath(path,
// !res.Complete()), with permission mode (DefaultFileMode when 0), and
// returns that path: a partial or inconclusive run's report goes beside the
// complete one, never over it.
// After a complete run it removes a leftover path + ".partial" from an
// earlier partial run, so the directory never shows a stale partial report
// beside a newer complete one.
func WriteCSVFile(path string, res *finding.Result, mode fs.FileMode) (string, error) {
	return writeReportFile(path, res, mode, func(w io.Writer) error { return WriteResultCSV(w, res) })
}

// WriteJSONFile is WriteCSVFile for the JSON report (WriteJSON).
func WriteJSONFile(path string, res *finding.Result, mode fs.FileMode) (string, error) {
	return writeReportFile(path, res, mode, func(w io.Writer) error { return WriteJSON(w, res) })
}

func writeReportFile(path string, res *finding.Result, mode fs.FileMode, write func(io.Writer) error) (string, error) {
	if res == nil {
		return "", errNilResult
	}
	if mode == 0 {
		mode = DefaultFileMode
	}
	out := ReportPath(path, !res.Complete())
	if err := WriteFileAtomicMode(out, mode, write); err != nil {
		return "", err
	}
	if res.Complete() {
		if err := os.Remove(path + PartialSuffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return out, fmt.Errorf("removing stale partial report %s: %w", path+PartialSuffix, err)
		}
	}
	return out, nil
}

// WriteFileAtomic writes a file through write so that path holds either its
// previous content or the complete new content, never a part: it writes a
// temporary file in the same directory (buffered), fsyncs it, renames it
// over path and fsyncs the directory. If write (or any step) fails, or write
// panics, the temporary file is removed and path is untouched. The new file
// keeps the permission bits of the file it replaces, else gets 0644 (for
// files without customer data, such as metrics; reports use
// WriteFileAtomicMode).
func WriteFileAtomic(path string, write func(io.Writer) error) (err error) {
	mode := fs.FileMode(0o644)
	if fi, statErr := os.Stat(path); statErr == nil {
		mode = fi.Mode().Perm()
	}
	return WriteFileAtomicMode(path, mode, write)
}

// WriteFileAtomicMode is WriteFileAtomic giving the new file permission
// mode whatever the file it replaces had. The temporary file is created
// readable by its owner only and gets mode before the rename, so the
// content is never visible with wider permissions, whatever the umask.
func WriteFileAtomicMode(path string, mode fs.FileMode, write func(io.Writer) error) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if fi, statErr := os.Stat(path); statErr == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("writing %s: not a regular file", path)
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp := f.Name()
	done := false
	defer func() {
		if !done {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	bw := bufio.NewWriterSize(f, 64<<10)
	if err := write(bw); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(mode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	done = true
	// The rename is durable only once the directory is synced; failing to
	// sync it does not make the new file wrong, so this is best effort on
	// systems where directories cannot be opened for sync.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// CheckWritable reports whether a report can be written at path (and at
// path + ".partial"): its directory exists and accepts a new file, and
// path, if it exists, is a regular file. It leaves nothing behind.
func CheckWritable(path string) error {
	for _, p := range []string{path, path + PartialSuffix} {
		if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
			return fmt.Errorf("%s exists and is not a regular file", p)
		}
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".lossaudit-check-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write a report in %s: %v", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
