package lossaudit.testbed;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericRecord;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.errors.LogAndContinueExceptionHandler;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Reducer;
import org.apache.kafka.streams.processor.StreamPartitioner;
import org.apache.kafka.streams.processor.TimestampExtractor;

/**
 * The Kafka Streams application of the audited pipeline (docs/topology.md):
 * A, B, C --selectKey(customerId)--> groupByKey --> reduce --> tA, tB, tC;
 * tA.leftJoin(tB).leftJoin(tC).toStream().to(OUTPUT).
 * JOIN_TYPE (inner, left or outer; default left) picks the KTable-KTable join
 * of both links of the chain: join, leftJoin or outerJoin (whose results may
 * lack a, so they are written with Schemas.JOINED_OUTER).
 *
 * <p>Configuration comes from system properties or, failing that, environment
 * variables of the same name: BOOTSTRAP_SERVERS, APPLICATION_ID, INPUT_TOPICS
 * (three, comma separated, in join order a,b,c), OUTPUT_TOPIC, STATE_DIR,
 * TOPOLOGY_FILE, GROUND_TRUTH_FILE, SCHEMAS_TOPIC, and the fault injection
 * switches DROP_BEFORE_STORE ("a:k1,k2;c:k3") and DROP_BEFORE_OUTPUT ("k4,k5"),
 * TOMBSTONE_NOTE (a reduce of input a whose new value has this note returns null),
 * CONSUMER_SESSION_TIMEOUT_MS (optional consumer session timeout),
 * REPARTITION_PURGE_INTERVAL_MS (optional; default 30 s), CLIENT_PROPERTIES
 * (optional: a properties file whose entries, e.g. security.protocol and
 * sasl.jaas.config, every client of the application gets).
 *
 * <p>TOPOLOGY=count runs a count by a new key instead: the first of INPUT_TOPICS
 * --selectKey(value)--> groupByKey --> count --> toStream --mapValues(String)--> OUTPUT_TOPIC,
 * String serdes, no schemas; DROP_COUNT ("k1,k2") loses the first update of each listed
 * key (the aggregate does not count it), so its count ends one short.
 *
 * <p>TOPOLOGY=copy runs a stateless application instead: the first of
 * INPUT_TOPICS --map(value + " (copied)")--> OUTPUT_TOPIC, with String serdes
 * and no schemas. PROCESSING_GUARANTEE (default exactly_once_v2) and
 * COMMIT_INTERVAL_MS (optional) apply to both, and so do GROUP_PROTOCOL
 * (optional group.protocol: "streams" joins a KIP-1071 streams group),
 * DESERIALIZATION_HANDLER ("continue": LogAndContinueExceptionHandler;
 * default LogAndFail) and ON_THREAD_ERROR ("shutdown": SHUTDOWN_CLIENT when a
 * stream thread dies; default REPLACE_THREAD).
 *
 * <p>Dead-letter queue (Kafka Streams 4.2+, KIP-1034): DEAD_LETTER_TOPIC sets
 * errors.dead.letter.queue.topic.name, to which the exception handlers send
 * the records they give up on; PROCESSING_HANDLER ("continue":
 * LogAndContinueProcessingExceptionHandler, 4.0+) skips records a processor
 * throws on; FAIL_SELECT_NOTE and FAIL_REDUCE_NOTE make selectKey (before the
 * repartition) and the reduce (after it) throw on a value whose note is that
 * text. All four are only set when given, so older versions run unchanged.
 */
public final class StreamsApp {
    private StreamsApp() {}

    static String cfg(String name, String dflt) {
        String v = System.getProperty(name);
        if (v == null) {
            v = System.getenv(name);
        }
        return v == null || v.isEmpty() ? dflt : v;
    }

    static final String[] INPUT_NAMES = {"a", "b", "c"};

