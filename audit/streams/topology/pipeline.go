// Package topology is the model of the audited Kafka Streams application:
// its inputs in join order and, for each, the repartition topic, reduce
// store and changelog topic, plus the output topic. The model comes from
// explicit per-input overrides in config, then from the text printed by
// Topology#describe() (pipeline.topology_file), then from discovery among
// the cluster's topics. The model's input (Spec) mirrors the `pipeline`
// section of lossaudit's configuration, and problems the user can fix there
// are *Error values naming its keys (pipeline.inputs[1].store, ...); the
// package does not depend on the configuration's types.
package topology

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Spec is what the user says about the pipeline: the `pipeline` section of
// the configuration.
type Spec struct {
	ApplicationID string
	// TopologyFile is the path of the text printed by Topology#describe(),
	// "" for none.
	TopologyFile string
	// Output is the join's output topic; "" takes it from the topology file.
	Output string
	// Inputs in join order: Inputs[0] is the left side.
	Inputs []InputSpec
	// Nodes declares the kinds of nodes of the topology file that their
	// names do not show (pipeline.nodes).
	Nodes []NodeDecl
	// Filters are the declared predicates of filter nodes, by name.
	Filters map[string]FilterDecl
	// Branches are the declared branches of branch nodes, by name
	// (pipeline.nodes[i].branches).
	Branches map[string]BranchDecl
	// Windows holds the windows of Nodes entries by index
	// (pipeline.nodes[i].window; Declarations.Windows).
	Windows map[int]*WindowDecl
	// NullMappedKeys are the null_mapped_key of global-left-join nodes,
	// by node name (pipeline.nodes[i].null_mapped_key;
	// Declarations.NullMappedKeys).
	NullMappedKeys map[string]string
	// Join is the KTable-KTable join type (pipeline.join): left, inner or
	// outer; "" is undeclared, refused wherever the inputs are joined.
	Join string
	// Reduce is the type of the inputs' reduces (pipeline.reduce): plain
	// or windowed; "" is undeclared, refused unless pipeline.nodes
	// declares every reduce on the inputs' paths.
	Reduce string
}

// InputSpec is one input and its optional overrides ("" derives them).
type InputSpec struct {
	Name             string
	Topic            string
	Store            string
	RepartitionTopic string
	ChangelogTopic   string
	// Rekey is the field path of the value that selectKey/groupBy takes
	// the key from; "" keeps the record key (the stage graph's key map).
	Rekey string
}

// Error is a problem the user can fix in the pipeline section; Key names
// the configuration key (e.g. pipeline.inputs[1].changelog_topic).
type Error struct {
	Key string
	Msg string
}

func (e *Error) Error() string { return e.Key + ": " + e.Msg }

// Origin says where a field of the model came from.
type Origin string

// The origins, as printed by `lossaudit topology`.
const (
	// FromOverride: set explicitly in config (pipeline.inputs[i].*).
	FromOverride Origin = "override"
	// FromTopology: read from pipeline.topology_file.
	FromTopology Origin = "topology file"
	// FromDiscovery: found among the cluster's topics.
	FromDiscovery Origin = "discovery"
	// FromStore: the changelog name derived from an overridden store.
	FromStore Origin = "derived from store"
	// FromChangelog: the store name derived from an overridden or
	// discovered changelog topic name.
	FromChangelog Origin = "derived from changelog"
	// FromConfig: the output topic as configured (pipeline.output).
	FromConfig Origin = "config"
)

// Origins records where each derived field of a Stage came from.
type Origins struct {
	RepartitionTopic, Store, ChangelogTopic Origin
}

// Stage is one input of the pipeline and the internal topics and store
// between it and the join.
type Stage struct {
	// Input is the input as specified.
	Input InputSpec
	// Index is the input's position in pipeline.inputs (join order).
	Index int
	// RepartitionTopic is the full topic name; "" only when the topology
	// file shows the input reaching its store without repartitioning.
	RepartitionTopic string
	// Store is the reduce store name.
	Store string
	// ChangelogTopic is the full topic name, <application.id>-<store>-changelog
	// unless overridden.
	ChangelogTopic string
	// Origins says where each of the three came from.
	Origins Origins
	// Operator is the kind of the node that writes the store; "" is a
	// reduce (without a topology file, pipeline.reduce says so).
	Operator Kind
	// BufferStore is the store of a suppress between the table and the
	// output, BufferTopic its changelog (<application.id>-<store>-changelog);
	// "" for none. Both come from the topology file.
	BufferStore, BufferTopic string
	// Window is the declared window of a windowed aggregation (Operator
	// windowed-*), nil otherwise.
	Window *WindowDecl
	// GroupBy is the KTABLE-SELECT- node of a table groupBy (Operator
	// table-count, table-reduce or table-aggregate), TableStore the store
	// of the table it groups (not audited: the aggregation's store is Store); "" otherwise.
	GroupBy, TableStore string
	// Cogroup is the merge node of the cogroup the input feeds (Operator
	// cogroup), "" for none: the stages of one cogroup share their store
	// and changelog (validate allows it there only).
	Cogroup string
}

