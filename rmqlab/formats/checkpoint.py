"""RocketMQ's StoreCheckpoint: the ``checkpoint`` file recovery starts from.

Mirrors ``org.apache.rocketmq.store.StoreCheckpoint`` (RocketMQ store module; read in 4.9.x,
5.0.0, 5.1.0, 5.1.1 and 5.3.3, and in the 5.4.0 and 5.5.0 jars' bytecode). The broker maps the
first ``MappedFile.OS_PAGE_SIZE`` = 4096 bytes of ``<storePathRootDir>/checkpoint`` read-write
(creating or extending the file to 4096 bytes) and keeps big-endian longs at fixed offsets::

    0   physicMsgTimestamp   store time of the last CommitLog message flushed (ms)
    8   logicsMsgTimestamp   store time of the last message dispatched to a ConsumeQueue (ms)
    16  indexMsgTimestamp    end time of the last *full* IndexFile (ms); 0 until one fills
    24  masterFlushedOffset  5.0.0+: the master's flushed CommitLog offset (HA, slave side)
    32  confirmPhyOffset     5.1.1+: the confirmed CommitLog offset (set at recovery, HA)
    40  logicsPhysicalOffset 5.5.0+: CommitLog offset the ConsumeQueues were dispatched to

4.x reads and writes only the first three; 5.0.0-5.1.0 four; 5.1.1-5.4.x five; 5.5.0+ all six. A 4.x file has
zeros at 24 and 32, and so has a 5.x file whose broker never set them, so a zero there cannot
tell the versions apart: :func:`detect_layout` says what the bytes prove and no more.

Recovery after an abnormal shutdown uses ``getMinTimestamp()`` = ``min(physic, logics) - 3000``
(floored at 0) and ``getMinTimestampIndex()`` = ``min(getMinTimestamp(), indexMsgTimestamp)``:
the CommitLog is re-dispatched from the newest file whose first message is not newer than
that (``isMappedFileMatchedRecover``; the index variant when messageIndexSafe is on), and
index files newer than indexMsgTimestamp are deleted.

>>> import tempfile, os
>>> path = os.path.join(tempfile.mkdtemp(), "checkpoint")
>>> write_checkpoint(path, StoreCheckpoint(1718000005000, 1718000004000, 0))
>>> cp = read_checkpoint(path)
>>> cp.min_timestamp, cp.min_timestamp_index, os.path.getsize(path)
(1718000001000, 0, 4096)
"""
from __future__ import annotations

import datetime as _dt
import mmap
import os
from dataclasses import dataclass, replace
from dataclasses import fields as dc_fields
from pathlib import Path
from typing import BinaryIO, Literal

from rmqlab.errors import FormatError, GeometryError, TruncatedFileError
from rmqlab.formats.layout import Layout

__all__ = [
    "CHECKPOINT",
    "FILE_SIZE",
    "LAYOUT_FIELDS",
    "StoreCheckpoint",
    "CheckpointLayout",
    "detect_layout",
    "read_checkpoint",
    "write_checkpoint",
    "update_checkpoint",
    "time_millis_to_human_string",
]

# StoreCheckpoint.java: the constructor's getLong(0/8/16/24/32) and flush()'s putLong at the same offsets
CHECKPOINT = Layout("StoreCheckpoint", [
    ("physic_msg_timestamp", "q", "store time (ms) of the last CommitLog message flushed"),
    ("logics_msg_timestamp", "q", "store time (ms) of the last message put into a ConsumeQueue"),
    ("index_msg_timestamp", "q", "end time (ms) of the last full IndexFile; 0 until one fills"),
    ("master_flushed_offset", "q", "5.0.0+: master's flushed CommitLog offset (HA slave)"),
    ("confirm_phy_offset", "q", "5.1.1+: confirmed CommitLog offset (recovery / HA)"),
    # 5.5.0: getLong(40) in the constructor, putLong(40) in flush(); absent from 5.4.0
    ("logics_physical_offset", "q", "5.5.0+: CommitLog offset the ConsumeQueues were dispatched to"),
])
#: MappedFile.OS_PAGE_SIZE: the broker maps (and so sizes the file to) 4096 bytes.
FILE_SIZE = 4096
#: Which fields each broker line reads and writes.
LAYOUT_FIELDS: dict[str, tuple[str, ...]] = {
    "4": ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp"),
    "5.0": ("physic_msg_timestamp", "logics_msg_timestamp", "index_msg_timestamp", "master_flushed_offset"),
    "5.1.1": tuple(f.name for f in CHECKPOINT.fields)[:5],
    "5.5": tuple(f.name for f in CHECKPOINT.fields),
}
LayoutName = Literal["4", "5.0", "5.1.1", "5.5"]
_TIMESTAMPS = LAYOUT_FIELDS["4"]


