package kafka

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lossaudit/lossaudit/testbed/proc"
)

// Options configures a local cluster. Zero values take the defaults noted.
type Options struct {
	Version string            // Kafka version; default Version()
	Nodes   int               // number of combined broker+controller nodes; default 3
	Dir     string            // working directory (data, configs, logs); required
	Heap    string            // JVM -Xmx per node; default "384m"
	Props   map[string]string // extra or overriding server.properties entries
	// ClusterID is the KRaft cluster id to format the storage with;
	// default a random one.
	ClusterID string
	// Security, when set, starts a secured cluster (see Security).
	Security *Security
}

// Node is one combined broker+controller process.
type Node struct {
	ID             int
	BrokerPort     int
	ControllerPort int
	MTLSPort       int    // the mutual-TLS listener of a secured cluster
	Dir            string // node directory: server.properties, data/, server.log
	LogFile        string

	proc proc.Process
}

// Cluster is a running (or partly stopped) local KRaft cluster.
type Cluster struct {
	opts      Options
	libs      string
	clusterID string
	Nodes     []*Node
	pki       *pki // the certificates of a secured cluster
}

// Start installs the version if needed, formats storage and starts every node.
// It does not wait for readiness; call WaitReady.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Version == "" {
		o.Version = Version()
	}
	if o.Nodes == 0 {
		o.Nodes = 3
	}
	if o.Heap == "" {
		o.Heap = "384m"
	}
	if o.Dir == "" {
		return nil, errors.New("starting kafka cluster: Options.Dir is required")
	}
	libs, err := Install(ctx, o.Version)
	if err != nil {
		return nil, err
	}
	perNode := 2
	if o.Security != nil {
		perNode = 3
	}
	ports, err := freePorts(perNode * o.Nodes)
	if err != nil {
		return nil, fmt.Errorf("starting kafka cluster: %w", err)
	}
	if o.ClusterID == "" {
		o.ClusterID = newClusterID()
	}
	c := &Cluster{opts: o, libs: libs, clusterID: o.ClusterID}
	if o.Security != nil {
		if c.pki, err = newPKI(filepath.Join(o.Dir, "tls")); err != nil {
			return nil, fmt.Errorf("starting kafka cluster: %w", err)
		}
		if _, _, _, err := c.pki.issue(BrokerPrincipal); err != nil {
			return nil, fmt.Errorf("starting kafka cluster: %w", err)
		}
	}
	for i := 0; i < o.Nodes; i++ {
		n := &Node{ID: i + 1, BrokerPort: ports[perNode*i], ControllerPort: ports[perNode*i+1],
			Dir: filepath.Join(o.Dir, fmt.Sprintf("node%d", i+1))}
		if o.Security != nil {
			n.MTLSPort = ports[perNode*i+2]
		}
		n.LogFile = filepath.Join(n.Dir, "server.log")
		c.Nodes = append(c.Nodes, n)
	}
	if err := c.writeConfigs(); err != nil {
		return nil, err
	}
	if err := c.format(ctx); err != nil {
		return nil, err
	}
	for _, n := range c.Nodes {
		if err := c.StartNode(n.ID); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// ClusterID returns the KRaft cluster id the storage was formatted with.
func (c *Cluster) ClusterID() string { return c.clusterID }

// Version returns the Kafka version the cluster runs.
func (c *Cluster) Version() string { return c.opts.Version }

// Bootstrap returns the broker addresses (host:port) of every node.
func (c *Cluster) Bootstrap() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, fmt.Sprintf("127.0.0.1:%d", n.BrokerPort))
	}
	return out
}

// node returns the node with the given id (1-based).
func (c *Cluster) node(id int) (*Node, error) {
	if id < 1 || id > len(c.Nodes) {
		return nil, fmt.Errorf("no kafka node %d (cluster has %d)", id, len(c.Nodes))
	}
	return c.Nodes[id-1], nil
}

