// Package config loads and validates lossaudit's configuration.
//
// Values come, from lowest to highest precedence, from built-in defaults, a
// YAML file, environment variables LOSSAUDIT_<KEY> (dots become underscores,
// e.g. LOSSAUDIT_KAFKA_BROKERS=h1:9092,h2:9092) and command-line flags.
// Kafka connection settings can also come from a Java-style client.properties
// file (kafka.client_properties); any value set in the YAML file, the
// environment or a flag wins over that file.
//
// Every key is declared once, by a field of Config and its struct tags
// (see Config). Viper merges the layers and decodes them into Config; the
// package keeps beside it where each value came from.
//
// Every problem with the configuration is reported as an *Error that names
// the offending key and where its value was written (file and line,
// environment variable or flag); the CLI maps it to exit code 2.
//
// The package holds plain data: the Kafka client's TLS and SASL objects
// are built by audit/kread from these values.
package config

import (
	"io/fs"
	"time"
)

// Config is the whole lossaudit configuration.
//
// The struct tags are the one declaration of every key: `mapstructure`
// names it (the YAML path and, with LOSSAUDIT_ and underscores, the
// environment variable), `default` gives its default as text, `flag` and
// `usage` the command-line flag that overrides it, `redact` how Redacted
// shows it (secret, url), `check` a bound Validate enforces (positive,
// atleast1, nonnegative, nonempty). Keys, Defaults, Flags, the
// environment names, the loader, Redacted and the reference test all
// derive from these tags (see docs/development.md, "Adding a
// configuration key").
type Config struct {
	Kafka Kafka `mapstructure:"kafka"`
	// SinkKafka is the sink cluster of lossaudit compare, set only when
	// HasSinkKafka (a sink_kafka key was given); Sink() merges it with
	// Kafka's tuning.
	SinkKafka    Connection `mapstructure:"sink_kafka"`
	HasSinkKafka bool       `mapstructure:"-"`
	Schema       Schema     `mapstructure:"schema"`
	Pipeline     Pipeline   `mapstructure:"pipeline"`
	Window       Window     `mapstructure:"window"`
	Store        Store      `mapstructure:"store"`
	Report       Report     `mapstructure:"report"`
	Audit        Audit      `mapstructure:"audit"`
	Compare      Compare    `mapstructure:"compare"`
	Watch        Watch      `mapstructure:"watch"`

	// prov records where Load found each value, for messages; nil for a
	// Config built in code.
	prov *provenance
}

// Kafka says how to reach the audited cluster.
type Kafka struct {
	// Brokers are bootstrap addresses, host:port each.
	Brokers []string `mapstructure:"brokers" default:"localhost:9092" flag:"brokers" usage:"bootstrap brokers, host:port, comma-separated"`
	// ClientProperties is the path of an optional Java-style client.properties.
	ClientProperties string `mapstructure:"client_properties" flag:"command-config" usage:"Java-style client.properties file with the connection settings, as Kafka's tools take it"`
	TLS              TLS    `mapstructure:"tls"`
	SASL             SASL   `mapstructure:"sasl"`
	// FetchMaxBytes bounds the bytes one fetch request may return.
	FetchMaxBytes int32 `mapstructure:"fetch_max_bytes" default:"52428800" check:"positive"`
	// PartitionMaxBytes bounds the bytes one fetch may return per partition.
	PartitionMaxBytes int32 `mapstructure:"partition_max_bytes" default:"1048576" check:"positive"`
	// Concurrency bounds the number of fetches in flight.
	Concurrency int `mapstructure:"concurrency" default:"8" check:"atleast1"`
	// Timeout bounds one request to the cluster.
	Timeout time.Duration `mapstructure:"timeout" default:"30s" check:"positive"`
	// ConnectTimeout bounds opening a connection to a broker (TCP, TLS,
	// the first Kafka request).
	ConnectTimeout time.Duration `mapstructure:"connect_timeout" default:"10s" check:"positive"`
	// RetryTimeout bounds the time spent retrying one problem.
	RetryTimeout time.Duration `mapstructure:"retry_timeout" default:"1m" check:"positive"`
}

