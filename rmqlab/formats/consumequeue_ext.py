"""RocketMQ's ConsumeQueueExt: the optional extension files of a ConsumeQueue.

Mirrors ``org.apache.rocketmq.store.ConsumeQueueExt`` (with ``CqExtUnit``) and its use in
``ConsumeQueue.putMessagePositionInfoWrapper`` / ``recover``, ``MessageStoreConfig``
(``enableConsumeQueueExt``, default false; ``mappedFileSizeConsumeQueueExt``, default 48 MiB;
``bitMapLengthConsumeQueueExt``, default 64) and ``StorePathConfigHelper.getStorePathConsumeQueueExt``,
read at rocketmq-all-4.2.0 (d9fc71b9) and rocketmq-all-5.3.1 (b122c810). 5.3.1 still has the
class with the same unit layout, address rules and file rules (it only gained getTotalSize).

With ``enableConsumeQueueExt`` the broker writes, for every message dispatched to a queue, one
ext unit to ``consumequeue_ext/<topic>/<queueId>/`` and stores the unit's *address* in the
ConsumeQueue unit's tagsCode instead of the tags hash. A unit is (big-endian)::

    size            i16   the unit's length in bytes: 20 + bit_map_size
    tags_code       i64   what the ConsumeQueue unit would have held (tags hashCode, delivery time)
    msg_store_time  i64   the message's store timestamp (ms)
    bit_map_size    i16   length of the filter bit map that follows
    (bit map)             bit_map_size bytes: the SQL92 filter bit map (CommitLogDispatcherCalcBitMap,
                          only with enableCalcFilterBitMap; otherwise absent)

Facts settled from the Java source:

* **Addresses.** ``MAX_ADDR = Integer.MIN_VALUE - 1L``; ``isExtAddr(a)`` is ``a <= MAX_ADDR``;
  ``decorate(offset)`` is ``offset + Long.MIN_VALUE`` unless the value already is an address;
  ``unDecorate(a)`` is ``a - Long.MIN_VALUE`` for an address, else ``a`` (Java long arithmetic
  wraps). The offset is a byte offset in the ext folder's logical byte space.
* **Files.** Named by the 20-digit byte offset of their start, ``mappedFileSizeConsumeQueueExt``
  bytes each (no rounding), preallocated, so unused bytes are zeros.
* **End of data.** ``put`` writes a unit only if ``size <= fileSize - wrotePosition - 4``
  (``END_BLANK_DATA_LENGTH``); otherwise ``fullFillToEnd`` writes the short -1 at the write
  position, marks the file full and moves to a new file. ``recover`` walks each file reading
  the 2-byte size: a size > 0 is a unit, anything else ends that file's data.
* **Failure.** A unit larger than ``Short.MAX_VALUE`` (or a folder past ``MAX_REAL_OFFSET``) is
  not written: put returns 1 and the ConsumeQueue keeps the plain tags code.

Entry points, like :mod:`rmqlab.formats.consumequeue`: :meth:`ConsumeQueueExt.open` maps the
files read-only (lazy: :meth:`~ConsumeQueueExt.get` reads one unit where the broker would,
the walk runs on first need); :meth:`ConsumeQueueExt.read` loads them into memory;
:func:`read_ext_info` returns only counts and ends; :class:`ConsumeQueueExtWriter` appends as
``put`` does.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> with ConsumeQueueExtWriter.create(d, mapped_file_size=60) as w:   # 2 units a file
...     [w.put(2567159, 1532257321553 + i) for i in range(3)]
[-9223372036854775808, -9223372036854775788, -9223372036854775748]
>>> with ConsumeQueueExt.open(d) as x:
...     x.get(-9223372036854775748)
ExtUnit(address=-9223372036854775748, offset=60, size=20, tags_code=2567159, msg_store_time=1532257321555, bit_map=b'')
"""
from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

import numpy as np

from rmqlab.errors import CorruptIndexError, FormatError, GeometryError, RmqlabError, TruncatedFileError
from rmqlab.formats.layout import Layout
from rmqlab.formats.mapped import MappedFolder, close_handles
from rmqlab.formats.storepaths import CONSUMEQUEUE_EXT
from rmqlab.jvm.longs import LONG_MIN

