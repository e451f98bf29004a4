package lossaudit.testbed;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.avro.Schema;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A minimal stand-in for Confluent Schema Registry that keeps its state in the
 * registry's own storage topic (_schemas): ids are global per distinct schema
 * (same schema => same id), versions are per subject.
 */
final class Registry implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String bootstrap;
    private final String topic;
    private final KafkaProducer<String, String> producer;
    private final Properties client;
    private final Map<String, Integer> idBySchema = new HashMap<>();
    private final Map<Integer, Schema> schemaById = new HashMap<>();
    private final Map<String, Map<String, Integer>> versionBySubjectSchema = new HashMap<>();
    private final Map<String, Integer> maxVersion = new HashMap<>();
    private int maxId;

    Registry(String bootstrap, String topic, Properties client) {
        this.bootstrap = bootstrap;
        this.topic = topic;
        this.client = client;
        Properties p = new Properties();
        p.putAll(client);
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("client.id", "lossaudit-testbed-registry");
        producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    /** Reads the whole storage topic again. */
    synchronized void load() {
        Properties p = new Properties();
        p.putAll(client);
        p.put("bootstrap.servers", bootstrap);
        p.put("enable.auto.commit", "false");
        p.put("client.id", "lossaudit-testbed-registry-reader");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            while (c.position(tp) < end) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    apply(r.key(), r.value());
                }
            }
        }
    }

    private void apply(String key, String value) {
        if (key == null || value == null) {
            return;
        }
        try {
            JsonNode k = JSON.readTree(key);
            if (!"SCHEMA".equals(k.path("keytype").asText())) {
                return;
            }
            JsonNode v = JSON.readTree(value);
            if (v.path("deleted").asBoolean(false)) {
                return;
            }
            String subject = v.path("subject").asText();
            int version = v.path("version").asInt();
            int id = v.path("id").asInt();
            Schema s = new Schema.Parser().parse(v.path("schema").asText());
            String canon = s.toString();
            idBySchema.put(canon, id);
            schemaById.put(id, s);
            versionBySubjectSchema.computeIfAbsent(subject, x -> new HashMap<>()).put(canon, version);
            maxVersion.merge(subject, version, Math::max);
            maxId = Math.max(maxId, id);
        } catch (Exception e) {
            System.err.println("registry: skipping unreadable _schemas record " + key + ": " + e);
        }
    }

    /** Returns the id of schema under subject, registering it (writing to _schemas) when new. */
    synchronized int register(String subject, Schema schema) {
        String canon = schema.toString();
        Integer version = versionBySubjectSchema.getOrDefault(subject, Map.of()).get(canon);
        Integer id = idBySchema.get(canon);
        if (version != null && id != null) {
            return id;
        }
        if (id == null) {
            id = maxId + 1;
        }
        int v = maxVersion.getOrDefault(subject, 0) + 1;
        ObjectNode key = JSON.createObjectNode();
        key.put("keytype", "SCHEMA");
        key.put("subject", subject);
        key.put("version", v);
        key.put("magic", 1);
        ObjectNode val = JSON.createObjectNode();
        val.put("subject", subject);
        val.put("version", v);
        val.put("id", id);
        val.put("schema", canon);
        val.put("deleted", false);
        try {
            producer.send(new ProducerRecord<>(topic, 0, key.toString(), val.toString())).get();
        } catch (Exception e) {
            throw new IllegalStateException("registering " + subject + " in " + topic + ": " + e, e);
        }
        apply(key.toString(), val.toString());
        System.out.println("registry: registered " + subject + " version " + v + " id " + id);
        return id;
    }

    /** Returns the schema with the given id, re-reading the topic once when unknown. */
    synchronized Schema byId(int id) {
        Schema s = schemaById.get(id);
        if (s == null) {
            load();
            s = schemaById.get(id);
        }
        if (s == null) {
            throw new IllegalStateException("schema id " + id + " not found in " + topic);
        }
        return s;
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(5));
    }
}
