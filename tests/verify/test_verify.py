"""`rmqlab verify`: a generated store verifies clean; seeded corruptions from a catalogue are
each found as exactly their class of problem at the right file and byte offset; inputs stay
untouched; the CLI's exit statuses and JSON; the real broker CommitLog verifies clean.

The catalogue is the model: each corruption writes known bytes into a copy of the store and
returns the problem it must produce (check code, file, offset, field) and the only other check
codes its side effects may raise."""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from commitlog_stdlib import read_commitlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import REAL_DATA, require_real_data
from reference_model import java_hash
from snapshot_support import snapshot

from rmqlab.cli import main
from rmqlab.errors import CorruptIndexError, GeometryError, RmqlabError
from rmqlab.formats import checkpoint as cpf
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats.indexfile import IndexFile, build_index_file
from rmqlab.formats.indexgeometry import infer_index_geometry
from rmqlab.jvm.hashcode import index_hash
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.rules.dispatch import SCHEDULE_TOPIC
from rmqlab.verify import (
    CHECKS,
    KINDS,
    detect_kind,
    verify_consume_queue,
    verify_index_file,
    verify_path,
)

UTC = dt.UTC
HSN, INUM, CL_SIZE, CQ_SIZE = 64, 512, 1 << 16, 2000
REAL = REAL_DATA / "rocketmq"
REAL_STORE = REAL / "store-4e25b979"
REAL_FILE = REAL_STORE / "commitlog" / "00000000000000000000"
INT_MAX = 2**31 - 1


# ------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A small, complete store: two topics, transactions (prepared, committed, rolled back),
    delayed messages (SCHEDULE_TOPIC_XXXX tags codes), colliding keys; 64 KiB CommitLog files,
    64-slot / 512-entry index files, 100-unit ConsumeQueue files. About 0.5 s."""
    return build_small_store(tmp_path_factory.mktemp("verify") / "store")


def build_small_store(root: Path) -> Path:
    """The `store` fixture's store, written at `root`."""
    w = Workload(messages=2000, seed=7, rate=60.0, topics=("A", "B"), keys_per_message=1.5,
                 hot_key_fraction=0.5, hot_keys=40, transaction_fraction=0.1, delay_fraction=0.05,
                 delay_levels=(1, 2, 3), drain=True, collision_pairs=3)
    generate_store(root, w, commitlog_file_size=CL_SIZE, hash_slot_num=HSN, index_num=INUM,
                   consume_queue_file_size=CQ_SIZE, tz=UTC)
    return root


@pytest.fixture
def copy(store, tmp_path) -> Path:
    dst = tmp_path / "copy"
    shutil.copytree(store, dst)
    return dst


def describe(report) -> str:
    return "\n".join(str(p) for p in report.problems)


# ------------------------------------------------------------------------- clean inputs


def test_generated_store_verifies_clean_and_counts_match_the_readers(store):
    r = verify_path(store)
    assert r.kind == "store" and r.ok and not r.problems, describe(r)
    kinds = [f.kind for f in r.files]
    cl_files = cl.store_files(store / "commitlog")
    assert kinds.count("commitlog") == len(cl_files) >= 10
    assert kinds.count("index") == len(list((store / "index").iterdir())) >= 5
    assert kinds.count("checkpoint") == 1
    # independent truth: the format readers' own counts
    msgs = cl.read_columns(store / "commitlog", body=False)
    assert r.cross_counts["messages"] == len(msgs)
    assert sum(f.counts["messages"] for f in r.files if f.kind == "commitlog") == len(msgs)
    keys = 0
    for p in sorted((store / "index").iterdir()):
        with IndexFile.open(p, HSN, INUM) as f:
            keys += f.header.keys
    assert r.cross_counts["index_entries"] == keys
    queues = sorted((store / "consumequeue").glob("*/*"))
    assert kinds.count("consumequeue") == len(queues)
    assert r.cross_counts["cq_units"] == sum(cq.read_queue_info(q, CQ_SIZE).count for q in queues)
    # every file but the last CommitLog file ends with the blank record
    assert [f.counts["blank"] for f in r.files if f.kind == "commitlog"][:-1] == [True] * (len(cl_files) - 1)
    assert r.settings["commitlog_file_size"] == CL_SIZE
    # the store really exercises the cross checks: rolled-back, prepared and delayed messages
    tran = msgs["sys_flag"] & 0xC
    assert (tran == 0xC).any() and (tran == 0x4).any() and (msgs["topic"] == SCHEDULE_TOPIC).any()


def test_index_geometry_is_inferred_from_the_bytes(store):
    for p in sorted((store / "index").iterdir()):
        g = infer_index_geometry(p)
        assert (g.hash_slot_num, g.index_num) == (HSN, INUM)
    r = verify_path(store, hash_slot_num=HSN, index_num=INUM, commitlog_file_size=CL_SIZE,
                    consume_queue_file_size=CQ_SIZE)
    assert r.ok and not r.problems


def test_wrong_geometry_is_a_problem_not_a_crash(store):
    r = verify_path(store / "index", hash_slot_num=HSN - 1)
    assert not r.ok
    assert {p.check for p in r.problems} == {"index.geometry"}
    assert all(p.field == "file size" for p in r.problems)


def test_parts_and_single_files_verify_clean(store):
    cases = {
        store / "commitlog": "commitlog",
        store / "commitlog" / "00000000000000065536": "commitlog",
        store / "index": "index",
        sorted((store / "index").iterdir())[0]: "index",
        store / "consumequeue": "consumequeue",
        store / "consumequeue" / "A": "consumequeue",
        store / "consumequeue" / "A" / "1": "consumequeue",
        store / "consumequeue" / "A" / "1" / "00000000000000000000": "consumequeue",
        store / "checkpoint": "checkpoint",
    }
    for path, kind in cases.items():
        assert detect_kind(path) == kind, path
        r = verify_path(path)
        assert r.kind == kind and r.ok and not r.problems, (path, describe(r))
    one = verify_consume_queue(store / "consumequeue" / "A" / "1" / "00000000000000000000")
    assert one[0].path.endswith("00000000000000000000") and one[0].counts["units"] == CQ_SIZE // 20
    assert len(verify_path(store / "consumequeue").files) == len(list((store / "consumequeue").glob("*/*")))


def test_verify_leaves_every_input_untouched(store):
    before = snapshot(store)
    verify_path(store)
    verify_path(store / "consumequeue" / "B" / "0" / "00000000000000000000")
    for kind_path in (store / "index", store / "commitlog", store / "checkpoint"):
        verify_path(kind_path)
    assert main(["verify", str(store), "--json"]) == 0
    assert snapshot(store) == before
    assert not list(store.rglob("*.tmp"))


# ------------------------------------------------------------------------ the catalogue


@dataclass(frozen=True)
class Expect:
    check: str           # the problem the corruption must produce...
    path: Path           # ...naming this file,
    offset: int          # this byte offset
    field: str           # and this field
    allowed: frozenset   # every check code the corruption may raise (side effects included)


def poke(path: Path, offset: int, fmt: str, *values) -> None:
    with open(path, "r+b") as fh:
        fh.seek(offset)
        fh.write(struct.pack(">" + fmt, *values))


def peek(path: Path, offset: int, fmt: str):
    with open(path, "rb") as fh:
        fh.seek(offset)
        return struct.unpack(">" + fmt, fh.read(struct.calcsize(">" + fmt)))


def index_arrays(path: Path):
    """(count, slots, key_hash, phy, time_diff, prev) of an index file, copied (entry n at [n])."""
    with IndexFile.open(path, HSN, INUM) as f:
        count = f.header.index_count
        e = f.entries[:count]
        return (count, f.slots.astype(np.int64), e["key_hash"].astype(np.int64), e["phy_offset"].astype(np.int64),
                e["time_diff"].astype(np.int64), e["prev_index"].astype(np.int64))


