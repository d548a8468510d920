"""One message read by its file path and position, against the standard-library walk of a real
4.2.0 broker's CommitLog (tests/support/commitlog_stdlib.py): the mapped-file path of
read_message, which the decode tests reach only through buffers."""
from __future__ import annotations

import struct

from commitlog_stdlib import read_commitlog
from oracles import require_real_data

from rmqlab.formats.commitlog import columns

STORE = "rocketmq/store-ericpangopher-4.2.0"


def test_read_message_by_path_equals_the_stdlib_walk() -> None:
    folder = require_real_data(STORE) / "commitlog"
    truth = read_commitlog(folder)
    assert len(truth) > 3
    for want in (truth[0], truth[len(truth) // 2], truth[-1]):
        # the file holding it: the last whose name (its start offset) is not past it
        path = max((f for f in folder.iterdir() if int(f.name) <= want["phy_offset"]),
                   key=lambda f: int(f.name))
        got = columns.read_message(path, want["phy_offset"] - int(path.name))
        assert (got.phy_offset, got.topic, got.queue_id, got.queue_offset, got.body, got.store_timestamp,
                got.total_size) == (want["phy_offset"], want["topic"], want["queue_id"], want["queue_offset"],
                                    want["body"], want["store_timestamp"], want["total_size"])


def test_arrow_text_dictionaries_hold_each_value_once(tmp_path) -> None:
    """read_columns(arrow=True) gives topic and tags dictionary-encoded: each distinct value is one
    dictionary entry (a value coded twice would decode right and double the dictionary), and the
    values are the ones written."""
    from rmqlab.formats import commitlog as cl
    from rmqlab.lab.workload import Workload, generate

    table = generate(Workload(messages=300, seed=3, topics=("T", "orders", "B"), queues_per_topic=2))
    with cl.CommitLogWriter(tmp_path / "commitlog", 1 << 20) as writer:
        writer.append(table)
    got = cl.read_columns(tmp_path / "commitlog", arrow=True)
    for name in ("topic", "tags"):
        column = got[name].array._pa_array.combine_chunks()
        values = column.dictionary.to_pylist()
        written = {v for v in table.column(name).to_pylist() if v is not None}
        assert len(values) == len(set(values))
        assert set(values) - {""} == written - {""}


def test_a_dledger_entry_whose_body_is_not_a_message_ends_the_read_there(tmp_path) -> None:
    # DLedgerCommitLog appends one message record an entry; an entry whose body's MAGICCODE
    # (bytes 4..7 of the record, MessageDecoder) is neither v1's nor v2's holds no message.
    # The second entry's body is 40 bytes: TOTALSIZE 40, MAGICCODE 0x12345678, zeros.
    from dledger_model import HEAD, frame, write_ledger

    from rmqlab.formats.commitlog import encode_message, read_columns

    good = encode_message(topic="T", body=b"x" * 10)
    junk = struct.pack(">ii", 40, 0x12345678).ljust(40, b"\0")
    framed = frame([good, junk, good], 4096)
    led = write_ledger(tmp_path / "dledger-n0", framed)
    df = read_columns(led / "data", on_error="report")
    r = df.attrs["report"]
    found = r.damage + ([r.torn_tail] if r.torn_tail else [])
    pos = framed.entries[1][2]
    assert pos == HEAD.size + len(good)                  # the first entry: head and record
    assert df["phy_offset"].tolist() == [HEAD.size]      # the first record only
    assert [(d.path, d.offset, d.field) for d in found] == [(str(led / "data" / f"{0:020d}"), pos, "MAGICCODE")]
    assert "0x12345678" in found[0].reason


def test_a_bound_inside_the_end_of_file_blank_and_one_in_the_last_files_zeros() -> None:
    # the real 4.2.0 CommitLog (its README): 8,192-byte files, the first three of 47 records of
    # 172 bytes then the end-of-file blank at 8,084, the fourth (the active one) of 38 records
    # then zeros. max_bytes counts records, not the blank.
    from rmqlab.formats.commitlog import iter_messages

    folder = require_real_data("rocketmq/store-ericpangopher-4.2.0") / "commitlog"
    # 8,088: 4 bytes past the first file's records, inside its blank's 8-byte head; the blank
    # ends the file uncounted and the 4 bytes left fall in the second file, too few for a record
    s = iter_messages(folder, max_bytes=47 * 172 + 4)
    assert [m.phy_offset for m in s] == [172 * i for i in range(47)]
    assert s.report.unread_from == 8192
    assert s.report.unread_reason.startswith("4 bytes of the file within the bound")
    # 100 bytes past every record: the bound ends in the active file's zeros, the end of its data
    records = 3 * 47 + 38
    s = iter_messages(folder, max_bytes=(3 * 47 + 38) * 172 + 100)
    assert len(list(s)) == records
    assert (s.report.unread_from, s.report.unread_reason) == (3 * 8192 + 38 * 172, "zeros up to the bound")


def test_a_bad_magic_in_a_full_file_is_damage_named_by_its_field(tmp_path) -> None:
    # record 5 of the real 4.2.0 CommitLog's first file (172-byte records) gets a MAGICCODE that
    # is none of v1, v2 or the blank's (CommitLog.checkMessageAndReturnSize): the rest of that
    # file, records 5..46, cannot be framed; the other 137 of the 179 messages read
    import shutil

    from rmqlab.formats.commitlog import read_columns

    folder = tmp_path / "commitlog"
    shutil.copytree(require_real_data("rocketmq/store-ericpangopher-4.2.0") / "commitlog", folder)
    first = folder / f"{0:020d}"
    data = bytearray(first.read_bytes())
    struct.pack_into(">i", data, 5 * 172 + 4, 0x12345678)
    first.write_bytes(bytes(data))
    df = read_columns(folder, on_error="report")
    assert len(df) == 179 - (47 - 5)
    assert [(d.path, d.offset, d.field) for d in df.attrs["report"].damage] == [(str(first), 5 * 172, "MAGICCODE")]


def test_a_dledger_entry_cut_short_at_the_ledgers_end_is_a_torn_tail(tmp_path) -> None:
    # the last of three entries had its last 20 bytes never written (zeros), and only zeros
    # follow: a write cut short in a preallocated file, the end of the data rather than damage
    from dledger_model import frame, write_ledger

    from rmqlab.formats.commitlog import encode_message, read_columns

    good = encode_message(topic="T", body=b"x" * 40)
    framed = frame([good, good, good], 4096)
    led = write_ledger(tmp_path / "dledger-n0", framed)
    path = led / "data" / f"{0:020d}"
    data = bytearray(path.read_bytes())
    _, _, pos, size = framed.entries[2]
    data[pos + size - 20:pos + size] = bytes(20)
    path.write_bytes(bytes(data))
    df = read_columns(led / "data", on_error="report", check_crc=True)
    r = df.attrs["report"]
    assert df["phy_offset"].tolist() == framed.record_offsets[:2]
    assert r.damage == []
    assert (r.torn_tail.path, r.torn_tail.offset, r.torn_tail.kind) == (str(path), pos, "torn-tail")
