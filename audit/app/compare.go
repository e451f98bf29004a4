package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lossaudit/lossaudit/audit/compare"
	"github.com/lossaudit/lossaudit/audit/compare/ledger"
	"github.com/lossaudit/lossaudit/audit/finding"
	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/incremental"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/internal/store/state"
	"github.com/lossaudit/lossaudit/audit/kread"
	"github.com/lossaudit/lossaudit/config"
	"github.com/lossaudit/lossaudit/schema"
)

// Compare performs one comparison of the configured pairs (lossaudit
// compare) and checks the ledger, if any. Configuration problems
// (including a malformed ledger) are *config.Error values; any other error
// means the comparison could not complete.
func Compare(ctx context.Context, cfg *config.Config, o Options) (*finding.Result, error) {
	opts, release, err := prepareCompare(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	defer release()
	res, err := compare.Run(ctx, opts)
	if err != nil {
		return nil, compareRunError(cfg, err)
	}
	return res, nil
}

// IsCompare says whether cfg configures a comparison (compare.pairs or
// compare.ledger, and no pipeline) rather than a Kafka Streams pipeline:
// what reconcile and watch run.
func IsCompare(cfg *config.Config) bool {
	p := cfg.Pipeline
	return p.ApplicationID == "" && len(p.Inputs) == 0 && (len(cfg.Compare.Pairs) > 0 || cfg.Compare.Ledger != "")
}

// prepareCompare builds the options of a comparison from cfg: the clients
// of both clusters, the identity rule, the ledger and the index store.
// release closes them.
func prepareCompare(ctx context.Context, cfg *config.Config, o Options) (_ compare.Options, release func(), err error) {
	var closes []func() error
	release = func() {
		for i := len(closes) - 1; i >= 0; i-- {
			_ = closes[i]()
		}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	if err := cfg.ValidateCompare(); err != nil {
		return compare.Options{}, nil, err
	}
	src, err := NewClient(cfg, waitLines(o.Warnings))
	if err != nil {
		return compare.Options{}, nil, err
	}
	closes = append(closes, src.Close)
	sink := src
	if cfg.HasSinkKafka {
		if sink, err = NewSinkClient(cfg, waitLines(o.Warnings)); err != nil {
			return compare.Options{}, nil, err
		}
		closes = append(closes, sink.Close)
	}
	rule, arg, err := config.ParseMatch(cfg.Compare.Match)
	if err != nil {
		return compare.Options{}, nil, &config.Error{Key: "compare.match", Msg: err.Error()}
	}
	var field *schema.Extractor
	if rule == config.MatchField {
		reg, err := Schemas(cfg, src)
		if err != nil {
			return compare.Options{}, nil, err
		}
		if reg == nil {
			return compare.Options{}, nil, &config.Error{Key: "schema", Msg: "compare.match " + cfg.Compare.Match + " decodes Avro values but no schema source is configured: set schema.registry_url, schema.schemas_topic or schema.avsc_dir"}
		}
		if field, err = reg.Extractor(arg); err != nil {
			return compare.Options{}, nil, &config.Error{Key: "compare.match", Msg: err.Error()}
		}
	}
	opts := compare.Options{
		Source: src, Sink: sink, Match: cfg.Compare.Match, Identify: Identify(ctx, rule, arg, field),
		Group: cfg.Compare.Group, Grace: cfg.Compare.Grace, ReportUnexpected: cfg.Compare.ReportUnexpected,
		SettleTimeout: cfg.Audit.SettleTimeout, Progress: o.Progress,
	}
	if rule == config.MatchHeader {
		opts.Header = arg
	}
	for _, p := range cfg.Compare.Pairs {
		opts.Pairs = append(opts.Pairs, compare.Pair{Name: p.Name, Source: p.Source, Sink: p.Sink})
	}
	if cfg.Compare.Ledger != "" {
		opts.Ledger = LedgerFile(ctx, cfg.Compare.Ledger, rule, field)
	}
	store, err := index.Open(cfg.Store.Dir, index.Options{})
	if err != nil {
		return compare.Options{}, nil, err
	}
	closes = append(closes, store.Close)
	opts.Store = store
	return opts, release, nil
}

// compareRunError turns what the user can fix among a comparison's errors
// into a *config.Error (exit 2): a malformed ledger, a share group, a
// topic that does not exist, named by the key that named it.
func compareRunError(cfg *config.Config, err error) error {
	var le *ledgerError
	if errors.As(err, &le) {
		return &config.Error{Key: "compare.ledger", Msg: le.Error()}
	}
	var sg *compare.ShareGroupError
	if errors.As(err, &sg) {
		return &config.Error{Key: "compare.group", Msg: sg.Error()}
	}
	var mt *engine.MissingTopicError
	if errors.As(err, &mt) {
		if mt.Role == engine.RoleLedger {
			return &config.Error{Key: "compare.ledger", Msg: fmt.Sprintf("%s names topic %s, which does not exist on the source cluster", cfg.Compare.Ledger, mt.Topic)}
		}
		cluster := "source"
		if mt.Role == engine.RoleSink && cfg.HasSinkKafka {
			cluster = "sink"
		}
		return &config.Error{Key: fmt.Sprintf("compare.pairs[%d].%s", mt.Index, mt.Role), Msg: fmt.Sprintf("topic %s does not exist on the %s cluster", mt.Topic, cluster)}
	}
	return err
}

// reconcileCompare performs one step of the scheduled reconciliation of
// the configured comparison, as Reconcile does for a pipeline. A ledger
// is refused (compare.ledger, exit 2): it is checked by lossaudit compare.
func reconcileCompare(ctx context.Context, cfg *config.Config, o Options) (*Step, error) {
	if cfg.Compare.Ledger != "" {
		return nil, &config.Error{Key: "compare.ledger", Msg: "reconcile and watch compare pairs only; a producer ledger is checked by `lossaudit compare`"}
	}
	fixed := newFixedCosts(o.Started)
	opts, release, err := prepareCompare(ctx, cfg, o)
	if err != nil {
		return nil, err
	}
	fixed.lap("prepare")
	st, err := state.Open(filepath.Join(cfg.Store.Dir, StateDir), state.Options{Hook: o.StateHook})
	if err != nil {
		release()
		return nil, err
	}
	fixed.lap("state")
	sp, err := compare.Step(ctx, opts, compare.StepOptions{State: st, Describe: describeSink(cfg)})
	if err != nil {
		st.Close()
		release()
		var me *incremental.StateMismatchError
		if errors.As(err, &me) {
			return nil, &config.Error{Key: "store.dir", Msg: me.Error()}
		}
		return nil, compareRunError(cfg, err)
	}
	fixed.add(sp.Result)
	return &Step{Result: sp.Result, release: release, st: st, step: sp, spills: opts.Store}, nil
}

// describeSink is the configuration besides the pairs that changes what a
// comparison's state means: which cluster the sinks are on.
func describeSink(cfg *config.Config) string {
	if !cfg.HasSinkKafka {
		return "sink_kafka=kafka"
	}
	return "sink_kafka.brokers=" + strings.Join(cfg.Sink().Brokers, ",")
}

// Identify returns the identity rule of compare.match (rule and arg as
// config.ParseMatch gives them; field is the extractor of a field rule).
func Identify(ctx context.Context, rule, arg string, field *schema.Extractor) compare.Identify {
	switch rule {
	case config.MatchKey:
		return func(rec *kread.Record, parts [][]byte) ([][]byte, compare.Status, error) {
			if rec.Key == nil {
				return parts, compare.NoIdentity, nil
			}
			return append(parts, rec.Key), compare.Identified, nil
		}
	case config.MatchHeader:
		return func(rec *kread.Record, parts [][]byte) ([][]byte, compare.Status, error) {
			if rec.Header == nil {
				return parts, compare.NoIdentity, nil
			}
			return append(parts, rec.Header), compare.Identified, nil
		}
	case config.MatchField:
		return func(rec *kread.Record, parts [][]byte) ([][]byte, compare.Status, error) {
			if rec.Value == nil {
				return parts, compare.NoIdentity, nil
			}
			v, isNull, err := field.ExtractContext(ctx, rec.Value)
			if err != nil {
				var de *schema.DecodeError
				if errors.As(err, &de) {
					return parts, compare.DecodeError, classified{de}
				}
				return parts, compare.Failed, err
			}
			if isNull {
				return parts, compare.NoIdentity, nil
			}
			return append(parts, []byte(v)), compare.Identified, nil
		}
	}
	return func(rec *kread.Record, parts [][]byte) ([][]byte, compare.Status, error) {
		return append(parts, rec.Key, rec.Value), compare.Identified, nil
	}
}

// ledgerError is a ledger that cannot be checked as configured: a
// malformed line, or one the match cannot identify.
type ledgerError struct {
	path string
	err  error
}

func (e *ledgerError) Error() string { return e.path + ": " + e.err.Error() }
func (e *ledgerError) Unwrap() error { return e.err }

// LedgerFile reads the producer ledger at path for lossaudit compare,
// giving each line its identity under the match (rule as
// config.ParseMatch gives it; field is the extractor of a field rule).
func LedgerFile(ctx context.Context, path, rule string, field *schema.Extractor) compare.Ledger {
	return func(fn func(l *compare.LedgerLine) error) (int64, error) {
		f, err := os.Open(path)
		if err != nil {
			return 0, &ledgerError{path, err}
		}
		defer f.Close()
		var cl compare.LedgerLine
		bad := func(l *ledger.Line, format string, args ...any) error {
			return &ledgerError{path, &ledger.Error{Line: l.Number, Msg: fmt.Sprintf(format, args...)}}
		}
		skipped, err := ledger.Read(f, func(l *ledger.Line) error {
			cl = compare.LedgerLine{Line: l.Number, Topic: l.Topic, Acked: l.Acked, Partition: l.Partition, Offset: l.Offset,
				TS: l.TS, Key: l.Key, Identity: cl.Identity[:0]}
			switch {
			case rule == config.MatchRecord && l.HasID:
				return bad(l, "names the record by id, but compare.match is record: give its key and value")
			case rule == config.MatchRecord:
				cl.Identity = append(cl.Identity, l.Key, l.Value)
			case l.HasID:
				cl.Key = nil
				cl.Identity = append(cl.Identity, []byte(l.ID))
			case rule == config.MatchKey && l.Key == nil:
				return bad(l, "has a null key, which compare.match key cannot identify")
			case rule == config.MatchKey:
				cl.Identity = append(cl.Identity, l.Key)
			case rule == config.MatchField && l.Value != nil:
				v, isNull, err := field.ExtractContext(ctx, l.Value)
				if err != nil || isNull {
					return bad(l, "the value gives no field %s (%v): give the native format's id", field.Path(), err)
				}
				cl.Identity = append(cl.Identity, []byte(v))
			default:
				return bad(l, "gives no %s to match: give the native format's id", strings.TrimSuffix(rule, ":"))
			}
			return fn(&cl)
		})
		var le *ledger.Error
		if errors.As(err, &le) && !errors.As(err, new(*ledgerError)) {
			return skipped, &ledgerError{path, err}
		}
		return skipped, err
	}
}