EO = 40 + 4 * HSN  # where entries start


def entry_at(n: int, field_offset: int = 0) -> int:
    return EO + 20 * n + field_offset


def full_index(root: Path, rng) -> Path:
    files = sorted((root / "index").iterdir())
    return files[int(rng.integers(0, len(files) - 1))]        # never the last (not full) one


def c_slot_flip(root, rng):
    p = full_index(root, rng)
    count, slots, kh, *_ = index_arrays(p)
    s = int(rng.choice(np.flatnonzero(slots)))
    others = np.flatnonzero((np.arange(count) >= 1) & (kh % HSN != s))
    w = int(rng.choice(others))
    poke(p, 40 + 4 * s, "i", w)
    return Expect("index.slot-chain", p, 40 + 4 * s, "slot", frozenset({"index.slot-chain", "index.entry-refs"}))


def c_slot_out_of_range(root, rng):
    p = full_index(root, rng)
    count, slots, *_ = index_arrays(p)
    s = int(rng.choice(np.flatnonzero(slots)))
    poke(p, 40 + 4 * s, "i", count + int(rng.integers(0, 1000)))
    return Expect("index.slot-range", p, 40 + 4 * s, f"slot[{s}]",
                  frozenset({"index.slot-range", "index.entry-refs"}))


def c_prev_forward(root, rng):
    p = full_index(root, rng)
    count, *_ = index_arrays(p)
    n = int(rng.integers(1, count - 1))
    m = int(rng.integers(n + 1, count))
    poke(p, entry_at(n, 16), "i", m)
    return Expect("index.prev-range", p, entry_at(n, 16), "entry.prev_index",
                  frozenset({"index.prev-range", "index.entry-refs"}))


def c_prev_cycle(root, rng):
    p = full_index(root, rng)
    count, slots, kh, phy, td, prev = index_arrays(p)
    heads = slots[slots > 0]
    heads = heads[prev[heads] > 0]                     # chains of two or more
    h = int(rng.choice(heads))
    k = int(prev[h])
    poke(p, entry_at(k, 16), "i", h)                   # h -> k -> h -> ...
    return Expect("index.prev-range", p, entry_at(k, 16), "entry.prev_index",
                  frozenset({"index.prev-range", "index.entry-refs"}))


def c_key_hash(root, rng):
    p = full_index(root, rng)
    count, slots, kh, *_ = index_arrays(p)
    n = int(rng.integers(2, count - 1))
    new = kh[n] + HSN if kh[n] + HSN <= INT_MAX else kh[n] - HSN   # same slot: the chains stay sound
    poke(p, entry_at(n), "i", int(new))
    return Expect("index.key-hash", p, entry_at(n), "entry.key_hash",
                  frozenset({"index.key-hash", "index.missing-key"}))


def c_phy_offset(root, rng):
    p = full_index(root, rng)
    count, slots, kh, phy, *_ = index_arrays(p)
    n = int(rng.integers(2, count - 1))                # not the first/last: the header keeps them
    poke(p, entry_at(n, 4), "q", int(phy[n]) + int(rng.integers(1, 60)))   # inside a >= 91-byte record
    return Expect("index.phy-offset", p, entry_at(n, 4), "entry.phy_offset",
                  frozenset({"index.phy-offset", "index.missing-key"}))


def c_time_order(root, rng):
    p = full_index(root, rng)
    count, slots, kh, phy, td, prev = index_arrays(p)
    k = np.arange(count)
    cand = np.flatnonzero((k > 1) & (k < count - 1) & (prev >= 2) & (td[np.maximum(prev, 0)] >= 1))
    n = int(rng.choice(cand))
    poke(p, entry_at(n, 12), "i", int(td[prev[n]]) - 1)    # now older by time than its older neighbour
    return Expect("index.time-order", p, entry_at(n, 12), "entry.time_diff",
                  frozenset({"index.time-order", "index.entry-time"}))


def c_index_tail(root, rng):
    p = sorted((root / "index").iterdir())[-1]          # the last file is not full
    count, *_ = index_arrays(p)
    n = int(rng.integers(count, INUM))
    poke(p, entry_at(n, 4), "q", int(rng.integers(1, 2**40)))
    return Expect("index.tail", p, entry_at(n), f"entry[{n}]", frozenset({"index.tail"}))


def commitlog_records(path: Path):
    df = cl.read_columns(path, body=False)
    sizes = df["total_size"].to_numpy(np.int64)
    pos = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return df, pos, int(sizes.sum())


def c_commitlog_truncate(root, rng):
    p = cl.store_files(root / "commitlog")[-1].path
    df, pos, _ = commitlog_records(p)
    i = len(df) - 1 - int(rng.integers(0, 3))
    cut = int(pos[i]) + int(rng.integers(9, int(df["total_size"].iat[i]) - 1))
    os.truncate(p, cut)
    return Expect("commitlog.file-size", p, cut, "file size",
                  frozenset({"commitlog.file-size", "commitlog.torn-tail", "index.phy-offset", "cq.phy-offset",
                             "cq.past-commitlog-end", "checkpoint.physic-timestamp",
                             "checkpoint.logics-timestamp"}))


def c_body_crc(root, rng):
    files = cl.store_files(root / "commitlog")
    p = files[int(rng.integers(0, len(files)))].path
    df, pos, _ = commitlog_records(p)
    i = int(rng.integers(0, len(df)))
    m = cl.read_message(p, int(pos[i]))
    body_at = int(pos[i]) + m.total_size - 2 - len(m.properties_raw) - 1 - len(m.topic.encode()) - len(m.body)
    assert peek(p, body_at, f"{len(m.body)}s")[0] == m.body     # found the body bytes
    j = body_at + int(rng.integers(0, len(m.body)))
    poke(p, j, "B", peek(p, j, "B")[0] ^ 0x20)
    return Expect("commitlog.body-crc", p, int(pos[i]), "BODYCRC", frozenset({"commitlog.body-crc"}))


def c_phy_field(root, rng):
    files = cl.store_files(root / "commitlog")
    f = files[int(rng.integers(0, len(files)))]
    df, pos, _ = commitlog_records(f.path)
    i = int(rng.integers(0, len(df)))
    poke(f.path, int(pos[i]) + 28, "q", f.start_offset + int(pos[i]) + 20 * int(rng.integers(1, 100)))
    return Expect("commitlog.phy-offset-field", f.path, int(pos[i]), "PHYSICALOFFSET",
                  frozenset({"commitlog.phy-offset-field"}))


def c_blank_missing(root, rng):
    files = cl.store_files(root / "commitlog")
    p = files[int(rng.integers(0, len(files) - 1))].path
    _, _, used = commitlog_records(p)
    assert peek(p, used + 4, "i")[0] == cl.MAGIC_BLANK
    poke(p, used, "ii", 0, 0)
    return Expect("commitlog.blank", p, used, "MAGICCODE", frozenset({"commitlog.blank"}))


