"""StoreCheckpoint: bytes, layouts (4.x / 5.0.0 / 5.1.1+ / 5.5.0+), recovery timestamps, bad sizes.

Expected bytes are packed here with `struct` from StoreCheckpoint.java (flush(): putLong at 0,
8, 16 in 4.x; + 24 in 5.0.0; + 32 from 5.1.1; the map is MappedFile.OS_PAGE_SIZE = 4096 bytes).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.errors import FormatError, GeometryError, TruncatedFileError
from rmqlab.formats.checkpoint import (
    CHECKPOINT,
    FILE_SIZE,
    StoreCheckpoint,
    detect_layout,
    read_checkpoint,
    time_millis_to_human_string,
    update_checkpoint,
    write_checkpoint,
)

LONGS = st.integers(-(2**63), 2**63 - 1)
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
COUNT = {"4": 3, "5.0": 4, "5.1.1": 5, "5.5": 6}


def ref_min_timestamp(physic: int, logics: int) -> int:
    """getMinTimestamp in Java long arithmetic: min - 3000, wrapped to 64 bits, floored at 0."""
    m = (min(physic, logics) - 3000) & (2**64 - 1)
    m = m - 2**64 if m >= 2**63 else m
    return 0 if m < 0 else m


def test_layout_offsets_are_the_java_ones():
    assert [(f.name, f.offset, f.size) for f in CHECKPOINT.fields] == [
        ("physic_msg_timestamp", 0, 8), ("logics_msg_timestamp", 8, 8), ("index_msg_timestamp", 16, 8),
        ("master_flushed_offset", 24, 8), ("confirm_phy_offset", 32, 8), ("logics_physical_offset", 40, 8)]
    assert FILE_SIZE == 4096


@settings(max_examples=100, **SETTINGS)
@given(st.sampled_from(["4", "5.0", "5.1.1", "5.5"]), st.lists(LONGS, min_size=6, max_size=6))
def test_round_trip_each_layout(tmp_path_factory, layout, values):
    n = COUNT[layout]
    values = values[:n] + [0] * (6 - n)
    path = tmp_path_factory.mktemp("cp") / "checkpoint"
    write_checkpoint(path, StoreCheckpoint(*values), layout=layout)
    data = path.read_bytes()
    assert len(data) == 4096
    assert data == struct.pack(f">{n}q", *values[:n]) + b"\0" * (4096 - 8 * n)
    cp = read_checkpoint(path)
    assert list(cp.as_dict().values()) == values
    assert cp.min_timestamp == ref_min_timestamp(values[0], values[1])
    assert cp.min_timestamp_index == min(ref_min_timestamp(values[0], values[1]), values[2])


def test_a_4x_broker_cannot_hold_5x_fields(tmp_path):
    with pytest.raises(ValueError, match="master_flushed_offset"):
        write_checkpoint(tmp_path / "checkpoint", StoreCheckpoint(1, 2, 3, 4), layout="4")
    assert not (tmp_path / "checkpoint").exists()


def test_a_4x_flush_leaves_5x_bytes_in_place(tmp_path):
    """A 4.x broker restarted on a 5.x store writes only its three longs."""
    p = tmp_path / "checkpoint"
    write_checkpoint(p, StoreCheckpoint(1, 2, 3, 44, 55), layout="5.1.1")
    write_checkpoint(p, StoreCheckpoint(7, 8, 9), layout="4")
    assert read_checkpoint(p).as_dict() == dict(physic_msg_timestamp=7, logics_msg_timestamp=8,
                                                index_msg_timestamp=9, master_flushed_offset=44,
                                                confirm_phy_offset=55, logics_physical_offset=0)


def test_layout_detection_says_what_zeros_cannot_tell():
    four = detect_layout(StoreCheckpoint(1718000000000, 1718000000000, 0))
    assert (four.min_version, four.ambiguous) == ("4", True) and "cannot tell" in four.note
    assert four.known_fields == ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp")
    five = detect_layout(StoreCheckpoint(1, 1, 0, master_flushed_offset=1024))
    assert (five.min_version, five.ambiguous) == ("5.0", True)
    new = detect_layout(StoreCheckpoint(1, 1, 0, confirm_phy_offset=2048))
    assert (new.min_version, new.ambiguous, len(new.known_fields)) == ("5.1.1", True, 5)
    newest = detect_layout(StoreCheckpoint(1, 1, 0, confirm_phy_offset=2048, logics_physical_offset=4096))
    assert (newest.min_version, newest.ambiguous, len(newest.known_fields)) == ("5.5", False, 6)


@pytest.mark.parametrize("physic, logics, index, want, want_index", [
    (10_000, 20_000, 0, 7_000, 0),            # min(physic, logics) - 3000
    (20_000, 10_000, 99_999, 7_000, 7_000),
    (2_000, 50_000, 5, 0, 0),                 # floored at 0
    (0, 0, 0, 0, 0),
    (-(2**63), 5, 1, 2**63 - 3000, 1),        # Java wraps Long.MIN_VALUE - 3000 to a huge positive
])
def test_recovery_timestamps(physic, logics, index, want, want_index):
    cp = StoreCheckpoint(physic, logics, index)
    assert (cp.min_timestamp, cp.min_timestamp_index) == (want, want_index)
    assert cp.recovery_timestamp() == want and cp.recovery_timestamp(message_index_safe=True) == want_index


def test_update_changes_only_the_named_fields(tmp_path):
    p = tmp_path / "checkpoint"
    write_checkpoint(p, StoreCheckpoint(1718000005000, 1718000004000, 0), layout="4")
    before = p.read_bytes()
    cp = update_checkpoint(p, index_msg_timestamp=1718000000000)
    after = p.read_bytes()
    assert after[:16] == before[:16] and after[24:] == before[24:]
    assert struct.unpack_from(">q", after, 16)[0] == 1718000000000
    assert cp.min_timestamp_index == 1718000000000
    with pytest.raises(TypeError):
        update_checkpoint(p, bogus=1)


@pytest.mark.parametrize("size, cls, field", [
    (0, TruncatedFileError, "physic_msg_timestamp"),
    (30, TruncatedFileError, "master_flushed_offset"),
    (40, TruncatedFileError, "logics_physical_offset"),
    (48, GeometryError, "file size"),
    (4095, GeometryError, "file size"),
    (8192, GeometryError, "file size"),
])
def test_wrong_size(tmp_path, size, cls, field):
    p = tmp_path / "checkpoint"
    p.write_bytes(struct.pack(">qqq", 5000, 6000, 7000).ljust(size, b"\0")[:size])
    with pytest.raises(cls) as e:
        read_checkpoint(p)
    assert (e.value.path, e.value.offset, e.value.field) == (str(p), size, field)
    # what the broker would read after mapping 4096 bytes: missing bytes are zeros
    raw = struct.pack(">qqq", 5000, 6000, 7000)[:size].ljust(48, b"\0")
    assert list(read_checkpoint(p, strict=False).as_dict().values()) == list(struct.unpack(">6q", raw))
    if size:  # writing refuses a wrong-size file and leaves it alone (an empty one is extended)
        snapshot = p.read_bytes()
        with pytest.raises(cls):
            write_checkpoint(p, StoreCheckpoint(1, 2, 3))
        assert p.read_bytes() == snapshot


def test_empty_file_is_extended_like_the_broker_map(tmp_path):
    p = tmp_path / "checkpoint"
    p.write_bytes(b"")
    write_checkpoint(p, StoreCheckpoint(1, 2, 3))
    assert p.stat().st_size == 4096 and read_checkpoint(p).index_msg_timestamp == 3


def test_non_zero_padding_is_reported(tmp_path):
    p = tmp_path / "checkpoint"
    write_checkpoint(p, StoreCheckpoint(1, 2, 3))
    with open(p, "r+b") as fh:
        fh.seek(100)
        fh.write(b"\x01")
    with pytest.raises(FormatError) as e:
        read_checkpoint(p)
    assert (e.value.offset, e.value.field) == (100, "padding")
    assert read_checkpoint(p, strict=False).index_msg_timestamp == 3


def test_read_only_open_leaves_bytes_and_mtime(tmp_path):
    p = tmp_path / "checkpoint"
    write_checkpoint(p, StoreCheckpoint(1718000005000, 1718000004000, 1718000000000, 7, 9))
    os.utime(p, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    before = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    cp = read_checkpoint(p)
    str(cp), cp.times(), cp.layout
    assert (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) == before


def test_human_readable_times():
    cp = StoreCheckpoint(1718000000123, 0, 1718000000000)
    assert time_millis_to_human_string(1718000000123, dt.UTC) == "20240610061320123"
    assert cp.times()["physic_msg_timestamp"] == dt.datetime(2024, 6, 10, 6, 13, 20, 123000,
                                                              tzinfo=dt.UTC)
    assert cp.times()["logics_msg_timestamp"] is None
    text = cp.describe()
    assert "20240610061320123" in text and "never set" in text and "cannot tell" in text
