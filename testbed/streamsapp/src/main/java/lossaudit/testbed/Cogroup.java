package lossaudit.testbed;

import java.util.Set;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * TOPOLOGY=cogroup: two grouped streams cogrouped into one aggregate, String serdes, no schemas.
 * The first of INPUT_TOPICS is grouped on its own key (groupByKey: no repartition topic), the
 * second by a new key, its value (groupBy: selectKey and a repartition topic named after the
 * store); the aggregate sums 1 for each record of the first input and 1000 for each of the
 * second (a Long), and its table goes toStream --mapValues(String)--> OUTPUT_TOPIC.
 *
 * <p>Injected loss, each known to the test exactly: a record of the first input whose value
 * starts with "drop:" is lost before the aggregate (its timestamp extractor returns -1, so
 * Kafka Streams skips it, RecordQueue "Skipping record due to negative extracted timestamp", and
 * commits past it once a later record of its partition is processed); DROP_BEFORE_OUTPUT
 * ("k1,k2") loses every output record of the listed keys (a partitioner that sends them to no
 * partition, KIP-837, with no node of its own in the topology).
 */
final class Cogroup {
    private Cogroup() {
    }

    static Topology build(String direct, String rekeyed, String output, Set<String> dropOutput) {
        StreamsBuilder builder = new StreamsBuilder();
        TimestampExtractor dropping = (rec, partitionTime) ->
                String.valueOf(rec.value()).startsWith("drop:") ? -1L : rec.timestamp();
        KGroupedStream<String, String> own = builder.stream(direct,
                        Consumed.with(Serdes.String(), Serdes.String()).withTimestampExtractor(dropping))
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        KGroupedStream<String, String> byValue = builder.stream(rekeyed, Consumed.with(Serdes.String(), Serdes.String()))
                .groupBy((k, v) -> v, Grouped.with(Serdes.String(), Serdes.String()));
        own.<Long>cogroup((k, v, agg) -> agg + 1)
                .cogroup(byValue, (k, v, agg) -> agg + 1000)
                .aggregate(() -> 0L, Materialized.with(Serdes.String(), Serdes.Long()))
                .toStream()
                .mapValues(String::valueOf)
                .to(output, Produced.with(Serdes.String(), Serdes.String()).withStreamPartitioner(new CountSuppress.DropKeys(dropOutput)));
        return builder.build();
    }
}
