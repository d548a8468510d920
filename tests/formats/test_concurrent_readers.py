"""Readers beside a writer: one process appends to a CommitLog and puts keys into an IndexFile
(the broker's order: entry, then slot, then header) while this process opens both read-only
again and again. Every read must be a consistent prefix of what the writer writes: each
complete record decodes to exactly the message the writer made (the truth is the same
generating function, run here), index entries up to the header's index_count are exactly the
ones put, and queries return only offsets those entries hold. The only thing a read may report
beyond the prefix is the write in flight, at its very end (a torn tail); never an exception,
never garbage.
"""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from rmqlab.formats import commitlog as cl
from rmqlab.formats.indexfile import IndexFile, time_diff_seconds
from rmqlab.jvm.hashcode import index_hash
from rmqlab.jvm.longs import LONG_MAX


# Shared by the writer process (its source is part of WRITER) and the checks.
def message(i):
    """Message i, deterministic."""
    return {"topic": "T", "queue_id": i % 4, "store_timestamp": 1718000000000 + 10 * i,
            "body": (f"body-{i}-" * (1 + i % 9)).encode(), "properties": f"KEYS\x01k{i}\x02"}


FILE_SIZE = 4096                 # CommitLog files: a roll-over every ~15 messages
HASH_SLOT_NUM, INDEX_NUM = 16, 4096
MAX_MESSAGES = INDEX_NUM - 1
# The writer runs until the reader has checked this many reads of each file while it wrote, and
# it has written this many messages; it never gets more than AHEAD messages per read in front,
# so a slow machine slows both sides alike instead of ending the run before the reads happen.
MIN_READS, MIN_WRITTEN, AHEAD = 10, 200, 50
HANG_GUARD_SECONDS = 300         # only stops a hung run; no assertion depends on the time

WRITER = inspect.getsource(message) + r"""
import os, sys, time
from pathlib import Path
from rmqlab.formats.commitlog import CommitLogWriter
from rmqlab.formats.indexfile import IndexFile

root, min_reads, min_written, limit, ahead = Path(sys.argv[1]), *map(int, sys.argv[2:6])
reads_file = root / "reads"

def reads():
    try:
        return int(reads_file.read_text() or 0)
    except (FileNotFoundError, ValueError):
        return 0

idx = IndexFile.create(root / "20240610061320000", 16, 4096)
w = CommitLogWriter(root / "commitlog", file_size=4096)
print("ready", flush=True)
i = 0
while i < limit and not (i >= min_written and reads() >= min_reads):
    while i >= (reads() + 1) * ahead:
        time.sleep(0.001)
    n = min(1 + i % 3, limit - i)
    rows = [message(j) for j in range(i, i + n)]
    w.append({k: [r[k] for r in rows] for k in rows[0]})
    for j, r in zip(range(i, i + n), rows):
        idx.put_key(f"T#k{j}", 1000 * j, r["store_timestamp"])
    i += n
    time.sleep(0.0003)
idx.close()
print(i, flush=True)
"""


