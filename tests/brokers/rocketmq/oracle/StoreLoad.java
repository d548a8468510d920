/*
 * The release's own DefaultMessageStore.load() on a store folder: whether the broker would start
 * on it (BrokerController.initialize stops when load() answers false). `StoreLoad conf=FILE
 * out=FILE` reads FILE as broker.conf is read (MixAll.properties2Object into MessageStoreConfig,
 * the properties the harness's brokers get) and writes {"loaded": true|false} to out. Run it on
 * a copy: load() recovers the store (it truncates and deletes files) and writes an abort file.
 * The constructors differ by release (4.x: config, stats, listener, broker config; 5.1+ adds the
 * topic config table, read from config/topics.json, which 5.0 takes through a setter), so they are
 * found by reflection.
 */

import java.io.File;
import java.io.FileInputStream;
import java.io.PrintWriter;
import java.lang.reflect.Constructor;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.config.MessageStoreConfig;

public class StoreLoad {
    public static void main(String[] argv) throws Exception {
        Map<String, String> args = arguments(argv);
        DefaultMessageStore store = open(args.get("conf"));
        boolean loaded = store.load();
        try (PrintWriter w = new PrintWriter(new File(args.get("out")), "UTF-8")) {
            w.print("{\"loaded\": " + loaded + "}");
        }
        try {
            store.shutdown();
        } catch (Throwable ignored) {
            // a store that did not load may not shut down cleanly; the answer is written
        }
        System.exit(0);
    }

    /** The name=value pairs of the command line. */
    static Map<String, String> arguments(String[] argv) {
        Map<String, String> args = new LinkedHashMap<>();
        for (String a : argv) args.put(a.substring(0, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        return args;
    }

    /** A DefaultMessageStore (not loaded) configured by `conf` as a broker is by broker.conf. */
    static DefaultMessageStore open(String conf) throws Exception {
        Properties props = new Properties();
        try (FileInputStream in = new FileInputStream(conf)) {
            props.load(in);
        }
        MessageStoreConfig config = new MessageStoreConfig();
        BrokerConfig brokerConfig = new BrokerConfig();
        MixAll.properties2Object(props, config);
        MixAll.properties2Object(props, brokerConfig);

        Object stats = newStats(brokerConfig.getBrokerClusterName());
        DefaultMessageStore store = null;
        for (int arity : new int[] {5, 4}) {   // the topic config table where the release takes one
            for (Constructor<?> c : DefaultMessageStore.class.getConstructors()) {
                if (store != null || c.getParameterCount() != arity) continue;
                store = (DefaultMessageStore) (arity == 4 ? c.newInstance(config, stats, null, brokerConfig)
                    : c.newInstance(config, stats, null, brokerConfig,
                        topicConfigTable(new File(config.getStorePathRootDir(), "config/topics.json"))));
            }
        }
        for (java.lang.reflect.Method m : DefaultMessageStore.class.getMethods()) {   // 5.0: a setter instead
            if (m.getName().equals("setTopicConfigTable") && m.getParameterCount() == 1) {
                m.invoke(store, topicConfigTable(new File(config.getStorePathRootDir(), "config/topics.json")));
            }
        }
        return store;
    }

    /** config/topics.json as TopicConfigManager decodes it (5.x: the queue type of a BatchCQ
     *  topic is an attribute there, and load() checks it), empty without the file. */
    static Object topicConfigTable(File topics) throws Exception {
        if (!topics.isFile()) return new ConcurrentHashMap<>();
        byte[] bytes = java.nio.file.Files.readAllBytes(topics.toPath());
        Class<?> wrapper;
        try {   // 5.1+ (remoting), 5.0 (common)
            wrapper = Class.forName("org.apache.rocketmq.remoting.protocol.body.TopicConfigSerializeWrapper");
        } catch (ClassNotFoundException e) {
            wrapper = Class.forName("org.apache.rocketmq.common.protocol.body.TopicConfigSerializeWrapper");
        }
        Class<?> rs = Class.forName("org.apache.rocketmq.remoting.protocol.RemotingSerializable");
        Object w = rs.getMethod("decode", byte[].class, Class.class).invoke(null, bytes, wrapper);
        return wrapper.getMethod("getTopicConfigTable").invoke(w);
    }

    /** BrokerStatsManager(String clusterName) before 5.0, (String, boolean) after. */
    static Object newStats(String cluster) throws Exception {
        Class<?> cls = Class.forName("org.apache.rocketmq.store.stats.BrokerStatsManager");
        for (Constructor<?> c : cls.getConstructors()) {
            Class<?>[] p = c.getParameterTypes();
            if (p.length == 1 && p[0] == String.class) return c.newInstance(cluster);
            if (p.length == 2 && p[0] == String.class && p[1] == boolean.class) return c.newInstance(cluster, true);
        }
        throw new IllegalStateException("no BrokerStatsManager constructor");
    }
}
