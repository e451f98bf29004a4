package lossaudit.testbed;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Set;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.kafka.common.errors.SerializationException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * Generic Avro values in the Confluent wire format (magic 0, 4-byte big-endian
 * schema id, Avro binary), registering subjects "<topic>-value" on first use
 * like Confluent's serializer with auto.register.schemas.
 *
 * <p>Fault injection: when dropBeforeStore is non-empty, values read from a
 * repartition topic whose selected key (customerId) is in it deserialize to
 * null, which the reduce skips: the record is in the repartition topic and its
 * update never reaches the store or its changelog.
 */
final class AvroSerde implements Serde<GenericRecord> {
    private final Registry registry;
    private final String input;
    private final Set<String> dropBeforeStore;
    private final GroundTruth truth;

    AvroSerde(Registry registry, String input, Set<String> dropBeforeStore, GroundTruth truth) {
        this.registry = registry;
        this.input = input;
        this.dropBeforeStore = dropBeforeStore;
        this.truth = truth;
    }

    @Override
    public Serializer<GenericRecord> serializer() {
        return (topic, rec) -> {
            if (rec == null) {
                return null;
            }
            Schema s = rec.getSchema();
            int id = registry.register(topic + "-value", s);
            ByteArrayOutputStream out = new ByteArrayOutputStream(128);
            out.write(0);
            out.write(ByteBuffer.allocate(4).putInt(id).array(), 0, 4);
            BinaryEncoder enc = EncoderFactory.get().binaryEncoder(out, null);
            try {
                new GenericDatumWriter<GenericRecord>(s).write(rec, enc);
                enc.flush();
            } catch (IOException e) {
                throw new SerializationException("serializing for " + topic + ": " + e, e);
            }
            return out.toByteArray();
        };
    }

    @Override
    public Deserializer<GenericRecord> deserializer() {
        return (topic, data) -> {
            if (data == null) {
                return null;
            }
            if (data.length < 5 || data[0] != 0) {
                throw new SerializationException("not Confluent-framed Avro in " + topic);
            }
            int id = ByteBuffer.wrap(data, 1, 4).getInt();
            Schema s = registry.byId(id);
            BinaryDecoder dec = DecoderFactory.get().binaryDecoder(data, 5, data.length - 5, null);
            GenericRecord rec;
            try {
                rec = new GenericDatumReader<GenericRecord>(s).read(null, dec);
            } catch (IOException e) {
                throw new SerializationException("deserializing from " + topic + " with schema " + id + ": " + e, e);
            }
            if (!dropBeforeStore.isEmpty() && topic.endsWith("-repartition")) {
                String key = String.valueOf(rec.get("customerId"));
                if (dropBeforeStore.contains(key)) {
                    truth.drop("before_store", input, key, rec, topic);
                    return null;
                }
            }
            return rec;
        };
    }
}
