// Package copye2e runs lossaudit compare's real-broker scenarios: Apache
// Kafka's own VerifiableProducer and MirrorMaker 2 next to local clusters,
// and a truth computed without lossaudit (the producers' ledgers and a plain
// read_committed franz-go consumer) that the comparison must match exactly.
package copye2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/proc"
)

// Tool is a Java tool of Apache Kafka run as a child process: its stdout
// goes to Out, its stderr to Log.
type Tool struct {
	Name     string
	Out, Log string
	proc     proc.Process
}

// startTool runs class from the tools' jars (version's) with args, in dir.
func startTool(ctx context.Context, name, dir, version, class string, jvm []string, args ...string) (*Tool, error) {
	libs, err := kafka.InstallTools(ctx, version)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	t := &Tool{Name: name, Out: filepath.Join(dir, name+".out"), Log: filepath.Join(dir, name+".log")}
	out, err := os.Create(t.Out)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	logf, err := os.OpenFile(t.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		out.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	argv := append([]string{"-Xmx256m", "-Xms32m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.io.tmpdir=" + dir}, jvm...)
	argv = append(append(argv, "-cp", filepath.Join(libs, "*"), class), args...)
	cmd := exec.Command("java", argv...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := t.proc.Start(name, cmd, closers{out, logf}); err != nil {
		return nil, err
	}
	return t, nil
}

type closers []interface{ Close() error }

func (cs closers) Close() error {
	for _, c := range cs {
		c.Close()
	}
	return nil
}

// Running reports whether the tool is alive.
func (t *Tool) Running() bool { return t.proc.Running() }

// Wait waits for the tool to exit by itself, or kills it at ctx's end.
func (t *Tool) Wait(ctx context.Context) error {
	for t.proc.Running() {
		select {
		case <-ctx.Done():
			_ = t.Kill()
			return fmt.Errorf("waiting for %s to finish: %w\n%s", t.Name, ctx.Err(), kafka.Tail(t.Log, 30))
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// Stop asks the tool to shut down (SIGTERM: the VerifiableProducer then
// answers the sends in flight and prints its last lines) and waits,
// killing it after 30 s.
func (t *Tool) Stop() error { return t.proc.Signal(t.Name, syscall.SIGTERM, 30*time.Second) }

// Kill kills the tool (SIGKILL) and waits until it is gone.
func (t *Tool) Kill() error { return t.proc.Signal(t.Name, syscall.SIGKILL, 10*time.Second) }

// log4j is the tools' logging: warnings and errors only, to stderr.
const log4j = `log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
`

// writeProps writes a Java properties file (sorted) and returns its path.
func writeProps(dir, name string, props map[string]string) (string, error) {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("writing %s: %w", p, err)
	}
	return p, nil
}

// VerifiableProducer runs org.apache.kafka.tools.VerifiableProducer: it
// sends the integers 0, 1, ... (as string values, null keys) to topic and
// prints one JSON line per answer to Out, which is the ledger lossaudit
// compare reads. props are the producer's settings.
func VerifiableProducer(ctx context.Context, dir, version string, bootstrap []string, topic string, acks string, messages, throughput int, props map[string]string) (*Tool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l4j := filepath.Join(dir, "log4j.properties")
	if err := os.WriteFile(l4j, []byte(log4j), 0o644); err != nil {
		return nil, err
	}
	cfg, err := writeProps(dir, "producer.properties", props)
	if err != nil {
		return nil, err
	}
	return startTool(ctx, "verifiable-producer", dir, version, "org.apache.kafka.tools.VerifiableProducer",
		[]string{"-Dlog4j.configuration=file:" + l4j},
		"--bootstrap-server", strings.Join(bootstrap, ","), "--topic", topic, "--acks", acks,
		"--max-messages", fmt.Sprint(messages), "--throughput", fmt.Sprint(throughput), "--producer.config", cfg)
}

// LedgerCounts counts the answers a VerifiableProducer has printed so far.
func LedgerCounts(path string) (acked, failed int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue // a line being written
		}
		switch l.Name {
		case "producer_send_success":
			acked++
		case "producer_send_error":
			failed++
		}
	}
	return acked, failed, sc.Err()
}

// WaitAnswers polls the ledger at path until at least n answers (acked or
// failed) are in it, or ctx ends.
func WaitAnswers(ctx context.Context, t *Tool, n int) error {
	return waitLedger(ctx, t, fmt.Sprintf("%d answers", n), func(a, f int) bool { return a+f >= n })
}

// WaitAcked polls the ledger at path until at least n sends are
// acknowledged in it, or ctx ends.
func WaitAcked(ctx context.Context, t *Tool, n int) error {
	return waitLedger(ctx, t, fmt.Sprintf("%d acknowledged sends", n), func(a, _ int) bool { return a >= n })
}

// waitLedger polls t's ledger until ok holds for its acknowledged and
// failed sends, or ctx ends, or t exits first; what names the state awaited.
func waitLedger(ctx context.Context, t *Tool, what string, ok func(acked, failed int) bool) error {
	for {
		a, f, err := LedgerCounts(t.Out)
		if err != nil {
			return err
		}
		if ok(a, f) {
			return nil
		}
		if !t.Running() {
			return fmt.Errorf("%s exited after %d acknowledged and %d failed sends, want %s:\n%s", t.Name, a, f, what, kafka.Tail(t.Log, 30))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s of %s (have %d acknowledged, %d failed): %w", what, t.Name, a, f, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// MirrorMaker runs MirrorMaker 2 (org.apache.kafka.connect.mirror.MirrorMaker,
// the dedicated mode of connect-mirror-maker.sh) replicating topics from
// the cluster named source to the cluster named target; the copies are
// named source.<topic> (DefaultReplicationPolicy).
func MirrorMaker(ctx context.Context, dir, version string, source, target []string, topics []string) (*Tool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	l4j := filepath.Join(dir, "log4j.properties")
	if err := os.WriteFile(l4j, []byte(log4j), 0o644); err != nil {
		return nil, err
	}
	props := map[string]string{
		"clusters":                               "source, target",
		"source.bootstrap.servers":               strings.Join(source, ","),
		"target.bootstrap.servers":               strings.Join(target, ","),
		"source->target.enabled":                 "true",
		"source->target.topics":                  strings.Join(topics, ","),
		"target->source.enabled":                 "false",
		"replication.factor":                     "3",
		"checkpoints.topic.replication.factor":   "3",
		"heartbeats.topic.replication.factor":    "3",
		"offset-syncs.topic.replication.factor":  "3",
		"offset.storage.replication.factor":      "3",
		"status.storage.replication.factor":      "3",
		"config.storage.replication.factor":      "3",
		"sync.topic.acls.enabled":                "false",
		"sync.topic.configs.enabled":             "false",
		"emit.checkpoints.enabled":               "false",
		"refresh.topics.interval.seconds":        "5",
		"tasks.max":                              "1",
		"offset.flush.interval.ms":               "2000",
		"source->target.emit.heartbeats.enabled": "false",
		"dedicated.mode.enable.internal.rest":    "false",
	}
	cfg, err := writeProps(dir, "mm2.properties", props)
	if err != nil {
		return nil, err
	}
	return startTool(ctx, "mirror-maker", dir, version, "org.apache.kafka.connect.mirror.MirrorMaker",
		[]string{"-Dlog4j.configuration=file:" + l4j}, cfg)
}
