package streams

import (
	"errors"
	"fmt"
	"time"

	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/detect"
	"github.com/lossaudit/lossaudit/audit/internal/engine/snapshot"
	"github.com/lossaudit/lossaudit/audit/internal/store/history"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
	"github.com/lossaudit/lossaudit/audit/kread"
)

// SelectStatus says what selecting the key of an input record gave.
type SelectStatus uint8

// Selection outcomes.
const (
	// Selected: the record has a selected key (and timestamp).
	Selected SelectStatus = iota
	// NullKey: the selected key is null; Kafka Streams drops the record.
	NullKey
	// DecodeError: the value could not be decoded or the key extracted.
	DecodeError
	// Failed: selection cannot work at all (every schema source down, the
	// registry rejecting the credentials); the run stops with err.
	Failed
)

// Selector computes an input record's selected key and the timestamp the
// application sees for it. It is called concurrently for different
// partitions. On DecodeError, err says why; if err has a method
// `Class() string`, decode errors are counted under that class. The key
// may alias rec's bytes (its key or value): it is valid while rec is.
type Selector func(rec *kread.Record) (key []byte, ts int64, status SelectStatus, err error)

// Input is one input of the pipeline, in join order.
type Input struct {
	Name             string
	Topic            string
	RepartitionTopic string
	ChangelogTopic   string
	Select           Selector
	// DownstreamKey, when set, maps a repartition or changelog record key
	// to the form Select returns (for example stripping Avro framing).
	DownstreamKey func([]byte) []byte
	// Field is the configured field path that selects the key, "" when
	// the record key is kept; only used to explain an inconclusive
	// verdict, with FieldsNear.
	Field string
	// FieldsNear, when set, returns the writer schema's field paths
	// closest to Field for a record that failed to decode.
	FieldsNear func(rec *kread.Record) []string
	// Count says that the input's table is a count (KGroupedStream#count,
	// its changelog values Longs): an audit then recomputes each key's
	// count from the processed records and reports an undercount
	// (docs/checks.md). A reconcile step recounts from the processed
	// records its state counted per key (detect.InputState.Processed).
	Count bool
	// BufferTopic is the changelog of a suppress buffer between the
	// input's table and the output (Suppressed.untilTimeLimit), "" for
	// none: a key whose last record there is a value is pending at the
	// output (detect.BufferPending). A reconcile step keeps each key's
	// last buffer record in its state and judges the keys the buffer
	// holds at every step.
	BufferTopic string
	// Table says that the input is read by a table source (builder.table,
	// KStream#toTable on the input topic): no repartition topic, its table
	// holds each key's last record by offset (detect.TableLast), and
	// ChangelogTopic is "" when the table is restored from the input
	// topic (the source-topic optimization: nothing to check between
	// them). An audit only: a reconcile step refuses it.
	Table bool
	// GroupBy says that the input is read by a table source whose
	// groupBy feeds a count, reduce or aggregate (table-count,
	// table-reduce, table-aggregate; tablegroupby.go): Select gives
	// each value's group key, only each input key's last processed record
	// by offset per partition is a candidate (detect.GroupByLast), and
	// RepartitionTopic holds Change-encoded values. An audit only, of one
	// input: a reconcile step and a sharded audit refuse it.
	GroupBy bool
	// Operator names the operator that writes the input's table as the
	// reports show it ("reduce", "count", "aggregate", "table-source",
	// "to-table"); "" reads as "reduce". It changes no check.
	Operator string
	// Window, when set, says that the input's aggregation is a windowed
	// one on time windows, tumbling or hopping (windowagg.go): read from RepartitionTopic, checked per
	// (key, window). An audit only, of one input: a reconcile step and a
	// sharded audit refuse it. With BufferTopic, the windows are emitted
	// final (suppress(untilWindowCloses)): the output is checked per
	// window certainly closed (detect.WindowFinal).
	Window *detect.TimeWindows
	// WindowRetention is the shortest time-based retention of the
	// windowed input's changelog and output topics; 0 for none (records
	// are kept). Records older than it (with a margin for clock skew) are
	// counted, not checked: their windows may be gone.
	WindowRetention time.Duration
}

