/*
 * Transactions through the client API of RocketMQ before 4.3.0 (TransactionMQProducer with a
 * LocalTransactionExecuter and a TransactionCheckListener), for releases whose client has no
 * TransactionListener. Compiled only for those releases (rocketmq_harness.sources) and run by the
 * harness after RocketMQDriver's workload: `LegacyTransactions namesrv=... out=...` appends its
 * SendResults to out/sends.jsonl (RocketMQDriver.record) and writes out/legacy.json. The broker of those releases stores the half message with
 * sysFlag PREPARED (0x4) in its own topic, then a COMMIT (0x8) or ROLLBACK (0xC) record of it
 * (EndTransactionProcessor); there is no check-back, so an UNKNOW branch stays prepared.
 */

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;

import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.message.Message;

public class LegacyTransactions {
    public static void main(String[] argv) throws Exception {
        String ns = null, out = null;
        for (String a : argv) {
            if (a.startsWith("namesrv=")) ns = a.substring(8);
            if (a.startsWith("out=")) out = a.substring(4);
        }
        Map<String, Object> result = new LinkedHashMap<>();
        try {
            RocketMQDriver.sends = new PrintWriter(new OutputStreamWriter(
                    new FileOutputStream(new File(out, "sends.jsonl"), true), StandardCharsets.UTF_8), true);
            result.put("transactions", run(ns, (kind, r) -> RocketMQDriver.record(kind, r, null)));
        } catch (Throwable t) {
            result.put("error", t.toString());
        }
        RocketMQDriver.writeJson(new File(out, "legacy.json"), result);
        System.exit(0);
    }

    public static String run(String ns, BiConsumer<String, SendResult> record) throws Exception {
        TransactionMQProducer tx = new TransactionMQProducer("P_tx");
        tx.setNamesrvAddr(ns);
        tx.setInstanceName("p-tx-legacy");
        tx.setSendMsgTimeout(15000);
        ClassLoader cl = LegacyTransactions.class.getClassLoader();
        Class<?> checkType = Class.forName("org.apache.rocketmq.client.producer.TransactionCheckListener");
        Object check = Proxy.newProxyInstance(cl, new Class<?>[]{checkType}, (proxy, m, a) -> answer(proxy, m, a, LocalTransactionState.UNKNOW));
        tx.getClass().getMethod("setTransactionCheckListener", checkType).invoke(tx, check);
        tx.start();
        Class<?> execType = Class.forName("org.apache.rocketmq.client.producer.LocalTransactionExecuter");
        Object exec = Proxy.newProxyInstance(cl, new Class<?>[]{execType}, (proxy, m, a) -> {
            if (!m.getName().equals("executeLocalTransactionBranch")) return answer(proxy, m, a, null);
            String keys = ((Message) a[0]).getKeys();
            if (keys.contains("tx-commit")) return LocalTransactionState.COMMIT_MESSAGE;
            if (keys.contains("tx-rollback")) return LocalTransactionState.ROLLBACK_MESSAGE;
            return LocalTransactionState.UNKNOW;
        });
        Method send = tx.getClass().getMethod("sendMessageInTransaction", Message.class, execType, Object.class);
        for (String kind : new String[]{"commit", "rollback", "unknown"}) {
            for (int i = 0; i < 3; i++) {
                Message m = new Message("TopicTx", "tx", ("tx " + kind + " " + i + " 事务").getBytes(StandardCharsets.UTF_8));
                List<String> keys = Arrays.asList("tx-" + kind + "-" + i, "tx-" + kind, "shared");
                m.setKeys(keys);
                record.accept("tx-" + kind, (SendResult) send.invoke(tx, m, exec, null));
            }
        }
        Thread.sleep(500);   // the end-transaction requests are one-way
        return "3 committed, 3 rolled back, 3 left prepared (client API before 4.3: no check-back)";
    }

    static Object answer(Object proxy, Method m, Object[] a, Object otherwise) {
        switch (m.getName()) {
            case "hashCode": return System.identityHashCode(proxy);
            case "equals": return proxy == a[0];
            case "toString": return "legacy transaction listener";
            default: return otherwise;
        }
    }
}
