"""Store.query_message (DefaultMessageStore.queryMessage: the records of the index walk's offsets,
sorted, those the broker cannot read left out) against a model that reads the files with plain
file reads, and the open files it keeps between calls (rmqlab/store/openfiles.py), which must
see every change to the store. The broker's own answers judge the same calls in
tests/brokers/test_rocketmq_store_query.py."""
from __future__ import annotations

import os
import struct
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.store.directory import Store

B = 1718000000000
SMALL = dict(hash_slot_num=4, index_num=400)
FILE_SIZE = 2048
KEYS = ["Aa", "BB", "k", "x"]   # "Aa" and "BB" share their Java hash: the walk returns both


def _write(root, keys, body_sizes, file_size=FILE_SIZE) -> Store:
    cols = {"topic": ["T"] * len(keys), "store_timestamp": [B + 10 * i for i in range(len(keys))],
            "body": [b"b" * n for n in body_sizes],
            "properties": [cl.properties_block({"KEYS": k}).decode() for k in keys]}
    with cl.CommitLogWriter(root / "commitlog", file_size) as w:
        w.append(cols)
    store = Store(root, commitlog_file_size=file_size, **SMALL)
    store.dispatch()
    return store


def _model(root, offsets: list[int], active_end: int) -> list[tuple[int, bytes]]:
    """queryMessage's reads of `offsets` (the walk's), from the files' bytes: sorted; an offset in
    no file, with fewer than 4 readable bytes, or whose TOTALSIZE is negative or runs past its
    file left out; the first offset also needs its whole record readable, MAGICCODE v1/v2 and room
    for the fixed fields (the damage drawn here spoils nothing else).
    Readable: the whole of every file but the last holding data, which ends at `active_end`."""
    files = {int(p.name): p.read_bytes() for p in (root / "commitlog").iterdir()}
    last = max(files)
    out = []
    for m, offset in enumerate(sorted(offsets)):
        start = max((s for s in files if s <= offset), default=None)
        if start is None or offset - start >= len(files[start]):
            continue
        data, pos = files[start], offset - start
        readable = active_end - start if start == last else len(data)
        if readable - pos < 4:
            continue
        size = struct.unpack_from(">i", data, pos)[0]
        if size < 0 or pos + size > len(data):
            continue
        magic = struct.unpack_from(">i", data, pos + 4)[0] if pos + 8 <= len(data) else None
        # (MessageDecoder needs more than the 91 bytes of a smallest record's fixed fields)
        if m == 0 and (pos + size > readable or magic not in (cl.MAGIC_V1, cl.MAGIC_V2) or size < cl.MIN_MESSAGE_SIZE):
            continue
        out.append((offset, data[pos:pos + size]))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(keys=st.lists(st.sampled_from(KEYS), min_size=15, max_size=40),
       body=st.lists(st.integers(0, 300), min_size=40, max_size=40),
       deleted=st.integers(0, 4), damaged=st.lists(st.tuples(st.integers(0, 39), st.sampled_from(
           [-1, 0, 4, 1 << 20, None])), max_size=8))
def test_query_message_reads_the_walks_offsets_as_the_model_does(tmp_path_factory, keys, body, deleted, damaged):
    root = tmp_path_factory.mktemp("store")
    store = _write(root, keys, body[:len(keys)])
    msgs = store.messages(body=False)
    active_end = int((msgs["phy_offset"] + msgs["total_size"]).max())
    last_start = max(int(p.name) for p in (root / "commitlog").iterdir())
    # the broker's expiry: the oldest files deleted (never the one being written)
    for p in sorted((root / "commitlog").iterdir())[:deleted]:
        if int(p.name) != last_start:
            p.unlink()
    # damage: a TOTALSIZE (or the MAGICCODE, None) overwritten in a file before the active one
    for row, value in damaged:
        if row >= len(msgs):
            continue
        offset = int(msgs["phy_offset"][row])
        path = root / "commitlog" / f"{offset - offset % FILE_SIZE:020d}"
        if int(path.name) == last_start or not path.exists():
            continue
        with open(path, "r+b") as fh:
            fh.seek(offset % FILE_SIZE + (4 if value is None else 0))
            fh.write(struct.pack(">i", 0x12345678 if value is None else value))
    reread = Store(root, commitlog_file_size=FILE_SIZE, **SMALL)
    for key in KEYS:
        with reread.index() as idx:
            walked = idx.query_offset("T", key).phy_offsets
        want = _model(root, walked, active_end)
        got = reread.query_message("T", key)
        assert got.phy_offsets == [o for o, _ in want], key
        assert [bytes(b) for b in got.buffers] == [r for _, r in want], key
        # the table decodes each record the broker returns: a damaged one is a typed error
        if all(_decodes(r) for _, r in want):
            assert reread.query_by_key("T", key)["phy_offset"].tolist() == got.phy_offsets, key
        else:
            with pytest.raises(FormatError):
                reread.query_by_key("T", key)


