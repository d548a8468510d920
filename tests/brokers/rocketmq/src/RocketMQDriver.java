/*
 * rmqlab's real-RocketMQ driver: compiled by tests/support/rocketmq_harness.py with javac against
 * each release's own jars (never built inside the checkout), run inside the harness's
 * loopback-only network namespace against a name server and a broker of that release.
 *
 * Modes (arguments after the mode are key=value):
 *   workload  producers and consumers: DefaultMQProducer (keys, tags, user properties with
 *             Chinese and emoji, batches, MessageQueueSelector ordered sends, bodies over the
 *             compression threshold, delay levels, 5.x timer messages through
 *             MessageAccessor.putProperty(TIMER_DELIVER_MS)), TransactionMQProducer (commit,
 *             rollback, UNKNOW; TransactionListener through java.lang.reflect.Proxy, as its
 *             package differs between releases), DefaultMQPushConsumer (retry, dead letter),
 *             DefaultMQPullConsumer (committed offsets with lag), DefaultMQAdminExt
 *             (createAndUpdateTopicConfig). Writes sends.jsonl (every SendResult) and workload.json
 *             (features reached and skipped, with the reason).
 *   tail      sends one message after another until the broker dies (the crash scenario),
 *             one acks.jsonl line per acknowledged send.
 *   answers   the broker's own answers: DefaultMQAdminExt queryMessage / viewMessage /
 *             searchOffset / minOffset / maxOffset / examineConsumeStats, and the raw
 *             QUERY_MESSAGE (request code 12) through NettyRemotingClient, decoded with
 *             MessageDecoder.decodes: the offsets the broker's IndexService returned, before the
 *             client filters them by key. Keys and queues come from a read-only MessageDecoder walk
 *             of the CommitLog files. The raw PULL_MESSAGE (request code 11, no suspend, no
 *             commit) at several offsets of every queue, with and without a tag subscription: the
 *             broker's response code, next/min/max offsets and the records it returned. (A 4.x
 *             broker answers an offset past the end with an OFFSET_MOVED_EVENT message of its own.)
 *             Writes answers.json.
 *   decode    offline, after the broker stopped: MessageDecoder.decode(buffer, readBody=true,
 *             deCompressBody=false) of every CommitLog record into decoded.jsonl (a compressed
 *             body also decoded with deCompressBody=true, as a consumer gets it; in a DLedger
 *             CommitLog with the header of the DLedger entry around it), and
 *             StoreCheckpoint (read from a copy in a temporary folder) into checkpoint.json.
 *
 * Only APIs present from 4.2 to 5.5 are named in the source; classes that moved package between
 * 4.x and 5.x (request headers, ConsumeStats, TransactionListener's use) are reached by reflection.
 */

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.QueryResult;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.store.StoreCheckpoint;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class RocketMQDriver {
    static final int BLANK_MAGIC = 0xCBD43194;
    static final int MAGIC_V1 = 0xDAA320A7, MAGIC_V2 = 0xDAA320AB;   // MessageDecoder.MESSAGE_MAGIC_CODE(_V2)
    static final int DLEDGER_BLANK = -1;          // MmapFileList.BLANK_MAGIC_CODE
    static final int DLEDGER_BODY_OFFSET = 48;    // DLedgerEntry.BODY_OFFSET
    static final int QUERY_MESSAGE = 12;          // RequestCode.QUERY_MESSAGE, the same in every release
    static final int PULL_MESSAGE = 11;           // RequestCode.PULL_MESSAGE, the same in every release
    static final int FLAG_SUBSCRIPTION = 0x4;     // PullSysFlag: the request carries its subscription (no suspend, no commit)
    static final String UNIQUE_FLAG = "_UNIQUE_KEY_QUERY";  // MixAll.UNIQUE_MSG_QUERY_FLAG

    static Map<String, String> args = new HashMap<>();
    static final Map<String, Object> reached = new TreeMap<>();
    static final Map<String, String> skipped = new TreeMap<>();

    public static void main(String[] argv) throws Exception {
        for (int i = 1; i < argv.length; i++) {
            int eq = argv[i].indexOf('=');
            args.put(argv[i].substring(0, eq), argv[i].substring(eq + 1));
        }
        try {
            switch (argv[0]) {
                case "workload": workload(); break;
                case "tail": tail(); break;
                case "answers": answers(); break;
                case "decode": decode(); break;
                default: throw new IllegalArgumentException(argv[0]);
            }
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
        }
        System.exit(0);   // client threads (netty, timers) must not keep the JVM alive
    }

    static String arg(String name) {
        String v = args.get(name);
        if (v == null) throw new IllegalArgumentException("missing argument " + name);
        return v;
    }

    static boolean flag(String name) {
        return "true".equals(args.get(name));
    }

    // ---------------------------------------------------------------- workload

    static PrintWriter sends;
    static final int PLAIN = 400, BATCHES = 10, BATCH_SIZE = 20;
    static final String PUSH_GROUP_SHORT = "G_push";

    static void workload() throws Exception {
        String ns = arg("namesrv"), brokerAddr = arg("broker");
        File out = new File(arg("out"));
        sends = new PrintWriter(new OutputStreamWriter(new FileOutputStream(new File(out, "sends.jsonl")), StandardCharsets.UTF_8), true);
        long t0 = System.currentTimeMillis();

        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("admin-workload");
        admin.start();
        String longGroup = args.containsKey("longGroup") ? arg("longGroup") : null;
        Object[][] topicQueues = {{"TopicA", 4}, {"TopicB", 2}, {"TopicOrder", 4}, {"TopicBig", 2},
                {"TopicDelay", 2}, {"TopicTimer", 2}, {"TopicTx", 2}, {"TopicCrash", 2}, {"%RETRY%G_pull", 1},
                {"%RETRY%" + PUSH_GROUP_SHORT, 1}};
        for (Object[] tq : topicQueues) {
            createTopic(admin, brokerAddr, (String) tq[0], (Integer) tq[1]);
        }
        if (longGroup != null) {
            try {
                createTopic(admin, brokerAddr, "%RETRY%" + longGroup, 1);
            } catch (Exception e) {
                skipped.put("long_retry_topic_create", e.toString().split("\n")[0] + " (the broker creates it itself)");
            }
        }
        String longTopic = repeat("LongTopic_", 14);   // 140 bytes: over the 127 of a v1 record
        try {
            createTopic(admin, brokerAddr, longTopic, 1);
        } catch (Exception e) {
            skipped.put("long_topic_create", e.toString());
        }
        // the name server has the routes before anyone sends (a new topic is registered asynchronously)
        for (Object[] tq : topicQueues) {
            waitForRoute(admin, (String) tq[0]);
        }

        DefaultMQProducer producer = new DefaultMQProducer("P_main");
        producer.setNamesrvAddr(ns);
        producer.setInstanceName("p-main");
        producer.setSendMsgTimeout(15000);
        producer.setRetryTimesWhenSendFailed(4);
        producer.start();

        // delay levels first (level 3 is 10 s with the default messageDelayLevel): 1..3 delivered
        // during the run, 18 (2 h) still pending at shutdown
        long delaySent = System.currentTimeMillis();
        for (int level : new int[]{1, 2, 3, 1, 2, 3, 18, 18}) {
            Message m = new Message("TopicDelay", "delay", ("delay level " + level).getBytes(StandardCharsets.UTF_8));
            m.setKeys(Arrays.asList("delay-" + level, "shared"));
            m.setDelayTimeLevel(level);
            record("delay", producer.send(m), Arrays.asList("delay-" + level));
        }
        reached.put("delay_levels", "1,2,3 delivered; 18 pending");

        // the push consumer runs while the producers send
        List<DefaultMQPushConsumer> push = startPush(ns, longGroup);

        // plain sends: keys (several per message, some shared), tags, user properties
        int plain = 0;
        for (int i = 0; i < PLAIN; i++) {
            String topic = i % 3 == 0 ? "TopicB" : "TopicA";
            List<String> keys = new ArrayList<>(Arrays.asList("k-" + i, "user-" + (i % 7), "shared"));
            if (i % 5 == 0) keys.add("订单-" + (i % 3));
            if (i % 11 == 0) keys.add("🔑emoji-" + (i % 2));
            if (i == 17) keys.add("retry-once");
            if (i == 29) keys.add("to-dlq");
            Message m = new Message(topic, "tag" + (i % 4), ("body " + i + " 中文 😀 " + repeat("x", (i * 37) % 400)).getBytes(StandardCharsets.UTF_8));
            m.setKeys(keys);
            m.putUserProperty("who", "用户-" + (i % 3));
            m.putUserProperty("emoji", "😀🎉");
            m.putUserProperty("n", Integer.toString(i));
            record("plain", producer.send(m), keys);
            plain++;
        }
        reached.put("plain_sends", plain);
        // a message without keys or tags
        record("plain", producer.send(new Message("TopicA", "bare".getBytes(StandardCharsets.UTF_8))), null);

        // batches (one topic, no delay)
        int batched = 0;
        try {
            for (int b = 0; b < BATCHES; b++) {
                List<Message> batch = new ArrayList<>();
                for (int j = 0; j < BATCH_SIZE; j++) {
                    Message m = new Message("TopicA", "batch", ("batch " + b + "/" + j + " 批").getBytes(StandardCharsets.UTF_8));
                    m.setKeys(Arrays.asList("batch-" + b, "bk-" + b + "-" + j, "shared"));
                    batch.add(m);
                }
                record("batch", producer.send(batch), Arrays.asList("batch-" + b));
                batched += batch.size();
            }
            reached.put("batch_messages", batched);
        } catch (Exception e) {
            skipped.put("batch", e.toString());
        }

        // ordered sends
        MessageQueueSelector selector = new MessageQueueSelector() {
            public MessageQueue select(List<MessageQueue> mqs, Message msg, Object arg) {
                return mqs.get(((Integer) arg) % mqs.size());
            }
        };
        for (int i = 0; i < 40; i++) {
            int order = i % 6;
            Message m = new Message("TopicOrder", "order", ("order " + order + " step " + i).getBytes(StandardCharsets.UTF_8));
            m.setKeys(Arrays.asList("order-" + order, "ok-" + i));
            record("ordered", producer.send(m, selector, order), Arrays.asList("order-" + order));
        }
        reached.put("ordered_sends", 40);

        // bodies over the compression threshold (compressed by the client: sysflag bit 0x1)
        for (int i = 0; i < 6; i++) {
            StringBuilder sb = new StringBuilder();
            for (int j = 0; sb.length() < 5000 + 3000 * i; j++) sb.append("压缩 line ").append(j).append(" of message ").append(i).append('\n');
            Message m = new Message("TopicBig", "big", sb.toString().getBytes(StandardCharsets.UTF_8));
            m.setKeys(Arrays.asList("big-" + i, "shared"));
            record("compressed", producer.send(m), Arrays.asList("big-" + i));
        }
        Message small = new Message("TopicBig", "big", repeat("y", 3000).getBytes(StandardCharsets.UTF_8));
        small.setKeys("big-small");
        record("uncompressed", producer.send(small), Arrays.asList("big-small"));
        reached.put("compressed_bodies", 6);
        compressionTypes(ns);

        // 5.x timer messages (TIMER_DELIVER_MS, what Message.setDeliverTimeMs sets)
        optional("timer_messages", flag("timer"), "release has no timer wheel (5.x only)", () -> {
            long now = System.currentTimeMillis();
            for (int i = 0; i < 6; i++) {
                long at = i < 3 ? now + 2000 + 500 * i : now + 3600_000L + i;
                Message m = new Message("TopicTimer", "timer", ("timer " + i + " at " + at).getBytes(StandardCharsets.UTF_8));
                m.setKeys(Arrays.asList("timer-" + i, "shared"));
                MessageAccessor.putProperty(m, "TIMER_DELIVER_MS", Long.toString(at));
                record("timer", producer.send(m), Arrays.asList("timer-" + i));
            }
            // past the roll window (timerRollWindowSlot, 2 days at 1 s): the wheel holds it at a
            // roll point (MAGIC_ROLL) until then, its TIMER_OUT_MS says when it fires
            long far = now + 60L * 3600_000L;
            Message roll = new Message("TopicTimer", "timer", ("timer roll at " + far).getBytes(StandardCharsets.UTF_8));
            roll.setKeys(Arrays.asList("timer-roll", "shared"));
            MessageAccessor.putProperty(roll, "TIMER_DELIVER_MS", Long.toString(far));
            record("timer", producer.send(roll), Arrays.asList("timer-roll"));
            // one cancelled: a delete marker (TIMER_DEL_UNIQKEY = real topic + "+" + the unique key,
            // TimerMessageStore.buildDeleteKey) due at the same time drops it at dequeue (MAGIC_DELETE)
            long cancelAt = now + 3600_000L + 100;
            Message doomed = new Message("TopicTimer", "timer", ("timer cancelled at " + cancelAt).getBytes(StandardCharsets.UTF_8));
            doomed.setKeys(Arrays.asList("timer-cancelled", "shared"));
            MessageAccessor.putProperty(doomed, "TIMER_DELIVER_MS", Long.toString(cancelAt));
            SendResult sent = producer.send(doomed);
            record("timer", sent, Arrays.asList("timer-cancelled"));
            Message delete = new Message("TopicTimer", "timer", ("cancel " + sent.getMsgId()).getBytes(StandardCharsets.UTF_8));
            delete.setKeys(Arrays.asList("timer-cancel", "shared"));
            MessageAccessor.putProperty(delete, "TIMER_DELIVER_MS", Long.toString(cancelAt));
            MessageAccessor.putProperty(delete, "TIMER_DEL_UNIQKEY", "TopicTimer+" + sent.getMsgId());
            record("timer-cancel", producer.send(delete), Arrays.asList("timer-cancel"));
            return "3 due during the run, 3 due in 1 h, 1 in 60 h (rolled), 1 cancelled";
        });

        // light message queues (4.9.3+, enableLmq and enableMultiDispatch): the broker dispatches
        // each message to its own queue and to every %LMQ% queue INNER_MULTI_DISPATCH names
        optional("lmq_messages", flag("lmq"), "no light message queues before 4.9.3 (MultiDispatch)", () -> {
            for (int i = 0; i < 24; i++) {
                Message m = new Message("TopicA", "lmq", ("lmq " + i).getBytes(StandardCharsets.UTF_8));
                m.setKeys(Arrays.asList("lmq-" + i, "shared"));
                MessageAccessor.putProperty(m, "INNER_MULTI_DISPATCH", i % 3 == 0 ? "%LMQ%lmq-a,%LMQ%lmq-b" : "%LMQ%lmq-a");
                record("lmq", producer.send(m), Arrays.asList("lmq-" + i));
            }
            return "24 to %LMQ%lmq-a, 8 of them also to %LMQ%lmq-b";
        });

        // a topic longer than 127 bytes (v2 record on 5.x)
        if (!skipped.containsKey("long_topic_create")) {
            try {
                Message m = new Message(longTopic, "long", "long topic".getBytes(StandardCharsets.UTF_8));
                m.setKeys(Arrays.asList("long-topic-key", "shared"));
                record("long_topic", producer.send(m), Arrays.asList("long-topic-key"));
                reached.put("long_topic", longTopic.length());
            } catch (Exception e) {
                skipped.put("long_topic", e.toString());
            }
        } else {
            skipped.put("long_topic", skipped.get("long_topic_create"));
        }

        // transactions
        transactions(ns);

        // IPv6 name server address for a client
        ipv6Client(ns);

        // consumers
        finishPush(push, longGroup);
        pullConsumer(ns);

        // more messages after the consumers stopped: lag
        for (int i = 0; i < 30; i++) {
            Message m = new Message("TopicA", "late", ("late " + i).getBytes(StandardCharsets.UTF_8));
            m.setKeys(Arrays.asList("late-" + i, "shared"));
            record("late", producer.send(m), Arrays.asList("late-" + i));
        }
        reached.put("lag_messages", 30);

        // let delayed, timer and retried messages and transaction checks happen
        long waitUntil = Math.max(delaySent + 11_000, System.currentTimeMillis() + 1500);
        Thread.sleep(Math.max(0, waitUntil - System.currentTimeMillis()));
        producer.shutdown();
        admin.shutdown();
        sends.close();
        Map<String, Object> w = new LinkedHashMap<>();
        w.put("reached", reached);
        w.put("skipped", skipped);
        w.put("push_groups", longGroup == null || longSkipped ? Arrays.asList(PUSH_GROUP_SHORT) : Arrays.asList(PUSH_GROUP_SHORT, longGroup));
        w.put("transaction_checks", txChecks == null ? 0 : txChecks.get());
        w.put("wall_ms", System.currentTimeMillis() - t0);
        writeJson(new File(out, "workload.json"), w);
    }

    /** One step of the workload that may fail on a release (what it returns is what was reached). */
    interface Step {
        Object run() throws Exception;
    }

    /**
     * A feature of the workload the release may lack: `step` runs where `has`, and what it returns
     * is reached[name]; where it throws, or the release lacks the feature (`absent`), skipped[name]
     * says why.
     */
    static void optional(String name, boolean has, String absent, Step step) {
        if (!has) {
            skipped.put(name, absent);
            return;
        }
        try {
            reached.put(name, step.run());
        } catch (Exception e) {
            skipped.put(name, e.toString());
        }
    }

    static void waitForRoute(DefaultMQAdminExt admin, String topic) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            try {
                Object route = admin.examineTopicRouteInfo(topic);
                if (route != null) return;
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) throw e;
            }
            Thread.sleep(200);
        }
    }

    static void createTopic(DefaultMQAdminExt admin, String brokerAddr, String topic, int queues) throws Exception {
        TopicConfig tc = new TopicConfig(topic, queues, queues, 6);
        admin.createAndUpdateTopicConfig(brokerAddr, tc);
    }

    static void record(String kind, SendResult r, List<String> keys) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("kind", kind);
        o.put("status", String.valueOf(r.getSendStatus()));
        o.put("msgId", r.getMsgId());
        o.put("offsetMsgId", r.getOffsetMsgId());
        MessageQueue mq = r.getMessageQueue();
        o.put("topic", mq.getTopic());
        o.put("brokerName", mq.getBrokerName());
        o.put("queueId", mq.getQueueId());
        o.put("queueOffset", r.getQueueOffset());
        o.put("keys", keys);
        o.put("ackedAt", System.currentTimeMillis());
        try {
            Object state = r.getClass().getMethod("getLocalTransactionState").invoke(r);
            o.put("transactionState", String.valueOf(state));
        } catch (Exception ignored) {
        }
        synchronized (RocketMQDriver.class) {
            sends.println(toJson(o));
            sends.flush();
        }
    }

    static void transactions(String ns) {
        Class<?> listener;
        try {
            listener = Class.forName("org.apache.rocketmq.client.producer.TransactionListener");
        } catch (ClassNotFoundException e) {
            skipped.put("transactions", "no TransactionListener in this client (before 4.3)");
            return;
        }
        try {
            TransactionMQProducer tx = new TransactionMQProducer("P_tx");
            tx.setNamesrvAddr(ns);
            tx.setInstanceName("p-tx");
            tx.setSendMsgTimeout(15000);
            final AtomicInteger checks = new AtomicInteger();
            InvocationHandler h = new InvocationHandler() {
                public Object invoke(Object proxy, Method method, Object[] a) {
                    String name = method.getName();
                    if (name.equals("executeLocalTransaction")) {
                        String keys = ((Message) a[0]).getKeys();
                        if (keys.contains("tx-commit")) return LocalTransactionState.COMMIT_MESSAGE;
                        if (keys.contains("tx-rollback")) return LocalTransactionState.ROLLBACK_MESSAGE;
                        return LocalTransactionState.UNKNOW;
                    }
                    if (name.equals("checkLocalTransaction")) {
                        checks.incrementAndGet();
                        return LocalTransactionState.UNKNOW;
                    }
                    if (name.equals("hashCode")) return System.identityHashCode(proxy);
                    if (name.equals("equals")) return proxy == a[0];
                    if (name.equals("toString")) return "listener";
                    return null;
                }
            };
            Object l = Proxy.newProxyInstance(RocketMQDriver.class.getClassLoader(), new Class<?>[]{listener}, h);
            tx.getClass().getMethod("setTransactionListener", listener).invoke(tx, l);
            tx.start();
            Method send = tx.getClass().getMethod("sendMessageInTransaction", Message.class, Object.class);
            for (String kind : new String[]{"commit", "rollback", "unknown"}) {
                for (int i = 0; i < 3; i++) {
                    Message m = new Message("TopicTx", "tx", ("tx " + kind + " " + i + " 事务").getBytes(StandardCharsets.UTF_8));
                    m.setKeys(Arrays.asList("tx-" + kind + "-" + i, "tx-" + kind, "shared"));
                    record("tx-" + kind, (SendResult) send.invoke(tx, m, null), Arrays.asList("tx-" + kind + "-" + i));
                }
            }
            reached.put("transactions", "3 committed, 3 rolled back, 3 unknown (check-back answers UNKNOW)");
            txChecks = checks;   // the producer lives on (answering check-backs) until the workload ends
        } catch (Exception e) {
            skipped.put("transactions", e.toString());
        }
    }

    static AtomicInteger txChecks;

    /**
     * Bodies over the threshold from producers whose compression type is LZ4, ZSTD and ZLIB
     * (level 9): DefaultMQProducerImpl reads MixAll.MESSAGE_COMPRESS_TYPE / _LEVEL when it is
     * built (4.9.4+; earlier clients compress with zlib only and write no type bits).
     */
    static void compressionTypes(String ns) {
        try {
            Class.forName("org.apache.rocketmq.common.compression.CompressionType");
        } catch (ClassNotFoundException e) {
            skipped.put("compression_types", "no CompressionType in this client (before 4.9.4): zlib only");
            return;
        }
        List<String> done = new ArrayList<>();
        for (String[] kind : new String[][]{{"LZ4", "5"}, {"ZSTD", "3"}, {"ZLIB", "9"}}) {
            System.setProperty("rocketmq.message.compressType", kind[0]);
            System.setProperty("rocketmq.message.compressLevel", kind[1]);
            DefaultMQProducer p = new DefaultMQProducer("P_" + kind[0].toLowerCase());
            System.clearProperty("rocketmq.message.compressType");
            System.clearProperty("rocketmq.message.compressLevel");
            p.setNamesrvAddr(ns);
            p.setInstanceName("p-" + kind[0].toLowerCase());
            p.setSendMsgTimeout(15000);
            try {
                p.start();
                for (int i = 0; i < 2; i++) {
                    StringBuilder sb = new StringBuilder();
                    for (int j = 0; sb.length() < 6000 + 4000 * i; j++) sb.append(kind[0]).append(" 行 ").append(j).append('\n');
                    Message m = new Message("TopicBig", "big", sb.toString().getBytes(StandardCharsets.UTF_8));
                    String key = "big-" + kind[0].toLowerCase() + "-" + i;
                    m.setKeys(Arrays.asList(key, "shared"));
                    record("compressed", p.send(m), Arrays.asList(key));
                }
                done.add(kind[0]);
            } catch (Throwable e) {
                skipped.put("compression_" + kind[0].toLowerCase(), e.toString().split("\n")[0]);
            } finally {
                p.shutdown();
            }
        }
        reached.put("compression_types", String.join(",", done));
    }

    static void ipv6Client(String ns) {
        String port = ns.substring(ns.lastIndexOf(':') + 1);
        List<String> tried = new ArrayList<>();
        for (String addr : new String[]{"[::1]:" + port, "::1:" + port}) {
            DefaultMQProducer p = new DefaultMQProducer("P_v6");
            p.setNamesrvAddr(addr);
            p.setInstanceName("p-v6-" + tried.size());
            p.setSendMsgTimeout(5000);
            p.setRetryTimesWhenSendFailed(0);
            try {
                p.start();
                for (int i = 0; i < 3; i++) {
                    Message m = new Message("TopicA", "v6", ("via namesrv " + addr).getBytes(StandardCharsets.UTF_8));
                    m.setKeys(Arrays.asList("v6-" + i, "shared"));
                    record("ipv6-namesrv", p.send(m), Arrays.asList("v6-" + i));
                }
                reached.put("ipv6_namesrv_address", addr);
                p.shutdown();
                return;
            } catch (Exception e) {
                tried.add(addr + ": " + e.toString().split("\n")[0]);
                try {
                    p.shutdown();
                } catch (Exception ignored) {
                }
            }
        }
        skipped.put("ipv6_namesrv_address", String.join("; ", tried));
    }

    static boolean longSkipped;
    static final ConcurrentHashMap<String, Integer> seen = new ConcurrentHashMap<>();
    static final AtomicInteger consumed = new AtomicInteger(), retried = new AtomicInteger(),
            dlqAttempts = new AtomicInteger(), longRetried = new AtomicInteger();

    /** G_push on TopicA: "retry-once" fails once (a %RETRY% record), "to-dlq" always (dead letter
     * after maxReconsumeTimes 1). With a long group name (5.x) a second consumer on TopicOrder
     * fails one message once: its %RETRY% topic is longer than 127 bytes (a v2 record). */
    static List<DefaultMQPushConsumer> startPush(String ns, String longGroup) throws Exception {
        List<DefaultMQPushConsumer> out = new ArrayList<>();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(PUSH_GROUP_SHORT);
        c.setNamesrvAddr(ns);
        c.setInstanceName("c-push");
        c.setPollNameServerInterval(1000);   // new retry topics' routes within a second
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setMaxReconsumeTimes(1);
        c.subscribe("TopicA", "*");
        c.registerMessageListener(new MessageListenerConcurrently() {
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                for (MessageExt m : msgs) {
                    String keys = m.getKeys() == null ? "" : m.getKeys();
                    seen.merge(m.getMsgId(), 1, Integer::sum);
                    ctx.setDelayLevelWhenNextConsume(1);   // 1 s, not the broker's 3 + reconsumeTimes (10 s)
                    if (keys.contains("to-dlq")) {
                        dlqAttempts.incrementAndGet();
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                    if (keys.contains("retry-once")) {
                        if (m.getReconsumeTimes() == 0) return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                        retried.incrementAndGet();
                    }
                }
                consumed.addAndGet(msgs.size());
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        c.start();
        out.add(c);
        if (longGroup != null) {
            DefaultMQPushConsumer l = new DefaultMQPushConsumer(longGroup);
            l.setNamesrvAddr(ns);
            l.setInstanceName("c-long");
            l.setPollNameServerInterval(1000);
            l.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            l.subscribe("TopicOrder", "*");
            l.registerMessageListener(new MessageListenerConcurrently() {
                public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                    for (MessageExt m : msgs) {
                        String keys = m.getKeys() == null ? "" : m.getKeys();
                        if (keys.contains("ok-5 ") || keys.endsWith("ok-5")) {
                            ctx.setDelayLevelWhenNextConsume(1);
                            if (m.getReconsumeTimes() == 0) return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                            longRetried.incrementAndGet();
                        }
                    }
                    return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                }
            });
            try {
                l.start();
                out.add(l);
            } catch (Exception e) {   // 5.5: groups are at most 120 bytes, so %RETRY% + group fits in 127
                skipped.put("long_retry_topic", e.toString().split("\n")[0]);
                longSkipped = true;
            }
        }
        return out;
    }

    static void finishPush(List<DefaultMQPushConsumer> cs, String longGroup) throws Exception {
        int expected = PLAIN - (PLAIN + 2) / 3 + 1 + BATCHES * BATCH_SIZE + 3;   // TopicA: plain (i % 3 != 0), bare, batches, ipv6
        long deadline = System.currentTimeMillis() + 40_000;
        while (System.currentTimeMillis() < deadline) {
            if (consumed.get() >= expected - 4 && retried.get() > 0 && dlqAttempts.get() >= 2
                    && (longGroup == null || longSkipped || longRetried.get() > 0)) break;
            Thread.sleep(200);
        }
        Thread.sleep(1500);   // the send-back of the last failure
        for (DefaultMQPushConsumer c : cs) c.shutdown();   // persists the consumed offsets
        reached.put("push_consumed", consumed.get());
        reached.put("push_distinct_msg_ids", seen.size());
        if (retried.get() > 0) reached.put("retry", "consumed again after RECONSUME_LATER"); else skipped.put("retry", "not redelivered within 40 s");
        if (dlqAttempts.get() >= 2) reached.put("dead_letter", "%DLQ%" + PUSH_GROUP_SHORT + " after " + dlqAttempts.get() + " attempts");
        else skipped.put("dead_letter", "only " + dlqAttempts.get() + " attempts within 40 s");
        if (longGroup != null && !longSkipped) {
            if (longRetried.get() > 0) reached.put("long_retry_topic", ("%RETRY%" + longGroup).length());
            else skipped.put("long_retry_topic", "the long group's retry was not redelivered within 40 s");
        }
    }

    static void pullConsumer(String ns) {
        try {
            DefaultMQPullConsumer c = new DefaultMQPullConsumer("G_pull");
            c.setNamesrvAddr(ns);
            c.setInstanceName("c-pull");
            c.start();
            int pulled = 0;
            List<MessageQueue> mqs = new ArrayList<>(c.fetchSubscribeMessageQueues("TopicB"));
            Collections.sort(mqs);
            Object store = c.getOffsetStore();
            Method toBroker = null;
            for (Method m : store.getClass().getMethods()) {
                if (m.getName().equals("updateConsumeOffsetToBroker") && m.getParameterCount() == 3) toBroker = m;
            }
            for (MessageQueue mq : mqs) {
                PullResult r = c.pull(mq, "*", 0, 32);
                int n = r.getMsgFoundList() == null ? 0 : r.getMsgFoundList().size();
                pulled += n;
                long commit = n / 2 + 1;   // half consumed: lag left
                c.updateConsumeOffset(mq, commit);
                if (toBroker != null) toBroker.invoke(store, mq, commit, false);
            }
            c.shutdown();
            reached.put("pull_consumer", "G_pull pulled " + pulled + ", committed half");
        } catch (Exception e) {
            skipped.put("pull_consumer", e.toString());
        }
    }

    // ---------------------------------------------------------------- tail (crash)

    static void tail() throws Exception {
        String ns = arg("namesrv");
        File out = new File(arg("out"));
        sends = new PrintWriter(new OutputStreamWriter(new FileOutputStream(new File(out, "acks.jsonl")), StandardCharsets.UTF_8), true);
        DefaultMQProducer p = new DefaultMQProducer("P_tail");
        p.setNamesrvAddr(ns);
        p.setInstanceName("p-tail");
        p.setSendMsgTimeout(3000);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        int failures = 0;
        for (int i = 0; failures < 3; i++) {
            Message m = new Message("TopicCrash", "crash", ("crash tail " + i + " 崩溃").getBytes(StandardCharsets.UTF_8));
            m.setKeys(Arrays.asList("crash-" + i, "crash-all"));
            try {
                record("tail", p.send(m), Arrays.asList("crash-" + i));
            } catch (Exception e) {
                failures++;
                System.out.println("send failed: " + e);
            }
        }
        sends.close();
        p.shutdown();
    }

    // ---------------------------------------------------------------- answers

    static final class Rec {
        long offset;
        int size;
        String topic;
        int queueId;
        long storeTimestamp;
        String keys;
        String tags;
        String uniqKey;
        String msgId;
    }

    /** What a walk of the CommitLog files meets: each record, and where a file's records end. */
    interface RecordVisitor {
        /**
         * A whole record at CommitLog offset `offset`; false stops the walk of this file. In a
         * DLedger CommitLog `entry` is the header of the DLedger entry around it, else null.
         */
        boolean record(String file, long offset, int size, int magic, ByteBuffer record, Map<String, Object> entry)
                throws IOException;

        /**
         * A file's records end at `offset`: the end-of-file blank (why null; in a DLedger CommitLog
         * magic -1, MmapFileList.BLANK_MAGIC_CODE, and size the bytes it covers) or a size that cannot be.
         */
        void end(String file, long offset, int size, int magic, String why) throws IOException;
    }

    /**
     * The folder of the store's CommitLog files: {store}/commitlog, or with enableDLegerCommitLog
     * DLedger's data folder, {storePathRootDir}/dledger-{selfId}/data (DLedgerConfig.getDataStorePath
     * where storePathDLedgerCommitLog is not set).
     */
    static File storeLog(File store) {
        File[] ledgers = store.listFiles((d, name) -> name.startsWith("dledger-") && new File(d, name + "/data").isDirectory());
        return ledgers != null && ledgers.length == 1 ? new File(ledgers[0], "data") : new File(store, "commitlog");
    }

    /**
     * The one walk of the CommitLog files (read-only maps; the broker may still be writing):
     * records one after another from each file's start, until zeros, the blank, or a size that
     * does not fit. Returns the CommitLog offset after the last record the visitor accepted.
     *
     * A DLedger CommitLog's files hold DLedger entries (DLedgerEntryCoder: magic, size, index,
     * term, pos, channel, chainCrc, bodyCrc, bodySize, then the body, BODY_OFFSET = 48), each
     * body one CommitLog record; a file ends in MmapFileList's blank (magic -1, then the bytes
     * left). Which framing a position holds is told as DLedgerCommitLog.checkMessageAndReturnSize
     * tells it: the second int is a CommitLog magic code (or the blank's) in a plain record.
     */
    static long walkRecords(File commitlogDir, RecordVisitor v) throws IOException {
        File[] files = commitlogDir.listFiles((d, name) -> name.matches("\\d{20}"));
        Arrays.sort(files);
        long end = 0;
        for (File f : files) {
            long base = Long.parseLong(f.getName());
            try (FileChannel ch = FileChannel.open(f.toPath())) {
                MappedByteBuffer buf = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
                int pos = 0;
                while (pos + 8 <= buf.capacity()) {
                    int first = buf.getInt(pos), second = buf.getInt(pos + 4);
                    if (first == 0 && second == 0) break;                      // not written
                    boolean plain = second == BLANK_MAGIC || second == MAGIC_V1 || second == MAGIC_V2;
                    if (plain && second == BLANK_MAGIC) {
                        v.end(f.getName(), base + pos, first, second, null);
                        break;
                    }
                    if (!plain && first == DLEDGER_BLANK) {
                        v.end(f.getName(), base + pos, second, first, null);
                        break;
                    }
                    int head = plain ? 0 : DLEDGER_BODY_OFFSET, size = plain ? first : second;
                    if (size <= head || pos + size > buf.capacity()) {
                        v.end(f.getName(), base + pos, size, plain ? second : first, "size " + size + " magic " + (plain ? second : first));
                        break;
                    }
                    Map<String, Object> entry = plain ? null : dledgerEntry(buf, pos);
                    int bodySize = size - head;
                    if (!v.record(f.getName(), base + pos + head, bodySize, buf.getInt(pos + head + 4),
                            slice(buf, pos + head, bodySize), entry)) break;
                    pos += size;
                    end = base + pos;
                }
            }
        }
        return end;
    }

    /** The header of the DLedger entry at `pos` (DLedgerEntryCoder.decode's fields, in its order). */
    static Map<String, Object> dledgerEntry(ByteBuffer buf, int pos) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("magic", buf.getInt(pos));
        e.put("size", buf.getInt(pos + 4));
        e.put("index", buf.getLong(pos + 8));
        e.put("term", buf.getLong(pos + 16));
        e.put("pos", buf.getLong(pos + 24));
        e.put("channel", buf.getInt(pos + 32));
        e.put("chainCrc", buf.getInt(pos + 36));
        e.put("bodyCrc", buf.getInt(pos + 40));
        e.put("bodySize", buf.getInt(pos + 44));
        return e;
    }

    /** The records' keys, queues and times (MessageDecoder, no bodies); end[0]: the CommitLog end seen. */
    static List<Rec> walk(File commitlogDir, long[] end) throws IOException {
        List<Rec> recs = new ArrayList<>();
        end[0] = walkRecords(commitlogDir, new RecordVisitor() {
            public boolean record(String file, long offset, int size, int magic, ByteBuffer one, Map<String, Object> entry) {
                MessageExt m = MessageDecoder.decode(one, false, false);
                if (m == null) return false;
                Rec r = new Rec();
                r.offset = offset;
                r.size = size;
                r.topic = m.getTopic();
                r.queueId = m.getQueueId();
                r.storeTimestamp = m.getStoreTimestamp();
                r.keys = m.getKeys();
                r.tags = m.getTags();
                r.uniqKey = m.getProperty("UNIQ_KEY");
                r.msgId = m.getMsgId();
                recs.add(r);
                return true;
            }

            public void end(String file, long offset, int size, int magic, String why) {
            }
        });
        return recs;
    }

    static ByteBuffer slice(ByteBuffer buf, int pos, int size) {
        ByteBuffer d = buf.duplicate();
        d.position(pos);
        d.limit(pos + size);
        return d.slice();
    }

    static void answers() throws Exception {
        String ns = arg("namesrv"), brokerAddr = arg("broker");
        File store = new File(arg("store")), out = new File(arg("out"));
        long t0 = System.currentTimeMillis();
        long[] endBefore = new long[1];
        List<Rec> recs = walk(storeLog(store), endBefore);
        long answerTime = System.currentTimeMillis();

        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("admin-answers");
        admin.start();
        NettyRemotingClient remoting = new NettyRemotingClient(new NettyClientConfig());
        remoting.start();
        String brokerName = arg("brokerName");
        Map<String, Object> a = new LinkedHashMap<>();
        a.put("answer_time", answerTime);
        a.put("commitlog_end_before", endBefore[0]);
        a.put("records_walked", recs.size());

        // queues: min/max offset and searchOffset
        TreeMap<String, List<Rec>> byQueue = new TreeMap<>();
        for (Rec r : recs) byQueue.computeIfAbsent(r.topic + "\u0000" + r.queueId, k -> new ArrayList<>()).add(r);
        List<Object> queues = new ArrayList<>();
        for (Map.Entry<String, List<Rec>> e : byQueue.entrySet()) {
            List<Rec> rs = e.getValue();
            MessageQueue mq = new MessageQueue(rs.get(0).topic, brokerName, rs.get(0).queueId);
            Map<String, Object> q = new LinkedHashMap<>();
            q.put("topic", mq.getTopic());
            q.put("queueId", mq.getQueueId());
            try {
                q.put("minOffset", admin.minOffset(mq));
                q.put("maxOffset", admin.maxOffset(mq));
            } catch (Exception ex) {
                q.put("error", ex.toString());
            }
            TreeSet<Long> stamps = new TreeSet<>(Arrays.asList(0L, answerTime, answerTime + 3600_000L));
            for (int i = 0; i < rs.size(); i += Math.max(1, rs.size() / 6)) {
                long ts = rs.get(i).storeTimestamp;
                stamps.add(ts - 1);
                stamps.add(ts);
                stamps.add(ts + 1);
            }
            stamps.add(rs.get(rs.size() - 1).storeTimestamp);
            List<Object> search = new ArrayList<>();
            for (long ts : stamps) {
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("timestamp", ts);
                try {
                    s.put("offset", admin.searchOffset(mq, ts));
                } catch (Exception ex) {
                    s.put("error", ex.toString());
                }
                search.add(s);
            }
            q.put("searchOffset", search);
            queues.add(q);
        }
        a.put("queues", queues);

        // query by key: every (topic, key) stored, and keys never used
        TreeMap<String, TreeSet<String>> keysByTopic = new TreeMap<>();
        long first = Long.MAX_VALUE, last = 0;
        for (Rec r : recs) {
            first = Math.min(first, r.storeTimestamp);
            last = Math.max(last, r.storeTimestamp);
            if (r.keys == null) continue;
            for (String k : r.keys.split(" ")) {
                if (!k.isEmpty()) keysByTopic.computeIfAbsent(r.topic, t -> new TreeSet<>()).add(k);
            }
        }
        for (String never : new String[]{"never-used", "从未使用", "🚫-never", "k-999999"}) {
            keysByTopic.computeIfAbsent("TopicA", t -> new TreeSet<>()).add(never);
        }
        keysByTopic.computeIfAbsent("NoSuchTopic", t -> new TreeSet<>()).add("k-1");
        long mid = first + (last - first) / 2;
        long[][] ranges = {{0L, answerTime}, {first, mid}, {mid - 1500, mid + 1500}, {mid, answerTime}};
        keyQuery(admin, remoting, brokerAddr, "TopicA", "warm-up", 0L, answerTime, false, true);   // channels opened once
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<Map<String, Object>>> pending = new ArrayList<>();
        for (Map.Entry<String, TreeSet<String>> e : keysByTopic.entrySet()) {
            int j = 0;
            for (String key : e.getValue()) {
                boolean all = j++ % 3 == 0;   // every range for a third of the keys, the whole range for all
                for (int i = 0; i < (all ? ranges.length : 1); i++) {
                    final String topic = e.getKey();
                    final long begin = ranges[i][0], end = ranges[i][1];
                    final boolean alsoClient = i == 0;
                    pending.add(pool.submit(() -> keyQuery(admin, remoting, brokerAddr, topic, key, begin, end, false, alsoClient)));
                }
            }
        }
        List<Object> queries = new ArrayList<>();
        for (Future<Map<String, Object>> f : pending) queries.add(f.get());
        a.put("key_queries", queries);
        // unique keys (UNIQ_KEY of some messages): the broker's max_num for them is its defaultQueryMaxNum
        List<Object> uq = new ArrayList<>();
        for (int i = 0; i < recs.size(); i += Math.max(1, recs.size() / 25)) {
            Rec r = recs.get(i);
            if (r.uniqKey != null) uq.add(keyQuery(admin, remoting, brokerAddr, r.topic, r.uniqKey, 0L, answerTime, true, false));
        }
        a.put("unique_key_queries", uq);

        // tags (5.4.0+ also indexes topic#T#tags and queries it with indexType "T"): every tag
        // stored, in the whole range and in the first half, and a tag never used
        boolean tagIndex;
        try {
            firstClass("org.apache.rocketmq.remoting.protocol.header.QueryMessageRequestHeader")
                    .getMethod("setIndexType", String.class);
            tagIndex = true;
        } catch (ClassNotFoundException | NoSuchMethodException ex) {
            tagIndex = false;
        }
        if (tagIndex) {
            TreeMap<String, TreeSet<String>> tagsByTopic = new TreeMap<>();
            for (Rec r : recs) {
                if (r.tags != null && !r.tags.isEmpty()) tagsByTopic.computeIfAbsent(r.topic, t -> new TreeSet<>()).add(r.tags);
            }
            tagsByTopic.computeIfAbsent("TopicA", t -> new TreeSet<>()).add("never-a-tag");
            List<Object> tq = new ArrayList<>();
            for (Map.Entry<String, TreeSet<String>> e : tagsByTopic.entrySet()) {
                for (String tag : e.getValue()) {
                    for (long[] range : new long[][]{{0L, answerTime}, {first, mid}}) {
                        tq.add(keyQuery(admin, remoting, brokerAddr, e.getKey(), tag, range[0], range[1], false, false, "T"));
                    }
                }
            }
            a.put("tag_queries", tq);
        }

        // viewMessage by offset message id, every record
        List<Future<Map<String, Object>>> viewing = new ArrayList<>();
        for (Rec r : recs) viewing.add(pool.submit(() -> view(admin, r)));
        List<Object> views = new ArrayList<>();
        for (Future<Map<String, Object>> f : viewing) views.add(f.get());
        pool.shutdown();
        a.put("views", views);

        // pulls: getMessage by queue and offset, as the raw request reaches DefaultMessageStore
        a.put("pulls", pulls(remoting, brokerAddr, queues, byQueue));

        // consumer offsets
        Map<String, Object> groups = new LinkedHashMap<>();
        for (String g : arg("groups").split(",")) {
            groups.put(g, consumeStats(admin, g));
        }
        a.put("consume_stats", groups);
        a.put("commitlog_end_after", walkRecords(storeLog(store), new RecordVisitor() {
            public boolean record(String file, long offset, int size, int magic, ByteBuffer one, Map<String, Object> entry) {
                return MessageDecoder.decode(one, false, false) != null;
            }

            public void end(String file, long offset, int size, int magic, String why) {
            }
        }));
        a.put("wall_ms", System.currentTimeMillis() - t0);
        remoting.shutdown();
        admin.shutdown();
        writeJson(out, a);
    }

    /**
     * PULL_MESSAGE for every queue the walk met, at offsets around its start, middle and end
     * (the broker's maxOffset answer), for 32, 4 and 1 messages, with "*" and with tag
     * subscriptions (the queue's commonest tag, it or a tag never used, a tag never used).
     */
    static List<Object> pulls(NettyRemotingClient remoting, String brokerAddr, List<Object> queues,
                              TreeMap<String, List<Rec>> byQueue) throws Exception {
        List<Object> out = new ArrayList<>();
        for (Object o : queues) {
            Map<?, ?> q = (Map<?, ?>) o;
            if (!(q.get("maxOffset") instanceof Long)) continue;
            String topic = (String) q.get("topic");
            int queueId = (Integer) q.get("queueId");
            long max = (Long) q.get("maxOffset");
            Map<String, Integer> tagCount = new TreeMap<>();
            for (Rec r : byQueue.get(topic + "\u0000" + queueId)) {
                if (r.tags != null && !r.tags.isEmpty()) tagCount.merge(r.tags, 1, Integer::sum);
            }
            List<Object[]> asks = new ArrayList<>();   // offset, maxNums, subscription
            for (long off : new TreeSet<>(Arrays.asList(0L, 1L, max / 3, max / 2, max - 1, max, max + 3))) {
                if (off >= 0) asks.add(new Object[]{off, 32, "*"});
            }
            asks.add(new Object[]{0L, 4, "*"});
            asks.add(new Object[]{0L, 1, "*"});
            asks.add(new Object[]{max / 2, 1, "*"});
            if (!tagCount.isEmpty()) {
                String common = Collections.max(tagCount.entrySet(), Map.Entry.comparingByValue()).getKey();
                asks.add(new Object[]{0L, 32, common});
                asks.add(new Object[]{max / 3, 4, common + " || never-a-tag"});
            }
            asks.add(new Object[]{0L, 32, "never-a-tag"});
            for (Object[] ask : asks) out.add(pull(remoting, brokerAddr, topic, queueId, (Long) ask[0], (Integer) ask[1], (String) ask[2]));
        }
        return out;
    }

    static Map<String, Object> pull(NettyRemotingClient remoting, String brokerAddr, String topic, int queueId,
                                    long offset, int maxNums, String subscription) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("topic", topic);
        p.put("queueId", queueId);
        p.put("offset", offset);
        p.put("maxNums", maxNums);
        p.put("subscription", subscription);
        try {
            Class<?> hc = firstClass("org.apache.rocketmq.remoting.protocol.header.PullMessageRequestHeader",
                    "org.apache.rocketmq.common.protocol.header.PullMessageRequestHeader");
            Object h = hc.getConstructor().newInstance();
            hc.getMethod("setConsumerGroup", String.class).invoke(h, "G_pull");
            hc.getMethod("setTopic", String.class).invoke(h, topic);
            hc.getMethod("setQueueId", Integer.class).invoke(h, queueId);
            hc.getMethod("setQueueOffset", Long.class).invoke(h, offset);
            hc.getMethod("setMaxMsgNums", Integer.class).invoke(h, maxNums);
            hc.getMethod("setSysFlag", Integer.class).invoke(h, FLAG_SUBSCRIPTION);
            hc.getMethod("setCommitOffset", Long.class).invoke(h, 0L);
            hc.getMethod("setSuspendTimeoutMillis", Long.class).invoke(h, 0L);
            hc.getMethod("setSubscription", String.class).invoke(h, subscription);
            hc.getMethod("setSubVersion", Long.class).invoke(h, System.currentTimeMillis());
            try {
                hc.getMethod("setExpressionType", String.class).invoke(h, "TAG");
            } catch (NoSuchMethodException ignored) {   // before 4.1: tags only
            }
            RemotingCommand resp = remoting.invokeSync(brokerAddr,
                    RemotingCommand.createRequestCommand(PULL_MESSAGE, (CommandCustomHeader) h), 10_000);
            p.put("code", resp.getCode());
            if (resp.getRemark() != null) p.put("remark", resp.getRemark().split("\n")[0]);
            Map<String, String> ext = resp.getExtFields() == null ? new HashMap<>() : resp.getExtFields();
            for (String f : new String[]{"nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId"}) {
                if (ext.containsKey(f)) p.put(f, Long.parseLong(ext.get(f)));
            }
            // each record returned, read from its own bytes: queue offset, CommitLog offset, size, CRC32
            List<Object> recs = new ArrayList<>();
            byte[] body = resp.getBody();
            if (resp.getCode() == 0 && body != null) {
                ByteBuffer b = ByteBuffer.wrap(body);
                for (int pos = 0; pos + 36 <= body.length; ) {
                    int size = b.getInt(pos);
                    if (size <= 0 || pos + size > body.length) {
                        p.put("body_error", "record size " + size + " at " + pos + " of " + body.length);
                        break;
                    }
                    java.util.zip.CRC32 crc = new java.util.zip.CRC32();
                    crc.update(body, pos, size);
                    recs.add(Arrays.asList(b.getLong(pos + 20), b.getLong(pos + 28), size, crc.getValue()));
                    pos += size;
                }
            }
            p.put("records", recs);
        } catch (Throwable ex) {
            p.put("error", ex.toString().split("\n")[0]);
        }
        return p;
    }

    static Map<String, Object> view(DefaultMQAdminExt admin, Rec r) {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("msgId", r.msgId);
        try {
            MessageExt m = viewMessage(admin, r.topic, r.msgId);
            v.put("commitLogOffset", m.getCommitLogOffset());
            v.put("storeSize", m.getStoreSize());
            v.put("topic", m.getTopic());
            v.put("queueId", m.getQueueId());
            v.put("queueOffset", m.getQueueOffset());
            v.put("storeTimestamp", m.getStoreTimestamp());
            v.put("sysFlag", m.getSysFlag());
            v.put("keys", m.getKeys());
            v.put("bodyLength", m.getBody() == null ? -1 : m.getBody().length);
        } catch (Throwable ex) {
            v.put("error", ex.toString().split("\n")[0]);
        }
        return v;
    }

    static MessageExt viewMessage(DefaultMQAdminExt admin, String topic, String msgId) throws Throwable {
        try {
            Method m1 = admin.getClass().getMethod("viewMessage", String.class);
            return (MessageExt) m1.invoke(admin, msgId);
        } catch (NoSuchMethodException e) {
            Method m2 = admin.getClass().getMethod("viewMessage", String.class, String.class);
            try {
                return (MessageExt) m2.invoke(admin, topic, msgId);
            } catch (java.lang.reflect.InvocationTargetException ite) {
                throw ite.getCause();
            }
        } catch (java.lang.reflect.InvocationTargetException ite) {
            throw ite.getCause();
        }
    }

    static Class<?> firstClass(String... names) throws ClassNotFoundException {
        for (String n : names) {
            try {
                return Class.forName(n);
            } catch (ClassNotFoundException ignored) {
            }
        }
        throw new ClassNotFoundException(String.join(" | ", names));
    }

    static Map<String, Object> keyQuery(DefaultMQAdminExt admin, NettyRemotingClient remoting, String brokerAddr,
                                        String topic, String key, long begin, long end, boolean unique,
                                        boolean alsoClient) {
        return keyQuery(admin, remoting, brokerAddr, topic, key, begin, end, unique, alsoClient, null);
    }

    /** indexType "T" (5.4.0+, QueryMessageRequestHeader.setIndexType): the broker looks up topic#T#key, a tag. */
    static Map<String, Object> keyQuery(DefaultMQAdminExt admin, NettyRemotingClient remoting, String brokerAddr,
                                        String topic, String key, long begin, long end, boolean unique,
                                        boolean alsoClient, String indexType) {
        Map<String, Object> q = new LinkedHashMap<>();
        q.put("topic", topic);
        q.put("key", key);
        if (indexType != null) q.put("indexType", indexType);
        q.put("begin", begin);
        q.put("end", end);
        q.put("unique", unique);
        int maxNum = 64;
        q.put("maxNum", maxNum);
        try {
            Class<?> hc = firstClass("org.apache.rocketmq.remoting.protocol.header.QueryMessageRequestHeader",
                    "org.apache.rocketmq.common.protocol.header.QueryMessageRequestHeader");
            Object h = hc.getConstructor().newInstance();
            hc.getMethod("setTopic", String.class).invoke(h, topic);
            hc.getMethod("setKey", String.class).invoke(h, key);
            hc.getMethod("setMaxNum", Integer.class).invoke(h, maxNum);
            hc.getMethod("setBeginTimestamp", Long.class).invoke(h, begin);
            hc.getMethod("setEndTimestamp", Long.class).invoke(h, end);
            if (indexType != null) hc.getMethod("setIndexType", String.class).invoke(h, indexType);
            RemotingCommand resp = null;
            for (int attempt = 1; resp == null; attempt++) {   // a channel opened by several threads at once may fail
                RemotingCommand req = RemotingCommand.createRequestCommand(QUERY_MESSAGE, (CommandCustomHeader) h);
                req.addExtField(UNIQUE_FLAG, Boolean.toString(unique));
                try {
                    resp = remoting.invokeSync(brokerAddr, req, 10_000);
                } catch (Exception ex) {
                    if (attempt >= 3) throw ex;
                    Thread.sleep(200);
                }
            }
            q.put("code", resp.getCode());
            List<Long> offsets = new ArrayList<>();
            if (resp.getCode() == 0 && resp.getBody() != null) {
                for (MessageExt m : MessageDecoder.decodes(ByteBuffer.wrap(resp.getBody()))) offsets.add(m.getCommitLogOffset());
            }
            q.put("broker_offsets", offsets);
        } catch (Exception ex) {
            q.put("broker_error", ex.toString());
        }
        if (alsoClient) {   // what the client returns: the broker's answer filtered by key
            try {
                QueryResult r = admin.queryMessage(topic, key, maxNum, begin, end);
                List<Long> offsets = new ArrayList<>();
                for (MessageExt m : r.getMessageList()) offsets.add(m.getCommitLogOffset());
                q.put("client_offsets", offsets);
            } catch (Exception ex) {
                q.put("client_offsets", new ArrayList<>());
                q.put("client_note", ex.toString().split("\n")[0]);
            }
        }
        return q;
    }

    static Object consumeStats(DefaultMQAdminExt admin, String group) {
        Map<String, Object> g = new LinkedHashMap<>();
        try {
            Object cs = admin.examineConsumeStats(group);
            Map<?, ?> table = (Map<?, ?>) cs.getClass().getMethod("getOffsetTable").invoke(cs);
            List<Object> rows = new ArrayList<>();
            for (Map.Entry<?, ?> e : new TreeMap<>((Map<MessageQueue, Object>) table).entrySet()) {
                MessageQueue mq = (MessageQueue) e.getKey();
                Object w = e.getValue();
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("topic", mq.getTopic());
                row.put("queueId", mq.getQueueId());
                long broker = (Long) w.getClass().getMethod("getBrokerOffset").invoke(w);
                long consumer = (Long) w.getClass().getMethod("getConsumerOffset").invoke(w);
                row.put("brokerOffset", broker);
                row.put("consumerOffset", consumer);
                row.put("lag", broker - consumer);
                rows.add(row);
            }
            g.put("queues", rows);
        } catch (Throwable ex) {
            g.put("error", ex.toString().split("\n")[0]);
        }
        return g;
    }

    // ---------------------------------------------------------------- decode

    static void decode() throws Exception {
        File store = new File(arg("store")), out = new File(arg("out"));
        try (PrintWriter w = new PrintWriter(new OutputStreamWriter(new FileOutputStream(new File(out, "decoded.jsonl")), StandardCharsets.UTF_8))) {
            walkRecords(storeLog(store), new RecordVisitor() {
                public boolean record(String file, long offset, int size, int magic, ByteBuffer one, Map<String, Object> entry) {
                    Map<String, Object> o = new LinkedHashMap<>();
                    o.put("file", file);
                    o.put("offset", offset);
                    MessageExt m = MessageDecoder.decode(one, true, false);
                    if (m == null) {
                        o.put("torn", "MessageDecoder.decode returned null (size " + size + " magic " + magic + ")");
                        w.println(toJson(o));
                        return false;
                    }
                    o.put("storeSize", m.getStoreSize());
                    o.put("magic", magic);
                    o.put("bodyCRC", m.getBodyCRC());
                    o.put("queueId", m.getQueueId());
                    o.put("flag", m.getFlag());
                    o.put("queueOffset", m.getQueueOffset());
                    o.put("physicalOffset", m.getCommitLogOffset());
                    o.put("sysFlag", m.getSysFlag());
                    o.put("bornTimestamp", m.getBornTimestamp());
                    o.put("bornHost", host(m.getBornHost()));
                    o.put("storeTimestamp", m.getStoreTimestamp());
                    o.put("storeHost", host(m.getStoreHost()));
                    o.put("reconsumeTimes", m.getReconsumeTimes());
                    o.put("preparedTransactionOffset", m.getPreparedTransactionOffset());
                    o.put("body", m.getBody() == null ? null : Base64.getEncoder().encodeToString(m.getBody()));
                    if ((m.getSysFlag() & 0x1) != 0) {   // the body a consumer gets: decode with deCompressBody
                        one.position(0);
                        try {
                            MessageExt plain = MessageDecoder.decode(one, true, true);
                            o.put("plainBody", plain == null || plain.getBody() == null ? null
                                    : Base64.getEncoder().encodeToString(plain.getBody()));
                        } catch (Throwable e) {
                            o.put("plainBodyError", e.toString().split("\n")[0]);
                        }
                    }
                    o.put("topic", m.getTopic());
                    o.put("properties", m.getProperties());
                    o.put("msgId", m.getMsgId());
                    if (entry != null) o.put("dledger", entry);
                    w.println(toJson(o));
                    return true;
                }

                public void end(String file, long offset, int size, int magic, String why) {
                    Map<String, Object> o = new LinkedHashMap<>();
                    o.put("file", file);
                    o.put("offset", offset);
                    if (why == null) {
                        o.put("blank", true);
                        o.put("storeSize", size);
                        o.put("magic", magic);
                        if (magic == DLEDGER_BLANK) o.put("dledger", true);
                    } else {
                        o.put("torn", why);
                    }
                    w.println(toJson(o));
                }
            });
        }
        Map<String, Object> cp = new LinkedHashMap<>();
        File checkpoint = new File(store, "checkpoint");
        if (checkpoint.exists()) {
            Path tmp = Files.createTempDirectory("rmqlab-cp");
            Path copy = tmp.resolve("checkpoint");
            Files.copy(checkpoint.toPath(), copy, StandardCopyOption.REPLACE_EXISTING);
            StoreCheckpoint sc = new StoreCheckpoint(copy.toString());
            for (String getter : new String[]{"getPhysicMsgTimestamp", "getLogicsMsgTimestamp", "getIndexMsgTimestamp",
                    "getMasterFlushedOffset", "getConfirmPhyOffset", "getLogicsPhysicalOffset", "getMinTimestamp",
                    "getMinTimestampIndex"}) {
                try {
                    cp.put(getter.substring(3, 4).toLowerCase() + getter.substring(4), sc.getClass().getMethod(getter).invoke(sc));
                } catch (NoSuchMethodException ignored) {
                }
            }
            sc.shutdown();
            Files.deleteIfExists(copy);
            Files.deleteIfExists(tmp);
        }
        writeJson(new File(out, "checkpoint.json"), cp);
    }

    static Object host(SocketAddress a) {
        if (!(a instanceof InetSocketAddress)) return String.valueOf(a);
        InetSocketAddress i = (InetSocketAddress) a;
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("ip", i.getAddress().getHostAddress());
        o.put("port", i.getPort());
        return o;
    }

    // ---------------------------------------------------------------- JSON

    static String repeat(String s, int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) sb.append(s);
        return sb.toString();
    }

    static void writeJson(File f, Object o) throws IOException {
        Files.write(f.toPath(), toJson(o).getBytes(StandardCharsets.UTF_8));
    }

    static String toJson(Object o) {
        StringBuilder sb = new StringBuilder();
        json(sb, o);
        return sb.toString();
    }

    static void json(StringBuilder sb, Object o) {
        if (o == null) {
            sb.append("null");
        } else if (o instanceof String) {
            sb.append('"');
            String s = (String) o;
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"' || c == '\\') sb.append('\\').append(c);
                else if (c < 0x20 || (c >= 0xD800 && c <= 0xDFFF)) sb.append(String.format("\\u%04x", (int) c));
                else sb.append(c);
            }
            sb.append('"');
        } else if (o instanceof Number || o instanceof Boolean) {
            sb.append(o);
        } else if (o instanceof Map) {
            sb.append('{');
            boolean firstItem = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) o).entrySet()) {
                if (!firstItem) sb.append(',');
                firstItem = false;
                json(sb, String.valueOf(e.getKey()));
                sb.append(':');
                json(sb, e.getValue());
            }
            sb.append('}');
        } else if (o instanceof Collection) {
            sb.append('[');
            boolean firstItem = true;
            for (Object x : (Collection<?>) o) {
                if (!firstItem) sb.append(',');
                firstItem = false;
                json(sb, x);
            }
            sb.append(']');
        } else {
            json(sb, String.valueOf(o));
        }
    }
}
