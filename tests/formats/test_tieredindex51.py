"""rmqlab.formats.tieredindex51 judged by a brute-force model of 5.1's TieredIndexFile (plain Python
from rocketmq-all-5.1.4's putKey, CompactTask and TieredMessageFetcher.queryMessageAsync: a list
of the items put, a local file and its compaction packed here with struct), on random files and
queries. Against the release's own classes: tests/brokers/test_rocketmq_tiered_store.py (5.1.4)."""
from __future__ import annotations

import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats import tieredindex as ti
from rmqlab.formats import tieredindex51 as t51
from rmqlab.jvm.hashcode import java_hash

BEGIN = 1_718_000_000_000


def _hash(topic: str, key: str) -> int:
    h = abs(java_hash(f"{topic}#{key}"))
    return 0 if h >= 1 << 31 else h


def _put(rows, items: int) -> list[dict]:
    """putKey in order (UNIQ_KEY and each key, duplicates kept), items numbered from 0, until full."""
    out: list[dict] = []
    for topic, tid, qid, keys, offset, size, ts in rows:
        for k in keys:
            if len(out) >= items:
                return out
            out.append({"hash": _hash(topic, k), "topic_id": tid, "queue_id": qid, "offset": offset, "size": size,
                        "time_diff": ts - BEGIN})
    return out


def _local(path, put: list[dict], slots: int, items: int, sealed: bool, span: tuple[int, int] | None = None):
    """The local file of `put`; its header's begin and end timestamps `span`, else BEGIN and the
    newest item's (the query model's files; putKey's own: :func:`_as_put`)."""
    raw = bytearray(40 + 8 * slots + 32 * items + 4)
    for s in range(slots):
        struct.pack_into(">i", raw, 28 + 8 * s, -1)
    heads = [-1] * slots
    for n, i in enumerate(put):
        s = i["hash"] % slots
        struct.pack_into(">iiiqiii", raw, 28 + 8 * slots + 32 * n, i["hash"], i["topic_id"], i["queue_id"],
                         i["offset"], i["size"], i["time_diff"], heads[s])
        heads[s] = n
    for s, h in enumerate(heads):
        struct.pack_into(">i", raw, 28 + 8 * s, h)
    begin, end = span or (BEGIN, BEGIN + max([i["time_diff"] for i in put] or [0]))
    struct.pack_into(">iqqii", raw, 0, ti.BEGIN_MAGIC_CODE, begin, end, 0, len(put))
    struct.pack_into(">i", raw, len(raw) - 4, ti.END_MAGIC_CODE if sealed else -1)
    path.write_bytes(bytes(raw))
    return path


def _as_put(put: list[dict]) -> tuple[list[dict], tuple[int, int]]:
    """`put` (in putKey order, times from BEGIN) as putKey writes it: the begin timestamp the first
    put's store time, the end timestamp the last put's (-1 and -1 while none), item times from
    the begin timestamp, whatever order the store times come in."""
    if not put:
        return put, (-1, -1)
    first = put[0]["time_diff"]
    return [{**i, "time_diff": i["time_diff"] - first} for i in put], (BEGIN + first, BEGIN + put[-1]["time_diff"])


def _chain(put: list[dict], slots: int, h: int) -> list[dict]:
    return [i for i in reversed(put) if i["hash"] % slots == h % slots]


def _compacted(path, put: list[dict], slots: int):
    """CompactTask.buildCompactFile of the local file: each slot's chain, newest first, 28 bytes an item."""
    items = bytearray()
    table = bytearray(8 * slots)
    start = 28 + 8 * slots
    for s in range(slots):
        chain = [i for i in reversed(put) if i["hash"] % slots == s]
        if chain:
            struct.pack_into(">ii", table, 8 * s, start + len(items), 28 * len(chain))
            for i in chain:
                items += struct.pack(">iiiqii", i["hash"], i["topic_id"], i["queue_id"], i["offset"], i["size"],
                                     i["time_diff"])
    head = struct.pack(">iqqii", ti.END_MAGIC_CODE, BEGIN, BEGIN + max([i["time_diff"] for i in put] or [0]), slots,
                       len(put))
    path.write_bytes(head + bytes(table) + bytes(items) + struct.pack(">i", ti.BEGIN_MAGIC_CODE))
    return path


def _model_query(files, topic: str, key: str, topic_id: int, max_count: int, begin: int, end: int, slots: int):
    h, out = _hash(topic, key), []
    for put, first, last in reversed(files):
        if max(begin, first) > min(end, last):
            continue
        for i in _chain(put, slots, h):
            if len(out) < max_count and i["hash"] == h and i["topic_id"] == topic_id \
                    and begin <= first + i["time_diff"] <= end:
                out.append((i["queue_id"], i["offset"], i["size"], first + i["time_diff"]))
    return out


KEYS = st.sampled_from(["k0", "k1", "shared", "shared", "x"])
ROWS = st.lists(st.tuples(st.sampled_from(["T", "U"]), st.integers(1, 3), st.integers(0, 3),
                          st.lists(KEYS, min_size=1, max_size=3), st.integers(0, 1 << 40), st.integers(1, 4096),
                          st.integers(BEGIN, BEGIN + 90_000)), max_size=30)


