// Package sim is a faithful, deterministic simulation of the user story's
// Kafka Streams application on a real Kafka cluster (in tests and the demo,
// an in-process kfake cluster):
//
//	A --selectKey--> groupByKey --> reduce --> tA   (repartition + changelog)
//	B --selectKey--> groupByKey --> reduce --> tB
//	C --selectKey--> groupByKey --> reduce --> tC
//	tA.leftJoin(tB).leftJoin(tC).toStream().to(OUTPUT)     exactly_once_v2
//
// Run creates the topics with Kafka Streams' real names
// (<app>-KSTREAM-REDUCE-STATE-STORE-0000000002/9/16-repartition and
// -changelog, changelogs compacted), registers the Avro schemas in
// _schemas in Confluent's storage format, produces Avro inputs in the
// Confluent wire format (customerId a nullable string, a nested record, a
// long, a double, a timestamp-millis, an op enum; optionally through a
// transactional upstream producer that aborts some transactions), and
// then plays one
// stream thread under exactly_once_v2: every commit is one transaction of
// a transactional franz-go producer that holds the first hop (input
// records -> repartition records, same value bytes and timestamp, null
// keys/values and undecodable values dropped), the second hop (committed
// repartition records -> reduce stores; per-commit caching writes the
// latest value per key to the changelog and one join result per changed
// key to the output, with Kafka Streams' timestamp rules), and the
// group's offsets for inputs and repartition topics (AddOffsetsToTxn +
// TxnOffsetCommit, generation -1). Repartition topics are purged up to the
// committed offset every Scenario.PurgeEvery commits (DeleteRecords).
//
// Faults are injected deterministically (Scenario.Faults): updates lost
// before the repartition topic, before the store, before the output;
// updates that reach changelog/output only in aborted transactions (the
// retry skips them); KAFKA-17635 (records purged past the committed
// offset); and the things an audit must NOT report: lag at both hops,
// healthy abort-and-retry, null keys and values, undecodable values,
// tombstones, out-of-order and equal timestamps, right-only keys.
// Optionally transactions are left open on output partitions (stuck LSO),
// and KAFKA-17635 runs to its end (the task resumes past the purge).
// Run returns once the cluster shows the end state (group offsets stable,
// every other transaction's markers written).
//
// The expected audit result (Truth.Rows, Partitions, Counts) comes from an
// oracle that implements the audit semantics of docs/checks.md over the
// simulator's own record of what it produced, processed and wrote
// (committed or aborted, with the offsets the brokers assigned), never by
// reading the topics back. In demo mode (Scenario.LastUpdateOnly, used by
// DemoScenario) faults are placed on the newest update of distinct keys and
// validated with dry runs, so the expected findings are exactly the
// injected losses; in random mode (RandomScenario) faults hit random
// records and the oracle decides which become findings.
//
// Comparing an audit with a Truth: rows match on Kind, Stage, Input, Key,
// Topic, Partition, Offset, Timestamp, ExpectedTS, HasObserved and
// ObservedTS; Detail is only meaningful for changelog rows ("seen in
// repartition topic <t>[p]@<off>, lost before the store" or "repartition
// purged or not readable"); partition findings match on Kind, Topic and
// Partition. Expectation.Diff and Truth.Diff do exactly this comparison;
// Truth.WriteStory tells people what was injected (for the demo);
// Truth.Config builds the audit configuration.
package sim
