/*
 * The tiered store's own index classes (tieredstore index/IndexStoreFile, IndexItem; RIP-65, 5.2+)
 * as the oracle of rmqlab.formats.tieredindex. `TieredIndexOracle in=rows.tsv queries=queries.tsv
 * out=DIR slots=N items=N` puts every row's keys (topic, topicId, queueId, offset, size,
 * storeTimestamp, keys separated by spaces) into IndexStoreFile files under
 * DIR/root/tiered_index_file/, opening a new file (named by the row's timestamp) when putKey
 * answers FILE_FULL, as IndexStoreService does; answers every query (topic, key, maxCount, begin,
 * end) from each file as it stands (queryAsyncFromUnsealedFile), compacts each file (doCompaction:
 * DIR/root/tiered_index_file/compacting/<timestamp>), and answers the queries again from each
 * compacted file uploaded to a PosixFileSegment under DIR/tiered (queryAsyncFromSegmentFile, the
 * UPLOAD state). Writes DIR/answers.json. Topic ids are the ones the metadata store's addTopic
 * gives (the TSV's column is ignored), and each uploaded file is recorded as an index segment
 * (updateFileSegment), so DIR/root/config/tieredStoreMetadata.json is the metadata a tiered broker
 * keeps.
 *
 * IndexStoreFile, IndexItem and AppendResult keep their names and signatures from 5.2 on; the
 * classes around them do not, and are reached by reflection (Release): 5.2.x has
 * common.TieredMessageStoreConfig, metadata.TieredMetadataManager, provider.posix.PosixFileSegment
 * (config, type, path, baseOffset), metadata.FileSegmentMetadata and FileSegmentType.getType, and
 * needs TieredStoreExecutor.init() first; 5.3+ has MessageStoreConfig, metadata.DefaultMetadataStore,
 * provider.PosixFileSegment (5.3.3+ with a MessageStoreExecutor as a fifth argument),
 * metadata.entity.FileSegmentMetadata and getCode.
 */

import java.io.File;
import java.io.PrintWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import org.apache.rocketmq.tieredstore.common.AppendResult;
import org.apache.rocketmq.tieredstore.common.FileSegmentType;
import org.apache.rocketmq.tieredstore.index.IndexItem;
import org.apache.rocketmq.tieredstore.index.IndexStoreFile;

public class TieredIndexOracle {
    static final String PKG = "org.apache.rocketmq.tieredstore.";

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        File out = new File(args.get("out"));
        Release r = new Release();
        Object cfg = r.config.getConstructor().newInstance();
        call(cfg, "setStorePathRootDir", new File(out, "root").getPath());
        call(cfg, "setTieredStoreIndexFileMaxHashSlotNum", Integer.parseInt(args.get("slots")));
        call(cfg, "setTieredStoreIndexFileMaxIndexNum", Integer.parseInt(args.get("items")));
        call(cfg, "setTieredStoreFilePath", new File(out, "tiered").getPath());   // PosixFileSegment's base path