func (c *Cluster) writeConfigs() error {
	var voters []string
	for _, n := range c.Nodes {
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", n.ID, n.ControllerPort))
	}
	rf := 3
	if len(c.Nodes) < 3 {
		rf = len(c.Nodes)
	}
	minISR := 2
	if rf < 2 {
		minISR = 1
	}
	for _, n := range c.Nodes {
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", n.Dir, err)
		}
		p := map[string]string{
			"process.roles":                            "broker,controller",
			"node.id":                                  fmt.Sprint(n.ID),
			"controller.quorum.voters":                 strings.Join(voters, ","),
			"listeners":                                fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", n.BrokerPort, n.ControllerPort),
			"advertised.listeners":                     fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", n.BrokerPort),
			"controller.listener.names":                "CONTROLLER",
			"inter.broker.listener.name":               "PLAINTEXT",
			"listener.security.protocol.map":           "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
			"log.dirs":                                 filepath.Join(n.Dir, "data"),
			"num.partitions":                           "3",
			"default.replication.factor":               fmt.Sprint(rf),
			"min.insync.replicas":                      fmt.Sprint(minISR),
			"offsets.topic.replication.factor":         fmt.Sprint(rf),
			"offsets.topic.num.partitions":             "3",
			"transaction.state.log.replication.factor": fmt.Sprint(rf),
			"transaction.state.log.min.isr":            fmt.Sprint(minISR),
			"transaction.state.log.num.partitions":     "3",
			"auto.create.topics.enable":                "false",
			"unclean.leader.election.enable":           "false",
			"group.initial.rebalance.delay.ms":         "0",
			"num.network.threads":                      "2",
			"num.io.threads":                           "2",
			"num.recovery.threads.per.data.dir":        "1",
			"num.replica.fetchers":                     "1",
			"background.threads":                       "2",
			"log.segment.bytes":                        fmt.Sprint(8 << 20),
			"log.retention.hours":                      "24",
			"log.retention.check.interval.ms":          "60000",
			"log.cleaner.threads":                      "1",
			"log.cleaner.dedupe.buffer.size":           fmt.Sprint(8 << 20),
			"log.cleaner.io.buffer.size":               fmt.Sprint(512 << 10),
			"replica.lag.time.max.ms":                  "10000",
			"controlled.shutdown.enable":               "true",
			// Abort transactions that outlived their timeout within a second of
			// the coordinator noticing (default 10 s), so an outage longer than
			// transaction.timeout.ms reliably ends in aborted transactions.
			"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
		}
		if c.pki != nil {
			for k, v := range c.secureProps(n) {
				p[k] = v
			}
		}
		for k, v := range c.opts.Props {
			p[k] = v
		}
		keys := make([]string, 0, len(p))
		for k := range p {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b bytes.Buffer
		for _, k := range keys {
			fmt.Fprintf(&b, "%s=%s\n", k, p[k])
		}
		if err := os.WriteFile(filepath.Join(n.Dir, "server.properties"), b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing server.properties of node %d: %w", n.ID, err)
		}
		v1, v2 := log4j1, log4j2
		if c.pki != nil {
			a1, a2 := authorizerLog4j(n)
			v1, v2 = v1+a1, v2+a2
		}
		if err := os.WriteFile(filepath.Join(n.Dir, "log4j.properties"), []byte(v1), 0o644); err != nil {
			return fmt.Errorf("writing log4j.properties of node %d: %w", n.ID, err)
		}
		if err := os.WriteFile(filepath.Join(n.Dir, "log4j2.properties"), []byte(v2), 0o644); err != nil {
			return fmt.Errorf("writing log4j2.properties of node %d: %w", n.ID, err)
		}
	}
	return nil
}

const log4j1 = `log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.kafka.log.LogCleaner=WARN
log4j.logger.org.apache.kafka.storage.internals.log=WARN
log4j.logger.kafka.log.UnifiedLog=WARN
log4j.logger.org.apache.kafka.raft=WARN
`

const log4j2 = `status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
logger.req.name = kafka.request.logger
logger.req.level = warn
logger.sc.name = state.change.logger
logger.sc.level = warn
logger.log.name = org.apache.kafka.storage.internals.log
logger.log.level = warn
logger.ulog.name = kafka.log.UnifiedLog
logger.ulog.level = warn
logger.raft.name = org.apache.kafka.raft
logger.raft.level = warn
`

// javaArgs returns the JVM arguments common to every Kafka process of node n.
func (c *Cluster) javaArgs(n *Node, heap string) []string {
	return []string{
		"-Xmx" + heap, "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.awt.headless=true", "-Djava.io.tmpdir=" + n.Dir,
		"-Dlog4j.configuration=file:" + filepath.Join(n.Dir, "log4j.properties"),
		"-Dlog4j2.configurationFile=" + filepath.Join(n.Dir, "log4j2.properties"),
		"-cp", filepath.Join(c.libs, "*"),
	}
}

