package compare

import (
	"errors"
	"fmt"
	"time"

	"github.com/lossaudit/lossaudit/audit/internal/engine"
	"github.com/lossaudit/lossaudit/audit/internal/engine/collect"
	"github.com/lossaudit/lossaudit/audit/internal/store/index"
)

// Pair is one compared source topic and the sink topic that should hold a
// copy of each of its records.
type Pair struct {
	Name, Source, Sink string
}

// LedgerLine is one send of a producer ledger, as the comparison needs it.
type LedgerLine struct {
	// Line is the 1-based line number in the ledger.
	Line  int64
	Topic string
	// Acked says the broker acknowledged the send at Partition/Offset.
	Acked     bool
	Partition int32
	Offset    int64
	// TS is the line's timestamp (Unix ms), 0 when it has none.
	TS int64
	// Key is the record key the line names (nil for a null key or none).
	Key []byte
	// Identity are the parts of the record's identity under the match, as
	// Identify returns them for the topic's records.
	Identity [][]byte
}

// Ledger hands every send of a producer ledger to fn, in line order, and
// returns how many lines were not sends (other events). Lines may reuse
// their slices between calls.
type Ledger func(fn func(l *LedgerLine) error) (skipped int64, err error)

// Progress receives progress of the long phases; nil means none.
type Progress = collect.Progress

// Options configure one comparison.
type Options struct {
	// Source is the cluster of the source topics and of the topics the
	// ledger names; Sink the cluster of the sink topics (the same client
	// when both are one cluster).
	Source, Sink engine.Kafka
	Store        *index.Store
	Pairs        []Pair
	// Match names the identity rule for the summary (compare.match);
	// Identify implements it; Header, when not "", is the header it reads.
	Match    string
	Identify Identify
	Header   string
	// Group, when set, is the consumer group whose committed offsets on
	// the sources say which records are due; otherwise records older than
	// the snapshot time minus Grace are.
	Group string
	Grace time.Duration
	// Ledger, when set, is checked against the topics it names.
	Ledger Ledger
	// ReportUnexpected reports sink records with no source record.
	ReportUnexpected bool
	// Stream, when set, makes the comparison the check of a Kafka
	// Streams application's per-record stream stage (stream.go).
	Stream *Stream
	// SettleTimeout bounds the wait for transactions open on the sinks
	// when the due offsets were taken to end; SettlePoll is the interval
	// between checks (default 200ms).
	SettleTimeout time.Duration
	SettlePoll    time.Duration
	Progress      Progress
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// maxTopics bounds the pairs and the ledger's topics (a 16-bit index).
const maxTopics = 1<<16 - 1

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Source == nil || o.Sink == nil:
		return o, errors.New("compare: no Kafka client")
	case o.Store == nil:
		return o, errors.New("compare: no index store")
	case o.Identify == nil:
		return o, errors.New("compare: no identity rule")
	case len(o.Pairs) == 0 && o.Ledger == nil:
		return o, errors.New("compare: no pairs and no ledger")
	case len(o.Pairs) > maxTopics:
		return o, fmt.Errorf("compare: more than %d pairs", maxTopics)
	case o.Group == "" && o.Grace < 0:
		return o, errors.New("compare: negative grace")
	}
	for i, p := range o.Pairs {
		if p.Name == "" || p.Source == "" || p.Sink == "" {
			return o, fmt.Errorf("compare: pair %d lacks a name, source or sink", i)
		}
	}
	if err := o.checkStream(); err != nil {
		return o, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.SettlePoll <= 0 {
		o.SettlePoll = 200 * time.Millisecond
	}
	return o, nil
}
