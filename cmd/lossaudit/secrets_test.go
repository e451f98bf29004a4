package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/lossaudit/lossaudit/audit/demo/sim"
	"github.com/lossaudit/lossaudit/testbed/poll"
)

// The secrets of TestSecretsAreNeverShown, each distinct so that a leak
// names its source.
const (
	secretYAML     = "yaml-pw-Q7v9Xk2m"       // kafka.sasl.password in the YAML file
	secretJAAS     = "jaas-pw-W3r8Lp5n"       // password in sasl.jaas.config of client.properties
	secretEnv      = "env-pw-H6t1Zc4b"        // LOSSAUDIT_KAFKA_SASL_PASSWORD
	secretWrong    = "wrong-pw-B5y2Nd8f"      // a password the broker refuses
	secretRegistry = "registry-pw-M4k7Rs1q"   // schema.registry_password
	secretURL      = "url-pw-F9j3Gt6w"        // the password of a URL with credentials
	secretStore    = "keystore-pw-C2x5Vh9e"   // ssl.keystore.password / ssl.key.password
	secretRedact   = "redact-secret-T8m4Kw1p" // report.redact_key_file's content
	secretStreams  = "streams-pw-P3n7Dx5c"    // a password in pipeline.streams_properties
)

var allSecrets = []string{secretYAML, secretJAAS, secretEnv, secretWrong, secretRegistry, secretURL, secretStore, secretRedact, secretStreams}