def _decodes(record: bytes) -> bool:
    try:
        cl.read_message(record, 0)
    except FormatError:
        return False
    return True


def test_the_newest_index_files_end_fields_come_back_with_the_records(tmp_path):
    store = _write(tmp_path, ["k", "x", "k"], [10, 10, 10])
    got = store.query_message("T", "k")
    with store.index() as idx:
        header = idx.last_file.header
    assert (got.index_last_update_timestamp, got.index_last_update_phyoffset) == \
        (header.end_timestamp, header.end_phy_offset)
    assert len(got.phy_offsets) == 2 and got.phy_offsets == sorted(got.phy_offsets)
    assert [cl.read_message(b, 0).phy_offset for b in got.buffers] == got.phy_offsets
    assert store.query_message("T", "none") == ([], [], 0, 0)


def _age(root) -> None:
    """Set every folder's times a second back, as a store's folders are when nothing writes."""
    then = time.time() - 1
    for folder in (root, root / "commitlog", root / "index"):
        os.utime(folder, (then, then))


def test_open_files_are_kept_while_nothing_changes_and_reopened_after_a_change(tmp_path):
    store = _write(tmp_path, ["k", "x"], [10, 10])
    _age(tmp_path)
    first = store._open_files.current()
    assert store._open_files.current() is first          # kept: no folder and no header changed
    assert len(store.query_message("T", "k").phy_offsets) == 1
    # more messages, written and dispatched by another Store of the same folder
    other = Store(tmp_path, commitlog_file_size=FILE_SIZE, **SMALL)
    with cl.CommitLogWriter(tmp_path / "commitlog", FILE_SIZE) as w:
        w.append({"topic": ["T"] * 30, "store_timestamp": [B + 1000 + i for i in range(30)],
                  "body": [b"b" * 200] * 30,
                  "properties": [cl.properties_block({"KEYS": "k"}).decode()] * 30})
    other.dispatch()
    _age(tmp_path)
    assert len(store.query_message("T", "k").phy_offsets) == 31   # the index header changed: reopened
    again = store._open_files.current()
    assert again is not first and store._open_files.current() is again
    # a file removed: its folder's time changes
    oldest = min((tmp_path / "commitlog").iterdir())
    oldest.unlink()
    assert store._open_files.current() is not again
    assert all(o >= int(oldest.name) + FILE_SIZE for o in store.query_message("T", "k").phy_offsets)


def test_a_store_without_folders_finds_nothing(tmp_path):
    store = Store(tmp_path / "none")
    assert store.query_message("T", "k") == ([], [], 0, 0)
    assert store.query_by_key("T", "k").empty


def test_a_file_added_in_the_tick_of_the_folders_stamp_is_seen(tmp_path):
    """A folder's time is the kernel's coarse clock: a file added in the same tick leaves it as it
    was (made so here by setting it back). Just after a change the names are compared too."""
    store = _write(tmp_path, ["k"] * 12, [300] * 12)
    before = store.query_message("T", "k").phy_offsets
    first = store._open_files.current()
    assert store._open_files.current() is first          # nothing changed: kept, though recent
    folder = tmp_path / "commitlog"
    stamp = os.stat(folder).st_mtime_ns
    gone = max(folder.iterdir())
    os.rename(gone, tmp_path / "moved")                  # the newest file leaves...
    os.utime(folder, ns=(stamp, stamp))                  # ...in the same tick
    assert store._open_files.current() is not first
    assert store.query_message("T", "k").phy_offsets == [o for o in before if o < int(gone.name)] != before


