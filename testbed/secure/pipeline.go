package secure

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lossaudit/lossaudit/testbed/e2e"
	"github.com/lossaudit/lossaudit/testbed/kafka"
	"github.com/lossaudit/lossaudit/testbed/loadgen"
	"github.com/lossaudit/lossaudit/testbed/streamsapp"
)

// Version is the Kafka release of the secured cluster and of the
// application's Kafka Streams: one release keeps the test's time down.
const Version = "4.4.0"

// Pipeline is one run of the Kafka Streams test application on the secured
// cluster: its own application id, topics and schemas topic.
type Pipeline struct {
	App          string
	Inputs       [3]string
	Output       string
	SchemasTopic string
	// Copy is the sink of `lossaudit compare`'s pair "copy" (source: the first input).
	Copy string
	// DropBeforeStore and DropBeforeOutput are the injected loss (streamsapp.Options).
	DropBeforeStore  map[string][]string
	DropBeforeOutput []string

	Dir          string
	TopologyFile string
	Ledger       *loadgen.Ledger
	Truth        *streamsapp.GroundTruth
	// Timings are the wall times of Run's phases, for the test's log.
	Timings []string
}

// timed notes the wall time of a phase that started at start.
func (p *Pipeline) timed(phase string, start time.Time) time.Time {
	now := time.Now()
	p.Timings = append(p.Timings, fmt.Sprintf("%s %v", phase, now.Sub(start).Round(100*time.Millisecond)))
	return now
}

// NewPipeline names the topics of the pipeline app under dir. As in
// docs/security.md's example, the inputs, the output and the schemas topic
// are outside the application's prefix "<app>-", so the prefixed ACL on
// the internal topics does not cover them.
func NewPipeline(app, dir string) *Pipeline {
	return &Pipeline{App: app, Inputs: [3]string{app + ".in-a", app + ".in-b", app + ".in-c"},
		Output: app + ".joined", SchemasTopic: app + ".schemas", Copy: app + ".copy", Dir: filepath.Join(dir, app)}
}

// Topics returns the inputs and the output.
func (p *Pipeline) Topics() []string { return append(p.Inputs[:], p.Output) }

// Injected returns the rows the injection must cause, as Rows writes them.
func (p *Pipeline) Injected() []string {
	var out []string
	for _, d := range e2e.Injected(p.Ledger, p.DropBeforeStore, p.DropBeforeOutput) {
		out = append(out, d.Kind+" "+d.Stage+"/"+d.Input+"/"+d.Key)
	}
	sort.Strings(out)
	return out
}

// Run creates the topics, starts the application as the streams principal
// (its client properties in clientProps), produces records per input as
// the harness, waits until the application has committed everything and
// stops it.
func (p *Pipeline) Run(ctx context.Context, c *kafka.Cluster, adm *kafka.Admin, clientProps string, records int) error {
	start := time.Now()
	specs := []kafka.TopicSpec{{Name: p.Output, Partitions: 3},
		{Name: p.SchemasTopic, Partitions: 1, Configs: map[string]string{"cleanup.policy": "compact"}}}
	for _, in := range p.Inputs {
		specs = append(specs, kafka.TopicSpec{Name: in, Partitions: 3})
	}
	if err := adm.CreateTopics(ctx, specs...); err != nil {
		return err
	}
	harness, err := c.HarnessOpts()
	if err != nil {
		return err
	}
	gen, err := loadgen.New(ctx, loadgen.Config{Topics: p.Inputs, SchemasTopic: p.SchemasTopic, Customers: 20,
		Records: records, Rate: 400, ClientOpts: harness})
	if err != nil {
		return fmt.Errorf("pipeline %s: %w", p.App, err)
	}
	app, err := streamsapp.New(ctx, streamsapp.Options{Version: Version, Bootstrap: c.Bootstrap(), ApplicationID: p.App,
		Inputs: p.Inputs, Output: p.Output, SchemasTopic: p.SchemasTopic, Dir: p.Dir,
		DropBeforeStore: p.DropBeforeStore, DropBeforeOutput: p.DropBeforeOutput, SessionTimeout: 10 * time.Second,
		ClientProperties: clientProps, Heap: "384m"})
	if err != nil {
		return fmt.Errorf("pipeline %s: %w", p.App, err)
	}
	defer func() { _ = app.Kill() }()
	start = p.timed("topics, schemas, build", start)
	if err := app.Start(); err != nil {
		return fmt.Errorf("pipeline %s: %w", p.App, err)
	}
	if err := app.WaitRunning(ctx); err != nil {
		return fmt.Errorf("pipeline %s: %w", p.App, err)
	}
	start = p.timed("running", start)
	if err := gen.Run(ctx); err != nil {
		return fmt.Errorf("pipeline %s: load: %w", p.App, err)
	}
	start = p.timed("load", start)
	p.Ledger, p.TopologyFile = gen.Ledger(), app.TopologyFile()
	if err := p.waitCaughtUp(ctx, adm, app); err != nil {
		return err
	}
	start = p.timed("caught up", start)
	if err := app.Stop(); err != nil {
		return fmt.Errorf("pipeline %s: %w", p.App, err)
	}
	p.timed("stopped", start)
	if p.Truth, err = streamsapp.ReadGroundTruth(app.GroundTruthFile()); err != nil {
		return err
	}
	return nil
}

