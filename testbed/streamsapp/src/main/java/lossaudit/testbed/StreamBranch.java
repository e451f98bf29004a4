package lossaudit.testbed;

import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A per-record stream stage split into branches (TOPOLOGY=branch): the first of INPUT_TOPICS,
 * values StreamFilter's EVENT, split(Named.as("route-")) into
 * <ul>
 *   <li>route-big: amount &gt; 150, mapped (mapValues);
 *   <li>route-medium: an even amount (the records route-big did not take), mapped;
 *   <li>route-small: amount &gt; 20, written to OUTPUT_TOPIC + "-other";
 *   <li>route-rest: the default branch, which goes nowhere (dropped);
 * </ul>
 * route-big and route-medium merged into OUTPUT_TOPIC. The values are written unchanged.
 *
 * <p>DROP_VALUES ("e-3,e-7") loses the records whose id is listed, before OUTPUT_TOPIC and without a
 * node of its own (StreamFilter.DropIds: the sink's partitioner sends them to no partition).
 */
final class StreamBranch {
    private StreamBranch() {}

    static long amount(byte[] v) {
        return (Long) StreamFilter.decode(v).get("amount");
    }

    static Topology build(List<String> inputs, String output, Set<String> drop) {
        StreamsBuilder builder = new StreamsBuilder();
        Map<String, KStream<String, byte[]>> branches = builder.stream(inputs.get(0), Consumed.with(Serdes.String(), Serdes.ByteArray()))
                .split(Named.as("route-"))
                .branch((k, v) -> amount(v) > 150, Branched.withFunction(s -> s.mapValues(v -> v.clone()), "big"))
                .branch((k, v) -> amount(v) % 2 == 0, Branched.withFunction(s -> s.mapValues(v -> v.clone()), "medium"))
                .branch((k, v) -> amount(v) > 20, Branched.withConsumer(
                        s -> s.to(output + "-other", Produced.with(Serdes.String(), Serdes.ByteArray())), "small"))
                .defaultBranch(Branched.withConsumer(s -> { }, "rest"));
        branches.get("route-big").merge(branches.get("route-medium"))
                .to(output, Produced.with(Serdes.String(), Serdes.ByteArray()).withStreamPartitioner(new StreamFilter.DropIds(drop)));
        return builder.build();
    }
}
