"""rmqlab.formats.tieredindex judged by a brute-force model of IndexStoreFile (plain Python from
rocketmq-all-5.3.3's putKey and the two queryAsync paths: a list of the items put, walked newest
first per slot), on random files; and the compacted form against the local one. Against the
release's own classes: tests/brokers/test_rocketmq_tiered_index.py."""
from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats import tieredindex as ti
from rmqlab.jvm.hashcode import java_hash

BEGIN = 1_718_000_000_000


def _model_hash(topic: str, key: str) -> int:
    h = java_hash(f"{topic}#{key}")
    return h if h == -(1 << 31) else abs(h)


def _model_put(rows, slots: int, items: int) -> list[dict]:
    """putKey's items in order (index 1..), stopping where putKey answers FILE_FULL."""
    out: list[dict] = []
    for topic, tid, qid, keys, offset, size, ts in rows:
        keys = list(dict.fromkeys(k for k in keys if k))
        if not keys:
            continue
        if len(out) + len(keys) >= items:
            break
        for k in keys:
            h = _model_hash(topic, k)
            out.append({"hash": h, "slot": h % slots, "topic_id": tid, "queue_id": qid, "offset": offset,
                        "size": size, "time_diff": int((ts - BEGIN) / 1000)})
    return out


def _model_query(put: list[dict], slots: int, topic: str, key: str, max_count: int, begin: int, end: int,
                 compacted: bool) -> list[tuple]:
    h = _model_hash(topic, key)
    chain = [i for i in reversed(put) if i["slot"] == h % slots]      # newest first
    found = []
    for n, i in enumerate(chain):
        if not compacted and n >= ti.MAX_QUERY_COUNT:
            break
        if compacted and (n + 1) * ti.COMPACT_ITEM.size > ti.MAX_SEGMENT_READ:
            break
        t = i["time_diff"] * 1000 + BEGIN
        if i["hash"] == h and begin <= t <= end and (compacted is False or len(found) < max_count):
            found.append((i["topic_id"], i["queue_id"], i["offset"], i["size"], i["time_diff"]))
            if not compacted and len(found) > max_count:
                break
    return found


KEYS = st.sampled_from(["k0", "k1", "shared", "shared", "shared", "x"])   # "shared": chains past maxCount
ROWS = st.lists(st.tuples(st.sampled_from(["T", "U"]), st.integers(1, 3), st.integers(0, 3),
                          st.lists(KEYS, min_size=0, max_size=3), st.integers(0, 1 << 40), st.integers(1, 4096),
                          st.integers(BEGIN - 5_000, BEGIN + 90_000)), max_size=40)


@settings(max_examples=120, deadline=None)
@given(rows=ROWS, slots=st.integers(1, 9), items=st.integers(2, 60), max_count=st.integers(1, 4),
       window=st.tuples(st.integers(BEGIN - 10_000, BEGIN + 100_000), st.integers(0, 100_000)))
def test_queries_of_both_forms_follow_the_model(tmp_path_factory, rows, slots, items, max_count, window):
    put = _model_put(rows, slots, items)
    path = ti.write_local_file(tmp_path_factory.mktemp("t") / str(BEGIN), ti.TieredIndexGeometry(slots, items), BEGIN,
                               rows)
    begin, end = window[0], window[0] + window[1]
    with ti.TieredIndexFile.open(path, hash_slot_num=slots) as f:
        assert f.item_count == len(put) and f.check() == []
        assert f.slot_count == len({i["slot"] for i in put})
        packed = f.compacted_bytes()
        cols = ["topic_id", "queue_id", "offset", "size", "time_diff"]
        for topic in ("T", "U"):
            for key in ("k0", "k1", "shared", "x", "absent"):
                got = f.query(topic, key, max_count, begin, end)[cols].values.tolist()
                assert [tuple(r) for r in got] == _model_query(put, slots, topic, key, max_count, begin, end, False)
    c_path = path.parent / ti.COMPACTING / path.name
    c_path.parent.mkdir()
    c_path.write_bytes(packed)
    with ti.TieredIndexFile.open(c_path) as c:
        assert c.form == "compacted" and c.geometry.hash_slot_num == slots and c.check() == []
        for topic in ("T", "U"):
            for key in ("k0", "shared", "absent"):
                got = c.query(topic, key, max_count, begin, end)[cols].values.tolist()
                assert [tuple(r) for r in got] == _model_query(put, slots, topic, key, max_count, begin, end, True)


