// Package config loads and validates lossaudit's configuration.
//
// Values come, from lowest to highest precedence, from built-in defaults, a
// YAML file, environment variables LOSSAUDIT_<KEY> (dots become underscores,
// e.g. LOSSAUDIT_KAFKA_BROKERS=h1:9092,h2:9092) and command-line flags.
// Kafka connection settings can also come from a Java-style client.properties
// file (kafka.client_properties); any value set in the YAML file, the
// environment or a flag wins over that file.
//
// Every problem with the configuration is reported as an *Error that names
// the offending key and where its value was written (file and line,
// environment variable or flag); the CLI maps it to exit code 2.
//
// The package holds plain data: the Kafka client's TLS and SASL objects
// are built by audit/kread from these values.
package config

import (
	"fmt"
	"time"
)

// Config is the whole lossaudit configuration.
type Config struct {
	Kafka    Kafka
	Schema   Schema
	Pipeline Pipeline
	Window   Window
	Store    Store
	Report   Report
	Audit    Audit
	// SinkKafka is the sink cluster of lossaudit compare, set only when
	// HasSinkKafka (a sink_kafka key was given); Sink() merges it with
	// Kafka's tuning.
	SinkKafka    Kafka
	HasSinkKafka bool
	Compare      Compare
	Watch        Watch

	// prov records where Load found each value, for messages; nil for a
	// Config built in code.
	prov *provenance
}

// Kafka says how to reach the audited cluster.
type Kafka struct {
	// Brokers are bootstrap addresses, host:port each.
	Brokers []string
	// ClientProperties is the path of an optional Java-style client.properties.
	ClientProperties string
	TLS              TLS
	SASL             SASL
	// FetchMaxBytes bounds the bytes one fetch request may return.
	FetchMaxBytes int32
	// PartitionMaxBytes bounds the bytes one fetch may return per partition.
	PartitionMaxBytes int32
	// Concurrency bounds the number of fetches in flight.
	Concurrency int
	// Timeout bounds one request to the cluster.
	Timeout time.Duration
	// ConnectTimeout bounds opening a connection to a broker (TCP, TLS,
	// the first Kafka request).
	ConnectTimeout time.Duration
	// RetryTimeout bounds the time spent retrying one problem.
	RetryTimeout time.Duration
}

// TLS configures transport security to the brokers. Files are PEM.
type TLS struct {
	Enabled            bool
	CAFile             string
	CertFile           string
	KeyFile            string
	InsecureSkipVerify bool
}

// SASL configures authentication to the brokers. Mechanism is "" (none),
// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
type SASL struct {
	Mechanism string
	Username  string
	Password  string
}

// String renders the SASL settings without the password, so that printing a
// Config with %v never leaks it.
func (s SASL) String() string {
	return fmt.Sprintf("{Mechanism:%s Username:%s Password:%s}", s.Mechanism, s.Username, mask(s.Password))
}

// GoString is like String, for %#v.
func (s SASL) GoString() string { return "config.SASL" + s.String() }

// Schema says where Avro writer schemas come from.
type Schema struct {
	// RegistryURL is a Confluent-compatible Schema Registry, "" for none.
	RegistryURL      string
	RegistryUsername string
	RegistryPassword string
	// SchemasTopic is the registry's storage topic, read when no registry is
	// configured or it is unreachable.
	SchemasTopic string
	// AvscDir holds local .avsc files.
	AvscDir string
}

// String renders the schema settings without the registry password (or a
// password embedded in the registry URL).
func (s Schema) String() string {
	return fmt.Sprintf("{RegistryURL:%s RegistryUsername:%s RegistryPassword:%s SchemasTopic:%s AvscDir:%s}",
		redactURL(s.RegistryURL), s.RegistryUsername, mask(s.RegistryPassword), s.SchemasTopic, s.AvscDir)
}

// GoString is like String, for %#v.
func (s Schema) GoString() string { return "config.Schema" + s.String() }

// Pipeline describes the audited Kafka Streams application.
type Pipeline struct {
	// ApplicationID is the Kafka Streams application.id: the consumer group
	// and the internal topic prefix.
	ApplicationID string
	// TopologyFile optionally holds the text printed by Topology#describe().
	TopologyFile string
	// Output is the sink topic of the join.
	Output string
	// Inputs in join order: the first is the left side of the leftJoins.
	Inputs []Input
}

// Input is one source topic of the pipeline.
type Input struct {
	Name  string
	Topic string
	// Rekey is the field path in the Avro value giving the selected key; ""
	// keeps the record key.
	Rekey string
	// KeyFormat is string, avro or bytes: how to read the record key when
	// Rekey is "".
	KeyFormat string
	// TimestampField is set only when the application uses a custom
	// TimestampExtractor.
	TimestampField   string
	Store            string
	RepartitionTopic string
	ChangelogTopic   string
}

// Window bounds the audited input records by timestamp; a zero time is
// unbounded. Load resolves relative times (-2h, now) against the time it
// ran.
type Window struct {
	From, To time.Time
}

// Store says where the on-disk index lives.
type Store struct {
	Dir string
}

// Report names the report files; "" writes none. CSV may be "-": the
// audit command writes the CSV report to stdout then.
type Report struct {
	CSV, JSON string
	// HTML is the self-contained HTML report (report.html).
	HTML string
	// MetricsFile, when set, receives the run's metrics in the Prometheus
	// text format (for node_exporter's textfile collector).
	MetricsFile string
}

// Watch tunes `lossaudit watch`.
type Watch struct {
	// Interval is the time from the start of one reconcile step to the
	// start of the next.
	Interval time.Duration
	// Listen is the address the HTTP endpoints are served on.
	Listen string
	// LogFormat is LogText or LogJSON.
	LogFormat string
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
	SettleTimeout time.Duration
	// UnprocessedAfter is how old the first record of an input partition
	// without a committed offset must be before it is reported as
	// unprocessed_partition.
	UnprocessedAfter time.Duration
}
