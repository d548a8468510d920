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

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.tieredstore.MessageStoreConfig;
import org.apache.rocketmq.tieredstore.MessageStoreExecutor;
import org.apache.rocketmq.tieredstore.file.FlatFileStore;
import org.apache.rocketmq.tieredstore.index.IndexStoreService;
import org.apache.rocketmq.tieredstore.util.MessageStoreUtil;
import org.apache.rocketmq.tieredstore.file.FlatMessageFile;
import org.apache.rocketmq.tieredstore.metadata.DefaultMetadataStore;

public class TieredSegmentsOracle {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = TieredOracleOutput.args(argv);
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
            queues.add(TieredOracleOutput.queue(f.getMessageQueue().getTopic(), f.getMessageQueue().getQueueId(),
                f.getTopicId(), f.getConsumeQueueMinOffset(), f.getConsumeQueueCommitOffset(),
                f.getCommitLogMinOffset(), f.getCommitLogCommitOffset(),
                offset -> f.getConsumeQueueAsync(offset).join(), offset -> f.getMessageAsync(offset).join()));
        }
        List<String> answers = new ArrayList<>();
        if (args.containsKey("queries")) {
            IndexStoreService index = new IndexStoreService(store.getFlatFileFactory(),
                MessageStoreUtil.getIndexFilePath(cfg.getBrokerName()), false);
            index.start();
            answers = TieredOracleOutput.answers(args.get("queries"),
                (topic, key) -> TieredOracleOutput.items(index.queryAsync(topic, key, 64, 0L, Long.MAX_VALUE).join()));
        }
        TieredOracleOutput.write(args.get("out"), queues, answers);
        System.exit(0);   // the executors' threads are not daemons
    }
}
