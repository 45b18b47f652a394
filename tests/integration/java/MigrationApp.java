// A Java Kafka Streams 4.1 application, run by tests/integration/test_migration.py: an
// unnamed count, a windowed count, a key-changing aggregation and a windowed count's final
// results (suppress), under exactly_once_v2.
//
//   java -cp <classes>:<libs>/* MigrationApp BOOTSTRAP APP_ID SOURCE OUT_PREFIX STATE_DIR
//
// Prints "describe" and its topology's describe() text, then "running" once the
// application runs; closes cleanly (committing) when a line "stop" arrives on stdin.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.TimeWindows;

public class MigrationApp {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], appId = args[1], source = args[2], out = args[3], stateDir = args[4];
        Serde<String> s = Serdes.String();
        Serde<Long> l = Serdes.Long();
        StreamsBuilder b = new StreamsBuilder();
        KStream<String, String> in = b.stream(source, Consumed.with(s, s));
        in.groupByKey().count().toStream().to(out + "-counts", Produced.with(s, l));
        in.groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofHours(1), Duration.ofHours(1)))
          .count().toStream((w, v) -> w.key() + "@" + w.window().start())
          .to(out + "-windowed", Produced.with(s, l));
        in.groupBy((k, v) -> v, Grouped.with(s, s)).count().toStream().to(out + "-by-value", Produced.with(s, l));
        in.groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(10), Duration.ofMillis(5)))
          .count().suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
          .toStream((w, v) -> w.key() + "@" + w.window().start())
          .to(out + "-final", Produced.with(s, l));
        Topology topology = b.build();
        System.out.println("describe");
        System.out.print(topology.describe());
        System.out.println("end-describe");

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put("consumer.auto.offset.reset", "earliest");
        KafkaStreams streams = new KafkaStreams(topology, p);
        CountDownLatch running = new CountDownLatch(1);
        streams.setStateListener((now, before) -> { if (now == KafkaStreams.State.RUNNING) running.countDown(); });
        streams.start();
        running.await();
        System.out.println("running");
        System.out.flush();
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = stdin.readLine()) != null; ) {
            if (line.trim().equals("stop")) break;
        }
        streams.close(Duration.ofSeconds(60));
        System.out.println("closed " + streams.state());
        System.out.flush();
    }
}
