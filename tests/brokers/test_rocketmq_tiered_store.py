"""rmqlab.formats.tieredsegment judged by a real broker with the tiered store (the tiered scenario:
TieredMessageStore on PosixFileSegment, its MessageStoreDispatcher uploading the workload) and by
the release's own tiered classes reading what it wrote (TieredSegmentsOracle.java: FlatFileStore
loads the metadata and the segments, FlatMessageFile serves each queue offset, IndexStoreService
answers key queries from the index segment the broker compacted and uploaded at shutdown).
rmqlab reads the same files and must serve the same queues, items and message bytes, answer the
same key queries, find nothing wrong in the broker's files, and find each damage done to a copy."""
from __future__ import annotations

import json
import shutil
import zlib
from pathlib import Path

import pytest
import rocketmq_harness as rh

from rmqlab.formats import tieredindex as ti
from rmqlab.formats import tieredindex51 as t51
from rmqlab.formats import tieredsegment as ts
from rmqlab.rules.versions import layout_facts
from rmqlab.store.directory import Store
from rmqlab.verify.check_tiered import verify_tiered_segments

RELEASES = [r for r in rh.TIERED_STORE_RELEASES if rh.selected(r, "tiered")]


def _keys(bs: rh.BrokerStore) -> list[tuple[str, str]]:
    """(topic, key) of a third of the KEYS keys and UNIQ_KEYs of the uploaded topics' messages
    (MessageDecoder's decode; every third UNIQ_KEY), and keys no message has."""
    out = []
    for i, m in enumerate(r for r in bs.records() if "topic" in r):
        if m["topic"].startswith(("rmq_sys_", "%LMQ%", "SCHEDULE_TOPIC", "RMQ_SYS")):
            continue
        p = m["properties"]
        out += [(m["topic"], k) for k in p.get("KEYS", "").split(" ") if k]
        if p.get("UNIQ_KEY") and i % 3 == 0:
            out.append((m["topic"], p["UNIQ_KEY"]))
    out = list(dict.fromkeys(out))[::3]   # a third of them: each query opens the index anew
    return out + [("TopicA", "no-such-key"), ("NoSuchTopic", out[0][1])]


@pytest.fixture(scope="module", params=RELEASES)
def tiered(request):
    bs = rh.rocketmq_store(request.param, "tiered")
    keys = _keys(bs)
    oracle = rh.tiered_segments_oracle(bs, "".join(f"{t}\t{k}\n" for t, k in keys))
    return bs, keys, oracle


def _store(bs: rh.BrokerStore) -> Store:
    return Store(bs.store, **bs.store_kwargs())


def test_the_broker_uploaded_the_workload(tiered):
    """The scenario reached what the other tests judge: most queues of the workload uploaded,
    several topics, and the index: segments on 5.3+ (its IndexStoreService compacts and uploads
    the file being written at shutdown); on 5.2, whose service compacts only a full file and does
    nothing at shutdown, segments of the files the workload filled (small ones here:
    TIERED_SMALL_INDEX) and the local file it was writing, of that geometry; on 5.1 (TieredIndexFile)
    likewise, its local file named "0000"."""
    bs, _, oracle = tiered
    assert bs.reached["tiered_segments"] >= 20, bs.reached
    uploaded = [q for q in oracle["queues"] if q["cqCommit"] > q["cqMin"]]
    assert len(uploaded) >= 15 and len({q["topic"] for q in uploaded}) >= 8
    assert ts.index_segments(bs.tiered), "the broker compacted and uploaded no index file"
    if bs.release in rh.TIERED_FLATFILE_MANAGER_RELEASES:
        local = [p for p in (bs.store / "tiered_index_file").iterdir() if p.is_file()]
        assert local, "the broker left no local index file"
        if layout_facts(bs.release).tiered_index_legacy:   # 5.1's TieredIndexFile: "0000" being written
            assert {p.name for p in local} <= set(ti.LEGACY_FILE_NAMES)
            assert {p.stat().st_size for p in local} == {t51.local_file_size(*rh.TIERED_SMALL_INDEX)}
        else:
            assert {ti.infer_local_geometry(p) for p in local} == {ti.TieredIndexGeometry(*rh.TIERED_SMALL_INDEX)}


