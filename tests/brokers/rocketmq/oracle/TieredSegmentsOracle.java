/*
 * The tiered store's own file classes (tieredstore file/FlatFileStore, FlatMessageFile,
 * provider/PosixFileSegment, metadata/DefaultMetadataStore; 5.3+) as the oracle of
 * rmqlab.formats.tieredsegment: what a broker with the tiered store serves from its file system.
 * `TieredSegmentsOracle root=DIR tiered=DIR broker=NAME cluster=NAME out=FILE` loads the metadata
 * of root/config/tieredStoreMetadata.json and the segments under tiered/ as TieredMessageStore's
 * load does (FlatFileStore.load: every queue of the metadata, its CommitLog and ConsumeQueue
 * segments, the last one's size taken from the file), then for each queue writes its offsets
 * (getConsumeQueueMinOffset, getConsumeQueueCommitOffset, getCommitLogMinOffset,
 * getCommitLogCommitOffset) and, for each queue offset in range, the ConsumeQueue item
 * (getConsumeQueueAsync: CommitLog offset, size, tags code) and the message it serves
 * (getMessageAsync: its length, CRC32 of its bytes, and its QUEUEOFFSET and PHYSICALOFFSET
 * fields). With `queries=TSV` (topic, key a line) it also loads the index as the broker does
 * (IndexStoreService: the local tiered_index_file/ and the index segments the metadata lists) and
 * answers each key query (queryAsync, maxCount 64, all times): topic id, queue id, offset, size,
 * hash code and time diff of each item. Writes FILE (JSON). Run it on a copy: PosixFileSegment opens files read-write and
 * the load rewrites the metadata file.
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

import org.apache.rocketmq.tieredstore.MessageStoreConfig;
import org.apache.rocketmq.tieredstore.MessageStoreExecutor;
import org.apache.rocketmq.tieredstore.file.FlatFileStore;
import org.apache.rocketmq.tieredstore.index.IndexItem;
import org.apache.rocketmq.tieredstore.index.IndexStoreService;
import org.apache.rocketmq.tieredstore.util.MessageStoreUtil;
import org.apache.rocketmq.tieredstore.file.FlatMessageFile;
import org.apache.rocketmq.tieredstore.metadata.DefaultMetadataStore;

public class TieredSegmentsOracle {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        MessageStoreConfig cfg = new MessageStoreConfig();
        cfg.setStorePathRootDir(args.get("root"));
        cfg.setTieredStoreFilePath(args.get("tiered"));
        cfg.setBrokerName(args.get("broker"));
        cfg.setBrokerClusterName(args.get("cluster"));
        cfg.setTieredBackendServiceProvider("org.apache.rocketmq.tieredstore.provider.PosixFileSegment");

        DefaultMetadataStore metadata = new DefaultMetadataStore(cfg);
        MessageStoreExecutor executor = new MessageStoreExecutor();
        FlatFileStore store = new FlatFileStore(cfg, metadata, executor);
        if (!store.load()) throw new IllegalStateException("FlatFileStore.load failed");

        List<String> queues = new ArrayList<>();
        for (FlatMessageFile f : store.deepCopyFlatFileToList()) {
            StringBuilder q = new StringBuilder();
            long cqMin = f.getConsumeQueueMinOffset(), cqCommit = f.getConsumeQueueCommitOffset();
            q.append("{\"topic\":\"").append(f.getMessageQueue().getTopic().replace("\\", "\\\\").replace("\"", "\\\""))
                .append("\",\"queueId\":").append(f.getMessageQueue().getQueueId())
                .append(",\"topicId\":").append(f.getTopicId())
                .append(",\"cqMin\":").append(cqMin).append(",\"cqCommit\":").append(cqCommit)
                .append(",\"clMin\":").append(f.getCommitLogMinOffset())
                .append(",\"clCommit\":").append(f.getCommitLogCommitOffset())
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
            IndexStoreService index = new IndexStoreService(store.getFlatFileFactory(),
                MessageStoreUtil.getIndexFilePath(cfg.getBrokerName()), false);
            index.start();
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
