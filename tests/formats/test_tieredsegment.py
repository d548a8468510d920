"""rmqlab.formats.tieredsegment and verify's tiered checks judged by a brute-force model of one
tiered queue (plain Python from rocketmq-all-5.3.3's FlatAppendFile, FlatMessageFile and
CommitLogInputStream: the queue's records laid end to end from 0 with PHYSICALOFFSET their own
offset, one 20-byte item each, segments cut anywhere between records), on random queues: the
reader serves what the model serves, verify finds nothing in a sound queue and names the check
of each damage. Against a real broker and the release's own classes:
tests/brokers/test_rocketmq_tiered_store.py."""
from __future__ import annotations

import hashlib
import json
import struct
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.formats import tieredindex as ti
from rmqlab.formats import tieredsegment as ts
from rmqlab.formats.commitlog import encode_message
from rmqlab.store.directory import Store
from rmqlab.verify.check_tiered import verify_tiered_segments


def _model_name(base: int) -> str:
    """offset2FileName, as MessageStoreUtil writes it."""
    return hashlib.md5(str(base).encode()).hexdigest()[:8] + f"{base:020d}"


@st.composite
def queues(draw):
    n = draw(st.integers(1, 30))
    first = draw(st.integers(0, 200))
    bodies = [draw(st.binary(min_size=0, max_size=40)) for _ in range(n)]
    tags = [draw(st.integers(-(1 << 31), (1 << 31) - 1)) for _ in range(n)]
    cl_cuts = sorted(set(draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=3)))) if n > 1 else []
    cq_cuts = sorted(set(draw(st.lists(st.integers(1, max(n - 1, 1)), max_size=3)))) if n > 1 else []
    metadata = draw(st.booleans())
    return n, first, bodies, tags, cl_cuts, cq_cuts, metadata


def _build(tmp: Path, n, first, bodies, tags, cl_cuts, cq_cuts, metadata):
    """The model's files, written here without rmqlab's writer: returns the model's items and records."""
    recs = [encode_message(topic="T", queue_id=1, body=b, queue_offset=first + i, store_timestamp=1000 + i)
            for i, b in enumerate(bodies)]
    offsets = [sum(len(r) for r in recs[:i]) for i in range(n)]
    placed = [r[:28] + struct.pack(">q", o) + r[36:] for r, o in zip(recs, offsets)]
    items = [struct.pack(">qiq", o, len(r), t) for o, r, t in zip(offsets, recs, tags)]
    queue = tmp / "tiered" / (hashlib.md5(b"C").hexdigest()[:8] + "_C") / "b" / "T" / "1"
    table: dict[str, dict] = {"commitLogFileSegmentTable": {}, "consumeQueueFileSegmentTable": {}}
    for folder, chunks, cuts, base0, key in (("COMMIT_LOG", placed, cl_cuts, 0, "commitLogFileSegmentTable"),
                                             ("CONSUME_QUEUE", items, cq_cuts, first * 20,
                                              "consumeQueueFileSegmentTable")):
        (queue / folder).mkdir(parents=True)
        base = base0
        for lo, hi in zip([0, *cuts], [*cuts, n]):
            data = b"".join(chunks[lo:hi])
            (queue / folder / _model_name(base)).write_bytes(data)
            table[key].setdefault("b/T/1", {})[str(base)] = {"path": "b/T/1", "baseOffset": base, "size": len(data),
                                                            "status": 0, "beginTimestamp": 0, "endTimestamp": 0}
            base += len(data)
    store = tmp / "store"
    (store / "config").mkdir(parents=True)
    if metadata:
        (store / "config" / ti.METADATA_FILE).write_text(json.dumps({"topicMetadataTable": {}, **table}))
    model = [(first + i, offsets[i], len(recs[i]), tags[i]) for i in range(n)]
    return store, tmp / "tiered", queue, model, recs


@settings(max_examples=60, deadline=None)
@given(queues())
def test_the_reader_serves_what_the_model_serves(q):
    with tempfile.TemporaryDirectory() as d:
        store, tiered, _, model, recs = _build(Path(d), *q)
        meta = ti.read_tiered_metadata(store / "config" / ti.METADATA_FILE) if q[-1] else None
        got, = ts.tiered_queues(tiered, meta)
        assert (got.topic, got.queue_id, got.min_offset, got.commit_offset) == ("T", 1, q[1], q[1] + q[0])
        assert got.items().values.tolist() == [list(m) for m in model]
        msgs = got.messages()
        assert msgs["phy_offset"].tolist() == [m[1] for m in model]
        assert msgs["queue_offset"].tolist() == msgs["offset"].tolist() == [m[0] for m in model]
        assert [bytes(b) for b in msgs["body"]] == q[2]
        assert all(r.ok for r in verify_tiered_segments(Store(store), tiered))


