package config

import (
	"sort"
	"strings"

	"github.com/lossaudit/lossaudit/config/typo"
)

// kind is how a key's text is read.
type kind int

const (
	kindString kind = iota
	kindBool
	kindInt
	kindInt32
	kindDuration
	kindTime
	kindList
	kindInputs
	kindPairs
)

// keyDef is one configuration key with its default, as Defaults shows it.
type keyDef struct {
	key  string
	kind kind
	def  any
}

// keyDefs lists every key lossaudit reads, in the order of the reference.
func keyDefs() []keyDef {
	return []keyDef{
		{key: "kafka.brokers", kind: kindList, def: []string{"localhost:9092"}},
		{key: "kafka.client_properties", kind: kindString, def: ""},
		{key: "kafka.tls.enabled", kind: kindBool, def: false},
		{key: "kafka.tls.ca_file", kind: kindString, def: ""},
		{key: "kafka.tls.cert_file", kind: kindString, def: ""},
		{key: "kafka.tls.key_file", kind: kindString, def: ""},
		{key: "kafka.tls.insecure_skip_verify", kind: kindBool, def: false},
		{key: "kafka.sasl.mechanism", kind: kindString, def: ""},
		{key: "kafka.sasl.username", kind: kindString, def: ""},
		{key: "kafka.sasl.password", kind: kindString, def: ""},
		{key: "kafka.fetch_max_bytes", kind: kindInt32, def: 52428800},
		{key: "kafka.partition_max_bytes", kind: kindInt32, def: 1048576},
		{key: "kafka.concurrency", kind: kindInt, def: 8},
		{key: "kafka.timeout", kind: kindDuration, def: "30s"},
		{key: "kafka.connect_timeout", kind: kindDuration, def: "10s"},
		{key: "kafka.retry_timeout", kind: kindDuration, def: "1m"},
		{key: "sink_kafka.brokers", kind: kindList, def: ""},
		{key: "sink_kafka.client_properties", kind: kindString, def: ""},
		{key: "sink_kafka.tls.enabled", kind: kindBool, def: false},
		{key: "sink_kafka.tls.ca_file", kind: kindString, def: ""},
		{key: "sink_kafka.tls.cert_file", kind: kindString, def: ""},
		{key: "sink_kafka.tls.key_file", kind: kindString, def: ""},
		{key: "sink_kafka.tls.insecure_skip_verify", kind: kindBool, def: false},
		{key: "sink_kafka.sasl.mechanism", kind: kindString, def: ""},
		{key: "sink_kafka.sasl.username", kind: kindString, def: ""},
		{key: "sink_kafka.sasl.password", kind: kindString, def: ""},
		{key: "schema.registry_url", kind: kindString, def: ""},
		{key: "schema.registry_username", kind: kindString, def: ""},
		{key: "schema.registry_password", kind: kindString, def: ""},
		{key: "schema.schemas_topic", kind: kindString, def: "_schemas"},
		{key: "schema.avsc_dir", kind: kindString, def: ""},
		{key: "pipeline.application_id", kind: kindString, def: ""},
		{key: "pipeline.topology_file", kind: kindString, def: ""},
		{key: "pipeline.output", kind: kindString, def: ""},
		{key: "pipeline.inputs", kind: kindInputs, def: []any{}},
		{key: "window.from", kind: kindTime, def: ""},
		{key: "window.to", kind: kindTime, def: ""},
		{key: "store.dir", kind: kindString, def: "./lossaudit-data"},
		{key: "report.csv", kind: kindString, def: "loss-report.csv"},
		{key: "report.json", kind: kindString, def: ""},
		{key: "report.html", kind: kindString, def: ""},
		{key: "report.metrics_file", kind: kindString, def: ""},
		{key: "audit.settle_timeout", kind: kindDuration, def: "60s"},
		{key: "audit.unprocessed_after", kind: kindDuration, def: "10m"},
		{key: "compare.pairs", kind: kindPairs, def: []any{}},
		{key: "compare.match", kind: kindString, def: MatchRecord},
		{key: "compare.group", kind: kindString, def: ""},
		{key: "compare.grace", kind: kindDuration, def: "5m"},
		{key: "compare.ledger", kind: kindString, def: ""},
		{key: "compare.report_unexpected", kind: kindBool, def: false},
		{key: "watch.interval", kind: kindDuration, def: "1m"},
		{key: "watch.listen", kind: kindString, def: "127.0.0.1:9464"},
		{key: "watch.log_format", kind: kindString, def: "text"},
	}
}

// Keys returns every configuration key, in the order of the reference.
func Keys() []string {
	defs := keyDefs()
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.key
	}
	return out
}

// Defaults returns every key with its default value. Every key lossaudit
// reads appears here.
func Defaults() map[string]any {
	out := map[string]any{}
	for _, d := range keyDefs() {
		out[d.key] = d.def
	}
	return out
}

// inputKeyNames returns the keys of one pipeline.inputs entry.
func inputKeyNames() []string {
	return []string{"name", "topic", "rekey", "key_format", "timestamp_field", "store", "repartition_topic", "changelog_topic"}
}

// pairKeyNames returns the keys of one compare.pairs entry.
func pairKeyNames() []string {
	return []string{"name", "source", "sink"}
}

// sections returns the sections (key prefixes such as "kafka" and
// "kafka.tls", and "" for the top level) of the keys, each with the names
// directly under it in the order of keyDefs.
func sections(defs []keyDef) map[string][]string {
	out := map[string][]string{}
	for _, d := range defs {
		parts := strings.Split(d.key, ".")
		for i := 0; i < len(parts); i++ {
			sec := strings.Join(parts[:i], ".")
			if name := parts[i]; !contains(out[sec], name) {
				out[sec] = append(out[sec], name)
			}
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// nearest returns the candidate closest to name by edit distance, or ""
// when none is within two typos (and closer than half of name's length).
func nearest(name string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := typo.Distance(name, c)
		if d < bestD || (d == bestD && best != "" && c < best) {
			best, bestD = c, d
		}
	}
	if best != "" && bestD*2 >= len(name) && bestD > 0 {
		return ""
	}
	return best
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
