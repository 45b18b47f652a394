import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/** Jackson's bytes for JSON values, as Kafka Connect's JsonSerializer writes them (a plain
 *  ObjectMapper writing a JsonNode). Each input line: a value as ASCII JSON text, a tab, and
 *  another serializer's bytes for it in hex. Each output line: Jackson's bytes for the value,
 *  a tab, and Jackson's bytes for what it reads from the other bytes (both in hex, or
 *  "error" where Jackson refuses the text). */
public class JsonReference {
    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        HexFormat hex = HexFormat.of();
        BufferedReader in = new BufferedReader(
            new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            String[] parts = line.split("\t", 2);
            out.append(written(mapper, parts[0].getBytes(StandardCharsets.US_ASCII)))
               .append('\t').append(written(mapper, hex.parseHex(parts[1]))).append('\n');
        }
        System.out.print(out);
    }

    /** Jackson's bytes (hex) for the value it reads from json, or "error" if it refuses it. */
    static String written(ObjectMapper mapper, byte[] json) {
        try {
            return HexFormat.of().formatHex(mapper.writeValueAsBytes(mapper.readTree(json)));
        } catch (Exception e) {
            return "error";
        }
    }
}