def _start_writer(root: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2]) + os.pathsep + env.get("PYTHONPATH", "")
    args = [str(root), str(MIN_READS), str(MIN_WRITTEN), str(MAX_MESSAGES), str(AHEAD)]
    p = subprocess.Popen([sys.executable, "-c", WRITER, *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    assert line.strip() == "ready", p.stderr.read()
    return p


def _tell_reads(root: Path, reads: int) -> None:
    tmp = root / "reads.tmp"
    tmp.write_text(str(reads))
    os.replace(tmp, root / "reads")       # the writer reads a whole number, never half of one


class CommitLogChecker:
    """One read of the CommitLog folder against the writer's messages."""

    def __init__(self):
        self.last_count = 0
        self.reads = 0
        self.end_reports = {"torn-tail": 0, "damage": 0}
        self.reasons: list[str] = []

    def check(self, folder: Path) -> int:
        df = cl.read_columns(folder, on_error="report")
        rep = df.attrs["report"]
        n = len(df)
        assert n >= self.last_count, "a later read saw fewer messages"
        want = [message(i) for i in range(n)]
        assert df["body"].tolist() == [m["body"] for m in want]
        assert df["keys"].tolist() == [f"k{i}" for i in range(n)]
        assert df["store_timestamp"].tolist() == [m["store_timestamp"] for m in want]
        assert df["queue_id"].tolist() == [m["queue_id"] for m in want]
        # offsets: back to back, or the next file after a roll-over; queue offsets per queue
        phy = df["phy_offset"].to_numpy(np.int64)
        nxt = phy[:-1] + df["total_size"].to_numpy(np.int64)[:-1]
        rolled = phy[1:] % FILE_SIZE == 0
        assert ((phy[1:] == nxt) | (rolled & (phy[1:] > nxt))).all()
        assert (df["queue_offset"].to_numpy() == np.arange(n) // 4).all()
        # anything beyond the prefix is the write in flight, reported at its very end
        extra = list(rep.damage) + ([rep.torn_tail] if rep.torn_tail else [])
        assert len(extra) <= 1, [str(d) for d in extra]
        for d in extra:
            assert d.phy_offset == rep.end_phy_offset and d.path == rep.files[-1], str(d)
            self.end_reports[d.kind] += 1
            self.reasons.append(f"{d.field}: {d.reason}")
        self.last_count = n
        self.reads += 1
        return n


class IndexChecker:
    """One read-only open of the index file against the writer's puts."""

    def __init__(self):
        self.hashes = np.array([index_hash(f"T#k{i}") for i in range(MAX_MESSAGES)], np.int64)
        slot = self.hashes % HASH_SLOT_NUM
        self.prev = np.zeros(MAX_MESSAGES, np.int64)   # entry i+1's prev_index: the previous put to its slot
        last: dict[int, int] = {}
        for i, s in enumerate(slot):
            self.prev[i] = last.get(int(s), 0)
            last[int(s)] = i + 1
        self.last_keys = 0
        self.reads = 0
        self.rng = np.random.default_rng(0)

    def check(self, path: Path) -> int:
        with IndexFile.open(path, HASH_SLOT_NUM, INDEX_NUM, strict=False) as f:
            h = f.header
            keys = h.keys
            assert keys >= self.last_keys
            e = f.used_entries.copy()
            if keys:
                assert h.begin_timestamp == message(0)["store_timestamp"]
                base = h.begin_timestamp
                i = np.arange(keys)
                assert (e["key_hash"] == self.hashes[:keys]).all()
                assert (e["phy_offset"] == 1000 * i).all()
                assert (e["prev_index"] == self.prev[:keys]).all()
                want_td = [time_diff_seconds(message(j)["store_timestamp"], base) if j else 0 for j in range(keys)]
                assert e["time_diff"].tolist() == want_td
                for j in self.rng.integers(0, keys, size=5):
                    got = f.select_phy_offsets(f"T#k{j}", 64, 0, LONG_MAX)
                    # entries up to index_count, and the one being written (its slot may already
                    # point at it: entry, then slot, then header)
                    same = np.flatnonzero(self.hashes[:keys + 1] == self.hashes[j])
                    assert len(got) <= 64 and set(got) <= set((1000 * same).tolist()), (j, got)
        self.last_keys = keys
        self.reads += 1
        return keys


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """The writer process and this process's reads, side by side until the writer has seen
    MIN_READS reads of both files. Every read is checked as it happens (an assertion here fails
    the tests below)."""
    root = tmp_path_factory.mktemp("concurrent")
    writer = _start_writer(root)
    logs, index = CommitLogChecker(), IndexChecker()
    try:
        hang_guard = time.monotonic() + HANG_GUARD_SECONDS
        while writer.poll() is None:
            assert time.monotonic() < hang_guard, "the writer neither finished nor failed"
            if (root / "commitlog").is_dir() and any((root / "commitlog").iterdir()):
                logs.check(root / "commitlog")
            index.check(root / "20240610061320000")
            _tell_reads(root, min(logs.reads, index.reads))
        out, err = writer.communicate(timeout=HANG_GUARD_SECONDS)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == 0, err
    return root, logs, index, int(out.split()[-1])


def test_readers_beside_a_writer_see_a_consistent_prefix(run):
    root, logs, index, written = run
    # the final reads see everything, cleanly
    assert logs.check(root / "commitlog") == written and index.check(root / "20240610061320000") == written
    assert cl.read_columns(root / "commitlog").attrs["report"].ok
    assert logs.reads >= MIN_READS and index.reads >= MIN_READS, (logs.reads, index.reads)
    assert MIN_WRITTEN <= written < MAX_MESSAGES


def test_the_end_of_a_prefix_read_beside_a_writer_is_not_called_damage(run):
    # the walk's stop is the end of the prefix, even when the writer has appended since
    _, logs, _, _ = run
    assert logs.end_reports["damage"] == 0, (logs.end_reports, sorted(set(logs.reasons))[:3])


# ---------------------------------------------------------------- the race, made deterministic

def _half_written(record: bytes, visible: int) -> bytearray:
    """A last file with one record of which only the first `visible` bytes reached the page
    cache, followed by bytes a writer already put beyond it."""
    buf = bytearray(1024)
    buf[:visible] = record[:visible]
    buf[len(record):len(record) + 8] = b"\x11" * 8
    return buf


def _stop(buf):
    from rmqlab.formats.commitlog.files import StoreFile
    from rmqlab.formats.commitlog.records import check_head, classify_stop

    f = StoreFile(Path("00000000000000000000"), 0, len(buf))
    code, fld, reason = check_head(buf, 0, len(buf))
    return code, fld, reason, lambda: classify_stop(buf, f, 0, code, fld, reason, True, None)


def test_a_record_that_changes_while_it_is_classified_is_the_write_in_flight(monkeypatch):
    from rmqlab.formats.commitlog import encode_message, records

    record = encode_message(**{k: v for k, v in message(0).items() if k != "properties"}, phy_offset=0)
    buf = _half_written(record, 4)                # TOTALSIZE seen, MAGICCODE still zero
    code, fld, _, classify = _stop(buf)
    assert (code, fld) == (cl.STOP_MAGIC, "MAGICCODE")
    zero = records._tail_is_zero

    def writer_finishes(b, start):               # the writer's copy completes mid-classification
        buf[:len(record)] = record
        return zero(b, start)

    monkeypatch.setattr(records, "_tail_is_zero", writer_finishes)
    d = classify()
    assert d.kind == "torn-tail" and "write in flight" in d.reason


def test_the_same_bytes_read_twice_are_still_damage():
    from rmqlab.formats.commitlog import encode_message

    record = encode_message(**{k: v for k, v in message(0).items() if k != "properties"}, phy_offset=0)
    d = _stop(_half_written(record, 4))[3]()
    assert d.kind == "damage" and d.field == "MAGICCODE"


def _bodylen_off_by_one(record: bytes) -> bytearray:
    """A last file holding `record` with its BODYLEN one too large (84: the field after the
    fixed 4-byte and 8-byte fields of a v1 IPv4 record), so the decode's field checks fail,
    and bytes a writer already put beyond it (no torn tail in zeros)."""
    buf = _half_written(record, len(record))
    buf[84:88] = (int.from_bytes(record[84:88], "big") + 1).to_bytes(4, "big")
    return buf


def _scan(buf, last: bool):
    from rmqlab.formats.commitlog.columns import scan_file
    from rmqlab.formats.commitlog.files import StoreFile
    from rmqlab.formats.commitlog.records import ReadReport

    f = StoreFile(Path("00000000000000000000"), 0, len(buf))
    return scan_file(buf, f, last=last, check_crc=False, report=ReadReport(), on_error="report")[3]


@pytest.mark.parametrize("last", [True, False])
def test_a_record_whose_fields_change_while_they_are_checked_is_the_write_in_flight(monkeypatch, last):
    # the decode finds BODYLEN wrong; the writer's copy completes before the check that words
    # the damage reads the record again (a KeyError once, when that check found nothing wrong)
    from rmqlab.formats.commitlog import columns, encode_message

    record = encode_message(**{k: v for k, v in message(0).items() if k != "properties"}, phy_offset=0)
    buf = _bodylen_off_by_one(record)
    real = columns._records

    class WriterFinishes:
        def __getattr__(self, name):
            return getattr(real, name)

        def check_record(self, U, p):
            buf[:len(record)] = record
            return real.check_record(np.frombuffer(buf, np.uint8), p)

    monkeypatch.setattr(columns, "_records", WriterFinishes())
    d = _scan(buf, last)
    assert d.offset == 0 and "write in flight" in d.reason
    assert d.kind == ("torn-tail" if last else "damage")


def test_a_bodylen_that_stays_wrong_is_damage():
    from rmqlab.formats.commitlog import encode_message

    record = encode_message(**{k: v for k, v in message(0).items() if k != "properties"}, phy_offset=0)
    d = _scan(_bodylen_off_by_one(record), True)
    # BODYLEN one too large moves TOPICLEN by a byte: the check that fails is that one
    assert d.kind == "damage" and d.field == "TOPICLEN" and "write in flight" not in d.reason, str(d)