def test_queues_items_and_messages_as_the_releases_flat_files_serve_them(tiered):
    """Every queue FlatFileStore loads, with its offsets, every ConsumeQueue item and the bytes
    of the message getMessageAsync reads (CRC32 over them, QUEUEOFFSET and the rewritten
    PHYSICALOFFSET), as rmqlab reads them."""
    bs, _, oracle = tiered
    meta = ti.read_tiered_metadata(bs.store / "config" / ti.METADATA_FILE)
    mine = {(q.topic, q.queue_id): q for q in ts.tiered_queues(bs.tiered, meta)}
    assert set(mine) == {(q["topic"], q["queueId"]) for q in oracle["queues"]}
    compared = 0
    for want in oracle["queues"]:
        q = mine[(want["topic"], want["queueId"])]
        cl = q.segments[q.segments["kind"] == "commitlog"]
        assert (q.min_offset, q.commit_offset) == (want["cqMin"], want["cqCommit"]), want["topic"]
        assert (int(cl["base_offset"].min()), int((cl["base_offset"] + cl["size"]).max())) == \
            (want["clMin"], want["clCommit"])
        assert meta.topic_ids[want["topic"]] == want["topicId"]
        items = q.items()
        assert items[["queue_offset", "commitlog_offset", "size", "tags_code"]].values.tolist() == \
            [u[:4] for u in want["units"]]
        msgs = q.messages(body=False)
        for (qo, phy, size, _, length, crc, field_qo, field_phy), row in zip(want["units"], msgs.itertuples(),
                                                                              strict=True):
            seg = cl[cl["base_offset"] <= phy].iloc[-1]
            raw = Path(seg["path"]).read_bytes()[phy - int(seg["base_offset"]):][:size]
            assert (len(raw), zlib.crc32(raw)) == (length, crc)
            assert (row.offset, row.queue_offset, row.phy_offset, row.total_size) == (qo, field_qo, field_phy, size)
            compared += 1
    assert compared >= 500


def test_key_queries_as_the_releases_index_service_answers(tiered):
    """Every key of the uploaded messages asked of the index the broker left (the segment it
    uploaded at shutdown, through the metadata): the same items as IndexStoreService.queryAsync,
    each pointing at a message of the key in the tiered CommitLog of its queue."""
    bs, keys, oracle = tiered
    s = _store(bs)
    meta = ti.read_tiered_metadata(bs.store / "config" / ti.METADATA_FILE)
    served = {(q.topic, q.queue_id): q.messages(body=False).set_index("tiered_offset")
              for q in ts.tiered_queues(bs.tiered, meta)}
    found = 0
    legacy = layout_facts(bs.release).tiered_index_legacy
    for (topic, key), want in zip(keys, oracle["answers"], strict=True):
        got = s.query_tiered_index(topic, key, max_num=64, tiered_path=bs.tiered)
        if legacy:   # 5.1's fetcher answers with the messages it read: their queue, offset and size
            rows = sorted(map(tuple, got[["queue_id", "offset", "size"]].astype(int).values.tolist()))
            assert rows == sorted((q, o, z) for _, q, o, z, _, _ in want), (topic, key)
        else:
            rows = sorted(map(tuple, got[["topic_id", "queue_id", "offset", "size", "hash_code", "time_diff"]]
                              .astype(int).values.tolist()))
            assert rows == sorted(map(tuple, want)), (topic, key)
        for _, r in got.iterrows():
            if r["topic"] is None:
                continue
            hit = served[(r["topic"], int(r["queue_id"]))].loc[int(r["offset"])]
            assert key in str(hit["keys"]).split(" ") or hit["uniq_key"] == key, (topic, key)
            found += 1
    assert found >= (20 if legacy else 100)