    /** Parses "a:k1,k2;c:k3" into input name -> keys. */
    static Map<String, Set<String>> parseDropBeforeStore(String s) {
        Map<String, Set<String>> out = new HashMap<>();
        for (String n : INPUT_NAMES) {
            out.put(n, new HashSet<>());
        }
        if (s == null || s.isBlank()) {
            return out;
        }
        for (String part : s.split(";")) {
            String[] kv = part.split(":", 2);
            if (kv.length != 2 || !out.containsKey(kv[0].trim())) {
                throw new IllegalArgumentException("DROP_BEFORE_STORE: want input:key1,key2;... with input a, b or c, got " + part);
            }
            for (String k : kv[1].split(",")) {
                if (!k.isBlank()) {
                    out.get(kv[0].trim()).add(k.trim());
                }
            }
        }
        return out;
    }

    static Set<String> parseKeys(String s) {
        Set<String> out = new HashSet<>();
        if (s != null) {
            for (String k : s.split(",")) {
                if (!k.isBlank()) {
                    out.add(k.trim());
                }
            }
        }
        return out;
    }

    static GenericRecord joined(GenericRecord a, GenericRecord b, GenericRecord c) {
        GenericData.Record j = new GenericData.Record(Schemas.JOINED);
        j.put("customerId", String.valueOf(a.get("customerId")));
        j.put("a", a);
        j.put("b", b);
        j.put("c", c);
        return j;
    }

    /** The outer-joined value: any of a, b and c may be null; customerId is the first present one's. */
    static GenericRecord joinedOuter(GenericRecord a, GenericRecord b, GenericRecord c) {
        GenericData.Record j = new GenericData.Record(Schemas.JOINED_OUTER);
        GenericRecord first = a != null ? a : b != null ? b : c;
        j.put("customerId", String.valueOf(first.get("customerId")));
        j.put("a", a);
        j.put("b", b);
        j.put("c", c);
        return j;
    }

    static Topology build(Registry registry, GroundTruth truth, List<String> inputs, String output, String joinType,
                          Map<String, Set<String>> dropBeforeStore, Set<String> dropBeforeOutput, String tombstoneNote,
                          String failSelectNote, String failReduceNote) {
        StreamsBuilder builder = new StreamsBuilder();
        // TABLE_OP=aggregate: each table is an aggregate keeping the newest value (KSTREAM-AGGREGATE-).
        boolean aggregate = "aggregate".equals(cfg("TABLE_OP", "reduce"));
        @SuppressWarnings("unchecked")
        KTable<String, GenericRecord>[] tables = new KTable[3];
        for (int i = 0; i < 3; i++) {
            String name = INPUT_NAMES[i];
            AvroSerde serde = new AvroSerde(registry, name, dropBeforeStore.get(name), truth);
            boolean isA = i == 0;
            Reducer<GenericRecord> newest = (oldV, newV) -> {
                if (failReduceNote != null && failReduceNote.equals(String.valueOf(newV.get("note")))) {
                    throw new IllegalArgumentException("lossaudit testbed: the reduce fails on note " + failReduceNote);
                }
                if (isA && tombstoneNote != null && tombstoneNote.equals(String.valueOf(newV.get("note")))) {
                    return null;
                }
                return newV;
            };
            var grouped = builder.stream(inputs.get(i), Consumed.with(Serdes.String(), serde))
                    .selectKey((k, v) -> {
                        if (v != null && failSelectNote != null && failSelectNote.equals(String.valueOf(v.get("note")))) {
                            throw new IllegalStateException("lossaudit testbed: selectKey fails on note " + failSelectNote);
                        }
                        return v == null ? null : String.valueOf(v.get("customerId"));
                    })
                    .groupByKey(Grouped.with(Serdes.String(), serde));
            tables[i] = aggregate
                    ? grouped.aggregate(() -> null, (k, v, agg) -> newest.apply(agg, v), Materialized.with(Serdes.String(), serde))
                    : grouped.reduce(newest, Materialized.with(Serdes.String(), serde));
        }
        AvroSerde outSerde = new AvroSerde(registry, "output", Set.of(), truth);
        KTable<String, GenericRecord> out;
        switch (joinType) {
            case "left":
                out = tables[0]
                        .leftJoin(tables[1], (a, b) -> joined(a, b, null))
                        .leftJoin(tables[2], (j, c) -> joined((GenericRecord) j.get("a"), (GenericRecord) j.get("b"), c));
                break;
            case "inner":
                out = tables[0]
                        .join(tables[1], (a, b) -> joined(a, b, null))
                        .join(tables[2], (j, c) -> joined((GenericRecord) j.get("a"), (GenericRecord) j.get("b"), c));
                break;
            case "outer":
                // Either side may be absent: the result's a is nullable (Schemas.JOINED_OUTER).
                out = tables[0]
                        .outerJoin(tables[1], (a, b) -> joinedOuter(a, b, null))
                        .outerJoin(tables[2], (j, c) -> joinedOuter(j == null ? null : (GenericRecord) j.get("a"),
                                j == null ? null : (GenericRecord) j.get("b"), c));
                break;
            default:
                throw new IllegalArgumentException("JOIN_TYPE: want inner, left or outer, got " + joinType);
        }
        out
                .toStream()
                .to(output, Produced.with(Serdes.String(), outSerde)
                        .withStreamPartitioner(new DropBeforeOutput(truth, dropBeforeOutput, output)));
        return builder.build();
    }

