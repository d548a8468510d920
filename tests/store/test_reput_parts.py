"""Store.dispatch a CommitLog part at a time (rmqlab.store.reput) against one part for the
whole CommitLog: the same files, byte for byte, and the same report whatever the part size and
however few queue writers stay open; a queue fed both its own units and other messages'
multi-dispatch units gets them in message order, as the broker puts them; a damaged record stops
the dispatch where the broker's reput stops."""
from __future__ import annotations

import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.lab.workload import Workload, generate
from rmqlab.rules import dispatch as dp
from rmqlab.store import reput as storedispatch
from rmqlab.store.directory import Store
from tests.store.test_reput import UTC, feature_workload, features, tree_digest

WHOLE = 1 << 30   # one part for any CommitLog here


def _dispatch(root: Path, options: dict, part_messages: int, max_open: int | None = None):
    with mock.patch.object(storedispatch, "MAX_OPEN_WRITERS", max_open or storedispatch.MAX_OPEN_WRITERS):
        return storedispatch.dispatch_store(Store(root, **options).layout, part_messages=part_messages)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(features, st.booleans(), st.integers(1, 40), st.sampled_from([1, 2, None]), st.floats(0.2, 0.8), st.booleans())
def test_parts_write_what_one_part_writes(f, ext, part_messages, max_open, split, abort):
    """Two appends to the CommitLog, each dispatched (the second from where the first stopped,
    or with `abort` from where a broker that did not shut down cleanly starts again, so that
    units already written come again), in parts of 1-40 messages with 1, 2 or 256 writers open,
    against one part each time."""
    w, options = feature_workload(f, commitlog_file_size=1 << 14)
    if ext:
        options.update(consume_queue_ext=True, consume_queue_ext_file_size=2048)
    table = generate(w)
    cut = int(len(table) * split)
    base = Path(tempfile.mkdtemp())
    reports = {}
    for name, size, opened in (("parts", part_messages, max_open), ("whole", WHOLE, None)):
        root = base / name
        # one writer for both appends: a commit record may name its half message in the first
        with cl.CommitLogWriter(root / "commitlog", options["commitlog_file_size"],
                                append_prop_crc=w.append_prop_crc) as writer:
            for i, piece in enumerate((table.slice(0, cut), table.slice(cut))):
                writer.append(piece)
                if i and abort:
                    (root / "abort").touch()
                reports.setdefault(name, []).append(_dispatch(root, options, size, opened).as_dict() | {"seconds": 0})
    assert reports["parts"] == reports["whole"]
    # the second starts after the last message given a unit (reputFromOffset): at least the rest
    assert sum(r["messages"] for r in reports["whole"]) >= len(table)
    digest = tree_digest(base / "parts")
    assert any(k.startswith("index") for k in digest) and "checkpoint" in digest
    assert digest == tree_digest(base / "whole")


# ------------------------------------------------- own and multi-dispatch units in one queue

def _plain_target_store(root: Path, n: int = 240) -> dict[int, list[int]]:
    """A 4.9.4 CommitLog where topic P has messages of its own and T's messages also name P
    in INNER_MULTI_DISPATCH: both take their offsets from the broker's one topic queue table
    (CommitLog.putMessage, MultiDispatch.wrapMultiDispatch). Returns, per queue id of P, the
    message numbers whose units P's queue holds, in the order the broker puts them."""
    table: dict = {}
    rows: dict[str, list] = {"topic": [], "queue_id": [], "queue_offset": [], "properties": [], "body": [],
                             "store_timestamp": []}
    expected: dict[int, list[int]] = {}
    for i in range(n):
        topic, qid = ("P" if i % 3 == 0 else "T"), i % 2
        own = table.get((topic, qid), 0)
        table[(topic, qid)] = own + 1
        props = f"KEYS\x01k{i}\x02"
        if topic == "P":
            expected.setdefault(qid, []).append(i)
        elif i % 2 == 1 or i % 5 == 0:
            names = ["%LMQ%a", "P"]
            offsets = dp.assign_lmq_offsets(names, qid, table, broker_version="4.9.4")
            props += f"INNER_MULTI_DISPATCH\x01{','.join(names)}\x02INNER_MULTI_QUEUE_OFFSET\x01{offsets}\x02"
            expected.setdefault(qid, []).append(i)
        for name, value in (("topic", topic), ("queue_id", qid), ("queue_offset", own), ("properties", props),
                            ("body", b"x"), ("store_timestamp", 1_700_000_000_000 + i)):
            rows[name].append(value)
    with cl.CommitLogWriter(root / "commitlog", 1 << 14) as writer:
        writer.append(rows)
    return expected


