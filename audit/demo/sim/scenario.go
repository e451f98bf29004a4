package sim

import (
	"fmt"
	"math/rand"
	"time"
)

// Scenario describes one simulated run of the user story's application: the
// data produced to the three inputs, how the application processes it, and
// the faults injected on the way. The zero value of every field means "use
// the default" (see Defaults); Seed makes everything reproducible.
type Scenario struct {
	// AppID is the Kafka Streams application.id: consumer group and
	// internal topic prefix. Default "lossaudit-demo".
	AppID string
	// TopicPrefix names the inputs <prefix>A, <prefix>B, <prefix>C.
	// Default "topic".
	TopicPrefix string
	// Output is the sink topic of the join. Default "joined".
	Output string
	// Partitions of every topic (inputs, internal, output). Default 3.
	Partitions int
	// Keys is the number of distinct customer ids of input a (the left
	// side). Default 1000.
	Keys int
	// RightOnlyKeys are extra customer ids that only inputs b and c carry:
	// they reach tB/tC but never the output. Default Keys/20.
	RightOnlyKeys int
	// RecordsPerInput is the number of records produced to each input.
	// Default 5000.
	RecordsPerInput int
	// Rounds is the number of commit rounds (transactions) the first hop
	// needs for the whole input; one more drains the repartition topics.
	// Default 20.
	Rounds int
	// Seed seeds every random choice.
	Seed int64
	// BaseTime is the timestamp of the first input record (default
	// 2026-11-29T10:00:00Z); the inputs span about RecordsPerInput x 20 ms.
	// Real brokers reject timestamps more than an hour ahead (Kafka 4's
	// log.message.timestamp.after.max.ms) and delete data older than
	// retention.ms: set it near the present for them.
	BaseTime time.Time
	// NullKeyRate is the fraction of input records whose customerId is
	// null (selectKey returns null: dropped by design).
	NullKeyRate float64
	// NullValueRate is the fraction of input records with a null value
	// (dropped by design).
	NullValueRate float64
	// CorruptRate is the fraction of input records whose value is framed
	// but not decodable (dropped by LogAndContinueExceptionHandler).
	CorruptRate float64
	// DeleteRate is the fraction of (input, key) pairs whose newest record
	// (by timestamp) is a DELETE: the reducer returns null and the store
	// writes a tombstone.
	DeleteRate float64
	// OutOfOrderRate is the fraction of records whose timestamp is up to
	// 10 s older than the previous one of the same input.
	OutOfOrderRate float64
	// EqualTSRate is the fraction of records with the same timestamp as
	// the previous one of the same input.
	EqualTSRate float64
	// InputTxnSize > 0 produces the inputs with a transactional upstream
	// producer, InputTxnSize records of one partition per transaction
	// (markers take offsets); InputAbortRate of those transactions are
	// aborted. Aborted input records are invisible to the application and
	// to the audit (neither processed nor scanned).
	InputTxnSize   int
	InputAbortRate float64
	// PurgeEvery is the number of rounds between repartition purges
	// (DeleteRecords up to the committed offset, like
	// repartition.purge.interval.ms). 0 never purges.
	PurgeEvery int
	// Faults are the losses and disturbances to inject.
	Faults Faults
	// LastUpdateOnly (demo mode) aims every keyed fault at the newest
	// update of a distinct (input, key) and validates the choice with dry
	// runs, so that the expected findings are exactly the injected list.
	// Otherwise faults hit random processed records and the oracle decides
	// what becomes a finding.
	LastUpdateOnly bool
}

