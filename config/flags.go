package config

import (
	"fmt"
	"reflect"
	"time"

	"github.com/spf13/pflag"
)

// ConfigFlag is the flag naming the YAML file (--config/-c).
const ConfigFlag = "config"

// flagKeyAnnotation marks, on a pflag.Flag, the key the flag overrides.
const flagKeyAnnotation = "lossaudit/config-key"

// Flag is a command-line flag that sets a configuration key (or, for
// ConfigFlag, names the file).
type Flag struct {
	Name, Shorthand string
	// Key is the configuration key the flag overrides; "" for ConfigFlag.
	Key   string
	Usage string
	// List flags take comma-separated values and may be repeated.
	List bool
}

// timeHelp says what a time key accepts; Flags appends it to the usage of
// every time key's flag.
const timeHelp = "RFC 3339 (2026-11-29T10:00:00Z), a duration before now (-2h, 30m) or now"

// Flags returns every flag Load understands: ConfigFlag, then the flags of
// the keys whose declaration (Config's struct tags) names one, with their
// usage text and the key they override.
func Flags() []Flag {
	out := []Flag{{Name: ConfigFlag, Shorthand: "c", Usage: "YAML configuration file"}}
	for _, s := range keySpecs() {
		if s.flag == "" {
			continue
		}
		usage := s.usage
		if s.typ == reflect.TypeFor[time.Time]() {
			usage += ": " + timeHelp
		}
		out = append(out, Flag{Name: s.flag, Key: s.key, List: s.typ.Kind() == reflect.Slice,
			Usage: usage + " (overrides " + s.key + ")"})
	}
	return out
}

// FlagKeys maps the name of every override flag to the key it sets.
func FlagKeys() map[string]string {
	out := map[string]string{}
	for _, f := range Flags() {
		if f.Key != "" {
			out[f.Name] = f.Key
		}
	}
	return out
}

// AddFlags registers the named flags of Flags on fs. Load reads them from
// the same flag set, and only them: a command's own flag of another name,
// or of the same name and another meaning, is never taken for a key.
func AddFlags(fs *pflag.FlagSet, names ...string) error {
	all := map[string]Flag{}
	for _, f := range Flags() {
		all[f.Name] = f
	}
	for _, name := range names {
		f, ok := all[name]
		if !ok {
			return fmt.Errorf("config.AddFlags: no flag %q", name)
		}
		if f.List {
			fs.StringSliceP(f.Name, f.Shorthand, nil, f.Usage)
		} else {
			fs.StringP(f.Name, f.Shorthand, "", f.Usage)
		}
		_ = fs.SetAnnotation(f.Name, flagKeyAnnotation, []string{f.Key})
	}
	return nil
}
