// Package streamsapp builds and runs the Kafka Streams application of
// the user story (the Java Maven project in this directory) for end-to-end tests.
package streamsapp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/proc"
)

// DefaultVersion is the Kafka Streams version of the user story.
const DefaultVersion = "3.6.2"

// VersionEnv names the environment variable selecting the Kafka Streams version.
const VersionEnv = "LOSSAUDIT_STREAMS_VERSION"

// MainClass is the application's entry point.
const MainClass = "lossaudit.testbed.StreamsApp"

// Version returns the Kafka Streams version selected by LOSSAUDIT_STREAMS_VERSION, or DefaultVersion.
func Version() string {
	if v := strings.TrimSpace(os.Getenv(VersionEnv)); v != "" {
		return v
	}
	return DefaultVersion
}

// sourceHash hashes pom.xml and src/ so a changed application is rebuilt.
func sourceHash(projectDir string) (string, error) {
	h := sha256.New()
	var files []string
	files = append(files, filepath.Join(projectDir, "pom.xml"))
	err := filepath.WalkDir(filepath.Join(projectDir, "src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", projectDir, err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("hashing %s: %w", f, err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Build compiles the application for the given Kafka Streams version (once per
// source change, cached) and returns its Java classpath.
func Build(ctx context.Context, version string) (string, error) {
	tb, err := kafka.TestbedDir()
	if err != nil {
		return "", err
	}
	cache, err := kafka.CacheDir()
	if err != nil {
		return "", err
	}
	project := filepath.Join(tb, "streamsapp")
	hash, err := sourceHash(project)
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, "streamsapp-"+version)
	cp := filepath.Join(out, "streamsapp-1.jar") + string(os.PathListSeparator) + filepath.Join(out, "lib", "*")
	stamp := filepath.Join(out, ".built")
	if b, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(b)) == hash {
		return cp, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("building streams app: %w", err)
	}
	unlock, err := lock(filepath.Join(cache, "streamsapp-"+version+".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if b, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(b)) == hash {
		return cp, nil
	}
	_ = os.RemoveAll(out)
	args := []string{"-q", "-B", "-f", filepath.Join(project, "pom.xml"), "package", "dependency:copy-dependencies",
		"-Dstreams.version=" + version, "-Dbuild.dir=" + out}
	cmd := exec.CommandContext(ctx, "mvn", args...)
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building streams app with mvn %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	if err := os.WriteFile(stamp, []byte(hash+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("building streams app: %w", err)
	}
	return cp, nil
}

func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// Options configures one application instance.
type Options struct {
	Version          string              // Kafka Streams version; default Version()
	Bootstrap        []string            // brokers
	ApplicationID    string              // default "lossaudit-tb"
	Inputs           [3]string           // input topics in join order (a, b, c)
	Output           string              // output topic
	SchemasTopic     string              // default "_schemas"
	Dir              string              // working dir: state/, app.log, topology.txt, ground-truth.jsonl; required
	DropBeforeStore  map[string][]string // input name (a|b|c) -> selected keys whose updates are dropped before the store
	DropBeforeOutput []string            // selected keys whose joined results are dropped before OUTPUT
	// JoinType is the KTable-KTable join of both links of the chain
	// (JOIN_TYPE): "inner", "left" or "outer"; "" is left.
	JoinType string
	Heap     string // JVM -Xmx; default "512m"
	// SessionTimeout, when set, is the consumers' session.timeout.ms (the
	// default 45 s delays the restart of a killed instance by as much).
	SessionTimeout time.Duration
	// PurgeInterval, when set, is repartition.purge.interval.ms (default 30 s):
	// a long one keeps aborted repartition records observable.
	PurgeInterval time.Duration
	// Copy runs the stateless application instead (Inputs[0] --map--> Output,
	// String serdes, no schemas).
	Copy bool
	// Count runs the count by a new key instead (Inputs[0] --selectKey(value)-->
	// groupByKey --> count --> toStream --mapValues--> Output, String serdes,
	// no schemas); DropCount lists keys whose first update the count loses.
	Count     bool
	DropCount []string
	// Stage, when set, runs a per-record stream stage instead
	// (StreamStages.java): "enrich" (Inputs[0] leftJoin the table of
	// Inputs[1]) or "passthrough" (Inputs[0] and Inputs[1], mapValues,
	// merged); or (StreamFilter.java) "filter-rekey" (Inputs[0]
	// filter(amount > 100), selectKey(customer), Avro values); or
	// (StreamBranch.java) "branch" (Inputs[0] split into route-big and
	// route-medium, merged into Output, route-small to Output+"-other",
	// route-rest dropped; Avro values); or (GlobalJoin.java) "global-join"
	// (Inputs[0] leftJoin a GlobalKTable of Inputs[1] by the order's
	// customer, mapValues; Avro values);
	// DropValues lists input values (ids for filter-rekey) whose records
	// are lost before Output.
	Stage      string
	DropValues []string
	// Table runs a table source left-joined with a reduced stream instead
	// (table(Inputs[0]) leftJoin Inputs[1] --selectKey(value)--> reduce,
	// toStream, to Output; String serdes, no schemas): table records whose
	// value starts with "drop:" are skipped (lost). Optimize builds it with
	// topology.optimization=all (the table restored from its input topic,
	// no changelog).
	Table, Optimize bool
	// TableGroupBy runs a table groupBy and count instead
	// (TableGroupByCount.java: table(Inputs[0]) --groupBy(value.region)-->
	// count, toStream, to Output; Avro values {id, region}): records whose
	// id starts with "drop" are skipped (lost). TableGroupByOp replaces the
	// count: "reduce" (generated names, KTABLE-REDUCE-) or "aggregate"
	// (Named.as("members-by-region"), Materialized.as("region-members"): the
	// group's member keys, null when the last one leaves).
	TableGroupBy   bool
	TableGroupByOp string
	// Suppress, with Count, runs the count with
	// suppress(untilTimeLimit(Suppress)) before the output instead
	// (CountSuppress.java); DropBeforeOutput then lists keys whose emitted
	// counts are dropped.
	Suppress time.Duration
	// Aggregate makes each table of the join chain an aggregate keeping the
	// newest value (KSTREAM-AGGREGATE-) instead of a reduce (TABLE_OP).
	Aggregate bool
	// ChangelogOnly, with Count, runs the count without toStream: the
	// table ends in its changelog (CountChangelog.java); Output is unused.
	ChangelogOnly bool
	// Cogroup runs a cogroup instead (Cogroup.java): Inputs[0] grouped on
	// its own key and Inputs[1] by its value (a repartition topic), one
	// aggregate, toStream to Output; String serdes, no schemas. A record
	// of Inputs[0] whose value starts with "drop:" is lost before the
	// aggregate; DropBeforeOutput lists keys whose output records are lost.
	Cogroup bool
	// Window, with Count, runs a time-windowed count instead
	// (WindowedCount.java): windows of Window, hopping by WindowAdvance
	// when set below Window (else tumbling), grace WindowGrace, output
	// keyed by the windowed serde; DropCount as for Count.
	Window, WindowAdvance, WindowGrace time.Duration
	// WindowFinal, with Window, emits each window once, when it closes:
	// suppress(untilWindowCloses) before toStream (WINDOW_EMIT=final).
	WindowFinal bool
	// WindowOnClose, with Window, emits each window once, when it closes,
	// by emitStrategy(EmitStrategy.onWindowClose()) (WINDOW_EMIT=close,
	// the emit interval 0 ms); it wins over WindowFinal.
	WindowOnClose bool
	// ProcessingGuarantee is processing.guarantee (default exactly_once_v2);
	// CommitInterval, when set, commit.interval.ms. Both may change between
	// starts.
	ProcessingGuarantee string
	CommitInterval      time.Duration
	// GroupProtocol, when set, is group.protocol: "streams" joins a
	// KIP-1071 streams group (Kafka Streams 4.1+, brokers 4.1+) instead of
	// a classic consumer group. SessionTimeout is then ignored (the
	// broker's group.streams.session.timeout.ms applies).
	GroupProtocol string
	// SkipUndecodable logs and skips records that do not deserialize
	// (LogAndContinueExceptionHandler) instead of failing on them (the
	// default LogAndFailExceptionHandler); may change between starts.
	SkipUndecodable bool
	// ShutdownOnError shuts the application down when a stream thread dies
	// (SHUTDOWN_CLIENT) instead of replacing the thread: it stops on a
	// poison pill, as an application with the default handlers does.
	ShutdownOnError bool
	// ClientProperties, when set, names a Java properties file whose
	// entries every client of the application gets (security.protocol,
	// sasl.mechanism, sasl.jaas.config, ssl.truststore.*: a secured cluster).
	ClientProperties string
	// DeadLetterTopic, when set, is errors.dead.letter.queue.topic.name
	// (Kafka Streams 4.2+, KIP-1034); SkipProcessingErrors skips records a
	// processor throws on (LogAndContinueProcessingExceptionHandler,
	// 4.0+), which with DeadLetterTopic go to the queue; FailSelectNote and
	// FailReduceNote make selectKey and the reduce throw on values whose
	// note is that text. All may change between starts.
	DeadLetterTopic                string
	SkipProcessingErrors           bool
	FailSelectNote, FailReduceNote string
}

// App is the application process (restartable).
type App struct {
	o  Options
	cp string

	proc proc.Process

	mu       sync.Mutex
	logStart int64 // size of the log when the current process started
}

// New builds the application (if needed) and returns a stopped instance.
func New(ctx context.Context, o Options) (*App, error) {
	if o.Version == "" {
		o.Version = Version()
	}
	if o.ApplicationID == "" {
		o.ApplicationID = "lossaudit-tb"
	}
	if o.SchemasTopic == "" {
		o.SchemasTopic = "_schemas"
	}
	if o.Heap == "" {
		o.Heap = "512m"
	}
	if o.Dir == "" {
		return nil, errors.New("streams app: Options.Dir is required")
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, "state"), 0o755); err != nil {
		return nil, fmt.Errorf("streams app: %w", err)
	}
	cp, err := Build(ctx, o.Version)
	if err != nil {
		return nil, err
	}
	return &App{o: o, cp: cp}, nil
}

// Version returns the Kafka Streams version the application runs on.
func (a *App) Version() string { return a.o.Version }

// TopologyFile is where the application writes Topology#describe() at start.
func (a *App) TopologyFile() string { return filepath.Join(a.o.Dir, "topology.txt") }

// GroundTruthFile is where the application logs its injected faults.
func (a *App) GroundTruthFile() string { return filepath.Join(a.o.Dir, "ground-truth.jsonl") }

// LogFile is the application's stdout and stderr.
func (a *App) LogFile() string { return filepath.Join(a.o.Dir, "app.log") }

// ApplicationID returns the application.id (the consumer group).
func (a *App) ApplicationID() string { return a.o.ApplicationID }

// LogGrep returns up to n lines of the application log containing any of the words.
func (a *App) LogGrep(n int, words ...string) string {
	b, err := os.ReadFile(a.LogFile())
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, w := range words {
			if strings.Contains(line, w) {
				out = append(out, line)
				break
			}
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return strings.Join(out, "\n")
}

// LogTail returns the last n lines of the application log.
func (a *App) LogTail(n int) string { return kafka.Tail(a.LogFile(), n) }

func (a *App) env() []string {
	var dbs []string
	for _, in := range []string{"a", "b", "c"} {
		if ks := a.o.DropBeforeStore[in]; len(ks) > 0 {
			dbs = append(dbs, in+":"+strings.Join(ks, ","))
		}
	}
	return append(os.Environ(),
		"BOOTSTRAP_SERVERS="+strings.Join(a.o.Bootstrap, ","),
		"APPLICATION_ID="+a.o.ApplicationID,
		"INPUT_TOPICS="+strings.Join(nonEmpty(a.o.Inputs[:]), ","),
		"OUTPUT_TOPIC="+a.o.Output,
		"STATE_DIR="+filepath.Join(a.o.Dir, "state"),
		"TOPOLOGY_FILE="+a.TopologyFile(),
		"GROUND_TRUTH_FILE="+a.GroundTruthFile(),
		"SCHEMAS_TOPIC="+a.o.SchemasTopic,
		"DROP_BEFORE_STORE="+strings.Join(dbs, ";"),
		"DROP_BEFORE_OUTPUT="+strings.Join(a.o.DropBeforeOutput, ","),
		"JOIN_TYPE="+a.o.JoinType,
		"CONSUMER_SESSION_TIMEOUT_MS="+map[bool]string{true: "", false: millis(a.o.SessionTimeout)}[a.o.GroupProtocol == "streams"],
		"REPARTITION_PURGE_INTERVAL_MS="+millis(a.o.PurgeInterval),
		"TOPOLOGY="+a.topology(),
		"TOPOLOGY_OPTIMIZATION="+map[bool]string{true: "all", false: ""}[a.o.Optimize],
		"DROP_COUNT="+strings.Join(a.o.DropCount, ","),
		"DROP_VALUES="+strings.Join(a.o.DropValues, ","),
		"SUPPRESS_MS="+millis(a.o.Suppress),
		"WINDOW_SIZE_MS="+millis(a.o.Window),
		"WINDOW_GRACE_MS="+millis(a.o.WindowGrace),
		"WINDOW_ADVANCE_MS="+millis(a.o.WindowAdvance),
		"WINDOW_EMIT="+a.windowEmit(),
		"TABLE_OP="+map[bool]string{true: "aggregate", false: ""}[a.o.Aggregate],
		"TABLE_GROUPBY_OP="+a.o.TableGroupByOp,
		"PROCESSING_GUARANTEE="+a.o.ProcessingGuarantee,
		"COMMIT_INTERVAL_MS="+millis(a.o.CommitInterval),
		"GROUP_PROTOCOL="+a.o.GroupProtocol,
		"DESERIALIZATION_HANDLER="+map[bool]string{true: "continue", false: ""}[a.o.SkipUndecodable],
		"ON_THREAD_ERROR="+map[bool]string{true: "shutdown", false: ""}[a.o.ShutdownOnError],
		"CLIENT_PROPERTIES="+a.o.ClientProperties,
		"DEAD_LETTER_TOPIC="+a.o.DeadLetterTopic,
		"PROCESSING_HANDLER="+map[bool]string{true: "continue", false: ""}[a.o.SkipProcessingErrors],
		"FAIL_SELECT_NOTE="+a.o.FailSelectNote,
		"FAIL_REDUCE_NOTE="+a.o.FailReduceNote,
	)
}

// topology is the TOPOLOGY the application runs.
// windowEmit is WINDOW_EMIT: close, final or nothing (eager).
func (a *App) windowEmit() string {
	switch {
	case a.o.WindowOnClose:
		return "close"
	case a.o.WindowFinal:
		return "final"
	}
	return ""
}

func (a *App) topology() string {
	switch {
	case a.o.Stage != "":
		return a.o.Stage
	case a.o.Cogroup:
		return "cogroup"
	case a.o.Count && a.o.Window > 0:
		return "windowed-count"
	case a.o.Count && a.o.ChangelogOnly:
		return "count-changelog"
	case a.o.Count && a.o.Suppress > 0:
		return "count-suppress"
	case a.o.Count:
		return "count"
	case a.o.Copy:
		return "copy"
	case a.o.Table:
		return "table"
	case a.o.TableGroupBy:
		return "table-groupby"
	}
	return "join"
}

// SetErrorHandling changes how the next start treats records that do not
// deserialize and stream threads that die (see Options).
func (a *App) SetErrorHandling(skipUndecodable, shutdownOnError bool) {
	a.o.SkipUndecodable, a.o.ShutdownOnError = skipUndecodable, shutdownOnError
}

// SetDeadLetters changes, for the next start, the dead-letter topic, the
// processing handler and the injected processing failures (see Options).
func (a *App) SetDeadLetters(topic string, skipProcessingErrors bool, failSelectNote, failReduceNote string) {
	a.o.DeadLetterTopic, a.o.SkipProcessingErrors = topic, skipProcessingErrors
	a.o.FailSelectNote, a.o.FailReduceNote = failSelectNote, failReduceNote
}

// SetDropBeforeStore changes, for the next start, the selected keys whose
// updates are dropped before the store (Options.DropBeforeStore: input name
// to keys): the injected loss.
func (a *App) SetDropBeforeStore(keys map[string][]string) { a.o.DropBeforeStore = keys }

// SetGuarantee changes processing.guarantee and commit.interval.ms for the
// next start (as a rollback that switches exactly-once off does).
func (a *App) SetGuarantee(guarantee string, commitInterval time.Duration) {
	a.o.ProcessingGuarantee, a.o.CommitInterval = guarantee, commitInterval
}

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// millis renders a duration in milliseconds, "" for none.
func millis(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprint(d.Milliseconds())
}

// Start starts the application process; an error if it is running.
func (a *App) Start() error {
	if a.proc.Running() {
		return errors.New("starting streams app: already running")
	}
	logf, err := os.OpenFile(a.LogFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("starting streams app: %w", err)
	}
	st, err := logf.Stat()
	if err != nil {
		logf.Close()
		return fmt.Errorf("starting streams app: %w", err)
	}
	a.mu.Lock()
	a.logStart = st.Size()
	a.mu.Unlock()
	cmd := exec.Command("java", "-Xmx"+a.o.Heap, "-Xms64m", "-XX:+UseSerialGC",
		"-Djava.io.tmpdir="+a.o.Dir, // native libraries (rocksdb, zstd, snappy) are unpacked here
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.consumer.ConsumerConfig=warn",
		"-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.producer.ProducerConfig=warn",
		"-Dorg.slf4j.simpleLogger.log.org.apache.kafka.clients.admin.AdminClientConfig=warn",
		"-Dorg.slf4j.simpleLogger.log.org.apache.kafka.streams.StreamsConfig=warn",
		"-cp", a.cp, MainClass)
	cmd.Env = a.env()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	return a.proc.Start("streams app", cmd, logf)
}

// Running reports whether the process is alive.
func (a *App) Running() bool { return a.proc.Running() }

func (a *App) signal(sig syscall.Signal, wait time.Duration) error {
	return a.proc.Signal("streams app", sig, wait)
}

// Stop shuts the application down cleanly (SIGTERM; KafkaStreams#close), killing it after 60 s.
func (a *App) Stop() error { return a.signal(syscall.SIGTERM, 60*time.Second) }

// Kill kills the application with SIGKILL (no commit, no close).
func (a *App) Kill() error { return a.signal(syscall.SIGKILL, 10*time.Second) }

// WaitRunning waits until the current process logs the transition to RUNNING.
func (a *App) WaitRunning(ctx context.Context) error {
	for {
		a.mu.Lock()
		from := a.logStart
		a.mu.Unlock()
		running := a.proc.Running()
		if !running {
			return fmt.Errorf("streams app exited:\n%s", a.LogTail(40))
		}
		if ok, err := logContains(a.LogFile(), from, "-> RUNNING"); err != nil {
			return err
		} else if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for streams app to be RUNNING: %w\n%s", ctx.Err(), a.LogTail(40))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func logContains(path string, from int64, s string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(s)) {
			return true, nil
		}
	}
	return false, sc.Err()
}

// Drop is one update the application dropped on purpose (ground truth).
type Drop struct {
	Stage string `json:"stage"` // before_store | before_output
	Input string `json:"input"` // a | b | c, or "output" for before_output
	Key   string `json:"key"`   // selected key
	Seq   int64  `json:"seq"`   // seq of the input record (of input a for before_output)
	TS    int64  `json:"ts"`    // ts field of that record
	Where string `json:"where"` // topic it was read from or would have been written to
}

// GroundTruth is what the application logged about its injected faults.
type GroundTruth struct {
	DropBeforeStore  map[string][]string // as configured at the last start
	DropBeforeOutput []string
	StreamsVersions  []string // one per start
	Drops            []Drop   // deduplicated (reprocessing after a crash logs again)
	ThreadsReplaced  []string // errors that killed a stream thread
}

// ReadGroundTruth parses the ground-truth file the application wrote.
func ReadGroundTruth(path string) (*GroundTruth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading ground truth: %w", err)
	}
	gt := &GroundTruth{}
	seen := map[Drop]bool{}
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var ev struct {
			Event            string              `json:"event"`
			StreamsVersion   string              `json:"streams_version"`
			DropBeforeStore  map[string][]string `json:"drop_before_store"`
			DropBeforeOutput []string            `json:"drop_before_output"`
			Error            string              `json:"error"`
			Drop
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return nil, fmt.Errorf("reading ground truth %s line %d: %w", path, i+1, err)
		}
		switch ev.Event {
		case "start":
			gt.StreamsVersions = append(gt.StreamsVersions, ev.StreamsVersion)
			gt.DropBeforeStore, gt.DropBeforeOutput = ev.DropBeforeStore, ev.DropBeforeOutput
		case "drop":
			if !seen[ev.Drop] {
				seen[ev.Drop] = true
				gt.Drops = append(gt.Drops, ev.Drop)
			}
		case "thread_replaced":
			gt.ThreadsReplaced = append(gt.ThreadsReplaced, ev.Error)
		}
	}
	return gt, nil
}
