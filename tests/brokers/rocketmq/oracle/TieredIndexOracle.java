/*
 * The tiered store's own index classes (tieredstore index/IndexStoreFile, IndexItem; 5.3+) as the
 * oracle of rmqlab.formats.tieredindex. `TieredIndexOracle in=rows.tsv queries=queries.tsv out=DIR
 * slots=N items=N` puts every row's keys (topic, topicId, queueId, offset, size, storeTimestamp,
 * keys separated by spaces) into IndexStoreFile files under DIR/root/tiered_index_file/, opening
 * a new file (named by the row's timestamp) when putKey answers FILE_FULL, as IndexStoreService
 * does; answers every query (topic, key, maxCount, begin, end) from each file as it stands
 * (queryAsyncFromUnsealedFile), compacts each file (doCompaction: DIR/root/tiered_index_file/
 * compacting/<timestamp>), and answers the queries again from each compacted file uploaded to a
 * PosixFileSegment under DIR/tiered (queryAsyncFromSegmentFile, the UPLOAD state). Writes
 * DIR/answers.json. Topic ids are the ones DefaultMetadataStore.addTopic gives (the TSV's column
 * is ignored), and each uploaded file is recorded as an index segment (updateFileSegment), so
 * DIR/root/config/tieredStoreMetadata.json is the metadata a tiered broker keeps.
 * 5.3.x and 5.5.x share these signatures but PosixFileSegment's constructor (see indexSegment).
 */

import java.io.File;
import java.io.PrintWriter;
import java.lang.reflect.Constructor;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.LinkedHashMap;
import java.util.Set;

import org.apache.rocketmq.tieredstore.MessageStoreConfig;
import org.apache.rocketmq.tieredstore.common.AppendResult;
import org.apache.rocketmq.tieredstore.common.FileSegmentType;
import org.apache.rocketmq.tieredstore.index.IndexItem;
import org.apache.rocketmq.tieredstore.index.IndexStoreFile;
import org.apache.rocketmq.tieredstore.metadata.DefaultMetadataStore;
import org.apache.rocketmq.tieredstore.metadata.entity.FileSegmentMetadata;
import org.apache.rocketmq.tieredstore.provider.PosixFileSegment;

public class TieredIndexOracle {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        File out = new File(args.get("out"));
        MessageStoreConfig cfg = new MessageStoreConfig();
        cfg.setStorePathRootDir(new File(out, "root").getPath());
        cfg.setTieredStoreIndexFileMaxHashSlotNum(Integer.parseInt(args.get("slots")));
        cfg.setTieredStoreIndexFileMaxIndexNum(Integer.parseInt(args.get("items")));
        cfg.setTieredStoreFilePath(new File(out, "tiered").getPath());   // PosixFileSegment's base path