// Model is the audited pipeline.
type Model struct {
	ApplicationID string
	// Output is the topic the join writes to; "" when the one input's
	// table ends in its changelog (ChangelogOnly).
	Output string
	// ChangelogOnly says that the topology file shows the one input's
	// table leading nowhere: its changelog is the last stage audited.
	ChangelogOnly bool
	// OutputOrigin is FromConfig or FromTopology.
	OutputOrigin Origin
	// Join is the type of the KTable-KTable joins (pipeline.join): left,
	// inner or outer; "" when the inputs are not joined.
	Join string
	// Stages are in join order: Stages[0] is the left side.
	Stages []Stage
	// Warnings are non-fatal observations (an override that contradicts
	// the topology file, an input without repartition topic).
	Warnings []string
	// Group is the streams group's topology the names were taken from or
	// checked against (WithGroup), nil when none.
	Group *GroupTopology
	// Stream, when not nil, says the inputs reach the output through a
	// per-record stream stage (stream.go): the Stages then name only
	// their inputs.
	Stream *StreamPath
}

// TopicLister lists the topics of the cluster; kread.Client satisfies it.
type TopicLister interface {
	Topics(ctx context.Context) ([]string, error)
}

// Matcher says whether candidateChangelog holds the reduce store of
// inputTopic (for example because the Avro schemas of their values agree).
// A non-nil error aborts Build.
type Matcher func(ctx context.Context, inputTopic, candidateChangelog string) (bool, error)

// Option tunes Build.
type Option func(*options)

type options struct {
	matcher Matcher
	group   GroupSource
}

// WithMatcher supplies the evidence used to assign discovered changelog
// topics to inputs. Without it discovery can only fill repartition topics
// and stores of inputs whose changelog is already known.
func WithMatcher(m Matcher) Option {
	return func(o *options) { o.matcher = m }
}

// ChangelogName is Kafka Streams' changelog topic of a store.
func ChangelogName(app, store string) string { return app + "-" + store + "-changelog" }