// TestSecretsAreNeverShown runs every command with secrets in the YAML
// file, in client.properties (given by the --command-config flag), in the
// environment, through success, configuration errors, a broker refusing
// authentication and --help, and checks that no output, log line, report
// file, metric or served page holds any of them.
func TestSecretsAreNeverShown(t *testing.T) {
	clearEnv(t)
	ctx := context.Background()

	brokers, truth := saslPipeline(t, "sec",
		kfake.Superuser("SCRAM-SHA-512", "yaml-user", secretYAML),
		kfake.Superuser("SCRAM-SHA-512", "jaas-user", secretJAAS),
		kfake.Superuser("SCRAM-SHA-512", "env-user", secretEnv))

	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	redactKey := write("redact.key", secretRedact+"\n")
	jaas := func(user, pass string) string {
		return fmt.Sprintf("sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"%s\" password=\"%s\";\n", user, pass)
	}
	props := write("client.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+jaas("jaas-user", secretJAAS)+
		"ssl.keystore.password="+secretStore+"\nssl.key.password="+secretStore+"\n")
	wrongProps := write("wrong.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+jaas("jaas-user", secretWrong))
	badJAAS := write("bad-jaas.properties", "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"jaas-user\" password=\""+secretJAAS+"\n")

	// The application's own properties file (pipeline.streams_properties),
	// with its passwords; the second one fails to parse after them.
	streamsProps := write("streams.properties", "application.id="+truth.AppID+"\nerrors.dead.letter.queue.topic.name="+truth.AppID+"-dlq\n"+
		jaas("app", secretStreams)+"ssl.keystore.password="+secretStreams+"\n")
	badStreamsProps := write("bad-streams.properties", jaas("app", secretStreams)+"ssl.key.password="+secretStreams+"\\u12\n")

	// config renders a YAML configuration of the pipeline; sasl is the
	// kafka.sasl section's body ("" for none), extra is appended.
	config := func(name, sasl, extra string) string {
		schema := fmt.Sprintf("  registry_username: reg-user\n  registry_password: %q\n", secretRegistry)
		return pipelineConfig(t, dir, name, brokers, truth, sasl, schema, extra)
	}
	yamlSASL := "    mechanism: SCRAM-SHA-512\n    username: yaml-user\n    password: " + secretYAML + "\n"
	envSASL := "    mechanism: SCRAM-SHA-512\n    username: env-user\n"
	wrongSASL := "    mechanism: SCRAM-SHA-512\n    username: yaml-user\n    password: " + secretWrong + "\n"

	type run struct {
		name  string
		args  []string
		env   map[string]string
		codes []int // acceptable exit codes
	}
	var runs []run
	commands := []string{"audit", "reconcile", "compare", "scan", "topology"}
	for _, cmd := range commands {
		runs = append(runs,
			run{name: cmd + ", password in the YAML file", args: []string{cmd, "-c", config(cmd+"-yaml", yamlSASL, "")}, codes: []int{exitOK, exitFindings}},
			run{name: cmd + ", JAAS in client.properties", args: []string{cmd, "-c", config(cmd+"-jaas", "", ""), "--command-config", props}, codes: []int{exitOK, exitFindings}},
			run{name: cmd + ", password in the environment", args: []string{cmd, "-c", config(cmd+"-env", envSASL, "")},
				env: map[string]string{"LOSSAUDIT_KAFKA_SASL_PASSWORD": secretEnv}, codes: []int{exitOK, exitFindings}},
			run{name: cmd + ", registry URL with credentials in the environment", args: []string{cmd, "-c", config(cmd+"-url", yamlSASL, "")},
				env: map[string]string{"LOSSAUDIT_SCHEMA_REGISTRY_URL": "http://reg-user:" + secretURL + "@127.0.0.1:1/"}, codes: []int{exitOK, exitFindings}},
			run{name: cmd + ", redacted reports", args: []string{cmd, "-c", config(cmd+"-redact", yamlSASL, "  redact_keys: true\n  redact_key_file: "+redactKey+"\n")},
				codes: []int{exitOK, exitFindings}},
			run{name: cmd + ", wrong password in the YAML file", args: []string{cmd, "-c", config(cmd+"-wrong", wrongSASL, "")}, codes: []int{exitUsage, exitIncomplete}},
			run{name: cmd + ", wrong password in JAAS", args: []string{cmd, "-c", config(cmd+"-wrongjaas", "", ""), "--command-config", wrongProps}, codes: []int{exitUsage, exitIncomplete}},
			run{name: cmd + ", no password", args: []string{cmd, "-c", config(cmd+"-nopw", "    mechanism: SCRAM-SHA-512\n    username: yaml-user\n", "")},
				codes: []int{exitUsage, exitIncomplete}},
			run{name: cmd + ", --help", args: []string{cmd, "--help", "-c", config(cmd+"-help", yamlSASL, "")}, codes: []int{exitOK}},
			run{name: cmd + ", the application's properties file", args: []string{cmd, "-c", config(cmd+"-streams", yamlSASL, "")},
				env: map[string]string{"LOSSAUDIT_PIPELINE_STREAMS_PROPERTIES": streamsProps}, codes: []int{exitOK, exitFindings}},
			run{name: cmd + ", the application's properties file does not parse", args: []string{cmd, "-c", config(cmd+"-badstreams", yamlSASL, "")},
				env: map[string]string{"LOSSAUDIT_PIPELINE_STREAMS_PROPERTIES": badStreamsProps}, codes: []int{exitUsage}},
		)
		// Configuration errors, each next to every kind of secret.
		for i, bad := range []struct{ sasl, extra, props string }{
			{yamlSASL, "bogus_key: 1\n", ""},
			{yamlSASL, "", badJAAS},
			{"    mechanism: SCRAM-SHA-999\n    username: yaml-user\n    password: " + secretYAML + "\n", "", ""},
			{yamlSASL, "window:\n  from: not-a-time\n", props},
			{yamlSASL + "  tls:\n    enabled: true\n    ca_file: /nonexistent/ca.pem\n", "", ""},
		} {
			args := []string{cmd, "-c", config(fmt.Sprintf("%s-bad%d", cmd, i), bad.sasl, bad.extra)}
			if bad.props != "" {
				args = append(args, "--command-config", bad.props)
			}
			runs = append(runs, run{name: fmt.Sprintf("%s, configuration error %d", cmd, i), args: args,
				env: map[string]string{"LOSSAUDIT_KAFKA_SASL_PASSWORD": secretEnv}, codes: []int{exitUsage}})
		}
		// Bad registry URLs carrying credentials, in the file and the environment.
		runs = append(runs,
			run{name: cmd + ", registry URL with credentials and a bad scheme", args: []string{cmd, "-c", config(cmd+"-badurl", yamlSASL, "")},
				env: map[string]string{"LOSSAUDIT_SCHEMA_REGISTRY_URL": "ftp://reg-user:" + secretURL + "@127.0.0.1:1/"}, codes: []int{exitUsage}},
			run{name: cmd + ", registry URL with credentials that does not parse", args: []string{cmd, "-c", config(cmd+"-badurl2", yamlSASL, "")},
				env: map[string]string{"LOSSAUDIT_SCHEMA_REGISTRY_URL": "http://reg-user:" + secretURL + "@[::1"}, codes: []int{exitUsage}},
		)
	}
	runs = append(runs, run{name: "--help", args: []string{"--help"}, codes: []int{exitOK}})

	for _, r := range runs {
		t.Run(r.name, func(t *testing.T) {
			for k, v := range r.env {
				t.Setenv(k, v)
			}
			var stdout, stderr bytes.Buffer
			cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			code := execute(cctx, newTestRootCmd(&stdout, &stderr), r.args, &stderr)
			ok := false
			for _, c := range r.codes {
				ok = ok || c == code
			}
			if !ok {
				t.Errorf("exit %d, want one of %v\nstderr: %s", code, r.codes, stderr.String())
			}
			checkNoSecret(t, "stdout", stdout.String())
			checkNoSecret(t, "stderr", stderr.String())
		})
	}
	t.Run("files", func(t *testing.T) { checkNoSecretInFiles(t, dir) })

	// watch: its log lines and every page it serves.
	t.Run("watch", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		wctx, cancel := context.WithCancelCause(ctx)
		var stdout, stderr lockedBuffer
		done := make(chan int, 1)
		cfg := config("watch", "", "  redact_keys: false\n")
		go func() {
			done <- execute(wctx, newTestRootCmd(&stdout, &stderr), []string{"watch", "-c", cfg, "--command-config", props, "--interval", "5s", "--listen", addr}, &stderr)
		}()
		get := func(path string) (int, string) { return httpGet("http://" + addr + path) }
		if err := poll.Until(ctx, 90*time.Second, 50*time.Millisecond, "watch's first step", func() bool {
			code, body := get("/metrics")
			return code == 200 && strings.Contains(body, "lossaudit_step_number 1")
		}); err != nil {
			t.Fatalf("%v\nstderr: %s", err, stderr.String())
		}
		for _, p := range []string{"/metrics", "/healthz", "/report.json", "/loss-report.csv", "/"} {
			code, body := get(p)
			if code != 200 {
				t.Errorf("%s: %d %.200s", p, code, body)
			}
			checkNoSecret(t, p, body)
		}
		cancel(&interrupted{sig: syscall.SIGTERM})
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("watch did not stop")
		}
		checkNoSecret(t, "watch stdout", stdout.String())
		checkNoSecret(t, "watch stderr", stderr.String())
		checkNoSecretInFiles(t, filepath.Join(dir, "watch"))
	})
}

