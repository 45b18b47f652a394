// Which metrics Java Kafka Streams' TopologyTestDriver reports (driver.metrics()), per topology
// and per metrics.recording.level; plus the effect of the processing / deserialization exception
// handlers and the headers of dead-letter-queue records.  A standalone probe, not a test:
//
//   LIBS=$(.venv/bin/python -c "from kspark._kafka.jars import streams_test_libs; print(streams_test_libs(quiet=True))")
//   mkdir -p /tmp/metricnames && javac -nowarn -d /tmp/metricnames -cp "$LIBS/*" tests/conformance/MetricNames.java
//   java -cp "/tmp/metricnames:$LIBS/*" MetricNames > /tmp/metricnames.txt
//
// Output lines (each block sorted):
//   TOPO <topology> <node names of the topology description>
//   M <LEVEL> <topology> <group> <name> [<sorted tag keys>] {<k=v,...>} <value>
//   D <group> <name> [<tag keys>] <description>         (deduplicated, at the end)
//   VERSION <kafka version>
//   OUT <LEVEL> <topology> <topic> <key> <value> <timestamp>
//   DLQ <LEVEL> <topology> key=<...> value=<...> ts=<...>   then   H <header key> = <value>
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.*;
import java.util.function.Consumer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.Stores;
import org.apache.kafka.streams.test.TestRecord;

public class MetricNames {
    static final Serde<String> S = Serdes.String();
    static final Serde<Long> L = Serdes.Long();
    static final TreeMap<String, String> DESCRIPTIONS = new TreeMap<>();

    interface Pipe { void run(TopologyTestDriver d); }

    static final class Scenario {
        final String name; final Topology topology; final Map<String, String> extra; final Pipe pipe;
        Scenario(String name, Topology topology, Map<String, String> extra, Pipe pipe) {
            this.name = name; this.topology = topology; this.extra = extra; this.pipe = pipe;
        }
    }

    static void pipe(TopologyTestDriver d, String topic, String k, long v, long ts) {
        d.createInputTopic(topic, S.serializer(), L.serializer()).pipeInput(k, v, Instant.ofEpochMilli(ts));
    }

