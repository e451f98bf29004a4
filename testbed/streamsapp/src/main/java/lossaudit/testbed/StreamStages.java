package lossaudit.testbed;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StreamPartitioner;

/**
 * The per-record stream stages of the test bed (TOPOLOGY=enrich or passthrough), String
 * serdes, no schemas:
 *
 * <ul>
 *   <li>enrich: the first of INPUT_TOPICS (events) --leftJoin(table of the second)--> OUTPUT_TOPIC,
 *       each output value the event's value, a space and the table's value (or "null");
 *   <li>passthrough: the first two of INPUT_TOPICS, each --mapValues(v + " (a)" / " (b)")--, merged
 *       --> OUTPUT_TOPIC.
 * </ul>
 *
 * DROP_VALUES ("e-3,e-7") loses the records whose input value is listed, before OUTPUT_TOPIC and
 * without a node of its own in the topology: the sink's partitioner sends them to no partition
 * (KIP-837, RecordCollectorImpl#send drops them), so the clean and the lossy application print
 * the same describe() text.
 */
final class StreamStages {
    private StreamStages() {}

    static Topology build(String kind, List<String> inputs, String output, Set<String> drop) {
        StreamsBuilder builder = new StreamsBuilder();
        Consumed<String, String> strings = Consumed.with(Serdes.String(), Serdes.String());
        Produced<String, String> out = Produced.with(Serdes.String(), Serdes.String()).withStreamPartitioner(new DropValues(drop));
        switch (kind) {
            case "enrich": {
                KTable<String, String> table = builder.table(inputs.get(1), strings);
                builder.stream(inputs.get(0), strings)
                        .leftJoin(table, (v, t) -> v + " " + t)
                        .to(output, out);
                break;
            }
            case "passthrough": {
                KStream<String, String> a = builder.stream(inputs.get(0), strings).mapValues(v -> v + " (a)");
                KStream<String, String> b = builder.stream(inputs.get(1), strings).mapValues(v -> v + " (b)");
                a.merge(b).to(output, out);
                break;
            }
            default:
                throw new IllegalArgumentException("TOPOLOGY: not a stream stage: " + kind);
        }
        return builder.build();
    }

    /**
     * Sends the records whose value begins with a listed input value and a space to no
     * partition; every other record goes where the default partitioner sends it. Both
     * partition() (abstract up to 3.x) and partitions() (abstract from 4.0) are implemented,
     * without @Override, so that the class compiles against either.
     */
    static final class DropValues implements StreamPartitioner<String, String> {
        private final Set<String> values;

        DropValues(Set<String> values) {
            this.values = values;
        }

        public Integer partition(String topic, String key, String value, int numPartitions) {
            return null;
        }

        public Optional<Set<Integer>> partitions(String topic, String key, String value, int numPartitions) {
            if (value != null && values.contains(value.split(" ", 2)[0])) {
                System.out.println("lossaudit-streamsapp: dropped " + value);
                return Optional.of(Set.of());
            }
            return Optional.empty();
        }
    }
}