// Connection is the sink cluster's section (sink_kafka): the connection
// settings of Kafka without its tuning, and no default broker.
type Connection struct {
	Brokers          []string `mapstructure:"brokers"`
	ClientProperties string   `mapstructure:"client_properties"`
	TLS              TLS      `mapstructure:"tls"`
	SASL             SASL     `mapstructure:"sasl"`
}

// TLS configures transport security to the brokers. Files are PEM.
type TLS struct {
	Enabled            bool   `mapstructure:"enabled"`
	CAFile             string `mapstructure:"ca_file"`
	CertFile           string `mapstructure:"cert_file"`
	KeyFile            string `mapstructure:"key_file"`
	InsecureSkipVerify bool   `mapstructure:"insecure_skip_verify"`
}

// SASL configures authentication to the brokers. Mechanism is "" (none),
// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
type SASL struct {
	Mechanism string `mapstructure:"mechanism"`
	Username  string `mapstructure:"username"`
	Password  string `mapstructure:"password" redact:"secret"`
}

// String renders the SASL settings without the password, so that printing a
// Config with %v never leaks it.
func (s SASL) String() string { return redactedStruct(s) }

// GoString is like String, for %#v.
func (s SASL) GoString() string { return "config.SASL" + s.String() }

// Schema says where Avro writer schemas come from.
type Schema struct {
	// RegistryURL is a Confluent-compatible Schema Registry, "" for none.
	RegistryURL      string `mapstructure:"registry_url" redact:"url"`
	RegistryUsername string `mapstructure:"registry_username"`
	RegistryPassword string `mapstructure:"registry_password" redact:"secret"`
	// SchemasTopic is the registry's storage topic, read when no registry is
	// configured or it is unreachable.
	SchemasTopic string `mapstructure:"schemas_topic" default:"_schemas"`
	// AvscDir holds local .avsc files.
	AvscDir string `mapstructure:"avsc_dir"`
}

// String renders the schema settings without the registry password (or a
// password embedded in the registry URL).
func (s Schema) String() string { return redactedStruct(s) }

// GoString is like String, for %#v.
func (s Schema) GoString() string { return "config.Schema" + s.String() }

// Pipeline describes the audited Kafka Streams application.
type Pipeline struct {
	// ApplicationID is the Kafka Streams application.id: the consumer group
	// and the internal topic prefix.
	ApplicationID string `mapstructure:"application_id"`
	// TopologyFile optionally holds the text printed by Topology#describe().
	TopologyFile string `mapstructure:"topology_file"`
	// Output is the sink topic of the join.
	Output string `mapstructure:"output"`
	// Inputs in join order: the first is the left side of the leftJoins.
	Inputs []Input `mapstructure:"inputs" list:"a list of inputs (- name: ..., topic: ...)" entry:"an input"`
	// Join is the type of the KTable-KTable joins: left, inner or outer
	// (describe() prints them alike). No default: required wherever the
	// inputs are joined.
	Join string `mapstructure:"join"`
	// Reduce is the type of the inputs' reduces: plain or windowed
	// (describe() prints them alike). No default: required unless
	// pipeline.nodes declares every reduce on the inputs' paths.
	Reduce string `mapstructure:"reduce"`
	// Nodes declares the kinds of topology nodes whose names do not show
	// them (Named.as, Materialized.as, ...), or a reduce that is windowed.
	Nodes []Node `mapstructure:"nodes" list:"a list of nodes (- {name: ..., kind: ...})" entry:"a node"`
	// DeadLetterTopic is the application's dead-letter queue
	// (errors.dead.letter.queue.topic.name, Kafka Streams 4.2+, KIP-1034):
	// the input records it names were dropped on purpose. "" for none.
	DeadLetterTopic string `mapstructure:"dead_letter_topic"`
	// StreamsProperties is the Kafka Streams application's own properties
	// file: its errors.dead.letter.queue.topic.name gives DeadLetterTopic,
	// and its application.id ApplicationID, when they are not set. "" for
	// none.
	StreamsProperties string `mapstructure:"streams_properties"`
}

