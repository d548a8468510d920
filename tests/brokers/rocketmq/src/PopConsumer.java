/*
 * A pop consumer (5.x): DefaultMQAdminExt.setMessageRequestMode(..., MessageRequestMode.POP, ...)
 * switches group G_pop on TopicOrder to broker-side assignment, and a DefaultMQPushConsumer with
 * setClientRebalance(false) pops its messages: the broker writes checkpoint and ack records to its
 * revive topic (rmq_sys_REVIVE_LOG_<cluster>) and, for the one message consumed with
 * RECONSUME_LATER, a record in the group's pop retry topic. Compiled only for 5.x releases
 * (rocketmq_harness.sources) and run by the harness after RocketMQDriver's workload:
 * `PopConsumer namesrv=... broker=... out=...` writes out/pop.json. Reflection keeps it to the
 * API every 5.x release has.
 */

import java.io.File;
import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

public class PopConsumer {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        Map<String, Object> result = new LinkedHashMap<>();
        try {
            result.put("pop_consumer", run(args.get("namesrv"), args.get("broker")));
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
        admin.shutdown();

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
        while (System.currentTimeMillis() < start + 25_000 && consumed.get() < 40) {
            Thread.sleep(200);
        }
        // the redelivery comes when the broker revives the checkpoint: wait for it a little only
        while (System.currentTimeMillis() < start + 12_000 && retried.get() == 0) {
            Thread.sleep(200);
        }
        Thread.sleep(1000);   // the last acks
        c.shutdown();
        if (consumed.get() == 0) throw new IllegalStateException("the pop consumer got no message within 25 s");
        return "G_pop popped " + consumed.get() + " of TopicOrder's 40, " + (retried.get() > 0 ? "one again after RECONSUME_LATER"
                : "one consumed with RECONSUME_LATER, not redelivered before the consumer stopped");
    }
}
