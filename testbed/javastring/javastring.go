// Package javastring runs JavaString.java, a single-file Java program that
// says what a Java application makes of arbitrary bytes decoded as a
// string: new String(b, UTF_8).getBytes(UTF_8). It is the oracle that
// proves schema.JavaStringBytes and generates its checked-in table.
package javastring

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Source returns the path of JavaString.java (next to this file).
func Source() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("locating JavaString.java: no caller information")
	}
	return filepath.Join(filepath.Dir(file), "JavaString.java"), nil
}

// Roundtrip returns, for each input, the bytes Java gives for
// new String(in, UTF_8).getBytes(UTF_8), running the program once with
// java (Java 11 or later, single-file launch) from PATH.
func Roundtrip(ctx context.Context, inputs [][]byte) ([][]byte, error) {
	src, err := Source()
	if err != nil {
		return nil, err
	}
	var in bytes.Buffer
	for _, b := range inputs {
		in.WriteString(hex.EncodeToString(b))
		in.WriteByte('\n')
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "java", src)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = &in, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("running java %s: %w: %s", src, err, strings.TrimSpace(stderr.String()))
	}
	out := make([][]byte, 0, len(inputs))
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		b, err := hex.DecodeString(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("reading java's output line %d: %w", len(out)+1, err)
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading java's output: %w", err)
	}
	if len(out) != len(inputs) {
		return nil, fmt.Errorf("java printed %d lines for %d inputs", len(out), len(inputs))
	}
	return out, nil
}

// TablePath returns the path of the checked-in table of schema's unit test
// (schema/testdata/javastring.txt).
func TablePath() (string, error) {
	src, err := Source()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(src), "..", "..", "schema", "testdata", "javastring.txt"), nil
}

// Case is one line of the table: a name, an input and what Java made of it.
type Case struct {
	Name    string
	In, Out []byte
	// Unknown is set for a line whose output is "?" (not generated yet).
	Unknown bool
}

// Table is the checked-in table: comment lines, then one case per line
// ("name input-hex output-hex", "-" for an empty string).
type Table struct {
	Comments []string
	Cases    []Case
}

// ReadTable reads a table file.
func ReadTable(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the table: %w", err)
	}
	t := &Table{}
	for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			t.Comments = append(t.Comments, line)
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want name, input hex and output hex, got %q", path, i+1, line)
		}
		c := Case{Name: f[0]}
		if c.In, err = unhex(f[1]); err != nil {
			return nil, fmt.Errorf("%s:%d: input: %w", path, i+1, err)
		}
		if f[2] == "?" {
			c.Unknown = true
		} else if c.Out, err = unhex(f[2]); err != nil {
			return nil, fmt.Errorf("%s:%d: output: %w", path, i+1, err)
		}
		t.Cases = append(t.Cases, c)
	}
	return t, nil
}

// Write writes the table to path.
func (t *Table) Write(path string) error {
	var b strings.Builder
	for _, c := range t.Comments {
		b.WriteString(c + "\n")
	}
	for _, c := range t.Cases {
		out := tohex(c.Out)
		if c.Unknown {
			out = "?"
		}
		fmt.Fprintf(&b, "%s %s %s\n", c.Name, tohex(c.In), out)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return nil
}

func unhex(s string) ([]byte, error) {
	if s == "-" {
		return []byte{}, nil
	}
	return hex.DecodeString(s)
}

func tohex(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}
