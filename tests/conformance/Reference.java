// Java Kafka Streams' TopologyTestDriver running conformance scenarios: the reference.
//
// Reads scenarios from stdin in the language of tests/conformance/lang.py (one statement per
// line, each scenario ending with a line "end") and answers each with its output records and
// store contents in the same line format, then "end". A scenario Java refuses or fails on
// answers "error <Type>: <message>".
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.*;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.errors.LogAndContinueProcessingExceptionHandler;
import org.apache.kafka.streams.errors.LogAndFailProcessingExceptionHandler;
import org.apache.kafka.streams.kstream.*;
import org.apache.kafka.streams.state.*;
import org.apache.kafka.streams.test.TestRecord;

@SuppressWarnings({"unchecked", "rawtypes"})
public class Reference {
    static final Serde<String> S = Serdes.String();
    static final Serde<Long> L = Serdes.Long();

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        List<String> lines = new ArrayList<>();
        for (String line; (line = in.readLine()) != null; ) {
            if (!line.equals("end")) { lines.add(line); continue; }
            out.print(run(lines));
            out.println("end");
            out.flush();
            lines.clear();
        }
    }

    static String run(List<String> lines) {
        StringBuilder sb = new StringBuilder();
        java.nio.file.Path dir = null;
        try {
            dir = java.nio.file.Files.createTempDirectory("kspark-ref-");
            StreamsBuilder b = lines.contains("explicit")  // KIP-1111 reads the builder's config
                ? new StreamsBuilder(new TopologyConfig(new StreamsConfig(explicitProps()))) : new StreamsBuilder();
            Map<String, Object> vars = new HashMap<>();
            Properties p = new Properties();
            p.put(StreamsConfig.APPLICATION_ID_CONFIG, "ref");
            p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
            p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
            p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.LongSerde.class);
            p.put(StreamsConfig.STATE_DIR_CONFIG, dir.toString());
            List<String[]> inputs = new ArrayList<>();
            List<String> outs = new ArrayList<>();
            List<String[]> stores = new ArrayList<>();
            List<String> changelogs = new ArrayList<>();
            boolean dropped = false, metrics = false, storeMetrics = false, describe = false;
            for (String line : lines) {
                String[] t = line.split(" ");
                switch (t[0]) {
                    case "cache": p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, t[1]); break;
                    case "op": vars.put(t[1], op(b, vars, t)); break;
                    case "to": ((KStream) vars.get(t[1])).to(t[2], Produced.with(S, L)); outs.add(t[2]); break;
                    case "input": inputs.add(t); break;
                    case "store": stores.add(t); break;
                    case "changelog": changelogs.add(t[1]); break;
                    case "handler":
                        p.put(StreamsConfig.PROCESSING_EXCEPTION_HANDLER_CLASS_CONFIG, t[1].equals("continue")
                            ? LogAndContinueProcessingExceptionHandler.class : LogAndFailProcessingExceptionHandler.class);
                        break;
                    case "dropped": dropped = true; break;
                    case "describe": describe = true; break;
                    case "optimize": p.put(StreamsConfig.TOPOLOGY_OPTIMIZATION_CONFIG, StreamsConfig.OPTIMIZE); break;
                    case "explicit": p.put("ensure.explicit.internal.resource.naming", "true"); break;
                    case "metrics": metrics = true; p.put(StreamsConfig.METRICS_RECORDING_LEVEL_CONFIG, t[1]);
                        storeMetrics = t.length > 2 && t[2].equals("stores"); break;
                    default: break;
                }
            }
            Topology topology = b.build(p);
            if (describe)  // Java's text, line by line (trailing blanks kept, trailing newlines not)
                for (String l : topology.describe().toString().split("\n")) sb.append("describe ").append(l).append('\n');
            try (TopologyTestDriver d = new TopologyTestDriver(topology, p)) {
                Map<String, TestInputTopic<String, Long>> topics = new HashMap<>();
                for (String[] t : inputs) {
                    topics.computeIfAbsent(t[1], n -> d.createInputTopic(n, S.serializer(), L.serializer()))
                          .pipeInput(str(t[2]), num(t[3]), Instant.ofEpochMilli(Long.parseLong(t[4])));
                }
                for (String o : outs) {
                    for (TestRecord<String, Long> r : d.createOutputTopic(o, S.deserializer(), L.deserializer()).readRecordsToList())
                        sb.append("record ").append(o).append(' ').append(show(r.key())).append(' ')
                          .append(show(r.value())).append(' ').append(r.timestamp()).append('\n');
                }
                for (String[] t : stores) dump(d, t[1], t[2], sb);
                for (String store : changelogs) {  // the store's changelog records, as bytes
                    for (TestRecord<byte[], byte[]> r : d.createOutputTopic("ref-" + store + "-changelog",
                            new ByteArrayDeserializer(), new ByteArrayDeserializer()).readRecordsToList())
                        sb.append("changelog ").append(store).append(' ').append(hex(r.key())).append(' ')
                          .append(hex(r.value())).append(' ').append(r.timestamp()).append('\n');
                }
                if (dropped) sb.append("dropped ").append(dropped(d)).append('\n');
                if (metrics) names(d, sb, storeMetrics);
            }
        } catch (Throwable e) {
            Throwable c = e;
            while (c.getCause() != null && c.getMessage() != null && c.getMessage().contains("Exception caught in process")) c = c.getCause();
            return "error " + c.getClass().getSimpleName() + ": " + String.valueOf(c.getMessage()).replace('\n', ' ') + "\n";
        } finally {
            if (dir != null) try (var files = java.nio.file.Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (IOException ignored) { }
        }
        return sb.toString();
    }

    static String hex(byte[] b) {
        if (b == null) return "~";
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    static Properties explicitProps() {
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, "ref");
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "dummy:1234");
        p.put("ensure.explicit.internal.resource.naming", "true");
        return p;
    }

    static void dump(TopologyTestDriver d, String name, String kind, StringBuilder sb) {
        if (kind.equals("kv")) {
            try (KeyValueIterator<String, Long> it = (KeyValueIterator) d.getKeyValueStore(name).all()) {
                while (it.hasNext()) { KeyValue<String, Long> kv = it.next();
                    sb.append("row ").append(name).append(' ').append(kv.key).append(' ').append(show(kv.value)).append('\n'); }
            }
        } else {
            try (KeyValueIterator<Windowed<String>, Long> it = (KeyValueIterator) d.getWindowStore(name).all()) {
                while (it.hasNext()) { KeyValue<Windowed<String>, Long> kv = it.next();
                    sb.append("row ").append(name).append(' ').append(kv.key.key()).append('@').append(kv.key.window().start())
                      .append(' ').append(show(kv.value)).append('\n'); }
            }
        }
    }

    // the tasks' dropped-records-total (stream-task-metrics)
    static long dropped(TopologyTestDriver d) {
        double n = 0;
        for (Map.Entry<MetricName, ? extends Metric> e : d.metrics().entrySet())
            if (e.getKey().name().equals("dropped-records-total") && e.getKey().group().equals("stream-task-metrics"))
                n += ((Number) e.getValue().metricValue()).doubleValue();
        return (long) n;
    }

    // the state stores' metrics kspark records (issue 53): the calls to a store, its
    // restorations and its records' end-to-end latency; not RocksDB's own statistics, the
    // open iterators' or the suppression buffers'
    static final java.util.regex.Pattern STORE_CALLS = java.util.regex.Pattern.compile(
        "(put|put-if-absent|put-all|get|delete|range|all|prefix-scan|flush|restore|fetch|remove)"
        + "-(rate|latency-avg|latency-max)|record-e2e-latency-(avg|min|max)");

    // the task-, node-, topic-, store- and cache-level metrics' names, groups and tag keys
    // (issues 42 and 53)
    static void names(TopologyTestDriver d, StringBuilder sb, boolean storeMetrics) {
        List<String> out = new ArrayList<>();
        for (MetricName n : d.metrics().keySet()) {
            boolean store = storeMetrics && (n.group().equals("stream-record-cache-metrics")
                || n.group().equals("stream-state-metrics") && STORE_CALLS.matcher(n.name()).matches());
            if (!n.group().equals("stream-task-metrics") && !n.group().equals("stream-processor-node-metrics")
                    && !n.group().equals("stream-topic-metrics") && !store) continue;
            List<String> keys = new ArrayList<>(n.tags().keySet());
            Collections.sort(keys);
            String node = n.tags().getOrDefault("processor-node-id", n.tags().getOrDefault("record-cache-id", "-"));
            for (String k : keys) if (k.endsWith("-state-id")) node = n.tags().get(k);
            out.add("metric " + n.group() + " " + n.name() + " " + String.join(",", keys) + " "
                    + node + " " + n.tags().getOrDefault("topic", "-"));
        }
        Collections.sort(out);
        for (String line : out) sb.append(line).append('\n');
    }

    static String show(Object o) { return o == null ? "~" : o.toString(); }
    static String str(String s) { return s.equals("~") ? null : s; }
    static Long num(String s) { return s.equals("~") ? null : Long.valueOf(s); }
    static long ms(String s) { return Long.parseLong(s); }

    static Materialized mat(String[] t, int i) {
        if (t.length <= i || t[i].equals("-")) return Materialized.with(S, L);
        return ((Materialized) Materialized.as(t[i])).withKeySerde((Serde) S).withValueSerde((Serde) L);
    }

    // The named functions; lang.py defines the same ones.
    static Predicate pred(String n) {
        switch (n) {
            case "even": return (k, v) -> v != null && (Long) v % 2 == 0;
            case "big": return (k, v) -> v != null && (Long) v > 4;
            case "ka": return (k, v) -> "a".equals(k);
            default: throw new IllegalArgumentException("predicate " + n);
        }
    }

    static ValueMapper fn(String n) {
        switch (n) {
            case "inc": return v -> v == null ? null : (Long) v + 1;
            case "dbl": return v -> v == null ? null : (Long) v * 2;
            case "nul": return v -> v == null || (Long) v % 3 == 0 ? null : v;
            case "boom": return v -> {
                if (v != null && (Long) v % 5 == 0) throw new ArithmeticException("boom " + v);
                return v;
            };
            default: throw new IllegalArgumentException("mapper " + n);
        }
    }

    static String kfn(String n, Object k, Object v) {
        switch (n) {
            case "mod": return v == null ? null : "abc".substring((int) Math.floorMod((Long) v, 3L), (int) Math.floorMod((Long) v, 3L) + 1);
            case "key": return (String) k;
            case "flip": return k == null ? "a" : k.equals("a") ? "b" : k.equals("b") ? null : "a";
            default: throw new IllegalArgumentException("key mapper " + n);
        }
    }

    static Long plus(Object a, Object b) { return (a == null ? 0 : (Long) a) + (b == null ? 0 : (Long) b); }
    static ValueJoiner joiner() { return (l, r) -> (l == null ? -1 : (Long) l) * 100 + (r == null ? -1 : (Long) r); }

    static Object op(StreamsBuilder b, Map<String, Object> v, String[] t) {
        Object x = t.length > 3 ? v.get(t[3]) : null;
        switch (t[2]) {
            case "stream": return b.stream(t[3], Consumed.with(S, L));
            case "table": return b.table(t[3], Consumed.with(S, L), mat(t, 4));
            case "filter": return ((KStream) x).filter(pred(t[4]));
            case "filter_not": return ((KStream) x).filterNot(pred(t[4]));
            case "map_values": return ((KStream) x).mapValues(fn(t[4]));
            case "select_key": return ((KStream) x).selectKey((k, w) -> kfn(t[4], k, w));
            case "flat_map_values": return ((KStream) x).flatMapValues(w -> w == null ? List.of() : List.of(w, (Long) w * 10));
            case "merge": return ((KStream) x).merge((KStream) v.get(t[4]));
            case "repartition": return ((KStream) x).repartition(Repartitioned.with(S, L));
            case "to_table": return ((KStream) x).toTable(mat(t, 4));
            case "group_by_key": return ((KStream) x).groupByKey(Grouped.with(S, L));
            case "group_by": return ((KStream) x).groupBy((k, w) -> kfn(t[4], k, w), Grouped.with(S, L));
            case "time_windows": {
                TimeWindows w = TimeWindows.ofSizeAndGrace(Duration.ofMillis(ms(t[4])), Duration.ofMillis(ms(t[6])));
                if (ms(t[5]) != ms(t[4])) w = w.advanceBy(Duration.ofMillis(ms(t[5])));
                if (x instanceof CogroupedKStream) return ((CogroupedKStream) x).windowedBy(w);
                return ((KGroupedStream) x).windowedBy(w);
            }
            case "session_windows": {
                SessionWindows w = SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(ms(t[4])), Duration.ofMillis(ms(t[5])));
                if (x instanceof CogroupedKStream) return ((CogroupedKStream) x).windowedBy(w);
                return ((KGroupedStream) x).windowedBy(w);
            }
            case "sliding_windows": {
                SlidingWindows w = SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(ms(t[4])), Duration.ofMillis(ms(t[5])));
                if (x instanceof CogroupedKStream) return ((CogroupedKStream) x).windowedBy(w);
                return ((KGroupedStream) x).windowedBy(w);
            }
            case "emit_final":
                if (x instanceof SessionWindowedKStream) return ((SessionWindowedKStream) x).emitStrategy(EmitStrategy.onWindowClose());
                return ((TimeWindowedKStream) x).emitStrategy(EmitStrategy.onWindowClose());
            case "cogroup": return ((KGroupedStream) x).cogroup((k, w, agg) -> plus(agg, w))
                .cogroup((KGroupedStream) v.get(t[4]), (k, w, agg) -> (Long) agg - 2 * (w == null ? 0 : (Long) w));
            case "transform_values": {
                ValueTransformerWithKeySupplier sup = () -> new ValueTransformerWithKey<String, Long, Long>() {
                    long calls = 0;
                    public void init(org.apache.kafka.streams.processor.ProcessorContext c) { }
                    public Long transform(String k, Long w) { calls++; return w == null ? null : w * 1000 + calls; }
                    public void close() { }
                };
                return t.length > 4 ? ((KTable) x).transformValues(sup, mat(t, 4)) : ((KTable) x).transformValues(sup);
            }
            case "to_stream_by": return ((KTable) x).toStream((k, w) -> kfn(t[4], k, w));
            case "process_values": return ((KStream) x).processValues(() -> new org.apache.kafka.streams.processor.api.FixedKeyProcessor<String, Long, Long>() {
                org.apache.kafka.streams.processor.api.FixedKeyProcessorContext<String, Long> c;
                public void init(org.apache.kafka.streams.processor.api.FixedKeyProcessorContext<String, Long> c) { this.c = c; }
                public void process(org.apache.kafka.streams.processor.api.FixedKeyRecord<String, Long> r) {
                    c.forward(r.withValue(r.value() == null ? null : r.value() * 10).withTimestamp(r.timestamp() + 1));
                }
            });
            case "vtable": return b.table(t[3], Consumed.with(S, L), ((Materialized) Materialized.as(
                Stores.persistentVersionedKeyValueStore("v-" + t[3], Duration.ofMillis(ms(t[4]))))).withKeySerde((Serde) S).withValueSerde((Serde) L));
            case "count":
                if (x instanceof KGroupedStream) return ((KGroupedStream) x).count(mat(t, 4));
                if (x instanceof KGroupedTable) return ((KGroupedTable) x).count(mat(t, 4));
                if (x instanceof TimeWindowedKStream) return ((TimeWindowedKStream) x).count(mat(t, 4));
                return ((SessionWindowedKStream) x).count(mat(t, 4));
            case "reduce": {
                Reducer r = (a, c) -> plus(a, c);
                if (x instanceof KGroupedStream) return ((KGroupedStream) x).reduce(r, mat(t, 4));
                if (x instanceof KGroupedTable) return ((KGroupedTable) x).reduce(r, (a, c) -> (Long) a - (c == null ? 0 : (Long) c), mat(t, 4));
                if (x instanceof TimeWindowedKStream) return ((TimeWindowedKStream) x).reduce(r, mat(t, 4));
                return ((SessionWindowedKStream) x).reduce(r, mat(t, 4));
            }
            case "aggregate": {
                Initializer i = () -> 0L;
                Aggregator a = (k, w, agg) -> plus(agg, w);
                if (x instanceof CogroupedKStream) return ((CogroupedKStream) x).aggregate(i, mat(t, 4));
                if (x instanceof TimeWindowedCogroupedKStream) return ((TimeWindowedCogroupedKStream) x).aggregate(i, mat(t, 4));
                if (x instanceof SessionWindowedCogroupedKStream) return ((SessionWindowedCogroupedKStream) x).aggregate(i, (k, a1, a2) -> plus(a1, a2), mat(t, 4));
                if (x instanceof KGroupedStream) return ((KGroupedStream) x).aggregate(i, a, mat(t, 4));
                if (x instanceof KGroupedTable) return ((KGroupedTable) x).aggregate(i, a, (k, w, agg) -> (Long) agg - (w == null ? 0 : (Long) w), mat(t, 4));
                if (x instanceof TimeWindowedKStream) return ((TimeWindowedKStream) x).aggregate(i, a, mat(t, 4));
                return ((SessionWindowedKStream) x).aggregate(i, a, (k, a1, a2) -> plus(a1, a2), mat(t, 4));
            }
            case "suppress": return ((KTable) x).suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()));
            case "suppress_limit": {  // ms, then max records and max bytes ("-": no bound), emitting early
                Suppressed.BufferConfig<?> c = t[5].equals("-") && t[6].equals("-") ? Suppressed.BufferConfig.unbounded()
                    : t[5].equals("-") ? Suppressed.BufferConfig.maxBytes(Long.parseLong(t[6]))
                    : t[6].equals("-") ? Suppressed.BufferConfig.maxRecords(Long.parseLong(t[5]))
                    : Suppressed.BufferConfig.maxRecords(Long.parseLong(t[5])).withMaxBytes(Long.parseLong(t[6]));
                return ((KTable) x).suppress(Suppressed.untilTimeLimit(Duration.ofMillis(Long.parseLong(t[4])), c));
            }
            case "tfilter": return t.length > 5 ? ((KTable) x).filter(pred(t[4]), mat(t, 5)) : ((KTable) x).filter(pred(t[4]));
            case "tfilter_not": return t.length > 5 ? ((KTable) x).filterNot(pred(t[4]), mat(t, 5)) : ((KTable) x).filterNot(pred(t[4]));
            case "tmap_values": return t.length > 5 ? ((KTable) x).mapValues(fn(t[4]), mat(t, 5)) : ((KTable) x).mapValues(fn(t[4]));
            case "tjoin": case "tleft_join": case "touter_join": {
                KTable o = (KTable) v.get(t[4]);
                boolean m = t.length > 5;
                if (t[2].equals("tjoin")) return m ? ((KTable) x).join(o, joiner(), mat(t, 5)) : ((KTable) x).join(o, joiner());
                if (t[2].equals("tleft_join")) return m ? ((KTable) x).leftJoin(o, joiner(), mat(t, 5)) : ((KTable) x).leftJoin(o, joiner());
                return m ? ((KTable) x).outerJoin(o, joiner(), mat(t, 5)) : ((KTable) x).outerJoin(o, joiner());
            }
            case "fk_join": case "fk_left_join": {
                KTable o = (KTable) v.get(t[4]);
                java.util.function.Function ex = w -> kfn(t[5], null, w);
                if (t.length > 6) {
                    TableJoined tj = TableJoined.as(t[6]);
                    return t[2].equals("fk_join") ? ((KTable) x).join(o, ex, joiner(), tj) : ((KTable) x).leftJoin(o, ex, joiner(), tj);
                }
                return t[2].equals("fk_join") ? ((KTable) x).join(o, ex, joiner()) : ((KTable) x).leftJoin(o, ex, joiner());
            }
            case "tgroup_by": return ((KTable) x).groupBy((k, w) -> KeyValue.pair(kfn(t[4], k, w), w), Grouped.with(S, L));
            case "to_stream": return ((KTable) x).toStream();
            case "unwindow": return ((KStream) x).map((k, w) -> {
                Windowed wk = (Windowed) k;
                return KeyValue.pair(wk.key() + "@" + wk.window().start() + "/" + wk.window().end(), w);
            });
            case "join": case "left_join": case "outer_join": {
                Object o = v.get(t[4]);
                if (o instanceof KTable) {
                    Joined j = Joined.with(S, L, L);
                    if (t.length > 5) j = j.withGracePeriod(Duration.ofMillis(ms(t[5])));
                    return t[2].equals("join") ? ((KStream) x).join((KTable) o, joiner(), j) : ((KStream) x).leftJoin((KTable) o, joiner(), j);
                }
                long g = ms(t[6]);
                JoinWindows w = g < 0 ? JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis(ms(t[5])))
                                      : JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(ms(t[5])), Duration.ofMillis(g));
                StreamJoined sj = StreamJoined.with(S, L, L);
                if (t[2].equals("join")) return ((KStream) x).join((KStream) o, joiner(), w, sj);
                if (t[2].equals("left_join")) return ((KStream) x).leftJoin((KStream) o, joiner(), w, sj);
                return ((KStream) x).outerJoin((KStream) o, joiner(), w, sj);
            }
            default: throw new IllegalArgumentException("unknown op " + t[2]);
        }
    }
}