// Progress receives progress of the long phases; nil means none.
type Progress = collect.Progress

// Phase is one phase of a Progress.
type Phase = collect.Phase

// History keeps partition snapshots across runs; *history.Store has it.
type History interface {
	Load(group string) (map[kread.TP]history.Entry, error)
	Record(group string, now []snapshot.Partition, at time.Time) error
}

// Options configure one audit run.
type Options struct {
	Kafka engine.Kafka
	Store *index.Store
	// Group is the application.id: the consumer group whose committed
	// offsets say what has been processed.
	Group  string
	Inputs []Input
	// Output is the output topic; "" audits the one input's table on its
	// changelog alone (a topology ending in the table: no output stage).
	Output string
	// Join is the type of the KTable-KTable joins between the inputs'
	// tables: "" or "left", "inner" or "outer" (pipeline.join).
	Join string
	// Cogroup says that the inputs feed one cogroup (CogroupedKStream
	// #aggregate): one store, whose changelog every input names, each
	// input checked against it with the table rule, and the output, when
	// the table holds the key as a value, at least as new as each input's
	// newest update (detect.KeySpec.Cogroup). An input may then reach the
	// table without a repartition topic (groupByKey on its own key).
	Cogroup bool
	// OutputKey, when set, maps an output record key to the selected key form.
	OutputKey func([]byte) []byte
	// From and To bound the audited input timestamps; zero means unbounded.
	From, To time.Time
	// SettleTimeout bounds the wait for transactions open when the group
	// offsets were read to end on changelog and output partitions.
	SettleTimeout time.Duration
	// UnprocessedAfter is how old the first record of an input partition
	// without a committed offset (on a topic the group has offsets on)
	// must be to report unprocessed_partition.
	UnprocessedAfter time.Duration
	// SettlePoll is the interval between settle checks (default 200ms).
	SettlePoll time.Duration
	Progress   Progress
	// Now is the clock (default time.Now).
	Now func() time.Time
	// DeadLetterTopic, when set, is the application's dead-letter queue
	// (errors.dead.letter.queue.topic.name, Kafka Streams 4.2+): the input
	// records it names were dropped on purpose and are not audited.
	DeadLetterTopic string
	// History, when set, compares this run's snapshot with the previous
	// run's (truncated, offset_reset) and records it for the next run.
	History History

	// maxTails overrides maxTails (tests).
	maxTails int
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Kafka == nil:
		return o, errors.New("audit: no Kafka client")
	case o.Store == nil:
		return o, errors.New("audit: no index store")
	case o.Group == "":
		return o, errors.New("audit: no application id (consumer group)")
	case len(o.Inputs) == 0:
		return o, errors.New("audit: no inputs")
	case len(o.Inputs) > 255:
		return o, errors.New("audit: more than 255 inputs")
	case o.Output == "" && len(o.Inputs) > 1 && !o.Cogroup:
		return o, errors.New("audit: no output topic for joined inputs")
	case o.Join != "" && o.Join != "left" && o.Join != "inner" && o.Join != "outer":
		return o, fmt.Errorf("audit: join type %q is not left, inner or outer", o.Join)
	}
	for i, in := range o.Inputs {
		noLink := in.RepartitionTopic == "" && in.Window == nil && !o.Cogroup
		if in.Topic == "" || ((noLink || in.ChangelogTopic == "") && !in.Table) || in.Select == nil {
			return o, fmt.Errorf("audit: input %d (%s) lacks a topic, repartition topic, changelog topic or selector", i, in.Name)
		}
	}
	if err := o.checkWindowed(); err != nil {
		return o, err
	}
	if err := o.checkTableGroupBy(); err != nil {
		return o, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.maxTails <= 0 {
		o.maxTails = maxTails
	}
	if o.SettlePoll <= 0 {
		o.SettlePoll = 200 * time.Millisecond
	}
	return o, nil
}
