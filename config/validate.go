package config

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Validate checks everything but the pipeline section and returns the first
// problem as an *Error, located at the value's source. Load calls it.
func (c *Config) Validate() error {
	return c.Locate(c.validate())
}

func (c *Config) validate() error {
	k := c.Kafka
	if err := validateConnection(sectionKafka, k); err != nil {
		return err
	}
	if k.FetchMaxBytes <= 0 {
		return errorf("kafka.fetch_max_bytes", "must be positive, is %d", k.FetchMaxBytes)
	}
	if k.PartitionMaxBytes <= 0 {
		return errorf("kafka.partition_max_bytes", "must be positive, is %d", k.PartitionMaxBytes)
	}
	if k.Concurrency <= 0 {
		return errorf("kafka.concurrency", "must be at least 1, is %d", k.Concurrency)
	}
	if k.Timeout <= 0 {
		return errorf("kafka.timeout", "must be positive, is %s", k.Timeout)
	}
	if k.ConnectTimeout <= 0 {
		return errorf("kafka.connect_timeout", "must be positive, is %s", k.ConnectTimeout)
	}
	if k.RetryTimeout <= 0 {
		return errorf("kafka.retry_timeout", "must be positive, is %s", k.RetryTimeout)
	}

	s := c.Schema
	if s.RegistryURL != "" {
		u, err := url.Parse(s.RegistryURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errorf("schema.registry_url", "%q is not an http:// or https:// URL", redactURL(s.RegistryURL))
		}
	}
	if s.AvscDir != "" {
		st, err := os.Stat(s.AvscDir)
		if err != nil {
			return errorf("schema.avsc_dir", "%s: %s", s.AvscDir, describeFileErr(err))
		}
		if !st.IsDir() {
			return errorf("schema.avsc_dir", "%s is not a directory", s.AvscDir)
		}
	}

	if !c.Window.From.IsZero() && !c.Window.To.IsZero() && !c.Window.From.Before(c.Window.To) {
		return errorf("window.from", "%s is not before window.to %s",
			c.Window.From.Format("2006-01-02T15:04:05.000Z07:00"), c.Window.To.Format("2006-01-02T15:04:05.000Z07:00"))
	}
	if strings.TrimSpace(c.Store.Dir) == "" {
		return errorf("store.dir", "must not be empty")
	}
	if c.Audit.SettleTimeout < 0 {
		return errorf("audit.settle_timeout", "must not be negative, is %s", c.Audit.SettleTimeout)
	}
	if c.Audit.UnprocessedAfter < 0 {
		return errorf("audit.unprocessed_after", "must not be negative, is %s", c.Audit.UnprocessedAfter)
	}
	return c.validateWatch(false)
}

// ValidateWatch checks the watch section for `lossaudit watch`, which
// needs every key of it set.
func (c *Config) ValidateWatch() error { return c.Locate(c.validateWatch(true)) }

// validateWatch checks the watch keys that are set (all, with all).
func (c *Config) validateWatch(all bool) error {
	if c.Watch.Interval < 0 || (all && c.Watch.Interval == 0) {
		return errorf("watch.interval", "must be positive, is %s", c.Watch.Interval)
	}
	if _, _, err := net.SplitHostPort(c.Watch.Listen); err != nil && (all || c.Watch.Listen != "") {
		return errorf("watch.listen", "%q is not host:port (e.g. 127.0.0.1:9464)", c.Watch.Listen)
	}
	if c.Watch.LogFormat != LogText && c.Watch.LogFormat != LogJSON && (all || c.Watch.LogFormat != "") {
		return errorf("watch.log_format", "%q is not %s or %s", c.Watch.LogFormat, LogText, LogJSON)
	}
	return nil
}

// ValidatePipeline checks the pipeline section, which only the commands that
// audit a pipeline (audit, topology) need. Without a configuration file,
// a missing pipeline says so first.
func (c *Config) ValidatePipeline() error {
	return c.Locate(c.validatePipeline())
}

// NoFileHint says how to name the configuration file.
const NoFileHint = "pass one with -c audit.yaml"