__all__ = [
    "UNIT_HEADER",
    "MIN_UNIT_SIZE",
    "MAX_UNIT_SIZE",
    "END_BLANK_DATA_LENGTH",
    "FILL_MARKER",
    "MAX_ADDR",
    "MAX_REAL_OFFSET",
    "DEFAULT_MAPPED_FILE_SIZE",
    "DEFAULT_BIT_MAP_LENGTH",
    "PUT_FAILED",
    "UNIT_DTYPE",
    "is_ext_addr",
    "decorate",
    "undecorate",
    "is_ext_addr_many",
    "decorate_many",
    "undecorate_many",
    "ext_dir",
    "ExtUnit",
    "ExtFile",
    "ExtInfo",
    "ConsumeQueueExt",
    "read_ext_info",
    "ConsumeQueueExtWriter",
]

# CqExtUnit: MIN_EXT_UNIT_SIZE = 2 (size) + 8 * 2 (tagsCode, msgStoreTime) + 2 (bitMapSize)
UNIT_HEADER = Layout("CqExtUnitHeader", [
    ("size", "h", "unit length in bytes, 20 + bit_map_size; -1 marks a file filled to its end, 0 unused"),
    ("tags_code", "q", "the tags code the ConsumeQueue unit would have held (tags hashCode, delivery time)"),
    ("msg_store_time", "q", "the message's store timestamp (ms)"),
    ("bit_map_size", "h", "length of the filter bit map that follows (0: none)"),
])
MIN_UNIT_SIZE = UNIT_HEADER.size                 # 20
MAX_UNIT_SIZE = 2**15 - 1                        # CqExtUnit.MAX_EXT_UNIT_SIZE = Short.MAX_VALUE
END_BLANK_DATA_LENGTH = 4                        # bytes put() keeps free at the end of each file
FILL_MARKER = -1                                 # fullFillToEnd: putShort((short) -1)
MAX_ADDR = -(2**31) - 1                          # Integer.MIN_VALUE - 1L
MAX_REAL_OFFSET = MAX_ADDR - LONG_MIN            # the largest offset an address can carry
DEFAULT_MAPPED_FILE_SIZE = 48 * 1024 * 1024      # mappedFileSizeConsumeQueueExt
DEFAULT_BIT_MAP_LENGTH = 64                      # bitMapLengthConsumeQueueExt (bits)
PUT_FAILED = 1                                   # what put() returns when it writes nothing

#: One walked unit: where it starts (real offset), its size and header fields.
UNIT_DTYPE = np.dtype([("offset", np.int64), ("size", np.int16), ("tags_code", np.int64),
                       ("msg_store_time", np.int64), ("bit_map_size", np.int16)])

_NAME_RE = re.compile(r"^[0-9]{20}$")
_SIZE = UNIT_HEADER.field_struct("size")
_HEADER_DTYPE = UNIT_HEADER.dtype
_SIGN = np.int64(LONG_MIN)


# ------------------------------------------------------------------------------ address rules


def _wrap(value: int) -> int:
    """A Python int as the Java long it becomes (two's complement, 64 bits)."""
    return (int(value) - LONG_MIN) % 2**64 + LONG_MIN


def is_ext_addr(value: int) -> bool:
    """ConsumeQueueExt.isExtAddr: does a tagsCode hold an ext address (``value <= MAX_ADDR``)?

    >>> is_ext_addr(-2**63), is_ext_addr(-2**31 - 1), is_ext_addr(-2**31), is_ext_addr(2567159)
    (True, True, False, False)
    """
    return int(value) <= MAX_ADDR


def decorate(offset: int) -> int:
    """ConsumeQueueExt.decorate: the address of byte `offset` (``offset + Long.MIN_VALUE``,
    wrapping as Java does); a value that already is an address is returned unchanged.

    >>> decorate(0), decorate(20), decorate(-2**63)
    (-9223372036854775808, -9223372036854775788, -9223372036854775808)
    """
    return int(offset) if is_ext_addr(offset) else _wrap(int(offset) + LONG_MIN)


def undecorate(address: int) -> int:
    """ConsumeQueueExt.unDecorate: the byte offset an address points at (``address -
    Long.MIN_VALUE``); a value that is no address is returned unchanged.

    >>> undecorate(-9223372036854775788), undecorate(2567159)
    (20, 2567159)
    """
    return _wrap(int(address) - LONG_MIN) if is_ext_addr(address) else int(address)


def is_ext_addr_many(values: Any) -> np.ndarray:
    """:func:`is_ext_addr` of every element (int64). Cost: O(n).

    >>> is_ext_addr_many([-2**63, 0]).tolist()
    [True, False]
    """
    return np.asarray(values, dtype=np.int64) <= MAX_ADDR


