"""A DLedger CommitLog (rmqlab.formats.dledger, and the CommitLog readers over its data folder)
against a model of what the broker writes (tests/support/dledger_model.py, a second reading of
DLedger's and DLedgerCommitLog's source): the walk against its pure-Python model, the records
read from the entries against the same records read from a plain CommitLog, and damage to any
head field found where recovery would stop. The real brokers (4.5.2, 4.9.7, 5.3.3) judge the
reader in tests/brokers/test_rocketmq_brokers.py."""
from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dledger_model import HEAD, frame, write_ledger
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.formats import dledger as dl
from rmqlab.formats.storepaths import StorePaths
from tests.formats.commitlog.test_onepass import records

FILE_SIZE = 4096
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_the_layouts_are_the_javas():
    """DLedgerEntry.BODY_OFFSET 48, HEADER_SIZE 44, DLedgerMmapFileStore.INDEX_UNIT_SIZE 32, and
    the fields in DLedgerEntryCoder's order (the model's struct formats, from the source)."""
    assert (dl.ENTRY.itemsize, dl.BODY_OFFSET, dl.HEADER_SIZE, dl.INDEX_UNIT.itemsize) == (HEAD.size, 48, 44, 32)
    one = np.zeros(1, dl.ENTRY)
    one[0] = (1, 2, 3, 4, 5, 6, 7, 8, 9)
    assert HEAD.unpack(one.tobytes()) == (1, 2, 3, 4, 5, 6, 7, 8, 9)
    unit = np.zeros(1, dl.INDEX_UNIT)
    unit[0] = (1, 2, 3, 4, 5)
    assert struct.unpack(">iqiqq", unit.tobytes()) == (1, 2, 3, 4, 5)


@st.composite
def ledger_files(draw) -> bytes:
    """One data file: framed records, then a blank, zeros, a cut, or bytes of any kind."""
    recs = [r for r in draw(records(damage=False)) if len(r) < 1000]
    data = bytearray(frame(recs, 1 << 20).files[0].rstrip(b"\0") if recs else b"")
    tail = draw(st.sampled_from(["blank", "zeros", "cut", "junk", "none"]))
    if tail == "blank":
        data += struct.pack(">ii", -1, draw(st.sampled_from([8, 9, 100])))
    elif tail == "zeros":
        data += bytes(draw(st.integers(0, 60)))
    elif tail == "cut" and data:
        data = data[:draw(st.integers(0, len(data)))]
    elif tail == "junk":
        data += draw(st.binary(min_size=1, max_size=60))
    if data and draw(st.integers(0, 3)) == 0:     # one byte anywhere changed
        at = draw(st.integers(0, len(data) - 1))
        data[at] ^= draw(st.integers(1, 255))
    return bytes(data)


@SETTINGS
@given(ledger_files(), st.integers(-1, 5))
def test_the_walk_equals_its_model(data, limit):
    pos, stop, code = dl.walk_entries(data, 0, len(data), limit)
    model = dl.walk_entries_py(data, 0, len(data), limit)
    assert (pos.tolist(), stop, code) == model
    assert code in dl.ENTRY_STOPS


def _plain(recs: list[bytes], folder: Path, *, sealed: bool = False) -> Path:
    """The same records as a plain CommitLog (one after another, the blank at a file's end;
    `sealed`: the last file too, as DLedgerCommitLog.setRecoverPosition seals it)."""
    folder.mkdir(parents=True)
    files, cur, start = {}, bytearray(), 0
    for r in recs:
        if len(cur) + len(r) + 8 > FILE_SIZE:
            cur += cl.blank_record(FILE_SIZE - len(cur))
            files[start], cur, start = bytes(cur.ljust(FILE_SIZE, b"\0")), bytearray(), start + FILE_SIZE
        cur += r
    if sealed:
        cur += cl.blank_record(FILE_SIZE - len(cur))
    files[start] = bytes(cur.ljust(FILE_SIZE, b"\0"))
    for s, b in files.items():
        (folder / f"{s:020d}").write_bytes(b)
    return folder


@SETTINGS
@given(st.lists(records(damage=False), min_size=1, max_size=4).map(
    lambda rs: [r for x in rs for r in x if len(r) < 1500]))
