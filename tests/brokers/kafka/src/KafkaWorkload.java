/*
 * The client side of rmqlab's real-Kafka scenarios (tests/support/kafka_harness.py): compiled by
 * the harness with javac against each release's own jars and run inside the broker's private
 * loopback-only network namespace. It uses only the stable client APIs of kafka-clients 2.8 to
 * 4.x: AdminClient (NewTopic with configs), KafkaProducer (codecs, headers, null keys and values,
 * idempotence, transactions committed and aborted), KafkaConsumer (a group committing offsets).
 *
 *   java KafkaWorkload workload BOOTSTRAP LOGDIR SEGMENT_CONFIG SEGMENT_BYTES LEGACY(true|false)
 *       one topic per codec, an idempotent and a transactional producer, a LogAppendTime topic,
 *       a compacted topic (waits until LOGDIR/cleaner-offset-checkpoint names it), old message
 *       formats v0/v1 (LEGACY: releases before 3.0), a consumer group leaving some lag
 *   java KafkaWorkload produce-forever BOOTSTRAP TOPIC SEGMENT_CONFIG
 *       creates TOPIC and produces small batches until killed (the crash scenario)
 *   java KafkaWorkload produce BOOTSTRAP TOPIC N ROUND
 *       creates TOPIC if missing (segment.bytes 1 GiB: it never rolls) and produces N records
 *
 * SEGMENT_CONFIG: the topic config that sets the segment size: segment.bytes, or from Kafka 4.1
 * (where segment.bytes is at least 1 MiB, KAFKA-19080) the internal.segment.bytes tests use.
 *
 * Every feature reached prints "FEATURE reached NAME", every one left out "FEATURE skipped NAME:
 * why"; the harness records them.
 */

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class KafkaWorkload {
    static final String GROUP = "rmqlab-group";
    static String segmentConfig = "segment.bytes";

    public static void main(String[] args) throws Exception {
        switch (args[0]) {
            case "workload":
                segmentConfig = args[3];
                workload(args[1], Paths.get(args[2]), Integer.parseInt(args[4]), Boolean.parseBoolean(args[5]));
                break;
            case "produce-forever":
                segmentConfig = args[3];
                produceForever(args[1], args[2]);
                break;
            case "produce":
                produce(args[1], args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
                break;
            default:
                throw new IllegalArgumentException("unknown command " + args[0]);
        }
    }

    static void feature(String name) {
        System.out.println("FEATURE reached " + name);
        System.out.flush();
    }

    static void skipped(String name, String why) {
        System.out.println("FEATURE skipped " + name + ": " + why);
        System.out.flush();
    }

    static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "30000");
        return AdminClient.create(p);
    }

    static void createTopic(Admin admin, String name, Map<String, String> configs) throws Exception {
        NewTopic t = new NewTopic(name, Optional.of(1), Optional.of((short) 1)).configs(configs);
        try {
            admin.createTopics(Collections.singletonList(t)).all().get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw e;
            }
        }
    }

    static Map<String, String> topicConfig(int segmentBytes, String... kv) {
        Map<String, String> m = new HashMap<>();
        m.put(segmentConfig, Integer.toString(segmentBytes));
        m.put("index.interval.bytes", "512");
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    static KafkaProducer<byte[], byte[]> producer(String bootstrap, String... kv) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("enable.idempotence", "false");
        p.put("acks", "all");
        p.put("linger.ms", "5");
        p.put("batch.size", "4096");
        for (int i = 0; i < kv.length; i += 2) {
            p.put(kv[i], kv[i + 1]);
        }
        return new KafkaProducer<>(p);
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    /** A record of a mixed workload: every 7th without a key, every 11th without a value,
     * every 3rd with headers (one with a null value), text that compresses and text that does not. */
    static ProducerRecord<byte[], byte[]> record(String topic, int i, String tag, boolean headers) {
        byte[] key = i % 7 == 3 ? null : utf8("key-" + (i % 50));
        StringBuilder v = new StringBuilder(tag).append(" #").append(i).append(" ");
        for (int k = 0; k < 1 + i % 9; k++) {
            v.append("payload-").append(i * 31 % 97).append(k % 2 == 0 ? " ünïcødé " : " ").append(Long.toHexString(i * 2654435761L));
        }
        byte[] value = i % 11 == 5 ? null : utf8(v.toString());
        List<Header> hs = new ArrayList<>();
        if (headers && i % 3 == 0) {
            hs.add(new RecordHeader("trace-id", utf8("t" + i)));
            hs.add(new RecordHeader("empty", null));
            if (i % 2 == 0) {
                hs.add(new RecordHeader("app.name", utf8("rmqlab")));
            }
        }
        return new ProducerRecord<>(topic, 0, null, key, value, hs);
    }

    static void workload(String bootstrap, Path logDir, int segmentBytes, boolean legacy) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            // one topic per codec, several batches each
            for (String codec : new String[] {"none", "gzip", "snappy", "lz4", "zstd"}) {
                String topic = "codec-" + codec;
                createTopic(admin, topic, topicConfig(segmentBytes));
                try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, "compression.type", codec)) {
                    for (int i = 0; i < 600; i++) {
                        p.send(record(topic, i, codec, true));
                        if (i % 37 == 36) {
                            p.flush();
                        }
                    }
                    p.flush();
                }
                feature("codec-" + codec);
            }
            // the broker's clock: LogAppendTime
            createTopic(admin, "log-append-time", topicConfig(segmentBytes, "message.timestamp.type", "LogAppendTime"));
            try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, "compression.type", "lz4")) {
                for (int i = 0; i < 300; i++) {
                    p.send(record("log-append-time", i, "lat", true));
                }
                p.flush();
            }
            feature("log-append-time");
            // an idempotent producer
            createTopic(admin, "idempotent", topicConfig(segmentBytes));
            try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, "enable.idempotence", "true",
                    "compression.type", "snappy", "max.in.flight.requests.per.connection", "5")) {
                for (int i = 0; i < 800; i++) {
                    p.send(record("idempotent", i, "idem", true));
                    if (i % 50 == 49) {
                        p.flush();
                    }
                }
                p.flush();
            }
            feature("idempotent");
            // a transactional producer: commits and aborts (control batches, .txnindex)
            createTopic(admin, "transactional", topicConfig(segmentBytes));
            try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, "enable.idempotence", "true",
                    "transactional.id", "rmqlab-txn", "compression.type", "gzip")) {
                p.initTransactions();
                int n = 0;
                for (int t = 0; t < 12; t++) {
                    p.beginTransaction();
                    for (int i = 0; i < 40; i++) {
                        p.send(record("transactional", n++, t % 3 == 1 ? "aborted" : "committed", true));
                        if (i == 19) {
                            p.flush();
                        }
                    }
                    if (t % 3 == 1) {
                        p.abortTransaction();
                    } else {
                        p.commitTransaction();
                    }
                }
            }
            feature("transactions-committed");
            feature("transactions-aborted");
            // old message formats: the broker converts to magic v0 / v1 on append
            if (legacy) {
                String[][] formats = {{"v0", "0.9.0"}, {"v1", "0.10.2"}};
                for (String[] f : formats) {
                    for (String codec : new String[] {"none", "gzip", "snappy", "lz4"}) {
                        String topic = "legacy-" + f[0] + "-" + codec;
                        createTopic(admin, topic, topicConfig(segmentBytes, "message.format.version", f[1]));
                        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, "compression.type", codec)) {
                            for (int i = 0; i < 400; i++) {
                                p.send(record(topic, i, f[0] + codec, false));
                                if (i % 29 == 28) {
                                    p.flush();
                                }
                            }
                            p.flush();
                        }
                    }
                    feature("message-format-" + f[0]);
                }
            } else {
                skipped("message-format-v0", "this release writes magic v2 only");
                skipped("message-format-v1", "this release writes magic v2 only");
            }
            // a consumer group that commits offsets and leaves a lag
            consumeSome(bootstrap, "codec-none", 400);
            feature("consumer-group");
            // a compacted topic: repeated keys and tombstones, cleaned by the log cleaner
            compacted(admin, bootstrap, logDir, segmentBytes);
        }
    }

    static void consumeSome(String bootstrap, String topic, int upTo) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("group.id", GROUP);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("max.poll.records", "100");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            c.subscribe(Collections.singletonList(topic));
            long next = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (next < upTo && System.currentTimeMillis() < deadline) {
                ConsumerRecords<byte[], byte[]> rs = c.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : rs) {
                    if (r.offset() < upTo) {
                        next = r.offset() + 1;
                    }
                }
                if (!rs.isEmpty()) {
                    // a commit per poll: several offset commits in __consumer_offsets
                    c.commitSync(Collections.singletonMap(tp, new OffsetAndMetadata(next, "rmqlab")));
                }
            }
            if (next < upTo) {
                throw new IllegalStateException("consumed only up to " + next);
            }
        }
    }

    static void compacted(Admin admin, String bootstrap, Path logDir, int segmentBytes) throws Exception {
        String topic = "compacted";
        createTopic(admin, topic, topicConfig(segmentBytes, "cleanup.policy", "compact",
                "min.cleanable.dirty.ratio", "0.01", "segment.ms", "2000", "delete.retention.ms", "86400000",
                "min.compaction.lag.ms", "0"));
        // enough bytes to roll several segments of segment.bytes
        int n = Math.max(600, 3 * segmentBytes / 700);
        StringBuilder pad = new StringBuilder();
        while (pad.length() < 600) {
            pad.append("compacted value ");
        }
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, "compression.type", "none")) {
            for (int i = 0; i < n; i++) {
                byte[] key = utf8("ck-" + (i % 40));
                byte[] value = i % 13 == 12 ? null : utf8(i + " " + pad);
                p.send(new ProducerRecord<>(topic, 0, key, value));
                if (i % 40 == 39) {
                    p.flush();
                }
            }
            p.flush();
        }
        feature("compacted-written");
        // the cleaner cleans rolled segments only; segment.ms rolls the active one on the next append
        Path checkpoint = logDir.resolve("cleaner-offset-checkpoint");
        long deadline = System.currentTimeMillis() + 90_000;
        int extra = 0;
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, "compression.type", "none")) {
            while (System.currentTimeMillis() < deadline) {
                if (Files.exists(checkpoint)) {
                    for (String line : Files.readAllLines(checkpoint, StandardCharsets.UTF_8)) {
                        String[] f = line.trim().split(" ");
                        if (f.length == 3 && f[0].equals(topic) && Long.parseLong(f[2]) > 0) {
                            feature("compacted-cleaned");
                            return;
                        }
                    }
                }
                Thread.sleep(500);
                p.send(new ProducerRecord<>(topic, 0, utf8("ck-" + (extra++ % 40)), utf8("late " + extra)));
                p.flush();
            }
        }
        skipped("compacted-cleaned", "the log cleaner did not clean within 90 s");
    }

    static void produceForever(String bootstrap, String topic) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            createTopic(admin, topic, topicConfig(65536));
        }
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, "acks", "1", "linger.ms", "0",
                "compression.type", "none", "retries", "0")) {
            for (int i = 0; ; i++) {
                p.send(record(topic, i, "crash", true));
                if (i % 20 == 19) {
                    p.flush();
                }
                if (i % 1000 == 999) {
                    System.out.println("SENT " + (i + 1));
                    System.out.flush();
                }
            }
        }
    }

    static void produce(String bootstrap, String topic, int n, int round) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            segmentConfig = "segment.bytes";
            createTopic(admin, topic, topicConfig(1 << 30, "segment.ms", "604800000"));
        }
        try (KafkaProducer<byte[], byte[]> p = producer(bootstrap, "compression.type", "none")) {
            for (int i = 0; i < n; i++) {
                p.send(record(topic, round * n + i, "round" + round, true));
                if (i % 25 == 24) {
                    p.flush();
                }
            }
            p.flush();
        }
        feature("restart-round-" + round);
    }
}
