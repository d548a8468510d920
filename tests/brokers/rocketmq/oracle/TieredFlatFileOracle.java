/*
 * The tiered store's file classes of 5.1-5.2 (tieredstore file/TieredFlatFileManager,
 * CompositeQueueFlatFile, TieredFlatFile, provider/posix/PosixFileSegment,
 * metadata/TieredMetadataManager) as the oracle of rmqlab.formats.tieredsegment on what such a
 * broker wrote. The same command and the same JSON as TieredSegmentsOracle.java (5.3+):
 * `TieredFlatFileOracle root=DIR tiered=DIR broker=NAME cluster=NAME out=FILE [queries=TSV]`
 * loads root/config/tieredStoreMetadata.json and the segments under tiered/ as the broker's
 * TieredMessageStore does at start (TieredFlatFileManager.load: every queue of the metadata, its
 * CommitLog and ConsumeQueue segments as TieredFlatFile recovers them), then writes each queue's
 * offsets (getConsumeQueueMinOffset, getConsumeQueueCommitOffset, getCommitLogMinOffset,
 * getCommitLogMaxOffset: the commit offset once loaded) and, for each queue offset in range, the
 * ConsumeQueue item (getConsumeQueueAsync) and the message getMessageAsync reads (its length,
 * CRC32 of its bytes, its QUEUEOFFSET and PHYSICALOFFSET fields). With `queries=TSV` (topic, key a
 * line) it answers each key query from the index the broker builds (getTieredIndexService:
 * IndexStoreService over the local tiered_index_file/ and the index segments of the metadata;
 * queryAsync, maxCount 64, all times). Run it on a copy: the load opens files read-write and
 * rewrites the metadata file.
 */

import java.io.File;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;

import org.apache.rocketmq.tieredstore.common.TieredMessageStoreConfig;
import org.apache.rocketmq.tieredstore.common.TieredStoreExecutor;
import org.apache.rocketmq.tieredstore.file.CompositeQueueFlatFile;
import org.apache.rocketmq.tieredstore.file.TieredFlatFileManager;
import org.apache.rocketmq.tieredstore.index.IndexItem;
import org.apache.rocketmq.tieredstore.index.IndexService;
import org.apache.rocketmq.tieredstore.metadata.TieredMetadataStore;
import org.apache.rocketmq.tieredstore.util.TieredStoreUtil;

public class TieredFlatFileOracle {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        TieredMessageStoreConfig cfg = new TieredMessageStoreConfig();
        cfg.setStorePathRootDir(args.get("root"));
        cfg.setTieredStoreFilePath(args.get("tiered"));
        cfg.setBrokerName(args.get("broker"));
        cfg.setBrokerClusterName(args.get("cluster"));
        cfg.setTieredBackendServiceProvider("org.apache.rocketmq.tieredstore.provider.posix.PosixFileSegment");

        TieredStoreExecutor.init();   // the executors TieredMessageStore starts first
        TieredMetadataStore metadata = TieredStoreUtil.getMetadataStore(cfg);
        TieredFlatFileManager manager = TieredFlatFileManager.getInstance(cfg);
        if (!manager.load()) throw new IllegalStateException("TieredFlatFileManager.load failed");

        List<String> queues = new ArrayList<>();
        for (CompositeQueueFlatFile f : manager.deepCopyFlatFileToList()) {
            StringBuilder q = new StringBuilder();
            String topic = f.getMessageQueue().getTopic();
            long cqMin = f.getConsumeQueueMinOffset(), cqCommit = f.getConsumeQueueCommitOffset();
            q.append("{\"topic\":\"").append(topic.replace("\\", "\\\\").replace("\"", "\\\""))
                .append("\",\"queueId\":").append(f.getMessageQueue().getQueueId())
                .append(",\"topicId\":").append(metadata.getTopic(topic).getTopicId())
                .append(",\"cqMin\":").append(cqMin).append(",\"cqCommit\":").append(cqCommit)
                .append(",\"clMin\":").append(f.getCommitLogMinOffset())
                .append(",\"clCommit\":").append(f.getCommitLogMaxOffset())
                .append(",\"units\":[");
            for (long offset = cqMin; offset < cqCommit; offset++) {
                ByteBuffer cq = f.getConsumeQueueAsync(offset).join();
                long phy = cq.getLong(cq.position());
                int size = cq.getInt(cq.position() + 8);
                long tags = cq.getLong(cq.position() + 12);
                ByteBuffer msg = f.getMessageAsync(offset).join();
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
            q.append("]}");
            queues.add(q.toString());
        }
        List<String> answers = new ArrayList<>();
        if (args.containsKey("queries")) {
            IndexService index = TieredFlatFileManager.getTieredIndexService(cfg);
            for (String line : java.nio.file.Files.readAllLines(new File(args.get("queries")).toPath(),
                StandardCharsets.UTF_8)) {
                if (line.isEmpty()) continue;
                String[] f = line.split("\t", -1);
                List<IndexItem> got = index.queryAsync(f[0], f[1], 64, 0L, Long.MAX_VALUE).join();
                StringBuilder a = new StringBuilder("[");
                for (IndexItem it : got) {
                    if (a.length() > 1) a.append(',');
                    a.append('[').append(it.getTopicId()).append(',').append(it.getQueueId()).append(',')
                        .append(it.getOffset()).append(',').append(it.getSize()).append(',')
                        .append(it.getHashCode()).append(',').append(it.getTimeDiff()).append(']');
                }
                answers.add(a.append(']').toString());
            }
        }
        try (PrintWriter w = new PrintWriter(new File(args.get("out")), StandardCharsets.UTF_8.name())) {
            w.print("{\"queues\":[" + String.join(",\n", queues) + "],\n\"answers\":["
                + String.join(",\n", answers) + "]}");
        }
        System.exit(0);   // the executors' threads are not daemons
    }
}