// Node declares the kind of one node of the topology file.
type Node struct {
	// Name is the node's name as the topology file prints it.
	Name string `mapstructure:"name"`
	// Kind is one of the kinds of docs/topology.md (reduce, suppress, ...).
	Kind string `mapstructure:"kind"`
	// Predicate is a filter's predicate (kind filter only): a CEL
	// expression over the decoded value (`value`) and the key (`key`)
	// that is true for the records the filter keeps (docs/topology.md,
	// "Declared filters and re-keys").
	Predicate string `mapstructure:"predicate"`
	// Negate declares a filterNot: the filter keeps the records for which
	// Predicate is false.
	Negate bool `mapstructure:"negate"`
	// Window is the window of a windowed-count, windowed-reduce or
	// windowed-aggregate node (describe() does not print it); nil for
	// other kinds.
	Window *NodeWindow `mapstructure:"window"`
	// Branches are the branches of a branch node (split() or the
	// deprecated branch()), in the order the application declares them:
	// each branch child's name with its predicate, the default branch
	// last (docs/topology.md, "Declared branches"). Kind branch only.
	Branches []NodeBranch `mapstructure:"branches" list:"a list of branches (- {name: ..., predicate: ...})" entry:"a branch"`
	// NullMappedKey is what a KStream-GlobalKTable left join (kind
	// global-left-join) does with a record whose key mapper returns null:
	// "joined" (Kafka Streams 4.1 and later join it with a null table
	// value, KAFKA-19208) or "never" (the key mapper returns a key for
	// every record with a value). Required for global-left-join; earlier
	// versions drop such records, which describe() cannot show.
	NullMappedKey string `mapstructure:"null_mapped_key"`
}

// The values of pipeline.nodes[i].null_mapped_key.
const (
	NullMappedKeyJoined = "joined"
	NullMappedKeyNever  = "never"
)

// NodeBranch is one branch of a branch node: the child node describe()
// prints for it and the predicate that sends a record there, or Default
// for defaultBranch().
type NodeBranch struct {
	// Name is the branch child's node name as the topology file prints
	// it (<split name><Branched name or index>, KSTREAM-BRANCHCHILD-...).
	Name string `mapstructure:"name"`
	// Predicate is the branch's predicate: a CEL expression over value and
	// key, as a filter's.
	Predicate string `mapstructure:"predicate"`
	// Default marks the default branch (defaultBranch()): the records no
	// predicate accepts. Last, without a predicate.
	Default bool `mapstructure:"default"`
}

// NodeWindow is a windowed aggregation's window: TimeWindows.ofSizeAndGrace
// (size, grace); advance is omitted (or equal to size) for a tumbling
// window.
type NodeWindow struct {
	Size    time.Duration `mapstructure:"size"`
	Advance time.Duration `mapstructure:"advance"`
	Grace   time.Duration `mapstructure:"grace"`
	// Emit is the emit strategy, which describe() does not print either:
	// eager (EmitStrategy.onWindowUpdate, Kafka Streams' default) or final
	// (a window reaches the output once closed: audited with a
	// suppress(untilWindowCloses) after the aggregation; without one it is
	// emitStrategy(onWindowClose), refused). Required.
	Emit string `mapstructure:"emit"`
}

// Input is one source topic of the pipeline.
type Input struct {
	Name  string `mapstructure:"name"`
	Topic string `mapstructure:"topic"`
	// Rekey is the field path in the Avro value giving the selected key; ""
	// keeps the record key.
	Rekey string `mapstructure:"rekey"`
	// KeyFormat is string, avro or bytes: how to read the record key when
	// Rekey is "".
	KeyFormat string `mapstructure:"key_format" default:"string"`
	// TimestampField is set only when the application uses a custom
	// TimestampExtractor.
	TimestampField   string `mapstructure:"timestamp_field"`
	Store            string `mapstructure:"store"`
	RepartitionTopic string `mapstructure:"repartition_topic"`
	ChangelogTopic   string `mapstructure:"changelog_topic"`
}

