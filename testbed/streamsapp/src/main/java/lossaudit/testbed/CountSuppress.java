package lossaudit.testbed;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.processor.StreamPartitioner;

/**
 * TOPOLOGY=count-suppress: the count by a new key with a suppress before the output,
 * input --selectKey(value)--> groupByKey --> count --> suppress(untilTimeLimit(SUPPRESS_MS,
 * unbounded)) --> toStream --mapValues(String)--> output, String serdes, no schemas. Each key
 * waits in the suppress buffer (logged to its changelog) until stream time passes its first
 * buffered update by SUPPRESS_MS; then its newest count is emitted. DROP_BEFORE_OUTPUT
 * ("k1,k2") loses every emitted record of the listed keys: a partitioner that sends them to no
 * partition (KIP-837, Kafka Streams 3.4+), with no node of its own in the topology.
 */
final class CountSuppress {
    private CountSuppress() {
    }

    static Topology build(String input, String output, long suppressMillis, Set<String> drop) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v)
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .count(Materialized.with(Serdes.String(), Serdes.Long()))
                .suppress(Suppressed.untilTimeLimit(Duration.ofMillis(suppressMillis), Suppressed.BufferConfig.unbounded()))
                .toStream()
                .mapValues(String::valueOf)
                .to(output, Produced.with(Serdes.String(), Serdes.String()).withStreamPartitioner(new DropKeys(drop)));
        return builder.build();
    }

    /**
     * Sends the records of the listed keys to no partition (dropped by Kafka Streams), the
     * others where the default partitioner sends them. partition() (abstract up to 3.x) and
     * partitions() (abstract from 4.0) are both implemented, without @Override.
     */
    static final class DropKeys implements StreamPartitioner<String, String> {
        private final Set<String> keys;

        DropKeys(Set<String> keys) {
            this.keys = keys;
        }

        public Integer partition(String topic, String key, String value, int numPartitions) {
            return null;
        }

        public Optional<Set<Integer>> partitions(String topic, String key, String value, int numPartitions) {
            if (keys.contains(key)) {
                return Optional.of(Set.of());
            }
            return Optional.empty();
        }
    }
}
