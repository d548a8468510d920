/*
 * A pop consumer (5.x): DefaultMQAdminExt.setMessageRequestMode(..., MessageRequestMode.POP, ...)
 * switches group G_pop on TopicOrder to broker-side assignment, and a DefaultMQPushConsumer with
 * setClientRebalance(false) pops its messages: the broker writes checkpoint and ack records to its
 * revive topic (rmq_sys_REVIVE_LOG_<cluster>) and, for the one message consumed with
 * RECONSUME_LATER, a record in the group's pop retry topic. At the same time group G_pop_hold pops
 * the same topic with an invisible time of HOLD_INVISIBLE_MS and never acknowledges the messages
 * whose key ends in 3 (their listener blocks until the JVM exits): their checkpoints stay in
 * flight, to be revived after the broker's restart (the harness's "revived" scenario). pop.json
 * lists them with the POP_CK property the broker gave each. Compiled only for 5.x releases
 * (rocketmq_harness.sources) and run by the harness after RocketMQDriver's workload:
 * `PopConsumer namesrv=... broker=... out=...` writes out/pop.json. Reflection keeps it to the
 * API every 5.x release has.
 */

import java.io.File;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class PopConsumer {
    /** G_pop_hold's invisible time: long enough that no checkpoint is revived before the clean stop,
     *  also where a loaded machine stretches a 5.5 clean run past three minutes (90 s did not). */
    static final long HOLD_INVISIBLE_MS = 240_000;
    static final List<Map<String, Object>> HELD = Collections.synchronizedList(new ArrayList<>());

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        Map<String, Object> result = new LinkedHashMap<>();
        try {
            result.put("pop_consumer", run(args.get("namesrv"), args.get("broker")));
            result.put("hold_invisible_ms", HOLD_INVISIBLE_MS);
            result.put("held", new ArrayList<>(HELD));
        } catch (Throwable t) {
            result.put("error", t.toString());
        }
        RocketMQDriver.writeJson(new File(args.get("out"), "pop.json"), result);
        System.exit(0);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static String run(String ns, String brokerAddr) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("admin-pop");
        admin.start();
        Class<?> mode = Class.forName("org.apache.rocketmq.common.message.MessageRequestMode");
        Object pop = Enum.valueOf((Class<Enum>) mode, "POP");
        Method set = admin.getClass().getMethod("setMessageRequestMode", String.class, String.class, String.class,
                mode, int.class, long.class);
        set.invoke(admin, brokerAddr, "TopicOrder", "G_pop", pop, 4, 5000L);
        set.invoke(admin, brokerAddr, "TopicOrder", "G_pop_hold", pop, 4, 5000L);
        admin.shutdown();
        final AtomicInteger seenByHold = new AtomicInteger();
        DefaultMQPushConsumer hold = holdingConsumer(ns, seenByHold);

        final AtomicInteger consumed = new AtomicInteger(), retried = new AtomicInteger();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer("G_pop");
        c.setNamesrvAddr(ns);
        c.setInstanceName("c-pop");
        c.setPollNameServerInterval(1000);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.getClass().getMethod("setClientRebalance", boolean.class).invoke(c, false);
        c.subscribe("TopicOrder", "*");
        c.registerMessageListener(new MessageListenerConcurrently() {
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                for (MessageExt m : msgs) {
                    String keys = m.getKeys() == null ? "" : m.getKeys();
                    if (keys.endsWith("ok-7")) {
                        if (m.getReconsumeTimes() == 0) return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                        retried.incrementAndGet();
                    }
                }
                consumed.addAndGet(msgs.size());
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        c.start();
        long start = System.currentTimeMillis();
        while (System.currentTimeMillis() < start + 25_000 && (consumed.get() < 40 || seenByHold.get() < 40)) {
            Thread.sleep(200);
        }
        // the redelivery comes when the broker revives the checkpoint: wait for it a little only
        while (System.currentTimeMillis() < start + 12_000 && retried.get() == 0) {
            Thread.sleep(200);
        }
        Thread.sleep(1000);   // the last acks
        c.shutdown();
        hold.shutdown();
        if (consumed.get() == 0) throw new IllegalStateException("the pop consumer got no message within 25 s");
        if (HELD.isEmpty()) throw new IllegalStateException("G_pop_hold held no message within 25 s");
        return "G_pop popped " + consumed.get() + " of TopicOrder's 40, " + (retried.get() > 0 ? "one again after RECONSUME_LATER"
                : "one consumed with RECONSUME_LATER, not redelivered before the consumer stopped")
                + "; G_pop_hold saw " + seenByHold.get() + " and left " + HELD.size() + " unacknowledged";
    }

    /** G_pop_hold: acknowledges every message but those whose key ends in 3, whose listener blocks. */
    static DefaultMQPushConsumer holdingConsumer(String ns, final AtomicInteger seen) throws Exception {
        final CountDownLatch never = new CountDownLatch(1);
        DefaultMQPushConsumer c = new DefaultMQPushConsumer("G_pop_hold");
        c.setNamesrvAddr(ns);
        c.setInstanceName("c-pop-hold");
        c.setPollNameServerInterval(1000);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPopInvisibleTime(HOLD_INVISIBLE_MS);
        c.getClass().getMethod("setClientRebalance", boolean.class).invoke(c, false);
        c.subscribe("TopicOrder", "*");
        c.registerMessageListener(new MessageListenerConcurrently() {
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                boolean block = false;
                for (MessageExt m : msgs) {
                    seen.incrementAndGet();
                    String keys = m.getKeys() == null ? "" : m.getKeys();
                    if (keys.endsWith("3")) {
                        Map<String, Object> h = new LinkedHashMap<>();
                        h.put("msgId", m.getMsgId());
                        h.put("topic", m.getTopic());
                        h.put("queueId", m.getQueueId());
                        h.put("queueOffset", m.getQueueOffset());
                        h.put("keys", keys);
                        h.put("popCk", m.getProperty("POP_CK"));
                        h.put("receivedAt", System.currentTimeMillis());
                        HELD.add(h);
                        block = true;
                    }
                }
                if (block) {
                    try {
                        never.await(10, TimeUnit.MINUTES);   // the JVM exits long before
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        c.start();
        return c;
    }
}
