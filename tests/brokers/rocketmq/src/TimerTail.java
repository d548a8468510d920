/*
 * Timer messages while the broker dies (5.x, the crash scenarios): one timer message to TopicTimer
 * every PACE_MS, each due DUE_MS after it is sent (TIMER_DELIVER_MS, what Message.setDeliverTimeMs
 * sets), until three sends in a row fail. Run by the harness beside RocketMQDriver's tail; the
 * broker is killed once this has sent for a few seconds, so the timer store is both enqueueing and
 * delivering at the kill: its checkpoint (TimerFlushService, every timerFlushIntervalMs = 1 s) lags
 * what the timer log, the wheel and the CommitLog already hold, which is what a restart then reads
 * again. Each acknowledged send is a line of out/timer-acks.jsonl (RocketMQDriver.record's form,
 * kind "crash-timer", plus dueAt). Compiled only for 5.x releases (rocketmq_harness.sources):
 * `TimerTail namesrv=... out=...`.
 */

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;

public class TimerTail {
    /** time between sends: about 50 timer messages a second, due in every 1 s slot of the wheel */
    static final long PACE_MS = 20;
    /** how long after its send a message is due: past the enqueue, well before the kill */
    static final long DUE_MS = 1500;

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        File out = new File(args.get("out"));
        PrintWriter acks = new PrintWriter(new OutputStreamWriter(
                new FileOutputStream(new File(out, "timer-acks.jsonl")), StandardCharsets.UTF_8), true);
        DefaultMQProducer p = new DefaultMQProducer("P_timer_tail");
        p.setNamesrvAddr(args.get("namesrv"));
        p.setInstanceName("p-timer-tail");
        p.setSendMsgTimeout(3000);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        int failures = 0;
        for (int i = 0; failures < 3; i++) {
            long dueAt = System.currentTimeMillis() + DUE_MS;
            Message m = new Message("TopicTimer", "crash-timer", ("crash timer " + i + " due " + dueAt)
                    .getBytes(StandardCharsets.UTF_8));
            m.setKeys(Arrays.asList("crash-timer-" + i, "crash-timer-all"));
            MessageAccessor.putProperty(m, "TIMER_DELIVER_MS", Long.toString(dueAt));
            try {
                SendResult r = p.send(m);
                Map<String, Object> o = new LinkedHashMap<>();
                o.put("kind", "crash-timer");
                o.put("status", String.valueOf(r.getSendStatus()));
                o.put("msgId", r.getMsgId());
                o.put("queueId", r.getMessageQueue().getQueueId());
                o.put("queueOffset", r.getQueueOffset());
                o.put("dueAt", dueAt);
                o.put("ackedAt", System.currentTimeMillis());
                acks.println(RocketMQDriver.toJson(o));
                failures = 0;
            } catch (Exception e) {
                failures++;
                System.out.println("send failed: " + e);
            }
            Thread.sleep(PACE_MS);
        }
        acks.close();
        p.shutdown();
        System.exit(0);
    }
}