def pick_unit(root, rng):
    """A random real unit of a random topic queue: (file, byte position in it, unit)."""
    queues = sorted((root / "consumequeue").glob("[AB]/*"))
    folder = queues[int(rng.integers(0, len(queues)))]
    files = sorted(folder.iterdir())
    with cq.ConsumeQueue.open(folder, CQ_SIZE) as q:
        k = int(rng.integers(q.min_offset, q.max_offset))
        u = q.unit(k)
    return files[k * 20 // CQ_SIZE], k * 20 % CQ_SIZE, u


def c_cq_size(root, rng):
    p, at, u = pick_unit(root, rng)
    poke(p, at + 8, "i", u.size + int(rng.choice([-7, -1, 1, 5])))
    return Expect("cq.size", p, at + 8, "unit.size", frozenset({"cq.size", "cq.overlap", "cq.past-commitlog-end"}))


def c_cq_tags(root, rng):
    p, at, u = pick_unit(root, rng)
    poke(p, at + 12, "q", u.tags_code + int(rng.integers(1, 1000)))
    return Expect("cq.tags-code", p, at + 12, "unit.tags_code", frozenset({"cq.tags-code"}))


def c_checkpoint(root, rng):
    p = root / "checkpoint"
    c = cpf.read_checkpoint(p)
    last = int(cl.read_columns(root / "commitlog", body=False)["store_timestamp"].max())
    name = ["physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp"][int(rng.integers(0, 3))]
    if name == "index_msg_timestamp":
        ends = [IndexFile.open(f, HSN, INUM).header.end_timestamp for f in sorted((root / "index").iterdir())]
        value = max(ends) + int(rng.integers(1, 10_000))
    else:
        value = last + int(rng.integers(1, 86_400_000))
    assert getattr(c, name) != value
    off = cpf.CHECKPOINT.offset(name)
    poke(p, off, "q", value)
    check = {"physic_msg_timestamp": "checkpoint.physic-timestamp",
             "logics_msg_timestamp": "checkpoint.logics-timestamp",
             "index_msg_timestamp": "checkpoint.index-timestamp"}[name]
    return Expect(check, p, off, name, frozenset({check}))


CATALOGUE = [c_slot_flip, c_slot_out_of_range, c_prev_forward, c_prev_cycle, c_key_hash, c_phy_offset,
             c_time_order, c_index_tail, c_commitlog_truncate, c_body_crc, c_phy_field, c_blank_missing,
             c_cq_size, c_cq_tags, c_checkpoint]


def test_catalogue_codes_are_known():
    for c in CATALOGUE:
        assert c.__name__.startswith("c_")
    assert {"index.time-order", "cq.tags-code", "commitlog.blank"} <= set(CHECKS)


@pytest.mark.parametrize("seed", range(2 * len(CATALOGUE)))
def test_seeded_corruption_is_found_exactly(copy, seed):
    rng = np.random.default_rng(seed)
    corrupt = CATALOGUE[seed % len(CATALOGUE)]
    want = corrupt(copy, rng)
    r = verify_path(copy)
    assert not r.ok, f"{corrupt.__name__}: nothing found"
    got = {p.check for p in r.problems}
    assert got <= want.allowed, f"{corrupt.__name__}: unexpected {got - want.allowed}\n{describe(r)}"
    hits = [p for p in r.problems if p.check == want.check]
    assert any(p.path == str(want.path) and p.offset == want.offset and p.field == want.field for p in hits), \
        f"{corrupt.__name__}: want {want}\n{describe(r)}"
    # per-file problems sit in the report of the file they name
    for f in r.files:
        assert all(p.path == f.path or f.kind == "consumequeue" for p in f.problems)


def test_every_corruption_leaves_the_untouched_files_clean(copy):
    """A corrupted CQ unit is reported in its queue only: every other per-file report stays ok."""
    want = c_cq_tags(copy, np.random.default_rng(3))
    r = verify_path(copy)
    assert all(f.ok and not f.problems for f in r.files)            # tags codes need the CommitLog
    assert [p.check for p in r.cross] == ["cq.tags-code"]
    assert r.cross[0].count == 1 and r.cross[0].path == str(want.path)


def test_clock_step_back_is_a_warning_not_an_error(tmp_path):
    """A broker clock stepping back breaks chain time order for real: a warning, and the
    cross-file time check (what putKey stored for each message) still passes."""
    w = Workload(messages=600, seed=11, rate=40.0, topics=("T",), hot_key_fraction=0.9, hot_keys=5,
                 broker_clock_steps=3, broker_clock_step_ms=5000)
    generate_store(tmp_path / "s", w, commitlog_file_size=CL_SIZE, hash_slot_num=16, index_num=2000,
                   consume_queue_file_size=CQ_SIZE, tz=UTC)
    r = verify_path(tmp_path / "s")
    assert r.ok, describe(r)
    assert {p.check for p in r.problems} == {"index.time-order"}
    assert all(p.severity == "warning" for p in r.problems)


@pytest.mark.parametrize("kept", [1, 3])
def test_index_files_a_restart_destroyed_and_did_not_rebuild_are_lost_keys_a_warning(copy, kept):
    """A broker restarting after kill -9 destroys the newest index files (IndexService.load(
    lastExitOK=false)); a DLedger CommitLog before 5.2.0 re-dispatches nothing at recovery, so its
    index goes on only with the messages its dispatch reaches after the restart, in new files
    seeded from the last one kept (IndexService.getAndCreateLastIndexFile). Made here with the
    same rules: the checkpoint's indexMsgTimestamp at the end of the `kept`-th file, every file
    after it removed, then the messages of the last quarter of the CommitLog indexed again.
    verify reports no error and one warning, index.lost-keys, counting the keys the destroyed
    files held less those indexed again."""
    from rmqlab.store.indexservice import IndexService

    files = sorted((copy / "index").iterdir())
    with IndexFile.open(files[kept - 1], HSN, INUM) as f:   # what the broker had checkpointed: the files
        cpf.update_checkpoint(copy / "checkpoint", index_msg_timestamp=f.header.end_timestamp)   # after, newer
    destroyed = 0
    for p in files[kept:]:
        with IndexFile.open(p, HSN, INUM) as f:
            destroyed += f.header.keys
        p.unlink()
    msgs = cl.read_columns(copy / "commitlog", body=False)
    resume = int(msgs["phy_offset"].iloc[len(msgs) * 3 // 4])
    with IndexService(copy / "index", HSN, INUM, read_only=False, strict=False, clock=lambda: 1_900_000_000_000) as svc:
        again = svc.build_columns(msgs[msgs["phy_offset"] >= resume])
    assert 0 < again < destroyed
    r = verify_path(copy)
    assert r.ok and r.errors == [], describe(r)
    assert [(p.check, p.severity, p.count) for p in r.problems] == [("index.lost-keys", "warning", destroyed - again)]


@pytest.mark.parametrize("abort", [False, True])
def test_a_kill_between_the_puts_of_the_last_message_is_a_warning_after_an_abnormal_stop(copy, abort):
    """buildIndex puts a message's keys one putKey at a time (UNIQ_KEY, then each KEYS token),
    each moving end_phy_offset to the message; a broker killed between two puts leaves the last
    message indexed with its UNIQ_KEY alone. Made here by indexing every message again with the
    last keyed message's KEYS left out. With the abort file (the broker did not stop cleanly:
    its restart destroys the index files newer than the checkpoint's indexMsgTimestamp and
    indexes the message again) that is one warning, index.interrupted-put, counting its KEYS
    tokens; without it, the missing keys are errors as anywhere in the indexed range."""
    from rmqlab.store.indexservice import IndexService

    msgs = cl.read_columns(copy / "commitlog", body=False)
    keyed = np.flatnonzero((msgs["keys"].notna() | msgs["uniq_key"].notna()).to_numpy())
    last = int(keyed[-1])
    keys, uniq = msgs["keys"].iloc[last], msgs["uniq_key"].iloc[last]
    assert isinstance(keys, str) and isinstance(uniq, str)
    tokens = [k for k in keys.split(" ") if k]      # buildIndex: split on " ", empty tokens skipped
    assert tokens
    for p in (copy / "index").iterdir():
        p.unlink()
    cut = msgs.copy()
    cut.loc[cut.index[last], "keys"] = None
    with IndexService(copy / "index", HSN, INUM, read_only=False, strict=False, clock=lambda: 1_900_000_000_000) as svc:
        svc.build_columns(cut)
    if abort:
        (copy / "abort").write_bytes(b"")
    r = verify_path(copy)
    got = [(p.check, p.severity, p.count) for p in r.problems]
    if abort:
        assert r.ok and got == [("index.interrupted-put", "warning", len(tokens))], describe(r)
        assert str(int(msgs["phy_offset"].iloc[last])) in r.problems[0].message
    else:
        assert got == [("index.missing-key", "error", len(tokens))], describe(r)
    # the CommitLog files' joins in worker processes: the same report
    assert verify_path(copy, jobs=2).as_dict() == r.as_dict()


# What verify must find, from the layouts alone (the test's own model, no rmqlab reader): every
# file of a broker's store has a fixed size (MappedFile: CommitLog and ConsumeQueue files are
# mapped at their configured size, an index file is 40 + 4 slots + 20 entries bytes, the
# checkpoint a 4 KiB page), so a file cut or grown is damage to that file; in a CommitLog record
# TOTALSIZE, MAGICCODE, BODYCRC, PHYSICALOFFSET, BODYLEN and the body are checked where the
# record starts (CommitLog.checkMessageAndReturnSize, 4.9.7: the body CRC covers the body); in a
# ConsumeQueue unit in use each field is compared with the message it points at, at that field.
_CL_CHECKED = [(0, 12), (28, 36), (84, 88)]     # TOTALSIZE MAGICCODE BODYCRC, PHYSICALOFFSET, BODYLEN (v1, IPv4)
_CQ_FIELDS = [(0, 8), (8, 12), (12, 20)]        # commitlog offset, size, tags code
_EXT_ADDR_MAX = -(2**31) - 1                    # ConsumeQueueExt.MAX_ADDR (4.9.7): codes at or below are ext addresses


def _records(data: bytes) -> list[tuple[int, int, int]]:
    """(start, total size, body length) of each message record of a CommitLog file's bytes,
    walked by their TOTALSIZE fields up to the blank record or a zero size."""
    out, pos = [], 0
    while pos + 88 <= len(data):
        total, magic = struct.unpack_from(">iI", data, pos)
        if total <= 0 or magic == 0xCBD43194:
            break
        out.append((pos, total, struct.unpack_from(">i", data, pos + 84)[0]))
        pos += total
    return out


def _checked_commitlog_bytes(data: bytes, rng) -> tuple[int, int]:
    """A random checked byte of a random record: (byte position, the record's start)."""
    records = _records(data)
    start, _, body_len = records[int(rng.integers(0, len(records)))]
    spans = _CL_CHECKED + [(88, 88 + body_len)]
    lo, hi = spans[int(rng.integers(0, len(spans)))]
    return start + int(rng.integers(lo, hi)), start


def _plant_checked_damage(root: Path, rng, untouched: list[Path]) -> tuple[Path, int | None, str]:
    """Damage checked bytes of one of `untouched` files: (the file, the offset a finding must
    name or None for any, what was done). A ConsumeQueue tags code turned into an ext address
    needs the queue's ConsumeQueueExt, which this store has not: verify must say so in a note."""
    commitlogs = [p for p in untouched if p.parent.name == "commitlog"]
    queues = [p for p in untouched if "consumequeue" in p.parts and any(p.read_bytes())]
    how = int(rng.integers(0, 3))
    if how == 0 or not (commitlogs and queues):
        p = untouched[int(rng.integers(0, len(untouched)))]
        size = p.stat().st_size
        new = int(rng.integers(0, size)) if rng.random() < 0.5 else size + int(rng.integers(1, 40))
        if new < size:
            os.truncate(p, new)
        else:
            with open(p, "ab") as fh:
                fh.write(bytes(new - size))
        return p, None, f"size {size} -> {new}"
    if how == 1:
        p = commitlogs[int(rng.integers(0, len(commitlogs)))]
        at, start = _checked_commitlog_bytes(p.read_bytes(), rng)
        poke(p, at, "B", peek(p, at, "B")[0] ^ int(rng.integers(1, 256)))
        return p, start, f"CommitLog byte {at} of the record at {start}"
    p = queues[int(rng.integers(0, len(queues)))]
    data = p.read_bytes()
    used = [k for k in range(len(data) // 20) if any(data[20 * k:20 * k + 20])]
    k = used[int(rng.integers(0, len(used)))]
    lo, hi = _CQ_FIELDS[int(rng.integers(0, 3))]
    at = 20 * k + int(rng.integers(lo, hi))
    poke(p, at, "B", peek(p, at, "B")[0] ^ int(rng.integers(1, 256)))
    if lo == 12 and peek(p, 20 * k + 12, "q")[0] <= _EXT_ADDR_MAX:
        return p, -1, f"unit {k}: its tags code is now an ext address"
    return p, 20 * k + lo, f"ConsumeQueue byte {at} (unit {k}, field at {lo})"


@pytest.mark.parametrize("seed", range(24))
def test_random_damage_is_reported_never_raised(copy, seed):
    """Bytes flipped, files cut or grown anywhere: verify reports, it does not crash, and its
    report is plain JSON; check() raises exactly when the report is not ok. Damage to checked
    bytes is found: each run also damages checked bytes of a file the random damage left alone
    (the test's own model of the layouts above), and every file cut or grown, by either, is named."""
    rng = np.random.default_rng(1000 + seed)
    files = sorted(p for p in copy.rglob("*") if p.is_file())
    sizes = {p: p.stat().st_size for p in files}
    touched = set()
    for _ in range(int(rng.integers(1, 5))):
        p = files[int(rng.integers(0, len(files)))]
        touched.add(p)
        size = p.stat().st_size
        how = int(rng.integers(0, 3))
        if how == 0:
            os.truncate(p, int(rng.integers(0, size + 1)))
        elif how == 1 and size:
            for _ in range(int(rng.integers(1, 20))):
                poke(p, int(rng.integers(0, size)), "B", int(rng.integers(0, 256)))
        else:
            with open(p, "ab") as fh:
                fh.write(bytes(rng.integers(0, 256, int(rng.integers(1, 40)), dtype=np.uint8)))
    planted, offset, what = _plant_checked_damage(copy, rng, [p for p in files if p not in touched])
    r = verify_path(copy)
    json.dumps(r.as_dict())
    assert {p.check for p in r.problems} <= set(CHECKS)
    assert all(p.path is not None for p in r.problems)
    assert not r.ok
    named = {Path(p.path) for p in r.problems}
    resized = [p for p in files if p.stat().st_size != sizes[p]]
    assert all(p in named for p in resized), (resized, describe(r))
    if offset == -1:        # the ext address: no ConsumeQueueExt to check it against, and verify says so
        assert any("ConsumeQueueExt addresses" in n and str(planted.parent) in n for n in r.notes), r.notes
    else:
        at = [p.offset for p in r.problems if Path(p.path) == planted]
        assert at and (offset is None or offset in at), f"{what}: not found at {offset}\n{describe(r)}"
    with pytest.raises(RmqlabError) as e:
        r.check()
    assert e.value is r.errors[0].error


def test_index_and_queues_without_commitlog_messages(copy):
    """An emptied CommitLog: every index entry and unit points at nothing, each reported once per file."""
    for f in cl.store_files(copy / "commitlog"):
        f.path.unlink()
    r = verify_path(copy)
    assert not r.ok
    assert {p.check for p in r.cross} <= {"index.phy-offset", "cq.phy-offset", "index.file-order",
                                          "checkpoint.physic-timestamp"}
    n_index = len(list((copy / "index").iterdir()))
    assert sum(p.check == "index.phy-offset" for p in r.cross) == n_index
    assert "the CommitLog has no files" in r.cross[0].message


def test_a_commitlog_name_past_long_max_is_reported(store, tmp_path):
    d = tmp_path / "commitlog"
    d.mkdir()
    shutil.copyfile(store / "commitlog" / "00000000000000000000", d / "00000000000000000000")
    shutil.copyfile(store / "commitlog" / "00000000000000000000", d / ("9" * 20))
    r = verify_path(d)
    assert [(p.check, p.path, p.field) for p in r.problems] == [("commitlog.file-name", str(d / ("9" * 20)),
                                                                 "file name")]
    assert [f.ok for f in r.files] == [False, True]


def test_file_report_check_raises_the_typed_error(copy):
    want = c_prev_forward(copy, np.random.default_rng(2))
    rep = verify_index_file(want.path)
    assert not rep.ok
    with pytest.raises(CorruptIndexError) as e:
        rep.check()
    assert e.value.path == str(want.path) and e.value.offset == want.offset
    assert type(e.value) is CorruptIndexError


def test_an_empty_index_file_of_odd_size_asks_for_the_geometry(tmp_path):
    path = tmp_path / "20240610061524062"
    IndexFile.create(path, hash_slot_num=10, index_num=10).close()
    with pytest.raises(GeometryError, match="pass hash_slot_num"):
        infer_index_geometry(path)
    r = verify_path(path)
    assert [p.check for p in r.problems] == ["index.geometry"] and "pass --hash-slot-num" not in r.problems[0].message
    assert verify_path(path, hash_slot_num=10).ok


# --------------------------------------------------------------- index files: hypothesis


def model_time_order_violations(keys, ts, hsn):
    """Count (newer, older) neighbours on a chain whose older entry has the greater time_diff:
    a plain replay of putKey (entry 1 counts as 0: its own time is begin_timestamp)."""
    begin = ts[0]

    def diff(t):
        if begin <= 0:
            return 0
        d = t - begin
        s = abs(d) // 1000 * (1 if d >= 0 else -1)
        return min(max(s, 0), INT_MAX)

    last_in_slot, bad = {}, 0
    for n, (k, t) in enumerate(zip(keys, ts), start=1):
        td = 0 if n == 1 else diff(t)
        s = index_hash(k) % hsn
        if s in last_in_slot and last_in_slot[s] > td:
            bad += 1
        last_in_slot[s] = td
    return bad


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(st.sampled_from([f"T#k{i}" for i in range(12)]), min_size=1, max_size=40),
       steps=st.lists(st.integers(-4000, 6000), min_size=40, max_size=40),
       hsn=st.integers(1, 9), spare=st.integers(1, 5))
def test_index_file_checks_match_a_model(tmp_path, keys, steps, hsn, spare):
    ts = list(1_718_000_000_000 + np.cumsum(steps[:len(keys)]))
    path = tmp_path / f"f{len(keys)}_{hsn}_{spare}_{abs(hash(tuple(steps))) % 10**6}"
    build_index_file(path, keys, list(range(100, 100 + 200 * len(keys), 200)), ts, hash_slot_num=hsn,
                     index_num=len(keys) + spare)
    rep = verify_index_file(path, hash_slot_num=hsn)
    want = model_time_order_violations(keys, ts, hsn)
    orders = [p for p in rep.problems if p.check == "index.time-order"]
    assert rep.ok and {p.check for p in rep.problems} <= {"index.time-order"}
    assert (orders[0].count if orders else 0) == want
    assert rep.counts["keys"] == len(keys)


def test_index_self_loop_and_cycle_checks_stay_bounded(tmp_path):
    path = tmp_path / "f"
    build_index_file(path, ["T#a"] * 50, list(range(50)), [1000 * i + 1 for i in range(50)], hash_slot_num=1,
                     index_num=60)
    poke(path, 40 + 4 + 20 * 30 + 16, "i", 30)          # entry 30 points at itself
    poke(path, 40 + 4 + 20 * 10 + 16, "i", 40)          # entry 10 points forward into the chain
    rep = verify_index_file(path, hash_slot_num=1)
    first = next(p for p in rep.problems if p.check == "index.prev-range")
    assert first.offset == 40 + 4 + 20 * 10 + 16 and first.count == 2


# ------------------------------------------------------------------------------- the CLI


def test_cli_exit_statuses(store, copy, tmp_path, capsys):
    assert main(["verify", str(store)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].endswith(": ok") and any(line.startswith("cross-file: ok") for line in out)
    assert main(["verify", str(store / "index"), "--hash-slot-num", str(HSN), "--index-num", str(INUM)]) == 0
    capsys.readouterr()
    c_cq_size(copy, np.random.default_rng(0))
    assert main(["verify", str(copy)]) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out and "error: [cq.size]" in out
    assert main(["verify", str(tmp_path / "missing")]) == 3      # bad input: no such file
    assert main(["verify", str(store), "--kind", "bogus"]) == 2
    assert main(["verify", str(store), "--commitlog-file-size", "0"]) == 2
    assert main(["verify", str(store), "--hash-slot-num", "0"]) == 2
    odd = tmp_path / "notes.txt"
    odd.write_bytes(b"hello world, not a store file")
    assert main(["verify", str(odd)]) == 2                  # cannot tell: pass --kind
    assert main(["verify", str(odd), "--kind", "checkpoint"]) == 1
    err = capsys.readouterr().err
    assert "pass --kind" in err and "kind=" not in err      # the option, not the library keyword


def test_cli_json_shape(copy, capsys):
    want = c_key_hash(copy, np.random.default_rng(5))
    assert main(["verify", str(copy), "--json"]) == 1
    d = json.loads(capsys.readouterr().out)
    assert set(d) == {"target", "kind", "ok", "files", "failed_files", "errors", "warnings", "settings",
                      "reports", "cross", "notes"}
    assert d["kind"] == "store" and d["ok"] is False and d["files"] == len(d["reports"])
    assert d["settings"]["commitlog_file_size"] == CL_SIZE
    rep = d["reports"][0]
    assert set(rep) == {"path", "kind", "ok", "counts", "problems", "notes"}
    problem = next(p for p in d["cross"]["problems"] if p["check"] == "index.key-hash")
    assert set(problem) == {"check", "severity", "type", "path", "offset", "field", "count", "message"}
    assert (problem["path"], problem["offset"], problem["field"], problem["type"]) == \
        (str(want.path), want.offset, "entry.key_hash", "CorruptIndexError")
    assert set(d["cross"]["counts"]) >= {"messages", "index_entries", "cq_units"}


def test_kinds_are_forced_with_kind(store, tmp_path):
    # a CommitLog file under a name and folder that say nothing
    odd = tmp_path / "data.bin"
    shutil.copyfile(store / "commitlog" / "00000000000000000000", odd)
    assert detect_kind(odd) == "commitlog"
    r = verify_path(odd, kind="commitlog", commitlog_file_size=CL_SIZE)
    assert r.ok and r.files[0].counts["blank"]
    with pytest.raises(ValueError):
        verify_path(odd, kind="nonsense")
    assert set(KINDS) == {"store", "commitlog", "consumequeue", "index", "checkpoint", "batchconsumequeue", "dledger",
                          "rocksdbcq"}


# ---------------------------------------------------------------------------- real data


@pytest.mark.realdata
def test_real_broker_commitlog_verifies_clean(tmp_path):
    require_real_data(REAL_FILE)
    before = snapshot(REAL)
    for target in (REAL_FILE, REAL_FILE.parent, REAL_STORE):
        r = verify_path(target)
        assert r.ok and not r.problems, describe(r)
        f = r.files[0]
        # the README's facts: 47 v1 messages, 8,084 bytes, then the blank record in an 8,192-byte file
        assert f.kind == "commitlog" and f.counts == {"messages": 47, "bytes_used": 8084, "file_size": 8192,
                                                      "blank": True, "start_offset": 0}
    assert snapshot(REAL) == before
    # a flipped body byte in a copy is found at its record
    bad = tmp_path / "commitlog" / REAL_FILE.name
    bad.parent.mkdir()
    shutil.copyfile(REAL_FILE, bad)
    m = cl.read_message(bad, 172 * 5)
    body_at = 172 * 5 + m.total_size - 2 - len(m.properties_raw) - 1 - len(m.topic.encode()) - len(m.body)
    poke(bad, body_at, "B", peek(bad, body_at, "B")[0] ^ 1)
    r = verify_path(bad.parent)
    assert [(p.check, p.offset, p.field) for p in r.problems] == [("commitlog.body-crc", 860, "BODYCRC")]


def test_a_compressed_body_that_does_not_decompress_is_found_at_its_record(tmp_path):
    """Bodies compressed as the clients do (zlib without type bits; LZ4, ZSTD, ZLIB with them)
    verify clean; a zlib body whose bytes are not a zlib stream (its BODYCRC is right: the
    producer sent them so) is commitlog.body-codec at its record, and nothing else."""
    import zlib

    import cramjam

    text = b"body " * 2000
    bodies = [(0x1, zlib.compress(text)), (0x1 | 1 << 8, bytes(cramjam.lz4.compress(text))),
              (0x1 | 2 << 8, bytes(cramjam.zstd.compress(text))), (0x1 | 3 << 8, zlib.compress(text, 9)),
              (0x1 | 3 << 8, b"\x78\x9c not a deflate stream"), (0, text)]
    recs, offset, starts = [], 0, []
    for sys_flag, body in bodies:
        starts.append(offset)
        recs.append(cl.encode_message(topic="T", body=body, sys_flag=sys_flag, phy_offset=offset,
                                      queue_offset=len(recs)))
        offset += len(recs[-1])
    d = tmp_path / "commitlog"
    d.mkdir()
    (d / f"{0:020d}").write_bytes(b"".join(recs))
    r = verify_path(d)
    assert [(p.check, p.offset, p.field, p.count) for p in r.problems] == [
        ("commitlog.body-codec", starts[4], "BODY", 1)]
    assert "zlib" in r.problems[0].error.reason


def test_cross_checks_give_the_same_report_whatever_the_chunk(copy, monkeypatch):
    """The index cross-file checks run CROSS_CHUNK entries (the CommitLog is decoded and its key
    codes made MESSAGE_CHUNK messages, the missing-unit check CROSS_CHUNK messages, the table
    WINDOW_MESSAGES messages) at a time, for bounded memory:
    entries wrong in several ways, many times over, in several files, and a queue's units all
    gone, are reported the same (first entry, count, words) whatever the chunk: one entry, a
    few or all of a file."""
    from rmqlab.verify import check_commitlog, cross

    rng = np.random.default_rng(17)
    for corrupt in [c_key_hash] * 4 + [c_phy_offset] * 4 + [c_time_order] * 2:
        corrupt(copy, rng)
    for p in sorted((copy / "index").iterdir())[:-1]:   # time_diff of some entries, each file
        for n in rng.integers(2, INUM - 1, 3):
            poke(p, entry_at(int(n), 12), "i", int(rng.integers(0, 1000)))
    shutil.rmtree(sorted((copy / "consumequeue").glob("B/*"))[0])   # its messages have no units
    reports = {}
    for chunk, window in ((1, 1), (7, 97), (2**20, 0)):
        monkeypatch.setattr(check_commitlog, "WINDOW_MESSAGES", window)
        monkeypatch.setattr(cross, "CROSS_CHUNK", chunk)
        monkeypatch.setattr(check_commitlog, "MESSAGE_CHUNK", chunk)
        reports[chunk] = verify_path(copy).as_dict()
    problems = reports[2**20]["cross"]["problems"]
    checks = {p["check"] for p in problems}
    assert {"index.key-hash", "index.phy-offset", "index.entry-time", "index.missing-key", "cq.missing-unit"} <= checks
    assert any(p["count"] > 1 for p in problems)
    assert reports[1] == reports[7] == reports[2**20]


def _reports_by_window(root: Path, monkeypatch) -> dict:
    """verify_path(root) as JSON with the message table in one window (0), a window for each
    decoded chunk of 7 messages (1: windows end inside files), and windows of about 97
    messages made of chunks of 50."""
    from rmqlab.verify import check_commitlog

    out = {}
    for window, chunk in ((0, 1 << 18), (1, 7), (97, 50)):
        monkeypatch.setattr(check_commitlog, "WINDOW_MESSAGES", window)
        monkeypatch.setattr(check_commitlog, "MESSAGE_CHUNK", chunk)
        out[window] = json.dumps(verify_path(root).as_dict(), sort_keys=True)
    return out


@pytest.mark.parametrize("seed", range(10))
def test_index_file_checks_are_the_same_whatever_the_chunk(copy, monkeypatch, seed):
    """IndexFile.problems and verify's own index checks read CHECK_CHUNK slots or entries at a
    time (FLAG_CHUNK flags): slots and prev links wrong in several ways, many times over, give
    the same problems (first, count, words) with chunks of 3 or 7 as whole."""
    from rmqlab.formats import indexfile
    from rmqlab.tables import arrays

    rng = np.random.default_rng(900 + seed)
    for corrupt in rng.choice([c_slot_flip, c_slot_out_of_range, c_prev_forward, c_prev_cycle, c_key_hash,
                               c_time_order], 6):
        corrupt(copy, rng)
    found = {}
    for chunk, flags in ((3, 2), (7, 5), (1 << 20, 1 << 20)):
        monkeypatch.setattr(indexfile, "CHECK_CHUNK", chunk)
        monkeypatch.setattr(arrays, "FLAG_CHUNK", flags)
        reports = [verify_index_file(p, HSN, INUM) for p in sorted((copy / "index").iterdir())]
        found[chunk] = [[(q.check, q.path, q.offset, q.field, q.count, q.message) for q in r.problems]
                        for r in reports]
    assert found[3] == found[7] == found[1 << 20]
    assert sum(map(len, found[3])) >= 3
    # the reference counts against a model: every slot head and in-range prev_index is a reference
    for path, problems in zip(sorted((copy / "index").iterdir()), found[3]):
        count, slots, _, _, _, prev = index_arrays(path)
        refs = Counter(int(v) for v in slots if 0 < v < count)
        refs.update(int(prev[n]) for n in range(1, count) if 0 < prev[n] < n)
        messages = [(m.split(" (")[0], k) for check, _, _, _, k, m in problems if check == "index.entry-refs"]
        want = [(what, k) for what, k in (
            ("entry referenced by more than one slot/prev_index", sum(1 for n in range(1, count) if refs[n] > 1)),
            ("entry not reachable from any slot", sum(1 for n in range(1, count) if refs[n] == 0))) if k]
        assert messages == want, path.name


def test_the_store_is_walked_in_windows(store, monkeypatch):
    """The cross-file checks hold a window of the message table at a time: windows end between
    decoded chunks, inside a CommitLog file or at its end; each offset is answered by exactly one
    window, and the CommitLog's end is known in the last alone."""
    from rmqlab.verify import check_commitlog
    from rmqlab.verify.check_commitlog import CommitLogScan

    monkeypatch.setattr(check_commitlog, "MESSAGE_CHUNK", 40)
    scan = CommitLogScan(store / "commitlog", None, False)
    windows = []
    scan.walk(windows.append, 100)
    whole = cl.read_columns(store / "commitlog", body=False)
    positions = whole["phy_offset"].to_numpy(np.int64)
    ends = set((positions + whole["total_size"].to_numpy(np.int64)).tolist())
    assert len(windows) > len(cl.store_files(store / "commitlog")) > 8
    assert windows[0].start is None and windows[-1].stop is None
    assert [w.stop for w in windows[:-1]] == [w.start for w in windows[1:]]
    assert all(w.stop in ends for w in windows[:-1])                        # a message's end
    assert all(100 <= w.n < 140 for w in windows[:-1])                      # chunks of 40 until 100
    assert sum(w.n for w in windows) == scan.n == len(whole)
    assert all(w.end_offset is None for w in windows[:-1]) and windows[-1].end_offset == scan.end_offset
    assert np.concatenate([w.positions for w in windows]).tolist() == positions.tolist()
    assert all(w.contains(w.positions).all() for w in windows)


@pytest.mark.parametrize("seed", range(8))
def test_the_report_is_the_same_whatever_the_window(copy, monkeypatch, seed):
    """Index entries, queue units and messages without units, wrong in several ways and spread
    over many CommitLog files, are reported the same (first of each, count, words, notes)
    whether the message table is one window or many, ending inside CommitLog files or between."""
    rng = np.random.default_rng(300 + seed)
    for corrupt in rng.choice([c_key_hash, c_phy_offset, c_time_order, c_cq_size, c_cq_tags, c_checkpoint,
                               c_body_crc], 4):
        corrupt(copy, rng)
    if seed % 3 == 2:
        c_blank_missing(copy, rng)      # after the others: they read the CommitLog whole
    if seed % 2:
        queues = sorted((copy / "consumequeue").glob("[AB]/*"))
        shutil.rmtree(queues[int(rng.integers(0, len(queues)))])     # its messages have no units
    if seed % 4 == 3:
        first = cl.store_files(copy / "commitlog")[0].path
        first.unlink()                                  # expired: entries and units point below the CommitLog
    reports = _reports_by_window(copy, monkeypatch)
    assert reports[0] == reports[1] == reports[97], seed
    assert not json.loads(reports[0])["ok"]


def test_the_report_of_a_damaged_store_is_the_same_whatever_the_window(copy, monkeypatch):
    """Damage that stops a CommitLog file's walk in the middle, a missing file (a gap), a torn
    tail and random bytes anywhere: the same report from every window size."""
    files = cl.store_files(copy / "commitlog")
    rng = np.random.default_rng(5)
    p = files[3].path
    _, pos, _ = commitlog_records(p)
    poke(p, int(pos[len(pos) // 2]) + 4, "i", 0x12345678)              # a bad MAGICCODE mid-file
    files[6].path.unlink()                                               # a gap
    last = files[-1].path
    os.truncate(last, last.stat().st_size - 3)
    for q in rng.choice(sorted(p for p in copy.rglob("*") if p.is_file()), 5):
        size = q.stat().st_size
        if size:
            poke(q, int(rng.integers(0, size)), "B", int(rng.integers(0, 256)))
    reports = _reports_by_window(copy, monkeypatch)
    assert reports[0] == reports[1] == reports[97]


def test_a_lagging_dispatch_is_counted_the_same_whatever_the_window(copy, monkeypatch):
    """Every queue cut where dispatch stopped, at half the CommitLog or before, but one that goes
    on to 62 % with its units in between wrong (so whole windows hold no unit that gives the
    dispatched end): the messages before the dispatched end without units are counted, those
    after it not, though the end is known only after the last window."""
    rng = np.random.default_rng(11)
    total = sum(f.size for f in cl.store_files(copy / "commitlog"))
    for n, folder in enumerate(sorted((copy / "consumequeue").glob("*/*"))):
        cut = int(total * (0.62 if n == 0 else 0.5 if rng.random() < 0.6 else rng.uniform(0.3, 0.45)))
        with cq.ConsumeQueue.open(folder, CQ_SIZE) as q:
            co = q.units["commitlog_offset"].astype(np.int64)
            keep = q.min_offset + int(np.searchsorted(co, cut))
            wrong = q.min_offset + np.flatnonzero((co >= 0.5 * total) & (co < 0.6 * total))
        for f in sorted(folder.iterdir()):
            first = int(f.name) // 20
            if first >= keep:
                f.unlink()
                continue
            if first + CQ_SIZE // 20 > keep:
                with open(f, "r+b") as fh:
                    fh.seek((keep - first) * 20)
                    fh.write(bytes(CQ_SIZE - (keep - first) * 20))
            for k in wrong[(wrong >= first) & (wrong < min(keep, first + CQ_SIZE // 20))]:
                at = (int(k) - first) * 20 + 8
                poke(f, at, "i", peek(f, at, "i")[0] + 1)           # size: the unit gives no end
    reports = _reports_by_window(copy, monkeypatch)
    assert reports[0] == reports[1] == reports[97]
    # the model: the end of the last unit of any queue; the dispatchable messages before it
    # past their queue's last unit
    from rmqlab.rules.dispatch import goes_to_consume_queue_many

    ends = {}
    for folder in sorted((copy / "consumequeue").glob("*/*")):
        with cq.ConsumeQueue.open(folder, CQ_SIZE) as q:
            last = q.unit(q.max_offset - 1)
            ends[(folder.parent.name, int(folder.name))] = (q.max_offset, last.commitlog_offset + last.size)
    end = max(e for _, e in ends.values())
    m = cl.read_columns(copy / "commitlog", body=False)
    before = m[(m["phy_offset"] < end) & goes_to_consume_queue_many(m["sys_flag"].to_numpy())]
    lost = before[[qoff >= ends[(t, qid)][0] for t, qid, qoff in
                   zip(before["topic"], before["queue_id"], before["queue_offset"])]]
    missing = [p for p in json.loads(reports[0])["cross"]["problems"] if p["check"] == "cq.missing-unit"]
    assert 0.3 * total < end < 0.7 * total and (m["phy_offset"] >= end).sum() > 200
    assert len(missing) == 1 and missing[0]["count"] == len(lost) > 10
    assert f"at {lost['phy_offset'].iloc[0]} " in missing[0]["message"] and f"end {end} " in missing[0]["message"]


# ------------------------------------------------------------------ the message table


def test_the_message_table_holds_numbers_only(store):
    """The table the cross-file checks hold for a whole CommitLog keeps no strings: every
    per-message array is numeric, a topic is a code into the distinct topics, and the numbers
    are the columnar reader's (independent of the chunked walk that made them)."""
    from rmqlab.verify.check_commitlog import CommitLogScan

    tables = []
    CommitLogScan(store / "commitlog", None, True).walk(tables.append, 0)
    [msgs] = tables
    want = cl.read_columns(store / "commitlog", body=False)
    assert msgs.n == len(want) > 1000
    for name, value in vars(msgs).items():
        if name in ("_kept_properties", "_topic_index"):
            continue   # the PROPERTIES blocks of multi-dispatched or batched messages alone (none here)
        assert not hasattr(value, "dtypes"), f"{name}: a frame"
        arrays = value if isinstance(value, tuple) else (value,)
        for a in arrays:
            if isinstance(a, np.ndarray):
                assert a.dtype.kind in "iu", f"{name}: {a.dtype}"
    assert len(msgs.dispatch_properties[0]) == 0
    assert [msgs.topics[c] for c in msgs.topic_code] == want["topic"].tolist()
    assert len(msgs.topics) == want["topic"].nunique()
    for name, column in (("positions", "phy_offset"), ("total_size", "total_size"), ("sys_flag", "sys_flag"),
                         ("store_ts", "store_timestamp"), ("queue_id", "queue_id"), ("queue_offset", "queue_offset")):
        assert getattr(msgs, name).tolist() == want[column].tolist(), name
    # the tags codes against the test's own model of the broker's rule, on a standard-library
    # read of the records (no rmqlab reader, no rmqlab hash)
    records = read_commitlog(store / "commitlog")
    assert [r["phy_offset"] for r in records] == msgs.positions.tolist()
    codes = [java_tags_code(r["topic"], r["properties"], r["store_timestamp"]) for r in records]
    delayed = sum(r["topic"] == SCHEDULE_TOPIC and int(r["properties"].get("DELAY", 0)) > 0 for r in records)
    assert delayed > 50 and sum(c != 0 for c in codes) > 1000       # both branches of the rule are exercised
    assert msgs.tags_codes.tolist() == codes


# MessageStoreConfig.messageDelayLevel (4.9.7 / 5.3.1): "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
DELAY_LEVEL_MS = [1000, 5000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
                  480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000]


def java_tags_code(topic: str, properties: dict, store_timestamp: int) -> int:
    """The tags code CommitLog.checkMessageAndReturnSize (4.9.7, the same at 5.3.1) gives a record:
    MessageExtBrokerInner.tagsString2tagsCode, TAGS.hashCode() widened to a long (0 for no or
    empty TAGS); but for SCHEDULE_TOPIC_XXXX with a DELAY property, its level capped at the
    table's largest, a level above 0 gives computeDeliverTimestamp: store time + the level's delay."""
    tags = properties.get("TAGS")
    code = java_hash(tags) if tags else 0      # String.hashCode, signed 32-bit, widened
    level = properties.get("DELAY")
    if topic == SCHEDULE_TOPIC and level is not None:
        lv = min(int(level), len(DELAY_LEVEL_MS))
        if lv > 0:
            code = store_timestamp + DELAY_LEVEL_MS[lv - 1]
    return code


def test_the_message_table_keeps_the_properties_of_dispatch_rules_only(tmp_path):
    """Of the PROPERTIES blocks, the table keeps those of the messages that name light message
    queues (INNER_MULTI_DISPATCH) or a batch (INNER_NUM and INNER_BASE), the only properties
    the LMQ and BatchConsumeQueue checks read; the store verifies clean with them."""
    from rmqlab.rules.dispatch import property_value
    from rmqlab.verify.check_commitlog import CommitLogScan
    from tests.formats import test_batchconsumequeue as bcq_tests

    root = tmp_path / "store"
    generate_store(root, Workload(messages=600, seed=4, **bcq_tests.FEATURES), **bcq_tests.STORE_OPTS)
    tables = []
    CommitLogScan(root / "commitlog", None, True).walk(tables.append, 0)
    [msgs] = tables
    props = cl.read_columns(root / "commitlog", body=False)["properties"].tolist()
    named = [i for i, p in enumerate(props)
             if property_value(p, "INNER_MULTI_DISPATCH") is not None
             or (property_value(p, "INNER_NUM") is not None and property_value(p, "INNER_BASE") is not None)]
    rows, blocks = msgs.dispatch_properties
    assert 0 < len(named) < len(props)
    assert rows.tolist() == named and blocks.tolist() == [props[i] for i in named]
    assert msgs.properties_at(np.arange(len(props))).tolist() == [p if i in set(named) else None
                                                                   for i, p in enumerate(props)]
    assert verify_path(root).ok


def test_problem_words_name_the_strings_read_back_from_the_commitlog(copy):
    """The table holds no strings: a problem that names a message's topic, TAGS, KEYS or
    UNIQ_KEY reads its record again, and says what the columnar reader reads there."""
    import re

    rng = np.random.default_rng(3)
    c_cq_tags(copy, rng)
    c_key_hash(copy, rng)
    shutil.rmtree(sorted((copy / "consumequeue").glob("B/*"))[0])   # a message without its unit
    r = verify_path(copy)
    cols = cl.read_columns(copy / "commitlog", body=False).set_index("phy_offset")
    by_check = {p.check: p for p in r.cross}

    tags = by_check["cq.tags-code"].message
    m = cols.loc[int(re.search(r"the message at (\d+) gives", tags).group(1))]
    assert isinstance(m["tags"], str) and f"(TAGS {m['tags']!r}, topic {m['topic']!r})" in tags

    for check in ("index.key-hash", "index.missing-key"):
        text = by_check[check].message
        m = cols.loc[int(re.search(r"message at (\d+) \(", text).group(1))]
        assert (f"(topic {m['topic']!r}, KEYS {m['keys']!r}, UNIQ_KEY {m['uniq_key']!r}, "
                f"store time {m['store_timestamp']})") in text, text
        assert isinstance(m["uniq_key"], str)

    missing = by_check["cq.missing-unit"]
    m = cols.loc[int(re.search(r"the message at (\d+) \(", missing.message).group(1))]
    assert f"(topic {m['topic']!r}, queue {m['queue_id']}, QUEUEOFFSET {m['queue_offset']})" in missing.message
    assert m["topic"] == "B"


def test_property_pairs_the_broker_skips_are_a_warning_not_an_error(tmp_path):
    # the real 5.2.0 broker wrote "...INNER_MULTI_DISPATCH\x01%LMQ%lmq-a\x02r-5 shared\x02WAIT\x01true"
    # and reads it back: the store is sound (no error), and verify says where such blocks are
    blocks = ["KEYS\x01k0\x02", "KEYS\x01k1\x02r-5 shared\x02WAIT\x01true", "KEYS\x01k2\x02",
              "\x01v\x02KEYS\x01k3", "KEYS\x01k4\x02\x02TAGS\x01t"]
    with cl.CommitLogWriter(tmp_path / "cl", file_size=4096) as w:
        w.append({"topic": ["T"] * len(blocks), "body": [b"x"] * len(blocks), "properties": blocks})
    r = verify_path(tmp_path / "cl", kind="commitlog", commitlog_file_size=4096)
    assert r.errors == []
    found = [p for f in r.files for p in f.problems if p.check == "commitlog.skipped-pairs"]
    assert [(p.severity, p.count) for p in found] == [("warning", 3)]
    first = cl.read_columns(tmp_path / "cl", body=False).phy_offset[1]
    assert found[0].error.offset == first and found[0].error.field == "PROPERTIES"
    # and the keys the broker takes from them are read
    assert cl.read_columns(tmp_path / "cl", body=False)["keys"].tolist() == [f"k{i}" for i in range(5)]


def test_progress_counts_the_commitlog_bytes(tmp_path):
    """verify's progress: before each CommitLog file the bytes of the files before it, then all
    of them, against the files' sizes on disk."""
    from rmqlab.lab.generate import generate_store
    from rmqlab.lab.workload import Workload

    root = tmp_path / "s"
    generate_store(root, Workload(messages=400, seed=2), commitlog_file_size=1 << 15, hash_slot_num=16,
                   index_num=256)
    sizes = [p.stat().st_size for p in sorted((root / "commitlog").iterdir())]
    seen: list[tuple[int, int]] = []
    assert verify_path(root, progress=lambda done, total: seen.append((done, total))).ok
    assert seen == [(sum(sizes[:i]), sum(sizes)) for i in range(len(sizes) + 1)] and len(sizes) > 2