        DefaultMetadataStore metadata = new DefaultMetadataStore(cfg);
        List<IndexStoreFile> files = new ArrayList<>();
        IndexStoreFile current = null;
        int rows = 0, full = 0;
        for (String line : Files.readAllLines(new File(args.get("in")).toPath(), StandardCharsets.UTF_8)) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t", -1);
            if (metadata.getTopic(f[0]) == null) metadata.addTopic(f[0], -1L);
            f[1] = String.valueOf(metadata.getTopic(f[0]).getTopicId());
            long ts = Long.parseLong(f[5]);
            Set<String> keys = new LinkedHashSet<>();
            for (String k : f[6].split(" ")) if (!k.isEmpty()) keys.add(k);
            if (current == null) {
                current = new IndexStoreFile(cfg, ts);
                files.add(current);
            }
            AppendResult r = current.putKey(f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]), keys,
                    Long.parseLong(f[3]), Integer.parseInt(f[4]), ts);
            if (r == AppendResult.FILE_FULL) {
                full++;
                current = new IndexStoreFile(cfg, ts + full);   // a new file, as createNewIndexFile(now)
                files.add(current);
                r = current.putKey(f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]), keys,
                        Long.parseLong(f[3]), Integer.parseInt(f[4]), ts);
            }
            if (r != AppendResult.SUCCESS) throw new IllegalStateException("putKey answered " + r + " for " + line);
            rows++;
        }
        List<String[]> queries = new ArrayList<>();
        for (String line : Files.readAllLines(new File(args.get("queries")).toPath(), StandardCharsets.UTF_8)) {
            if (!line.isEmpty()) queries.add(line.split("\t", -1));
        }
        long segmentBase = 0;
        StringBuilder json = new StringBuilder("{\"rows\":").append(rows).append(",\"files\":[");
        for (int i = 0; i < files.size(); i++) {
            IndexStoreFile file = files.get(i);
            json.append(i == 0 ? "" : ",").append("{\"timestamp\":").append(file.getTimestamp())
                .append(",\"endTimestamp\":").append(file.getEndTimestamp())
                .append(",\"hashSlotCount\":").append(file.getHashSlotCount())
                .append(",\"indexItemCount\":").append(file.getIndexItemCount())
                .append(",\"status\":\"").append(file.getFileStatus()).append("\"")
                .append(",\"local\":").append(answers(file, queries));
            ByteBuffer compacted = file.doCompaction();
            PosixFileSegment segment = indexSegment(cfg, "index-" + i);
            AppendResult appended = segment.append(compacted.duplicate(), file.getTimestamp());
            boolean committed = segment.commitAsync().join();
            if (appended != AppendResult.SUCCESS || !committed || segment.getCommitPosition() != compacted.remaining()) {
                throw new IllegalStateException("the segment took " + appended + ", committed " + committed + " to "
                        + segment.getCommitPosition() + " of " + compacted.remaining() + " bytes (max "
                        + segment.getMaxSize() + ")");
            }
            segment.setMinTimestamp(file.getTimestamp());
            segment.setMaxTimestamp(file.getEndTimestamp());
            IndexStoreFile uploaded = new IndexStoreFile(cfg, segment);
            FileSegmentMetadata segmentMetadata = new FileSegmentMetadata("index", segmentBase,
                    FileSegmentType.INDEX.getCode());
            segmentMetadata.setSize(compacted.remaining());
            segmentMetadata.setBeginTimestamp(file.getTimestamp());
            segmentMetadata.setEndTimestamp(file.getEndTimestamp());
            segmentMetadata.setStatus(FileSegmentMetadata.STATUS_SEALED);
            metadata.updateFileSegment(segmentMetadata);
            segmentBase += compacted.remaining();
            json.append(",\"compactedSize\":").append(compacted.remaining())
                .append(",\"uploaded\":").append(answers(uploaded, queries)).append("}");
        }
        json.append("]}");
        metadata.persist();
        try (PrintWriter w = new PrintWriter(new File(out, "answers.json"), "UTF-8")) {
            w.print(json);
        }
        System.exit(0);
    }

    /**
     * A PosixFileSegment of type INDEX at base offset 0: 5.3.3 and later take the store's
     * MessageStoreExecutor as a fifth argument, 5.3.0 - 5.3.2 have the four only.
     */
    static PosixFileSegment indexSegment(MessageStoreConfig cfg, String path) throws Exception {
        for (Constructor<?> c : PosixFileSegment.class.getConstructors()) {
            Class<?>[] types = c.getParameterTypes();
            if (types.length == 5) {
                Object executor = Class.forName("org.apache.rocketmq.tieredstore.MessageStoreExecutor")
                    .getMethod("getInstance").invoke(null);
                return (PosixFileSegment) c.newInstance(cfg, FileSegmentType.INDEX, path, 0L, executor);
            }
        }
        return PosixFileSegment.class.getConstructor(MessageStoreConfig.class, FileSegmentType.class, String.class,
            long.class).newInstance(cfg, FileSegmentType.INDEX, path, 0L);
    }

    static String answers(IndexStoreFile file, List<String[]> queries) throws Exception {
        StringBuilder b = new StringBuilder("[");
        for (int q = 0; q < queries.size(); q++) {
            String[] f = queries.get(q);
            List<IndexItem> items = file.queryAsync(f[0], f[1], Integer.parseInt(f[2]), Long.parseLong(f[3]),
                    Long.parseLong(f[4])).get();
            b.append(q == 0 ? "" : ",").append("[");
            for (int i = 0; i < items.size(); i++) {
                IndexItem it = items.get(i);
                b.append(i == 0 ? "" : ",").append("[").append(it.getTopicId()).append(",").append(it.getQueueId())
                    .append(",").append(it.getOffset()).append(",").append(it.getSize()).append(",")
                    .append(it.getTimeDiff()).append(",").append(it.getHashCode()).append("]");
            }
            b.append("]");
        }
        return b.append("]").toString();
    }
}
