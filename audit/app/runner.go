// Package app builds an audit from configuration: the committed reader,
// the schema sources, the pipeline model, the key selectors and the index
// store, then runs the engine. It is what `lossaudit audit`, `lossaudit
// demo` and the end-to-end tests share, so that all three audit exactly the
// same way.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/lossaudit/lossaudit/audit/compare"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/incremental"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/internal/store/state"
	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/audit/streams"
	"github.com/lossaudit/lossaudit/audit/streams/topology"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/schema"
)

// KafkaOptions maps the kafka section of the configuration to reader
// options, building the TLS configuration and the SASL mechanism. Their
// problems come back as *config.Error naming the key and where it was set
// (exit 2).
func KafkaOptions(cfg *config.Config) (kread.Options, error) {
	return kafkaOptions(cfg, "kafka", cfg.Kafka)
}

// SinkOptions is KafkaOptions for the sink cluster of lossaudit compare
// (cfg.Sink(): the sink_kafka section with kafka's tuning); problems name
// the sink_kafka keys.
func SinkOptions(cfg *config.Config) (kread.Options, error) {
	return kafkaOptions(cfg, "sink_kafka", cfg.Sink())
}

// kafkaOptions maps the connection settings k of section sec to reader
// options.
func kafkaOptions(cfg *config.Config, sec string, k config.Kafka) (kread.Options, error) {
	var tlsCfg *tls.Config
	if k.TLS.Enabled {
		var err error
		tlsCfg, err = kread.TLSConfig(kread.TLSFiles{
			CAFile: k.TLS.CAFile, CertFile: k.TLS.CertFile, KeyFile: k.TLS.KeyFile,
			InsecureSkipVerify: k.TLS.InsecureSkipVerify,
		})
		if err != nil {
			key := sec + ".tls"
			var te *kread.TLSError
			if errors.As(err, &te) {
				key = map[kread.TLSFile]string{kread.TLSCAFile: sec + ".tls.ca_file", kread.TLSCertFile: sec + ".tls.cert_file",
					kread.TLSKeyFile: sec + ".tls.key_file"}[te.File]
			}
			return kread.Options{}, cfg.Errorf(key, "%v", err)
		}
	}
	mech, err := kread.SASL(k.SASL.Mechanism, k.SASL.Username, k.SASL.Password)
	if err != nil {
		key := sec + ".sasl"
		var se *kread.SASLError
		if errors.As(err, &se) {
			key = sec + ".sasl." + string(se.Field)
		}
		return kread.Options{}, cfg.Errorf(key, "%v", err)
	}
	return kread.Options{
		Brokers:           k.Brokers,
		TLS:               tlsCfg,
		SASL:              mech,
		ClientID:          "lossaudit",
		Timeout:           k.Timeout,
		ConnectTimeout:    k.ConnectTimeout,
		RetryTimeout:      k.RetryTimeout,
		Concurrency:       k.Concurrency,
		FetchMaxBytes:     k.FetchMaxBytes,
		PartitionMaxBytes: k.PartitionMaxBytes,
	}, nil
}

// NewClient opens the committed reader for the configured cluster; tweak,
// when not nil, adjusts the options first (tests shorten retry budgets).
// A configuration the reader rejects (a malformed broker address) is a
// *config.Error.
func NewClient(cfg *config.Config, tweak func(*kread.Options)) (*kread.Client, error) {
	o, err := KafkaOptions(cfg)
	return newClient(o, err, "kafka.brokers", tweak)
}

// NewSinkClient is NewClient for the sink cluster of lossaudit compare.
func NewSinkClient(cfg *config.Config, tweak func(*kread.Options)) (*kread.Client, error) {
	o, err := SinkOptions(cfg)
	return newClient(o, err, "sink_kafka.brokers", tweak)
}

// newClient opens a reader with options o (err is the error of building
// them); brokersKey is the key a rejected broker address is reported at.
func newClient(o kread.Options, err error, brokersKey string, tweak func(*kread.Options)) (*kread.Client, error) {
	if err != nil {
		return nil, err
	}
	if tweak != nil {
		tweak(&o)
	}
	c, err := kread.New(o)
	if err != nil {
		return nil, asConfigError(brokersKey, err)
	}
	return c, nil
}