def decorate_many(offsets: Any) -> np.ndarray:
    """:func:`decorate` of every element (int64; adding Long.MIN_VALUE flips the sign bit).

    >>> decorate_many([0, 40]).tolist()
    [-9223372036854775808, -9223372036854775768]
    """
    x = np.asarray(offsets, dtype=np.int64)
    return np.where(x <= MAX_ADDR, x, x ^ _SIGN)


def undecorate_many(addresses: Any) -> np.ndarray:
    """:func:`undecorate` of every element (int64).

    >>> undecorate_many([-9223372036854775768, 7]).tolist()
    [40, 7]
    """
    x = np.asarray(addresses, dtype=np.int64)
    return np.where(x <= MAX_ADDR, x ^ _SIGN, x)


#: The store's folder of ext files (StorePathConfigHelper.getStorePathConsumeQueueExt).
FOLDER = CONSUMEQUEUE_EXT


def ext_dir(store_root: str | os.PathLike, topic: str, queue_id: int) -> Path:
    """``<store_root>/consumequeue_ext/<topic>/<queue_id>`` (StorePathConfigHelper)."""
    return Path(store_root) / FOLDER / topic / str(int(queue_id))


def _file_name(byte_offset: int) -> str:
    return f"{int(byte_offset):020d}"


# ------------------------------------------------------------------------------ reading


class ExtUnit(NamedTuple):
    """One ext unit: its address (as stored in a ConsumeQueue tagsCode) and its fields."""

    address: int
    offset: int
    size: int
    tags_code: int
    msg_store_time: int
    bit_map: bytes


@dataclass(frozen=True)
class ExtFile:
    """One file of an ext folder: path, the logical byte offset in its name, its size."""

    path: Path
    start: int
    size: int


@dataclass(frozen=True)
class ExtInfo:
    """Counts and ends of an ext folder (:func:`read_ext_info`)."""

    folder: Path
    mapped_file_size: int
    files: tuple[ExtFile, ...]
    units: int
    min_address: int      # address of the first file's start (getMinAddress)
    end_offset: int       # one past the last unit's last byte (logical byte space)


class _ExtSegment:
    __slots__ = ("file", "buf", "walked", "units", "end", "end_kind", "problems")

    def __init__(self, file: ExtFile, buf):
        self.file = file
        self.buf = buf
        self.walked = False
        self.units = np.zeros(0, UNIT_DTYPE)
        self.end = 0             # bytes of units in this file
        self.end_kind = ""       # "fill" (the -1 marker), "zero", "file end", "bad size", "truncated"
        self.problems: list[RmqlabError] = []


def _list_files(folder: Path, size: int | None) -> tuple[list[ExtFile], int, list[RmqlabError]]:
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not a ConsumeQueueExt folder")
    entries = sorted((e for e in os.scandir(folder) if not e.is_dir()), key=lambda e: e.name)
    files: list[ExtFile] = []
    problems: list[RmqlabError] = []
    for i, e in enumerate(entries):
        path = Path(e.path)
        length = e.stat().st_size
        if not _NAME_RE.match(e.name):
            problems.append(FormatError(f"file name {e.name!r} is not a 20-digit offset; the broker cannot "
                                        f"load it", path=path, offset=0, field="file name"))
            continue
        if length == 0 and i == len(entries) - 1:
            continue  # MappedFileQueue.load drops an empty last file
        files.append(ExtFile(path, int(e.name), length))
    if size is None:
        size = files[0].size if files and files[0].size > 0 else DEFAULT_MAPPED_FILE_SIZE
    size = int(size)
    if size <= 0:
        raise ValueError(f"mapped_file_size must be positive, got {size}")
    prev = None
    for f in files:
        if f.size != size:
            cls = TruncatedFileError if f.size < size else GeometryError
            problems.append(cls(f"file is {f.size} bytes, not the mapped file size {size} "
                                f"(mappedFileSizeConsumeQueueExt)", path=f.path, offset=f.size, field="file size"))
        if f.start % size:
            problems.append(FormatError(f"name {f.start} is not a multiple of the mapped file size {size}",
                                        path=f.path, offset=0, field="file name"))
        elif prev is not None and f.start != prev.start + size:
            what = "missing file(s) before it" if f.start > prev.start + size else "overlaps the previous file"
            problems.append(CorruptIndexError(
                f"starts at {f.start} but the previous file {prev.path.name} ends at {prev.start + size}: {what}",
                path=f.path, offset=0, field="file name"))
        prev = f
    return files, size, problems


