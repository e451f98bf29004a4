package config

import (
	"fmt"

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

// timeHelp says what a time key accepts.
const timeHelp = "RFC 3339 (2026-11-29T10:00:00Z), a duration before now (-2h, 30m) or now"

// Flags returns every flag Load understands.
func Flags() []Flag {
	return []Flag{
		{Name: ConfigFlag, Shorthand: "c", Usage: "YAML configuration file"},
		{Name: "brokers", Key: "kafka.brokers", List: true, Usage: "bootstrap brokers, host:port, comma-separated (overrides kafka.brokers)"},
		{Name: "command-config", Key: "kafka.client_properties", Usage: "Java-style client.properties file with the connection settings, as Kafka's tools take it (overrides kafka.client_properties)"},
		{Name: "from", Key: "window.from", Usage: "audit input records from this time: " + timeHelp + " (overrides window.from)"},
		{Name: "to", Key: "window.to", Usage: "audit input records before this time: " + timeHelp + " (overrides window.to)"},
		{Name: "store-dir", Key: "store.dir", Usage: "directory of the on-disk index (overrides store.dir)"},
		{Name: "csv", Key: "report.csv", Usage: "write the CSV loss report to this path, - for stdout, \"\" for none (overrides report.csv)"},
		{Name: "json", Key: "report.json", Usage: "write the JSON report to this path (overrides report.json)"},
		{Name: "html", Key: "report.html", Usage: "write the self-contained HTML report to this path (overrides report.html)"},
		{Name: "ledger", Key: "compare.ledger", Usage: "producer ledger to check against its topic (overrides compare.ledger)"},
		{Name: "metrics-file", Key: "report.metrics_file", Usage: "write the run's metrics to this path in the Prometheus text format, atomically, for node_exporter's textfile collector (overrides report.metrics_file)"},
		{Name: "interval", Key: "watch.interval", Usage: "time between the starts of two reconcile steps, e.g. 1m (overrides watch.interval)"},
		{Name: "listen", Key: "watch.listen", Usage: "address to serve /metrics, /healthz and the reports on (overrides watch.listen)"},
		{Name: "log-format", Key: "watch.log_format", Usage: "text or json: the format of the one log line per step (overrides watch.log_format)"},
		{Name: "web.config.file", Key: "watch.web_config_file", Usage: "TLS and basic authentication of the HTTP endpoints, in the web configuration format of Prometheus exporters (overrides watch.web_config_file)"},
	}
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

// flagValues returns, for every flag of fs that AddFlags registered and
// the command line set, its key (or ConfigFlag) and its values.
func flagValues(fs *pflag.FlagSet) map[string]flagValue {
	out := map[string]flagValue{}
	if fs == nil {
		return out
	}
	fs.Visit(func(f *pflag.Flag) {
		ann, ok := f.Annotations[flagKeyAnnotation]
		if !ok || len(ann) != 1 {
			return
		}
		key := ann[0]
		if key == "" {
			key = ConfigFlag
		}
		v := flagValue{name: f.Name, text: f.Value.String()}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v.list, v.isList = sv.GetSlice(), true
		}
		out[key] = v
	})
	return out
}

// flagValue is what the command line gave one flag.
type flagValue struct {
	name   string
	text   string
	list   []string
	isList bool
}