def test_a_ledger_reads_as_the_plain_commitlog_of_its_records(recs):
    """read_columns, read_column_parts, read_at and max_offset of a DLedger data folder give the
    rows of the same records in a plain CommitLog, PHYSICALOFFSET aside (the broker rewrites it to
    the entry's position + 48, where each record is read); a store root with only a dledger-n0
    folder reads its CommitLog there; the ledger passes every check."""
    root = Path(tempfile.mkdtemp())
    framed = frame(recs, FILE_SIZE)
    led = write_ledger(root / "dledger-n0", framed)
    data = led / "data"
    ours = cl.read_columns(data, check_crc=True)
    plain = cl.read_columns(_plain(recs, root / "plain"), check_crc=True)
    assert ours["phy_offset"].tolist() == framed.record_offsets
    pd.testing.assert_frame_equal(ours.drop(columns="phy_offset"), plain.drop(columns="phy_offset"))
    report = ours.attrs["report"]
    assert report.ok and report.torn_tail is None
    last = framed.entries[-1] if framed.entries else None
    assert report.end_phy_offset == (last[2] + last[3] if last else 0) == (cl.max_offset(data) or 0)
    parts = list(cl.read_column_parts(data, part_messages=3))
    assert sum(map(len, parts)) == len(ours)
    if len(ours):
        pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), cl.read_columns(data))
        pick = np.array(framed.record_offsets)[::-1]
        assert cl.read_at(data, pick)["phy_offset"].tolist() == pick.tolist()
    assert StorePaths(root).commitlog == data
    ledger = dl.Ledger(led, file_size=FILE_SIZE)
    assert ledger.check() == []
    assert ledger.entries()["offset"].tolist() == [e[2] for e in framed.entries]
    assert ledger.summary()["committed_pos"] == (last[2] + last[3] if last else -1)   # -1: nothing committed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records(damage=False), min_size=2, max_size=4).map(
    lambda rs: [r for x in rs for r in x if len(r) < 1500]).filter(lambda rs: len(rs) >= 2), st.data())
def test_a_commitlog_switched_to_dledger_reads_its_plain_files_then_the_ledger(recs, data):
    """A plain CommitLog switched to DLedger (DLedgerCommitLog.setRecoverPosition: the last plain
    file sealed with a blank, the ledger's first file at its end, dividedCommitlogOffset): the
    store's CommitLog reads the plain files' records, then the ledger's, each at its own offset,
    and verify finds nothing wrong with its files. A ledger whose first file starts inside the
    plain files is a FormatError naming it."""
    k = data.draw(st.integers(1, len(recs) - 1))
    root = Path(tempfile.mkdtemp())
    plain = _plain(recs[:k], root / "commitlog", sealed=True)
    divided = max(int(f.name) for f in plain.iterdir()) + FILE_SIZE
    framed = frame(recs[k:], FILE_SIZE, base=divided)
    write_ledger(root / "dledger-n0", framed)
    got = cl.read_columns(StorePaths(root).commitlog, check_crc=True)
    before = cl.read_columns(plain, check_crc=True)
    after = cl.read_columns(root / "dledger-n0" / "data", check_crc=True)
    assert got["phy_offset"].tolist() == before["phy_offset"].tolist() + framed.record_offsets
    assert len(before) == k and len(after) == len(recs) - k
    everything = cl.read_columns(_plain(recs, root / "all"), check_crc=True)
    pd.testing.assert_frame_equal(got.drop(columns="phy_offset"), everything.drop(columns="phy_offset"))
    assert got.attrs["report"].ok
    first = root / "dledger-n0" / "data" / f"{divided:020d}"
    first.rename(first.with_name(f"{divided - FILE_SIZE:020d}"))
    with pytest.raises(FormatError, match="dividedCommitlogOffset") as e:
        _ = StorePaths(root).commitlog
    assert Path(e.value.path).name == f"{divided - FILE_SIZE:020d}"


#: the head fields recovery checks at the entry itself, and where they are
FIELDS = {"magic": 0, "size": 4, "pos": 24, "bodySize": 44}


