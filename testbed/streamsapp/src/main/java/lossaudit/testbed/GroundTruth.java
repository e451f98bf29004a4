package lossaudit.testbed;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.FileWriter;
import java.io.IOException;
import java.io.Writer;
import org.apache.avro.generic.GenericRecord;

/** Appends one JSON object per line to the ground-truth file: injected faults and what they dropped. */
final class GroundTruth implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Writer out;

    GroundTruth(String path) throws IOException {
        out = path == null || path.isEmpty() ? null : new FileWriter(path, true);
    }

    synchronized void write(ObjectNode n) {
        n.put("at_ms", System.currentTimeMillis());
        String line = n.toString();
        System.out.println("ground-truth: " + line);
        if (out == null) {
            return;
        }
        try {
            out.write(line);
            out.write('\n');
            out.flush();
        } catch (IOException e) {
            throw new IllegalStateException("writing ground truth: " + e, e);
        }
    }

    ObjectNode node(String event) {
        ObjectNode n = JSON.createObjectNode();
        n.put("event", event);
        return n;
    }

    /** Records that the update of input/key carried by rec was dropped at stage. */
    void drop(String stage, String input, String key, GenericRecord rec, String where) {
        ObjectNode n = node("drop");
        n.put("stage", stage);
        n.put("input", input);
        n.put("key", key);
        if (rec != null && rec.getSchema().getField("seq") != null) {
            n.put("seq", (Long) rec.get("seq"));
            n.put("ts", (Long) rec.get("ts"));
        }
        n.put("where", where);
        write(n);
    }

    @Override
    public synchronized void close() throws IOException {
        if (out != null) {
            out.close();
        }
    }
}