// asConfigError keeps a *config.Error as is and turns anything else into
// one about key.
func asConfigError(key string, err error) error {
	var ce *config.Error
	if errors.As(err, &ce) {
		return err
	}
	return &config.Error{Key: key, Msg: fmt.Sprint(err)}
}

// TopicReader reads a whole topic (every partition, log start to LSO) with
// the committed reader, for the schemas topic.
func TopicReader(c *kread.Client) schema.TopicReader {
	return func(ctx context.Context, topic string, fn func(key, value []byte) error) error {
		offs, err := c.Offsets(ctx, topic)
		if err != nil {
			return err
		}
		var rs []kread.Range
		for p, of := range offs {
			if of.LogStart < of.LSO {
				rs = append(rs, kread.Range{Topic: topic, Partition: p, From: of.LogStart, To: of.LSO})
			}
		}
		_, err = c.Read(ctx, rs, kread.ReadOptions{}, func(recs []kread.Record) error {
			for i := range recs {
				if err := fn(recs[i].Key, recs[i].Value); err != nil {
					return err
				}
			}
			return nil
		})
		return err
	}
}

// Schemas builds the schema registry chain of the configuration: the
// Schema Registry, then the schemas topic read through c, then the avsc
// directory. It returns nil, nil when no source is configured.
func Schemas(cfg *config.Config, c *kread.Client) (*schema.Registry, error) {
	s := cfg.Schema
	o := schema.Options{AvscDir: s.AvscDir, SchemasTopic: s.SchemasTopic}
	if s.RegistryURL != "" {
		o.Registry = schema.RegistryOptions{URL: s.RegistryURL, Username: s.RegistryUsername, Password: s.RegistryPassword}
	}
	if s.SchemasTopic != "" && c != nil {
		o.Reader = TopicReader(c)
	}
	if o.Registry.URL == "" && o.Reader == nil && o.AvscDir == "" {
		return nil, nil
	}
	reg, err := schema.New(o)
	if err != nil {
		return nil, fmt.Errorf("setting up schema sources: %w", err)
	}
	return reg, nil
}

// Options are the run-time choices that are not configuration.
type Options struct {
	// Progress receives progress of the long phases; nil for none.
	Progress streams.Progress
	// Warnings receives non-fatal observations (model warnings) and, while
	// the reader retries, what it waits for; nil to drop.
	Warnings io.Writer
	// StateHook is called at the points of a reconcile step's commit (the
	// test bed kills the process there); nil for none.
	StateHook state.Hook
	// Started is when the process started, for a reconcile step's "start"
	// timing (the time before the step began: the program's start, the
	// command line, the configuration); zero leaves it out (watch).
	Started time.Time
}

// prepared is what every run of the engine is built from: the reader, the
// schema sources, the pipeline model, the engine's options and the index
// store. close releases them.
type prepared struct {
	client *kread.Client
	reg    *schema.Registry
	model  *topology.Model
	opts   streams.Options
	// stream is the check of a per-record stream stage (stream.go), nil
	// for the table family.
	stream *compare.Options
	closes []func() error
}

func (p *prepared) close() {
	for i := len(p.closes) - 1; i >= 0; i-- {
		_ = p.closes[i]()
	}
}

