package lossaudit.testbed;

import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.StreamPartitioner;

/**
 * TOPOLOGY=windowed-count: a time-windowed count by a new key, input --selectKey(value)-->
 * groupByKey --> windowedBy(TimeWindows.ofSizeAndGrace(WINDOW_SIZE_MS, WINDOW_GRACE_MS), hopping
 * by WINDOW_ADVANCE_MS when it is set and below the size, else tumbling) -->
 * count --> toStream --> output with the windowed key serde (TimeWindowedSerializer:
 * [key][8-byte window start]) and Long values, emitted eagerly. Records older than stream time
 * minus grace are dropped by Kafka Streams as late. DROP_COUNT ("k1,k2") loses the first update
 * of each listed key (the window's count stays one short; its timestamp still moves), as
 * CountChangelog does: an aggregate, which describe() prints like count(). DROP_BEFORE_OUTPUT
 * ("k1,k2") loses every output record of the listed keys: a partitioner that sends them to no
 * partition (KIP-837), with no node of its own in the topology. WINDOW_EMIT=final (emitFinal)
 * puts suppress(Suppressed.untilWindowCloses(unbounded())) between the count and toStream: each
 * window reaches the output once, when it closes; DROP_BEFORE_OUTPUT then loses the final
 * results of the listed keys' closed windows. WINDOW_EMIT=close (emit "close") sets
 * emitStrategy(EmitStrategy.onWindowClose()) on the windowed stream instead (KIP-825: no node in
 * describe(); each window is emitted once from the window store when stream time minus grace
 * passes its end, and the close time emitted up to is committed in the offsets' metadata).
 */
final class WindowedCount {
    private WindowedCount() {
    }

    static Topology build(String input, String output, long sizeMillis, long advanceMillis, long graceMillis, Set<String> drop, Set<String> dropOutput, String emit) {
        TimeWindows windows = TimeWindows.ofSizeAndGrace(Duration.ofMillis(sizeMillis), Duration.ofMillis(graceMillis));
        if (advanceMillis > 0 && advanceMillis < sizeMillis) {
            windows = windows.advanceBy(Duration.ofMillis(advanceMillis));
        }
        StreamsBuilder builder = new StreamsBuilder();
        Set<String> dropped = ConcurrentHashMap.newKeySet();
        TimeWindowedKStream<String, String> windowed = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v)
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .windowedBy(windows);
        if ("close".equals(emit)) {
            windowed = windowed.emitStrategy(EmitStrategy.onWindowClose());
        }
        KTable<Windowed<String>, Long> counts;
        if (drop.isEmpty()) {
            counts = windowed.count(Materialized.with(Serdes.String(), Serdes.Long()));
        } else {
            counts = windowed.aggregate(() -> 0L, (k, v, agg) -> drop.contains(k) && dropped.add(k) ? agg : agg + 1,
                    Materialized.with(Serdes.String(), Serdes.Long()));
        }
        if ("final".equals(emit)) {
            counts = counts.suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));
        }
        Produced<Windowed<String>, Long> produced = Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, sizeMillis), Serdes.Long());
        if (!dropOutput.isEmpty()) {
            produced = produced.withStreamPartitioner(new DropKeys(dropOutput));
        }
        counts.toStream().to(output, produced);
        return builder.build();
    }

    /**
     * Sends the windows of the listed keys to no partition (dropped by Kafka Streams), the
     * others where the producer's partitioner sends them. partition() (abstract up to 3.x) and
     * partitions() (abstract from 4.0) are both implemented, without @Override.
     */
    static final class DropKeys implements StreamPartitioner<Windowed<String>, Long> {
        private final Set<String> keys;

        DropKeys(Set<String> keys) {
            this.keys = keys;
        }

        public Integer partition(String topic, Windowed<String> key, Long value, int numPartitions) {
            return null;
        }

        public Optional<Set<Integer>> partitions(String topic, Windowed<String> key, Long value, int numPartitions) {
            if (keys.contains(key.key())) {
                return Optional.of(Set.of());
            }
            return Optional.empty();
        }
    }
}
