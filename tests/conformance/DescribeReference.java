// Java Kafka Streams' Topology.describe().toString() for topologies built with the Processor
// API: the reference for kspark's TopologyDescription text.
//
// Reads topologies from stdin, one statement per line, each ending with a line "end", and
// answers each with its description's text followed by a line "~end~" (or "error <message>").
//
//   source <name> <topic>[,<topic>...]
//   processor <name> <parent>[,<parent>...]
//   sink <name> <topic>|@ <parent>[,<parent>...]     @: a topic extractor printed "Extractor"
//   store <name> [<processor>,...]                   an in-memory key-value store
//   connect <processor> <store>[,<store>...]
//   global <store> <source> <topic> <processor>      Topology.addGlobalStore
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.RecordContext;
import org.apache.kafka.streams.processor.TopicNameExtractor;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.*;

@SuppressWarnings({"unchecked", "rawtypes"})
public class DescribeReference {
    static final class Extractor implements TopicNameExtractor<Object, Object> {
        public String extract(Object key, Object value, RecordContext context) { return "x"; }
        public String toString() { return "Extractor"; }
    }

    static final class Nothing implements Processor<Object, Object, Object, Object> {
        public void process(Record<Object, Object> record) { }
    }

    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
        List<String> lines = new ArrayList<>();
        for (String line; (line = in.readLine()) != null; ) {
            if (!line.equals("end")) { if (!line.isEmpty()) lines.add(line); continue; }
            try {
                out.print(build(lines).describe().toString());
            } catch (RuntimeException e) {
                out.println("error " + e.getMessage());
            }
            out.println("~end~");
            out.flush();
            lines.clear();
        }
    }

    static String[] list(String[] t, int i) {
        return t.length > i ? t[i].split(",") : new String[0];
    }

    static Topology build(List<String> lines) {
        Topology t = new Topology();
        ProcessorSupplier none = Nothing::new;
        for (String line : lines) {
            String[] w = line.split(" ");
            switch (w[0]) {
                case "source": t.addSource(w[1], list(w, 2)); break;
                case "processor": t.addProcessor(w[1], none, list(w, 2)); break;
                case "sink":
                    if (w[2].equals("@")) t.addSink(w[1], new Extractor(), list(w, 3));
                    else t.addSink(w[1], w[2], list(w, 3));
                    break;
                case "store":
                    t.addStateStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(w[1]),
                        Serdes.String(), Serdes.String()), list(w, 2));
                    break;
                case "connect": t.connectProcessorAndStateStores(w[1], list(w, 2)); break;
                case "global":
                    t.addGlobalStore(Stores.keyValueStoreBuilder(Stores.inMemoryKeyValueStore(w[1]),
                            Serdes.String(), Serdes.String()).withLoggingDisabled(),
                        w[2], new StringDeserializer(), new StringDeserializer(), w[3], w[4], none);
                    break;
                default: throw new IllegalArgumentException("unknown statement: " + line);
            }
        }
        return t;
    }
}
