"""An annotated hex view of an index file, a ConsumeQueueExt file or a BatchConsumeQueue file:
the fields byte for byte as stored, each decoded and explained.

:func:`hex_fields` is the table of an index file (one row per field: offset, size, raw bytes,
signed big-endian value, meaning), :func:`ext_hex_fields` and :func:`batch_hex_fields` those of
the two queue files; :func:`fields_hex_figure` draws any of them as a hex dump with each
field's bytes shaded in the colour of its kind and its decoded value beside, and
:func:`annotated_hex_figure` is that figure of an index file.

Offsets come from the format's declarations (:data:`rmqlab.formats.indexfile.HEADER`,
``SLOT``, ``ENTRY`` and :class:`~rmqlab.formats.indexfile.Geometry`), and the bytes from the
file's read-only memory map (:meth:`IndexFile.open <rmqlab.formats.indexfile.IndexFile.open>`),
so the view shows what is on disk, not what a parser made of it. Fields are named as in
RocketMQ's Java code (``beginTimestamp``, ``slot[17]``, ``entry[3].keyHash``).

>>> import tempfile, os
>>> from rmqlab.formats.indexfile import build_index_file
>>> p = os.path.join(tempfile.mkdtemp(), "20240610061320000")
>>> build_index_file(p, ["T#a", "T#b"], [100, 200], [1718000000000, 1718000012000],
...                  hash_slot_num=4, index_num=8)
2
>>> df = hex_fields(p, slots=[], entries=[2], hash_slot_num=4, index_num=8)
>>> df[["offset", "field", "hex", "meaning"]].iloc[[0, 8]].values.tolist()   # doctest: +NORMALIZE_WHITESPACE
[[0, 'beginTimestamp', '00 00 01 90 00 c7 9c 00', '2024-06-10T06:13:20.000+00:00'],
 [108, 'entry[2].timeDiff', '00 00 00 0c', '+12 s -> 06:13:32.000']]
"""
from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.formats import timer as tm
from rmqlab.formats.indexfile import ENTRY, HEADER, SLOT, IndexFile
from rmqlab.kafka import index as kix
from rmqlab.rules.dispatch import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
    transaction_type,
)
from rmqlab.viz.figures import opened_index_file
from rmqlab.viz.fonts import MONO

__all__ = [
    "HEX_FIELD_COLUMNS",
    "JAVA_FIELD_NAMES",
    "hex_fields",
    "ext_hex_fields",
    "batch_hex_fields",
    "record_hex_fields",
    "kafka_index_hex_fields",
    "annotated_hex_figure",
    "fields_hex_figure",
]

PathOrFile = str | os.PathLike | IndexFile
Numbers = int | range | Iterable[int] | None

#: Columns of :func:`hex_fields`, in order.
HEX_FIELD_COLUMNS = ["offset", "size", "region", "field", "hex", "value", "meaning"]

#: The Java names of the layout fields (IndexHeader.java / IndexFile.java).
JAVA_FIELD_NAMES = {f.name: f.java_name for f in HEADER.fields + ENTRY.fields}

_DEFAULT_FIRST_SLOTS = 8
_DEFAULT_EXTRA_SLOTS = 4
_DEFAULT_ENTRIES = 5
#: Bytes per dump row, by region, so that no field is split and fields line up in columns:
#: two 8-byte header fields a row (the two 4-byte counts share the last), five slots, one entry.
_ROW_BYTES = {"header": 2 * HEADER.field("begin_timestamp").size, "slot": 5 * SLOT.size, "entry": ENTRY.size,
              "record": 20, "offset-entry": 2 * kix.OFFSET_ENTRY.size, "time-entry": kix.TIME_ENTRY.size,
              "zero-tail": 2 * kix.OFFSET_ENTRY.size}
_MAX_ROW_BYTES = max(_ROW_BYTES.values())


# ------------------------------------------------------------------------------ selection


