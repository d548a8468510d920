/*
 * The tiered store's file classes of 5.1-5.2 (tieredstore file/TieredFlatFileManager,
 * CompositeQueueFlatFile, TieredFlatFile, provider/posix/PosixFileSegment,
 * metadata/TieredMetadataManager) as the oracle of rmqlab.formats.tieredsegment on what such a
 * broker wrote. The same command and the same JSON as TieredSegmentsOracle.java (5.3+):
 * `TieredFlatFileOracle root=DIR tiered=DIR broker=NAME cluster=NAME slots=N items=N out=FILE [queries=TSV]`
 * (slots, items: the broker's tieredStoreIndexFileMaxHashSlotNum and MaxIndexNum)
 * loads root/config/tieredStoreMetadata.json and the segments under tiered/ as the broker's
 * TieredMessageStore does at start (TieredFlatFileManager.load: every queue of the metadata, its
 * CommitLog and ConsumeQueue segments as TieredFlatFile recovers them), then writes each queue's
 * offsets (getConsumeQueueMinOffset, getConsumeQueueCommitOffset, getCommitLogMinOffset,
 * getCommitLogMaxOffset: the commit offset once loaded) and, for each queue offset in range, the
 * ConsumeQueue item (getConsumeQueueAsync) and the message getMessageAsync reads (its length,
 * CRC32 of its bytes, its QUEUEOFFSET and PHYSICALOFFSET fields). With `queries=TSV` (topic, key a
 * line) it answers each key query as the release does (keyQuery below: 5.2's IndexStoreService over
 * the local tiered_index_file/ and the index segments of the metadata, or 5.1's fetcher over the
 * uploaded index; maxCount 64, all times). Run it on a copy: the load opens files read-write and
 * rewrites the metadata file.
 */

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.tieredstore.common.TieredMessageStoreConfig;
import org.apache.rocketmq.tieredstore.common.TieredStoreExecutor;
import org.apache.rocketmq.tieredstore.file.CompositeQueueFlatFile;
import org.apache.rocketmq.tieredstore.file.TieredFlatFileManager;
import org.apache.rocketmq.tieredstore.metadata.TieredMetadataStore;
import org.apache.rocketmq.tieredstore.util.TieredStoreUtil;

public class TieredFlatFileOracle {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = TieredOracleOutput.args(argv);
        TieredMessageStoreConfig cfg = new TieredMessageStoreConfig();
        cfg.setStorePathRootDir(args.get("root"));
        cfg.setTieredStoreFilePath(args.get("tiered"));
        cfg.setBrokerName(args.get("broker"));
        cfg.setBrokerClusterName(args.get("cluster"));
        cfg.setTieredBackendServiceProvider("org.apache.rocketmq.tieredstore.provider.posix.PosixFileSegment");
        // the index geometry the broker ran with: IndexStoreFile reads a segment's slots by it
        cfg.setTieredStoreIndexFileMaxHashSlotNum(Integer.parseInt(args.get("slots")));
        cfg.setTieredStoreIndexFileMaxIndexNum(Integer.parseInt(args.get("items")));

        TieredStoreExecutor.init();   // the executors TieredMessageStore starts first
        TieredMetadataStore metadata = TieredStoreUtil.getMetadataStore(cfg);
        TieredFlatFileManager manager = TieredFlatFileManager.getInstance(cfg);
        if (!manager.load()) throw new IllegalStateException("TieredFlatFileManager.load failed");

        List<String> queues = new ArrayList<>();
        for (CompositeQueueFlatFile f : manager.deepCopyFlatFileToList()) {
            String topic = f.getMessageQueue().getTopic();
            queues.add(TieredOracleOutput.queue(topic, f.getMessageQueue().getQueueId(),
                metadata.getTopic(topic).getTopicId(), f.getConsumeQueueMinOffset(), f.getConsumeQueueCommitOffset(),
                f.getCommitLogMinOffset(), f.getCommitLogMaxOffset(),
                offset -> f.getConsumeQueueAsync(offset).join(), offset -> f.getMessageAsync(offset).join()));
        }
        List<String> answers = new ArrayList<>();
        if (args.containsKey("queries")) {
            answers = TieredOracleOutput.answers(args.get("queries"), keyQuery(cfg));
        }
        TieredOracleOutput.write(args.get("out"), queues, answers);
        System.exit(0);   // the executors' threads are not daemons
    }

    /** The release's key query: 5.2's index service (IndexStoreService.queryAsync: its items, as
     *  TieredOracleOutput.items rows), or 5.1's fetcher (TieredMessageFetcher.queryMessageAsync:
     *  the messages it reads, each as [-1, its QUEUEID, its PHYSICALOFFSET (the tiered CommitLog
     *  offset), its size, -1, -1]). Reached by reflection: each release lacks the other's classes. */
    static java.util.function.BiFunction<String, String, List<long[]>> keyQuery(TieredMessageStoreConfig cfg)
        throws Exception {
        ClassLoader loader = TieredFlatFileOracle.class.getClassLoader();
        try {
            loader.loadClass("org.apache.rocketmq.tieredstore.index.IndexService");
            Object index = TieredFlatFileManager.class.getMethod("getTieredIndexService", TieredMessageStoreConfig.class)
                .invoke(null, cfg);
            java.lang.reflect.Method query = index.getClass().getMethod("queryAsync", String.class, String.class,
                int.class, long.class, long.class);
            return (topic, key) -> {
                try {
                    return TieredOracleOutput.items((List<?>) ((java.util.concurrent.CompletableFuture<?>)
                        query.invoke(index, topic, key, 64, 0L, Long.MAX_VALUE)).join());
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            };
        } catch (ClassNotFoundException fiveOne) {
            // TieredIndexFile starts by compacting and uploading a full local file: wait for it
            // (commit(true) joins the compaction) so that every query asks the same files
            Object indexFile = TieredFlatFileManager.class.getMethod("getIndexFile", TieredMessageStoreConfig.class)
                .invoke(null, cfg);
            indexFile.getClass().getMethod("commit", boolean.class).invoke(indexFile, true);
            Class<?> fetcherClass = loader.loadClass("org.apache.rocketmq.tieredstore.TieredMessageFetcher");
            Object fetcher = fetcherClass.getConstructor(TieredMessageStoreConfig.class).newInstance(cfg);
            java.lang.reflect.Method query = fetcherClass.getMethod("queryMessageAsync", String.class, String.class,
                int.class, long.class, long.class);
            return (topic, key) -> {
                try {
                    Object result = ((java.util.concurrent.CompletableFuture<?>)
                        query.invoke(fetcher, topic, key, 64, 0L, Long.MAX_VALUE)).join();
                    List<long[]> rows = new ArrayList<>();
                    for (Object b : (List<?>) result.getClass().getMethod("getMessageBufferList").invoke(result)) {
                        java.nio.ByteBuffer m = ((java.nio.ByteBuffer) b).duplicate();
                        rows.add(new long[] {-1, m.getInt(m.position() + 12), m.getLong(m.position() + 28),
                            m.remaining(), -1, -1});
                    }
                    return rows;
                } catch (ReflectiveOperationException e) {
                    throw new IllegalStateException(e);
                }
            };
        }
    }
}
