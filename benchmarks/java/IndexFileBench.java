/*
 * RocketMQ's own IndexFile (org.apache.rocketmq.store.index.IndexFile, rocketmq-store of the
 * release on the class path) timed on the reference workload, for bench_compare.py:
 *
 *   IndexFileBench file=PATH keys=N lookups=M out=JSON
 *
 * Key n is "TopicTest#ORDER_<n>", phyOffset 200*(n+1), storeTimestamp 1718000000000 + n/10, put
 * in order into a new file of the default geometry (5,000,000 slots, 20,000,000 entries): the
 * keys are made before the clock starts, as rmqlab's build gets them made. Then flush() (the
 * header written, the mapping forced: timed apart), then M look-ups of key (i * 2654435761) mod N
 * through selectPhyOffset(list, key, 64, 0, Long.MAX_VALUE), each answer checked to hold the
 * key's own offset. Writes {"put_s", "flush_s", "lookup_s", "found", "keys", "lookups"}.
 */

import java.io.File;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.store.index.IndexFile;

public class IndexFileBench {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        int n = Integer.parseInt(args.get("keys"));
        int lookups = Integer.parseInt(args.get("lookups"));
        String[] keys = new String[n];
        for (int i = 0; i < n; i++) keys[i] = "TopicTest#ORDER_" + i;

        long t0 = System.nanoTime();
        IndexFile file = new IndexFile(args.get("file"), 5_000_000, 20_000_000, 0L, 0L);
        for (int i = 0; i < n; i++) {
            if (!file.putKey(keys[i], 200L * (i + 1), 1718000000000L + i / 10)) {
                throw new IllegalStateException("putKey refused key " + i);
            }
        }
        long t1 = System.nanoTime();
        file.flush();
        long t2 = System.nanoTime();

        int found = 0;
        List<Long> offsets = new ArrayList<>();
        long t3 = System.nanoTime();
        for (int i = 0; i < lookups; i++) {
            int k = (int) ((i * 2654435761L) % n);
            offsets.clear();
            file.selectPhyOffset(offsets, keys[k], 64, 0L, Long.MAX_VALUE);
            if (offsets.contains(200L * (k + 1))) found++;
        }
        long t4 = System.nanoTime();
        file.shutdown();
        try (PrintWriter w = new PrintWriter(new File(args.get("out")), "UTF-8")) {
            w.printf("{\"put_s\": %.6f, \"flush_s\": %.6f, \"lookup_s\": %.6f, \"found\": %d, \"keys\": %d, "
                     + "\"lookups\": %d}", (t1 - t0) / 1e9, (t2 - t1) / 1e9, (t4 - t3) / 1e9, found, n, lookups);
        }
        System.exit(0);
    }
}