def _numbers(value: Numbers, limit: int, name: str) -> np.ndarray:
    """Sorted distinct numbers of `value` (int, range or iterable), each in 0..limit-1."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        items = [int(value)]
    else:
        if isinstance(value, (str, bytes)):
            raise TypeError(f"{name} must be a number, a range or a sequence of numbers, "
                            f"got {type(value).__name__}")
        try:
            items = [int(v) for v in value]
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number, a range or a sequence of numbers, "
                            f"got {value!r}") from None
    arr = np.unique(np.asarray(items, dtype=np.int64))
    bad = arr[(arr < 0) | (arr >= limit)]
    if len(bad):
        raise ValueError(f"{name}: {int(bad[0])} is outside 0..{limit - 1} "
                         f"(the file has {limit:,} {name})")
    return arr


def _default_slots(f: IndexFile) -> np.ndarray:
    """The first 8 slots, plus the first 4 non-empty slots after them."""
    m = f.geometry.hash_slot_num
    first = np.arange(min(_DEFAULT_FIRST_SLOTS, m), dtype=np.int64)
    later = np.flatnonzero(f.slots[_DEFAULT_FIRST_SLOTS:] != 0)[:_DEFAULT_EXTRA_SLOTS]
    return np.concatenate([first, later.astype(np.int64) + _DEFAULT_FIRST_SLOTS])


# ------------------------------------------------------------------------------ meanings


def _iso(ms: int, tz) -> str:
    try:
        t = _dt.datetime.fromtimestamp(ms // 1000, tz) + _dt.timedelta(milliseconds=ms % 1000)
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms since the epoch (outside the calendar)"
    return t.isoformat(timespec="milliseconds")


def _clock(ms: int, tz) -> str:
    try:
        t = _dt.datetime.fromtimestamp(ms // 1000, tz)
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"
    return t.strftime("%H:%M:%S") + f".{ms % 1000:03d}"


def _header_meaning(name: str, value: int, raw_index_count: int, tz) -> str:
    if name in ("begin_timestamp", "end_timestamp"):
        return "0: not set (no entry yet)" if value == 0 else _iso(value, tz)
    if name in ("begin_phy_offset", "end_phy_offset"):
        return f"CommitLog byte offset {value:,}"
    if name == "hash_slot_count":
        return f"{value:,} slots counted as used"
    if raw_index_count <= 0:
        return f"{value} on disk: never flushed; loads as 1 (no entry written)"
    return f"next entry {value:,}: {max(value - 1, 0):,} keys written"


def _slot_meaning(value: int, index_count: int) -> str:
    if value == 0:
        return "empty"
    if value < 0 or value >= index_count:
        return f"-> {value}: outside 1..{index_count - 1}, read as empty"
    return f"-> entry {value}"


def _entry_meanings(number: int, e, index_count: int, begin_ts: int, m: int, tz) -> list[str]:
    if number == 0:
        note = ("entry 0 is never written" if not any(e)
                else "entry 0 is never written, yet holds non-zero bytes")
        return [note] * 4
    if number >= index_count:
        note = f"not written yet (entry {number} >= indexCount {index_count})"
        return [note] * 4
    key_hash, phy, time_diff, prev = e
    hash_note = (f"slot {key_hash % m} (hash % {m:,})" if key_hash >= 0
                 else "negative: corrupt (a stored hash is never negative)")
    time_note = (f"+{time_diff} s -> {_clock(begin_ts + 1000 * time_diff, tz)}" if time_diff >= 0
                 else f"{time_diff} s: negative, the broker stops a walk here")
    if prev == 0:
        prev_note = "end of chain"
    elif 0 < prev < number:
        prev_note = f"-> entry {prev} (older, same slot)"
    else:
        prev_note = f"-> {prev}: not an older entry (corrupt)"
    return [hash_note, f"CommitLog byte offset {phy:,}", time_note, prev_note]


# ------------------------------------------------------------------------------ the table


def _hex(data: bytes) -> str:
    return " ".join(f"{b:02x}" for b in data)


def _raw(f: IndexFile, offset: int, size: int) -> bytes:
    # The memory map itself (not the NumPy views or the cached header): what is on disk now.
    return bytes(f._mm[offset:offset + size])


def _collect(f: IndexFile, slots: Numbers, entries: Numbers, tz) -> pd.DataFrame:
    g = f.geometry
    tz = _dt.UTC if tz is None else tz
    slot_numbers = (_default_slots(f) if slots is None
                    else _numbers(slots, g.hash_slot_num, "slots"))
    entry_numbers = (np.arange(min(_DEFAULT_ENTRIES, g.index_num), dtype=np.int64) if entries is None
                     else _numbers(entries, g.index_num, "entries"))
    header_bytes = _raw(f, 0, HEADER.size)
    header = HEADER.unpack(header_bytes)
    index_count = f.header.index_count          # as the broker loads it (0 on disk reads as 1)
    rows = []
    for fld in HEADER.fields:
        data = header_bytes[fld.offset:fld.offset + fld.size]
        value = getattr(header, fld.name)
        rows.append((fld.offset, fld.size, "header", JAVA_FIELD_NAMES[fld.name], _hex(data), value,
                     _header_meaning(fld.name, value, f.raw_index_count, tz)))
    slot_struct = SLOT.field_struct("newest_entry")
    for s in slot_numbers.tolist():
        off = g.slot_offset(s)
        data = _raw(f, off, SLOT.size)
        value = slot_struct.unpack(data)[0]
        rows.append((off, SLOT.size, "slot", f"slot[{s}]", _hex(data), value,
                     _slot_meaning(value, index_count)))
    for n in entry_numbers.tolist():
        off = g.entry_offset(n)
        data = _raw(f, off, ENTRY.size)
        e = ENTRY.unpack(data)
        meanings = _entry_meanings(n, e, index_count, header.begin_timestamp, g.hash_slot_num, tz)
        for fld, value, meaning in zip(ENTRY.fields, e, meanings):
            rows.append((off + fld.offset, fld.size, "entry", f"entry[{n}].{JAVA_FIELD_NAMES[fld.name]}",
                         _hex(data[fld.offset:fld.offset + fld.size]), value, meaning))
    df = pd.DataFrame(rows, columns=HEX_FIELD_COLUMNS)
    df["offset"] = df["offset"].astype(np.int64)
    df["size"] = df["size"].astype(np.int64)
    df["value"] = df["value"].astype(np.int64)
    df.attrs.update({"file": f.path.name, "hash_slot_num": g.hash_slot_num,
                     "index_num": g.index_num, "file_size": g.file_size,
                     "slots": slot_numbers.tolist(), "entries": entry_numbers.tolist()})
    return df


def hex_fields(path_or_file: PathOrFile, *, slots: Numbers = None, entries: Numbers = None,
               hash_slot_num: int | None = None, index_num: int | None = None,
               tz: _dt.tzinfo | None = None) -> pd.DataFrame:
    """One row per field of the header, the chosen slots and the chosen entries, in file order.

    Columns (:data:`HEX_FIELD_COLUMNS`): ``offset`` (bytes from the start of the file, from
    the format's :class:`~rmqlab.formats.indexfile.Geometry`), ``size`` (bytes), ``region``
    ("header", "slot", "entry"), ``field`` (Java names: "beginTimestamp", "slot[17]",
    "entry[3].keyHash"), ``hex`` (the raw bytes as stored, "00 00 01 90 ..."), ``value``
    (those bytes as a signed big-endian integer, exactly as on disk: a never-flushed file
    shows indexCount 0 here, which the broker loads as 1) and ``meaning``: timestamps as ISO
    8601 with milliseconds in `tz` (default UTC), CommitLog offsets in bytes, slots as
    "empty" or "-> entry 5", ``prevIndex`` 0 as "end of chain", ``timeDiff`` as
    "+12 s -> 06:13:32.000" (the time the broker compares: the header's beginTimestamp plus
    whole seconds), entry 0 as "entry 0 is never written", entries at or past indexCount as
    not written yet.

    `slots` and `entries` take a number, a range or a sequence of numbers (duplicates and
    order do not matter); defaults: slots 0..7 plus the first 4 non-empty slots after them,
    entries 0..4 (entry 0 included, to show it is unused). A number outside the file raises
    ValueError naming the argument. `path_or_file` is a path (mapped read-only, with the
    geometry arguments as for :meth:`IndexFile.open`; its typed errors for a truncated or
    mis-sized file) or an open :class:`IndexFile` (left open). ``df.attrs`` holds file,
    hash_slot_num, index_num, file_size and the slot and entry numbers shown.
    Cost: O(fields shown), plus one scan of the slots (4 bytes each) for the default slots.
    """
    with opened_index_file(path_or_file, hash_slot_num, index_num) as f:
        return _collect(f, slots, entries, tz)


# ------------------------------------------------------------------------------ the figure


def _ext_unit_rows(buf, pos: int, number: int, file_start: int, tz) -> list[tuple]:
    h = cqx.UNIT_HEADER.unpack_from(buf, pos)
    meanings = {
        "size": f"{h.size} bytes; address {cqx.decorate(file_start + pos)} (byte {file_start + pos} of the folder)",
        "tags_code": "the tags code the ConsumeQueue unit would hold (String.hashCode of TAGS, or a delivery time)",
        "msg_store_time": f"message stored {_iso(h.msg_store_time, tz)}",
        "bit_map_size": "no filter bit map" if h.bit_map_size == 0 else f"{h.bit_map_size}-byte filter bit map follows",
    }
    rows = []
    for fld, value in zip(cqx.UNIT_HEADER.fields, h):
        rows.append((pos + fld.offset, fld.size, "ext-unit", f"unit[{number}].{fld.java_name}",
                     _hex(bytes(buf[pos + fld.offset:pos + fld.offset + fld.size])), int(value), meanings[fld.name]))
    n_map = max(0, min(int(h.bit_map_size), len(buf) - pos - cqx.MIN_UNIT_SIZE))
    if n_map:
        at = pos + cqx.MIN_UNIT_SIZE
        data = bytes(buf[at:at + n_map])
        rows.append((at, n_map, "ext-unit", f"unit[{number}].filterBitMap", _hex(data),
                     int.from_bytes(data[:8], "big", signed=True), "filter bit map (first 8 bytes as the value)"))
    return rows


def ext_hex_fields(path: str | os.PathLike, *, units: Numbers = None,
                   tz: _dt.tzinfo | None = None) -> pd.DataFrame:
    """One row per field of the chosen units of a ConsumeQueueExt file, and the end of its data.

    Columns as :func:`hex_fields` (:data:`HEX_FIELD_COLUMNS`); ``region`` is "ext-unit" or
    "end"; fields are named as in CqExtUnit (``unit[3].msgStoreTime``). Units are numbered
    from the file's first unit; the "end" row is the 2-byte size where the broker's walk
    stops: the fill marker -1 (the file is full) or 0 (unused). `units`: a number, range or
    sequence (default: the first 5). Cost: the walk of the file's unit sizes.

    >>> import tempfile, os
    >>> from rmqlab.formats.consumequeue_ext import ConsumeQueueExtWriter
    >>> d = tempfile.mkdtemp()
    >>> with ConsumeQueueExtWriter.create(d, mapped_file_size=64) as w:
    ...     _ = w.put_many([2567159] * 4, [1532257321553] * 4)
    >>> df = ext_hex_fields(os.path.join(d, "0" * 20), units=[1])
    >>> df[["offset", "field", "value"]].values.tolist()
    [[20, 'unit[1].size', 20], [22, 'unit[1].tagsCode', 2567159], [30, 'unit[1].msgStoreTime', 1532257321553], \
[38, 'unit[1].bitMapSize', 0], [60, 'end', -1]]

    Parameters: `path` one file of a ``consumequeue_ext/<topic>/<queueId>`` folder (its
    folder is opened read-only; the file size is this file's). Returns the table, with
    ``df.attrs`` file, file_size, units shown and end. Raises the reader's typed errors, and
    ValueError for a unit number outside the file's units.
    """
    path = Path(path)
    tz = _dt.UTC if tz is None else tz
    with cqx.ConsumeQueueExt.open(path.parent, path.stat().st_size, strict=False) as x:
        seg = x.file_segment(path.name)
        if seg is None:
            raise ValueError(f"{path}: not a file of its ConsumeQueueExt folder (name or size)")
        count = len(seg.units)
        numbers = (np.arange(min(_DEFAULT_ENTRIES, count), dtype=np.int64) if units is None
                   else _numbers(units, count, "units"))
        rows = []
        for n in numbers.tolist():
            rows += _ext_unit_rows(seg.buf, int(seg.units["offset"][n]) - seg.file.start, n, seg.file.start, tz)
        if seg.end + 2 <= len(seg.buf):
            data = bytes(seg.buf[seg.end:seg.end + 2])
            value = int.from_bytes(data, "big", signed=True)
            meaning = {"fill": "fill marker -1: the next unit did not fit, the broker moved to the next file",
                       "zero": "0: unused space, the end of the written units"}.get(seg.end_kind, "not a unit size")
            rows.append((seg.end, 2, "end", "end", _hex(data), value, meaning))
        df = pd.DataFrame(rows, columns=HEX_FIELD_COLUMNS)
        for c in ("offset", "size", "value"):
            df[c] = df[c].astype(np.int64)
        df.attrs.update({"file": path.name, "file_size": x.mapped_file_size, "units": numbers.tolist(),
                         "end": seg.end})
        return df


def _batch_unit_rows(buf, pos: int, number: int, file_start: int, tz) -> list[tuple]:
    u = bcq.UNIT.unpack_from(buf, pos)
    meanings = {
        "commitlog_offset": f"the message at CommitLog byte {u.commitlog_offset}",
        "size": f"its TOTALSIZE, {u.size} bytes",
        "tags_code": "String.hashCode of TAGS (or a delivery time), as the dispatch computes it",
        "store_time": f"message stored {_iso(u.store_time, tz)}",
        "msg_base_offset": f"queue offset of the batch's first message; this unit covers "
                           f"{u.msg_base_offset}..{u.msg_base_offset + u.batch_size - 1}",
        "batch_size": "messages in the unit (INNER_NUM; 1 for a plain message)",
        "compacted_offset": "INVALID_POS (-1), as the store writes it" if u.compacted_offset == bcq.INVALID_POS
                            else "not INVALID_POS: the store writes -1",
        "reserved": "reserved, 0" if u.reserved == 0 else "reserved: the store writes 0",
    }
    return _unit_rows(bcq.UNIT, u, buf, pos, number, "batch-unit", meanings)


def _unit_rows(layout, u, buf, pos: int, number: int, region: str, meanings: dict[str, str]) -> list[tuple]:
    """The table rows of one unit of `layout` at `pos` of `buf` (`u` its values), each field
    with its bytes in hex, its value and `meanings[field]`."""
    return [(pos + fld.offset, fld.size, region, f"unit[{number}].{fld.java_name}",
             _hex(bytes(buf[pos + fld.offset:pos + fld.offset + fld.size])), int(value), meanings[fld.name])
            for fld, value in zip(layout.fields, u)]


def batch_hex_fields(path: str | os.PathLike, *, units: Numbers = None,
                     tz: _dt.tzinfo | None = None) -> pd.DataFrame:
    """One row per field of the chosen units of a BatchConsumeQueue file, and the end of its data.

    Columns as :func:`hex_fields` (:data:`HEX_FIELD_COLUMNS`); ``region`` is "batch-unit" or
    "end"; fields are the unit layout's, in Java case (``unit[3].msgBaseOffset``).
    Units are numbered from the file's first unit; the "end" row is the commitlog offset field
    of the first slot after the units recover() takes (its unit fails the test, usually zeros),
    shown when the file has room for it. `units`: a number, range or sequence (default: the
    first 5). Cost: the queue folder's end search.

    >>> import tempfile, os
    >>> from rmqlab.formats.batchconsumequeue import BatchConsumeQueueWriter
    >>> d = tempfile.mkdtemp()
    >>> with BatchConsumeQueueWriter.create(d, mapped_file_size=46 * 4) as w:
    ...     _ = w.put_many([0, 300], [300, 200], [7, 7], [1718000000000] * 2, [0, 3], [3, 1])
    >>> df = batch_hex_fields(os.path.join(d, "0" * 20), units=[1])
    >>> df[["offset", "field", "value"]].values.tolist()[4:6], df["field"].iloc[-1]
    ([[74, 'unit[1].msgBaseOffset', 3], [82, 'unit[1].batchSize', 1]], 'end')

    Parameters: `path` one file of a ``batchconsumequeue/<topic>/<queueId>`` folder (its
    folder is opened read-only; the file size is this file's). Returns the table, with
    ``df.attrs`` file, file_size, units shown and end. Raises the reader's typed errors, and
    ValueError for a unit number outside the file's units.
    """
    path = Path(path)
    tz = _dt.UTC if tz is None else tz
    with bcq.BatchConsumeQueue.open(path.parent, path.stat().st_size, strict=False) as q:
        seg = q.file_segment(path.name)
        if seg is None:
            raise ValueError(f"{path}: not a file of its BatchConsumeQueue folder (name or size)")
        count = seg.count
        numbers = (np.arange(min(_DEFAULT_ENTRIES, count), dtype=np.int64) if units is None
                   else _numbers(units, count, "units"))
        rows = []
        for n in numbers.tolist():
            rows += _batch_unit_rows(seg.buf, n * bcq.UNIT_SIZE, n, seg.file.start, tz)
        end = count * bcq.UNIT_SIZE
        fld = bcq.UNIT.field("commitlog_offset")
        if end + bcq.UNIT_SIZE <= len(seg.buf):
            data = bytes(seg.buf[end + fld.offset:end + fld.offset + fld.size])
            value = int.from_bytes(data, "big", signed=True)
            rows.append((end + fld.offset, fld.size, "end", "end", _hex(data), value,
                         "the first slot recover() does not take as a unit: the end of the queue's data"))
        df = pd.DataFrame(rows, columns=HEX_FIELD_COLUMNS)
        for c in ("offset", "size", "value"):
            df[c] = df[c].astype(np.int64)
        df.attrs.update({"file": path.name, "file_size": len(seg.buf), "units": numbers.tolist(), "end": end})
        return df


def _timer_unit_rows(buf, pos: int, number: int, tz) -> list[tuple]:
    u = tm.UNIT.unpack_from(buf, pos)
    due = u.curr_write_time + u.delay_time
    bits = [n for b, n in ((tm.MAGIC_DEFAULT, "message"), (tm.MAGIC_ROLL, "roll"), (tm.MAGIC_DELETE, "delete"))
            if u.magic & b]
    meanings = {
        "size": "UNIT_SIZE, 52" if u.size == tm.UNIT.size else f"{u.size}: not UNIT_SIZE (a blank filler?)",
        "prev_pos": "the first unit of its slot (-1)" if u.prev_pos == -1
                    else f"the slot's unit before it, at timer log byte {u.prev_pos}",
        "magic": " | ".join(bits) if tm.is_magic_ok(u.magic) else "not a unit's magic",
        "curr_write_time": f"enqueued at {_iso(u.curr_write_time, tz)} (the timer's clock)",
        "delay_time": f"due {u.delay_time} ms later: slot {_iso(due, tz)}",
        "offset_py": f"the message at CommitLog byte {u.offset_py} (topic rmq_sys_wheel_timer)",
        "size_py": f"its TOTALSIZE, {u.size_py} bytes",
        "hash_topic": "String.hashCode of the message's REAL_TOPIC",
        "reserved": "reserved, 0" if u.reserved == 0 else "reserved: the store writes 0",
    }
    return _unit_rows(tm.UNIT, u, buf, pos, number, "timer-unit", meanings)


def timer_hex_fields(path: str | os.PathLike, *, units: Numbers = None,
                     tz: _dt.tzinfo | None = None) -> pd.DataFrame:
    """One row per field of the chosen units of a timer log file (5.x ``timerlog/``).

    Columns as :func:`hex_fields` (:data:`HEX_FIELD_COLUMNS`); ``region`` is "timer-unit";
    fields in Java case (``unit[2].prevPos``). Units are numbered from the file's start;
    `units`: a number, range or sequence (default: the first 5). Cost: reads the file's units
    (:class:`rmqlab.formats.timer.TimerLog`).

    >>> import tempfile, os, struct
    >>> d = tempfile.mkdtemp()
    >>> with open(os.path.join(d, "0" * 20), "wb") as f:
    ...     _ = f.write(struct.pack(">iqiqiqiiq", 52, -1, 1, 1718000000000, 5000, 4096, 300, 7, 0) + bytes(64))
    >>> timer_hex_fields(os.path.join(d, "0" * 20))[["field", "value"]].values.tolist()[:2]
    [['unit[0].size', 52], ['unit[0].prevPos', -1]]

    Parameters: `path` one file of a ``timerlog`` folder (the folder is opened read-only).
    Returns the table, with ``df.attrs`` file, units shown. Raises the reader's typed errors,
    and ValueError for a unit number past the file's units.
    """
    path = Path(path)
    tz = _dt.UTC if tz is None else tz
    with tm.TimerLog.open(path.parent) as log:
        f = next((f for f in log.files if f.path.name == path.name), None)
        if f is None:
            raise ValueError(f"{path}: not a file of its timer log folder (a 20-digit name)")
        count = int(((log.positions >= f.start) & (log.positions < f.start + f.size)).sum())
    numbers = (np.arange(min(_DEFAULT_ENTRIES, count), dtype=np.int64) if units is None
               else _numbers(units, count, "units"))
    with open(path, "rb") as fh:   # the units shown, not the whole (100 MiB) file
        buf = fh.read((int(numbers.max()) + 1) * tm.UNIT.size if len(numbers) else 0)
    rows = []
    for n in numbers.tolist():
        rows += _timer_unit_rows(buf, n * tm.UNIT.size, n, tz)
    df = pd.DataFrame(rows, columns=HEX_FIELD_COLUMNS)
    for c in ("offset", "size", "value"):
        df[c] = df[c].astype(np.int64)
    df.attrs.update({"file": path.name, "file_size": f.size, "units": numbers.tolist()})
    return df


def _text(data: bytes, limit: int = 48) -> str:
    """Bytes as readable text: UTF-8 with the property separators shown as \\x01 / \\x02."""
    text = data.decode("utf-8", errors="replace").replace("\x01", "\\x01").replace("\x02", "\\x02")
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _record_meaning(name: str, m, value: int, tz) -> str:
    if name in ("BORNTIMESTAMP", "STORETIMESTAMP"):
        return _iso(value, tz)
    if name == "MAGICCODE":
        return {cl.MAGIC_V1: "v1 record (1-byte TOPICLEN)", cl.MAGIC_V2: "v2 record (2-byte TOPICLEN)"}.get(
            value, "not a message magic")
    if name == "PHYSICALOFFSET":
        return f"this record's own CommitLog offset ({value:,})"
    if name == "SYSFLAG":
        kind = {TRANSACTION_NOT_TYPE: "normal", TRANSACTION_PREPARED_TYPE: "prepared",
                TRANSACTION_COMMIT_TYPE: "commit", TRANSACTION_ROLLBACK_TYPE: "rollback"}[transaction_type(value)]
        return (f"transaction type {kind}; IPv6 born/store host "
                f"{bool(value & cl.BORNHOST_V6_FLAG)}/{bool(value & cl.STOREHOSTADDRESS_V6_FLAG)}")
    if name in ("BORNHOST", "STOREHOST"):
        return (m.born_host if name == "BORNHOST" else m.store_host).rsplit(":", 1)[0]
    if name.endswith(" port"):
        return f"port {value}"
    if name == "QUEUEOFFSET":
        return f"unit {value:,} of queue {m.topic}/{m.queue_id}"
    if name in ("BODYLEN", "TOPICLEN", "PROPERTIESLENGTH"):
        return f"{value:,} bytes follow"
    if name == "TOTALSIZE":
        return f"the next record starts {value:,} bytes on"
    if name == "BODYCRC":
        return "CRC32(BODY) & 0x7FFFFFFF" + ("" if m.crc_ok else ": does NOT match the body")
    return ""


def record_hex_fields(path: str | os.PathLike, position: int, *, tz: _dt.tzinfo | None = None) -> pd.DataFrame:
    r"""One row per field of the CommitLog message record at byte `position` of the file `path`.

    Columns as :func:`hex_fields` (:data:`HEX_FIELD_COLUMNS`), region "record", fields named as
    in MessageDecoder (``TOTALSIZE``, ``BORNHOST``, ``BODY``; a host's port is
    ``BORNHOST port``), offsets from the start of the file. ``value`` is the field as a signed
    big-endian integer; for BODY, TOPIC and PROPERTIES (and the host addresses) it is the number
    of bytes, and ``meaning`` holds the text. ``df.attrs``: kind "commitlog", file, file_size,
    position, phy_offset, total_size. Cost: one record read.

    >>> import tempfile, os
    >>> from rmqlab.formats.commitlog import encode_message
    >>> p = os.path.join(tempfile.mkdtemp(), "0" * 20)
    >>> _ = open(p, "wb").write(encode_message(topic="T", body=b"hi", properties={"KEYS": "k1 k2"}))
    >>> df = record_hex_fields(p, 0)
    >>> df.set_index("field").loc[["TOTALSIZE", "BODY", "PROPERTIES"], ["offset", "value", "meaning"]].values.tolist()
    [[0, 105, 'the next record starts 105 bytes on'], [88, 2, 'hi'], [94, 11, 'KEYS\\x01k1 k2\\x02']]

    Raises the reader's typed errors when no message starts at `position`.
    """
    path = Path(path)
    tz = _dt.UTC if tz is None else tz
    m = cl.read_message(path, position)
    raw = m.encode()
    rows = []
    text_fields = {"BODY": m.body, "TOPIC": m.topic.encode("utf-8"), "PROPERTIES": m.properties_raw}
    for name, at, size in m.field_spans():
        data = raw[at:at + size]
        if name in text_fields or name in ("BORNHOST", "STOREHOST"):
            value = size
            meaning = _text(text_fields[name]) if name in text_fields else _record_meaning(name, m, 0, tz)
        else:
            value = int.from_bytes(data, "big", signed=True)
            meaning = _record_meaning(name, m, value, tz)
        rows.append((position + at, size, "record", name, _hex(data), value, meaning))
    df = pd.DataFrame(rows, columns=HEX_FIELD_COLUMNS)
    for c in ("offset", "size", "value"):
        df[c] = df[c].astype(np.int64)
    df.attrs.update({"kind": "commitlog", "file": path.name, "file_size": path.stat().st_size,
                     "position": int(position), "phy_offset": m.phy_offset, "total_size": m.total_size})
    return df


def kafka_index_hex_fields(path: str | os.PathLike, *, entries: Numbers = None, zeros: int = 2,
                           tz: _dt.tzinfo | None = None) -> pd.DataFrame:
    """One row per field of the chosen entries of a Kafka ``.index`` or ``.timeindex`` file.

    Columns as :func:`hex_fields` (:data:`HEX_FIELD_COLUMNS`); region "offset-entry" or
    "time-entry"; fields named as in Kafka's OffsetIndex / TimeIndex (``entry[2].relativeOffset``,
    ``entry[2].position``, ``entry[2].timestamp``). The meaning gives the absolute offset (base
    offset from the file name + relative offset), the byte position in the segment's ``.log``
    and the clock time of a timestamp. Entries are the ones :func:`rmqlab.kafka.index.entry_count`
    counts with ``count="dump"`` (DumpLogSegments: a zero tail is not entries); `entries` picks
    some of them (default: all, up to 16). When the file holds more bytes than its entries (an
    untrimmed, preallocated index), `zeros` entries' worth of its tail is shown as region
    "zero-tail". ``df.attrs``: kind "kafka-index", file, file_size, base_offset, entry_size,
    entries (the count), shown. Cost: O(entries shown).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), kix.segment_file_name(100, ".index"))
    >>> kix.build_offset_index(p, [(105, 4130)])
    1
    >>> rows = kafka_index_hex_fields(p)[["offset", "field", "value", "meaning"]].values.tolist()
    >>> rows   # doctest: +NORMALIZE_WHITESPACE
    [[0, 'entry[0].relativeOffset', 5, 'offset 100 + 5 = 105'],
     [4, 'entry[0].position', 4130, 'byte 4,130 of 00000000000000000100.log']]
    """
    path = Path(path)
    tz = _dt.UTC if tz is None else tz
    kind = kix.TIME_ENTRY if path.suffix == kix.TIME_INDEX_SUFFIX else kix.OFFSET_ENTRY
    region = "time-entry" if kind is kix.TIME_ENTRY else "offset-entry"
    base = kix.base_offset_of(path)
    data = path.read_bytes()
    count = kix.entry_count(path, count="dump")
    numbers = (np.arange(min(count, 16), dtype=np.int64) if entries is None else _numbers(entries, count, "entries"))
    log_name = kix.segment_file_name(base, kix.LOG_SUFFIX)
    rows = []
    for n in numbers.tolist():
        at = n * kind.size
        e = kind.unpack_from(data, at)
        for fld, value in zip(kind.fields, e):
            if fld.name == "relative_offset":
                meaning = f"offset {base:,} + {value:,} = {base + value:,}"
            elif fld.name == "position":
                meaning = f"byte {value:,} of {log_name}"
            else:
                meaning = _iso(value, tz)
            rows.append((at + fld.offset, fld.size, region, f"entry[{n}].{fld.java_name}",
                         _hex(data[at + fld.offset:at + fld.offset + fld.size]), int(value), meaning))
    tail = count * kind.size
    shown_zeros = min(len(data) - tail, zeros * kind.size) // kind.size * kind.size
    for at in range(tail, tail + shown_zeros, kind.size):
        rows.append((at, kind.size, "zero-tail", f"zeros[{(at - tail) // kind.size}]", _hex(data[at:at + kind.size]),
                     int.from_bytes(data[at:at + 8], "big", signed=True), "preallocated, never written"))
    df = pd.DataFrame(rows, columns=HEX_FIELD_COLUMNS)
    for c in ("offset", "size", "value"):
        df[c] = df[c].astype(np.int64)
    df.attrs.update({"kind": "kafka-index", "file": path.name, "file_size": len(data), "base_offset": base,
                     "entry_size": kind.size, "entries": count, "shown": numbers.tolist()})
    return df


_FONT = 7.5
_CHAR_IN = 0.6021 * _FONT / 72          # DejaVu Sans Mono advances 0.602 em per character
_LINE_IN = 1.45 * _FONT / 72
_OFFSET_CHARS = 27                      # "  420,000,020  0x1908b134" and two spaces
_BYTES_X = _OFFSET_CHARS
_NOTE_X = _BYTES_X + 3 * _MAX_ROW_BYTES + 2
_NOTE_CHARS = 74
#: Unit notes carry a full ISO time or a 20-digit ext address, so their column widens up to this.
_MAX_UNIT_NOTE_CHARS = 120

_HEADER_COLOURS = ["#fdd0a2", "#fdae6b", "#c7e9c0", "#a1d99b", "#dadaeb", "#bcbddc"]
_SLOT_COLOURS = ["#c6dbef", "#9ecae1"]
_ENTRY_COLOURS = {"keyHash": "#fbb4ae", "phyOffset": "#b3cde3", "timeDiff": "#ccebc5",
                  "prevIndex": "#decbe4"}
#: Unit fields by kind, so that the same kind has the same colour in both queue formats.
_UNIT_COLOURS = {"size": "#fdd0a2", "tagsCode": "#fbb4ae", "msgStoreTime": "#ccebc5",
                 "storeTime": "#ccebc5", "bitMapSize": "#dadaeb", "filterBitMap": "#bcbddc",
                 "commitlogOffset": "#b3cde3", "msgBaseOffset": "#bebada", "batchSize": "#ffffb3",
                 "compactedOffset": "#e5d8bd", "reserved": "#f0f0f0", "prevPos": "#decbe4",
                 "magic": "#fdae6b", "currWriteTime": "#ccebc5", "delayTime": "#a1d99b", "offsetPy": "#b3cde3",
                 "sizePy": "#fdd0a2", "hashTopic": "#fbb4ae"}
_END_COLOUR = "#fb8072"
#: CommitLog record fields by kind: sizes, codes, queue, offsets, flags, times, hosts, payload.
_RECORD_COLOURS = {"TOTALSIZE": "#fdd0a2", "MAGICCODE": "#fdae6b", "BODYCRC": "#fbb4ae", "QUEUEID": "#dadaeb",
                   "FLAG": "#f0f0f0", "QUEUEOFFSET": "#bcbddc", "PHYSICALOFFSET": "#b3cde3", "SYSFLAG": "#ffffb3",
                   "BORNTIMESTAMP": "#ccebc5", "STORETIMESTAMP": "#a1d99b", "RECONSUMETIMES": "#f0f0f0",
                   "PREPAREDTRANSACTIONOFFSET": "#b3cde3", "BODYLEN": "#fdd0a2", "BODY": "#e5d8bd",
                   "TOPICLEN": "#fdd0a2", "TOPIC": "#decbe4", "PROPERTIESLENGTH": "#fdd0a2", "PROPERTIES": "#fddaec"}
_KAFKA_COLOURS = {"relativeOffset": "#bcbddc", "position": "#b3cde3", "timestamp": "#ccebc5"}


def _layout_summary(layout) -> str:
    """ "size i16, tagsCode i64, ..." of a unit layout."""
    return ", ".join(f"{f.java_name} i{8 * f.size}" for f in layout.fields)


_REGION_TITLES = {
    "header": f"header ({HEADER.size} bytes: IndexHeader)",
    "slot": f"slots ({SLOT.size} bytes each: number of the newest entry of the chain, 0 = empty)",
    "entry": f"entries ({ENTRY.size} bytes: keyHash i32, phyOffset i64, timeDiff i32, prevIndex i32)",
    "ext-unit": f"units (CqExtUnit, {cqx.MIN_UNIT_SIZE} bytes: {_layout_summary(cqx.UNIT_HEADER)}; "
                "then bitMapSize bytes of filter bit map)",
    "batch-unit": f"units ({bcq.UNIT_SIZE} bytes: {_layout_summary(bcq.UNIT)})",
    "timer-unit": f"timer log units ({tm.UNIT.size} bytes: {_layout_summary(tm.UNIT)})",
    "end": "end of data (where the broker's walk over the units stops)",
    "record": "message record (MessageDecoder order; BORNHOST / STOREHOST 4 bytes, 16 when SYSFLAG says IPv6)",
    "offset-entry": f"offset index entries ({kix.OFFSET_ENTRY.size} bytes: relativeOffset i32, position i32)",
    "time-entry": f"time index entries ({kix.TIME_ENTRY.size} bytes: timestamp i64, relativeOffset i32)",
    "zero-tail": "preallocated zeros after the entries (an index that was never trimmed)",
}
_UNIT_REGIONS = {"ext-unit": "ConsumeQueueExt", "batch-unit": "BatchConsumeQueue", "timer-unit": "TimerLog"}
_VALUE_NOTE = "(big-endian, signed; value = the bytes as an integer)"


@dataclass
class _Row:
    kind: str                      # "title", "gap", "bytes"
    text: str = ""
    offset: int = 0
    fields: list | None = None     # rows of the table

    @property
    def lines(self) -> int:
        return max(1, len(self.fields)) if self.kind == "bytes" else 1


def _field_colour(region: str, field: str, index: int) -> str:
    if region == "header":
        return _HEADER_COLOURS[index % len(_HEADER_COLOURS)]
    if region == "slot":
        return _SLOT_COLOURS[int(field[5:-1]) % 2]
    if region == "end":
        return _END_COLOUR
    if region == "record":
        return _RECORD_COLOURS.get(field.split(" ")[0], "#c6dbef")
    short = field.rsplit(".", 1)[-1]
    if region in ("offset-entry", "time-entry", "zero-tail"):
        return _KAFKA_COLOURS.get(short, "#d9d9d9")
    return _ENTRY_COLOURS[short] if region == "entry" else _UNIT_COLOURS.get(short, "#d9d9d9")


def _describe_gap(start: int, stop: int, hash_slot_num: int, entries_offset: int) -> str:
    """What the bytes [start, stop) hold, e.g. "slots 12..1023, entries 0..3"."""
    parts = []
    s_lo, s_hi = max(start, HEADER.size), min(stop, entries_offset)
    if s_lo < s_hi:
        a, b = (s_lo - HEADER.size) // SLOT.size, (s_hi - HEADER.size) // SLOT.size - 1
        parts.append(f"slot {a}" if a == b else f"slots {a}..{b}")
    e_lo, e_hi = max(start, entries_offset), stop
    if e_lo < e_hi:
        a, b = (e_lo - entries_offset) // ENTRY.size, (e_hi - entries_offset) // ENTRY.size - 1
        parts.append(f"entry {a}" if a == b else f"entries {a}..{b}")
    return ", ".join(parts)


def _unit_number(field: str | None) -> int | None:
    """3 for "unit[3].tagsCode"; None for "end" or no field."""
    if field is None or not field.startswith("unit["):
        return None
    return int(field[5:field.index("]")])


def _describe_unit_gap(before: str | None, after: str | None) -> str:
    """What lies between two shown fields of a queue file, from their unit numbers alone
    (ext units vary in size, so bytes cannot be turned into unit numbers)."""
    a = 0 if before is None else _unit_number(before)
    b = _unit_number(after)
    if a is None:
        return "unused"
    if before is not None:
        a += 1
    if b is None:
        return f"units from {a} on" if after is not None else ""
    if b <= a:
        return ""
    return f"unit {a}" if a == b - 1 else f"units {a}..{b - 1}"


def _record(field: str) -> str | None:
    """The record a field belongs to ("entry[3]" of "entry[3].keyHash"); None for a lone field."""
    return field.rsplit(".", 1)[0] if "." in field else None


def _gap_text(size: int, what: str, tail: str) -> str:
    return f"… {size:,} bytes{f' ({what})' if what else ''} not shown{tail}"


def _rows(df: pd.DataFrame) -> list[_Row]:
    """Group fields into dump rows: a new row at each region change, gap or record, at most 20
    bytes a row and never a field split across rows."""
    index_file = "hash_slot_num" in df.attrs
    if index_file:
        m = int(df.attrs["hash_slot_num"])
        entries_offset = HEADER.size + SLOT.size * m

    kind = df.attrs.get("kind")

    def describe(start: int, stop: int, before: str | None, after: str | None) -> str:
        if index_file:
            return _describe_gap(start, stop, m, entries_offset)
        if kind == "commitlog":
            return "other records" if before is None else "the rest of the file"
        if kind == "kafka-index":
            size = int(df.attrs["entry_size"])
            a, b = -(-start // size), stop // size - 1
            return "" if b < a else f"entry {a}" if a == b else f"entries {a}..{b}"
        return _describe_unit_gap(before, after)

    rows: list[_Row] = []
    end = 0
    region = None
    record = None
    previous_field = None
    current: _Row | None = None
    for i, r in enumerate(df.itertuples(index=False)):
        r = r._asdict()
        r["colour"] = _field_colour(r["region"], r["field"], i)
        gap = r["offset"] - end
        if gap > 0:
            rows.append(_Row("gap", _gap_text(gap, describe(end, r["offset"], previous_field, r["field"]), "")))
            current = None
        if r["region"] != region:
            rows.append(_Row("title", _REGION_TITLES[r["region"]]))
            region = r["region"]
            current = None
        if _record(r["field"]) != record:
            record = _record(r["field"])
            current = None
        used = 0 if current is None else sum(x["size"] for x in current.fields)
        if current is None or used + r["size"] > _ROW_BYTES.get(r["region"], _MAX_ROW_BYTES):
            current = _Row("bytes", offset=r["offset"], fields=[])
            rows.append(current)
        current.fields.append(r)
        end = r["offset"] + r["size"]
        previous_field = r["field"]
    tail = int(df.attrs["file_size"]) - end
    if tail > 0:
        rows.append(_Row("gap", _gap_text(tail, describe(end, end + tail, previous_field, None),
                                          ", to the end of the file")))
    return rows


def _default_heading(df: pd.DataFrame) -> str:
    a = df.attrs
    if "hash_slot_num" in a:
        return (f"{a['file']}: {a['file_size']:,} bytes = {HEADER.size} + {SLOT.size} × {a['hash_slot_num']:,} "
                f"slots + {ENTRY.size} × {a['index_num']:,} entries")
    if a.get("kind") == "commitlog":
        return (f"CommitLog file {a['file']}: the message at position {a['position']:,} "
                f"(physical offset {a['phy_offset']:,}), {a['total_size']:,} bytes")
    if a.get("kind") == "kafka-index":
        return (f"{a['file']}: {a['file_size']:,} bytes = {a['entries']:,} entries of {a['entry_size']} bytes"
                f"{' + zeros' if a['file_size'] > a['entries'] * a['entry_size'] else ''}; "
                f"base offset {a['base_offset']:,}")
    kind = next((_UNIT_REGIONS[r] for r in df["region"] if r in _UNIT_REGIONS), "queue")
    return f"{a.get('file', '')}: {kind} file, {int(a['file_size']):,} bytes; data ends at byte {a['end']:,}"


def fields_hex_figure(table: pd.DataFrame, *, title: str | None = None) -> Figure:
    """A field table of any of the three formats drawn as an annotated hex dump.

    The table is one of :func:`hex_fields`, :func:`ext_hex_fields` or :func:`batch_hex_fields`.
    Units: offsets in bytes from the start of the file; values as the table gives them
    (signed big-endian integers). Cost: O(rows of the table), saving as PNG included.

    >>> import tempfile, os
    >>> from rmqlab.formats.consumequeue_ext import ConsumeQueueExtWriter
    >>> d = tempfile.mkdtemp()
    >>> with ConsumeQueueExtWriter.create(d, mapped_file_size=64) as w:
    ...     _ = w.put_many([2567159] * 2, [1532257321553] * 2)
    >>> fig = fields_hex_figure(ext_hex_fields(os.path.join(d, "0" * 20)))
    >>> sorted(p.get_gid() for p in fig.axes[0].patches if p.get_gid())[:3]
    ['field:end', 'field:unit[0].bitMapSize', 'field:unit[0].msgStoreTime']

    Left: the offset of each row's first byte (decimal and hex); middle: the bytes, at most 20
    a row, a new row at each region, record (``entry[3]``, ``unit[3]``) or gap, no field split
    (a field wider than a row shows its first bytes and "…"), each field's bytes shaded in the
    colour of its kind (tagsCode, store time, ... alike in every format; the end-of-data
    marker in red); right: one line per field, same colour, "name = value  meaning". A title
    row opens each region; skipped bytes are one line, "… N bytes (units 5..9) not shown".
    Each byte-span rectangle has the gid ``"field:<name>"``. Deterministic: the same table
    gives the same PNG bytes.

    Parameters: `table` a table with the columns :data:`HEX_FIELD_COLUMNS` and the ``attrs``
    its function sets; `title` the first heading line (default: the file, its size and, for
    a queue file, where its data ends). Returns a matplotlib Figure. Raises KeyError for a
    region none of the three functions produces.
    """
    rows = _rows(table)
    index_file = "hash_slot_num" in table.attrs
    note_chars = _NOTE_CHARS
    if not index_file and len(table):
        longest = max(len(f"{r.field} = {r.value}  {r.meaning}") for r in table.itertuples())
        note_chars = min(max(_NOTE_CHARS, longest), _MAX_UNIT_NOTE_CHARS)
    width_chars = _NOTE_X + note_chars
    height_lines = sum(r.lines for r in rows) + 0.5 * sum(r.kind != "bytes" for r in rows)
    top_in, bottom_in, side_in = 0.55, 0.15, 0.15
    fig_w = width_chars * _CHAR_IN + 2 * side_in
    fig_h = max(height_lines, 1) * _LINE_IN + top_in + bottom_in
    fig = Figure(figsize=(fig_w, fig_h))
    ax = fig.add_axes((side_in / fig_w, bottom_in / fig_h, width_chars * _CHAR_IN / fig_w,
                       max(height_lines, 1) * _LINE_IN / fig_h))
    ax.set_xlim(0, width_chars)
    ax.set_ylim(max(height_lines, 1), 0)
    ax.set_axis_off()
    heading = _default_heading(table) if title is None else title
    fig.text(0.5, 1 - 0.08 / fig_h, f"{heading}\n{_VALUE_NOTE}", ha="center", va="top", fontsize=8.5)
    mono = dict(family=MONO, fontsize=_FONT, va="center")
    y = 0.0
    for row in rows:
        if row.kind == "title":
            y += 0.5
            ax.text(0, y + 0.5, row.text, fontweight="bold", ha="left", **mono)
            y += 1
            continue
        if row.kind == "gap":
            ax.text(_BYTES_X, y + 0.5, row.text, color="#666666", fontstyle="italic", ha="left",
                    **mono)
            y += 1.5
            continue
        ax.text(0, y + 0.5, f"{row.offset:>13,}  0x{row.offset:08x}", color="#444444", ha="left",
                **mono)
        col = 0
        for line, fld in enumerate(row.fields):
            x = _BYTES_X + 3 * col
            shown = min(fld["size"], _MAX_ROW_BYTES)
            chars = 3 * shown - 1
            rect = Rectangle((x - 0.3, y + 0.08), chars + 0.6, 0.84, facecolor=fld["colour"],
                             edgecolor="none")
            rect.set_gid(f"field:{fld['field']}")
            ax.add_patch(rect)
            hex_text = fld["hex"] if shown == fld["size"] else fld["hex"][:chars - 1] + "…"
            ax.text(x, y + 0.5, hex_text, ha="left", **mono)
            col += shown
            note_y = y + line + 0.5
            ax.add_patch(Rectangle((_NOTE_X - 1.6, note_y - 0.38), 1.0, 0.76,
                                   facecolor=fld["colour"], edgecolor="#777777", linewidth=0.4))
            note = f"{fld['field']} = {fld['value']}  {fld['meaning']}"
            if len(note) > note_chars:
                note = note[:note_chars - 1] + "…"
            ax.text(_NOTE_X, note_y, note, ha="left", **mono)
        y += row.lines
    return fig


def annotated_hex_figure(path_or_file: PathOrFile, *, slots: Numbers = None, entries: Numbers = None,
                         hash_slot_num: int | None = None, index_num: int | None = None,
                         tz: _dt.tzinfo | None = None) -> Figure:
    """The fields of :func:`hex_fields` drawn as an annotated hex dump (:func:`fields_hex_figure`).

    Left: the offset of each row's first byte (decimal and hex); middle: the bytes, laid out
    so that no field is split (two 8-byte header fields a row, then the two 4-byte counts; five
    slots a row; one 20-byte entry a row), each field's bytes shaded in its own colour; right: one line
    per field of the row, with the same colour, giving its name, signed value and meaning.
    A title row opens each region, and skipped bytes are one line, "… N bytes (slots k..m)
    not shown". Arguments as :func:`hex_fields`. Each byte-span rectangle has the gid
    ``"field:<name>"`` (for instance ``"field:entry[3].keyHash"``). Deterministic: the same
    file and arguments give the same PNG bytes. Cost: O(fields shown), saving as PNG included.
    """
    return fields_hex_figure(hex_fields(path_or_file, slots=slots, entries=entries, hash_slot_num=hash_slot_num,
                                        index_num=index_num, tz=tz))
