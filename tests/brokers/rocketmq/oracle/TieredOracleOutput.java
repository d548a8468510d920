/*
 * What TieredSegmentsOracle.java (5.3+) and TieredFlatFileOracle.java (5.1-5.2) write, whatever
 * the release's class names: one queue's offsets and, for each queue offset, its ConsumeQueue item
 * and the message served at it; the rows of a key query's answer; and the JSON file around them.
 * It names no tiered store class, so that it compiles against every release's jars.
 */

import java.io.File;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.LongFunction;
import java.util.zip.CRC32;

public final class TieredOracleOutput {
    private TieredOracleOutput() {
    }

    /** The command line's `name=value` arguments. */
    public static Map<String, String> args(String[] argv) {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        return args;
    }

    /** A queue: {"topic", "queueId", "topicId", "cqMin", "cqCommit", "clMin", "clCommit", "units"}; each unit
     *  [offset, CommitLog offset, size, tags code, message length, CRC32, QUEUEOFFSET, PHYSICALOFFSET]. */
    public static String queue(String topic, int queueId, long topicId, long cqMin, long cqCommit, long clMin,
        long clCommit, LongFunction<ByteBuffer> item, LongFunction<ByteBuffer> message) {
        StringBuilder q = new StringBuilder();
        q.append("{\"topic\":\"").append(topic.replace("\\", "\\\\").replace("\"", "\\\""))
            .append("\",\"queueId\":").append(queueId).append(",\"topicId\":").append(topicId)
            .append(",\"cqMin\":").append(cqMin).append(",\"cqCommit\":").append(cqCommit)
            .append(",\"clMin\":").append(clMin).append(",\"clCommit\":").append(clCommit)
            .append(",\"units\":[");
        for (long offset = cqMin; offset < cqCommit; offset++) {
            ByteBuffer cq = item.apply(offset);
            long phy = cq.getLong(cq.position());
            int size = cq.getInt(cq.position() + 8);
            long tags = cq.getLong(cq.position() + 12);
            ByteBuffer msg = message.apply(offset);
            byte[] bytes = new byte[msg.remaining()];
            msg.duplicate().get(bytes);
            CRC32 crc = new CRC32();
            crc.update(bytes);
            long fieldQueueOffset = bytes.length >= 28 ? ByteBuffer.wrap(bytes).getLong(20) : -1;
            long fieldPhy = bytes.length >= 36 ? ByteBuffer.wrap(bytes).getLong(28) : -1;
            if (offset > cqMin) q.append(',');
            q.append('[').append(offset).append(',').append(phy).append(',').append(size).append(',')
                .append(tags).append(',').append(bytes.length).append(',').append(crc.getValue()).append(',')
                .append(fieldQueueOffset).append(',').append(fieldPhy).append(']');
        }
        return q.append("]}").toString();
    }

    /** The answer to each query of the TSV file `path` (topic, key a line): `query(topic, key)`'s rows. */
    public static List<String> answers(String path, BiFunction<String, String, List<long[]>> query)
        throws Exception {
        List<String> out = new ArrayList<>();
        for (String line : Files.readAllLines(new File(path).toPath(), StandardCharsets.UTF_8)) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t", -1);
            StringBuilder a = new StringBuilder("[");
            for (long[] row : query.apply(f[0], f[1])) {
                if (a.length() > 1) a.append(',');
                a.append('[');
                for (int i = 0; i < row.length; i++) a.append(i > 0 ? "," : "").append(row[i]);
                a.append(']');
            }
            out.add(a.append(']').toString());
        }
        return out;
    }

    /** IndexItems (5.2+, the same class in each release, reached by its getters) as rows
     *  [topic id, queue id, offset, size, hash code, time diff]. */
    public static List<long[]> items(List<?> indexItems) {
        List<long[]> rows = new ArrayList<>();
        String[] getters = {"getTopicId", "getQueueId", "getOffset", "getSize", "getHashCode", "getTimeDiff"};
        try {
            for (Object it : indexItems) {
                long[] row = new long[getters.length];
                for (int i = 0; i < getters.length; i++) {
                    row[i] = ((Number) it.getClass().getMethod(getters[i]).invoke(it)).longValue();
                }
                rows.add(row);
            }
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
        return rows;
    }

    public static void write(String path, List<String> queues, List<String> answers) throws Exception {
        try (PrintWriter w = new PrintWriter(new File(path), StandardCharsets.UTF_8.name())) {
            w.print("{\"queues\":[" + String.join(",\n", queues) + "],\n\"answers\":["
                + String.join(",\n", answers) + "]}");
        }
    }
}