// Build derives the model from spec. Precedence, field by field: an explicit
// override in pipeline.inputs[i]; for the changelog, one derived from an
// overridden store; then pipeline.topology_file; then the streams group
// (WithGroup, which the file is checked against); then discovery among the
// topics of topics (may be nil when nothing needs discovering). Problems the
// user can fix in the specification are *Error; failures to list topics or
// of the matcher are wrapped errors.
func Build(ctx context.Context, p Spec, topics TopicLister, opts ...Option) (*Model, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	app := p.ApplicationID
	if app == "" {
		return nil, &Error{Key: "pipeline.application_id", Msg: "is empty: it is the consumer group and the prefix of the internal topics"}
	}
	if len(p.Inputs) == 0 {
		return nil, &Error{Key: "pipeline.inputs", Msg: "no inputs configured"}
	}
	if err := checkDeclared(p); err != nil {
		return nil, err
	}
	m := &Model{ApplicationID: app, Output: p.Output, OutputOrigin: FromConfig}
	if len(p.Inputs) > 1 {
		m.Join = p.Join
	}
	for i, in := range p.Inputs {
		s := Stage{Input: in, Index: i}
		if in.Store != "" {
			s.Store, s.Origins.Store = in.Store, FromOverride
		}
		if in.RepartitionTopic != "" {
			s.RepartitionTopic, s.Origins.RepartitionTopic = in.RepartitionTopic, FromOverride
		}
		if in.ChangelogTopic != "" {
			s.ChangelogTopic, s.Origins.ChangelogTopic = in.ChangelogTopic, FromOverride
		} else if in.Store != "" {
			s.ChangelogTopic, s.Origins.ChangelogTopic = ChangelogName(app, in.Store), FromStore
		}
		m.Stages = append(m.Stages, s)
	}

	if p.TopologyFile != "" {
		if err := m.fromTopology(p); err != nil {
			return nil, err
		}
	}
	if m.Output == "" && !m.ChangelogOnly {
		return nil, &Error{Key: "pipeline.output", Msg: "is empty and no topology_file names the join output"}
	}
	if m.Stream != nil {
		return m, nil // a per-record stream stage has no store to discover
	}
	if o.group != nil {
		if err := m.fromGroup(ctx, p, o.group); err != nil {
			return nil, err
		}
	}
	if m.incomplete() {
		if err := m.discover(ctx, topics, o.matcher); err != nil {
			return nil, err
		}
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// deriveFile parses the topology file and derives the stages of p's
// inputs with p's declarations. Problems are *Error naming the key to fix,
// or an *UnsupportedError naming the file.
func deriveFile(p Spec) (*Derivation, error) {
	const key = "pipeline.topology_file"
	f, err := os.Open(p.TopologyFile)
	if err != nil {
		return nil, &Error{Key: key, Msg: fmt.Sprintf("cannot read %s: %v", p.TopologyFile, err)}
	}
	defer f.Close()
	top, err := ParseTopology(f)
	if err != nil {
		return nil, &Error{Key: key, Msg: fmt.Sprintf("%s: %v", p.TopologyFile, err)}
	}
	inputs := make([]string, len(p.Inputs))
	decl := Declarations{Nodes: p.Nodes, Filters: p.Filters, Branches: p.Branches, Windows: p.Windows, NullMappedKeys: p.NullMappedKeys, Join: p.Join, Reduce: p.Reduce, Rekeyed: map[string]int{}}
	for i, in := range p.Inputs {
		inputs[i] = in.Topic
		if in.Rekey != "" {
			decl.Rekeyed[in.Topic] = i
		}
	}
	var d *Derivation
	if err = top.checkDeclaredBranches(decl); err == nil {
		d, err = top.Derive(p.ApplicationID, inputs, p.Output, decl)
		d, err = top.orStream(p.ApplicationID, inputs, p.Output, decl, d, err)
	}
	var ue *UnsupportedError
	var de *DeclarationError
	var je *JoinUndeclaredError
	var re *ReduceUndeclaredError
	var pe *Error
	switch {
	case errors.As(err, &pe):
		return nil, pe
	case errors.As(err, &je):
		je.File = p.TopologyFile
		return nil, &Error{Key: "pipeline.join", Msg: je.Msg()}
	case errors.As(err, &re):
		re.File = p.TopologyFile
		return nil, &Error{Key: "pipeline.reduce", Msg: re.Msg()}
	case errors.As(err, &ue):
		ue.File = p.TopologyFile
		return nil, ue
	case errors.As(err, &de):
		return nil, &Error{Key: de.Key(), Msg: de.Msg}
	case err != nil:
		return nil, &Error{Key: key, Msg: fmt.Sprintf("%s: %v", p.TopologyFile, err)}
	}
	if (p.Join == JoinInner || p.Join == JoinOuter) && d.Joins == 0 {
		return nil, &Error{Key: "pipeline.join", Msg: fmt.Sprintf("declares %s joins, but in %s the inputs reach no KTable-KTable join", p.Join, p.TopologyFile)}
	}
	return d, nil
}

// checkDeclared checks pipeline.join and pipeline.nodes on their own.
func checkDeclared(p Spec) error {
	switch p.Join {
	case "":
		if p.TopologyFile == "" && len(p.Inputs) > 1 {
			return &Error{Key: "pipeline.join", Msg: fmt.Sprintf("is not set, but pipeline.inputs lists %d inputs, which are joined by KTable-KTable joins of a type that neither the rest of the configuration nor describe() shows; declare it: left, inner or outer", len(p.Inputs))}
		}
	case JoinLeft, JoinOuter:
	case JoinInner:
		if p.TopologyFile == "" && len(p.Inputs) > 1 {
			return &Error{Key: "pipeline.join", Msg: "inner joins need pipeline.topology_file: which keys an inner join writes depends on every table of the chain, and only the topology file shows that no table but the configured inputs takes part"}
		}
	default:
		msg := fmt.Sprintf("%q is not a join type: write left, inner or outer", p.Join)
		if near := nearestName(p.Join, []string{JoinLeft, JoinInner, JoinOuter}); near != "" {
			msg = fmt.Sprintf("%q is not a join type (did you mean %s?)", p.Join, near)
		}
		return &Error{Key: "pipeline.join", Msg: msg}
	}
	switch p.Reduce {
	case "":
		if p.TopologyFile == "" {
			return &Error{Key: "pipeline.reduce", Msg: "is not set, and without pipeline.topology_file nothing shows whether the inputs' reduces are plain or windowed (windowedBy(...).reduce() changes the store's keys); declare it: plain (audited) or windowed (not audited yet)"}
		}
	case ReducePlain:
	case ReduceWindowed:
		if p.TopologyFile == "" {
			return &Error{Key: "pipeline.reduce", Msg: "a windowed reduce is audited only with pipeline.topology_file, its node declared in pipeline.nodes as windowed-reduce with its window"}
		}
	default:
		msg := fmt.Sprintf("%q is not a reduce type: write plain or windowed", p.Reduce)
		if near := nearestName(p.Reduce, []string{ReducePlain, ReduceWindowed}); near != "" {
			msg = fmt.Sprintf("%q is not a reduce type (did you mean %s?)", p.Reduce, near)
		}
		return &Error{Key: "pipeline.reduce", Msg: msg}
	}
	if len(p.Nodes) > 0 && p.TopologyFile == "" {
		return &Error{Key: "pipeline.nodes", Msg: "declares kinds of nodes of pipeline.topology_file, which is not set"}
	}
	return nil
}

// Check checks, without a cluster, what the configuration says about the
// topology: pipeline.join, pipeline.nodes and, when a topology file is
// given, that every node on the inputs' paths is of a kind the audit
// supports. The commands call it before connecting, so that a topology
// the audit cannot model stops them before anything is read. Problems are
// *Error values or an *UnsupportedError.
func Check(p Spec) error {
	if err := checkDeclared(p); err != nil {
		return err
	}
	if p.TopologyFile == "" {
		return nil
	}
	_, err := deriveFile(p)
	return err
}

// fromTopology fills the fields not overridden from the topology file.
func (m *Model) fromTopology(p Spec) error {
	d, err := deriveFile(p)
	if err != nil {
		return err
	}
	if d.Stream != nil {
		return m.fromStream(p, d.Stream)
	}
	stages, out := d.Stages, d.Output
	m.Warnings = append(m.Warnings, d.Warnings...)
	if len(stages) > 0 && stages[0].Cogroup != "" {
		m.Join = "" // one table fed by every input: no join
	}
	if d.ChangelogOnly {
		if p.Output != "" {
			return &Error{Key: "pipeline.output", Msg: fmt.Sprintf("is %q, but in %s the table of input topic %s leads nowhere (it ends in its changelog): remove pipeline.output to audit the changelog alone", p.Output, p.TopologyFile, stages[0].InputTopic)}
		}
		m.ChangelogOnly = true
	}
	if p.Output != "" && out != p.Output {
		return &Error{Key: "pipeline.output", Msg: fmt.Sprintf("is %q, but in %s the inputs are joined into topic %q", p.Output, p.TopologyFile, out)}
	}
	if m.Output == "" && !m.ChangelogOnly {
		m.Output, m.OutputOrigin = out, FromTopology
	}
	for i, ts := range stages {
		s := &m.Stages[i]
		name := fmt.Sprintf("pipeline.inputs[%d]", i)
		s.Operator, s.Window, s.Cogroup = ts.Operator, ts.Window, ts.Cogroup
		s.GroupBy, s.TableStore = ts.GroupBy, ts.TableStore
		if ts.BufferStore != "" {
			s.BufferStore, s.BufferTopic = ts.BufferStore, ChangelogName(m.ApplicationID, ts.BufferStore)
		}
		if err := s.checkTableSource(name); err != nil {
			return err
		}
		if err := s.checkTableGroupBy(name); err != nil {
			return err
		}
		if s.Store == "" {
			s.Store, s.Origins.Store = ts.Store, FromTopology
		} else if s.Store != ts.Store {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s.store %q overrides store %q of the topology file", name, s.Store, ts.Store))
		}
		if s.ChangelogTopic == "" {
			s.ChangelogTopic, s.Origins.ChangelogTopic = ChangelogName(m.ApplicationID, ts.Store), FromTopology
		}
		if s.RepartitionTopic == "" {
			s.RepartitionTopic, s.Origins.RepartitionTopic = ts.RepartitionTopic, FromTopology
			if ts.RepartitionTopic == "" && !IsTableSource(ts.Operator) && ts.Cogroup == "" {
				m.Warnings = append(m.Warnings, fmt.Sprintf("input %s (topic %s) reaches store %s without a repartition topic", s.Input.Name, s.Input.Topic, ts.Store))
			}
		} else if s.RepartitionTopic != ts.RepartitionTopic {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s.repartition_topic %q overrides %q of the topology file", name, s.RepartitionTopic, ts.RepartitionTopic))
		}
	}
	return nil
}

// incomplete says whether a stage still lacks a field.
func (m *Model) incomplete() bool {
	for _, s := range m.Stages {
		if s.Store == "" || s.ChangelogTopic == "" || (s.RepartitionTopic == "" && s.Origins.RepartitionTopic == "") {
			return true
		}
	}
	return false
}

// candidate is a changelog topic of the application and its store.
type candidate struct {
	store, changelog, repartition string
}

// discover fills the missing fields from the topics starting with
// "<app>-": <app>-X-changelog is the changelog of store X, paired with
// <app>-X-repartition when that exists; changelogs are assigned to inputs
// only with the matcher's evidence.
func (m *Model) discover(ctx context.Context, lister TopicLister, match Matcher) error {
	app := m.ApplicationID
	if lister == nil {
		s := m.firstIncomplete()
		return &Error{Key: s.missingKey(), Msg: fmt.Sprintf("input %s: not derivable without listing the cluster's topics; set pipeline.topology_file or this override", s.Input.Name)}
	}
	all, err := lister.Topics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics to discover the internal topics of %s: %w", app, err)
	}
	exists := map[string]bool{}
	for _, t := range all {
		exists[t] = true
	}
	prefix := app + "-"
	var cands []candidate
	for _, t := range all {
		if !strings.HasPrefix(t, prefix) || !strings.HasSuffix(t, "-changelog") || len(t) <= len(prefix)+len("-changelog") {
			continue
		}
		c := candidate{store: strings.TrimSuffix(strings.TrimPrefix(t, prefix), "-changelog"), changelog: t}
		if r := prefix + c.store + "-repartition"; exists[r] {
			c.repartition = r
		}
		cands = append(cands, c)
	}
	slices.SortFunc(cands, func(a, b candidate) int { return strings.Compare(a.changelog, b.changelog) })

	claimed := map[string]bool{}
	for _, s := range m.Stages {
		if s.ChangelogTopic != "" {
			claimed[s.ChangelogTopic] = true
		}
	}
	// Which unclaimed candidates match which inputs lacking a changelog.
	matches := make([][]candidate, len(m.Stages))
	byChangelog := map[string][]int{}
	for i, s := range m.Stages {
		if s.ChangelogTopic != "" {
			continue
		}
		if match == nil {
			return &Error{Key: fmt.Sprintf("pipeline.inputs[%d].changelog_topic", i), Msg: fmt.Sprintf("input %s: no evidence to pick its changelog among the topics of %s; set this override (and repartition_topic), or pipeline.topology_file", s.Input.Name, app)}
		}
		for _, c := range cands {
			if claimed[c.changelog] {
				continue
			}
			ok, err := match(ctx, s.Input.Topic, c.changelog)
			if err != nil {
				return fmt.Errorf("matching input topic %s against changelog %s: %w", s.Input.Topic, c.changelog, err)
			}
			if ok {
				matches[i] = append(matches[i], c)
				byChangelog[c.changelog] = append(byChangelog[c.changelog], i)
			}
		}
	}
	var names []string
	for _, c := range cands {
		if !claimed[c.changelog] {
			names = append(names, c.changelog)
		}
	}
	for i := range m.Stages {
		s := &m.Stages[i]
		if s.ChangelogTopic != "" {
			continue
		}
		key := fmt.Sprintf("pipeline.inputs[%d].changelog_topic", i)
		switch len(matches[i]) {
		case 0:
			return &Error{Key: key, Msg: fmt.Sprintf("input %s (topic %s): none of the changelog topics of %s matches it (candidates: %s); set this override, or pipeline.topology_file", s.Input.Name, s.Input.Topic, app, listOrNone(names))}
		case 1:
		default:
			var cs []string
			for _, c := range matches[i] {
				cs = append(cs, c.changelog)
			}
			return &Error{Key: key, Msg: fmt.Sprintf("input %s (topic %s): %d changelog topics match it (%s); set this override to the right one, or pipeline.topology_file", s.Input.Name, s.Input.Topic, len(cs), strings.Join(cs, ", "))}
		}
		c := matches[i][0]
		if others := byChangelog[c.changelog]; len(others) > 1 {
			var ins []string
			for _, j := range others {
				ins = append(ins, m.Stages[j].Input.Name)
			}
			return &Error{Key: key, Msg: fmt.Sprintf("input %s (topic %s): changelog %s matches inputs %s alike; set this override, or pipeline.topology_file", s.Input.Name, s.Input.Topic, c.changelog, strings.Join(ins, ", "))}
		}
		s.ChangelogTopic, s.Origins.ChangelogTopic = c.changelog, FromDiscovery
	}

	// Stores and repartition topics from the changelog names.
	for i := range m.Stages {
		s := &m.Stages[i]
		x, ok := strings.CutPrefix(s.ChangelogTopic, prefix)
		x, ok2 := strings.CutSuffix(x, "-changelog")
		named := ok && ok2 && x != ""
		if s.Store == "" {
			if !named {
				return &Error{Key: fmt.Sprintf("pipeline.inputs[%d].store", i), Msg: fmt.Sprintf("input %s: changelog %s is not named %s<store>-changelog, so the store name is unknown; set this override", s.Input.Name, s.ChangelogTopic, prefix)}
			}
			s.Store, s.Origins.Store = x, FromChangelog
		}
		if s.RepartitionTopic == "" && s.Origins.RepartitionTopic == "" {
			r := prefix + s.Store + "-repartition"
			if !exists[r] {
				return &Error{Key: fmt.Sprintf("pipeline.inputs[%d].repartition_topic", i), Msg: fmt.Sprintf("input %s: topic %s does not exist (a Grouped.as name renames it); set this override, or pipeline.topology_file", s.Input.Name, r)}
			}
			s.RepartitionTopic, s.Origins.RepartitionTopic = r, FromDiscovery
		}
	}
	return nil
}

// firstIncomplete returns the first stage lacking a field.
func (m *Model) firstIncomplete() *Stage {
	for i := range m.Stages {
		s := &m.Stages[i]
		if s.Store == "" || s.ChangelogTopic == "" || (s.RepartitionTopic == "" && s.Origins.RepartitionTopic == "") {
			return s
		}
	}
	return &m.Stages[0]
}

// missingKey names the override that would fill the stage's first gap.
func (s *Stage) missingKey() string {
	base := fmt.Sprintf("pipeline.inputs[%d].", s.Index)
	switch {
	case s.ChangelogTopic == "":
		return base + "changelog_topic"
	case s.Store == "":
		return base + "store"
	}
	return base + "repartition_topic"
}

// validate rejects a model in which two stages share a store or topic, or
// a derived topic is an input or the output. The inputs of one cogroup
// share their store and changelog, and only they (cogroup.go).
func (m *Model) validate() error {
	if err := m.validateCogroup(); err != nil {
		return err
	}
	user := map[string]string{m.Output: "pipeline.output"}
	for i, s := range m.Stages {
		user[s.Input.Topic] = fmt.Sprintf("pipeline.inputs[%d].topic", i)
	}
	seen := map[string]string{}
	shared := map[string]bool{} // the cogroup's store and changelog
	for _, s := range m.Stages {
		if s.Cogroup != "" {
			shared[prefixed("store ", s.Store)], shared[s.ChangelogTopic] = true, true
		}
	}
	for i, s := range m.Stages {
		for _, f := range []struct{ field, v string }{
			{"store", prefixed("store ", s.Store)},
			{"repartition_topic", s.RepartitionTopic},
			{"changelog_topic", s.ChangelogTopic},
			{"store", prefixed("store ", s.BufferStore)},
			{"changelog_topic", s.BufferTopic},
		} {
			if f.v == "" {
				continue
			}
			key := fmt.Sprintf("pipeline.inputs[%d].%s", i, f.field)
			if u, ok := user[f.v]; ok && !s.sourceTopicChangelog(f.field, f.v) {
				return &Error{Key: key, Msg: fmt.Sprintf("%q is also %s", f.v, u)}
			}
			if prev, ok := seen[f.v]; ok && !(s.Cogroup != "" && (f.field == "store" || f.field == "changelog_topic") && shared[f.v]) {
				return &Error{Key: key, Msg: fmt.Sprintf("%q is also %s: two inputs cannot share it", strings.TrimPrefix(f.v, "store "), prev)}
			}
			seen[f.v] = key
		}
	}
	return nil
}

// prefixed keeps "" empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func listOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
