// Package copysim simulates copy pipelines (a mirror, a Connect pipeline,
// a stateless Kafka Streams application) on a Kafka cluster, with faults
// injected at known records: copies lost, copies made twice, records still
// on their way, records in the sink that no source holds, and a producer
// ledger whose lines disagree with the topic in known ways. It keeps the
// truth of what it did, so that lossaudit compare's findings can be checked
// against it exactly: the property test, the in-process demo and the
// package's own tests share it. Live grows a pipeline in rounds, for the
// reconciliation's property test. It writes with franz-go, never with the
// reader under test.
package copysim

import (
	"fmt"
	"math/rand/v2"
)

// Match rules the simulator can produce identities for.
const (
	MatchRecord = "record"
	MatchKey    = "key"
	// MatchHeader identifies records by their "id" header.
	MatchHeader = "header:" + IDHeader
)

// IDHeader is the header carrying a record's id under MatchHeader.
const IDHeader = "id"

// Ledger formats.
const (
	FormatNative             = "native"
	FormatVerifiableProducer = "verifiable"
)

// PairSpec is one simulated copy pipeline.
type PairSpec struct {
	Name string
	// Source and Sink are the topics' names (the run prefixes them).
	Source, Sink string
	// Partitions and SinkPartitions are the topics' partition counts; a
	// copy goes to the sink partition source partition mod SinkPartitions.
	Partitions, SinkPartitions int32
	// Records is how many records the source gets (before repeats).
	Records int
}

// LedgerSpec is the ledger of the producer of the first pair's source,
// with the number of lines of each kind of disagreement injected.
type LedgerSpec struct {
	Format string
	// AckedGone: lines acknowledging a record at an offset that holds
	// another one; AckedPastEnd: at an offset past the log end.
	AckedGone, AckedPastEnd int
	// FailedPresent: records in the topic whose line says the send
	// failed; FailedAbsent: failed lines of records never written.
	FailedPresent, FailedAbsent int
	// Duplicated: records written twice with one acknowledged line.
	Duplicated int
	// Expire deletes this many records from the head of partition 0
	// (DeleteRecords): their acknowledgements are expired, not lost.
	Expire int
}

// Scenario is one simulated run.
type Scenario struct {
	Seed  int64
	Match string
	// Group, when set, commits offsets on the sources; otherwise the
	// pending records get future timestamps and the comparison uses the
	// grace.
	Group string
	Pairs []PairSpec
	// LossRate is the share of due records whose copy is lost, DupRate
	// the share copied two or three times, PendingRate the share of
	// records that are pending (the tail of each partition), and
	// PendingCopyRate the share of pending records already copied.
	LossRate, DupRate, PendingRate, PendingCopyRate float64
	// Repeats is how many records of each source are written twice (the
	// same identity at two offsets), each copied once per source record
	// except when the dice say otherwise.
	Repeats int
	// NoIdentity is how many records per source the match cannot identify
	// (a null key under MatchKey, no id header under MatchHeader; ignored
	// under MatchRecord).
	NoIdentity int
	// Unexpected is how many records each sink gets with no source record.
	Unexpected       int
	ReportUnexpected bool
	// Ledger, when set, writes a ledger for the first pair's source.
	Ledger *LedgerSpec
}

// RandomScenario returns a random scenario for seed: one to three pairs of
// random sizes and partition counts, random fault rates, a random match and
// due rule, and a ledger every other seed.
func RandomScenario(seed int64) Scenario {
	r := rand.New(rand.NewPCG(uint64(seed), 0xc0ffee))
	sc := Scenario{
		Seed:            seed,
		Match:           []string{MatchRecord, MatchKey, MatchHeader}[r.IntN(3)],
		LossRate:        []float64{0, 0.02, 0.1}[r.IntN(3)],
		DupRate:         []float64{0, 0.02, 0.1}[r.IntN(3)],
		PendingRate:     []float64{0, 0.1, 0.3}[r.IntN(3)],
		PendingCopyRate: r.Float64(),
		Repeats:         r.IntN(4),
		NoIdentity:      r.IntN(3),
		Unexpected:      r.IntN(3),
	}
	if r.IntN(2) == 0 {
		sc.Group = fmt.Sprintf("copier-%d", seed)
	}
	sc.ReportUnexpected = r.IntN(2) == 0
	for i := range 1 + r.IntN(3) {
		p := int32(1 + r.IntN(4))
		sp := p
		if r.IntN(3) == 0 {
			sp = int32(1 + r.IntN(4))
		}
		sc.Pairs = append(sc.Pairs, PairSpec{Name: fmt.Sprintf("pair%d", i), Source: fmt.Sprintf("src%d", i), Sink: fmt.Sprintf("dst%d", i),
			Partitions: p, SinkPartitions: sp, Records: 20 + r.IntN(300)})
	}
	if seed%2 == 0 {
		format := FormatNative
		if sc.Match != MatchHeader && r.IntN(2) == 0 {
			format = FormatVerifiableProducer
		}
		sc.Ledger = &LedgerSpec{Format: format, AckedGone: r.IntN(3), AckedPastEnd: r.IntN(2), FailedPresent: r.IntN(4),
			FailedAbsent: r.IntN(3), Duplicated: r.IntN(3), Expire: r.IntN(5)}
	}
	return sc
}

// DemoScenario is the in-process demo's copy pipeline: two mirrored
// topics losing and duplicating records in an outage, records still on
// their way, and the ledger of the first topic's producer.
func DemoScenario(seed int64) Scenario {
	return Scenario{
		Seed: seed, Match: MatchRecord,
		Pairs: []PairSpec{
			{Name: "orders", Source: "orders", Sink: "dr.orders", Partitions: 3, SinkPartitions: 3, Records: 600},
			{Name: "payments", Source: "payments", Sink: "dr.payments", Partitions: 2, SinkPartitions: 2, Records: 300},
		},
		LossRate: 0.01, DupRate: 0.02, PendingRate: 0.05, PendingCopyRate: 0.5, Repeats: 2, Unexpected: 1,
		Ledger: &LedgerSpec{Format: FormatVerifiableProducer, AckedGone: 2, AckedPastEnd: 1, FailedPresent: 3, FailedAbsent: 2, Duplicated: 1, Expire: 3},
	}
}
