/*
 * What TieredSegmentsOracle.java (5.3+) and TieredFlatFileOracle.java (5.1-5.2) write, whatever
 * the release's class names: one queue's offsets and, for each queue offset, its ConsumeQueue item
 * and the message served at it; the items of a key query; and the JSON file around them.
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

import org.apache.rocketmq.tieredstore.index.IndexItem;

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

    /** The answer to each query of the TSV file `path` (topic, key a line): the items of
     *  `query(topic, key)` (IndexItem: the same class from 5.2 on). */
    public static List<String> answers(String path, BiFunction<String, String, List<IndexItem>> query)
        throws Exception {
        List<String> out = new ArrayList<>();
        for (String line : Files.readAllLines(new File(path).toPath(), StandardCharsets.UTF_8)) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t", -1);
            out.add(answer(query.apply(f[0], f[1])));
        }
        return out;
    }

    /** A key query's items, each [topic id, queue id, offset, size, hash code, time diff]. */
    public static String answer(List<IndexItem> items) {
        StringBuilder a = new StringBuilder("[");
        for (IndexItem it : items) {
            if (a.length() > 1) a.append(',');
            a.append('[').append(it.getTopicId()).append(',').append(it.getQueueId()).append(',')
                .append(it.getOffset()).append(',').append(it.getSize()).append(',')
                .append(it.getHashCode()).append(',').append(it.getTimeDiff()).append(']');
        }
        return a.append(']').toString();
    }

    public static void write(String path, List<String> queues, List<String> answers) throws Exception {
        try (PrintWriter w = new PrintWriter(new File(path), StandardCharsets.UTF_8.name())) {
            w.print("{\"queues\":[" + String.join(",\n", queues) + "],\n\"answers\":["
                + String.join(",\n", answers) + "]}");
        }
    }
}