var repartitionRe = regexp.MustCompile(`\(topic: (\S+-repartition)\)`)

// waitCaughtUp waits until the application's committed offsets reach the
// last stable offset of every partition of its inputs and repartition topics.
func (p *Pipeline) waitCaughtUp(ctx context.Context, adm *kafka.Admin, app *streamsapp.App) error {
	b, err := os.ReadFile(p.TopologyFile)
	if err != nil {
		return fmt.Errorf("pipeline %s: %w", p.App, err)
	}
	topics := append([]string{}, p.Inputs[:]...)
	for _, m := range repartitionRe.FindAllStringSubmatch(string(b), -1) {
		topics = append(topics, p.App+"-"+m[1])
	}
	if len(topics) != 6 {
		return fmt.Errorf("pipeline %s: topology names %d repartition topics, want 3: %v", p.App, len(topics)-3, topics)
	}
	var last string
	for {
		last = func() string {
			committed, err := adm.GroupOffsets(ctx, p.App, topics)
			if err != nil {
				return err.Error()
			}
			for _, t := range topics {
				lso, err := adm.ListOffsets(ctx, t, -1, kafka.ReadCommitted)
				if err != nil {
					return err.Error()
				}
				for part, o := range lso {
					if c, ok := committed[t][part]; o > 0 && (!ok || c < o) {
						return fmt.Sprintf("%s[%d] committed %d of %d", t, part, c, o)
					}
				}
			}
			return ""
		}()
		if last == "" {
			return nil
		}
		if !app.Running() {
			return fmt.Errorf("pipeline %s: the application exited before catching up (%s):\n%s", p.App, last, app.LogTail(40))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pipeline %s: waiting for the application to catch up: %w (%s)\n%s", p.App, ctx.Err(), last,
				app.LogGrep(30, " WARN ", " ERROR "))
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// ClientProperties writes the Java client properties of a SCRAM-SHA-512
// principal on the SASL_SSL listener to path.
func ClientProperties(path, caFile, user, password string) error {
	props := strings.Join([]string{
		"security.protocol=SASL_SSL",
		"sasl.mechanism=SCRAM-SHA-512",
		fmt.Sprintf(`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="%s" password="%s";`, user, password),
		"ssl.truststore.type=PEM",
		"ssl.truststore.location=" + caFile,
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(props), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// CopyTopic copies every committed record of from to the same partition of
// to (created with three partitions), as the harness: a copier for
// `lossaudit compare`. It leaves out the records skip selects and returns
// their keys.
func CopyTopic(ctx context.Context, c *kafka.Cluster, adm *kafka.Admin, from, to string, skip func(*kgo.Record) bool) ([]string, error) {
	if err := adm.CreateTopics(ctx, kafka.TopicSpec{Name: to, Partitions: 3}); err != nil {
		return nil, err
	}
	ranges, err := adm.Ranges(ctx, true, from)
	if err != nil {
		return nil, err
	}
	opts, err := c.HarnessOpts()
	if err != nil {
		return nil, err
	}
	var copies []*kgo.Record
	var skipped []string
	err = kafka.Consume(ctx, nil, ranges, true, func(r *kgo.Record) error {
		if skip != nil && skip(r) {
			skipped = append(skipped, string(r.Key))
			return nil
		}
		copies = append(copies, &kgo.Record{Topic: to, Partition: r.Partition, Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp})
		return nil
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("copying %s to %s: %w", from, to, err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		return nil, fmt.Errorf("copying %s to %s: %w", from, to, err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, copies...).FirstErr(); err != nil {
		return nil, fmt.Errorf("copying %s to %s: %w", from, to, err)
	}
	return skipped, nil
}
