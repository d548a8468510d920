/*
 * Topics of their own queue type (5.x): a BatchCQ topic (attribute queue.type=BatchCQ, 5.0.0+:
 * the broker indexes it in batchconsumequeue/ instead of consumequeue/, and stores a batch sent
 * to it as one inner-batch record) and, with compaction=true (5.1.0+), a compaction topic
 * (cleanup.policy=COMPACTION: the broker's CompactionStore copies its messages into compaction/).
 * Topics are made with DefaultMQAdminExt.createAndUpdateTopicConfig and TopicConfig.setAttributes
 * (reached by reflection: 4.x has no attributes), messages sent by a DefaultMQProducer, single
 * and in batches. Compiled only for 5.x releases (rocketmq_harness.sources) and run by the
 * harness after RocketMQDriver's workload:
 * `FeatureTopics namesrv=... broker=... out=... compaction=true|false` writes out/features.json.
 */

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class FeatureTopics {
    static final String BATCH_CQ_TOPIC = "TopicBatchCQ";
    static final String COMPACTION_TOPIC = "TopicCompact";

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        Map<String, Object> reached = new LinkedHashMap<>(), skipped = new LinkedHashMap<>();
        String ns = args.get("namesrv"), brokerAddr = args.get("broker");
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("admin-features");
        admin.start();
        DefaultMQProducer producer = new DefaultMQProducer("P_features");
        producer.setNamesrvAddr(ns);
        producer.setInstanceName("p-features");
        producer.setSendMsgTimeout(15000);
        producer.start();
        try {
            reached.put("batch_cq_topic", batchCq(admin, producer, brokerAddr));
        } catch (Throwable t) {
            skipped.put("batch_cq_topic", t.toString().split("\n")[0]);
        }
        if ("true".equals(args.get("compaction"))) {
            try {
                reached.put("compaction_topic", compaction(admin, producer, brokerAddr));
            } catch (Throwable t) {
                skipped.put("compaction_topic", t.toString().split("\n")[0]);
            }
        } else {
            skipped.put("compaction_topic", "no compaction topics before 5.1.0 (cleanup.policy)");
        }
        producer.shutdown();
        admin.shutdown();
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("reached", reached);
        result.put("skipped", skipped);
        RocketMQDriver.writeJson(new File(args.get("out"), "features.json"), result);
        System.exit(0);
    }

    static void create(DefaultMQAdminExt admin, String brokerAddr, String topic, String attribute, String value)
            throws Exception {
        TopicConfig tc = new TopicConfig(topic, 2, 2);
        Map<String, String> attributes = new HashMap<>();
        attributes.put("+" + attribute, value);
        tc.getClass().getMethod("setAttributes", Map.class).invoke(tc, attributes);
        admin.createAndUpdateTopicConfig(brokerAddr, tc);
        RocketMQDriver.waitForRoute(admin, topic);
    }

    /** 12 single sends and 3 batches of 8 to a BatchCQ topic; keys and tags on every message. */
    static String batchCq(DefaultMQAdminExt admin, DefaultMQProducer producer, String brokerAddr) throws Exception {
        create(admin, brokerAddr, BATCH_CQ_TOPIC, "queue.type", "BatchCQ");
        for (int i = 0; i < 12; i++) {
            Message m = new Message(BATCH_CQ_TOPIC, "bcq", ("batch cq " + i).getBytes(StandardCharsets.UTF_8));
            m.setKeys(Arrays.asList("bcq-" + i, "shared"));
            SendResult r = producer.send(m);
            if (r.getMsgId() == null) throw new IllegalStateException("no message id: " + r);
        }
        for (int b = 0; b < 3; b++) {
            List<Message> batch = new ArrayList<>();
            for (int j = 0; j < 8; j++) {
                Message m = new Message(BATCH_CQ_TOPIC, "bcq-batch", ("batch cq " + b + "/" + j).getBytes(StandardCharsets.UTF_8));
                m.setKeys(Arrays.asList("bcq-batch-" + b, "shared"));
                batch.add(m);
            }
            producer.send(batch);
        }
        return "12 single sends and 3 batches of 8 to " + BATCH_CQ_TOPIC;
    }

    /** 30 sends over 6 keys to a compaction topic: the newest value of each key is what compaction keeps. */
    static String compaction(DefaultMQAdminExt admin, DefaultMQProducer producer, String brokerAddr) throws Exception {
        create(admin, brokerAddr, COMPACTION_TOPIC, "cleanup.policy", "COMPACTION");
        for (int i = 0; i < 30; i++) {
            Message m = new Message(COMPACTION_TOPIC, "compact", ("value " + i + " of key " + i % 6).getBytes(StandardCharsets.UTF_8));
            m.setKeys("ck-" + i % 6);
            producer.send(m);
        }
        return "30 sends over 6 keys to " + COMPACTION_TOPIC;
    }
}