def test_verify_finds_nothing_wrong_in_the_brokers_files(tiered):
    """The broker's own tiered files: no error, and the uploaded messages compared with the
    local queues' where they still hold them."""
    bs, _, _ = tiered
    reports = verify_tiered_segments(_store(bs), bs.tiered)
    assert reports and all(r.ok for r in reports), [str(p.error) for r in reports for p in r.problems]
    assert sum(r.counts.get("compared_with_local", 0) for r in reports) >= 500


@pytest.mark.parametrize("release", [r for r in RELEASES if layout_facts(r).tiered_index_legacy])
def test_51_local_index_files_verify_by_51s_rules(release, tmp_path):
    """5.1's local index file ("0000", TieredIndexFile) as the 5.1 broker wrote it: no problem,
    its geometry the broker's configured tieredStoreIndexFileMaxHashSlotNum / MaxIndexNum
    (TIERED_SMALL_INDEX), found from its bytes alone; in a copy, an item pointing past the
    slot's item before it and a slot not holding its newest item are each named."""
    from rmqlab.verify.check_tiered import verify_tiered_index

    bs = rh.rocketmq_store(release, "tiered")
    reports = [r for r in verify_tiered_index(bs.store) if Path(r.path).name in ti.LEGACY_FILE_NAMES]
    assert reports and all(r.problems == [] for r in reports), [str(p.error) for r in reports for p in r.problems]
    slots, items = rh.TIERED_SMALL_INDEX
    assert {(r.counts["hash_slot_num"], r.counts["index_num"]) for r in reports if "hash_slot_num" in r.counts} \
        == {(slots, items)}
    # the file being written, or the one before it where a full file rolled just now (0000 empty)
    local = max((p for p in (bs.store / ti.FOLDER / n for n in ti.LEGACY_FILE_NAMES[:2]) if p.is_file()),
                key=lambda p: int.from_bytes(p.read_bytes()[24:28], "big"))
    raw = local.read_bytes()
    count = int.from_bytes(raw[24:28], "big")
    assert count > 1
    for what, at in (("item_index", 28 + 8 * slots + 32 * (count - 1) + 28), ("slot", 28)):
        copy = tmp_path / what / ti.FOLDER
        copy.mkdir(parents=True)
        bad = bytearray(raw)
        old = int.from_bytes(bad[at:at + 4], "big", signed=True)
        bad[at:at + 4] = (count - 2 if old != count - 2 else count - 1).to_bytes(4, "big", signed=True)
        (copy / local.name).write_bytes(bytes(bad))
        got = verify_tiered_index(copy.parent, slots, items)
        assert what in {p.error.field for r in got for p in r.errors}, (what, [str(p.error) for r in got
                                                                         for p in r.problems])


def _damaged(bs: rh.BrokerStore, tmp_path: Path) -> tuple[Store, Path, Path]:
    """A copy of the tiered store and of its file system, and TopicA queue 0's folder in it."""
    store = tmp_path / "store"
    rh.copy_store(bs.store, store)
    tiered = tmp_path / "tiered"
    rh.copy_store(bs.tiered, tiered)
    queue = next(tiered.glob(f"*/{rh.BROKER_NAME}/TopicA/0"))
    return Store(store, **bs.store_kwargs()), tiered, queue


def _checks(store: Store, tiered: Path) -> set[str]:
    return {p.check for r in verify_tiered_segments(store, tiered) for p in r.errors}


def _seg(queue: Path, kind: str) -> Path:
    return next((queue / kind).iterdir())


