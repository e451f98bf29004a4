package config

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// checkPEM returns an *Error naming key unless path is "" or a readable PEM
// file. Java key stores (JKS, JCEKS, PKCS12) get a message saying how to
// convert them.
func checkPEM(key, path string) error {
	if path == "" {
		return nil
	}
	if err := checkReadable(key, path); err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	switch storeFormat(path, data) {
	case "PEM":
		return nil
	case "JKS", "JCEKS":
		return errorf(key, "%s is a Java key store (%s); lossaudit reads PEM files only. Convert it, e.g. "+
			"`keytool -importkeystore -srckeystore %s -destkeystore store.p12 -deststoretype PKCS12` then "+
			"`openssl pkcs12 -in store.p12 -out store.pem -nodes` (for a truststore add -nokeys)",
			path, storeFormat(path, data), path)
	case "PKCS12":
		return errorf(key, "%s is a PKCS12 key store; lossaudit reads PEM files only. Convert it, e.g. "+
			"`openssl pkcs12 -in %s -out store.pem -nodes` (for a truststore add -nokeys)", path, path)
	default:
		return errorf(key, "%s holds no PEM block (-----BEGIN ...); lossaudit reads PEM files only", path)
	}
}

// storeFormat guesses the format of a certificate or key store file: "PEM",
// "JKS", "JCEKS", "PKCS12" or "" when unknown.
func storeFormat(path string, data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte{0xFE, 0xED, 0xFE, 0xED}):
		return "JKS"
	case bytes.HasPrefix(data, []byte{0xCE, 0xCE, 0xCE, 0xCE}):
		return "JCEKS"
	case bytes.Contains(data, []byte("-----BEGIN ")):
		return "PEM"
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".p12", ".pfx", ".pkcs12":
		return "PKCS12"
	}
	if len(data) > 0 && data[0] == 0x30 { // a DER SEQUENCE: PKCS12 is the usual Java case
		return "PKCS12"
	}
	return ""
}

// mask hides a secret: "" stays "", anything else becomes "***".
func mask(s string) string {
	if s == "" {
		return ""
	}
	return "***"
}

// redactURL hides a password embedded in a URL's user info.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		if err != nil && strings.Contains(s, "@") {
			return "<unparsable URL>"
		}
		return s
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
		return strings.Replace(u.String(), "xxxxx", "***", 1)
	}
	return s
}

// Redacted renders the effective configuration, one `key = value` line per
// key, with every password replaced by ***. It is safe to log.
func (c *Config) Redacted() string {
	var b strings.Builder
	line := func(key string, v any) { fmt.Fprintf(&b, "%s = %v\n", key, v) }
	ts := func(t interface{ IsZero() bool }, s string) string {
		if t.IsZero() {
			return ""
		}
		return s
	}
	redactedConnection(line, sectionKafka, c.Kafka)
	line("kafka.fetch_max_bytes", c.Kafka.FetchMaxBytes)
	line("kafka.partition_max_bytes", c.Kafka.PartitionMaxBytes)
	line("kafka.concurrency", c.Kafka.Concurrency)
	line("kafka.timeout", c.Kafka.Timeout)
	line("kafka.connect_timeout", c.Kafka.ConnectTimeout)
	line("kafka.retry_timeout", c.Kafka.RetryTimeout)
	redactedConnection(line, sectionSinkKafka, c.SinkKafka)
	line("schema.registry_url", redactURL(c.Schema.RegistryURL))
	line("schema.registry_username", c.Schema.RegistryUsername)
	line("schema.registry_password", mask(c.Schema.RegistryPassword))
	line("schema.schemas_topic", c.Schema.SchemasTopic)
	line("schema.avsc_dir", c.Schema.AvscDir)
	line("pipeline.application_id", c.Pipeline.ApplicationID)
	line("pipeline.topology_file", c.Pipeline.TopologyFile)
	line("pipeline.output", c.Pipeline.Output)
	for i, in := range c.Pipeline.Inputs {
		fmt.Fprintf(&b, "pipeline.inputs[%d] = {name: %s, topic: %s, rekey: %s, key_format: %s, timestamp_field: %s, store: %s, repartition_topic: %s, changelog_topic: %s}\n",
			i, in.Name, in.Topic, in.Rekey, in.KeyFormat, in.TimestampField, in.Store, in.RepartitionTopic, in.ChangelogTopic)
	}
	line("window.from", ts(c.Window.From, c.Window.From.Format("2006-01-02T15:04:05.000Z07:00")))
	line("window.to", ts(c.Window.To, c.Window.To.Format("2006-01-02T15:04:05.000Z07:00")))
	line("store.dir", c.Store.Dir)
	line("report.csv", c.Report.CSV)
	line("report.json", c.Report.JSON)
	line("report.html", c.Report.HTML)
	line("report.metrics_file", c.Report.MetricsFile)
	line("audit.settle_timeout", c.Audit.SettleTimeout)
	line("audit.unprocessed_after", c.Audit.UnprocessedAfter)
	c.redactedCompare(line)
	line("watch.interval", c.Watch.Interval)
	line("watch.listen", c.Watch.Listen)
	line("watch.log_format", c.Watch.LogFormat)
	return b.String()
}

// checkKeyPEM is checkPEM for a private key file: it must hold an
// unencrypted PEM private key.
func checkKeyPEM(key, path string) error {
	if err := checkPEM(key, path); err != nil || path == "" {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return errorf(key, "%s holds no PEM private key", path)
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] == "4,ENCRYPTED" {
			return errorf(key, "%s holds an encrypted private key, which lossaudit cannot use; decrypt it, e.g. `openssl pkey -in %s -out key.pem`", path, path)
		}
		if strings.HasSuffix(block.Type, "PRIVATE KEY") {
			return nil
		}
	}
}
