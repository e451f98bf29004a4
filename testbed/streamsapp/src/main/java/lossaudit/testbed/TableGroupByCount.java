package lossaudit.testbed;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.TimestampExtractor;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A table groupBy and count (TOPOLOGY=table-groupby): table(the first of INPUT_TOPICS, store
 * "profiles") --groupBy(value.region)--> count --> toStream --> OUTPUT_TOPIC (String keys, Long
 * counts). Input values are Avro records {id, region} (PROFILE) in the Confluent frame (magic byte
 * and 4-byte schema id, not looked up: the load generator writes PROFILE only); a null value
 * deletes the key (its group's count goes down).
 *
 * <p>TABLE_GROUPBY_OP picks the aggregation after the same groupBy: "" the count; "reduce" a
 * reduce with generated names (KTABLE-REDUCE-) keeping the newest Profile (the adder returns the
 * new value, the subtractor the aggregate: never null), output values the Profile bytes;
 * "aggregate" an aggregate named by Named.as("members-by-region") and
 * Materialized.as("region-members") keeping the sorted keys of the group's members (the key is
 * the id's suffix after its last '-' but one: "u-1-p-07" is p-07), whose subtractor returns null
 * when it removes the last member (a tombstone: the group restarts from the next member's own
 * timestamp), output values Strings.
 *
 * <p>A record whose id starts with "drop" is lost before the table: its timestamp extractor returns
 * -1, so Kafka Streams skips it ("Skipping record due to negative extracted timestamp") and commits
 * past it once a later record of its partition is processed, as StreamsApp#table does.
 */
final class TableGroupByCount {
    private TableGroupByCount() {}

    /** The value schema; the Go test writes the same text as schema id 1. */
    static final String PROFILE_TEXT = "{\"type\":\"record\",\"name\":\"Profile\",\"namespace\":\"lossaudit.testbed\",\"fields\":["
            + "{\"name\":\"id\",\"type\":\"string\"},{\"name\":\"region\",\"type\":\"string\"}]}";

    static final Schema PROFILE = new Schema.Parser().parse(PROFILE_TEXT);

    static Topology build(String input, String output, String op) {
        StreamsBuilder builder = new StreamsBuilder();
        TimestampExtractor dropping = (rec, partitionTime) ->
                rec.value() != null && decode((byte[]) rec.value()).get("id").toString().startsWith("drop") ? -1L : rec.timestamp();
        KGroupedTable<String, byte[]> grouped = builder.table(input, Consumed.with(Serdes.String(), Serdes.ByteArray()).withTimestampExtractor(dropping),
                        Materialized.<String, byte[], KeyValueStore<Bytes, byte[]>>as("profiles")
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.ByteArray()))
                .groupBy((k, v) -> KeyValue.pair(decode(v).get("region").toString(), v), Grouped.with(Serdes.String(), Serdes.ByteArray()));
        switch (op) {
            case "" -> grouped.count(Materialized.with(Serdes.String(), Serdes.Long()))
                    .toStream()
                    .to(output, Produced.with(Serdes.String(), Serdes.Long()));
            case "reduce" -> grouped.reduce((agg, v) -> v, (agg, old) -> agg)
                    .toStream()
                    .to(output, Produced.with(Serdes.String(), Serdes.ByteArray()));
            case "aggregate" -> {
                KTable<String, String> members = grouped.aggregate(() -> "",
                        (region, v, agg) -> withMember(agg, member(v), true),
                        (region, old, agg) -> withMember(agg, member(old), false),
                        Named.as("members-by-region"),
                        Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("region-members")
                                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
                members.toStream().to(output, Produced.with(Serdes.String(), Serdes.String()));
            }
            default -> throw new IllegalArgumentException("TABLE_GROUPBY_OP: want \"\", reduce or aggregate, got " + op);
        }
        return builder.build();
    }

    /** The input key a framed PROFILE value belongs to: its id's last two '-' parts ("p-07"). */
    static String member(byte[] v) {
        String id = decode(v).get("id").toString();
        int i = id.lastIndexOf('-', id.lastIndexOf('-') - 1);
        return id.substring(i + 1);
    }

    /**
     * The sorted, comma-separated member list agg with m added or removed; null (a tombstone) when
     * the last member is removed.
     */
    static String withMember(String agg, String m, boolean add) {
        java.util.TreeSet<String> set = new java.util.TreeSet<>();
        if (agg != null && !agg.isEmpty()) {
            set.addAll(java.util.Arrays.asList(agg.split(",")));
        }
        if (add) {
            set.add(m);
        } else {
            set.remove(m);
        }
        return set.isEmpty() ? null : String.join(",", set);
    }

    /** Decodes a framed PROFILE value. */
    static GenericRecord decode(byte[] v) {
        BinaryDecoder d = DecoderFactory.get().binaryDecoder(v, 5, v.length - 5, null);
        try {
            return new GenericDatumReader<GenericRecord>(PROFILE).read(null, d);
        } catch (IOException e) {
            throw new UncheckedIOException("decoding a Profile", e);
        }
    }
}