@settings(max_examples=60, deadline=None)
@given(queues(), st.integers(0, 3), st.integers(0, 1 << 30))
def test_verify_names_each_damage(q, which, pick):
    """One damage a queue: a PHYSICALOFFSET not rewritten (tiered.commitlog), an item pointing
    into a record (tiered.item), a segment file renamed (tiered.segment), a ConsumeQueue
    segment cut inside an item (tiered.segment)."""
    with tempfile.TemporaryDirectory() as d:
        store, tiered, queue, model, recs = _build(Path(d), *q)
        k = pick % q[0]
        if which == 0:
            seg, at = _segment_of(queue / "COMMIT_LOG", model[k][1])
            raw = bytearray(seg.read_bytes())
            raw[at + 28:at + 36] = struct.pack(">q", model[k][1] + 1)
            seg.write_bytes(bytes(raw))
            want = "tiered.commitlog"
        elif which == 1:
            seg, at = _segment_of(queue / "CONSUME_QUEUE", (model[k][0]) * 20)
            raw = bytearray(seg.read_bytes())
            raw[at:at + 8] = struct.pack(">q", model[k][1] + 4)
            seg.write_bytes(bytes(raw))
            want = "tiered.item"
        elif which == 2:
            seg = sorted((queue / "COMMIT_LOG").iterdir())[pick % len(list((queue / "COMMIT_LOG").iterdir()))]
            seg.rename(seg.with_name("ffffffff" + seg.name[8:]))
            want = "tiered.segment"
        else:
            seg = sorted((queue / "CONSUME_QUEUE").iterdir())[-1]
            seg.write_bytes(seg.read_bytes()[:-3])
            want = "tiered.segment"
        found = {p.check for r in verify_tiered_segments(Store(store), tiered) for p in r.errors}
        assert want in found, (which, found)


@settings(max_examples=40, deadline=None)
@given(queues().filter(lambda q: q[0] > 1 and q[5]))
def test_a_segment_the_metadata_marks_deleted_is_not_loaded(q):
    """5.1-5.2 mark an expired segment STATUS_DELETED before they delete its file, and load no
    segment so marked (TieredFlatFile.recoverMetadata, rocketmq-all-5.2.0): with the queue's first
    ConsumeQueue segment marked so, the queue starts at the second one's first item."""
    n, first, *_ = q
    with tempfile.TemporaryDirectory() as d:
        store, tiered, _, model, _ = _build(Path(d), *q[:-1], True)
        path = store / "config" / ti.METADATA_FILE
        doc = json.loads(path.read_text())
        segs = doc["consumeQueueFileSegmentTable"]["b/T/1"]
        segs[str(first * 20)]["status"] = ts.SEGMENT_DELETED
        path.write_text(json.dumps(doc))
        got, = ts.tiered_queues(tiered, ti.read_tiered_metadata(path))
        second = first + q[5][0]
        assert (got.min_offset, got.commit_offset) == (second, first + n)
        assert got.items().values.tolist() == [list(m) for m in model if m[0] >= second]
        found = [(p.check, p.severity) for r in verify_tiered_segments(Store(store), tiered) for p in r.problems]
        assert found == [("tiered.segment", "warning")], found


def test_index_segments_with_metadata_that_lists_none():
    """A metadata file with no index segment (every 5.2 store: its index stays local until a
    newer index file follows; a 5.3 store before its first upload), or one marked deleted: none."""
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        folder = root / "tiered" / ts.cluster_folder("C") / "b" / ts.TIERED_INDEX_TOPIC / "0" / "INDEX"
        folder.mkdir(parents=True)
        (folder / ts.segment_name(0)).write_bytes(bytes(28))
        path = root / ti.METADATA_FILE
        path.write_text(json.dumps({"topicMetadataTable": {}}))
        assert ts.index_segments(root / "tiered", ti.read_tiered_metadata(path)) == []
        entry = {"path": f"b/{ts.TIERED_INDEX_TOPIC}/0", "baseOffset": 0, "size": 28, "status": 1}
        path.write_text(json.dumps({"indexFileSegmentTable": {entry["path"]: {"0": entry}}}))
        assert ts.index_segments(root / "tiered", ti.read_tiered_metadata(path)) == [folder / ts.segment_name(0)]
        entry["status"] = ts.SEGMENT_DELETED
        path.write_text(json.dumps({"indexFileSegmentTable": {entry["path"]: {"0": entry}}}))
        assert ts.index_segments(root / "tiered", ti.read_tiered_metadata(path)) == []


def _segment_of(folder: Path, offset: int) -> tuple[Path, int]:
    """The segment of `folder` holding byte `offset` of the queue's space, and the position in it."""
    segs = sorted(folder.iterdir(), key=lambda p: int(p.name[8:]))
    seg = [p for p in segs if int(p.name[8:]) <= offset][-1]
    return seg, offset - int(seg.name[8:])


def test_names_are_the_brokers():
    """offset2FileName and the cluster folder, against the model's MD5 of the decimal text."""
    for base in (0, 20, 4096, 10**15, (1 << 63) - 1):
        assert ts.segment_name(base) == _model_name(base)
        assert ts.parse_segment_name(_model_name(base)) == base
    assert ts.parse_segment_name("00000000" + _model_name(7)[8:]) is None
    assert ts.cluster_folder("DefaultCluster") == "212d6b50_DefaultCluster"
