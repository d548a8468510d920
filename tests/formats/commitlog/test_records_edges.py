"""The CommitLog walk's stop rules on cases its other tests leave out, each against a
hand-computed expectation: the MAGICCODE a damaged head holds, printed as the broker's hex, and
the CommitLog offset of damage in a file that does not start at 0 (file start + position)."""
from __future__ import annotations

import struct
from pathlib import Path

from rmqlab.formats.commitlog import records
from rmqlab.formats.commitlog.files import StoreFile


def test_a_bad_magic_is_named_in_hex() -> None:
    buf = struct.pack(">ii", 100, 0x12345678) + bytes(92)
    code, field, reason = records.check_head(buf, 0, len(buf))
    assert (code, field) == (records.STOP_MAGIC, "MAGICCODE")
    assert reason.startswith("MAGICCODE 0x12345678: ")
    # a negative int32 is printed as its unsigned 32 bits, as Integer.toHexString would
    buf = struct.pack(">iI", 100, 0xDEADBEEF) + bytes(92)
    assert records.check_head(buf, 0, len(buf))[2].startswith("MAGICCODE 0xDEADBEEF: ")


def test_damage_in_a_later_file_is_placed_at_its_start_plus_the_position() -> None:
    # a file of 64 bytes starting at CommitLog offset 1,024: 16 bytes in, a head with a bad magic
    buf = bytearray(64)
    struct.pack_into(">iI", buf, 16, 40, 0x0BADF00D)
    f = StoreFile(Path("00000000000000001024"), 1024, 64)
    code, field, reason = records.check_head(buf, 16, len(buf))
    dmg = records.classify_stop(buf, f, 16, code, field, reason, False, None)
    assert (dmg.offset, dmg.phy_offset, dmg.field, dmg.kind) == (16, 1040, "MAGICCODE", "damage")


def _delays(tmp_path: Path, texts: list[str]) -> list[int]:
    from rmqlab.formats import commitlog as cl
    from rmqlab.formats.commitlog.encode import encode_message

    data = b""
    for text in texts:
        data += encode_message(topic="T", properties={"DELAY": text}, phy_offset=len(data))
    path = tmp_path / f"{0:020d}"
    path.write_bytes(data)
    return cl.read_columns(path)["delay_level"].tolist()


def test_an_integer_delay_with_leading_zeros_reads_as_integer_parse_int_reads_it(tmp_path: Path) -> None:
    # Integer.parseInt("000000000123456789") is 123456789; a non-numeric DELAY in the same file
    # sends that file's other texts the C reader leaves to pandas through a float parse
    assert _delays(tmp_path, ["000000000123456789", "x"])[0] == 123456789


def test_a_19_character_delay_reads_as_integer_parse_int_reads_it(tmp_path: Path) -> None:
    # pandas reads integer text of 19 or more characters through a float and drops digits;
    # Integer.parseInt("0000000000123456789") is 123456789, and "-000...05" is -5
    assert _delays(tmp_path, ["0000000000123456789", "x", "-0000000000000000005", "+0007", "00000000000000000001.5"]) \
        == [123456789, 0, -5, 7, 1]


def test_a_read_report_as_a_dictionary() -> None:
    # what --json prints: the files read, the damage and the torn tail as their fields
    damage = records.Damage("/c/0", 16, 16, "MAGICCODE", "bad magic")
    torn = records.Damage("/c/1", 40, 1064, "TOTALSIZE", "runs past the end", kind="torn-tail")
    r = records.ReadReport(files=("/c/0", "/c/1"), messages=2, damage=[damage], torn_tail=torn,
                           end_phy_offset=1064, unread_from=None)
    assert r.as_dict() == {
        "files": ["/c/0", "/c/1"], "messages": 2,
        "damage": [{"path": "/c/0", "offset": 16, "phy_offset": 16, "field": "MAGICCODE", "reason": "bad magic",
                    "kind": "damage"}],
        "torn_tail": {"path": "/c/1", "offset": 40, "phy_offset": 1064, "field": "TOTALSIZE",
                      "reason": "runs past the end", "kind": "torn-tail"},
        "end_phy_offset": 1064, "unread_from": None}


def test_a_record_that_changed_while_read_in_the_last_file_is_a_torn_tail(tmp_path: Path) -> None:
    # the last file of a live store: the walk saw a bad head at 16 and, reading it again, found
    # it changed (a write in flight): the end of the data, named as such, not damage
    buf = bytearray(64)
    struct.pack_into(">iI", buf, 16, 40, 0x0BADF00D)
    buf[24:64] = b"\x07" * 40                    # the record's bytes, none of them zeros
    path = tmp_path / "00000000000000001024"
    path.write_bytes(bytes(buf))
    f = StoreFile(path, 1024, 64)
    code, field, _ = records.check_head(buf, 16, len(buf))
    dmg = records.classify_stop(buf, f, 16, code, field, records.CHANGED_WHILE_READ, True, None)
    assert (dmg.path, dmg.offset, dmg.phy_offset, dmg.field, dmg.kind) == (str(path), 16, 1040, "MAGICCODE",
                                                                           "torn-tail")
    assert dmg.reason == "torn tail: the record changed while it was read (a write in flight)"
