"""A real RocketMQ 4.2.0 store directory against the facts its README lists: read, verified,
dispatched into a copy, queried by key, time and message id.

The store (``../shared/real-data/rocketmq/store-ericpangopher-4.2.0``) was written by the
broker's own store classes with 8,192-byte CommitLog files and 200-byte ConsumeQueue files.
Its last CommitLog file is empty (created ahead of use) and its ``abort`` file is present with
an all-zero checkpoint: a broker loads it without complaint, so nothing here is damage.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import struct
from pathlib import Path

import indexfile_stdlib as ix
import numpy as np
import pytest
from commitlog_stdlib import read_commitlog
from oracles import require_real_data

from rmqlab.cli import main
from rmqlab.formats import checkpoint as cpf
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.store.directory import Store
from rmqlab.store.recover import recover_store, recovery_start
from rmqlab.verify import verify_path

STORE = "rocketmq/store-ericpangopher-4.2.0"
CL_SIZE = 8192
CQ_SIZE = 200
NAMES = [f"{i * CL_SIZE:020d}" for i in range(5)]
SHA256_PREFIXES = ["06e6963a940bca57", "d643fa2a87d92ef1", "04c328e4918199fc", "012804c2f8f57ba1",
                   "e3b0c44298fc1c14"]
MESSAGES = 179
PER_FILE = [47, 47, 47, 38, 0]
MESSAGE_SIZE = 172
FIRST_STORE_TIME, LAST_STORE_TIME = 1532257321553, 1532257321599
#: the active file (00000000000000024576) ends after 38 messages
END_OFFSET = 3 * CL_SIZE + 38 * MESSAGE_SIZE
#: a small index geometry for dispatching into a copy
GEOMETRY = {"hash_slot_num": 64, "index_num": 512}
GEOMETRY_ARGS = ["--hash-slot-num", "64", "--index-num", "512"]


@pytest.fixture(scope="module")
def store() -> Path:
    return require_real_data(STORE)


@pytest.fixture(scope="module")
def walk(store) -> list[dict]:
    """The CommitLog's messages as tests/support/commitlog_stdlib.py reads them (the standard
    library alone); README: "179 messages in all, queue offsets 0..178"."""
    msgs = read_commitlog(store / "commitlog")
    assert len(msgs) == MESSAGES and [m["queue_offset"] for m in msgs] == list(range(MESSAGES))
    return msgs


@pytest.fixture
def copy(store, tmp_path) -> Path:
    """A writable copy of the store (commands that write never touch the real data)."""
    dst = tmp_path / "store"
    shutil.copytree(store, dst)
    for p in [dst, *dst.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    return dst


def snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------- the bytes


def test_bytes_are_those_the_readme_describes(store):
    """An independent struct read: blanks at 8,084 with stale bytes after, zeros in the active file."""
    files = [store / "commitlog" / n for n in NAMES]
    for p, prefix in zip(files, SHA256_PREFIXES):
        assert hashlib.sha256(p.read_bytes()).hexdigest().startswith(prefix)
    for p in files[:3]:
        data = p.read_bytes()
        assert struct.unpack_from(">ii", data, 8084) == (CL_SIZE - 8084, cl.MAGIC_BLANK)
        # the broker writes only the 8-byte blank head: 48 stale non-zero bytes stay after it
        assert np.count_nonzero(np.frombuffer(data, np.uint8)[8092:]) == 48
    active = files[3].read_bytes()
    assert len(active) == CL_SIZE and not any(active[38 * MESSAGE_SIZE:])
    assert files[4].stat().st_size == 0


def test_load_rules_name_the_active_and_the_empty_file(store):
    loaded = cl.load_files(store / "commitlog")
    assert [loaded.role(f) for f in loaded.files] == ["data", "data", "data", "active", "dropped"]
    assert loaded.active.path.name == NAMES[3]
    assert [f.path.name for f in loaded.dropped] == [NAMES[4]] and not loaded.preallocated
    assert loaded.reasons[loaded.dropped[0].path].startswith("0 bytes, the last file")


# ---------------------------------------------------------------------------- reading


def check_messages(df) -> None:
    assert len(df) == MESSAGES
    assert df["queue_offset"].tolist() == list(range(MESSAGES))
    assert (df["topic"] == "abc").all() and (df["queue_id"] == 0).all() and (df["tags"] == "TAG1").all()
    assert df["uniq_key"].isna().all() and (df["keys"] == df["keys"].str.extract(r"^(\d{13})$")[0]).all()
    assert int(df["store_timestamp"].min()) == FIRST_STORE_TIME
    assert int(df["store_timestamp"].max()) == LAST_STORE_TIME
    assert (df["total_size"] == MESSAGE_SIZE).all()
    phy = df["phy_offset"].to_numpy(np.int64)
    assert np.bincount(phy // CL_SIZE, minlength=5).tolist() == PER_FILE
    # PHYSICALOFFSET is the record's position: each file's records follow one another from 0
    within = phy % CL_SIZE
    file_no = phy // CL_SIZE
    for i in range(4):
        assert within[file_no == i].tolist() == [k * MESSAGE_SIZE for k in range(PER_FILE[i])]


def test_read_columns(store):
    df = cl.read_columns(store / "commitlog", check_crc=True)
    check_messages(df)
    assert df["crc_ok"].all()
    report = df.attrs["report"]
    assert report.ok and report.torn_tail is None and report.end_phy_offset == END_OFFSET
    assert [Path(p).name for p in report.files] == NAMES[:4]          # the empty file is not read
    assert cl.max_offset(store / "commitlog") == END_OFFSET
    assert cl.min_offset(store / "commitlog") == 0


def test_iter_messages(store):
    stream = cl.iter_messages(store / "commitlog", check_crc=True)
    msgs = list(stream)
    assert [m.phy_offset for m in msgs] == cl.read_columns(store / "commitlog")["phy_offset"].tolist()
    assert all(m.crc_ok for m in msgs)
    assert stream.report.ok and stream.report.end_phy_offset == END_OFFSET


def test_store_reads_every_message(store):
    s = Store(store, commitlog_file_size=CL_SIZE, consume_queue_file_size=CQ_SIZE, **GEOMETRY)
    check_messages(s.messages())
    info = s.info()
    assert info["messages"] == MESSAGES and info["commitlog_max_offset"] == END_OFFSET
    assert info["consume_queue_units"] == 56


# ---------------------------------------------------------------------------- verify


def test_commitlog_and_checkpoint_verify_clean(store):
    before = snapshot(store)
    for target in (store / "commitlog", store / "commitlog" / NAMES[0], store / "checkpoint"):
        r = verify_path(target)
        assert r.ok and not r.problems, r.summary()
    r = verify_path(store / "commitlog")
    counts = [f.counts for f in r.files]
    assert [c["messages"] for c in counts] == PER_FILE
    assert [c["blank"] for c in counts] == [True, True, True, False, False]
    assert counts[4]["role"] == "dropped"
    assert any("0 bytes, the last file" in n for n in r.notes)
    assert snapshot(store) == before


def test_whole_store_verifies_with_0_errors(store):
    r = verify_path(store)
    assert r.ok and not r.problems, "\n".join(r.summary())
    assert r.cross_counts["messages"] == MESSAGES and r.cross_counts["cq_units"] == 56
    queue = next(f for f in r.files if f.kind == "consumequeue")
    assert queue.ok
    assert r.summary()[-1].endswith("0 errors, 0 warnings: ok")


def test_verify_cli(store, capsys):
    assert main(["verify", str(store)]) == 0
    out = capsys.readouterr().out
    assert "0 errors" in out and "no end-of-file blank" not in out and "file is 0 bytes" not in out
    assert main(["verify", str(store / "commitlog"), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["ok"] and d["errors"] == 0 and [f["counts"]["messages"] for f in d["reports"]] == PER_FILE


# ---------------------------------------------------------------------------- abnormal shutdown


def test_abort_and_zero_checkpoint_mean_abnormal_recovery_from_the_first_file(store, copy):
    """DefaultMessageStore.load: `abort` present -> CommitLog.recoverAbnormally, which starts at
    the newest file whose first message was stored at or before the checkpoint's min timestamp.
    The checkpoint is all zeros (never flushed), so no file qualifies: the first file."""
    assert (store / "abort").stat().st_size == 0
    cp = cpf.read_checkpoint(store / "checkpoint")
    assert cp.as_dict() == {k: 0 for k in cp.as_dict()}
    assert recovery_start(store, cp.recovery_timestamp()) == (0, NAMES[0])
    note = next(n for n in verify_path(store).notes if "abort" in n)
    assert f"recoverAbnormally re-dispatches from CommitLog file {NAMES[0]}" in note
    # dispatch resumes there (units and keys already present are skipped) ...
    s = Store(copy, commitlog_file_size=CL_SIZE, consume_queue_file_size=CQ_SIZE, **GEOMETRY)
    assert s.reput_from_offset() == 0
    # ... and, after a clean shutdown, where the ConsumeQueue ends (56 units: message 55's end)
    (copy / "abort").unlink()
    assert s.reput_from_offset() == CL_SIZE + 9 * MESSAGE_SIZE


def test_recover_keeps_the_healthy_store(copy):
    """recover deletes only the empty last file (as doLoad), keeps the 56 units (their tagsCode are
    ConsumeQueueExt addresses, not a mismatch) and adds what dispatch lagged behind."""
    plan = recover_store(copy, dry_run=True, consume_queue_file_size=CQ_SIZE, **GEOMETRY)
    kinds = [a.kind for a in plan.actions]
    assert plan.messages == MESSAGES and plan.commitlog_end == END_OFFSET and plan.torn_bytes == 0
    assert kinds.count("commitlog-file-deleted") == 1 and "cq-file-deleted" not in kinds
    assert "cq-zeroed" not in kinds
    added = next(a for a in plan.actions if a.kind == "cq-units-added")
    assert added.count == MESSAGES - 56


# ---------------------------------------------------------------------------- dispatch and queries


@pytest.fixture
def dispatched(copy, capsys) -> Store:
    args = ["store", "dispatch", str(copy), "--commitlog-file-size", str(CL_SIZE),
            "--consume-queue-file-size", str(CQ_SIZE), *GEOMETRY_ARGS, "--json"]
    assert main(args) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["messages"] == MESSAGES and d["index_keys"] == MESSAGES
    assert d["consume_queue_units"] == MESSAGES - 56       # the 56 units there are kept
    return Store(copy, commitlog_file_size=CL_SIZE, consume_queue_file_size=CQ_SIZE, **GEOMETRY)


def test_every_message_dispatches(dispatched, walk):
    with cq.ConsumeQueue.open(cq.queue_dir(dispatched.root, "abc", 0), CQ_SIZE) as q:
        units = q.to_frame(q.min_offset, q.max_offset)
    # README: "Every unit's CommitLog offset and size match a message whose queue offset is the
    # unit's index"; after dispatch that holds for all 179
    assert units["commitlog_offset"].tolist() == [m["phy_offset"] for m in walk]
    assert units["size"].tolist() == [m["total_size"] for m in walk]
    r = verify_path(dispatched.root)
    assert r.ok, "\n".join(r.summary())
    assert r.cross_counts["cq_units"] == MESSAGES


def test_dispatch_continues_the_ext_files_as_the_broker_would(dispatched):
    """The store has consumequeue_ext/, so its broker ran with enableConsumeQueueExt: every unit
    dispatch adds holds an ext address too, and each resolves to "TAG1".hashCode()."""
    from rmqlab.formats import consumequeue_ext as cqx

    assert dispatched.consume_queue_ext and dispatched.consume_queue_ext_file_size == 840
    with cq.ConsumeQueue.open(cq.queue_dir(dispatched.root, "abc", 0), CQ_SIZE) as q, \
            cqx.ConsumeQueueExt.open(cqx.ext_dir(dispatched.root, "abc", 0)) as ext:
        codes = q.units["tags_code"]
        assert cqx.is_ext_addr_many(codes).all() and len(codes) == MESSAGES
        codes, resolved = q.resolved_tags_codes(ext)
        # README: "tagsCode 2567159 = `"TAG1".hashCode()`" (the test's own String.hashCode agrees)
        assert resolved.all() and set(codes.tolist()) == {2567159} == {ix.java_hash("TAG1")}


def test_index_files_hold_the_keys_the_broker_rule_gives(dispatched, walk):
    """The store came without index/ (README: "There is no `index/`"), so these index files are
    rmqlab's dispatch: judged by a standard-library read of them (each slot's chain, every entry)
    against IndexService.buildIndex's keys of the standard-library CommitLog walk."""
    want = ix.model_entries(walk)
    assert sum(want.values()) == MESSAGES          # README: one KEYS word a message, no UNIQ_KEY
    assert ix.file_entries(dispatched.index_dir, GEOMETRY["hash_slot_num"]) == want


