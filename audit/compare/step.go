package compare

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"

	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/incremental"
	"github.com/lossaudit/lossaudit/audit/internal/engine/pass"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// StepOptions configure a reconcile step besides Options.
type StepOptions = incremental.Options

// checkpoint is where the last committed step of a comparison stopped:
// the key of the identity digests, per partition where the next step reads
// from, and per pair the counters of what lies below that.
type checkpoint struct {
	incremental.Header
	// Seed keys the identity digests of every step (see hasher).
	Seed  []byte   `json:"identity_seed"`
	Parts []cpPart `json:"partitions"`
	Pairs []cpPair `json:"pairs"`
}

// cpPart is one partition in a checkpoint.
type cpPart struct {
	Topic     string      `json:"topic"`
	Partition int32       `json:"partition"`
	Role      engine.Role `json:"role"`
	// Next is where the next step reads from: on a source the offset
	// below which every record was due (the records above it are read
	// again, pending or due by then), on a sink the end (LSO) the step
	// read to.
	Next int64 `json:"next"`
}

// cpPair are one pair's counters since the baseline: of the source
// records below the sources' Next, and of the sink records read.
type cpPair struct {
	Records          int64 `json:"records"`
	Due              int64 `json:"due"`
	NoIdentity       int64 `json:"no_identity"`
	DecodeErrors     int64 `json:"decode_errors"`
	SinkRecords      int64 `json:"sink_records"`
	SinkNoIdentity   int64 `json:"sink_no_identity"`
	SinkDecodeErrors int64 `json:"sink_decode_errors"`
	// Identities counts the identities with source records, Unexplained
	// the sink records of identities without, over every identity kept.
	Identities  int64 `json:"identities"`
	Unexplained int64 `json:"unexplained"`
}

const checkpointVersion = 1

// describe is the text a comparison's state is bound to.
func describe(o Options, extra string) string {
	var b strings.Builder
	due := "grace=" + o.Grace.String() // what decides which records are due
	if o.Group != "" {
		due = "group=" + o.Group
	}
	fmt.Fprintf(&b, "compare match=%s %s report_unexpected=%v", o.Match, due, o.ReportUnexpected)
	for _, p := range o.Pairs {
		fmt.Fprintf(&b, " pair=%s:%s>%s", p.Name, p.Source, p.Sink)
	}
	if extra != "" {
		b.WriteString(" " + extra)
	}
	return b.String()
}

// TruncatedError says a partition a reconciliation had read holds less
// than the last step read of it (an unclean leader election, a recreated
// topic): the counts kept per identity include records that are gone and
// cannot be taken back one by one, so the state cannot be continued.
type TruncatedError struct {
	Topic     string
	Partition int32
	// HighWatermark is the partition's end now; Next where the last step
	// stopped.
	HighWatermark, Next int64
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("%s[%d] was truncated: it ends at offset %d, below offset %d, where the last step stopped reading it; the comparison's state counts records that are gone, so it cannot be continued: move store.dir/reconcile away to start a new baseline",
		e.Topic, e.Partition, e.HighWatermark, e.Next)
}

// Step performs one step of a scheduled reconciliation of the comparison
// (docs/reconcile.md). On an empty state it is the baseline: a full
// comparison that records, per identity, what it found. Later steps read
// each sink from where the last step stopped (its LSO then) and each
// source from the last step's due offset, and judge again the identities
// those records touch and those with open findings or pending records,
// against what earlier steps kept per identity: every due record's
// coordinates, the sink's copies (a count and the first ones), the records
// pending at the last step and the open findings with when each was first
// seen. The result equals a full comparison of the same moment
// (docs/design.md, "Incremental steps"). The step's state is staged: the
// caller writes the reports, then commits it. A ledger is not reconciled:
// Options.Ledger must be nil.
func Step(ctx context.Context, o Options, so StepOptions) (*incremental.Stepped, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	switch {
	case so.State == nil:
		return nil, errors.New("reconcile: no state store")
	case o.Ledger != nil:
		return nil, errors.New("reconcile: a comparison's ledger is checked by lossaudit compare, not reconciled")
	case o.Stream != nil:
		return nil, errors.New("reconcile: a per-record stream stage is checked by lossaudit audit, not reconciled yet")
	}
	desc := describe(o, so.Describe)
	var last checkpoint
	st, err := incremental.Begin(so.State, checkpointVersion, &last, desc)
	if err != nil {
		return nil, err
	}
	s := &stepRun{desc: desc, step: st, keys: incremental.NewKeys[idState](st, idCodec{})}
	if st.Baseline {
		s.seed = make([]byte, seedLen)
		if _, err := rand.Read(s.seed); err != nil {
			return st.Done(nil, nil, fmt.Errorf("reconcile: drawing the identity seed: %w", err))
		}
	} else {
		s.cp, s.seed = &last, last.Seed
	}
	if s.hasher, err = newKeyedHasher(s.seed); err != nil {
		return st.Done(nil, nil, fmt.Errorf("reconcile: the checkpoint in %s: %w", so.State.Dir(), err))
	}
	p := &modePass{o: o, step: s}
	s.p = p
	res, err := pass.Run(ctx, pass.Config{Store: o.Store, Now: o.Now}, p)
	return st.Done(res, s.next, err)
}