    /**
     * Injects loss before OUTPUT without a node of its own in the topology (a filter there
     * would be a user filter, which lossaudit rightly refuses to audit): a partitioner that
     * sends the joined results of the chosen keys to no partition, which Kafka Streams drops
     * (KIP-837, Kafka Streams 3.4+; RecordCollectorImpl#send). Every other record goes where
     * the default partitioner sends it (Optional.empty()). Both partition() (abstract up to
     * 3.x) and partitions() (abstract from 4.0) are implemented, without @Override, so
     * that the class compiles against either.
     */
    static final class DropBeforeOutput implements StreamPartitioner<String, GenericRecord> {
        private final GroundTruth truth;
        private final Set<String> keys;
        private final String output;

        DropBeforeOutput(GroundTruth truth, Set<String> keys, String output) {
            this.truth = truth;
            this.keys = keys;
            this.output = output;
        }

        public Integer partition(String topic, String key, GenericRecord value, int numPartitions) {
            return null;
        }

        public Optional<Set<Integer>> partitions(String topic, String key, GenericRecord value, int numPartitions) {
            if (value != null && keys.contains(key)) {
                truth.drop("before_output", "output", key, (GenericRecord) value.get("a"), output);
                return Optional.of(Set.of());
            }
            return Optional.empty();
        }
    }