// Faults lists what to inject. Counts of keyed faults are numbers of
// targeted input records (in demo mode: of distinct (input, key) pairs).
type Faults struct {
	// BeforeRepartition: the first hop commits the input offset but never
	// writes the repartition record.
	BeforeRepartition int
	// BeforeStore: the second hop consumes the repartition record (and
	// commits past it) without applying it to the store.
	BeforeStore int
	// BeforeOutput: the store and changelog take the update, the output
	// write of that commit for the key is lost.
	BeforeOutput int
	// AbortedChangelog: the update reaches changelog and output only in a
	// transaction that is aborted; the retry skips the record.
	AbortedChangelog int
	// AbortedOutput: the update reaches the output only in an aborted
	// transaction; the retry writes the changelog but not the output.
	AbortedOutput int
	// Purged17635 is the number of repartition partitions purged past the
	// group's committed offset at the end (KAFKA-17635); they are chosen
	// among the lagging repartition partitions.
	Purged17635 int
	// PurgedRecords is how many unprocessed records each such purge
	// deletes (default 3).
	PurgedRecords int
	// Resume17635 lets the purged tasks go on, as the bug does: reset to
	// the new log start, they process the rest of their partition in one
	// more commit. The lost records stay lost, but the partition no longer
	// shows the purged_past_commit signature.
	Resume17635 bool
	// HealthyRetries is the number of rounds whose transaction is aborted
	// and then retried successfully (not a loss).
	HealthyRetries int
	// InputLagPartitions input partitions keep their last InputLag records
	// unprocessed by the first hop (pending, not a loss).
	InputLagPartitions, InputLag int
	// RepartitionLagPartitions repartition partitions stop being processed
	// RepartitionLagRounds rounds before the end: their tail is pending at
	// the second hop (not a loss).
	RepartitionLagPartitions, RepartitionLagRounds int
	// HangingTxns output partitions (0, 1, ...) are left with an open
	// transaction holding one record when Run returns: their LSO stays
	// below the high watermark until the transaction times out
	// (HangingTimeout, default 10 minutes; the broker's
	// transaction.max.timeout.ms must allow it). An audit reports
	// stuck_lso for them and withholds the output rows of their keys.
	HangingTxns    int
	HangingTimeout time.Duration
}

// withDefaults returns sc with zero fields replaced by defaults.
func (sc Scenario) withDefaults() Scenario {
	if sc.AppID == "" {
		sc.AppID = "lossaudit-demo"
	}
	if sc.TopicPrefix == "" {
		sc.TopicPrefix = "topic"
	}
	if sc.Output == "" {
		sc.Output = "joined"
	}
	if sc.Partitions <= 0 {
		sc.Partitions = 3
	}
	if sc.Keys <= 0 {
		sc.Keys = 1000
	}
	if sc.RightOnlyKeys < 0 {
		sc.RightOnlyKeys = 0
	} else if sc.RightOnlyKeys == 0 {
		sc.RightOnlyKeys = sc.Keys / 20
	}
	if sc.RecordsPerInput <= 0 {
		sc.RecordsPerInput = 5000
	}
	if sc.Rounds <= 0 {
		sc.Rounds = 20
	}
	if sc.Faults.PurgedRecords <= 0 {
		sc.Faults.PurgedRecords = 3
	}
	if sc.BaseTime.IsZero() {
		sc.BaseTime = time.UnixMilli(defaultBaseTimeMs).UTC()
	}
	if sc.Faults.HangingTimeout <= 0 {
		sc.Faults.HangingTimeout = 10 * time.Minute
	}
	if sc.Faults.RepartitionLagPartitions > 0 && sc.Faults.RepartitionLagRounds <= 0 {
		sc.Faults.RepartitionLagRounds = 1
	}
	return sc
}

// validate rejects scenarios the simulator cannot run.
func (sc Scenario) validate() error {
	switch {
	case sc.Partitions > 1000:
		return fmt.Errorf("scenario: %d partitions is more than the simulator supports (1000)", sc.Partitions)
	case sc.Rounds > sc.RecordsPerInput:
		return fmt.Errorf("scenario: %d rounds for %d records per input", sc.Rounds, sc.RecordsPerInput)
	case sc.Faults.Purged17635 > sc.Faults.RepartitionLagPartitions:
		return fmt.Errorf("scenario: %d KAFKA-17635 purges need as many lagging repartition partitions (have %d)",
			sc.Faults.Purged17635, sc.Faults.RepartitionLagPartitions)
	case sc.Faults.HangingTxns > sc.Partitions:
		return fmt.Errorf("scenario: %d hanging transactions for %d output partitions", sc.Faults.HangingTxns, sc.Partitions)
	case sc.Faults.RepartitionLagRounds >= sc.Rounds:
		return fmt.Errorf("scenario: repartition lag of %d rounds with only %d rounds", sc.Faults.RepartitionLagRounds, sc.Rounds)
	}
	for _, r := range []float64{sc.NullKeyRate, sc.NullValueRate, sc.CorruptRate, sc.DeleteRate, sc.OutOfOrderRate, sc.EqualTSRate, sc.InputAbortRate} {
		if r < 0 || r > 1 {
			return fmt.Errorf("scenario: rate %v outside [0, 1]", r)
		}
	}
	return nil
}

