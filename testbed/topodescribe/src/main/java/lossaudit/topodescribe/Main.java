package lossaudit.topodescribe;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import java.time.Duration;

import org.apache.kafka.streams.kstream.Branched;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Predicate;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Builds the audited pipeline of docs/topology.md (three inputs, each selectKey -> groupByKey ->
 * reduce, then tA.leftJoin(tB).leftJoin(tC).toStream().to(output)) in several
 * code orders and naming variants, and topologies of the kinds lossaudit must refuse
 * (unsupported-*: one per kind of docs/topology.md's table), and writes Topology#describe()
 * of each to DIR/<variant>-<kafka version>.txt. Serdes are Strings: describe() does not
 * depend on them.
 */
public final class Main {
    static final String A = "topicA", B = "topicB", C = "topicC", OUT = "joined";

    /** Naming of one input's groupBy/reduce; null means generated names. */
    record Naming(String grouped, String store) {
        static final Naming NONE = new Naming(null, null);
    }

    static KTable<String, String> table(StreamsBuilder b, String topic, Naming n) {
        KStream<String, String> s = b.stream(topic, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v.split(",")[0]);
        KGroupedStream<String, String> g = n.grouped() == null
                ? s.groupByKey()
                : s.groupByKey(Grouped.<String, String>as(n.grouped()));
        if (n.store() == null) {
            return g.reduce((oldV, newV) -> newV);
        }
        return g.reduce((oldV, newV) -> newV,
                Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(n.store()));
    }

    static void sink(KTable<String, String> joined) {
        joined.toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
    }

    static Topology plain(Naming na, Naming nb, Naming nc) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> tA = table(b, A, na);
        KTable<String, String> tB = table(b, B, nb);
        KTable<String, String> tC = table(b, C, nc);
        sink(tA.leftJoin(tB, (x, y) -> x + "|" + y).leftJoin(tC, (x, y) -> x + "|" + y));
        return b.build();
    }

    static KStream<String, String> rekeyed(StreamsBuilder b, String topic) {
        return b.stream(topic, Consumed.with(Serdes.String(), Serdes.String()))
                .selectKey((k, v) -> v.split(",")[0]);
    }

    static void out(KStream<String, ?> s) {
        s.mapValues(v -> String.valueOf(v)).to(OUT, Produced.with(Serdes.String(), Serdes.String()));
    }

    /**
     * Topologies that lossaudit must refuse (audit/streams/topology tests): each holds one kind of
     * node the audit does not support, on the path of input topicA, in the shape a user
     * writes it. Some print exactly like the supported family (a windowed reduce, an inner
     * join): only a declaration tells them apart.
     */
    static void unsupported(Map<String, Supplier<Topology>> variants) {
        // A windowed count: KSTREAM-AGGREGATE, printed exactly like a plain count.
        variants.put("unsupported-windowed-count", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.stream(A, Consumed.with(Serdes.String(), Serdes.String()))
                    .groupByKey()
                    .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                    .count()
                    .toStream((wk, v) -> wk.key())
                    .mapValues(v -> String.valueOf(v))
                    .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // A windowed reduce after selectKey, written with the windowed serde: prints exactly
        // like the audited reduce.
        variants.put("unsupported-windowed-reduce", () -> {
            StreamsBuilder b = new StreamsBuilder();
            rekeyed(b, A).groupByKey()
                    .windowedBy(TimeWindows.ofSizeWithNoGrace(Duration.ofMinutes(1)))
                    .reduce((x, y) -> y)
                    .toStream()
                    .to(OUT, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, 60_000L), Serdes.String()));
            return b.build();
        });
        // A reduce with suppress before the sink (generated names).
        variants.put("unsupported-suppress", () -> {
            StreamsBuilder b = new StreamsBuilder();
            rekeyed(b, A).groupByKey().reduce((x, y) -> y)
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(1), Suppressed.BufferConfig.unbounded()))
                    .toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // The same with the names a user gives: the suppress is "hold", the reduce "latest".
        variants.put("unsupported-suppress-named", () -> {
            StreamsBuilder b = new StreamsBuilder();
            rekeyed(b, A).groupByKey(Grouped.as("by-id"))
                    .reduce((x, y) -> y, Named.as("latest"),
                            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("latest-store"))
                    .suppress(Suppressed.untilTimeLimit(Duration.ofSeconds(1), Suppressed.BufferConfig.unbounded())
                            .withName("hold"))
                    .toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // An inner KTable-KTable join of two reduces: prints exactly like the left join.
        variants.put("unsupported-inner-join", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> tA = table(b, A, Naming.NONE);
            KTable<String, String> tB = table(b, B, Naming.NONE);
            sink(tA.join(tB, (x, y) -> x + "|" + y));
            return b.build();
        });
        // A foreign-key join of two reduces (the value of A holds B's key).
        variants.put("unsupported-fk-join", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> tA = table(b, A, Naming.NONE);
            KTable<String, String> tB = table(b, B, Naming.NONE);
            sink(tA.leftJoin(tB, (String v) -> v.split(",")[1], (x, y) -> x + "|" + y));
            return b.build();
        });
        // A KStream-KStream join of the re-keyed inputs.
        variants.put("unsupported-stream-stream-join", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KStream<String, String> sA = rekeyed(b, A);
            KStream<String, String> sB = rekeyed(b, B);
            out(sA.join(sB, (x, y) -> x + "|" + y, JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMinutes(1))));
            return b.build();
        });
        // A user filter between selectKey and the reduce.
        variants.put("unsupported-filter", () -> {
            StreamsBuilder b = new StreamsBuilder();
            rekeyed(b, A).filter((k, v) -> !v.isEmpty()).groupByKey().reduce((x, y) -> y)
                    .toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // A KStream-KTable left join: input A enriched by the reduce of B.
        variants.put("unsupported-stream-table-join", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> tB = table(b, B, Naming.NONE);
            out(rekeyed(b, A).leftJoin(tB, (x, y) -> x + "|" + y));
            return b.build();
        });
        // A count by a new key (supported in a later version; refused today).
        variants.put("unsupported-count", () -> {
            StreamsBuilder b = new StreamsBuilder();
            out(rekeyed(b, A).groupByKey().count().toStream());
            return b.build();
        });
    }

    /**
     * Table sources (audit/streams/topology tests): builder.table and toTable reading the input
     * topic itself, joined or streamed to the output (audited with the table-last rule), and
     * the shapes refused: a table without a store, a toTable after a repartition topic.
     */
    static void tables(Map<String, Supplier<Topology>> variants) {
        // A table source left-joined with a reduced stream: the store is materialized for the
        // join, with a generated name (topicA-STATE-STORE-0000000000).
        variants.put("table-source-left-join", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> tA = b.table(A, Consumed.with(Serdes.String(), Serdes.String()));
            sink(tA.leftJoin(table(b, B, Naming.NONE), (x, y) -> x + "|" + y));
            return b.build();
        });
        // A materialized table source streamed to the output, with the names a user gives.
        variants.put("table-source-named", () -> {
            StreamsBuilder b = new StreamsBuilder();
            sink(b.table(A, Consumed.with(Serdes.String(), Serdes.String()),
                    Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("profiles")));
            return b.build();
        });
        // Two streams made tables with toTable and inner-joined.
        variants.put("totable-inner-join", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> tA = b.stream(A, Consumed.with(Serdes.String(), Serdes.String())).toTable();
            KTable<String, String> tB = b.stream(B, Consumed.with(Serdes.String(), Serdes.String())).toTable();
            sink(tA.join(tB, (x, y) -> x + "|" + y));
            return b.build();
        });
        // A table source nothing materializes: it keeps no store.
        variants.put("unsupported-table-source-unmaterialized", () -> {
            StreamsBuilder b = new StreamsBuilder();
            sink(b.table(A, Consumed.with(Serdes.String(), Serdes.String())));
            return b.build();
        });
        // A cogroup of two grouped streams into one aggregate (one store for both inputs; two
        // repartitioned inputs of one cogroup need Grouped names, or the repartition nodes clash).
        variants.put("unsupported-cogroup", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KGroupedStream<String, String> gA = rekeyed(b, A).groupByKey(Grouped.as("by-a"));
            KGroupedStream<String, String> gB = rekeyed(b, B).groupByKey(Grouped.as("by-b"));
            gA.<String>cogroup((k, v, agg) -> agg + v)
                    .cogroup(gB, (k, v, agg) -> agg + v)
                    .aggregate(() -> "")
                    .toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // A cogroup audited (docs/topology.md): input A grouped on its own key (no repartition
        // topic), input B re-keyed and repartitioned (the repartition topic takes the store's
        // generated name), one aggregate, toStream to the output.
        variants.put("cogroup", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KGroupedStream<String, String> gA = b.stream(A, Consumed.with(Serdes.String(), Serdes.String()))
                    .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
            KGroupedStream<String, String> gB = rekeyed(b, B).groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
            gA.<String>cogroup((k, v, agg) -> agg + v)
                    .cogroup(gB, (k, v, agg) -> agg + v)
                    .aggregate(() -> "")
                    .toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // The same cogroup named (Named.as, Materialized.as): <name>-cogroup-agg-i and
        // <name>-cogroup-merge, whose kinds only a declaration gives; its table leads nowhere.
        variants.put("cogroup-named-changelog", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KGroupedStream<String, String> gA = b.stream(A, Consumed.with(Serdes.String(), Serdes.String()))
                    .groupByKey(Grouped.with(Serdes.String(), Serdes.String()));
            KGroupedStream<String, String> gB = rekeyed(b, B).groupByKey(Grouped.as("by-b"));
            gA.<String>cogroup((k, v, agg) -> agg + v)
                    .cogroup(gB, (k, v, agg) -> agg + v)
                    .aggregate(() -> "", Named.as("sum"), Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("sums"));
            return b.build();
        });
        // A table groupBy and count: subtractor and adder behind a repartition topic.
        variants.put("unsupported-table-groupby-count", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.table(A, Consumed.with(Serdes.String(), Serdes.String()),
                            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("profiles"))
                    .groupBy((k, v) -> KeyValue.pair(v, v), Grouped.with(Serdes.String(), Serdes.String()))
                    .count()
                    .toStream().mapValues(v -> String.valueOf(v)).to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // A table groupBy and reduce (adder, subtractor), generated names: KTABLE-REDUCE- (its store
        // KTABLE-AGGREGATE-STATE-STORE-: KGroupedTableImpl#reduce names it with AGGREGATE_NAME).
        variants.put("table-groupby-reduce", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.table(A, Consumed.with(Serdes.String(), Serdes.String()),
                            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("profiles"))
                    .groupBy((k, v) -> KeyValue.pair(v, v), Grouped.with(Serdes.String(), Serdes.String()))
                    .reduce((agg, v) -> agg + v, (agg, v) -> agg)
                    .toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // A table groupBy and aggregate (initializer, adder, subtractor), generated names: prints as a count.
        variants.put("table-groupby-aggregate", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.table(A, Consumed.with(Serdes.String(), Serdes.String()),
                            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("profiles"))
                    .groupBy((k, v) -> KeyValue.pair(v, v), Grouped.with(Serdes.String(), Serdes.String()))
                    .aggregate(() -> "", (k, v, agg) -> agg + v, (k, v, agg) -> agg,
                            Materialized.with(Serdes.String(), Serdes.String()))
                    .toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // A table groupBy and reduce named (Named.as, Materialized.as): the reduce, the repartition
        // topic's sink and source take the name, the store and repartition topic the store's.
        variants.put("table-groupby-reduce-named", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.table(A, Consumed.with(Serdes.String(), Serdes.String()),
                            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("profiles"))
                    .groupBy((k, v) -> KeyValue.pair(v, v), Grouped.with(Serdes.String(), Serdes.String()))
                    .reduce((agg, v) -> agg + v, (agg, v) -> agg, Named.as("latest-by-region"),
                            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("region-latest"))
                    .toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // A table groupBy (Grouped name) and count kept in its changelog only (the table's store generated).
        variants.put("table-groupby-count-changelog", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.table(A, Consumed.with(Serdes.String(), Serdes.String()))
                    .groupBy((k, v) -> KeyValue.pair(v, v), Grouped.<String, String>as("by-region").withKeySerde(Serdes.String()).withValueSerde(Serdes.String()))
                    .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts"));
            return b.build();
        });
        // toTable (no Materialized: groupBy's old values materialize it) grouped and counted.
        variants.put("table-groupby-totable-count", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.stream(A, Consumed.with(Serdes.String(), Serdes.String()))
                    .toTable()
                    .groupBy((k, v) -> KeyValue.pair(v, v), Grouped.with(Serdes.String(), Serdes.String()))
                    .count()
                    .toStream().mapValues(v -> String.valueOf(v)).to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // toTable after a key change: the table reads a repartition topic.
        variants.put("unsupported-totable-after-repartition", () -> {
            StreamsBuilder b = new StreamsBuilder();
            sink(rekeyed(b, A).toTable(Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("latest")));
            return b.build();
        });
    }

    /**
     * split()/branch() on a per-record stream stage (audit/streams/topology branch tests): the
     * branch children describe() prints after KSTREAM-BRANCH- (or the split's name), in its
     * successor order, not the application's.
     */
    static void branches(Map<String, Supplier<Topology>> variants) {
        // split(Named.as("route-")): two named branches mapped differently and merged into OUT,
        // the default branch to another topic.
        variants.put("stream-split-named", () -> {
            StreamsBuilder b = new StreamsBuilder();
            Map<String, KStream<String, String>> m = b.stream(A, Consumed.with(Serdes.String(), Serdes.String()))
                    .split(Named.as("route-"))
                    .branch((k, v) -> v.length() > 10, Branched.withFunction(s -> s.mapValues(v -> "big:" + v), "big"))
                    .branch((k, v) -> v.length() > 5, Branched.withFunction(s -> s.mapValues(v -> "medium:" + v), "medium"))
                    .defaultBranch(Branched.as("rest"));
            m.get("route-big").merge(m.get("route-medium")).to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            m.get("route-rest").to("others", Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // split() with generated names: three branches, the first and third merged into OUT, the
        // second to another topic, no default branch (unmatched records are dropped).
        variants.put("stream-split", () -> {
            StreamsBuilder b = new StreamsBuilder();
            Map<String, KStream<String, String>> m = b.stream(A, Consumed.with(Serdes.String(), Serdes.String()))
                    .split()
                    .branch((k, v) -> v.startsWith("a"))
                    .branch((k, v) -> v.startsWith("b"))
                    .branch((k, v) -> v.startsWith("c"))
                    .noDefaultBranch();
            String[] names = m.keySet().stream().sorted().toArray(String[]::new);
            m.get(names[0]).peek((k, v) -> {}).merge(m.get(names[2])).to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            m.get(names[1]).to("others", Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // The deprecated branch(Predicate...) (removed in 4.0): KSTREAM-BRANCHCHILD- children.
        try {
            java.lang.reflect.Method branch = KStream.class.getMethod("branch", Predicate[].class);
            variants.put("stream-branch-deprecated", () -> {
                StreamsBuilder b = new StreamsBuilder();
                KStream<String, String> s = b.stream(A, Consumed.with(Serdes.String(), Serdes.String()));
                Predicate<String, String> p1 = (k, v) -> v.startsWith("a");
                Predicate<String, String> p2 = (k, v) -> true;
                try {
                    @SuppressWarnings("unchecked")
                    KStream<String, String>[] out = (KStream<String, String>[]) branch.invoke(s, (Object) new Predicate[] {p1, p2});
                    out[0].mapValues(v -> "a:" + v).merge(out[1]).to(OUT, Produced.with(Serdes.String(), Serdes.String()));
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
                return b.build();
            });
        } catch (NoSuchMethodException e) {
            // kafka-streams 4.x: no deprecated branch()
        }
    }

    /**
     * KStream-GlobalKTable joins on a per-record stream stage (audit/streams/topology global
     * tests): the join node in the stream's sub-topology lists no store; the global store has a
     * sub-topology of its own ("for global store").
     */
    static void globals(Map<String, Supplier<Topology>> variants) {
        // orders.leftJoin(customers, key mapper, joiner).mapValues(...).to(OUT): audited.
        variants.put("stream-global-leftjoin", () -> {
            StreamsBuilder b = new StreamsBuilder();
            GlobalKTable<String, String> customers = b.globalTable("customers", Consumed.with(Serdes.String(), Serdes.String()));
            b.stream("orders", Consumed.with(Serdes.String(), Serdes.String()))
                    .leftJoin(customers, (k, v) -> v.split(",")[0], (v, c) -> v + "|" + c)
                    .mapValues(v -> "enriched:" + v)
                    .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // The left join named (Named.as("enrich")): the node takes the name, so its kind is declared.
        variants.put("stream-global-leftjoin-named", () -> {
            StreamsBuilder b = new StreamsBuilder();
            GlobalKTable<String, String> customers = b.globalTable("customers", Consumed.with(Serdes.String(), Serdes.String()));
            b.stream("orders", Consumed.with(Serdes.String(), Serdes.String()))
                    .leftJoin(customers, (k, v) -> v.split(",")[0], (v, c) -> v + "|" + c, Named.as("enrich"))
                    .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
        // The same with join(): refused (the global store is updated by its own thread).
        variants.put("stream-global-innerjoin", () -> {
            StreamsBuilder b = new StreamsBuilder();
            GlobalKTable<String, String> customers = b.globalTable("customers", Consumed.with(Serdes.String(), Serdes.String()));
            b.stream("orders", Consumed.with(Serdes.String(), Serdes.String()))
                    .join(customers, (k, v) -> v.split(",")[0], (v, c) -> v + "|" + c)
                    .to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            return b.build();
        });
    }

    public static void main(String[] args) throws IOException {
        Path dir = Path.of(args.length > 0 ? args[0] : ".");
        String version = System.getProperty("kafka.version", "unknown");
        Files.createDirectories(dir);

        Map<String, Supplier<Topology>> variants = new LinkedHashMap<>();
        // 1. The seed's code order: A, B, C, then the joins.
        variants.put("order-abc", () -> plain(Naming.NONE, Naming.NONE, Naming.NONE));
        // 2. Tables built in the order C, A, B; join order unchanged.
        variants.put("order-cab", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> tC = table(b, C, Naming.NONE);
            KTable<String, String> tA = table(b, A, Naming.NONE);
            KTable<String, String> tB = table(b, B, Naming.NONE);
            sink(tA.leftJoin(tB, (x, y) -> x + "|" + y).leftJoin(tC, (x, y) -> x + "|" + y));
            return b.build();
        });
        // 3. Tables interleaved with the joins: A, B, join, C, join.
        variants.put("order-interleaved", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> tA = table(b, A, Naming.NONE);
            KTable<String, String> tB = table(b, B, Naming.NONE);
            KTable<String, String> ab = tA.leftJoin(tB, (x, y) -> x + "|" + y);
            KTable<String, String> tC = table(b, C, Naming.NONE);
            sink(ab.leftJoin(tC, (x, y) -> x + "|" + y));
            return b.build();
        });
        // 4. Explicit names: Grouped.as on A, Materialized.as on B, both on C.
        variants.put("named", () -> plain(
                new Naming("ga", null),
                new Naming(null, "store-b"),
                new Naming("gc", "store-c")));
        // 5. The seed's order with topology.optimization=all.
        variants.put("optimized", () -> {
            StreamsBuilder b = new StreamsBuilder();
            KTable<String, String> tA = table(b, A, Naming.NONE);
            KTable<String, String> tB = table(b, B, Naming.NONE);
            KTable<String, String> tC = table(b, C, Naming.NONE);
            sink(tA.leftJoin(tB, (x, y) -> x + "|" + y).leftJoin(tC, (x, y) -> x + "|" + y));
            Properties p = new Properties();
            p.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE);
            return b.build(p);
        });
        // 6. Not our pipeline's shape: a pattern source and a global table,
        //    to test that the parser handles (or clearly rejects) them.
        variants.put("pattern-global", () -> {
            StreamsBuilder b = new StreamsBuilder();
            b.stream(Pattern.compile("topic[AB]"), Consumed.with(Serdes.String(), Serdes.String()))
                    .selectKey((k, v) -> v).groupByKey().reduce((x, y) -> y)
                    .toStream().to(OUT, Produced.with(Serdes.String(), Serdes.String()));
            b.globalTable("globalTopic", Consumed.with(Serdes.String(), Serdes.String()));
            return b.build();
        });

        unsupported(variants);
        tables(variants);
        branches(variants);
        globals(variants);

        for (Map.Entry<String, Supplier<Topology>> e : variants.entrySet()) {
            String text = e.getValue().get().describe().toString();
            Path f = dir.resolve(e.getKey() + "-" + version + ".txt");
            Files.writeString(f, text, StandardCharsets.UTF_8);
            System.out.println("wrote " + f);
        }
    }
}
