package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// TestEachKeyDeclaredOnce: a key exists only through its struct tags in
// Config. No code of the package spells a key in full (messages name keys
// through keyOf, Redacted and the loader through keySpecs), so renaming or
// adding a key is one line.
func TestEachKeyDeclaredOnce(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var code strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(strings.TrimSpace(line), "//") {
				code.WriteString(line + "\n")
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range keySpecs() {
		if seen[s.key] {
			t.Errorf("key %s is declared twice", s.key)
		}
		seen[s.key] = true
		if strings.Contains(code.String(), `"`+s.key+`"`) {
			t.Errorf("key %s is spelled in the package's code; name it through its declaration (keyOf, keySpecs)", s.key)
		}
		if s.check != "" && !contains([]string{"positive", "atleast1", "nonnegative", "nonempty"}, s.check) {
			t.Errorf("key %s: unknown check %q", s.key, s.check)
		}
		if s.redact != "" && s.redact != "secret" && s.redact != "url" {
			t.Errorf("key %s: unknown redact %q", s.key, s.redact)
		}
		if (s.flag == "") != (s.usage == "") {
			t.Errorf("key %s: a flag needs its usage text and usage text a flag", s.key)
		}
	}
	// Every secret is masked by Redacted.
	c := &Config{}
	cv := reflect.ValueOf(c).Elem()
	for _, s := range keySpecs() {
		if s.redact == "secret" {
			cv.FieldByIndex(s.index).SetString("s3cr3t-" + s.key)
		}
	}
	r := c.Redacted()
	for _, s := range keySpecs() {
		if s.redact == "secret" && (strings.Contains(r, "s3cr3t") || !strings.Contains(r, s.key+" = ***\n")) {
			t.Errorf("Redacted does not mask %s:\n%s", s.key, r)
		}
	}
	// Printing the configuration masks them too: a struct holding a secret
	// has String and GoString methods (return redactedStruct(s)).
	for _, format := range []string{"%v", "%+v", "%#v"} {
		if out := fmt.Sprintf(format, c); strings.Contains(out, "s3cr3t") {
			t.Errorf("%s of a Config shows a secret; give the section holding it String and GoString methods (redactedStruct):\n%s", format, out)
		}
	}
}

// TestKeyOf: keyOf names every declared field, entries included, and
// panics on a pointer that is not into the configuration.
func TestKeyOf(t *testing.T) {
	c := &Config{Pipeline: Pipeline{Inputs: make([]Input, 2)}, Compare: Compare{Pairs: make([]Pair, 1)}}
	cv := reflect.ValueOf(c).Elem()
	for _, s := range keySpecs() {
		if got := c.keyOf(cv.FieldByIndex(s.index).Addr().Interface()); got != s.key {
			t.Errorf("keyOf(%s) = %q", s.key, got)
		}
	}
	for _, tc := range []struct {
		ptr  any
		want string
	}{
		{&c.Pipeline.Inputs[1], "pipeline.inputs[1]"},
		{&c.Pipeline.Inputs[1].Name, "pipeline.inputs[1].name"},
		{&c.Pipeline.Inputs[0].KeyFormat, "pipeline.inputs[0].key_format"},
		{&c.Compare.Pairs[0].Sink, "compare.pairs[0].sink"},
		{&c.SinkKafka.TLS.CAFile, "sink_kafka.tls.ca_file"},
	} {
		if got := c.keyOf(tc.ptr); got != tc.want {
			t.Errorf("keyOf = %q, want %q", got, tc.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("keyOf of a foreign pointer did not panic")
		}
	}()
	var other string
	c.keyOf(&other)
}

// sourceValue is the text one source gives a key of type typ in
// TestProvenanceAgreesWithViper, and what it decodes to.
func sourceValue(typ reflect.Type, src int) (text string, want any) {
	n := 11 + src
	switch {
	case typ == reflect.TypeOf(time.Duration(0)):
		return fmt.Sprintf("%ds", n), time.Duration(n) * time.Second
	case typ == timeType:
		tm := time.Date(2026, 1, n, 0, 0, 0, 0, time.UTC)
		return tm.Format(time.RFC3339), tm
	case typ.Kind() == reflect.Bool:
		return fmt.Sprint(src%2 == 0), src%2 == 0
	case typ.Kind() == reflect.Int || typ.Kind() == reflect.Int32:
		return fmt.Sprint(n), fmt.Sprint(n)
	case typ.Kind() == reflect.Slice && typ.Elem().Kind() == reflect.Struct:
		return fmt.Sprintf("[{%s: v%d}]", fieldNames(typ.Elem())[0], n), fmt.Sprintf("v%d", n)
	case typ.Kind() == reflect.Slice:
		return fmt.Sprintf("h%d:9092", n), []string{fmt.Sprintf("h%d:9092", n)}
	}
	return fmt.Sprintf("v%d", n), fmt.Sprintf("v%d", n)
}

// TestProvenanceAgreesWithViper: for every key and every combination of
// sources (file, variable, flag where the key has one), the value viper
// decodes is the one of the highest source, and the provenance Load keeps
// beside viper names that same source in messages (the file's line, the
// variable, the flag).
func TestProvenanceAgreesWithViper(t *testing.T) {
	const (
		srcFile = iota
		srcEnv
		srcFlag
	)
	for _, s := range keySpecs() {
		for combo := 0; combo < 8; combo++ {
			has := func(src int) bool { return combo&(1<<src) != 0 }
			if has(srcFlag) && s.flag == "" {
				continue
			}
			t.Run(fmt.Sprintf("%s/%03b", s.key, combo), func(t *testing.T) {
				clearEnv(t)
				dir := t.TempDir()
				opts := LoadOptions{Flags: pflag.NewFlagSet("t", pflag.ContinueOnError)}
				if err := AddFlags(opts.Flags, flagNames()...); err != nil {
					t.Fatal(err)
				}
				winner, line := -1, 0
				if has(srcFile) {
					parts := strings.Split(s.key, ".")
					var y strings.Builder
					for i, p := range parts {
						y.WriteString(strings.Repeat("  ", i) + p + ":")
						if i < len(parts)-1 {
							y.WriteString("\n")
						}
					}
					text, _ := sourceValue(s.typ, srcFile)
					fmt.Fprintf(&y, " %s\n", text)
					opts.File = writeFile(t, dir, "audit.yaml", y.String())
					winner, line = srcFile, len(parts)
				}
				if has(srcEnv) {
					text, _ := sourceValue(s.typ, srcEnv)
					t.Setenv(EnvName(s.key), text)
					winner = srcEnv
				}
				if has(srcFlag) {
					text, _ := sourceValue(s.typ, srcFlag)
					if err := opts.Flags.Parse([]string{"--" + s.flag, text}); err != nil {
						t.Fatal(err)
					}
					winner = srcFlag
				}
				c, err := decodeLayers(opts)
				if err != nil {
					t.Fatalf("decodeLayers: %v", err)
				}
				got := reflect.ValueOf(c).Elem().FieldByIndex(s.index)
				var gotV any = got.Interface()
				switch {
				case s.entry != nil:
					gotV = nil
					if got.Len() > 0 {
						gotV = got.Index(0).Field(0).Interface()
					}
				case got.Kind() == reflect.Int || got.Kind() == reflect.Int32:
					gotV = fmt.Sprint(got.Int())
				}
				if winner >= 0 {
					if _, want := sourceValue(s.typ, winner); !reflect.DeepEqual(gotV, want) {
						t.Errorf("value %v, want %v (source %d)", gotV, want, winner)
					}
				}
				msg := c.Errorf(s.key, "m").Error()
				var want string
				switch winner {
				case srcFlag:
					want = "--" + s.flag + ": m"
				case srcEnv:
					want = EnvName(s.key) + ": m"
				case srcFile:
					want = fmt.Sprintf("%s:%d: %s: m", opts.File, line, s.key)
				default:
					want = s.key + ": m"
				}
				if msg != want {
					t.Errorf("message %q, want %q", msg, want)
				}
			})
		}
	}
}

// flagNames returns the names of every flag of Flags.
func flagNames() []string {
	var out []string
	for _, f := range Flags() {
		out = append(out, f.Name)
	}
	return out
}