def _walk(seg: _ExtSegment, mapped_file_size: int) -> None:
    """recover()'s walk of one file: units while the 2-byte size is > 0. Runs of units of one
    size are read vectorized; each pass of the loop consumes at least one unit, so the loop ends
    within len(buf) / 20 passes."""
    buf, path = seg.buf, seg.file.path
    n = len(buf)
    limit = min(n, mapped_file_size) - END_BLANK_DATA_LENGTH   # put() never writes past it
    starts: list[np.ndarray] = []
    headers: list[np.ndarray] = []
    pos = 0
    kind = "file end"
    for _ in range(n // MIN_UNIT_SIZE + 1):
        if pos + _SIZE.size > n:
            kind = "file end"
            break
        size = _SIZE.unpack_from(buf, pos)[0]
        if size <= 0:
            kind = "fill" if size == FILL_MARKER else "zero" if size == 0 else "bad size"
            if kind == "bad size":
                seg.problems.append(FormatError(
                    f"unit size {size}: neither a unit (> 0), the fill marker (-1) nor unused space (0)",
                    path=path, offset=pos, field="unit.size"))
            break
        if size < MIN_UNIT_SIZE:
            seg.problems.append(FormatError(f"unit size {size} is below the {MIN_UNIT_SIZE}-byte unit header",
                                            path=path, offset=pos, field="unit.size"))
            kind = "bad size"
            break
        if pos + size > n:
            seg.problems.append(TruncatedFileError(f"unit of {size} bytes runs past the end of the file ({n} bytes)",
                                                   path=path, offset=pos, field="unit.size"))
            kind = "truncated"
            break
        # the run of units of this same size from pos on
        room = (n - pos) // size
        stride = np.frombuffer(buf, dtype=np.uint8, count=room * size, offset=pos).reshape(room, size)
        sizes = (stride[:, 0].astype(np.int16) << 8) | stride[:, 1].astype(np.int16)
        differ = np.flatnonzero(sizes != size)
        run = int(differ[0]) if len(differ) else room
        block = np.ascontiguousarray(stride[:run, :MIN_UNIT_SIZE]).view(_HEADER_DTYPE).reshape(run)
        starts.append(pos + np.arange(run, dtype=np.int64) * size)
        headers.append(block)
        pos += run * size
    seg.end = pos
    seg.end_kind = kind
    units = np.zeros(sum(len(s) for s in starts), UNIT_DTYPE)
    if len(units):
        h = np.concatenate(headers)
        units["offset"] = seg.file.start + np.concatenate(starts)
        for name in ("size", "tags_code", "msg_store_time", "bit_map_size"):
            units[name] = h[name]
        over = np.flatnonzero(units["offset"] - seg.file.start + units["size"] > limit)
        if len(over):
            k = int(over[0])
            seg.problems.append(FormatError(
                f"unit ends at {int(units['offset'][k] - seg.file.start + units['size'][k])}, inside the "
                f"{END_BLANK_DATA_LENGTH} bytes put() keeps free at the end of a {mapped_file_size}-byte file "
                f"({len(over)} such)", path=path, offset=int(units["offset"][k] - seg.file.start), field="unit.size"))
        bad_map = np.flatnonzero(units["bit_map_size"].astype(np.int64) != units["size"].astype(np.int64)
                                 - MIN_UNIT_SIZE)
        if len(bad_map):
            k = int(bad_map[0])
            seg.problems.append(FormatError(
                f"bit map size {int(units['bit_map_size'][k])} but the unit is {int(units['size'][k])} bytes "
                f"(size is always 20 + bit map size; {len(bad_map)} such)", path=path,
                offset=int(units["offset"][k] - seg.file.start) + UNIT_HEADER.offset("bit_map_size"),
                field="unit.bit_map_size"))
    seg.units = units
    seg.walked = True


class ConsumeQueueExt(MappedFolder):
    """All files of one ``consumequeue_ext/<topic>/<queueId>`` folder, read-only.

    Use :meth:`open` (memory maps) or :meth:`read` (into memory); also a context manager.

    Costs: open O(files) (a directory listing, maps); :meth:`get` O(1), one unit read where
    the broker reads it; :attr:`units`, :meth:`resolve` and :meth:`problems` walk every file
    once (vectorized per run of equal-size units, cached).
    """

    def __init__(self, folder: Path, mapped_file_size: int, segments: list[_ExtSegment],
                 problems: list[RmqlabError], handles: list):
        self.folder = folder
        self.mapped_file_size = mapped_file_size
        self._segs = segments
        self._open_problems = problems
        self._handles = handles
        self._units: np.ndarray | None = None
        self._closed = False

    @classmethod
    def open(cls, folder: str | os.PathLike, mapped_file_size: int | None = None, *,
             strict: bool = True) -> ConsumeQueueExt:
        """Map every file of the folder read-only.

        `mapped_file_size` is the broker's ``mappedFileSizeConsumeQueueExt`` (default: the
        first file's size). With `strict` a bad file name, size or a gap between files raises
        a typed error; with ``strict=False`` :meth:`problems` lists them.
        """
        return cls._load(folder, mapped_file_size, strict, eager=False)

    @classmethod
    def read(cls, folder: str | os.PathLike, mapped_file_size: int | None = None, *,
             strict: bool = True) -> ConsumeQueueExt:
        """Like :meth:`open`, but read every file into memory and close them (eager)."""
        return cls._load(folder, mapped_file_size, strict, eager=True)

    @classmethod
    def _load(cls, folder, mapped_file_size, strict, eager):
        folder = Path(folder)
        files, size, problems = _list_files(folder, mapped_file_size)
        if strict and problems:
            raise problems[0]
        segs: list[_ExtSegment] = []
        handles: list[BinaryIO | mmap.mmap] = []
        try:
            for f in files:
                if eager or f.size == 0:
                    segs.append(_ExtSegment(f, f.path.read_bytes() if f.size else b""))
                    continue
                fh = open(f.path, "rb")
                handles.append(fh)
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                handles.append(mapped)
                segs.append(_ExtSegment(f, mapped))
        except BaseException:
            segs.clear()   # their views of the maps would keep the maps from closing
            close_handles(handles)
            raise
        return cls(folder, size, segs, problems, handles)

    # -- metadata ------------------------------------------------------------------------

    @property
    def files(self) -> tuple[ExtFile, ...]:
        return tuple(s.file for s in self._segs)

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.folder}: ConsumeQueueExt is closed")

    def _walked(self) -> list[_ExtSegment]:
        self._require_open()
        for s in self._segs:
            if not s.walked:
                _walk(s, self.mapped_file_size)
        return self._segs

    @property
    def units(self) -> np.ndarray:
        """Every unit in address order (:data:`UNIT_DTYPE`: real offset, size, tags code, store
        time, bit map size), found by recover()'s walk. Cached."""
        if self._units is None:
            parts = [s.units for s in self._walked()]
            self._units = np.concatenate(parts) if parts else np.zeros(0, UNIT_DTYPE)
        return self._units

    def file_segment(self, name: str) -> _ExtSegment | None:
        """The mapped file named `name`, walked as recover() walks it: ``.file``, ``.buf`` (its
        bytes), ``.units`` (its units, real offsets), ``.end`` (bytes of units) and ``.end_kind``;
        None when the folder has no such file. Cost: walks the files up to it once (cached).
        """
        self._require_open()
        return next((s for s in self._walked() if s.file.path.name == name), None)

    @property
    def count(self) -> int:
        return len(self.units)

    def __len__(self) -> int:
        return self.count

    @property
    def min_address(self) -> int:
        """getMinAddress: the address of the first file's start (decorate(0) without files)."""
        return decorate(self._segs[0].file.start if self._segs else 0)

    @property
    def end_offset(self) -> int:
        """One past the last unit (logical bytes): where the broker's recover() leaves the
        write position (the last file's start when it holds no unit)."""
        segs = self._walked()
        if not segs:
            return 0
        return segs[-1].file.start + segs[-1].end

    @property
    def info(self) -> ExtInfo:
        return ExtInfo(self.folder, self.mapped_file_size, self.files, self.count, self.min_address,
                       self.end_offset)

    def _segment_at(self, offset: int) -> _ExtSegment | None:
        """findMappedFileByOffset: the file holding logical byte `offset`, or None."""
        size = self.mapped_file_size
        for s in self._segs:   # bounded by the number of files
            if s.file.start <= offset < s.file.start + size:
                return s
        return None

    # -- the broker's reads ----------------------------------------------------------------

    def get(self, address: int) -> ExtUnit | None:
        """ConsumeQueueExt.get(address): the unit at an address, read where the broker reads
        it (no walk); None where the broker returns null (not an address, no file holds it, a
        size < 1 there). A unit that runs past its file raises TruncatedFileError."""
        self._require_open()
        if not is_ext_addr(address):
            return None
        real = undecorate(address)
        seg = self._segment_at(real)
        if seg is None:
            return None
        pos = real % self.mapped_file_size
        buf, path = seg.buf, seg.file.path
        if pos + _SIZE.size > len(buf):
            return None
        size = _SIZE.unpack_from(buf, pos)[0]
        if size < 1:
            return None
        if pos + UNIT_HEADER.size > len(buf):
            raise TruncatedFileError(f"unit header runs past the end of the file ({len(buf)} bytes)",
                                     path=path, offset=pos, field="unit")
        h = UNIT_HEADER.unpack_from(buf, pos)
        n_map = max(0, int(h.bit_map_size))
        if pos + UNIT_HEADER.size + n_map > len(buf):
            raise TruncatedFileError(f"bit map of {n_map} bytes runs past the end of the file ({len(buf)} bytes)",
                                     path=path, offset=pos + UNIT_HEADER.offset("bit_map_size"),
                                     field="unit.bit_map_size")
        bit_map = bytes(buf[pos + UNIT_HEADER.size:pos + UNIT_HEADER.size + n_map])
        return ExtUnit(int(address), int(real), int(size), int(h.tags_code), int(h.msg_store_time), bit_map)

    def locate(self, addresses: Any) -> tuple[np.ndarray, np.ndarray]:
        """For each value: (index into :attr:`units`, found). Found means the value is an ext
        address pointing at the start of a walked unit. Cost: O(n log units), vectorized."""
        a = np.asarray(addresses, dtype=np.int64).reshape(-1)
        u = self.units
        real = undecorate_many(a)
        idx = np.searchsorted(u["offset"], real)
        idx_c = np.minimum(idx, max(len(u) - 1, 0))
        found = is_ext_addr_many(a) & (idx < len(u))
        if len(u):
            found &= u["offset"][idx_c] == real
        return np.where(found, idx_c, -1), found

    def resolve(self, tags_codes: Any) -> tuple[np.ndarray, np.ndarray]:
        """ConsumeQueue tagsCode values through this folder: (the real tags codes, resolved).
        A value that is no ext address passes through (resolved False); an address at a unit
        start becomes that unit's tags code. Cost: as :meth:`locate`.

        Returns int64 codes and a bool mask of the values that were ext addresses found here.
        """
        codes = np.asarray(tags_codes, dtype=np.int64).reshape(-1)
        idx, found = self.locate(codes)
        u = self.units
        out = codes.copy()
        if found.any():
            out[found] = u["tags_code"][idx[found]]
        return out, found

    def iter_units(self) -> Iterator[ExtUnit]:
        """Every unit with its bit map, in address order. Cost: O(units) Python objects."""
        for s in self._walked():
            for r in s.units:
                pos = int(r["offset"]) - s.file.start
                n_map = max(0, int(r["bit_map_size"]))
                yield ExtUnit(decorate(int(r["offset"])), int(r["offset"]), int(r["size"]), int(r["tags_code"]),
                              int(r["msg_store_time"]),
                              bytes(s.buf[pos + MIN_UNIT_SIZE:min(len(s.buf), pos + MIN_UNIT_SIZE + n_map)]))

    def to_frame(self):
        """:attr:`units` as a pandas DataFrame with an ``address`` column."""
        import pandas as pd

        u = self.units
        return pd.DataFrame({"address": decorate_many(u["offset"]), "offset": u["offset"],
                             "size": u["size"].astype(np.int64), "tags_code": u["tags_code"].astype(np.int64),
                             "msg_store_time": u["msg_store_time"].astype(np.int64),
                             "bit_map_size": u["bit_map_size"].astype(np.int64)})

    # -- invariants ------------------------------------------------------------------------

    def problems(self) -> list[RmqlabError]:
        """Every problem found (empty for a healthy folder), each naming file, offset and field.

        Checks: file names, sizes and contiguity; each unit's size at least the 20-byte header,
        ``bit_map_size == size - 20``, inside the file and outside the 4 bytes put() keeps free;
        the data of each file ending with the fill marker (-1) or unused zeros; the marker in
        every file but the last (the broker moves to a new file only after writing it); nothing
        but zeros after the end. Cost: O(bytes), vectorized.
        """
        out = list(self._open_problems)
        segs = self._walked()
        for k, s in enumerate(segs):
            out += s.problems
            path = s.file.path
            if k < len(segs) - 1 and s.end_kind not in ("fill", "bad size", "truncated"):
                out.append(CorruptIndexError(
                    "the data ends without the fill marker (-1) although a later file exists: the broker "
                    "moves to a new file only after marking this one full", path=path, offset=s.end,
                    field="unit.size"))
            if s.end_kind in ("fill", "zero"):
                tail_from = s.end + (_SIZE.size if s.end_kind == "fill" else 0)
                tail = np.frombuffer(s.buf, dtype=np.uint8)[tail_from:] if len(s.buf) > tail_from else \
                    np.zeros(0, np.uint8)
                nz = np.flatnonzero(tail)
                if len(nz):
                    out.append(CorruptIndexError(
                        f"non-zero bytes after the end of the data at {s.end}: the broker never reads them",
                        path=path, offset=tail_from + int(nz[0]), field="unit"))
        return out

    def check(self) -> None:
        """Raise the first of :meth:`problems` (a typed :class:`~rmqlab.errors.RmqlabError`)."""
        problems = self.problems()
        if problems:
            raise problems[0]

    # -- life cycle ------------------------------------------------------------------------

    def _release(self) -> None:
        self._units = None
        for s in self._segs:
            s.units = np.zeros(0, UNIT_DTYPE)
            s.buf = b""

    def __repr__(self) -> str:
        return f"ConsumeQueueExt({str(self.folder)!r}, files={len(self._segs)}, " \
               f"mapped_file_size={self.mapped_file_size})"