// saslPipeline builds the lossy pipeline of app on a plain in-process
// cluster persisted to disk, then serves it from a cluster that asks
// SCRAM-SHA-512 of every client, with the given users (kfake.Superuser,
// kfake.User) and opts; it returns its brokers and what the pipeline is.
func saslPipeline(t *testing.T, app string, opts ...kfake.Opt) ([]string, *sim.Truth) {
	t.Helper()
	ctx := context.Background()
	dataDir := t.TempDir()
	plain, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	sc := lossyScenario(23, app)
	// Input and output topics outside the application's prefix, as an
	// application's usually are: a prefixed ACL on "<app>-" must not
	// cover them.
	sc.TopicPrefix, sc.Output = "in-"+app, "out-"+app
	live, err := sim.Start(ctx, plain.ListenAddrs(), sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := live.Advance(ctx, sc.Rounds); err != nil {
		t.Fatal(err)
	}
	truth := live.Truth
	live.Close()
	plain.Close()
	// The cluster restores the SASL users of the data directory (none)
	// over the ones configured: drop them.
	if err := os.Remove(filepath.Join(dataDir, "sasl.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	cluster, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.DataDir(dataDir), kfake.EnableSASL()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	return cluster.ListenAddrs(), truth
}

// pipelineConfig writes dir/name.yaml, the configuration of the pipeline
// truth on brokers with every report in dir/name: sasl is the kafka.sasl
// section's body ("" for none), schema is added to the schema section, and
// extra at the end (an indented line there continues the report section).
func pipelineConfig(t *testing.T, dir, name string, brokers []string, truth *sim.Truth, sasl, schema, extra string) string {
	t.Helper()
	run := filepath.Join(dir, name)
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kafka:\n  brokers: [%s]\n  retry_timeout: 20s\n", strings.Join(brokers, ", "))
	if sasl != "" {
		b.WriteString("  sasl:\n" + sasl)
	}
	fmt.Fprintf(&b, "schema:\n  schemas_topic: %q\n%s", truth.SchemasTopic, schema)
	fmt.Fprintf(&b, "pipeline:\n  application_id: %q\n  output: %q\n  join: left\n  reduce: plain\n  inputs:\n", truth.AppID, truth.Output)
	for _, in := range truth.Inputs {
		fmt.Fprintf(&b, "    - {name: %q, topic: %q, rekey: %q, key_format: %q, store: %q, repartition_topic: %q, changelog_topic: %q}\n",
			in.Name, in.Topic, in.Rekey, in.KeyFormat, in.Store, in.RepartitionTopic, in.ChangelogTopic)
	}
	fmt.Fprintf(&b, "compare:\n  pairs:\n    - {name: copy, source: %q, sink: %q}\n", truth.Inputs[0].Topic, truth.Output)
	fmt.Fprintf(&b, "store:\n  dir: %q\nreport:\n  csv: %q\n  json: %q\n  html: %q\n  metrics_file: %q\n",
		filepath.Join(run, "store"), filepath.Join(run, "loss-report.csv"), filepath.Join(run, "report.json"),
		filepath.Join(run, "report.html"), filepath.Join(run, "metrics.prom"))
	b.WriteString(extra)
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkNoSecret fails when text holds one of the secrets.
func checkNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range allSecrets {
		if strings.Contains(text, s) {
			i := strings.Index(text, s)
			t.Errorf("%s shows the secret %q: ...%s...", where, s, text[max(0, i-120):min(len(text), i+len(s)+40)])
		}
	}
}

// checkNoSecretInFiles checks every file lossaudit wrote below dir: the
// reports, metrics files and the store; the inputs (configuration,
// client.properties, the redaction key) are skipped.
func checkNoSecretInFiles(t *testing.T, dir string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".yaml", ".properties", ".key":
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		checkNoSecret(t, p, string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("no file written below %s to check", dir)
	}
}

// lockedBuffer is a bytes.Buffer safe for a command writing while the
// test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// httpGet returns the status and body of a GET of url (0 and the error's
// text when it fails).
func httpGet(url string) (int, string) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
