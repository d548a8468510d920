"""rmqlab.formats.tieredindex judged by the tiered store's own classes (IndexStoreFile, IndexItem,
PosixFileSegment of the release's rocketmq-tiered-store jar; TieredIndexOracle.java): the keys of
every message a real broker stored (its clean store, MessageDecoder's decode: UNIQ_KEY and each
key of KEYS, as MessageStoreDispatcherImpl.constructIndexFile0 passes them) are put into index
files by the release's code, which also answers queries before and after compacting each file
(the local and the uploaded form). rmqlab reads the same bytes and must answer the same, and its
compaction must write the release's bytes."""
from __future__ import annotations

import json

import pytest
import rocketmq_harness as rh

from rmqlab.formats import tieredindex as ti
from rmqlab.rules.versions import layout_facts

RELEASES = rh.tiered_index_releases()
#: small files, so they fill (several files) and slots collide (long chains)
SLOTS, ITEMS = 61, 700


def _rows(bs: rh.BrokerStore) -> list[tuple[str, int, int, list[str], int, int, int]]:
    msgs = [r for r in bs.records() if "topic" in r]
    topic_id = {t: i + 1 for i, t in enumerate(sorted({m["topic"] for m in msgs}))}
    out = []
    for m in msgs:
        p = m["properties"]
        keys = [p["UNIQ_KEY"]] if p.get("UNIQ_KEY") else []
        keys += [k for k in p.get("KEYS", "").split(" ") if k]
        out.append((m["topic"], topic_id[m["topic"]], m["queueId"], keys, m["physicalOffset"], m["storeSize"],
                    m["storeTimestamp"]))
    return out


