package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// EnvPrefix is the prefix of the environment variables that override the
// file: key kafka.tls.ca_file is read from LOSSAUDIT_KAFKA_TLS_CA_FILE.
const EnvPrefix = "LOSSAUDIT"

// Key formats accepted for Input.KeyFormat.
const (
	KeyFormatString = "string"
	KeyFormatAvro   = "avro"
	KeyFormatBytes  = "bytes"
)

// SASL mechanisms accepted for SASL.Mechanism.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// LoadOptions says where Load takes the configuration from.
type LoadOptions struct {
	// File is the YAML file; "" means the file named by the ConfigFlag in
	// Flags, if any, else none (defaults, environment and flags only). A
	// named file that cannot be read is an error.
	File string
	// Flags, if not nil, holds the command-line flags registered with
	// AddFlags. Those set on the command line override their keys; any
	// other flag in the set is not looked at.
	Flags *pflag.FlagSet
	// Now is the time relative times (window.from: -2h) count back from;
	// nil means time.Now.
	Now func() time.Time
	// IgnoreEnv, if not nil, reports the LOSSAUDIT_ variables that are not
	// settings but the caller's own (a test harness's): Load does not
	// reject them as misspelt settings.
	IgnoreEnv func(name string) bool
}

// Load reads the configuration from defaults, the YAML file, the
// environment and the flags (in increasing precedence), merges a
// client.properties file if one is named, and validates everything except
// the pipeline (see ValidatePipeline). Every problem is an *Error naming
// where the value was written.
//
// Viper holds the four layers and decides which wins; its UnmarshalExact
// decodes the result into Config through decodeHook. Beside it, Load keeps
// the provenance of every value (the file's line from readYAML, the
// variable, the flag), decided in the same order, for messages.
func Load(opts LoadOptions) (*Config, error) {
	c, err := decodeLayers(opts)
	if err != nil {
		return nil, err
	}
	explicit := map[string]bool{}
	for k := range c.prov.keys {
		explicit[k] = true
	}
	if c.Kafka.ClientProperties != "" {
		if err := applyClientProperties(c, sectionKafka, c.Kafka.ClientProperties, explicit); err != nil {
			return nil, c.Locate(err)
		}
	}
	if c.HasSinkKafka && c.SinkKafka.ClientProperties != "" {
		if err := applyClientProperties(c, sectionSinkKafka, c.SinkKafka.ClientProperties, explicit); err != nil {
			return nil, c.Locate(err)
		}
	}
	if c.Pipeline.StreamsProperties != "" {
		if err := applyStreamsProperties(c, explicit); err != nil {
			return nil, c.Locate(err)
		}
	}
	c.Kafka.SASL.Mechanism = strings.ToUpper(strings.TrimSpace(c.Kafka.SASL.Mechanism))
	c.SinkKafka.SASL.Mechanism = strings.ToUpper(strings.TrimSpace(c.SinkKafka.SASL.Mechanism))
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeLayers is Load up to the decoded values and their provenance:
// without client.properties and validation.
func decodeLayers(opts LoadOptions) (*Config, error) {
	specs := keySpecs()
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	bound := boundFlags(opts.Flags)
	file := opts.File
	if f, ok := bound[ConfigFlag]; ok && f.Changed && file == "" {
		file = f.Value.String()
	}
	prov := &provenance{file: file, keys: map[string]source{}}

	v := viper.New()
	v.AllowEmptyEnv(true)
	for _, s := range specs {
		v.SetDefault(s.key, s.def)
		if err := v.BindEnv(s.key, EnvName(s.key)); err != nil {
			return nil, fmt.Errorf("config: binding %s: %w", s.key, err)
		}
		if f := bound[s.key]; f != nil {
			if err := v.BindPFlag(s.key, f); err != nil {
				return nil, fmt.Errorf("config: binding --%s: %w", f.Name, err)
			}
		}
	}
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, &Error{File: file, Msg: "cannot read the configuration file: " + describeFileErr(err)}
		}
		tree, err := readYAML(file, data, specs, prov)
		if err != nil {
			return nil, err
		}
		if err := v.MergeConfigMap(tree); err != nil {
			return nil, &Error{File: file, Msg: err.Error()}
		}
	}
	if err := checkEnv(os.Environ(), specs, opts.IgnoreEnv); err != nil {
		return nil, err
	}
	for _, s := range specs {
		if f := bound[s.key]; f != nil && f.Changed {
			prov.set(s.key, source{flag: f.Name})
		} else if _, ok := os.LookupEnv(EnvName(s.key)); ok {
			prov.set(s.key, source{env: EnvName(s.key)})
		}
	}

	c := &Config{prov: prov}
	if err := v.UnmarshalExact(c, viper.DecodeHook(decodeHook(now()))); err != nil {
		return nil, prov.decodeError(err)
	}
	c.normalize()
	return c, nil
}

// normalize applies what the decoded values mean beyond their text: any
// sink_kafka key given makes the sink another cluster; a pair without a
// name is named after its source; words are compared trimmed (and
// watch.log_format in any case).
func (c *Config) normalize() {
	for k := range c.prov.keys {
		if strings.HasPrefix(k, sectionSinkKafka+".") {
			c.HasSinkKafka = true
		}
	}
	for i, p := range c.Compare.Pairs {
		if strings.TrimSpace(p.Name) == "" {
			c.Compare.Pairs[i].Name = p.Source
		}
	}
	c.Compare.Match = strings.TrimSpace(c.Compare.Match)
	c.Watch.LogFormat = strings.ToLower(strings.TrimSpace(c.Watch.LogFormat))
}

// boundFlags returns the flags of fs that AddFlags registered, by the key
// they override (ConfigFlag for --config).
func boundFlags(fs *pflag.FlagSet) map[string]*pflag.Flag {
	out := map[string]*pflag.Flag{}
	if fs == nil {
		return out
	}
	fs.VisitAll(func(f *pflag.Flag) {
		ann, ok := f.Annotations[flagKeyAnnotation]
		if !ok || len(ann) != 1 {
			return
		}
		key := ann[0]
		if key == "" {
			key = ConfigFlag
		}
		out[key] = f
	})
	return out
}

// decodeError turns the first error of viper's UnmarshalExact into an
// *Error about the key mapstructure names, located at the value's source.
func (p *provenance) decodeError(err error) error {
	name, inner := firstDecodeError(err)
	var e *Error
	if errors.As(inner, &e) {
		e.Key = name + e.Key
	} else {
		e = errorf(name, "%s", inner)
	}
	p.locate(e)
	return e
}

// firstDecodeError finds the first mapstructure.DecodeError in err's tree
// (mapstructure joins the errors of a struct's fields, in field order) and
// returns its key and cause; "" and err itself when there is none.
func firstDecodeError(err error) (string, error) {
	switch e := err.(type) {
	case *mapstructure.DecodeError:
		return e.Name(), e.Unwrap()
	case interface{ Unwrap() []error }:
		for _, sub := range e.Unwrap() {
			var de *mapstructure.DecodeError
			if errors.As(sub, &de) {
				return firstDecodeError(sub)
			}
		}
	case interface{ Unwrap() error }:
		var de *mapstructure.DecodeError
		if errors.As(err, &de) {
			return firstDecodeError(e.Unwrap())
		}
	}
	return "", err
}

// describeFileErr shortens an *os.PathError to its cause; the caller names the file.
func describeFileErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