@settings(max_examples=100, deadline=None)
@given(rows=ROWS, more=ROWS, slots=st.integers(1, 9), items=st.integers(1, 40), topic=st.sampled_from(["T", "U"]),
       key=KEYS, topic_id=st.integers(1, 3), max_count=st.integers(1, 5),
       window=st.tuples(st.integers(BEGIN - 1000, BEGIN + 50_000), st.integers(0, 100_000)), sealed=st.booleans())
def test_queries_of_uploaded_and_starting_files_follow_the_model(tmp_path_factory, rows, more, slots, items, topic,
                                                                 key, topic_id, max_count, window, sealed):
    """An uploaded file (compacted from the first rows) and a local one (the next rows) that a
    start uploads when full: the query walks the newest first, keeps the key's hash and topic id
    within the window, up to maxCount; a local file not full is not asked."""
    d = tmp_path_factory.mktemp("i51")
    first, second = _put(rows, items), _put(more, items)
    up = _compacted(d / "up", first, slots)
    (d / "folder").mkdir()
    local = _local(d / "folder" / "0000", second, slots, items, sealed)
    assert t51.startup_upload(d / "folder") == (local if sealed else None)
    last = lambda put: BEGIN + max([i["time_diff"] for i in put] or [0])   # noqa: E731
    begin, end = window[0], window[0] + window[1]
    got = t51.query_uploaded([(up, BEGIN, last(first))], topic, key, topic_id, max_count, begin, end,
                             local=t51.startup_upload(d / "folder"))
    files = [(first, BEGIN, last(first))] + ([(second, BEGIN, last(second))] if sealed else [])
    assert [tuple(r) for r in got[["queue_id", "offset", "size", "store_timestamp"]].values.tolist()] == \
        _model_query(files, topic, key, topic_id, max_count, begin, end, slots)
    # the local walk and the compaction agree slot by slot
    for h in {_hash(t, k) for t in ("T", "U") for k in ("k0", "k1", "shared", "x")}:
        assert t51.local_slot_items(local, h, slots).tolist() == \
            [(i["hash"], i["topic_id"], i["queue_id"], i["offset"], i["size"], i["time_diff"])
             for i in _chain(second, slots, h)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["T", "Orders"]), st.integers(1, 3), st.integers(0, 3),
                          st.lists(st.sampled_from(["a", "b", "k1", "k2", "zz"]), min_size=1, max_size=3),
                          st.integers(0, 1 << 40), st.integers(1, 4096), st.integers(BEGIN, BEGIN + 60_000)),
                min_size=1, max_size=30),
       st.integers(1, 9), st.integers(1, 40), st.booleans(), st.data())
def test_the_model_files_pass_and_a_broken_chain_is_named(tmp_path_factory, rows, slots, items, sealed, data):
    """Files the model of putKey and CompactTask writes pass check_local and check_compacted, the
    local file's geometry is the one local_geometries finds (where one alone fits) and a local
    item or slot pointer moved anywhere else, or an end timestamp not the last put's, breaks the
    check at that field."""
    import numpy as np

    d = tmp_path_factory.mktemp("t51")
    put, span = _as_put(_put(rows, items))   # store times in any order, as queues are dispatched
    full = len(put) == items
    local = _local(d / "0000", put, slots, items, sealed or full, span)
    assert t51.check_local(local, slots, items) == ((slots, items), [])
    fits = t51.local_geometries(local)
    assert (slots, items) in fits
    if len(fits) == 1:
        assert t51.check_local(local) == ((slots, items), [])
    assert t51.check_compacted(_compacted(d / "2222", put, slots)) == []
    raw = bytearray(local.read_bytes())
    if data.draw(st.booleans()):   # an item's pointer to the slot's item before it
        n = data.draw(st.integers(0, len(put) - 1))
        at, field = 28 + 8 * slots + 32 * n + 28, "item_index"
        old = int.from_bytes(raw[at:at + 4], "big", signed=True)
        new = data.draw(st.integers(-1, len(put)).filter(lambda v: v != old))
    else:                          # a slot's head
        k = data.draw(st.integers(0, slots - 1))
        at, field = 28 + 8 * k, "slot"
        old = int.from_bytes(raw[at:at + 4], "big", signed=True)
        new = data.draw(st.integers(-1, len(put)).filter(lambda v: v != old))
    raw[at:at + 4] = int(np.int32(new)).to_bytes(4, "big", signed=True)
    local.write_bytes(bytes(raw))
    _, problems = t51.check_local(local, slots, items)
    assert field in {p.field for p in problems}
    raw = bytearray(local.read_bytes())   # the end timestamp moved off the last put's store time
    raw[12:20] = (span[1] + data.draw(st.sampled_from([-1, 1, 1000]))).to_bytes(8, "big", signed=True)
    local.write_bytes(bytes(raw))
    assert "time_diff" in {p.field for p in t51.check_local(local, slots, items)[1]}


@given(st.integers(1, 300), st.integers(1, 300))
def test_an_empty_local_file_tells_its_geometry(tmp_path_factory, slots, items):
    """A file initIndexFileHeader just made (the broker rolled the full one): -1 in each slot and
    zeros in the items fix the geometry, which check_local then finds without being told."""
    local = _local(tmp_path_factory.mktemp("t51e") / "0000", [], slots, items, False, (-1, -1))
    assert t51.local_geometries(local) == [(slots, items)]
    assert t51.check_local(local) == ((slots, items), [])