// DemoScenario is the scenario of `lossaudit demo`: three inputs with a few
// thousand keys and 20k records each, an outage that loses a known set of
// updates at each stage (some only in aborted transactions, a KAFKA-17635
// purge), healthy retries, lag at both hops, null keys, null values,
// undecodable values, tombstones, out-of-order and equal timestamps.
// Every injected loss hits the newest update of its (input, key), so the
// expected findings are exactly Truth.Injected (see Truth.Rows).
func DemoScenario(seed int64) Scenario {
	return Scenario{
		AppID: "lossaudit-demo", TopicPrefix: "topic", Output: "joined",
		Partitions: 3, Keys: 3000, RightOnlyKeys: 150, RecordsPerInput: 20000, Rounds: 20,
		Seed:        seed,
		NullKeyRate: 0.01, NullValueRate: 0.005, CorruptRate: 0.002, DeleteRate: 0.02,
		OutOfOrderRate: 0.05, EqualTSRate: 0.05, PurgeEvery: 5,
		InputTxnSize: 250, InputAbortRate: 0.05,
		Faults: Faults{
			BeforeRepartition: 2, BeforeStore: 3, BeforeOutput: 3, AbortedChangelog: 2, AbortedOutput: 2,
			Purged17635: 1, PurgedRecords: 3, HealthyRetries: 2,
			InputLagPartitions: 2, InputLag: 40,
			RepartitionLagPartitions: 2, RepartitionLagRounds: 1,
		},
		LastUpdateOnly: true,
	}
}

// CleanScenario is a small healthy pipeline: lag, retries, null keys and
// values, tombstones, but no loss. Its expected findings are empty.
func CleanScenario(seed int64) Scenario {
	return Scenario{
		Partitions: 3, Keys: 200, RecordsPerInput: 2000, Rounds: 8, Seed: seed,
		NullKeyRate: 0.02, NullValueRate: 0.01, CorruptRate: 0.01, DeleteRate: 0.05,
		OutOfOrderRate: 0.1, EqualTSRate: 0.1, PurgeEvery: 3,
		InputTxnSize: 50, InputAbortRate: 0.1,
		Faults: Faults{HealthyRetries: 2, InputLagPartitions: 1, InputLag: 10,
			RepartitionLagPartitions: 1, RepartitionLagRounds: 1},
	}
}

// RandomScenario draws a small random pipeline with random injected
// losses, for property tests: the findings of an audit must equal the
// oracle's Truth.Rows exactly. Sizes stay small (hundreds of records) so
// a run on kfake takes well under a second.
func RandomScenario(seed int64) Scenario {
	rng := rand.New(rand.NewSource(seed))
	parts := 1 + rng.Intn(4)
	rounds := 2 + rng.Intn(6)
	sc := Scenario{
		AppID:           fmt.Sprintf("app-%d", seed),
		TopicPrefix:     fmt.Sprintf("s%d-topic", seed),
		Output:          fmt.Sprintf("s%d-joined", seed),
		Partitions:      parts,
		Keys:            3 + rng.Intn(40),
		RightOnlyKeys:   rng.Intn(5) - 1,
		RecordsPerInput: 30 + rng.Intn(300),
		Rounds:          rounds,
		Seed:            seed,
		NullKeyRate:     rng.Float64() * 0.1,
		NullValueRate:   rng.Float64() * 0.05,
		CorruptRate:     rng.Float64() * 0.03,
		DeleteRate:      rng.Float64() * 0.2,
		OutOfOrderRate:  rng.Float64() * 0.3,
		EqualTSRate:     rng.Float64() * 0.3,
		PurgeEvery:      rng.Intn(4),
		Faults: Faults{
			BeforeRepartition: rng.Intn(3), BeforeStore: rng.Intn(4), BeforeOutput: rng.Intn(4),
			AbortedChangelog: rng.Intn(3), AbortedOutput: rng.Intn(3),
			HealthyRetries:     rng.Intn(3),
			InputLagPartitions: rng.Intn(parts + 1), InputLag: rng.Intn(10),
		},
	}
	if rng.Intn(2) == 0 {
		sc.InputTxnSize = 1 + rng.Intn(40)
		sc.InputAbortRate = rng.Float64() * 0.3
	}
	if rng.Intn(2) == 0 {
		sc.Faults.RepartitionLagPartitions = 1 + rng.Intn(parts)
		sc.Faults.RepartitionLagRounds = 1
		sc.Faults.Purged17635 = rng.Intn(2)
		sc.Faults.PurgedRecords = 1 + rng.Intn(5)
		sc.Faults.Resume17635 = rng.Intn(2) == 0
	}
	return sc
}
