/*
 * RocketMQ's own DefaultMessageStore (rocketmq-store of the release on the class path) rebuilding
 * a store's ConsumeQueue and index files from its CommitLog, then answering key queries, timed
 * for bench_compare.py:
 *
 *   StoreBench conf=FILE queries=TSV answers=TSV out=JSON
 *
 * conf is read as broker.conf is (MixAll.properties2Object into MessageStoreConfig); the store
 * folder it names holds a CommitLog and no consumequeue/ or index/, so the broker rebuilds them
 * (5.3.3: load() recovers the CommitLog and dispatches each message past the ConsumeQueues' end
 * as it goes, CommitLog.recoverNormally -> onCommitLogDispatch; ReputMessageService, started by
 * start(), takes whatever is left). Timed: load(), then from start() until
 * dispatchBehindBytes() is 0, then queryMessage(topic, key, 64, 0, Long.MAX_VALUE) of each
 * line of queries (topic TAB key). answers gets one line a query: the PHYSICALOFFSET of each
 * message returned, in order, space separated. shutdown() (not timed) flushes the files, so the
 * folder then holds what the broker wrote, for the caller to compare.
 */

import java.io.BufferedReader;
import java.io.File;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.QueryMessageResult;

public class StoreBench {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = StoreLoad.arguments(argv);
        DefaultMessageStore store = StoreLoad.open(args.get("conf"));   // configured as broker.conf does
        List<String[]> queries = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(new File(args.get("queries")).toPath(), StandardCharsets.UTF_8)) {
            for (String line; (line = r.readLine()) != null; ) {
                if (!line.isEmpty()) queries.add(line.split("\t", 2));
            }
        }

        long t0 = System.nanoTime();
        if (!store.load()) throw new IllegalStateException("load() refused the store");
        long t1 = System.nanoTime();
        store.start();
        while (store.dispatchBehindBytes() > 0 || store.getReputFromOffset() < store.getMaxPhyOffset()) {
            Thread.sleep(0, 200_000);
        }
        long t2 = System.nanoTime();

        StringBuilder answers = new StringBuilder();
        long found = 0;
        long t3 = System.nanoTime();
        for (String[] q : queries) {
            QueryMessageResult result = store.queryMessage(q[0], q[1], 64, 0L, Long.MAX_VALUE);
            List<ByteBuffer> buffers = result.getMessageBufferList();
            for (int i = 0; i < buffers.size(); i++) {
                ByteBuffer b = buffers.get(i);
                if (i > 0) answers.append(' ');
                answers.append(b.getLong(b.position() + 28));   // PHYSICALOFFSET
            }
            answers.append('\n');
            found += buffers.size();
            result.release();
        }
        long t4 = System.nanoTime();
        long dispatched = store.getMaxPhyOffset() - store.getMinPhyOffset();
        store.shutdown();
        Files.write(new File(args.get("answers")).toPath(), answers.toString().getBytes(StandardCharsets.UTF_8));
        try (PrintWriter w = new PrintWriter(new File(args.get("out")), "UTF-8")) {
            w.printf("{\"load_s\": %.6f, \"dispatch_s\": %.6f, \"query_s\": %.6f, \"queries\": %d, \"found\": %d, "
                     + "\"bytes\": %d}", (t1 - t0) / 1e9, (t2 - t1) / 1e9, (t4 - t3) / 1e9, queries.size(), found,
                     dispatched);
        }
        System.exit(0);
    }
}