@SETTINGS
@given(st.data())
def test_a_damaged_head_stops_the_read_where_recovery_stops(data):
    """A head field of one entry rewritten (in a copy; magic never to the blank's -1, which
    recovery takes as a file's end): the read ends at that entry, naming it (damage, or a torn
    tail in the last file); Ledger.check reports it; the entries before it are read whole."""
    recs = [r for r in data.draw(records(damage=False)) if len(r) < 1500] or [cl.encode_message(topic="T")]
    framed = frame(recs * 3, FILE_SIZE, term=5)
    led = write_ledger(Path(tempfile.mkdtemp()) / "dledger-n0", framed)
    k = data.draw(st.integers(0, len(framed.entries) - 1))
    field = data.draw(st.sampled_from(sorted(FIELDS)))
    _, _, pos, _ = framed.entries[k]
    start = pos - pos % FILE_SIZE
    path = led / "data" / f"{start:020d}"
    raw = bytearray(path.read_bytes())
    at, width = pos - start + FIELDS[field], 8 if field == "pos" else 4
    old = int.from_bytes(raw[at:at + width], "big", signed=True)
    new = data.draw(st.integers(-2**(8 * width - 1), 2**(8 * width - 1) - 1).filter(
        lambda v: v != old and not (field == "magic" and v == dl.BLANK_MAGIC)))
    raw[at:at + width] = new.to_bytes(width, "big", signed=True)
    path.write_bytes(bytes(raw))
    df = cl.read_columns(led / "data", on_error="report")
    r = df.attrs["report"]
    found = r.damage + ([r.torn_tail] if r.torn_tail else [])
    assert found and (found[0].path, found[0].offset) == (str(path), pos - start), (field, new, [str(d) for d in found])
    assert df["phy_offset"].tolist()[:k] == framed.record_offsets[:k]
    assert framed.record_offsets[k] not in df["phy_offset"].tolist()
    problems = dl.Ledger(led, file_size=FILE_SIZE).check()
    assert any(p.path == str(path) and p.offset == pos - start for p in problems), (field, new, problems)


def test_a_term_that_decreases_and_an_index_that_skips_are_damage(tmp_path):
    """The two checks recovery makes across entries (entryIndex == last + 1, term >= last term),
    each on the second entry of a file that is not the last (so the damage is raised, not a
    torn tail), naming the field and the entry's position."""
    recs = [cl.encode_message(topic="T", body=b"x" * 1500)] * 4      # two entries a file
    for field, at, value, word in (("index", 8, 7, "follow one another"), ("term", 16, 0, "never decrease")):
        framed = frame(recs, FILE_SIZE, term=3)
        assert len(framed.files) == 2
        led = write_ledger(tmp_path / field / "dledger-n0", framed)
        p = led / "data" / f"{0:020d}"
        raw = bytearray(p.read_bytes())
        struct.pack_into(">q", raw, framed.entries[1][2] + at, value)
        p.write_bytes(bytes(raw))
        with pytest.raises(FormatError, match=word) as e:
            cl.read_columns(led / "data")
        assert (e.value.field, e.value.offset) == (field, framed.entries[1][2])
        assert [(q.field, q.offset) for q in dl.Ledger(led, file_size=FILE_SIZE).check()][:1] == [
            (field, framed.entries[1][2])]


def test_the_checkpoint_the_term_and_the_index_are_checked(tmp_path):
    recs = [cl.encode_message(topic="T", body=b"x")] * 4
    framed = frame(recs, FILE_SIZE, term=2)
    led = write_ledger(tmp_path / "dledger-n0", framed, committed=9, term=1)
    ledger = dl.Ledger(led, file_size=FILE_SIZE)
    fields = {p.field for p in ledger.check()}
    assert fields == {"committedIndex", "currTerm"}
    s = ledger.summary()
    assert (s["ledger_end_index"], s["committed_index"], s["current_term"], s["vote_leader"]) == (3, 3, 1, "n0")
    # MemberState.loadTerm: an empty voteLeader (a node that voted for nobody) reads as null, and
    # so does none at all; the 5.3.3 group's third node left "voteLeader=" so, and DLedger said null
    for text, vote in (("voteLeader=\ncurrTerm=2\n", None), ("currTerm=2\n", None), ("voteLeader=n1\n", "n1")):
        (led / "currterm").write_text(text)
        assert dl.Ledger(led, file_size=FILE_SIZE).summary()["vote_leader"] == vote
    units = led / "index" / f"{0:020d}"
    raw = bytearray(units.read_bytes())
    struct.pack_into(">i", raw, 2 * 32 + 12, 99)      # unit 2's size
    units.write_bytes(bytes(raw))
    bad = [p for p in dl.Ledger(led, file_size=FILE_SIZE).check() if p.field == "size"]
    assert bad and bad[0].offset == 64 and not bad[0].fatal
    assert dl.read_index(led / "index")["index"].tolist() == [0, 1, 2, 3]


def test_read_properties_follows_properties_load(tmp_path):
    """java.util.Properties.load's rules on the lines DLedger writes and a hand-edited file:
    comments, blank lines, ':' and ' ' as separators, blanks around the separator."""
    p = tmp_path / "checkpoint"
    p.write_text("# a comment\n! another\n\ncommittedIndex=12\n  endIndex : 13\nvoteLeader n0\nempty=\n")
    assert dl.read_properties(p) == {"committedIndex": "12", "endIndex": "13", "voteLeader": "n0", "empty": ""}
    assert dl.read_properties(tmp_path / "missing") is None
    p.write_text("committedIndex=twelve\n")
    with pytest.raises(FormatError) as e:
        dl.Ledger(tmp_path).checkpoint()
    assert e.value.field == "committedIndex"