def test_each_damage_to_a_copy_is_found(tiered, tmp_path):
    """A renamed segment, a torn ConsumeQueue, a PHYSICALOFFSET not rewritten, an item of
    another size, an uploaded message whose store time differs from the local one: each its
    own check, in a copy of the broker's files."""
    bs, _, _ = tiered
    cases = {}

    store, tiered_dir, queue = _damaged(bs, tmp_path / "name")
    f = _seg(queue, "COMMIT_LOG")
    f.rename(f.with_name("00000000" + f.name[8:]))
    cases["name"] = (_checks(store, tiered_dir), "tiered.segment")

    store, tiered_dir, queue = _damaged(bs, tmp_path / "torn")
    f = _seg(queue, "CONSUME_QUEUE")
    with open(f, "r+b") as fh:
        fh.truncate(f.stat().st_size - 7)
    cases["torn"] = (_checks(store, tiered_dir), "tiered.segment")

    store, tiered_dir, queue = _damaged(bs, tmp_path / "phy")
    f = _seg(queue, "COMMIT_LOG")
    raw = bytearray(f.read_bytes())
    second = int.from_bytes(raw[0:4], "big")        # the second record's PHYSICALOFFSET
    raw[second + 28:second + 36] = (second + 1).to_bytes(8, "big")
    f.write_bytes(bytes(raw))
    cases["phy"] = (_checks(store, tiered_dir), "tiered.commitlog")

    store, tiered_dir, queue = _damaged(bs, tmp_path / "item")
    f = _seg(queue, "CONSUME_QUEUE")
    raw = bytearray(f.read_bytes())
    raw[20 + 8:20 + 12] = (int.from_bytes(raw[28:32], "big") + 4).to_bytes(4, "big")
    f.write_bytes(bytes(raw))
    cases["item"] = (_checks(store, tiered_dir), "tiered.item")

    store, tiered_dir, queue = _damaged(bs, tmp_path / "copy")
    f = _seg(queue, "COMMIT_LOG")
    raw = bytearray(f.read_bytes())
    stamp = 56 + (12 if raw[36 + 3] & 0x10 else 0)   # STORETIMESTAMP follows BORNHOST (v4 or v6)
    raw[stamp + 7] ^= 1
    f.write_bytes(bytes(raw))
    cases["copy"] = (_checks(store, tiered_dir), "tiered.copy")

    for name, (found, want) in cases.items():
        assert want in found, (name, found)


def test_a_copy_without_the_metadata_still_reads(tiered, tmp_path):
    """Without config/tieredStoreMetadata.json (a file system copied alone) every segment file is
    read by its own size: the same items as with it."""
    bs, _, _ = tiered
    meta = ti.read_tiered_metadata(bs.store / "config" / ti.METADATA_FILE)
    with_meta = {(q.topic, q.queue_id): q.items().values.tolist() for q in ts.tiered_queues(bs.tiered, meta)}
    copy = tmp_path / "tiered"
    shutil.copytree(bs.tiered, copy)
    alone = {(q.topic, q.queue_id): q.items().values.tolist() for q in ts.tiered_queues(copy)}
    assert alone == with_meta


def test_write_queue_writes_the_brokers_bytes(tiered, tmp_path):
    """Each uploaded queue written again by rmqlab's writer from the LOCAL store (the record of
    each queue offset from the local ConsumeQueue and CommitLog, an inner batch once for each
    offset it covers, the tags code CqUnit gives): byte for byte the segments the broker wrote."""
    import numpy as np

    from rmqlab.formats.commitlog import store_files
    from rmqlab.store.queues import LogicQueue

    bs, _, _ = tiered
    s = _store(bs)
    files = store_files(bs.commitlog)
    starts = np.array([f.start_offset for f in files])

    def raw(offset: int, size: int) -> bytes:
        f = files[int(np.searchsorted(starts, offset, side="right")) - 1]
        with open(f.path, "rb") as fh:
            fh.seek(offset - f.start_offset)
            return fh.read(size)

    meta = ti.read_tiered_metadata(bs.store / "config" / ti.METADATA_FILE)
    compared = 0
    for q in ts.tiered_queues(bs.tiered, meta):
        if q.commit_offset == q.min_offset:
            continue
        with LogicQueue(s, q.topic, q.queue_id) as lq:
            units = lq.units(q.min_offset, q.commit_offset)
            codes = units["tags_code"].to_numpy(np.int64)
            if lq._ext is not None:
                codes = lq._ext.resolve(codes)[0]
        reps = units["batch_num"].to_numpy()
        one = [raw(int(o), int(z)) for o, z in zip(units["commitlog_offset"], units["size"])]
        records = [r for r, k in zip(one, reps) for _ in range(int(k))]
        codes = [int(c) for c, k in zip(codes, reps) for _ in range(int(k))]
        n = q.commit_offset - q.min_offset
        got = ts.write_queue(tmp_path, cluster=rh.CLUSTER_NAME, broker=rh.BROKER_NAME, topic=q.topic,
                             queue_id=q.queue_id, records=records[:n], tags_codes=codes[:n], first_offset=q.min_offset)
        theirs = q.segments.sort_values(["kind", "base_offset"])
        assert got[["kind", "base_offset", "size"]].values.tolist() == \
            theirs[["kind", "base_offset", "size"]].values.tolist(), q.topic
        for path in theirs["path"]:
            mine = tmp_path / Path(path).relative_to(bs.tiered)
            assert mine.read_bytes() == Path(path).read_bytes(), path
            compared += 1
    assert compared >= 30