func (c *Config) validatePipeline() error {
	p := c.Pipeline
	missing := func(key, msg string) error {
		if c.prov != nil && c.prov.file == "" {
			return &Error{Msg: fmt.Sprintf("no configuration file was given (%s); %s is not set", NoFileHint, key)}
		}
		return errorf(key, "%s", msg)
	}
	if strings.TrimSpace(p.ApplicationID) == "" {
		return missing("pipeline.application_id", "must be set to the Kafka Streams application.id")
	}
	if strings.TrimSpace(p.Output) == "" {
		return missing("pipeline.output", "must name the output topic")
	}
	if len(p.Inputs) == 0 {
		return missing("pipeline.inputs", "must list at least one input")
	}
	if p.TopologyFile != "" {
		if err := checkReadable("pipeline.topology_file", p.TopologyFile); err != nil {
			return err
		}
	}
	seen := map[string]int{}
	for i, in := range p.Inputs {
		at := "pipeline.inputs[" + strconv.Itoa(i) + "]"
		if strings.TrimSpace(in.Name) == "" {
			return errorf(at+".name", "must not be empty")
		}
		if j, dup := seen[in.Name]; dup {
			return errorf(at+".name", "%q is already the name of pipeline.inputs[%d]", in.Name, j)
		}
		seen[in.Name] = i
		if strings.TrimSpace(in.Topic) == "" {
			return errorf(at+".topic", "must not be empty")
		}
		switch in.KeyFormat {
		case KeyFormatString, KeyFormatAvro, KeyFormatBytes:
		default:
			return errorf(at+".key_format", "%q is not one of %s, %s, %s", in.KeyFormat,
				KeyFormatString, KeyFormatAvro, KeyFormatBytes)
		}
	}
	return nil
}

// checkAddress accepts host:port with a non-empty host and a port in 1..65535.
func checkAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if ae, ok := err.(*net.AddrError); ok {
			return fmt.Errorf("%s", ae.Err)
		}
		return err
	}
	if host == "" {
		return fmt.Errorf("empty host")
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("invalid host %q", host)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not a number in 1..65535", port)
	}
	return nil
}

// checkReadable returns an *Error naming key and path unless path is a
// readable regular file.
func checkReadable(key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return errorf(key, "cannot read %s: %s", path, describeFileErr(err))
	}
	if st.IsDir() {
		return errorf(key, "%s is a directory, not a file", path)
	}
	return nil
}

// validateConnection checks the connection settings k of section sec
// (kafka or sink_kafka): brokers, TLS files and SASL.
func validateConnection(sec string, k Kafka) error {
	if len(k.Brokers) == 0 {
		return errorf(sec+".brokers", "no broker address given")
	}
	for i, b := range k.Brokers {
		if err := checkAddress(b); err != nil {
			return errorf(fmt.Sprintf("%s.brokers[%d]", sec, i), "%q is not a host:port address: %s", b, err)
		}
	}
	if err := checkPEM(sec+".tls.ca_file", k.TLS.CAFile); err != nil {
		return err
	}
	if err := checkPEM(sec+".tls.cert_file", k.TLS.CertFile); err != nil {
		return err
	}
	if err := checkKeyPEM(sec+".tls.key_file", k.TLS.KeyFile); err != nil {
		return err
	}
	if (k.TLS.CertFile == "") != (k.TLS.KeyFile == "") {
		if k.TLS.CertFile == "" {
			return errorf(sec+".tls.cert_file", "must be set when %s.tls.key_file is: a client certificate needs both", sec)
		}
		return errorf(sec+".tls.key_file", "must be set when %s.tls.cert_file is: a client certificate needs both", sec)
	}
	switch k.SASL.Mechanism {
	case "":
	case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		if k.SASL.Username == "" {
			return errorf(sec+".sasl.username", "must be set when %s.sasl.mechanism is %s", sec, k.SASL.Mechanism)
		}
	default:
		return errorf(sec+".sasl.mechanism", "%q is not one of %s, %s, %s", k.SASL.Mechanism,
			MechanismPlain, MechanismScramSHA256, MechanismScramSHA512)
	}
	return nil
}