@pytest.fixture(scope="module", params=RELEASES)
def oracle(request):
    bs = rh.rocketmq_store("5.3.3" if "5.3.3" in rh.selected_releases() else request.param, "clean")
    rows = _rows(bs)
    times = sorted(r[6] for r in rows)
    keyed = [(r[0], k) for r in rows for k in dict.fromkeys(r[3])]
    picks = keyed[::9] + [("TopicA", "no-such-key"), ("NoTopic", keyed[0][1])]
    windows = [(0, (1 << 63) - 1), (times[len(times) // 3], times[2 * len(times) // 3])]
    queries = [(t, k, n, b, e) for t, k in picks for n in (1, 3, 64) for b, e in windows]
    tsv = "".join(f"{t}\t{i}\t{q}\t{o}\t{z}\t{ts}\t{' '.join(dict.fromkeys(k))}\n" for t, i, q, k, o, z, ts in rows
                  if any(k))
    qtsv = "".join(f"{t}\t{k}\t{n}\t{b}\t{e}\n" for t, k, n, b, e in queries)
    entry = rh.tiered_index_oracle(request.param, tsv, qtsv, SLOTS, ITEMS)
    answers = json.loads((entry / "answers.json").read_text())
    return request.param, rows, queries, entry, answers


def test_the_releases_files_read_and_answer_as_its_classes(oracle):
    """Each local file the release wrote: its header as IndexStoreFile's getters report it, no
    problem found, and every query answered item for item as queryAsyncFromUnsealedFile, by the
    release's rules (rmqlab.rules.versions): 5.2.0 - 5.3.0 answer a window with every item of the
    key in the file, stored in it or not; 5.3.1 - 5.3.2 compare an item's seconds as
    milliseconds; from 5.3.3 only the items stored in the window."""
    release, rows, queries, entry, answers = oracle
    assert answers["rows"] == sum(1 for r in rows if r[3]) and len(answers["files"]) >= 3
    paths = ti.index_files(entry / "root" / ti.FOLDER)
    assert [int(p.name) for p in paths] == [f["timestamp"] for f in answers["files"]]
    compared, outside = 0, 0
    for path, want in zip(paths, answers["files"], strict=True):
        with ti.TieredIndexFile.open(path, hash_slot_num=SLOTS) as f:
            assert (f.geometry.index_num, f.begin_timestamp, f.end_timestamp, f.slot_count, f.item_count) == \
                (ITEMS, want["timestamp"], want["endTimestamp"], want["hashSlotCount"], want["indexItemCount"])
            assert f.check() == []
            for (t, k, n, b, e), theirs in zip(queries, want["local"], strict=True):
                got = f.query(t, k, n, b, e, broker_version=release)
                assert got[["topic_id", "queue_id", "offset", "size", "time_diff", "hash_code"]].values.tolist() == \
                    theirs, (path.name, t, k, n, b, e)
                compared += bool(theirs)
                outside += sum(not b <= item[4] * 1000 + f.begin_timestamp <= e for item in theirs)
    assert compared > 100
    facts = layout_facts(release)
    if not facts.tiered_index_local_time_filter:   # 5.2.0 - 5.3.0: items outside the window too
        assert outside > 0
    if facts.tiered_index_time_diff_ms == 1000:    # 5.3.3+: only items stored in it
        assert outside == 0, outside


def test_compaction_writes_the_releases_bytes_and_answers_as_the_uploaded_segment(oracle):
    """doCompaction's file (compacting/<timestamp>) equals rmqlab's compaction of the local file
    byte for byte, up to the buffer the broker uploads; opened as a compacted file, it answers
    every query as the release's IndexStoreFile over that buffer in a segment (UPLOAD,
    queryAsyncFromSegmentFile)."""
    release, _, queries, entry, answers = oracle
    for path, want in zip(ti.index_files(entry / "root" / ti.FOLDER), answers["files"], strict=True):
        theirs = (path.parent / ti.COMPACTING / path.name).read_bytes()
        with ti.TieredIndexFile.open(path, hash_slot_num=SLOTS) as f:
            ours = f.compacted_bytes()
        assert len(ours) == want["compactedSize"] and theirs[:len(ours)] == ours
        with ti.TieredIndexFile.open(path.parent / ti.COMPACTING / path.name) as c:
            assert c.form == "compacted" and c.geometry.hash_slot_num == SLOTS and c.check() == []
            for (t, k, n, b, e), answer in zip(queries, want["uploaded"], strict=True):
                got = c.query(t, k, n, b, e, broker_version=release)
                assert got[["topic_id", "queue_id", "offset", "size", "time_diff", "hash_code"]].values.tolist() == \
                    answer, (path.name, t, k, n)


def test_rmqlabs_writer_writes_the_releases_bytes(oracle, tmp_path):
    """write_local_file (the tests' writer) gives the release's first file byte for byte, from
    the rows the release put into it."""
    _, rows, _, entry, answers = oracle
    first = ti.index_files(entry / "root" / ti.FOLDER)[0]
    n = answers["files"][0]["indexItemCount"]
    taken, keys = [], 0
    for r in rows:
        k = len(dict.fromkeys(x for x in r[3] if x))
        if not k:
            continue
        if keys + k > n:
            break
        taken.append(r)
        keys += k
    import re

    raw = (entry / "root" / "config" / ti.METADATA_FILE).read_text()
    ids = {t["topic"]: t["topicId"] for t in json.loads(re.sub(r"([{,]\s*)(-?\d+):", r'\1"\2":', raw))[
        "topicMetadataTable"].values()}   # DefaultMetadataStore's ids, as the release put them
    taken = [(t, ids[t], q, k, o, z, ts) for t, _, q, k, o, z, ts in taken]
    ours = ti.write_local_file(tmp_path / first.name, ti.TieredIndexGeometry(SLOTS, ITEMS), int(first.name), taken)
    assert ours.read_bytes() == first.read_bytes()


def test_check_finds_damage_to_the_releases_file(oracle, tmp_path):
    """A slot pointing past the items written, and an item pointing forward, each found with
    the file, offset and field."""
    _, _, _, entry, _ = oracle
    path = ti.index_files(entry / "root" / ti.FOLDER)[0]
    raw = bytearray(path.read_bytes())
    with ti.TieredIndexFile.open(path, hash_slot_num=SLOTS) as f:
        used = int(next(s for s in range(SLOTS) if f.slots["value"][s] > 0))
        count = f.item_count
    bad = tmp_path / path.name
    raw[ti.HEADER.size + used * 8:ti.HEADER.size + used * 8 + 4] = (count + 5).to_bytes(4, "big")
    bad.write_bytes(bytes(raw))
    with ti.TieredIndexFile.open(bad, hash_slot_num=SLOTS) as f:
        found = f.check()
    assert [(e.field, e.offset) for e in found][:1] == [(f"slot[{used}]", ti.HEADER.size + used * 8)]


def test_store_queries_and_verifies_the_releases_files(oracle, tmp_path):
    """The folder the release wrote, as a store's tiered_index_file/: `Store.query_tiered_index`
    merges the files as IndexStoreService.queryAsync does (only files begun in [begin, end],
    newest first, one item a queue offset, at most max_num), from the release's own per-file
    answers; `rmqlab verify` reports every file, local and compacted, with no problem, and a
    slot damaged in a copy as ``tiered.index``."""
    import shutil

    from rmqlab.store.directory import Store
    from rmqlab.verify import verify_path

    release, _, queries, entry, answers = oracle
    root = entry / "root"
    store = Store(root, broker_version=release)
    for q, (t, k, n, b, e) in enumerate(queries):
        want: dict[tuple[int, int], list] = {}
        for f in sorted(answers["files"], key=lambda f: f["timestamp"], reverse=True):
            if b <= f["timestamp"] <= e:
                for item in f["local"][q]:
                    if len(want) < n or (item[1], item[2]) in want:
                        want[(item[1], item[2])] = item
        got = store.query_tiered_index(t, k, max_num=n, begin=b, end=e, hash_slot_num=SLOTS)
        assert {(r.queue_id, r.offset) for r in got.itertuples()} == set(want), (t, k, n, b, e)
    report = verify_path(root, kind="store", tiered_index_geometry=(SLOTS, None))
    tiered = [f for f in report.files if f.kind == "tiered-index"]
    assert len(tiered) == 2 * len(answers["files"]) and not [p for f in tiered for p in f.problems]
    copy = tmp_path / "root"
    shutil.copytree(root, copy)
    first = ti.index_files(copy / ti.FOLDER)[0]
    raw = bytearray(first.read_bytes())
    raw[ti.HEADER.size:ti.HEADER.size + 4] = (10 ** 6).to_bytes(4, "big")
    first.write_bytes(bytes(raw))
    damaged = verify_path(copy, kind="store", tiered_index_geometry=(SLOTS, None))
    assert [(p.check, p.path) for f in damaged.files for p in f.problems] == [("tiered.index", str(first))]


def test_tiered_index_readers_survive_hostile_bytes_from_the_releases_files(oracle, tmp_path):
    """The tiered index readers fed the release's own first file mutated
    (fuzz_support.TieredIndexTarget seeded from it only): each answers or raises a typed error
    naming file, offset or field; none hangs or runs out of memory."""
    import fuzz_support as fs

    _, _, _, entry, _ = oracle
    first = ti.index_files(entry / "root" / ti.FOLDER)[0]
    rt = fs.run_budget(fs.TieredIndexTarget([first], hash_slot_num=SLOTS, only_files=True), 600, tmp_path, swarm=50)
    assert rt.failures == [] and rt.typed_errors > 0


def test_tiered_query_on_the_command_line(oracle, capsys):
    """``rmqlab store tiered-query --json`` answers what the release's first file answers for a
    key in it (the whole time range, maxCount 64: every item, the file's begin in range)."""
    from rmqlab.cli import main

    release, _, queries, entry, answers = oracle
    q = next(i for i, (t, k, n, b, e) in enumerate(queries) if n == 64 and b == 0 and answers["files"][0]["local"][i])
    t, k, *_ = queries[q]
    assert main(["store", "tiered-query", str(entry / "root"), "--topic", t, "--key", k, "--max-num", "64",
                 "--tiered-index-geometry", f"{SLOTS},", "--broker-version", release, "--json"]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    theirs = {(i[1], i[2]) for f in answers["files"] for i in f["local"][q]}
    assert {(r["queue_id"], r["offset"]) for r in got} == theirs


def test_the_metadata_names_the_topic_of_every_item(oracle):
    """DefaultMetadataStore's tieredStoreMetadata.json (its topic ids, which the release's index
    items carry, and one sealed index segment a file uploaded): every item a query finds is
    named by rmqlab with the topic its row was put under, and the segments are the files'."""
    from rmqlab.store.directory import Store

    release, rows, queries, entry, answers = oracle
    meta = ti.read_tiered_metadata(entry / "root" / "config" / ti.METADATA_FILE)
    assert set(meta.topic_ids) == {r[0] for r in rows if r[3]}
    seg = meta.segments[meta.segments["kind"] == "index"].sort_values("base_offset")
    assert seg[["begin_timestamp", "end_timestamp", "size"]].values.tolist() == \
        [[f["timestamp"], f["endTimestamp"], f["compactedSize"]] for f in answers["files"]]
    assert (seg["status"] == 1).all()
    topic_at = {(q, o): t for t, _, q, _, o, _, _ in rows}
    store, named = Store(entry / "root", broker_version=release), 0
    for t, k, n, b, e in queries[:200]:
        got = store.query_tiered_index(t, k, max_num=n, begin=b, end=e, hash_slot_num=SLOTS)
        for r in got.itertuples():
            assert r.topic == topic_at[(r.queue_id, r.offset)], (t, k)
            named += 1
    assert named > 50
