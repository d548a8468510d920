/*
 * rmqlab's real-RocketMQ driver, DLedger part (releases 4.5 and later, compiled with the release's
 * own dledger jar): DLedger's own store reads a DLedger CommitLog offline and says what it holds.
 *
 *   java DLedgerLedger ledger=<dledger-{selfId} folder, a copy> selfId=n0 group=<group>
 *        peers=<peers> fileSize=<mappedFileSizeForEntryData> out=<ledger.json>
 *
 * DLedgerMmapFileStore.load() and recover() run on the copy, as the broker runs them at start
 * (DLedgerServer.startup): recovery checks every entry against the index file and truncates what
 * does not hold. Then ledger.json: MemberState's persisted term and vote (the currterm file), the
 * store's begin and end index, end term, committed index and committed position (the checkpoint
 * file), and for every index from begin to end what DLedgerMmapFileStore.get(index) returns:
 * magic, size, index, term, pos, and the body's length.
 */

import io.openmessaging.storage.dledger.DLedgerConfig;
import io.openmessaging.storage.dledger.MemberState;
import io.openmessaging.storage.dledger.entry.DLedgerEntry;
import io.openmessaging.storage.dledger.store.file.DLedgerMmapFileStore;

import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

public class DLedgerLedger {
    public static void main(String[] argv) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String kv : argv) {
            int eq = kv.indexOf('=');
            a.put(kv.substring(0, eq), kv.substring(eq + 1));
        }
        File ledger = new File(a.get("ledger"));
        DLedgerConfig config = new DLedgerConfig();
        config.setStoreBaseDir(ledger.getParent());    // getDefaultPath(): {storeBaseDir}/dledger-{selfId}
        config.setSelfId(a.get("selfId"));
        config.setGroup(a.get("group"));
        config.setPeers(a.get("peers"));
        config.setMappedFileSizeForEntryData(Integer.parseInt(a.get("fileSize")));
        Map<String, Object> o = new LinkedHashMap<>();
        MemberState member = new MemberState(config);
        o.put("currTerm", member.currTerm());
        o.put("voteLeader", member.currVoteFor());
        DLedgerMmapFileStore store = new DLedgerMmapFileStore(config, member);
        store.load();
        store.recover();
        o.put("ledgerBeginIndex", store.getLedgerBeginIndex());
        o.put("ledgerEndIndex", store.getLedgerEndIndex());
        o.put("ledgerEndTerm", store.getLedgerEndTerm());
        o.put("committedIndex", store.getCommittedIndex());
        o.put("committedPos", store.getCommittedPos());
        o.put("dataMaxWrotePosition", store.getDataFileList().getMaxWrotePosition());
        List<Object> entries = new ArrayList<>();
        for (long i = Math.max(store.getLedgerBeginIndex(), 0); i <= store.getLedgerEndIndex(); i++) {
            DLedgerEntry e = store.get(i);
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("index", e.getIndex());
            one.put("term", e.getTerm());
            one.put("magic", e.getMagic());
            one.put("size", e.getSize());
            one.put("pos", e.getPos());
            one.put("bodySize", e.getBody() == null ? -1 : e.getBody().length);
            entries.add(one);
        }
        o.put("entries", entries);
        RocketMQDriver.writeJson(new File(a.get("out")), o);
        System.exit(0);   // the store's flush and clean-up threads are not daemons
    }
}