// stepRun is a reconcile step's part in the comparison's pass.
type stepRun struct {
	p      *modePass
	cp     *checkpoint // nil for the baseline
	desc   string
	seed   []byte
	hasher hasher
	step   *incremental.Step
	keys   *incremental.Keys[idState]
	v      *stepVisitor
	next   *checkpoint
}

// plan decides where every partition is read from, given the last
// checkpoint: sinks from the end the last step read to, sources from the
// last step's due offsets (new partitions from their log start). A
// partition that now ends below that is refused (TruncatedError).
func (s *stepRun) plan() error {
	from := map[kread.TP]int64{}
	s.p.col.from = from
	if s.cp == nil {
		return nil
	}
	last := map[kread.TP]int64{}
	for _, c := range s.cp.Parts {
		last[kread.TP{Topic: c.Topic, Partition: c.Partition}] = c.Next
	}
	snap := s.p.snap
	for x := range s.p.o.Pairs {
		for _, t := range []struct {
			parts []int32
			name  string
			of    map[int32]kread.Offsets
		}{{snap.sinks[x].Parts, snap.sinks[x].Name, snap.sinks[x].Offsets}, {snap.sources[x].Parts, snap.sources[x].Name, snap.sources[x].Offsets}} {
			for _, p := range t.parts {
				tp := kread.TP{Topic: t.name, Partition: p}
				next, ok := last[tp]
				if !ok {
					continue
				}
				if hw := t.of[p].HighWatermark; hw < next {
					return &TruncatedError{Topic: t.name, Partition: p, HighWatermark: hw, Next: next}
				}
				from[tp] = next
			}
		}
	}
	return nil
}

// touch makes the check visit the identities the last step marked: those
// with open or withheld findings and those with pending records.
func (s *stepRun) touch() error {
	return s.keys.Marked(func(key []byte) error { return s.p.w.touch(key) })
}

func (s *stepRun) visitor() pairJudge {
	s.v = &stepVisitor{keys: s.keys, now: s.p.started.UnixMilli()}
	return s.v
}

// assemble builds the step's result and its checkpoint: the counters are
// totals since the baseline, as one full comparison counts them.
func (s *stepRun) assemble(parts []finding.PartitionFinding) *finding.Result {
	o, snap, col, chk := s.p.o, s.p.snap, s.p.col, s.p.chk
	next := &checkpoint{Header: s.step.Next(checkpointVersion, s.desc, s.p.started), Seed: s.seed}
	totals := make([]pairTotals, len(o.Pairs))
	step := &finding.Step{Number: next.Step, Baseline: s.cp == nil, BaselineAt: next.Baseline,
		Read: map[string]int64{string(engine.RoleSource): 0, string(engine.RoleSink): 0}, KeysJudged: s.v.judged, Resolved: int64(len(s.v.resolved))}
	if s.cp != nil {
		step.Previous = s.cp.At
	}
	seen := map[string]bool{}
	addParts := func(t string, role engine.Role, nextOf func(p int32) int64, ps []int32) {
		if seen[t] {
			return
		}
		seen[t] = true
		step.Read[string(role)] += col.stats.TopicRecords(t)
		for _, p := range ps {
			next.Parts = append(next.Parts, cpPart{Topic: t, Partition: p, Role: role, Next: nextOf(p)})
		}
	}
	for x := range o.Pairs {
		sk, sr := snap.sinks[x], snap.sources[x]
		addParts(sk.Name, engine.RoleSink, func(p int32) int64 { return sk.Offsets[p].LSO }, sk.Parts)
		addParts(sr.Name, engine.RoleSource, func(p int32) int64 {
			n := snap.dueBelow(x, p)
			if f, ok := col.from[kread.TP{Topic: sr.Name, Partition: p}]; ok {
				n = max(n, f) // due moved back (a reset): what was due stays due
			}
			return n
		}, sr.Parts)
		var cum cpPair
		if s.cp != nil && x < len(s.cp.Pairs) {
			cum = s.cp.Pairs[x]
		}
		src, snk := &col.sources[x], &col.sinks[x]
		cum.Records += src.records.Load() - src.tailRecords.Load()
		cum.Due += src.due.Load()
		cum.NoIdentity += src.noIdentity.Load() - src.tailNoIdentity.Load()
		cum.DecodeErrors += src.decodeErrors.Load() - src.tailDecodeErrors.Load()
		cum.SinkRecords += snk.records.Load()
		cum.SinkNoIdentity += snk.noIdentity.Load()
		cum.SinkDecodeErrors += snk.decodeErrors.Load()
		cum.Identities += chk.identities[x]
		cum.Unexplained += chk.unexplained[x]
		next.Pairs = append(next.Pairs, cum)
		totals[x] = pairTotals{
			src: finding.InputCounts{Scanned: cum.Records + src.tailRecords.Load(), Audited: cum.Due, Pending: src.pending.Load(),
				DecodeErrors: cum.DecodeErrors + src.tailDecodeErrors.Load()},
			srcNoIdentity: cum.NoIdentity + src.tailNoIdentity.Load(), sinkRecords: cum.SinkRecords, sinkNoIdentity: cum.SinkNoIdentity,
			sinkDecodeErrors: cum.SinkDecodeErrors, identities: cum.Identities, unexplained: cum.Unexplained,
		}
	}
	s.next = next
	res := assemble(o, snap, col, totals, s.p.led, chk, parts)
	finding.SortRows(s.v.resolved, res.Summary.InputOrder)
	res.Resolved = s.v.resolved
	res.Summary.Step = step
	return res
}