def test_records_at_keeps_the_offsets_whose_record_a_broker_reads_and_refuses_bad_arguments():
    """The C loop behind query_message on hand-made bytes: a record of TOTALSIZE 12 at 0, one
    that would run past the file at 12, a negative TOTALSIZE at 16, 3 readable bytes at 21."""
    import rmqlab._records as _records

    data = memoryview(struct.pack(">i", 12) + bytes(8) + struct.pack(">i", 40) + struct.pack(">i", -1) + bytes(4))
    offsets, views = [], []
    _records.records_at(data, [100, 112, 116, 121], 0, 4, 100, len(data), offsets, views)
    assert offsets == [100] and [bytes(v) for v in views] == [bytes(data[:12])]
    offsets, views = [], []
    _records.records_at(data, [100], 0, 1, 100, 3, offsets, views)   # fewer than 4 bytes readable
    assert offsets == []
    with pytest.raises(ValueError):
        _records.records_at(data, [100], 0, 2, 100, len(data), [], [])
    with pytest.raises(TypeError):
        _records.records_at(data, ["x"], 0, 1, 100, len(data), [], [])


@settings(max_examples=300, deadline=None)
@given(version=st.sampled_from([1, 2]), v6=st.sampled_from([(False, False), (True, False), (False, True)]),
       body=st.binary(max_size=40), props=st.sampled_from([None, {"KEYS": "k"}]),
       cut=st.integers(0, 140), field=st.sampled_from([None, "magic", "body_len", "topic_len", "props_len"]),
       value=st.integers(-40000, 40000), grow=st.integers(0, 20))
def test_records_at_reads_the_first_offset_as_the_decoder_model_does(version, v6, body, props, cut, field, value, grow):
    """records_at's rule for a query's first offset (lookMessageByOffset: TOTALSIZE within the
    readable bytes, and a record MessageDecoder decodes) against the pure-Python model
    (commitlog.records.decoder_reads) on records with a field overwritten, cut short or grown."""
    import rmqlab._records as _records
    from rmqlab.formats.commitlog import layout as lay
    from rmqlab.formats.commitlog.records import decoder_reads

    rec = bytearray(cl.encode_message(topic="T", body=body, properties=props, version=version,
                                      born_host="[::1]:1" if v6[0] else "127.0.0.1:1",
                                      store_host="[::1]:2" if v6[1] else "127.0.0.1:2"))
    flags = lay.HEAD.unpack_from(rec).sys_flag
    at_tail = (lay.HEAD.size + (16 if flags & cl.BORNHOST_V6_FLAG else 4) + 4 + 8
               + (16 if flags & cl.STOREHOSTADDRESS_V6_FLAG else 4) + 4)
    at_topic_len = at_tail + lay.TAIL.size + len(body)
    width = 1 if version == 1 else 2
    if field == "magic":
        struct.pack_into(">i", rec, 4, value)
    elif field == "body_len":
        struct.pack_into(">i", rec, at_tail + 12, value)
    elif field == "topic_len":
        bound = 1 << (8 * width - 1)
        struct.pack_into(">b" if width == 1 else ">h", rec, at_topic_len, max(-bound, min(bound - 1, value)))
    elif field == "props_len":
        struct.pack_into(">h", rec, at_topic_len + width + 1, max(-32768, min(32767, value)))
    size = max(4, len(rec) - cut + grow)   # TOTALSIZE, then the record cut to it or grown with zeros
    data = struct.pack(">i", size) + bytes(rec[4:size]).ljust(size - 4, b"\0") + bytes(8)
    for readable in (len(data), size, size - 1):
        offsets, views = [], []
        _records.records_at(memoryview(data), [500], 0, 1, 500, readable, offsets, views, True)
        expected = readable >= 4 and size <= readable and decoder_reads(data, 0, size)
        assert (offsets == [500]) == expected, (readable, size)
        offsets = []
        _records.records_at(memoryview(data), [500], 0, 1, 500, readable, offsets, [])   # not the first
        assert (offsets == [500]) == (readable >= 4)


def test_folder_stamps_are_the_link_count_and_time_fstat_gives(tmp_path):
    """rmqlab._filestamps.stamps against os.fstat, None for a missing descriptor."""
    import rmqlab._filestamps as _filestamps

    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        (tmp_path / "a").touch()
        st = os.fstat(fd)
        assert _filestamps.stamps([fd, -1]) == ((st.st_nlink, st.st_mtime_ns), None)
        with pytest.raises(TypeError):
            _filestamps.stamps((fd,))
    finally:
        os.close(fd)
