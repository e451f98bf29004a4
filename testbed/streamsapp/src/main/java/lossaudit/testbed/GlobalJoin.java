package lossaudit.testbed;

import java.util.List;
import java.util.Set;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Produced;

/**
 * A KStream-GlobalKTable left join on a per-record stream stage (TOPOLOGY=global-join): the first
 * of INPUT_TOPICS (orders: String keys, values StreamFilter's EVENT {id, customer, amount}) left-joined
 * with a GlobalKTable of the second (customers: String key = customer id, String value), the key
 * mapper taking the order's customer (null for a null value: Kafka Streams calls it before dropping
 * such a record), then mapValues into OUTPUT_TOPIC. The joiner returns the order's value unchanged,
 * whether the customer exists or not, so the output's values are the orders'.
 *
 * <p>DROP_VALUES ("e-3,e-7") loses the records whose id is listed, before OUTPUT_TOPIC and without a
 * node of its own (StreamFilter.DropIds: the sink's partitioner sends them to no partition).
 */
final class GlobalJoin {
    private GlobalJoin() {}

    static Topology build(List<String> inputs, String output, Set<String> drop) {
        StreamsBuilder builder = new StreamsBuilder();
        GlobalKTable<String, String> customers = builder.globalTable(inputs.get(1), Consumed.with(Serdes.String(), Serdes.String()));
        builder.stream(inputs.get(0), Consumed.with(Serdes.String(), Serdes.ByteArray()))
                .leftJoin(customers,
                        (k, v) -> v == null ? null : StreamFilter.decode(v).get("customer").toString(),
                        (order, customer) -> order)
                .mapValues(v -> v.clone())
                .to(output, Produced.with(Serdes.String(), Serdes.ByteArray()).withStreamPartitioner(new StreamFilter.DropIds(drop)));
        return builder.build();
    }
}
