import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The oracle of schema.JavaString: reads one hex-encoded byte string per line
 * on stdin and prints, per line, the hex of
 * {@code new String(bytes, UTF_8).getBytes(UTF_8)}, which is what a Kafka
 * Streams application writes as a selected or re-serialized String key.
 *
 * <p>Each line is decoded the three ways the pipeline decodes strings, and the
 * program fails (exit 1) if they disagree: Avro's {@code Utf8#toString}
 * ({@code new String(b, 0, n, UTF_8)}), Kafka's {@code StringDeserializer}
 * ({@code new String(b, "UTF-8")}) and {@code new String(b, UTF_8)}. Kafka's
 * {@code StringSerializer} encodes with {@code getBytes("UTF-8")}; that is
 * checked against {@code getBytes(UTF_8)} the same way.
 *
 * <p>Run as a single-file program: {@code java JavaString.java < in.hex}.
 */
public final class JavaString {
    private JavaString() {}

    static byte[] unhex(String s) {
        if (s.length() % 2 != 0) {
            throw new IllegalArgumentException("odd number of hex digits: " + s);
        }
        byte[] out = new byte[s.length() / 2];
        for (int i = 0; i < out.length; i++) {
            out[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        }
        return out;
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(2 * b.length);
        for (byte x : b) {
            sb.append(String.format("%02x", x & 0xff));
        }
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.US_ASCII);
        String line;
        int n = 0;
        while ((line = in.readLine()) != null) {
            n++;
            byte[] b = unhex(line.trim());
            String avro = new String(b, 0, b.length, StandardCharsets.UTF_8);
            String kafka = new String(b, "UTF-8");
            String plain = new String(b, StandardCharsets.UTF_8);
            if (!avro.equals(kafka) || !avro.equals(plain)) {
                System.err.println("line " + n + " (" + line + "): the String constructors disagree");
                System.exit(1);
            }
            byte[] enc = avro.getBytes(StandardCharsets.UTF_8);
            if (!Arrays.equals(enc, avro.getBytes("UTF-8"))) {
                System.err.println("line " + n + " (" + line + "): getBytes(UTF_8) and getBytes(\"UTF-8\") disagree");
                System.exit(1);
            }
            out.println(hex(enc));
        }
        out.flush();
        if (out.checkError()) {
            System.exit(1);
        }
    }
}
