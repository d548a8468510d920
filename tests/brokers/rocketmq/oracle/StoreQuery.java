/*
 * The release's own DefaultMessageStore.queryMessage on a store folder, as a broker answers after
 * a restart on it: `StoreQuery conf=FILE queries=FILE out=FILE` configures the store as
 * broker.conf is read (StoreLoad.open), load()s it (which recovers the CommitLog and the
 * index), then asks queryMessage(topic, key, maxNum, begin, end) for each line of queries
 * (topic TAB key TAB maxNum TAB begin TAB end) and writes one line of out a query: the
 * PHYSICALOFFSET and TOTALSIZE of each record returned, in order, as "offset:size" separated by
 * spaces. Run it on a copy: load() recovers the store and writes an abort file.
 */

import java.io.BufferedReader;
import java.io.File;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.QueryMessageResult;

public class StoreQuery {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = StoreLoad.arguments(argv);
        DefaultMessageStore store = StoreLoad.open(args.get("conf"));
        if (!store.load()) throw new IllegalStateException("the store does not load");
        StringBuilder out = new StringBuilder();
        try (BufferedReader r = Files.newBufferedReader(new File(args.get("queries")).toPath(), StandardCharsets.UTF_8)) {
            for (String line; (line = r.readLine()) != null; ) {
                if (line.isEmpty()) continue;
                String[] q = line.split("\t", -1);
                QueryMessageResult result = store.queryMessage(q[0], q[1], Integer.parseInt(q[2]),
                    Long.parseLong(q[3]), Long.parseLong(q[4]));
                List<ByteBuffer> buffers = result.getMessageBufferList();
                for (int i = 0; i < buffers.size(); i++) {
                    ByteBuffer b = buffers.get(i);
                    if (i > 0) out.append(' ');
                    // PHYSICALOFFSET is at byte 28 of a record, TOTALSIZE at 0
                    out.append(b.getLong(b.position() + 28)).append(':').append(b.getInt(b.position()));
                }
                out.append('\n');
                result.release();
            }
        }
        Files.write(new File(args.get("out")).toPath(), out.toString().getBytes(StandardCharsets.UTF_8));
        try {
            store.shutdown();
        } catch (Throwable ignored) {
            // the answers are written
        }
        System.exit(0);
    }
}