def test_verify_tells_a_ledger_and_judges_it(tmp_path):
    """``rmqlab verify`` takes a dledger-<id> folder as a ledger and its data folder as a
    CommitLog; a healthy ledger verifies clean, also as a store's; an entry whose bodySize
    disagrees with its size is an error of the ledger (recovery truncates there) and of the
    CommitLog walk, at that entry."""
    from rmqlab.verify import verify_path
    from rmqlab.verify.kind import detect_kind

    recs = [cl.encode_message(topic="T", body=b"x" * 1500, properties={"KEYS": "k"})] * 4
    framed = frame(recs, FILE_SIZE)
    led = write_ledger(tmp_path / "store" / "dledger-n0", framed)
    assert (detect_kind(led), detect_kind(led / "data"), detect_kind(led / "data" / f"{0:020d}")) == (
        "dledger", "commitlog", "commitlog")
    r = verify_path(led, commitlog_file_size=FILE_SIZE)
    assert r.ok and r.kind == "dledger" and r.files[0].counts["entries"] == 4
    whole = verify_path(tmp_path / "store", commitlog_file_size=FILE_SIZE)
    assert whole.errors == [] and whole.cross_counts["messages"] == 4
    p = led / "data" / f"{0:020d}"
    raw = bytearray(p.read_bytes())
    struct.pack_into(">i", raw, framed.entries[1][2] + 44, 7)        # entry 1's bodySize
    p.write_bytes(bytes(raw))
    r = verify_path(led, commitlog_file_size=FILE_SIZE)
    where = {(e.check, e.error.path, e.error.offset, e.error.field) for e in r.errors}
    assert ("dledger.entry", str(p), framed.entries[1][2], "bodySize") in where
    assert any(c.startswith("commitlog.") and (path, off) == (str(p), framed.entries[1][2])
               for c, path, off, _ in where)


def _ledger_store(tmp_path: Path, n: int = 6) -> tuple[Path, Path, list[tuple[int, int, int, int]]]:
    """A store whose CommitLog is a one-file ledger of `n` keyed messages to T/0 (queue offsets 0..n-1,
    store times 1000 ms apart), no queues, no index, an abort file: (store, ledger, entries)."""
    recs = [cl.encode_message(topic="T", body=b"x" * k, queue_offset=k, store_timestamp=1_700_000_000_000 + 1000 * k,
                              properties={"KEYS": f"k{k}", "UNIQ_KEY": f"U{k:030d}"}) for k in range(n)]
    framed = frame(recs, FILE_SIZE)
    store = tmp_path / "store"
    led = write_ledger(store / "dledger-n0", framed)
    (store / "abort").write_bytes(b"")
    return store, led, framed.entries


