"""An IndexFile's hash_slot_num and index_num, inferred from its size and contents."""
from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np

from rmqlab.errors import AmbiguousSettingError, GeometryError, RmqlabError, TruncatedFileError
from rmqlab.formats.indexfile import ENTRY, HEADER, SLOT, Geometry, time_diff_seconds
from rmqlab.tables.arrays import gather_field, last_nonzero


def infer_index_geometry(path: str | os.PathLike) -> Geometry:
    """The geometry of an index file of any size, from its own bytes.

    The default size has one answer. Otherwise every split ``40 + 4*slots + 20*entries`` that
    holds ``index_count`` entries is tried, and kept when the bytes agree with what putKey
    always writes: entry 0 all zeros and nothing after entry index_count - 1; entry 1's
    phy_offset is the header's begin_phy_offset and its prev_index 0; the last entry's
    phy_offset is end_phy_offset and its time_diff ``(end - begin) // 1000``.
    Cost: two reads per candidate split, vectorized (memory map).

    >>> import tempfile, os
    >>> p = os.path.join(tempfile.mkdtemp(), "f")
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> build_index_file(p, ["T#a", "T#b", "T#c"], [0, 200, 400], [1000, 2000, 5000],
    ...                  hash_slot_num=7, index_num=30)
    3
    >>> infer_index_geometry(p)
    Geometry(hash_slot_num=7, index_num=30)

    Raises :class:`GeometryError` when no split or several splits agree (an empty file fits
    any).
    """
    path = Path(path)
    size = path.stat().st_size
    default = Geometry.default()
    if size == default.file_size:
        return default
    if size < HEADER.size:
        raise TruncatedFileError(f"file is {size} bytes, shorter than the {HEADER.size}-byte header",
                                 path=path, offset=size, field="header")
    with open(path, "rb") as fh:
        h = HEADER.unpack(fh.read(HEADER.size))
        count = h.index_count
        body = size - HEADER.size
        hint = "pass hash_slot_num= or index_num= (the broker's maxHashSlotNum / maxIndexNum)"
        if count <= 1:
            raise GeometryError(f"file is {size} bytes and holds no entries (index_count {count}): any split "
                                f"of slots and entries fits; {hint}", path=path, offset=size, field="file size")
        if body % SLOT.size:
            raise GeometryError(f"file is {size} bytes: 40 + 4*slots + 20*entries can never make it",
                                path=path, offset=size, field="file size")
        # body = SLOT.size * slots + ENTRY.size * entries, so slots is fixed modulo the size ratio
        ratio = ENTRY.size // SLOT.size
        first = (body // SLOT.size) % ratio or ratio
        last = (body - ENTRY.size * count) // SLOT.size
        slots = np.arange(first, last + 1, ratio, dtype=np.int64)
        if not len(slots):
            raise GeometryError(f"file is {size} bytes: too small for index_count {count}", path=path,
                                offset=size, field="file size")
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            U = np.frombuffer(mm, np.uint8)
            # nothing is written after entry index_count - 1: the last non-zero byte bounds the split
            slots = slots[HEADER.size + SLOT.size * slots + ENTRY.size * count > last_nonzero(U, path=path)]
            eo = HEADER.size + SLOT.size * slots

            e1 = eo + ENTRY.size
            el = eo + ENTRY.size * (count - 1)
            ok = ((gather_field(U, e1, ENTRY, "phy_offset") == h.begin_phy_offset)
                  & (gather_field(U, e1, ENTRY, "prev_index") == 0)
                  & (gather_field(U, el, ENTRY, "phy_offset") == h.end_phy_offset))
            if count > 2:
                want = time_diff_seconds(h.end_timestamp, h.begin_timestamp)
                ok &= gather_field(U, el, ENTRY, "time_diff") == want
            found = slots[ok]
            if len(found):   # entry 0 is never written
                entry_bytes = (HEADER.size + SLOT.size * found)[:, None] + np.arange(ENTRY.size, dtype=np.int64)
                zero = ~U[entry_bytes].any(axis=1)
                found = found[zero]
            del U
        finally:
            mm.close()
    if len(found) == 1:
        s = int(found[0])
        return Geometry(s, (body - SLOT.size * s) // ENTRY.size)
    if not len(found):
        raise GeometryError(f"file is {size} bytes and no split of slots and entries agrees with its header; "
                            f"{hint}", path=path, offset=size, field="file size")
    some = ", ".join(f"hash_slot_num={int(s)}" for s in found[:3])
    raise GeometryError(f"file is {size} bytes and {len(found)} splits agree with its header ({some}, ...); "
                        f"{hint}", path=path, offset=size, field="file size")


def index_geometries(paths: list[Path], hash_slot_num, index_num) -> dict[Path, tuple[int | None, int | None]]:
    """(hash_slot_num, index_num) to open each file with: as given, else inferred per size."""
    if hash_slot_num is not None or index_num is not None:
        return {p: (hash_slot_num, index_num) for p in paths}
    by_size: dict[int, set] = {}
    for p in paths:
        try:
            g = infer_index_geometry(p)
        except (RmqlabError, OSError):
            continue
        by_size.setdefault(p.stat().st_size, set()).add((g.hash_slot_num, g.index_num))
    out = {}
    for p in paths:
        found = by_size.get(p.stat().st_size, set())
        out[p] = next(iter(found)) if len(found) == 1 else (None, None)
    return out


def folder_index_geometry(paths: list[Path]) -> tuple[Geometry | None, str]:
    """The one geometry the index files `paths` (of one store) were written with, and why:
    inferred per file size (:func:`infer_index_geometry` on the files of each size until one
    tells); (None, reason) when no file tells (no file, or only files without two entries).

    A broker writes every index file of a store with one maxHashSlotNum and maxIndexNum, so
    two files that tell two geometries leave a real choice: :class:`AmbiguousSettingError`
    lists them. Cost: a stat a file and two small reads per candidate split of each size.

    >>> import tempfile, os
    >>> from rmqlab.formats.indexfile import build_index_file
    >>> d = tempfile.mkdtemp()
    >>> for name in ("20240101000000000", "20240101000100000"):
    ...     _ = build_index_file(os.path.join(d, name), ["T#a", "T#b"], [0, 200], [1000, 2000],
    ...                          hash_slot_num=7, index_num=30)
    >>> folder_index_geometry(sorted(Path(d).iterdir()))
    (Geometry(hash_slot_num=7, index_num=30), 'from the header and size of 20240101000000000 (2 index files)')
    """
    by_size: dict[int, list[Path]] = {}
    for p in paths:
        by_size.setdefault(p.stat().st_size, []).append(p)
    told: dict[Geometry, list[Path]] = {}
    why = ""
    for files in by_size.values():
        for p in files:
            try:
                told.setdefault(infer_index_geometry(p), []).append(p)
                break
            except (GeometryError, TruncatedFileError) as e:
                why = why or e.reason
    if len(told) == 1:
        (g, files), = told.items()
        return g, f"from the header and size of {', '.join(p.name for p in files)} ({len(paths)} index " \
                  f"file{'s' * (len(paths) != 1)})"
    if not told:
        return None, ("no index file" if not paths else f"no index file tells it ({why})")
    listed = ", ".join(f"hash_slot_num={g.hash_slot_num} index_num={g.index_num} ({fs[0].name})"
                       for g, fs in told.items())
    raise AmbiguousSettingError(f"index files of {len(told)} geometries: {listed}; a broker writes one: pass "
                                f"hash_slot_num= and index_num= of the one it had", choices=tuple(told),
                                path=paths[0].parent, field="maxHashSlotNum, maxIndexNum")