def _by_key(walk: list[dict]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for m in walk:
        out.setdefault(m["properties"]["KEYS"], []).append(m["phy_offset"])
    return out


@pytest.mark.parametrize("mode", ["broker", "verified"])
def test_every_message_is_found_by_key(dispatched, walk, mode):
    keys = _by_key(walk)
    assert sum(map(len, keys.values())) == MESSAGES
    for key, offsets in keys.items():
        found = dispatched.query_by_key("abc", key, mode=mode)
        assert sorted(found["phy_offset"]) == offsets, key
        if mode == "verified":
            assert found["broker_returned"].all()


def test_raw_key_query_from_the_command_line(dispatched, walk, capsys):
    """`rmqlab index query` without --topic looks the key up as stored: abc#<KEYS>."""
    key = walk[0]["properties"]["KEYS"]
    want = _by_key(walk)[key]
    assert main(["index", "query", str(dispatched.index_dir), "--key", f"abc#{key}", *GEOMETRY_ARGS,
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["key"] == f"abc#{key}" and sorted(d["phy_offsets"]) == want


def test_every_message_is_found_by_time(dispatched, walk):
    found = dispatched.query_by_time("abc", FIRST_STORE_TIME, LAST_STORE_TIME)
    assert sorted(found["phy_offset"]) == [m["phy_offset"] for m in walk]
    t = walk[100]["store_timestamp"]
    at_t = [m["phy_offset"] for m in walk if m["store_timestamp"] == t]
    assert at_t
    found = dispatched.query_by_time("abc", t, t)
    assert sorted(found["phy_offset"]) == at_t


def test_every_message_is_found_by_message_id(dispatched, walk):
    """The offset message id is MessageDecoder.createMessageId's: the store host's 4 address
    bytes, its port, the physical offset, in upper-case hex (built here, not by rmqlab)."""
    for m in walk:
        addr, port = m["store_host"].split(":")
        msg_id = (bytes(map(int, addr.split("."))) + struct.pack(">iq", int(port), m["phy_offset"])).hex().upper()
        found = dispatched.query_by_offset_msg_id(msg_id)
        assert found["phy_offset"].tolist() == [m["phy_offset"]]