def read_ext_info(folder: str | os.PathLike, mapped_file_size: int | None = None, *,
                  strict: bool = True) -> ExtInfo:
    """Only the folder's files, unit count, min address and end. Cost: a directory listing and
    the walk of the unit sizes (vectorized).

    >>> import tempfile
    >>> read_ext_info(tempfile.mkdtemp()).units
    0
    """
    with ConsumeQueueExt.open(folder, mapped_file_size, strict=strict) as x:
        return x.info


# ------------------------------------------------------------------------------ writing


class ConsumeQueueExtWriter:
    """Append units to an ext folder exactly as ConsumeQueueExt.put does.

    Files are created zero-filled, ``mapped_file_size`` bytes, named by their logical byte
    offset. A unit is written only if it leaves the last 4 bytes of the file free; otherwise the
    short -1 is written at the write position and a new file is started (up to three tries, as
    put() retries). Use :meth:`create` for a new folder, :meth:`open` to continue one.
    """

    def __init__(self, folder: Path, mapped_file_size: int, files: list[list[int]]):
        self.folder = folder
        self.mapped_file_size = int(mapped_file_size)
        self._files = files           # [start, wrote] per file, in order
        self._fd: int | None = None
        self._fd_start: int | None = None
        self._closed = False

    @classmethod
    def create(cls, folder: str | os.PathLike, *,
               mapped_file_size: int = DEFAULT_MAPPED_FILE_SIZE) -> ConsumeQueueExtWriter:
        """A writer for a new folder; `folder` is created if needed and must hold no files."""
        folder = Path(folder)
        if int(mapped_file_size) <= 0:
            raise ValueError(f"mapped_file_size must be positive, got {mapped_file_size}")
        folder.mkdir(parents=True, exist_ok=True)
        if any(not e.is_dir() for e in os.scandir(folder)):
            raise FileExistsError(f"{folder}: already holds files; use ConsumeQueueExtWriter.open")
        return cls(folder, mapped_file_size, [])

    @classmethod
    def open(cls, folder: str | os.PathLike, *, mapped_file_size: int | None = None,
             max_address: int | None = None) -> ConsumeQueueExtWriter:
        """Continue a folder from where recover() leaves it: the end of the walked data of
        the last file. With `max_address` (the largest ext address the ConsumeQueue holds) the
        position is just after that unit, as ConsumeQueue.recover's truncateByMaxAddress sets it;
        files after it are deleted, as truncateDirtyFiles deletes them. Refuses a folder with
        problems (a typed error)."""
        folder = Path(folder)
        with ConsumeQueueExt.open(folder, mapped_file_size) as x:
            x.check()
            size = x.mapped_file_size
            end = x.end_offset
            if max_address is not None and is_ext_addr(max_address):
                unit = x.get(max_address)
                if unit is not None:
                    end = unit.offset + unit.size
            kept = [f for f in x.files if f.start <= end]
            doomed = [f.path for f in x.files if f.start > end]
        for p in doomed:
            p.unlink()
        files = [[f.start, size if f.start + size <= end else end - f.start] for f in kept]
        return cls(folder, size, files)

    # -- state -------------------------------------------------------------------------------

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(self.folder / _file_name(s) for s, _ in self._files)

    @property
    def max_address(self) -> int:
        """getMaxAddress: the address of the write position."""
        if not self._files:
            return decorate(0)
        s, w = self._files[-1]
        return decorate(s + w)

    def _require_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.folder}: writer is closed")

    def _last_file(self) -> list[int]:
        """getLastMappedFile(), or a new file after it when there is none or it is full."""
        size = self.mapped_file_size
        if self._files and self._files[-1][1] != size:
            return self._files[-1]
        start = self._files[-1][0] + size if self._files else 0
        with open(self.folder / _file_name(start), "xb") as fh:
            fh.truncate(size)
        self._files.append([start, 0])
        return self._files[-1]

    def _pwrite(self, start: int, data: bytes, pos: int) -> None:
        if self._fd is None or self._fd_start != start:
            if self._fd is not None:
                os.close(self._fd)
            self._fd = os.open(self.folder / _file_name(start), os.O_WRONLY)
            self._fd_start = start
        os.pwrite(self._fd, data, pos)

    # -- put -------------------------------------------------------------------------------

    def put(self, tags_code: int, msg_store_time: int, bit_map: bytes | None = None) -> int:
        """One unit, as ConsumeQueueExt.put(CqExtUnit): its address, or :data:`PUT_FAILED` (1)
        when the broker would write nothing (unit over Short.MAX_VALUE bytes, folder full, or
        three files in a row without room)."""
        self._require_open()
        bit_map = b"" if bit_map is None else bytes(bit_map)
        size = MIN_UNIT_SIZE + len(bit_map)
        if size > MAX_UNIT_SIZE:
            return PUT_FAILED
        if self._end() + size > MAX_REAL_OFFSET:
            return PUT_FAILED
        data = UNIT_HEADER.pack(size, _wrap(tags_code), _wrap(msg_store_time), len(bit_map)) + bit_map
        fsize = self.mapped_file_size
        for _ in range(3):
            f = self._last_file()
            start, wrote = f
            if size > fsize - wrote - END_BLANK_DATA_LENGTH:
                self._pwrite(start, _SIZE.pack(FILL_MARKER), wrote)     # fullFillToEnd
                f[1] = fsize
                continue
            self._pwrite(start, data, wrote)
            f[1] = wrote + size
            return decorate(start + wrote)
        return PUT_FAILED

    def _end(self) -> int:
        if not self._files:
            return 0
        return self._files[-1][0] + self._files[-1][1]

    def put_many(self, tags_codes: Any, msg_store_times: Any) -> np.ndarray:
        """Units without bit maps, in order: their addresses (int64), as many put() calls.
        Vectorized per file: one write per file. Cost: O(n)."""
        self._require_open()
        codes = np.asarray(tags_codes, dtype=np.int64).reshape(-1)
        times = np.asarray(msg_store_times, dtype=np.int64).reshape(-1)
        if len(codes) != len(times):
            raise ValueError(f"{len(codes)} tags codes but {len(times)} store times")
        fsize = self.mapped_file_size
        per_file = (fsize - END_BLANK_DATA_LENGTH) // MIN_UNIT_SIZE
        if per_file < 1:   # no unit ever fits: put()'s own failure path
            return np.array([self.put(int(c), int(t)) for c, t in zip(codes, times)], dtype=np.int64)
        out = np.empty(len(codes), np.int64)
        rec = np.zeros(len(codes), _HEADER_DTYPE)
        rec["size"] = MIN_UNIT_SIZE
        rec["tags_code"] = codes
        rec["msg_store_time"] = times
        raw = rec.tobytes()
        done = 0
        for _ in range(2 * len(codes) + 2):   # a pass writes units or rolls a file, never twice a roll
            if done == len(codes):
                break
            f = self._last_file()
            start, wrote = f
            room = max(0, (fsize - END_BLANK_DATA_LENGTH - wrote) // MIN_UNIT_SIZE)
            if room == 0:
                self._pwrite(start, _SIZE.pack(FILL_MARKER), wrote)
                f[1] = fsize
                continue
            if self._end() + min(room, len(codes) - done) * MIN_UNIT_SIZE > MAX_REAL_OFFSET:
                raise ValueError("the ext folder would pass MAX_REAL_OFFSET")
            k = min(room, len(codes) - done)
            self._pwrite(start, raw[done * MIN_UNIT_SIZE:(done + k) * MIN_UNIT_SIZE], wrote)
            out[done:done + k] = decorate_many(start + wrote + np.arange(k, dtype=np.int64) * MIN_UNIT_SIZE)
            f[1] = wrote + k * MIN_UNIT_SIZE
            done += k
        if done != len(codes):
            raise AssertionError(f"put_many stopped after {done} of {len(codes)} units")
        return out

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._closed = True

    def __enter__(self) -> ConsumeQueueExtWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ConsumeQueueExtWriter({str(self.folder)!r}, files={len(self._files)})"