// prepare builds a run of the configured pipeline: everything but the
// store a mode keeps across runs.
func prepare(ctx context.Context, cfg *config.Config, o Options) (_ *prepared, err error) {
	if err := cfg.ValidatePipeline(); err != nil {
		return nil, err
	}
	p := &prepared{}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if p.client, err = NewClient(cfg, waitLines(o.Warnings)); err != nil {
		return nil, err
	}
	p.closes = append(p.closes, p.client.Close)
	if p.reg, err = Schemas(cfg, p.client); err != nil {
		return nil, err
	}
	if p.model, err = Model(ctx, cfg, p.client, SchemaMatcher(p.client, p.reg)); err != nil {
		return nil, err
	}
	if p.model.Stream != nil {
		if o.Warnings != nil {
			for _, w := range p.model.Warnings {
				fmt.Fprintf(o.Warnings, "warning: %s\n", w)
			}
		}
		return p, p.prepareStream(ctx, cfg, o)
	}
	if err = checkChangelogPolicies(ctx, p.client, p.model, o.Warnings); err != nil {
		return nil, err
	}
	if o.Warnings != nil {
		for _, w := range p.model.Warnings {
			fmt.Fprintf(o.Warnings, "warning: %s\n", w)
		}
	}
	inputs, outputKey, err := Inputs(ctx, cfg, p.model, p.reg)
	if err != nil {
		return nil, err
	}
	if err := windowRetentions(ctx, p.client, p.model, inputs); err != nil {
		return nil, err
	}
	// The check's walk is light against settling (index.Options.LightWalk).
	store, err := index.Open(cfg.Store.Dir, index.Options{LightWalk: true})
	if err != nil {
		return nil, err
	}
	p.closes = append(p.closes, store.Close)
	p.opts = streams.Options{
		Kafka:            p.client,
		Store:            store,
		Group:            p.model.ApplicationID,
		Inputs:           inputs,
		Output:           p.model.Output,
		Join:             p.model.Join,
		Cogroup:          p.model.Cogroup() != "",
		OutputKey:        outputKey,
		From:             cfg.Window.From,
		To:               cfg.Window.To,
		SettleTimeout:    cfg.Audit.SettleTimeout,
		UnprocessedAfter: cfg.Audit.UnprocessedAfter,
		DeadLetterTopic:  cfg.Pipeline.DeadLetterTopic,
		Progress:         o.Progress,
	}
	return p, nil
}

// schemaSources adds to res how the schema sources fared.
func (p *prepared) schemaSources(res *finding.Result) {
	if p.reg == nil {
		return
	}
	for _, st := range p.reg.Status() {
		res.Summary.SchemaSources = append(res.Summary.SchemaSources, finding.SchemaSource{
			Source: st.Source, Error: st.Error, ServedBy: strings.Join(st.ServedBy, ", ")})
	}
}

// waitLines tells w, one line each, what a retrying reader waits for.
func waitLines(w io.Writer) func(*kread.Options) {
	if w == nil {
		return nil
	}
	return func(o *kread.Options) {
		o.Wait = func(msg string) { fmt.Fprintf(w, "lossaudit: %s\n", msg) }
	}
}

// Run performs one audit of the configured pipeline. Configuration
// problems are *config.Error values; any other error means the audit could
// not complete.
func Run(ctx context.Context, cfg *config.Config, o Options) (*finding.Result, *topology.Model, error) {
	p, err := prepare(ctx, cfg, o)
	if err != nil {
		return nil, nil, err
	}
	defer p.close()
	if p.stream != nil {
		res, err := compare.Run(ctx, *p.stream)
		if err != nil {
			return nil, nil, streamRunError(p, err)
		}
		return res, p.model, nil
	}
	hist, err := history.Open(filepath.Join(cfg.Store.Dir, "history"))
	if err != nil {
		return nil, nil, err
	}
	defer hist.Close()
	ao := p.opts
	ao.History = hist
	res, err := streams.Run(ctx, ao)
	if err != nil {
		return nil, nil, runError(p.model, err)
	}
	p.schemaSources(res)
	return res, p.model, nil
}

// StateDir is where a reconciliation keeps its state under store.dir.
const StateDir = "reconcile"

