package lossaudit.testbed;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;

/**
 * TOPOLOGY=count-changelog: the count by a new key that ends in its changelog, input
 * --selectKey(value)--> groupByKey --> count, and nothing reads the table (describe() prints
 * {@code --> none}). DROP_COUNT ("k1,k2") loses the first update of each listed key, as
 * StreamsApp#count does.
 */
final class CountChangelog {
    private CountChangelog() {
    }

    static Topology build(String input, Set<String> drop) {
        StreamsBuilder builder = new StreamsBuilder();
        Set<String> dropped = ConcurrentHashMap.newKeySet();
        var grouped = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v)
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        if (drop.isEmpty()) {
            grouped.count(Materialized.with(Serdes.String(), Serdes.Long()));
        } else {
            grouped.aggregate(() -> 0L, (k, v, agg) -> drop.contains(k) && dropped.add(k) ? agg : agg + 1,
                    Materialized.with(Serdes.String(), Serdes.Long()));
        }
        return builder.build();
    }
}