        Object metadata = r.metadata.getConstructor(r.config).newInstance(cfg);
        Constructor<IndexStoreFile> newFile = IndexStoreFile.class.getConstructor(r.config, long.class);
        List<IndexStoreFile> files = new ArrayList<>();
        IndexStoreFile current = null;
        int rows = 0, full = 0;
        for (String line : Files.readAllLines(new File(args.get("in")).toPath(), StandardCharsets.UTF_8)) {
            if (line.isEmpty()) continue;
            String[] f = line.split("\t", -1);
            if (call(metadata, "getTopic", f[0]) == null) call(metadata, "addTopic", f[0], -1L);
            f[1] = String.valueOf(call(call(metadata, "getTopic", f[0]), "getTopicId"));
            long ts = Long.parseLong(f[5]);
            Set<String> keys = new LinkedHashSet<>();
            for (String k : f[6].split(" ")) if (!k.isEmpty()) keys.add(k);
            if (current == null) {
                current = newFile.newInstance(cfg, ts);
                files.add(current);
            }
            AppendResult a = current.putKey(f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]), keys,
                    Long.parseLong(f[3]), Integer.parseInt(f[4]), ts);
            if (a == AppendResult.FILE_FULL) {
                full++;
                current = newFile.newInstance(cfg, ts + full);   // a new file, as createNewIndexFile(now)
                files.add(current);
                a = current.putKey(f[0], Integer.parseInt(f[1]), Integer.parseInt(f[2]), keys,
                        Long.parseLong(f[3]), Integer.parseInt(f[4]), ts);
            }
            if (a != AppendResult.SUCCESS) throw new IllegalStateException("putKey answered " + a + " for " + line);
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
            Object segment = r.indexSegment(cfg, "index-" + i);
            Object appended = call(segment, "append", compacted.duplicate(), file.getTimestamp());
            boolean committed = (Boolean) ((CompletableFuture<?>) call(segment, "commitAsync")).join();
            long position = (Long) call(segment, "getCommitPosition");
            if (appended != AppendResult.SUCCESS || !committed || position != compacted.remaining()) {
                throw new IllegalStateException("the segment took " + appended + ", committed " + committed + " to "
                        + position + " of " + compacted.remaining() + " bytes");
            }
            call(segment, "setMinTimestamp", file.getTimestamp());
            call(segment, "setMaxTimestamp", file.getEndTimestamp());
            IndexStoreFile uploaded = IndexStoreFile.class.getConstructor(cfg.getClass(), r.segment)
                .newInstance(cfg, segment);
            Object seg = r.segmentMetadata.getConstructor(String.class, long.class, int.class)
                .newInstance("index", segmentBase, r.indexType);
            call(seg, "setSize", (long) compacted.remaining());
            call(seg, "setBeginTimestamp", file.getTimestamp());
            call(seg, "setEndTimestamp", file.getEndTimestamp());
            call(seg, "setStatus", r.segmentMetadata.getField("STATUS_SEALED").getInt(null));
            call(metadata, "updateFileSegment", seg);
            segmentBase += compacted.remaining();
            json.append(",\"compactedSize\":").append(compacted.remaining())
                .append(",\"uploaded\":").append(answers(uploaded, queries)).append("}");
        }
        json.append("]}");
        call(metadata, "persist");
        try (PrintWriter w = new PrintWriter(new File(out, "answers.json"), "UTF-8")) {
            w.print(json);
        }
        System.exit(0);
    }

    /** The release's classes around the index (see the header). */
    static final class Release {
        final boolean v52 = exists(PKG + "common.TieredMessageStoreConfig");
        final Class<?> config = load(v52 ? "common.TieredMessageStoreConfig" : "MessageStoreConfig");
        final Class<?> metadata = load(v52 ? "metadata.TieredMetadataManager" : "metadata.DefaultMetadataStore");
        final Class<?> posix = load(v52 ? "provider.posix.PosixFileSegment" : "provider.PosixFileSegment");
        final Class<?> segment = load(v52 ? "provider.TieredFileSegment" : "provider.FileSegment");
        final Class<?> segmentMetadata = load(v52 ? "metadata.FileSegmentMetadata"
                                                   : "metadata.entity.FileSegmentMetadata");
        final int indexType;

        Release() throws Exception {
            Method code = FileSegmentType.class.getMethod(v52 ? "getType" : "getCode");
            indexType = (Integer) code.invoke(FileSegmentType.INDEX);
            if (v52) {   // queryAsync and the segment's commit run on its executors
                load("common.TieredStoreExecutor").getMethod("init").invoke(null);
            }
        }

        /** A PosixFileSegment of type INDEX at base offset 0: 5.3.3+ take the MessageStoreExecutor too. */
        Object indexSegment(Object cfg, String path) throws Exception {
            for (Constructor<?> c : posix.getConstructors()) {
                if (c.getParameterCount() == 5) {
                    Object executor = load("MessageStoreExecutor").getMethod("getInstance").invoke(null);
                    return c.newInstance(cfg, FileSegmentType.INDEX, path, 0L, executor);
                }
            }
            return posix.getConstructor(config, FileSegmentType.class, String.class, long.class)
                .newInstance(cfg, FileSegmentType.INDEX, path, 0L);
        }

        static Class<?> load(String name) throws ClassNotFoundException {
            return Class.forName(PKG + name);
        }

        static boolean exists(String name) {
            try {
                Class.forName(name);
                return true;
            } catch (ClassNotFoundException e) {
                return false;
            }
        }
    }

    /** `target.name(args)`, the public method of that name and arity whose parameters take them. */
    static Object call(Object target, String name, Object... args) throws Exception {
        for (Method m : target.getClass().getMethods()) {
            if (!m.getName().equals(name) || m.getParameterCount() != args.length) continue;
            Class<?>[] types = m.getParameterTypes();
            boolean fits = true;
            for (int i = 0; i < args.length && fits; i++) {
                fits = args[i] == null || box(types[i]).isInstance(args[i]);
            }
            if (fits) return m.invoke(target, args);
        }
        throw new NoSuchMethodException(target.getClass().getName() + "." + name + " of " + args.length + " arguments");
    }

    static Class<?> box(Class<?> t) {
        if (!t.isPrimitive()) return t;
        if (t == int.class) return Integer.class;
        if (t == long.class) return Long.class;
        if (t == boolean.class) return Boolean.class;
        return t;
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
