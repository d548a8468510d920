"""The checkpoint's fields at their edges (rmqlab/formats/checkpoint.py), cases its other tests
left open (found as mutants they let survive, benchmarks/mutation.py). The truth is
StoreCheckpoint.java's layout (big-endian longs at 0, 8, 16, 24, 32; 5.0.0 added
masterFlushedOffset, 5.1.1 confirmPhyOffset), Java's long range, and
the C library's own time conversion (the ``time`` module), not rmqlab's output."""
from __future__ import annotations

import datetime as dt
import os
import struct
import time

import pytest

from rmqlab.errors import FormatError, GeometryError, TruncatedFileError
from rmqlab.formats.checkpoint import (
    StoreCheckpoint,
    detect_layout,
    time_millis_to_human_string,
    update_checkpoint,
    write_checkpoint,
)
from rmqlab.formats.checkpoint import read_checkpoint as read

JAVA_FIELDS = ["physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp",
               "master_flushed_offset", "confirm_phy_offset", "logics_physical_offset"]


@pytest.mark.parametrize("size", range(48))
def test_a_truncated_file_names_the_field_its_end_cuts(tmp_path, size):
    p = tmp_path / "checkpoint"
    p.write_bytes(b"\x01" * size)
    with pytest.raises(TruncatedFileError) as e:
        read(p)
    # the long at offset 8*i holds field i: the cut at `size` falls inside field size // 8
    assert (e.value.offset, e.value.field) == (size, JAVA_FIELDS[size // 8])


def test_writing_a_wrong_size_file_names_that_file(tmp_path):
    p = tmp_path / "checkpoint"
    p.write_bytes(bytes(100))
    with pytest.raises(GeometryError) as e:
        write_checkpoint(p, StoreCheckpoint(1, 2, 3))
    assert (e.value.path, e.value.offset, e.value.field) == (os.fspath(p), 100, "file size")


@pytest.mark.parametrize("value", [-(2**63), 2**63 - 1, 0])
def test_every_java_long_is_accepted(value):
    assert StoreCheckpoint(physic_msg_timestamp=value).physic_msg_timestamp == value


@pytest.mark.parametrize("value", [-(2**63) - 1, 2**63, 2**64, True, False, 1.0, "1"])
def test_what_is_not_a_java_long_is_refused(value):
    with pytest.raises(ValueError):
        StoreCheckpoint(confirm_phy_offset=value)


def test_what_each_layout_proves_lists_the_java_fields_of_that_line():
    five_five = detect_layout(StoreCheckpoint(1, 1, 0, 0, 9, 77))
    five_one = detect_layout(StoreCheckpoint(1, 1, 0, 0, 9))
    five_zero = detect_layout(StoreCheckpoint(1, 1, 0, 9, 0))
    four = detect_layout(StoreCheckpoint(1, 1, 0, 0, 0))
    assert (five_five.min_version, five_five.ambiguous, list(five_five.known_fields)) == ("5.5", False, JAVA_FIELDS)
    assert (five_one.min_version, five_one.ambiguous, list(five_one.known_fields)) == ("5.1.1", True, JAVA_FIELDS[:5])
    assert (five_zero.min_version, five_zero.ambiguous, list(five_zero.known_fields)) == ("5.0", True, JAVA_FIELDS[:4])
    assert (four.min_version, four.ambiguous, list(four.known_fields)) == ("4", True, JAVA_FIELDS[:3])
    assert "5.1.1" in five_one.note and "5.0.0" in five_zero.note and "cannot tell" in four.note


def _java_format(ms: int, offset_seconds: int) -> str:
    """yyyyMMddHHmmssSSS at a fixed UTC offset, from the C library's gmtime."""
    return time.strftime("%Y%m%d%H%M%S", time.gmtime(ms // 1000 + offset_seconds)) + f"{ms % 1000:03d}"


@pytest.mark.parametrize("ms", [0, 1718000000123, 4102444799999])
def test_a_time_in_a_zone_east_of_utc(ms):
    zone = dt.timezone(dt.timedelta(hours=8))
    assert time_millis_to_human_string(ms, zone) == _java_format(ms, 8 * 3600)
    assert time_millis_to_human_string(ms, dt.UTC) == _java_format(ms, 0)


@pytest.fixture
def shanghai_local_time(monkeypatch):
    """The process's local time zone set to UTC+8 (no daylight saving), as a broker in China logs."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_local_time_is_the_default(shanghai_local_time):
    ms = 1718000000123
    assert time_millis_to_human_string(ms) == time.strftime("%Y%m%d%H%M%S", time.localtime(ms // 1000)) + "123"
    assert time_millis_to_human_string(ms) == _java_format(ms, 8 * 3600)


def test_describe_marks_unset_timestamps_and_prints_offsets_plainly():
    cp = StoreCheckpoint(1718000000123, 0, 0, 77, 0)
    lines = {line.split()[1]: line for line in cp.describe().splitlines() if line[:3].strip().isdigit()}
    assert set(lines) == set(JAVA_FIELDS)
    assert lines["logics_msg_timestamp"].rstrip().endswith("(never set)")
    assert lines["index_msg_timestamp"].rstrip().endswith("(never set)")
    assert lines["physic_msg_timestamp"].rstrip().endswith(_java_format(1718000000123, 0))
    # offsets are not timestamps: the number alone
    assert lines["master_flushed_offset"].split() == ["24", "master_flushed_offset", "77"]
    assert lines["confirm_phy_offset"].split() == ["32", "confirm_phy_offset", "0"]


def test_fields_sit_where_the_java_getlong_reads_them(tmp_path):
    p = tmp_path / "checkpoint"
    p.write_bytes(struct.pack(">6q", 11, 22, 33, 44, 55, 66).ljust(4096, b"\0"))
    assert list(read(p).as_dict().values()) == [11, 22, 33, 44, 55, 66]


def test_an_unknown_field_is_refused_before_the_file_is_looked_at(tmp_path):
    with pytest.raises(TypeError):
        update_checkpoint(tmp_path / "missing", bogus=1)


@pytest.mark.parametrize("size", [48, 100, 4095, 4097])
def test_a_file_of_the_wrong_size_past_the_fields_names_the_file_size(tmp_path, size):
    p = tmp_path / "checkpoint"
    p.write_bytes(b"\x01" * size)
    with pytest.raises(FormatError) as e:
        read(p)
    assert (e.value.offset, e.value.field) == (size, "file size")


def test_describe_shows_times_in_the_zone_asked():
    """UTC+8, as a broker in Beijing logs them (UtilAll.timeMillisToHumanString in its zone)."""
    cp = StoreCheckpoint(1718000000123, 0, 0, 0, 0)
    line = next(x for x in cp.describe(dt.timezone(dt.timedelta(hours=8))).splitlines() if "physic_msg" in x)
    assert line.rstrip().endswith(_java_format(1718000000123, 8 * 3600))