// OpenState opens the reconciliation state under storeDir (store.dir) as a
// step does and holds it until Close: meanwhile a step on the same store
// fails as in use by another lossaudit run. Tests use it to stand in for
// that other run.
func OpenState(storeDir string) (io.Closer, error) {
	st, err := state.Open(filepath.Join(storeDir, StateDir), state.Options{})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Step is a reconcile step whose reports are to be written: Commit makes
// its state the store's; Close releases everything (abandoning the step if
// it was not committed).
type Step struct {
	Result *finding.Result
	// Model is the pipeline model (nil for a comparison).
	Model   *topology.Model
	release func()
	st      *state.Store
	step    *incremental.Stepped
	done    bool
	// spills is the step's index store: its spill files are removed when
	// the step closes, so that the next step does not pay for removing
	// them (a baseline's are gigabytes).
	spills *index.Store
}

// Commit commits the step's state and checkpoint.
func (s *Step) Commit() error {
	s.done = true
	return s.step.Commit()
}

// Close abandons the step unless it was committed, and releases the
// cluster connection and the stores.
func (s *Step) Close() {
	if !s.done {
		s.step.Abort()
	}
	s.st.Close()
	if s.spills != nil {
		_ = s.spills.Reset() // stale anyway: the next run's Open removes what is left
	}
	s.release()
}

// Reconcile performs one step of the scheduled reconciliation of the
// configured pipeline, or of the configured comparison (IsCompare), with
// its state in store.dir/reconcile. The caller writes the reports, then
// commits the step, then closes it. Errors are as for Run (or Compare); a
// state recorded for another configuration is a *config.Error about
// store.dir.
func Reconcile(ctx context.Context, cfg *config.Config, o Options) (*Step, error) {
	if IsCompare(cfg) {
		return reconcileCompare(ctx, cfg, o)
	}
	fixed := newFixedCosts(o.Started)
	p, err := prepare(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	if p.stream != nil {
		p.close()
		return nil, &config.Error{Key: "pipeline.topology_file", Msg: "describes a per-record stream stage, which reconcile and watch do not check yet: run lossaudit audit"}
	}
	if err := stepRefusesTables(p.model, false); err != nil {
		p.close()
		return nil, err
	}
	if err := stepRefusesWindows(p.model); err != nil {
		p.close()
		return nil, err
	}
	fixed.lap("prepare")
	st, err := state.Open(filepath.Join(cfg.Store.Dir, StateDir), state.Options{Hook: o.StateHook})
	if err != nil {
		p.close()
		return nil, err
	}
	fixed.lap("state")
	sp, err := streams.Step(ctx, p.opts, streams.StepOptions{State: st, Describe: describeInputs(cfg)})
	if err != nil {
		st.Close()
		p.close()
		var me *incremental.StateMismatchError
		if errors.As(err, &me) {
			return nil, &config.Error{Key: "store.dir", Msg: me.Error()}
		}
		return nil, runError(p.model, err)
	}
	p.schemaSources(sp.Result)
	fixed.add(sp.Result)
	return &Step{Result: sp.Result, Model: p.model, release: p.close, st: st, step: sp, spills: p.opts.Store}, nil
}

// describeInputs is the configuration of the inputs that changes what a
// reconciliation's state means besides the topics and rekey paths the
// engine knows: how keys and timestamps are read.
func describeInputs(cfg *config.Config) string {
	var parts []string
	for _, in := range cfg.Pipeline.Inputs {
		parts = append(parts, fmt.Sprintf("%s:key_format=%s,timestamp_field=%q", in.Name, in.KeyFormat, in.TimestampField))
	}
	return strings.Join(parts, " ")
}

// Spec is the pipeline section of cfg as the pipeline model takes it.
func Spec(cfg *config.Config) topology.Spec {
	p := cfg.Pipeline
	s := topology.Spec{ApplicationID: p.ApplicationID, TopologyFile: p.TopologyFile, Output: p.Output, Join: strings.ToLower(strings.TrimSpace(p.Join)),
		Reduce: strings.ToLower(strings.TrimSpace(p.Reduce))}
	for i, n := range p.Nodes {
		s.Nodes = append(s.Nodes, topology.NodeDecl{Name: n.Name, Kind: n.Kind})
		if n.NullMappedKey != "" {
			if s.NullMappedKeys == nil {
				s.NullMappedKeys = map[string]string{}
			}
			s.NullMappedKeys[strings.TrimSpace(n.Name)] = n.NullMappedKey
		}
		if n.Predicate != "" {
			if s.Filters == nil {
				s.Filters = map[string]topology.FilterDecl{}
			}
			s.Filters[strings.TrimSpace(n.Name)] = topology.FilterDecl{Predicate: n.Predicate, Negate: n.Negate}
		}
		if len(n.Branches) > 0 {
			if s.Branches == nil {
				s.Branches = map[string]topology.BranchDecl{}
			}
			d := topology.BranchDecl{Index: i}
			for _, b := range n.Branches {
				d.Branches = append(d.Branches, topology.BranchChild{Name: strings.TrimSpace(b.Name), Predicate: b.Predicate, Default: b.Default})
			}
			s.Branches[strings.TrimSpace(n.Name)] = d
		}
		if w := n.Window; w != nil {
			if s.Windows == nil {
				s.Windows = map[int]*topology.WindowDecl{}
			}
			s.Windows[i] = &topology.WindowDecl{Size: w.Size, Advance: w.Advance, Grace: w.Grace, Emit: strings.ToLower(strings.TrimSpace(w.Emit))}
		}
	}
	for _, in := range p.Inputs {
		s.Inputs = append(s.Inputs, topology.InputSpec{Name: in.Name, Topic: in.Topic, Store: in.Store,
			RepartitionTopic: in.RepartitionTopic, ChangelogTopic: in.ChangelogTopic, Rekey: in.Rekey})
	}
	return s
}

// CheckTopology checks, before connecting, pipeline.join, pipeline.reduce, pipeline.nodes
// and the kinds of the nodes on the inputs' paths in the topology file.
// Problems the user can fix are *config.Error; a node the audit does not
// support is a *topology.UnsupportedError (exit 2 both).
func CheckTopology(cfg *config.Config) error {
	err := topology.Check(Spec(cfg))
	var pe *topology.Error
	if errors.As(err, &pe) {
		return &config.Error{Key: pe.Key, Msg: pe.Msg}
	}
	return err
}

// Model derives the pipeline model of cfg, listing topics with lister and
// matching discovered changelogs with match (nil: no evidence); a lister
// that describes streams groups (kread.Client) also gives names from the
// application's streams group and checks the topology file against it. Problems
// the user can fix are *config.Error; a node the audit does not support is
// a *topology.UnsupportedError, which the CLI reports with exit code 2.
func Model(ctx context.Context, cfg *config.Config, lister topology.TopicLister, match topology.Matcher) (*topology.Model, error) {
	var opts []topology.Option
	if match != nil {
		opts = append(opts, topology.WithMatcher(match))
	}
	if g, ok := lister.(streamsTopologer); ok {
		opts = append(opts, topology.WithGroup(GroupSource(g)))
	}
	m, err := topology.Build(ctx, Spec(cfg), lister, opts...)
	var pe *topology.Error
	if errors.As(err, &pe) {
		return nil, &config.Error{Key: pe.Key, Msg: pe.Msg}
	}
	return m, err
}

// runError turns what the user can fix among an audit's errors into a
// *config.Error (exit 2): a topic of the pipeline that does not exist,
// named by the key that named it or, for a derived internal topic, with
// the hint `lossaudit topology` gives; a registry rejecting the
// credentials.
func runError(m *topology.Model, err error) error {
	var mt *engine.MissingTopicError
	if errors.As(err, &mt) {
		switch mt.Role {
		case engine.RoleOutput:
			return &config.Error{Key: "pipeline.output", Msg: fmt.Sprintf("topic %q does not exist", mt.Topic)}
		case engine.RoleInput:
			return &config.Error{Key: fmt.Sprintf("pipeline.inputs[%d].topic", mt.Index), Msg: fmt.Sprintf("topic %q does not exist", mt.Topic)}
		}
		st := m.Stages[mt.Index]
		field, origin := "repartition_topic", st.Origins.RepartitionTopic
		if mt.Role == engine.RoleChangelog {
			field, origin = "changelog_topic", st.Origins.ChangelogTopic
		}
		if origin == topology.FromOverride {
			return &config.Error{Key: fmt.Sprintf("pipeline.inputs[%d].%s", mt.Index, field), Msg: fmt.Sprintf("topic %q does not exist", mt.Topic)}
		}
		if mt.Role == engine.RoleChangelog && st.Operator == topology.KindTableSource {
			return missingTableChangelog(mt.Index, mt.Topic, st)
		}
		return &config.Error{Key: "pipeline.application_id", Msg: fmt.Sprintf("the %s topic of input %s, %q (%s), does not exist: is the application running, and do pipeline.application_id (%q) and pipeline.topology_file match it? `lossaudit topology` shows every derived name",
			mt.Role, st.Input.Name, mt.Topic, origin, m.ApplicationID)}
	}
	var wm *streams.WindowMismatchError
	if errors.As(err, &wm) {
		return &config.Error{Key: "pipeline.nodes", Msg: wm.Error()}
	}
	var re *schema.RejectedError
	if errors.As(err, &re) {
		return &config.Error{Key: "schema.registry_username", Msg: re.Msg}
	}
	return err
}

// Inputs builds the engine's inputs (with their key selectors) from the
// model. reg may be nil when no input needs Avro decoding.
func Inputs(ctx context.Context, cfg *config.Config, model *topology.Model, reg *schema.Registry) ([]streams.Input, func([]byte) []byte, error) {
	var inputs []streams.Input
	var outputKey func([]byte) []byte
	for _, st := range model.Stages {
		in := cfg.Pipeline.Inputs[st.Index]
		key := fmt.Sprintf("pipeline.inputs[%d]", st.Index)
		table := topology.IsTableSource(st.Operator)
		if err := tableInput(key, in, st); err != nil {
			return nil, nil, err
		}
		if st.Window != nil && st.RepartitionTopic == "" && in.TimestampField != "" {
			return nil, nil, &config.Error{Key: key + ".timestamp_field",
				Msg: fmt.Sprintf("input %s: a windowed aggregation reading its input topic directly windows records by the application's timestamp extractor; lossaudit audits it on the records' own timestamps only (or through a repartition topic)", in.Name)}
		}
		if st.RepartitionTopic == "" && !table && st.Window == nil && st.Cogroup == "" {
			return nil, nil, &config.Error{Key: key + ".repartition_topic",
				Msg: fmt.Sprintf("input %s reaches its store without a repartition topic; lossaudit audits the selectKey -> groupByKey -> reduce shape, so name the repartition topic or check the topology", in.Name)}
		}
		sel, norm, err := selector(ctx, key, in, reg)
		if err != nil {
			return nil, nil, err
		}
		if st.Index == 0 {
			outputKey = norm
		}
		ai := streams.Input{
			Name: in.Name, Topic: in.Topic, RepartitionTopic: st.RepartitionTopic,
			ChangelogTopic: st.ChangelogTopic, Select: sel, DownstreamKey: norm, Field: in.Rekey,
			Count: st.Operator == topology.KindCount || st.Operator == topology.KindWindowedCount, Table: table, BufferTopic: st.BufferTopic,
			GroupBy: topology.IsTableGroupBy(st.Operator), Operator: string(st.Operator),
		}
		if st.Window != nil {
			ai.Window = &detect.TimeWindows{Size: st.Window.Size.Milliseconds(), Advance: st.Window.Size.Milliseconds(), Grace: st.Window.Grace.Milliseconds()}
			if st.Window.Advance > 0 {
				ai.Window.Advance = st.Window.Advance.Milliseconds()
			}
		}
		if st.SourceTopicChangelog() {
			ai.ChangelogTopic = "" // the table is restored from its input topic
		}
		if in.Rekey != "" && reg != nil {
			path := in.Rekey
			ai.FieldsNear = func(rec *kread.Record) []string {
				id, _, err := schema.SplitFrame(rec.Value)
				if err != nil {
					return nil
				}
				return reg.NearestFields(ctx, id, path, 3)
			}
		}
		inputs = append(inputs, ai)
	}
	return inputs, outputKey, nil
}

// classified gives schema decode errors a counting class for the summary:
// the schema id and the kind of failure.
type classified struct{ *schema.DecodeError }

func (c classified) Class() string {
	if c.HasID {
		return fmt.Sprintf("schema %d: %s", c.SchemaID, c.Kind)
	}
	return c.Kind.String()
}

func (c classified) Unwrap() error { return c.DecodeError }

// selectStatus turns a schema error into the engine's status.
func selectStatus(err error) (streams.SelectStatus, error) {
	var de *schema.DecodeError
	if errors.As(err, &de) {
		return streams.DecodeError, classified{de}
	}
	return streams.Failed, err
}

func selector(ctx context.Context, key string, in config.Input, reg *schema.Registry) (streams.Selector, func([]byte) []byte, error) {
	needAvro := in.Rekey != "" || in.TimestampField != "" || in.KeyFormat == config.KeyFormatAvro
	if needAvro && reg == nil {
		return nil, nil, &config.Error{Key: "schema", Msg: fmt.Sprintf("input %s needs Avro schemas (rekey, timestamp_field or key_format avro) but no schema source is configured: set schema.registry_url, schema.schemas_topic or schema.avsc_dir", in.Name)}
	}
	var keyEx, tsEx *schema.Extractor
	var err error
	if in.Rekey != "" {
		if keyEx, err = reg.Extractor(in.Rekey); err != nil {
			return nil, nil, &config.Error{Key: key + ".rekey", Msg: err.Error()}
		}
	}
	if in.TimestampField != "" {
		if tsEx, err = reg.Extractor(in.TimestampField); err != nil {
			return nil, nil, &config.Error{Key: key + ".timestamp_field", Msg: err.Error()}
		}
	}
	var norm func([]byte) []byte
	if in.Rekey == "" && in.KeyFormat == config.KeyFormatAvro {
		norm = avroKeyPayload
	}
	sel := func(rec *kread.Record) ([]byte, int64, streams.SelectStatus, error) {
		ts := rec.Timestamp
		if tsEx != nil {
			ms, isNull, err := tsEx.TimestampContext(ctx, rec.Value)
			if err != nil {
				st, err := selectStatus(err)
				return nil, 0, st, err
			}
			if isNull {
				return nil, 0, streams.DecodeError, nullTimestamp(in.TimestampField)
			}
			ts = ms
		}
		switch {
		case keyEx != nil:
			k, isNull, err := keyEx.ExtractKey(ctx, rec.Value) // aliases rec.Value, as rec.Key below
			if err != nil {
				st, err := selectStatus(err)
				return nil, 0, st, err
			}
			if isNull {
				return nil, ts, streams.NullKey, nil
			}
			return k, ts, streams.Selected, nil
		case rec.Key == nil:
			return nil, ts, streams.NullKey, nil
		case norm != nil:
			if _, _, err := schema.SplitFrame(rec.Key); err != nil {
				st, err := selectStatus(err)
				return nil, 0, st, err
			}
			return avroKeyPayload(rec.Key), ts, streams.Selected, nil
		case in.KeyFormat == config.KeyFormatString:
			// The String serde decodes the key and re-encodes it for the
			// repartition topic: malformed UTF-8 arrives there as U+FFFD.
			return schema.JavaStringBytes(rec.Key), ts, streams.Selected, nil
		default:
			return rec.Key, ts, streams.Selected, nil
		}
	}
	return sel, norm, nil
}

// nullTimestamp is the decode error of a record whose timestamp field is null.
type nullTimestamp string

func (n nullTimestamp) Error() string { return fmt.Sprintf("timestamp field %s is null", string(n)) }
func (n nullTimestamp) Class() string { return "null_timestamp" }

// avroKeyPayload strips the Confluent header from an Avro key, so keys
// registered under different subjects (and so ids) compare equal.
func avroKeyPayload(k []byte) []byte {
	if _, p, err := schema.SplitFrame(k); err == nil {
		return p
	}
	return k
}

// SchemaMatcher pairs an input with a discovered changelog when the first
// values of both carry the same writer schema (by id, or by schema text).
// With no schema source (reg nil) it matches nothing, so discovery asks
// for overrides.
func SchemaMatcher(c *kread.Client, reg *schema.Registry) topology.Matcher {
	return func(ctx context.Context, inputTopic, changelog string) (bool, error) {
		if reg == nil {
			return false, nil
		}
		a, err := firstSchema(ctx, c, reg, inputTopic)
		if err != nil || a == nil {
			return false, err
		}
		b, err := firstSchema(ctx, c, reg, changelog)
		if err != nil || b == nil {
			return false, err
		}
		return a.ID == b.ID || a.JSON == b.JSON, nil
	}
}

var errStop = errors.New("stop")

// firstSchema returns the writer schema of the first decodable value of a
// topic, or nil when it has none.
func firstSchema(ctx context.Context, c *kread.Client, reg *schema.Registry, topic string) (*schema.Writer, error) {
	offs, err := c.Offsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	for p, of := range offs {
		if of.LogStart >= of.LSO {
			continue
		}
		var id uint32
		found := false
		rg := kread.Range{Topic: topic, Partition: p, From: of.LogStart, To: min(of.LSO, of.LogStart+100)}
		_, err := c.Read(ctx, []kread.Range{rg}, kread.ReadOptions{}, func(recs []kread.Record) error {
			for _, r := range recs {
				if i, _, err := schema.SplitFrame(r.Value); err == nil {
					id, found = i, true
					return errStop
				}
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			return nil, err
		}
		if found {
			w, err := reg.Lookup(ctx, id)
			if err != nil {
				var de *schema.DecodeError
				if errors.As(err, &de) {
					continue
				}
				return nil, err
			}
			return w, nil
		}
	}
	return nil, nil
}