def test_readers_survive_hostile_bytes_from_the_brokers_segments(tiered, tmp_path):
    """The segment readers and verify fed a real queue's segments mutated
    (fuzz_support.TieredSegmentTarget seeded from the broker's TopicA/0 and TopicBatchCQ/0 only):
    each answers or raises a typed error naming file, offset or field; none hangs or runs out of
    memory."""
    import fuzz_support as fs

    bs, _, _ = tiered
    queues = []
    for q in ts.tiered_queues(bs.tiered):
        if (q.topic, q.queue_id) in (("TopicA", 0), ("TopicBatchCQ", 0)):
            seg = q.segments.set_index("kind")["path"]
            queues.append((Path(seg["commitlog"]), Path(seg["consumequeue"]), q.min_offset))
    assert len(queues) == 2
    rt = fs.run_budget(fs.TieredSegmentTarget(queues, only_queues=True), 400, tmp_path, swarm=50)
    assert rt.failures == [] and rt.typed_errors > 0


def test_tiered_on_the_command_line(tiered, capsys):
    """``rmqlab store tiered --json`` lists each queue with the offsets FlatFileStore serves,
    and ``--topic --queue`` the queue's messages at the release's items."""
    from rmqlab.cli import main

    bs, _, oracle = tiered
    geometry = ["--consume-queue-file-size", str(rh.CONSUME_QUEUE_FILE_SIZE)]
    assert main(["store", "tiered", str(bs.store), "--tiered-path", str(bs.tiered), *geometry, "--json"]) == 0
    got = {(r["topic"], r["queue_id"]): (r["min_offset"], r["commit_offset"])
           for r in map(json.loads, capsys.readouterr().out.splitlines())}     # one object a line
    assert got == {(q["topic"], q["queueId"]): (q["cqMin"], q["cqCommit"]) for q in oracle["queues"]}
    want = next(q for q in oracle["queues"] if q["topic"] == "TopicB" and q["queueId"] == 1)
    assert main(["store", "tiered", str(bs.store), "--tiered-path", str(bs.tiered), *geometry, "--topic", "TopicB",
                 "--queue", "1", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["offset"], r["tiered_offset"], r["item_size"]) for r in rows] == [tuple(u[:3]) for u in want["units"]]


@pytest.mark.parametrize("release", [r for r in RELEASES if layout_facts(r).tiered_index_legacy])
def test_51_index_readers_survive_hostile_bytes_from_the_brokers_files(release, tmp_path):
    """5.1's index readers (rmqlab.formats.tieredindex51) fed the index file the 5.1 broker
    uploaded and the local one it left, mutated (fuzz_support.TieredIndex51Target seeded from
    them only): each answers or raises a typed error naming file, offset or field."""
    import fuzz_support as fs

    bs = rh.rocketmq_store(release, "tiered")
    uploaded = ts.index_segments(bs.tiered)[0]
    target = fs.TieredIndex51Target([(uploaded, bs.store / "tiered_index_file" / "0000")],
                                    hash_slot_num=rh.TIERED_SMALL_INDEX[0], only_files=True)
    rt = fs.run_budget(target, 300, tmp_path, swarm=50)
    assert rt.failures == [] and rt.typed_errors > 0