PLAIN = dict(commitlog_file_size=1 << 14, hash_slot_num=16, index_num=2048, consume_queue_file_size=400,
             enable_lmq=True, enable_multi_dispatch=True, broker_version="4.9.4")


@pytest.mark.parametrize("part_messages", [7, WHOLE])
def test_a_queue_gets_own_and_multi_dispatch_units_in_message_order(tmp_path, part_messages):
    from rmqlab.verify import verify_path

    expected = _plain_target_store(tmp_path)
    rep = _dispatch(tmp_path, PLAIN, part_messages)
    at = cl.read_columns(tmp_path / "commitlog", body=False)["phy_offset"].tolist()
    for qid, numbers in expected.items():
        with cq.ConsumeQueue.open(cq.queue_dir(tmp_path, "P", qid), PLAIN["consume_queue_file_size"]) as q:
            units = q.units
            assert units["commitlog_offset"].tolist() == [at[i] for i in numbers]
    multi = sum(len(v) for v in expected.values()) - sum(1 for i in range(240) if i % 3 == 0)
    assert rep.lmq_units == 2 * multi and not rep.skipped_units      # %LMQ%a and P for each
    report = verify_path(tmp_path, broker_version="4.9.4")
    assert report.ok, report.summary()


# ---------------------------------------------------------------------- a damaged record

@pytest.mark.parametrize("nth", [0, 5])
def test_a_damaged_record_stops_the_dispatch_after_the_messages_before_it(tmp_path, nth):
    """The dispatch of a CommitLog with a bad record (a file's first or sixth) writes what the
    dispatch of the same CommitLog cut at that record writes, then raises the record's typed
    error; run again, both do the same again."""
    w = Workload(messages=600, seed=4, topics=("T", "U"), transaction_fraction=0.2, delay_fraction=0.2)
    options = dict(commitlog_file_size=1 << 14, hash_slot_num=8, index_num=64, tz=UTC, consume_queue_file_size=400)
    table = generate(w)
    for name in ("bad", "cut"):
        with cl.CommitLogWriter(tmp_path / name / "commitlog", 1 << 14) as writer:
            writer.append(table)
    files = cl.store_files(tmp_path / "bad" / "commitlog")
    assert len(files) >= 4
    msgs = cl.read_columns(tmp_path / "bad" / "commitlog", body=False)
    k = int((msgs["phy_offset"] >= files[2].start_offset).to_numpy().argmax()) + nth   # in the third file
    phy = int(msgs["phy_offset"].iat[k])
    pos = phy - files[2].start_offset
    bad = tmp_path / "bad" / "commitlog" / files[2].path.name
    data = bytearray(bad.read_bytes())
    data[pos + 4:pos + 8] = b"\x00\x00\x00\x07"                   # MAGICCODE: no record's
    bad.write_bytes(bytes(data))
    cut_dir = tmp_path / "cut" / "commitlog"
    (cut_dir / files[2].path.name).write_bytes(bytes(data[:pos]) + bytes(len(data) - pos))
    for f in files[3:]:
        (cut_dir / f.path.name).unlink()
    # run again, each resumes where its queues end (re-reading messages given no unit after it)
    for run in range(2):
        want = Store(tmp_path / "cut", **options).dispatch()
        assert run or want.messages == k
        with pytest.raises(FormatError, match=f"{files[2].path.name}: offset {pos}: MAGICCODE"):
            _dispatch(tmp_path / "bad", options, 50)
        assert tree_digest(tmp_path / "bad") == tree_digest(tmp_path / "cut")


def test_progress_counts_commitlog_bytes_to_the_end(tmp_path):
    w = Workload(messages=500, seed=2, topics=("T",))
    with cl.CommitLogWriter(tmp_path / "commitlog", 1 << 14) as writer:
        writer.append(generate(w))
    seen: list[tuple[int, int]] = []
    store = Store(tmp_path, commitlog_file_size=1 << 14, hash_slot_num=8, index_num=64)
    rep = storedispatch.dispatch_store(store.layout, part_messages=60,
                                       progress=lambda done, total: seen.append((done, total)))
    assert len(seen) >= 500 // 60 and [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert seen[-1] == (rep.to_offset, rep.to_offset) and rep.messages == 500
    seen.clear()
    assert store.dispatch(progress=lambda done, total: seen.append((done, total))).messages == 0 and not seen