    /**
     * The count by a new key: selectKey, groupByKey, count, toStream, mapValues, to. With keys to
     * drop, the count is an aggregate that does not count the first update of each listed key it
     * processes (a lost update, with nothing in the topology to show it): both print the same
     * describe() text, KSTREAM-AGGREGATE- with a Long store. The keys already dropped are kept in
     * memory: a restarted instance would drop them again.
     */
    static Topology count(String input, String output, Set<String> drop) {
        StreamsBuilder builder = new StreamsBuilder();
        Set<String> dropped = java.util.concurrent.ConcurrentHashMap.newKeySet();
        var grouped = builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v)
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
        KTable<String, Long> counts = drop.isEmpty()
                ? grouped.count(Materialized.with(Serdes.String(), Serdes.Long()))
                : grouped.aggregate(() -> 0L, (k, v, agg) -> drop.contains(k) && dropped.add(k) ? agg : agg + 1,
                        Materialized.with(Serdes.String(), Serdes.Long()));
        counts.toStream()
                .mapValues(String::valueOf)
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    /**
     * A table source left-joined with a reduced stream (TOPOLOGY=table): table(the first of
     * INPUT_TOPICS) leftJoin (the second --selectKey(value)--> groupByKey --> reduce(latest)),
     * toStream, to OUTPUT_TOPIC; String serdes, no schemas. The table keeps each key's last
     * record by offset, whatever its timestamp. A table record whose value starts with "drop:"
     * is lost: its timestamp extractor returns -1, so Kafka Streams skips it (RecordQueue:
     * "Skipping record due to negative extracted timestamp") and commits past it. With
     * TOPOLOGY_OPTIMIZATION=all the table's store is restored from its input topic and has
     * no changelog (reuse.ktable.source.topics).
     */
    static Topology table(String profiles, String clicks, String output, Properties props) {
        StreamsBuilder builder = new StreamsBuilder();
        TimestampExtractor dropping = (rec, partitionTime) ->
                String.valueOf(rec.value()).startsWith("drop:") ? -1L : rec.timestamp();
        KTable<String, String> table = builder.table(profiles,
                Consumed.with(Serdes.String(), Serdes.String()).withTimestampExtractor(dropping));
        KTable<String, String> latest = builder.stream(clicks, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v)
                .groupByKey(Grouped.with(Serdes.String(), Serdes.String()))
                .reduce((oldV, newV) -> newV, Materialized.with(Serdes.String(), Serdes.String()));
        table.leftJoin(latest, (p, c) -> p + "|" + c)
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build(props);
    }