    static Topology a() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, L)).filter((k, v) -> v != 0L).mapValues(v -> v * 2)
         .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology bCount() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, L)).groupByKey()
         .count(Materialized.as("counts"))
         .toStream().to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology cWindowed() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, L)).groupByKey()
         .windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofSeconds(10), Duration.ofSeconds(5)))
         .count()
         .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
         .toStream((wk, v) -> wk.key() + "@" + wk.window().start())
         .to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology dJoin() {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, Long> t = b.table("tbl", Consumed.with(S, L),
            Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("tbl-store")).withKeySerde(S).withValueSerde(L));
        b.stream("in", Consumed.with(S, L)).join(t, (v, tv) -> v + tv).to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology eThrow() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, L)).mapValues(v -> {
            if (v == 13L) throw new IllegalStateException("unlucky " + v);
            return v + 1;
        }).to("out", Produced.with(S, L));
        return b.build();
    }

    static Topology fDeser() {
        StreamsBuilder b = new StreamsBuilder();
        b.stream("in", Consumed.with(S, L)).mapValues(v -> v + 1).to("out", Produced.with(S, L));
        return b.build();
    }

    static String show(Object o) {
        if (o == null) return "null";
        if (o instanceof byte[]) {
            byte[] x = (byte[]) o;
            StringBuilder sb = new StringBuilder("0x");
            for (byte c : x) sb.append(String.format("%02x", c));
            boolean printable = true;
            for (byte c : x) printable &= c >= 0x20 && c < 0x7f;
            return printable ? sb + "(\"" + new String(x, StandardCharsets.US_ASCII) + "\")" : sb.toString();
        }
        return String.valueOf(o);
    }

    static String abbrev(String s) {
        s = s.replace("\n", "\\n").replace("\t", "\\t");
        return s.length() > 300 ? s.substring(0, 300) + "...(" + s.length() + " chars)" : s;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> none = Map.of();
        Map<String, String> procHandler = Map.of(
            "processing.exception.handler",
            "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler",
            "errors.dead.letter.queue.topic.name", "dlq");
        Map<String, String> procHandlerNoDlq = Map.of(
            "processing.exception.handler",
            "org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler");
        Map<String, String> deserHandler = Map.of(
            "deserialization.exception.handler",
            "org.apache.kafka.streams.errors.LogAndContinueExceptionHandler",
            "errors.dead.letter.queue.topic.name", "dlq");

        List<Scenario> scenarios = List.of(
            new Scenario("a", a(), none, d -> {
                pipe(d, "in", "k1", 1, 1000); pipe(d, "in", "k2", 0, 2000); pipe(d, "in", "k1", 3, 3000);
            }),
            new Scenario("b", bCount(), none, d -> {
                pipe(d, "in", "k1", 1, 1000); pipe(d, "in", "k2", 2, 2000); pipe(d, "in", "k1", 3, 3000);
            }),
            new Scenario("c", cWindowed(), none, d -> {
                pipe(d, "in", "k1", 1, 0); pipe(d, "in", "k1", 2, 5000); pipe(d, "in", "k2", 3, 20000);
                pipe(d, "in", "k1", 4, 1000);            // late: window [0,10s) closed at stream time 15s
                pipe(d, "in", "k2", 5, 40000);           // advances stream time, flushes suppression
            }),
            new Scenario("d", dJoin(), none, d -> {
                pipe(d, "tbl", "k1", 100, 500);
                pipe(d, "in", "k1", 1, 1000); pipe(d, "in", "k2", 2, 2000); pipe(d, "in", "k1", 3, 3000);
            }),
            new Scenario("e_proc_dlq", eThrow(), procHandler, d -> {
                pipe(d, "in", "k1", 1, 1000); pipe(d, "in", "k2", 13, 2000); pipe(d, "in", "k1", 3, 3000);
            }),
            new Scenario("e_proc_nodlq", eThrow(), procHandlerNoDlq, d -> {
                pipe(d, "in", "k1", 1, 1000); pipe(d, "in", "k2", 13, 2000); pipe(d, "in", "k1", 3, 3000);
            }),
            new Scenario("f_deser_dlq", fDeser(), deserHandler, d -> {
                pipe(d, "in", "k1", 1, 1000);
                d.createInputTopic("in", new ByteArraySerializer(), new ByteArraySerializer())
                 .pipeInput("k2".getBytes(StandardCharsets.UTF_8), "abc".getBytes(StandardCharsets.UTF_8),
                            Instant.ofEpochMilli(2000));
                pipe(d, "in", "k1", 3, 3000);
            })
        );

        System.out.println("VERSION " + org.apache.kafka.common.utils.AppInfoParser.getVersion());
        for (Scenario s : scenarios) {
            List<String> names = new ArrayList<>();
            for (TopologyDescription.Subtopology st : s.topology.describe().subtopologies())
                for (TopologyDescription.Node n : st.nodes()) names.add(n.name());
            for (TopologyDescription.GlobalStore g : s.topology.describe().globalStores()) names.add("global:" + g.id());
            Collections.sort(names);
            System.out.println("TOPO " + s.name + " " + String.join(" ", names));
        }

        for (String level : List.of("INFO", "DEBUG", "TRACE")) {
            for (Scenario s : scenarios) {
                java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("kspark-metrics-");
                Properties p = new Properties();
                p.put(StreamsConfig.APPLICATION_ID_CONFIG, "metrics");
                p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
                p.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
                p.put(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG, level);
                p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
                p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.LongSerde.class);
                p.putAll(s.extra);
                List<String> lines = new ArrayList<>();
                try (TopologyTestDriver d = new TopologyTestDriver(s.topology, p)) {
                    s.pipe.run(d);
                    for (TestRecord<String, Long> r : d.createOutputTopic("out", S.deserializer(), L.deserializer()).readRecordsToList())
                        System.out.println("OUT " + level + " " + s.name + " out " + r.key() + " " + r.value() + " " + r.timestamp());
                    if (s.extra.containsKey("errors.dead.letter.queue.topic.name")) {
                        List<TestRecord<byte[], byte[]>> dlq = d.createOutputTopic("dlq", new ByteArrayDeserializer(), new ByteArrayDeserializer()).readRecordsToList();
                        if (dlq.isEmpty()) System.out.println("DLQ " + level + " " + s.name + " (no dead-letter records)");
                        for (TestRecord<byte[], byte[]> r : dlq) {
                            System.out.println("DLQ " + level + " " + s.name + " key=" + show(r.key()) + " value=" + show(r.value()) + " ts=" + r.timestamp());
                            for (Header h : r.headers())
                                System.out.println("  H " + h.key() + " = " + abbrev(h.value() == null ? "null" : new String(h.value(), StandardCharsets.UTF_8)));
                        }
                    }
                    for (Map.Entry<MetricName, ? extends Metric> e : d.metrics().entrySet()) {
                        MetricName m = e.getKey();
                        TreeMap<String, String> tags = new TreeMap<>(m.tags());
                        Object v;
                        try { v = e.getValue().metricValue(); } catch (Throwable t) { v = "<" + t.getClass().getSimpleName() + ">"; }
                        lines.add("M " + level + " " + s.name + " " + m.group() + " " + m.name() + " " + tags.keySet().toString().replace(" ", "")
                                  + " " + tags.toString().replace(" ", "") + " " + v);
                        DESCRIPTIONS.put(m.group() + " " + m.name() + " " + tags.keySet().toString().replace(" ", ""), m.description());
                    }
                } catch (Throwable t) {
                    System.out.println("ERROR " + level + " " + s.name + " " + t);
                    t.printStackTrace(System.out);
                }
                Collections.sort(lines);
                for (String l : lines) System.out.println(l);
            }
        }
        for (Map.Entry<String, String> e : DESCRIPTIONS.entrySet())
            System.out.println("D " + e.getKey() + " " + e.getValue());
    }
}