// Window bounds the audited input records by timestamp; a zero time is
// unbounded. Load resolves relative times (-2h, now) against the time it
// ran.
type Window struct {
	From time.Time `mapstructure:"from" flag:"from" usage:"audit input records at or after this time"`
	To   time.Time `mapstructure:"to" flag:"to" usage:"audit input records at or before this time"`
}

// Store says where the on-disk index lives.
type Store struct {
	Dir string `mapstructure:"dir" default:"./lossaudit-data" check:"nonempty" flag:"store-dir" usage:"directory of the on-disk index"`
}

// Report names the report files; "" writes none. CSV may be "-": the
// audit command writes the CSV report to stdout then.
type Report struct {
	CSV  string `mapstructure:"csv" default:"loss-report.csv" flag:"csv" usage:"write the CSV loss report to this path, - for stdout, \"\" for none"`
	JSON string `mapstructure:"json" flag:"json" usage:"write the JSON report to this path"`
	// HTML is the self-contained HTML report (report.html).
	HTML string `mapstructure:"html" flag:"html" usage:"write the self-contained HTML report to this path"`
	// MetricsFile, when set, receives the run's metrics in the Prometheus
	// text format (for node_exporter's textfile collector).
	MetricsFile string `mapstructure:"metrics_file" flag:"metrics-file" usage:"write the run's metrics to this path in the Prometheus text format, atomically, for node_exporter's textfile collector"`
	// FileMode is the permission of the report files, in octal (0600 by
	// default: they hold customer keys; the owner must read and write).
	FileMode fs.FileMode `mapstructure:"file_mode" default:"0600"`
	// RedactKeys writes a keyed hash of each key instead of the key in
	// every report, under the secret of RedactKeyFile.
	RedactKeys bool `mapstructure:"redact_keys" default:"false"`
	// RedactKeyFile holds the secret of the keyed hash; RedactKey is its
	// content without the trailing newline, loaded by Validate. The secret
	// is never printed.
	RedactKeyFile string `mapstructure:"redact_key_file"`
	RedactKey     []byte `mapstructure:"-"`
}

// Watch tunes `lossaudit watch`.
type Watch struct {
	// Interval is the time from the start of one reconcile step to the
	// start of the next.
	Interval time.Duration `mapstructure:"interval" default:"1m" flag:"interval" usage:"time between the starts of two reconcile steps, e.g. 1m"`
	// Listen is the address the HTTP endpoints are served on.
	Listen string `mapstructure:"listen" default:"127.0.0.1:9464" flag:"listen" usage:"address to serve /metrics, /healthz and the reports on"`
	// LogFormat is LogText or LogJSON.
	LogFormat string `mapstructure:"log_format" default:"text" flag:"log-format" usage:"text or json: the format of the one log line per step"`
	// WebConfigFile configures TLS and basic authentication of the
	// endpoints, in the web configuration format of
	// prometheus/exporter-toolkit; "" serves plain HTTP to anyone.
	WebConfigFile string `mapstructure:"web_config_file" flag:"web.config.file" usage:"TLS and basic authentication of the HTTP endpoints, in the web configuration format of Prometheus exporters"`
}

// The log formats of watch.log_format.
const (
	LogText = "text"
	LogJSON = "json"
)

// Audit tunes the audit run.
type Audit struct {
	// SettleTimeout bounds the wait for open transactions to end before a
	// downstream snapshot.
	SettleTimeout time.Duration `mapstructure:"settle_timeout" default:"60s" check:"nonnegative"`
	// UnprocessedAfter is how old the first record of an input partition
	// without a committed offset must be before it is reported as
	// unprocessed_partition.
	UnprocessedAfter time.Duration `mapstructure:"unprocessed_after" default:"10m" check:"nonnegative"`
}