// format runs the StorageTool for every node (in parallel).
func (c *Cluster) format(ctx context.Context) error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			args := append(c.javaArgs(n, "256m"), "kafka.tools.StorageTool", "format",
				"--cluster-id="+c.clusterID, "-c", filepath.Join(n.Dir, "server.properties"), "--ignore-formatted")
			args = append(args, c.scramArgs()...)
			cmd := exec.CommandContext(ctx, "java", args...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
			out, err := cmd.CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("formatting storage of node %d: %w\n%s", n.ID, err, out)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// StartNode starts node id (1-based). It is an error if it is already running.
func (c *Cluster) StartNode(id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if n.proc.Running() {
		return fmt.Errorf("starting kafka node %d: already running", id)
	}
	logf, err := os.OpenFile(n.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("starting kafka node %d: %w", id, err)
	}
	fmt.Fprintf(logf, "%s %d at %s ====\n", startBanner, id, time.Now().UTC().Format(time.RFC3339Nano))
	args := append(c.javaArgs(n, c.opts.Heap), "kafka.Kafka", filepath.Join(n.Dir, "server.properties"))
	cmd := exec.Command("java", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The JVM dies with the test process even if the test binary is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	return n.proc.Start(fmt.Sprintf("kafka node %d", id), cmd, logf)
}

// Running reports whether node id has a live process.
func (c *Cluster) Running(id int) bool {
	n, err := c.node(id)
	if err != nil {
		return false
	}
	return n.proc.Running()
}

// signal sends sig to node id and waits up to wait for it to exit; on timeout
// it kills the node with SIGKILL.
func (c *Cluster) signal(id int, sig syscall.Signal, wait time.Duration) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	return n.proc.Signal(fmt.Sprintf("kafka node %d", id), sig, wait)
}

// StopNode shuts node id down cleanly (SIGTERM) and waits for it, killing it after 60 s.
func (c *Cluster) StopNode(id int) error { return c.signal(id, syscall.SIGTERM, 60*time.Second) }

// KillNode kills node id with SIGKILL and waits for the process to be gone.
func (c *Cluster) KillNode(id int) error { return c.signal(id, syscall.SIGKILL, 10*time.Second) }

// PauseNode freezes node id (SIGSTOP): it keeps its sessions and its place
// in the ISR until their timeouts pass, but serves and replicates nothing.
func (c *Cluster) PauseNode(id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	return n.proc.Send(fmt.Sprintf("kafka node %d", id), syscall.SIGSTOP)
}

// ResumeNode lets a paused node run again (SIGCONT).
func (c *Cluster) ResumeNode(id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	return n.proc.Send(fmt.Sprintf("kafka node %d", id), syscall.SIGCONT)
}

// RestartNode stops node id cleanly and starts it again.
func (c *Cluster) RestartNode(id int) error {
	if err := c.StopNode(id); err != nil {
		return err
	}
	return c.StartNode(id)
}

// KillAll kills every node with SIGKILL at once (the user story's outage).
func (c *Cluster) KillAll() error {
	var errs []error
	for _, n := range c.Nodes {
		n.proc.KillNow()
	}
	for _, n := range c.Nodes {
		errs = append(errs, c.KillNode(n.ID))
	}
	return errors.Join(errs...)
}

// StartAll starts every node that is not running.
func (c *Cluster) StartAll() error {
	var errs []error
	for _, n := range c.Nodes {
		if !c.Running(n.ID) {
			errs = append(errs, c.StartNode(n.ID))
		}
	}
	return errors.Join(errs...)
}

// Close kills every node. It is safe to call more than once.
func (c *Cluster) Close() {
	_ = c.KillAll()
}

// LogTail returns the last n lines of node id's log.
func (c *Cluster) LogTail(id, lines int) string {
	nd, err := c.node(id)
	if err != nil {
		return err.Error()
	}
	return Tail(nd.LogFile, lines)
}

// LogSinceLastStart returns node id's log written since its latest start.
func (c *Cluster) LogSinceLastStart(id int) (string, error) {
	nd, err := c.node(id)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(nd.LogFile)
	if err != nil {
		return "", fmt.Errorf("reading log of node %d: %w", id, err)
	}
	s := string(b)
	if i := strings.LastIndex(s, startBanner); i >= 0 {
		s = s[i:]
	}
	return s, nil
}

// startBanner starts the lines StartNode writes to a node's log.
const startBanner = "==== lossaudit testbed: starting node"

// Tail returns the last n lines of a file, or a note saying why it cannot.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserving a loopback port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// newClusterID returns a random KRaft cluster id (base64url of 16 bytes, 22
// chars). One in 64 starts with '-': it is passed as --cluster-id=ID so the
// storage tool's argument parser does not take it for an option.
func newClusterID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[0] |= 0x10 // never the reserved all-zero / small ids
	return base64.RawURLEncoding.EncodeToString(b[:])
}
