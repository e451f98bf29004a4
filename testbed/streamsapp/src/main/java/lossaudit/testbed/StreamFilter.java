package lossaudit.testbed;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StreamPartitioner;

/**
 * A per-record stream stage with a filter and a re-key (TOPOLOGY=filter-rekey): the first of
 * INPUT_TOPICS --filter(amount > 100)--> --selectKey(customer)--> OUTPUT_TOPIC, String keys, values
 * Avro records {id, customer, amount} (EVENT) in the Confluent frame (magic byte and 4-byte schema
 * id, not looked up: the load generator writes EVENT only), written to OUTPUT_TOPIC unchanged.
 *
 * <p>DROP_VALUES ("e-3,e-7") loses the records whose id is listed, before OUTPUT_TOPIC and without a
 * node of its own: the sink's partitioner sends them to no partition (KIP-837), as in StreamStages.
 */
final class StreamFilter {
    private StreamFilter() {}

    /** The value schema; the Go test writes the same text as schema id 1. */
    static final String EVENT_TEXT = "{\"type\":\"record\",\"name\":\"Event\",\"namespace\":\"lossaudit.testbed\",\"fields\":["
            + "{\"name\":\"id\",\"type\":\"string\"},{\"name\":\"customer\",\"type\":\"string\"},{\"name\":\"amount\",\"type\":\"long\"}]}";

    static final Schema EVENT = new Schema.Parser().parse(EVENT_TEXT);

    static Topology build(List<String> inputs, String output, Set<String> drop) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(inputs.get(0), Consumed.with(Serdes.String(), Serdes.ByteArray()))
                .filter((k, v) -> (Long) decode(v).get("amount") > 100)
                .selectKey((k, v) -> decode(v).get("customer").toString())
                .to(output, Produced.with(Serdes.String(), Serdes.ByteArray()).withStreamPartitioner(new DropIds(drop)));
        return builder.build();
    }

    /** Decodes a framed EVENT value. */
    static GenericRecord decode(byte[] v) {
        BinaryDecoder d = DecoderFactory.get().binaryDecoder(v, 5, v.length - 5, null);
        try {
            return new GenericDatumReader<GenericRecord>(EVENT).read(null, d);
        } catch (IOException e) {
            throw new UncheckedIOException("decoding an Event", e);
        }
    }

    /**
     * Sends the records whose id is listed to no partition; every other record goes where the
     * default partitioner sends it (both partition() and partitions(), as StreamStages.DropValues).
     */
    static final class DropIds implements StreamPartitioner<String, byte[]> {
        private final Set<String> ids;

        DropIds(Set<String> ids) {
            this.ids = ids;
        }

        public Integer partition(String topic, String key, byte[] value, int numPartitions) {
            return null;
        }

        public Optional<Set<Integer>> partitions(String topic, String key, byte[] value, int numPartitions) {
            if (value != null && ids.contains(decode(value).get("id").toString())) {
                System.out.println("lossaudit-streamsapp: dropped " + decode(value).get("id"));
                return Optional.of(Set.of());
            }
            return Optional.empty();
        }
    }
}