    /** The stateless copy application: map and to. */
    static Topology copy(String input, String output) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
                .map((k, v) -> KeyValue.pair(k, v == null ? null : v + " (copied)"))
                .to(output, Produced.with(Serdes.String(), Serdes.String()));
        return builder.build();
    }

    /**
     * The Kafka release on the classpath, from the version file every
     * kafka-clients jar carries (AppInfoParser, which reads it, moved to an
     * internal package in 4.4).
     */
    static String kafkaVersion() throws IOException {
        try (InputStream in = KafkaStreams.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in == null) {
                return "unknown";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown").trim();
        }
    }

    /** Reads the CLIENT_PROPERTIES file; none when path is empty. */
    static Properties clientProperties(String path) throws IOException {
        Properties p = new Properties();
        if (!path.isEmpty()) {
            try (InputStream in = Files.newInputStream(Path.of(path))) {
                p.load(in);
            }
        }
        return p;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = cfg("BOOTSTRAP_SERVERS", "127.0.0.1:9092");
        String appId = cfg("APPLICATION_ID", "lossaudit-tb");
        List<String> inputs = Arrays.asList(cfg("INPUT_TOPICS", "in-a,in-b,in-c").split(","));
        boolean countMode = "count".equals(cfg("TOPOLOGY", "join"));
        boolean suppressMode = "count-suppress".equals(cfg("TOPOLOGY", "join"));
        boolean changelogMode = "count-changelog".equals(cfg("TOPOLOGY", "join"));
        boolean stageMode = Set.of("enrich", "passthrough").contains(cfg("TOPOLOGY", "join")); // StreamStages
        boolean tableMode = "table".equals(cfg("TOPOLOGY", "join"));
        boolean filterMode = "filter-rekey".equals(cfg("TOPOLOGY", "join")); // StreamFilter
        boolean windowedMode = "windowed-count".equals(cfg("TOPOLOGY", "join")); // WindowedCount
        boolean branchMode = "branch".equals(cfg("TOPOLOGY", "join")); // StreamBranch
        boolean tableGroupByMode = "table-groupby".equals(cfg("TOPOLOGY", "join")); // TableGroupByCount
        boolean cogroupMode = "cogroup".equals(cfg("TOPOLOGY", "join")); // Cogroup
        boolean globalJoinMode = "global-join".equals(cfg("TOPOLOGY", "join")); // GlobalJoin
        boolean copyMode = countMode || suppressMode || changelogMode || stageMode || tableMode || filterMode || windowedMode || branchMode || tableGroupByMode || cogroupMode || globalJoinMode || "copy".equals(cfg("TOPOLOGY", "join"));
        Properties optimization = new Properties();
        optimization.put("topology.optimization", cfg("TOPOLOGY_OPTIMIZATION", "none"));
        if (!copyMode && inputs.size() != 3) {
            throw new IllegalArgumentException("INPUT_TOPICS: want three topics, got " + inputs);
        }
        String output = cfg("OUTPUT_TOPIC", "joined");
        String stateDir = cfg("STATE_DIR", "/tmp/lossaudit-streams");
        String topologyFile = cfg("TOPOLOGY_FILE", "");
        String schemasTopic = cfg("SCHEMAS_TOPIC", "_schemas");
        Map<String, Set<String>> dropBeforeStore = parseDropBeforeStore(cfg("DROP_BEFORE_STORE", ""));
        Set<String> dropBeforeOutput = parseKeys(cfg("DROP_BEFORE_OUTPUT", ""));
        String tombstoneNote = cfg("TOMBSTONE_NOTE", null);

        GroundTruth truth = new GroundTruth(cfg("GROUND_TRUTH_FILE", ""));
        Properties client = clientProperties(cfg("CLIENT_PROPERTIES", ""));
        Registry registry = copyMode ? null : new Registry(bootstrap, schemasTopic, client);
        if (registry != null) {
            registry.load();
        }

        Topology topology = windowedMode ? WindowedCount.build(inputs.get(0), output, Long.parseLong(cfg("WINDOW_SIZE_MS", "60000")),
                        Long.parseLong(cfg("WINDOW_ADVANCE_MS", "0")), Long.parseLong(cfg("WINDOW_GRACE_MS", "600000")), parseKeys(cfg("DROP_COUNT", "")), dropBeforeOutput,
                        cfg("WINDOW_EMIT", ""))
                : tableGroupByMode ? TableGroupByCount.build(inputs.get(0), output, cfg("TABLE_GROUPBY_OP", ""))
                : cogroupMode ? Cogroup.build(inputs.get(0), inputs.get(1), output, dropBeforeOutput)
                : changelogMode ? CountChangelog.build(inputs.get(0), parseKeys(cfg("DROP_COUNT", "")))
                : suppressMode ? CountSuppress.build(inputs.get(0), output, Long.parseLong(cfg("SUPPRESS_MS", "60000")), dropBeforeOutput)
                : stageMode ? StreamStages.build(cfg("TOPOLOGY", "join"), inputs, output, parseKeys(cfg("DROP_VALUES", "")))
                : filterMode ? StreamFilter.build(inputs, output, parseKeys(cfg("DROP_VALUES", "")))
                : branchMode ? StreamBranch.build(inputs, output, parseKeys(cfg("DROP_VALUES", "")))
                : globalJoinMode ? GlobalJoin.build(inputs, output, parseKeys(cfg("DROP_VALUES", "")))
                : countMode ? count(inputs.get(0), output, parseKeys(cfg("DROP_COUNT", "")))
                : tableMode ? table(inputs.get(0), inputs.get(1), output, optimization)
                : copyMode ? copy(inputs.get(0), output)
                : build(registry, truth, inputs, output, cfg("JOIN_TYPE", "left"), dropBeforeStore, dropBeforeOutput, tombstoneNote,
                        cfg("FAIL_SELECT_NOTE", null), cfg("FAIL_REDUCE_NOTE", null));
        String described = topology.describe().toString();
        System.out.println(described);
        if (!topologyFile.isEmpty()) {
            Files.writeString(Path.of(topologyFile), described, StandardCharsets.UTF_8);
        }

        ObjectNode start = truth.node("start");
        start.put("streams_version", kafkaVersion());
        start.put("application_id", appId);
        ObjectNode dbs = start.putObject("drop_before_store");
        dropBeforeStore.forEach((k, v) -> {
            ArrayNode a = dbs.putArray(k);
            v.stream().sorted().forEach(a::add);
        });
        ArrayNode dbo = start.putArray("drop_before_output");
        dropBeforeOutput.stream().sorted().forEach(dbo::add);
        truth.write(start);

        Properties settings = new Properties();
        settings.putAll(client);
        settings.put("application.id", appId);
        settings.putAll(optimization);
        settings.put("bootstrap.servers", bootstrap);
        settings.put("processing.guarantee", cfg("PROCESSING_GUARANTEE", "exactly_once_v2"));
        String commitInterval = cfg("COMMIT_INTERVAL_MS", "");
        if (!commitInterval.isEmpty()) {
            settings.put("commit.interval.ms", Long.parseLong(commitInterval));
        }
        settings.put("auto.offset.reset", "earliest");
        settings.put("state.dir", stateDir);
        settings.put("replication.factor", 3);
        settings.put("statestore.cache.max.bytes", 30 * 1024 * 1024L);
        settings.put("default.key.serde", Serdes.String().getClass());
        settings.put("max.request.size", 20000000);
        settings.put("acks", "all");
        settings.put("fetch.max.bytes", 20000000);
        settings.put("delivery.timeout.ms", 18000000);
        settings.put("max.block.ms", 18000000);
        settings.put("compression.type", "zstd");
        if ("close".equals(cfg("WINDOW_EMIT", ""))) {
            // emitStrategy(onWindowClose) looks for closed windows at most once per this
            // wall-clock interval (internal config, default 1 s): every record, in the testbed.
            settings.put("__emit.interval.ms.kstreams.windowed.aggregation__", 0L);
        }
        // Not in the user story: a shorter consumer session so a killed instance's
        // partitions move on after seconds, not 45 s (tests set it; unset keeps the default).
        String purge = cfg("REPARTITION_PURGE_INTERVAL_MS", "");
        if (!purge.isEmpty()) {
            settings.put("repartition.purge.interval.ms", Long.parseLong(purge));
        }
        String session = cfg("CONSUMER_SESSION_TIMEOUT_MS", "");
        if (!session.isEmpty()) {
            settings.put("consumer.session.timeout.ms", Integer.parseInt(session));
        }

        String groupProtocol = cfg("GROUP_PROTOCOL", "");
        if (!groupProtocol.isEmpty()) {
            settings.put("group.protocol", groupProtocol);
        }
        if ("continue".equals(cfg("DESERIALIZATION_HANDLER", ""))) {
            // The 3.x name, still read by 4.x (deprecated by KIP-1056).
            settings.put("default.deserialization.exception.handler", LogAndContinueExceptionHandler.class);
        }
        String deadLetterTopic = cfg("DEAD_LETTER_TOPIC", "");
        if (!deadLetterTopic.isEmpty()) {
            settings.put("errors.dead.letter.queue.topic.name", deadLetterTopic);
        }
        if ("continue".equals(cfg("PROCESSING_HANDLER", ""))) {
            // By name: the class exists from Kafka Streams 4.0 (KIP-1033).
            settings.put("processing.exception.handler", "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler");
        }
        boolean shutdownOnError = "shutdown".equals(cfg("ON_THREAD_ERROR", ""));

        KafkaStreams streams = new KafkaStreams(topology, settings);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((n, o) -> {
            System.out.println("lossaudit-streamsapp: state " + o + " -> " + n);
            if (n == KafkaStreams.State.ERROR || n == KafkaStreams.State.NOT_RUNNING) {
                done.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            ObjectNode n = truth.node("thread_replaced");
            n.put("error", String.valueOf(e));
            truth.write(n);
            return shutdownOnError ? StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT
                    : StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(30));
            if (registry != null) {
                registry.close();
            }
            try {
                truth.close();
            } catch (Exception ignored) {
                // best effort at exit
            }
        }));
        streams.start();
        done.await();
    }
}
