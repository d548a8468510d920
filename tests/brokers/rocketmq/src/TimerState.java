/*
 * rmqlab's real-RocketMQ driver, timer part (5.x, compiled with the release's own store jar): the
 * release's timer classes read a store's timer files offline and say what they hold.
 *
 *   java TimerState root=<a copy of the store's timer files: timerwheel, timerlog/, config/>
 *        precisionMs=<timerPrecisionMs> timerLogFileSize=<mappedFileSizeTimerLog> out=<timers.json>
 *
 * Every class opens its file read-write (TimerWheel even sets the file's length), so the harness
 * hands it a copy. Written to timers.json:
 *   checkpoint  TimerCheckpoint(config/timercheck): lastReadTimeMs, lastTimerLogFlushPos,
 *               lastTimerQueueOffset, masterTimerQueueOffset and the data version
 *   metrics     TimerMetrics(config/timermetrics).load(): timingCount, topic -> count
 *   slots       TimerWheel.getRawSlot for every one of the slotsTotal * 2 slots whose bytes are
 *               not all zero: index, timeMs, firstPos, lastPos, num, magic
 *   allNum      TimerWheel.getAllNum(lastReadTimeMs): the wheel's count from the read time on
 *   chains      for every slot that TimerWheel.getSlot(its time) accepts, the units met walking
 *               from lastPos back along prevPos through TimerLog.getTimerMessage, as
 *               TimerMessageStore.dequeue walks them (the unit's own fields)
 *   units       every unit of the timer log in file order, read through TimerLog.getTimerMessage
 *               (the walk of TimerMessageStore.recoverAndRevise: 52-byte steps to a blank unit)
 */

import org.apache.rocketmq.store.logfile.MappedFile;
import org.apache.rocketmq.store.SelectMappedBufferResult;
import org.apache.rocketmq.store.timer.Slot;
import org.apache.rocketmq.store.timer.TimerCheckpoint;
import org.apache.rocketmq.store.timer.TimerLog;
import org.apache.rocketmq.store.timer.TimerMetrics;
import org.apache.rocketmq.store.timer.TimerWheel;

import java.io.File;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class TimerState {
    /** TimerMessageStore: slotsTotal = TIMER_WHEEL_TTL_DAY (7; TIMER_WHELL_TTL_DAY in 5.0.0) * DAY_SECS */
    static final int SLOTS_TOTAL = 7 * 24 * 3600;
    /** a walk longer than this is a cycle in the chain, not a slot */
    static final int MAX_CHAIN = 1_000_000;

    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String kv : argv) {
            int eq = kv.indexOf('=');
            a.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        String root = a.get("root");
        int precisionMs = Integer.parseInt(a.get("precisionMs"));
        int fileSize = Integer.parseInt(a.get("timerLogFileSize"));
        Map<String, Object> o = new LinkedHashMap<>();

        TimerCheckpoint cp = new TimerCheckpoint(root + File.separator + "config" + File.separator + "timercheck");
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("lastReadTimeMs", cp.getLastReadTimeMs());
        c.put("lastTimerLogFlushPos", cp.getLastTimerLogFlushPos());
        c.put("lastTimerQueueOffset", cp.getLastTimerQueueOffset());
        c.put("masterTimerQueueOffset", cp.getMasterTimerQueueOffset());
        c.put("stateVersion", cp.getDataVersion().getStateVersion());
        c.put("timestamp", cp.getDataVersion().getTimestamp());
        c.put("counter", cp.getDataVersion().getCounter().get());
        o.put("checkpoint", c);

        TimerMetrics metrics = new TimerMetrics(root + File.separator + "config" + File.separator + "timermetrics");
        metrics.load();
        Map<String, Object> counts = new LinkedHashMap<>();
        for (Map.Entry<String, TimerMetrics.Metric> e : metrics.getTimingCount().entrySet()) {
            counts.put(e.getKey(), e.getValue().getCount().get());
        }
        o.put("metrics", counts);

        TimerWheel wheel = new TimerWheel(root + File.separator + "timerwheel", SLOTS_TOTAL, precisionMs);
        TimerLog log = new TimerLog(root + File.separator + "timerlog", fileSize);
        log.load();

        List<Object> slots = new ArrayList<>();
        List<Object> chains = new ArrayList<>();
        for (int i = 0; i < SLOTS_TOTAL * 2; i++) {
            Slot raw = wheel.getRawSlot((long) i * precisionMs);
            if (raw.timeMs == 0 && raw.firstPos == 0 && raw.lastPos == 0 && raw.num == 0 && raw.magic == 0) {
                continue;
            }
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("index", i);
            s.put("timeMs", raw.timeMs);
            s.put("firstPos", raw.firstPos);
            s.put("lastPos", raw.lastPos);
            s.put("num", raw.num);
            s.put("magic", raw.magic);
            slots.add(s);
            Slot slot = wheel.getSlot(raw.timeMs);
            if (slot.timeMs == -1) {
                continue;   // the slot's bytes are of another lap of the wheel
            }
            List<Object> chain = new ArrayList<>();
            long pos = slot.lastPos;
            while (pos != -1 && chain.size() < MAX_CHAIN) {
                Map<String, Object> u = unit(log, pos);
                if (u == null) {
                    break;
                }
                chain.add(u);
                pos = (Long) u.get("prevPos");
            }
            Map<String, Object> ch = new LinkedHashMap<>();
            ch.put("timeMs", slot.timeMs);
            ch.put("units", chain);
            chains.add(ch);
        }
        o.put("slots", slots);
        o.put("allNum", wheel.getAllNum(cp.getLastReadTimeMs()));
        o.put("chains", chains);

        List<Object> units = new ArrayList<>();
        for (MappedFile f : log.getMappedFileQueue().getMappedFiles()) {
            for (long pos = f.getFileFromOffset(); pos + TimerLog.UNIT_SIZE <= f.getFileFromOffset() + f.getFileSize();
                 pos += TimerLog.UNIT_SIZE) {
                Map<String, Object> u = unit(log, pos);
                if (u == null || (Integer) u.get("size") == 0 || (Integer) u.get("magic") == TimerLog.BLANK_MAGIC_CODE) {
                    break;
                }
                units.add(u);
            }
        }
        o.put("units", units);
        RocketMQDriver.writeJson(new File(a.get("out")), o);
        System.exit(0);   // the mapped files' clean-up is not needed on a copy
    }

    /** The timer log unit at `pos`, in TimerMessageStore.doEnqueue's field order; null past the log. */
    static Map<String, Object> unit(TimerLog log, long pos) {
        SelectMappedBufferResult r = log.getTimerMessage(pos);
        if (r == null) {
            return null;
        }
        try {
            ByteBuffer b = r.getByteBuffer();
            if (b.remaining() < 16) {
                return null;
            }
            Map<String, Object> u = new LinkedHashMap<>();
            u.put("pos", pos);
            u.put("size", b.getInt());
            u.put("prevPos", b.getLong());
            u.put("magic", b.getInt());
            if (b.remaining() < TimerLog.UNIT_SIZE - 16) {
                return u;
            }
            u.put("currWriteTime", b.getLong());
            u.put("delayTime", b.getInt());
            u.put("offsetPy", b.getLong());
            u.put("sizePy", b.getInt());
            u.put("hashTopic", b.getInt());
            u.put("reserved", b.getLong());
            return u;
        } finally {
            r.release();
        }
    }
}