def _digest(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_recover_rebuilds_the_queues_and_index_of_a_ledger_and_leaves_the_ledger(tmp_path):
    """`rmqlab store recover` on a DLedger store: the entries are the messages (DLedger's
    recovery keeps every whole entry); their ConsumeQueue units and index keys are written, as a
    dispatch of the records framed as a plain CommitLog writes them, and not a byte of the
    ledger changes. The store then verifies clean and answers its key queries."""
    from rmqlab.store.directory import Store
    from rmqlab.store.recover import recover_store
    from rmqlab.verify import verify_path

    store, led, entries = _ledger_store(tmp_path)
    ledger_before = _digest(led)
    r = recover_store(store, commitlog_file_size=FILE_SIZE, hash_slot_num=16, index_num=64)
    assert (r.messages, r.cq_units_added) == (6, 6)
    assert _digest(led) == ledger_before and not (store / "abort").exists()
    units = np.fromfile(store / "consumequeue" / "T" / "0" / f"{0:020d}", np.dtype([("o", ">i8"), ("s", ">i4"),
                                                                                       ("t", ">i8")]))
    units = units[units["s"] > 0]
    assert units["o"].tolist() == [pos + HEAD.size for _, _, pos, _ in entries]
    assert units["s"].tolist() == [size - HEAD.size for _, _, _, size in entries]
    report = verify_path(store, commitlog_file_size=FILE_SIZE, hash_slot_num=16, index_num=64)
    assert report.errors == [], report.summary()
    s = Store(store, hash_slot_num=16, index_num=64, commitlog_file_size=FILE_SIZE)
    assert s.query_by_key("T", "k3", mode="broker")["phy_offset"].tolist() == [entries[3][2] + HEAD.size]
    assert not recover_store(store, commitlog_file_size=FILE_SIZE, hash_slot_num=16, index_num=64).changed


def test_recover_leaves_a_torn_entry_to_dledger_and_refuses_a_ledger_dledger_refuses(tmp_path):
    """A torn last entry (its record cut short) is DLedger's recovery's to truncate, with the
    index units after it: recover writes the queues of the whole entries before it and not a
    byte of the ledger. A data file of the wrong length (DLedger's load refuses the ledger) makes
    recover refuse before any write, naming the file and the field."""
    from rmqlab.store.recover import UnrecoverableError, recover_store

    store, led, entries = _ledger_store(tmp_path)
    data = led / "data" / f"{0:020d}"
    raw = bytearray(data.read_bytes())
    _, _, pos, size = entries[-1]
    raw[pos + size // 2:pos + size] = bytes(size - size // 2)
    data.write_bytes(bytes(raw))
    ledger_before = _digest(led)
    r = recover_store(store, commitlog_file_size=FILE_SIZE, hash_slot_num=16, index_num=64)
    assert r.messages == 5 and _digest(led) == ledger_before
    assert [a.kind for a in r.actions if a.kind.startswith("dledger")] == ["dledger-torn-tail-left"]

    store2, led2, _ = _ledger_store(tmp_path / "b")
    with open(led2 / "data" / f"{0:020d}", "ab") as fh:
        fh.write(b"\0" * 7)
    before = _digest(store2)
    with pytest.raises(UnrecoverableError) as e:
        recover_store(store2, commitlog_file_size=FILE_SIZE, hash_slot_num=16, index_num=64)
    assert (e.value.path, e.value.field) == (str(led2 / "data" / f"{0:020d}"), "file length")
    assert "(dledger.load)" in e.value.reason
    assert _digest(store2) == before


def test_the_restart_model_refuses_a_ledger_and_writes_nothing(tmp_path):
    """The broker-restart model (CommitLog.recoverAbnormally) is not DLedgerCommitLog's restart:
    it refuses a DLedger store, naming its ledger, before any write."""
    from rmqlab.store.recover import UnrecoverableError, broker_restart
    from tests.store.test_reput import tree_digest

    framed = frame([cl.encode_message(topic="T", body=b"x")] * 3, FILE_SIZE)
    led = write_ledger(tmp_path / "store" / "dledger-n0", framed)
    (tmp_path / "store" / "abort").write_bytes(b"")
    before = tree_digest(tmp_path / "store")
    with pytest.raises(UnrecoverableError) as e:
        broker_restart(tmp_path / "store", commitlog_file_size=FILE_SIZE)
    assert (e.value.path, e.value.field) == (str(led), "dledger")
    assert tree_digest(tmp_path / "store") == before


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records(damage=False), min_size=1, max_size=4).map(
    lambda rs: [r for x in rs for r in x if len(r) < 1500]).filter(bool), st.data())
def test_dispatch_stops_at_the_committed_entry(recs, data):
    """DLedgerCommitLog.getMaxOffset: the broker dispatches a ledger up to its committed position
    (the first data file's start, 0, when nothing is committed), so a store whose checkpoint
    commits entry c (a leader stopped after its followers holds entries no majority
    acknowledged) gets exactly the units the whole ledger's dispatch gives the records of
    entries 0..c."""
    from rmqlab.store.directory import Store

    framed = frame(recs, FILE_SIZE)
    last = len(framed.entries) - 1
    committed = data.draw(st.integers(-1, last))
    opts = dict(hash_slot_num=16, index_num=64, commitlog_file_size=FILE_SIZE, consume_queue_file_size=600)
    units = {}
    for name, c in (("whole", last), ("cut", committed)):
        root = Path(tempfile.mkdtemp())
        write_ledger(root / "dledger-n0", framed, committed=c)
        Store(root, **opts).dispatch()
        raw = b"".join(p.read_bytes() for p in sorted((root / "consumequeue").rglob("*")) if p.is_file()) \
            if (root / "consumequeue").is_dir() else b""
        got = np.frombuffer(raw, dtype=np.dtype([("offset", ">i8"), ("size", ">i4"), ("tags", ">i8")]))
        units[name] = sorted((int(u["offset"]), int(u["size"])) for u in got if u["size"] > 0)
    end = framed.entries[committed][2] + framed.entries[committed][3] if committed >= 0 else 0
    assert units["cut"] == [u for u in units["whole"] if u[0] + u[1] <= end]
    assert committed < last or units["cut"] == units["whole"]
