/*
 * A static topic's queue mapping as the release itself writes and reads config/topicQueueMapping.json
 * (5.1+: TopicQueueMappingManager.encode / decode, TopicQueueMappingSerializeWrapper,
 * TopicQueueMappingDetail, LogicQueueMappingItem). `StaticTopicMapping seed=N dir=DIR` builds
 * mappings as broker-a holds them after static topics were created and their queues moved between
 * brokers (each move a new item of the next generation, the old one's end and the new one's logic
 * offset decided; a last logic offset still -1 at times), some queues hosted elsewhere, currIdMap
 * from buildIdMap, with offsets drawn from the seed. It writes DIR/topicQueueMapping.json with the
 * release's own serializer (what ConfigManager.persist writes: encode(true)), reads it back with
 * the release's decoder, and writes DIR/mapping.json: every detail read back (topic, scope, total
 * queues, broker, epoch, dirty, currIdMap, every item) and, for probe offsets of each item,
 * computeStaticQueueOffsetStrictly, computeStaticQueueOffsetLoosely and computePhysicalQueueOffset.
 */

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.serializer.SerializerFeature;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.remoting.protocol.body.TopicQueueMappingSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.statictopic.LogicQueueMappingItem;
import org.apache.rocketmq.remoting.protocol.statictopic.TopicQueueMappingDetail;

public class StaticTopicMapping {
    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String kv : argv) a.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        Random rnd = new Random(Long.parseLong(a.get("seed")));
        File dir = new File(a.get("dir"));

        Map<String, TopicQueueMappingDetail> held = new ConcurrentHashMap<>();
        int topics = 1 + rnd.nextInt(3);
        for (int t = 0; t < topics; t++) {
            String topic = "Static" + t;
            int total = 1 + rnd.nextInt(6);
            TopicQueueMappingDetail d = new TopicQueueMappingDetail(topic, total, "broker-a", 1000L + rnd.nextInt(1000));
            d.setDirty(rnd.nextBoolean());
            for (int g = 0; g < total; g++) {
                if (rnd.nextInt(3) == 0) continue;   // a queue hosted by another broker
                List<LogicQueueMappingItem> items = new ArrayList<>();
                int gens = 1 + rnd.nextInt(3);
                long logic = 0;
                for (int gen = 0; gen < gens; gen++) {
                    String bname = gen == gens - 1 ? "broker-a" : "broker-" + (char) ('b' + rnd.nextInt(2));
                    long start = rnd.nextInt(3) == 0 ? 0 : rnd.nextInt(500);
                    boolean last = gen == gens - 1;
                    long end = last ? -1 : start + rnd.nextInt(400);
                    long logicOffset = gen == 0 ? 0 : (last && rnd.nextInt(4) == 0 ? -1 : logic);
                    items.add(new LogicQueueMappingItem(gen, rnd.nextInt(8), bname, logicOffset, start, end,
                        last ? -1 : 1796000000000L + gen, last ? -1 : 1796000000000L + gen + 1));
                    if (end >= start) logic += end - start;
                }
                TopicQueueMappingDetail.putMappingInfo(d, g, items);
            }
            d.setCurrIdMap(TopicQueueMappingDetail.buildIdMap(d, TopicQueueMappingDetail.LEVEL_0));
            held.put(topic, d);
        }
        TopicQueueMappingSerializeWrapper wrapper = new TopicQueueMappingSerializeWrapper();
        wrapper.setTopicQueueMappingInfoMap(held);
        String json = wrapper.toJson(true);      // TopicQueueMappingManager.encode(true), as persist writes it
        Files.write(new File(dir, "topicQueueMapping.json").toPath(), json.getBytes(StandardCharsets.UTF_8));

        TopicQueueMappingSerializeWrapper back =
            TopicQueueMappingSerializeWrapper.fromJson(json, TopicQueueMappingSerializeWrapper.class);
        List<Object> out = new ArrayList<>();
        for (TopicQueueMappingDetail d : back.getTopicQueueMappingInfoMap().values()) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("topic", d.getTopic());
            o.put("scope", d.getScope());
            o.put("totalQueues", d.getTotalQueues());
            o.put("bname", d.getBname());
            o.put("epoch", d.getEpoch());
            o.put("dirty", d.isDirty());
            Map<String, Integer> ids = new LinkedHashMap<>();
            d.getCurrIdMap().forEach((k, v) -> ids.put(String.valueOf(k), v));
            o.put("currIdMap", ids);
            List<Object> items = new ArrayList<>();
            d.getHostedQueues().forEach((g, list) -> {
                for (LogicQueueMappingItem it : list) {
                    Map<String, Object> i = new LinkedHashMap<>();
                    i.put("globalId", g);
                    i.put("gen", it.getGen());
                    i.put("queueId", it.getQueueId());
                    i.put("bname", it.getBname());
                    i.put("logicOffset", it.getLogicOffset());
                    i.put("startOffset", it.getStartOffset());
                    i.put("endOffset", it.getEndOffset());
                    i.put("timeOfStart", it.getTimeOfStart());
                    i.put("timeOfEnd", it.getTimeOfEnd());
                    List<Object> probes = new ArrayList<>();
                    for (long p : new long[]{0, it.getStartOffset() - 1, it.getStartOffset(), it.getStartOffset() + 7,
                        it.getEndOffset(), it.getEndOffset() + 3}) {
                        Map<String, Object> pr = new LinkedHashMap<>();
                        pr.put("offset", p);
                        pr.put("strictly", it.computeStaticQueueOffsetStrictly(p));
                        pr.put("loosely", it.computeStaticQueueOffsetLoosely(p));
                        pr.put("physical", it.computePhysicalQueueOffset(p));
                        probes.add(pr);
                    }
                    i.put("probes", probes);
                    items.add(i);
                }
            });
            o.put("items", items);
            out.add(o);
        }
        Files.write(new File(dir, "mapping.json").toPath(),
            JSON.toJSONString(out, SerializerFeature.WriteMapNullValue).getBytes(StandardCharsets.UTF_8));
    }
}