def _model_file(path, put: list[dict], slots: int, items: int):
    """A local file as putKey leaves it, packed here with struct from the model's items."""
    import struct

    heads, prev = [0] * slots, []
    for n, i in enumerate(put, start=1):
        prev.append(heads[i["slot"]])
        heads[i["slot"]] = n
    raw = bytearray(28 + 8 * slots + 32 * items)
    struct.pack_into(">iqqii", raw, 0, ti.BEGIN_MAGIC_CODE, BEGIN, BEGIN, sum(h > 0 for h in heads), len(put))
    for s, h in enumerate(heads):
        struct.pack_into(">i", raw, 28 + 8 * s, h)
    for n, (i, p) in enumerate(zip(put, prev, strict=True), start=1):
        struct.pack_into(">iiiqiii", raw, 28 + 8 * slots + 32 * n, i["hash"], i["topic_id"], i["queue_id"],
                         i["offset"], i["size"], i["time_diff"], p)
    path.write_bytes(bytes(raw))
    return path


@settings(max_examples=120, deadline=None)
@given(rows=ROWS, slots=st.integers(1, 300), spare=st.integers(1, 200))
def test_a_local_files_geometry_is_inferred_from_its_chains(tmp_path_factory, rows, slots, spare):
    """Files of any tieredStoreIndexFileMaxHashSlotNum / MaxIndexNum: their geometry follows
    from their bytes (none is wrong; with a dozen items or more, it is found), and a file of
    such a geometry opens without one given."""
    put = _model_put(rows, slots, 10_000)
    items = len(put) + spare
    path = _model_file(tmp_path_factory.mktemp("g") / str(BEGIN), put, slots, items)
    got = ti.infer_local_geometry(path)
    assert got in (None, ti.TieredIndexGeometry(slots, items))
    if len(put) >= 6 and len({i["hash"] for i in put}) >= 3:
        assert got == ti.TieredIndexGeometry(slots, items)
        with ti.TieredIndexFile.open(path) as f:
            assert f.geometry == got


def test_a_51_index_file_is_named_not_misread(tmp_path):
    """5.1's TieredIndexFile keeps "0000" (the file being written), "1111" (the one awaiting
    compaction) and "2222" (the compaction's) in the same folder, in another layout (an empty
    slot is -1): none is read as an IndexStoreFile, and verify judges each by 5.1's rules (these
    bytes are no 5.1 file either)."""
    from rmqlab.verify.check_tiered import verify_tiered_index

    folder = tmp_path / ti.FOLDER
    folder.mkdir()
    ok = ti.write_local_file(folder / str(BEGIN), ti.TieredIndexGeometry(4, 8), BEGIN,
                             [("T", 1, 0, ["a"], 0, 9, BEGIN)])
    for name in ("0000", "1111"):
        (folder / name).write_bytes(b"\xff" * (28 + 8 * 4 + 32 * 8 + 4))
    assert ti.index_files(folder) == [ok]
    got = {(Path(r.path).name, p.check, p.severity) for r in verify_tiered_index(tmp_path) for p in r.problems}
    assert got == {("0000", "tiered.geometry", "error"), ("1111", "tiered.geometry", "error")}


def test_a_negative_item_count_holds_no_item(tmp_path):
    """IndexStoreFile's items are 1..itemCount: a header whose itemCount went negative lists none
    (it once sliced the items from the end), and check() names the field."""
    import struct

    put = [{"hash": 11 + n, "slot": (11 + n) % 5, "topic_id": 1, "queue_id": 0, "offset": 100 * n, "size": 50,
            "time_diff": n} for n in range(4)]
    path = _model_file(tmp_path / str(BEGIN), put, 5, 8)
    raw = bytearray(path.read_bytes())
    struct.pack_into(">i", raw, 24, -20)
    path.write_bytes(bytes(raw))
    with ti.TieredIndexFile.open(path, hash_slot_num=5, index_num=8, form="local") as f:
        assert len(f.items()) == 0
        assert any(e.field == "item_count" for e in f.check())