def time_millis_to_human_string(ms: int, tz: _dt.tzinfo | None = None) -> str:
    """UtilAll.timeMillisToHumanString: ``yyyyMMddHHmmssSSS`` in `tz` (default: local time,
    as the broker logs it).

    >>> time_millis_to_human_string(1718000000123, _dt.timezone.utc)
    '20240610061320123'

    A time outside the years 1..9999 (any long can be stored) raises ValueError.
    """
    try:
        t = _dt.datetime.fromtimestamp(ms / 1000, tz=tz or _dt.UTC)
        if tz is None:
            t = t.astimezone()
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"{ms} ms is outside the dates datetime can show (years 1..9999)") from None
    return t.strftime("%Y%m%d%H%M%S") + f"{ms % 1000:03d}"


@dataclass(frozen=True)
class CheckpointLayout:
    """What a checkpoint's bytes prove about the broker version that wrote it.

    ``min_version`` is the oldest line that can have written these bytes ("4", "5.0", "5.1.1"
    or "5.5"); ``ambiguous`` is True when zeros leave newer lines possible too (always, unless
    logics_physical_offset is set); ``known_fields`` are the fields certainly meaningful.
    """

    min_version: str
    ambiguous: bool
    known_fields: tuple[str, ...]
    note: str


@dataclass(frozen=True)
class StoreCheckpoint:
    """The six longs of a checkpoint file (5.x fields are 0 in a 4.x file)."""

    physic_msg_timestamp: int = 0
    logics_msg_timestamp: int = 0
    index_msg_timestamp: int = 0
    master_flushed_offset: int = 0
    confirm_phy_offset: int = 0
    logics_physical_offset: int = 0

    def __post_init__(self):
        for f in dc_fields(self):
            v = getattr(self, f.name)
            if not isinstance(v, int) or isinstance(v, bool) or not -(2**63) <= v < 2**63:
                raise ValueError(f"{f.name} must be a Java long, got {v!r}")

    @property
    def min_timestamp(self) -> int:
        """getMinTimestamp(): ``min(physic, logics) - 3000`` ms, floored at 0 (Java long
        arithmetic: the subtraction wraps, so Long.MIN_VALUE gives a huge positive value)."""
        m = min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000
        m = ((m + 2**63) % 2**64) - 2**63
        return m if m >= 0 else 0

    @property
    def min_timestamp_index(self) -> int:
        """getMinTimestampIndex(): ``min(min_timestamp, index_msg_timestamp)``."""
        return min(self.min_timestamp, self.index_msg_timestamp)

    def recovery_timestamp(self, message_index_safe: bool = False) -> int:
        """The store time abnormal recovery looks for (CommitLog.isMappedFileMatchedRecover): it
        re-dispatches from the newest CommitLog file whose first message's store time is <=
        this. With ``messageIndexEnable`` and ``messageIndexSafe`` the index variant is used."""
        return self.min_timestamp_index if message_index_safe else self.min_timestamp

    @property
    def layout(self) -> CheckpointLayout:
        return detect_layout(self)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in dc_fields(self)}

    def times(self) -> dict[str, _dt.datetime | None]:
        """The three timestamps as UTC datetimes (None for 0: never set). A value outside the
        years 1..9999 (a corrupt field) raises :class:`FormatError` naming its offset and field."""
        out = {}
        for n in _TIMESTAMPS:
            v = getattr(self, n)
            try:
                out[n] = None if v == 0 else _dt.datetime.fromtimestamp(v / 1000, tz=_dt.UTC)
            except (OverflowError, OSError, ValueError):
                raise FormatError(f"{n} {v} ms is outside the dates datetime can show (years 1..9999)",
                                  offset=CHECKPOINT.offset(n), field=n) from None
        return out

    def describe(self, tz: _dt.tzinfo | None = _dt.UTC) -> str:
        """One line per field, timestamps also in the broker's log format (in `tz`; None = local)."""
        lines = []
        for f in CHECKPOINT.fields:
            v = getattr(self, f.name)
            extra = ""
            if f.name in _TIMESTAMPS:
                try:
                    extra = "  (never set)" if v == 0 else f"  {time_millis_to_human_string(v, tz)}"
                except ValueError:   # a corrupt field: show the number, not a date
                    extra = "  (not a date in years 1..9999)"
            lines.append(f"{f.offset:>3} {f.name:<22} {v:>20}{extra}")
        lines.append(f"    min_timestamp          {self.min_timestamp:>20}  (min(physic, logics) - 3000)")
        lines.append(f"    min_timestamp_index    {self.min_timestamp_index:>20}")
        lines.append(f"    layout: {self.layout.note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()


def detect_layout(cp: StoreCheckpoint) -> CheckpointLayout:
    """What the fields prove: a non-zero logics_physical_offset means 5.5.0+, a non-zero
    confirm_phy_offset 5.1.1+, a non-zero master_flushed_offset 5.0.0+; zeros cannot tell a
    4.x file from a 5.x one.

    >>> detect_layout(StoreCheckpoint(1, 1, 0)).ambiguous
    True
    """
    if cp.logics_physical_offset != 0:
        return CheckpointLayout("5.5", False, LAYOUT_FIELDS["5.5"], "5.5.0+ (logics_physical_offset is set)")
    if cp.confirm_phy_offset != 0:
        return CheckpointLayout("5.1.1", True, LAYOUT_FIELDS["5.1.1"],
                                "5.1.1+ (confirm_phy_offset is set); logics_physical_offset is 0, so 5.1.1-5.4.x "
                                "or a 5.5.0+ broker that never set it")
    if cp.master_flushed_offset != 0:
        return CheckpointLayout("5.0", True, LAYOUT_FIELDS["5.0"],
                                "5.0.0+ (master_flushed_offset is set); confirm_phy_offset is 0, so 5.0.0-5.1.0 "
                                "or a 5.1.1+ broker that never set it")
    return CheckpointLayout("4", True, LAYOUT_FIELDS["4"],
                            "cannot tell: the 5.x fields are 0, as in every 4.x file and in a 5.x file whose "
                            "broker never set them; only the three timestamps are known")


def _check_size(path: Path, size: int) -> None:
    if size < CHECKPOINT.size:
        raise TruncatedFileError(
            f"checkpoint is {size} bytes; the broker maps {FILE_SIZE} and reads longs up to byte "
            f"{CHECKPOINT.size}", path=path, offset=size, field=_field_at(size))
    if size != FILE_SIZE:
        raise GeometryError(f"checkpoint is {size} bytes, not {FILE_SIZE} (MappedFile.OS_PAGE_SIZE)",
                            path=path, offset=size, field="file size")


def _field_at(offset: int) -> str:
    for f in CHECKPOINT.fields:
        if f.offset <= offset < f.offset + f.size:
            return f.name
    return "file size"


def read_checkpoint(path: str | os.PathLike, *, strict: bool = True) -> StoreCheckpoint:
    """Read a checkpoint file (read-only: bytes and mtime unchanged). Cost: one 4 KiB read.

    With `strict` a file that is not exactly 4096 bytes raises :class:`TruncatedFileError`
    (shorter than the 40 bytes of fields) or :class:`GeometryError`. With ``strict=False`` the
    fields are read as the broker would after mapping the file: missing bytes read as 0. Bytes
    after the 48 field bytes are never read by any broker; non-zero ones raise
    :class:`FormatError` under `strict`.
    """
    path = Path(path)
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(FILE_SIZE)
    if strict:
        _check_size(path, size)
        rest = data[CHECKPOINT.size:]
        if rest.count(0) != len(rest):
            nz = next(i for i, b in enumerate(rest) if b)
            raise FormatError("non-zero bytes after the last field: no RocketMQ version writes there",
                              path=path, offset=CHECKPOINT.size + nz, field="padding")
    data = data[:CHECKPOINT.size].ljust(CHECKPOINT.size, b"\0")
    return StoreCheckpoint(*CHECKPOINT.unpack(data))


def _open_mapped(path: Path) -> tuple[BinaryIO, mmap.mmap]:
    """Open or create `path` read-write and map 4096 bytes, as the broker's constructor does."""
    fh = open(path, "r+b" if path.exists() else "w+b")
    try:
        size = os.fstat(fh.fileno()).st_size
        if size not in (0, FILE_SIZE):
            _check_size(path, size)
        if size < FILE_SIZE:
            fh.truncate(FILE_SIZE)  # FileChannel.map(READ_WRITE, 0, 4096) extends the file
        return fh, mmap.mmap(fh.fileno(), FILE_SIZE, access=mmap.ACCESS_WRITE)
    except BaseException:
        fh.close()
        raise


def write_checkpoint(path: str | os.PathLike, cp: StoreCheckpoint, *, layout: LayoutName = "5.5",
                     sync: bool = True) -> None:
    """Write `cp` as a broker of `layout` flushes it: create the 4096-byte file if missing and
    put the fields that line writes (4: three, 5.0: four, 5.1.1: five, 5.5: six); other bytes are left
    as they are. A 4.x broker cannot hold 5.x values, so non-zero ones raise ValueError.
    An existing file of the wrong size raises (see :func:`read_checkpoint`).
    """
    if layout not in LAYOUT_FIELDS:
        raise ValueError(f"layout must be one of {sorted(LAYOUT_FIELDS)}, got {layout!r}")
    names = LAYOUT_FIELDS[layout]
    lost = [n for n in LAYOUT_FIELDS["5.5"] if n not in names and getattr(cp, n) != 0]
    if lost:
        raise ValueError(f"a {layout} broker does not write {', '.join(lost)}; they must be 0")
    path = Path(path)
    fh, mm = _open_mapped(path)
    try:
        for n in names:
            f = CHECKPOINT.field(n)
            CHECKPOINT.field_struct(n).pack_into(mm, f.offset, getattr(cp, n))
        if sync:
            mm.flush()  # MappedByteBuffer.force()
    finally:
        mm.close()
        fh.close()


def update_checkpoint(path: str | os.PathLike, *, sync: bool = True, **values: int) -> StoreCheckpoint:
    """Set some fields of an existing checkpoint (like the broker's setters + flush) and return
    the new contents; the other bytes are untouched.

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "checkpoint")
    >>> write_checkpoint(p, StoreCheckpoint(5000, 6000, 0), layout="4")
    >>> update_checkpoint(p, index_msg_timestamp=4000).min_timestamp_index
    2000
    """
    unknown = set(values) - set(LAYOUT_FIELDS["5.1.1"])
    if unknown:
        raise TypeError(f"unknown checkpoint field(s): {', '.join(sorted(unknown))}")
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no checkpoint file; use write_checkpoint")
    current = read_checkpoint(path)
    new = replace(current, **{k: int(v) for k, v in values.items()})
    fh, mm = _open_mapped(path)
    try:
        for n in values:
            CHECKPOINT.field_struct(n).pack_into(mm, CHECKPOINT.offset(n), getattr(new, n))
        if sync:
            mm.flush()
    finally:
        mm.close()
        fh.close()
    return new
