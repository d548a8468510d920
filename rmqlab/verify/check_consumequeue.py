"""The checks of one ConsumeQueue folder."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from rmqlab.errors import CorruptIndexError, RmqlabError
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import consumequeue_ext as cqx
from rmqlab.formats import storepaths as sp
from rmqlab.formats.mapped import likely_mapped_file_size
from rmqlab.formats.storepaths import StorePaths
from rmqlab.verify.common import OFFSET_FILE_NAME, add_problem, first_problem
from rmqlab.verify.report import FileReport, make_problem, problem_from_error, with_hint

_CQ_CODES = (
    ("not a 20-digit offset", "cq.file-name"),
    ("not a multiple of the mapped file size", "cq.file-name"),
    ("missing file(s)", "cq.file-name"),
    ("overlaps the previous file", "cq.file-name"),
    ("invalid unit before the end", "cq.unit"),
    ("not a zero end marker", "cq.end-marker"),
    ("non-zero bytes after the end", "cq.tail"),
    ("file starts after the end", "cq.dirty-file"),
    ("blank filler unit", "cq.blank-unit"),
    ("not greater than the previous", "cq.order"),
    ("starts inside the previous", "cq.overlap"),
    ("past the CommitLog's max offset", "cq.past-commitlog-end"),
)


#: what a broker does that leaves the problem of a code, added to its report
_CQ_HINTS = {
    "cq.order": ("the units from here on may be stale: bytes a recovery left past the write position it "
                 "truncated the queue to (ConsumeQueue.truncateDirtyLogicFiles moves the position and keeps the "
                 "bytes) that the broker's appends did not reach; the running broker counted the queue up to here, "
                 "one restarted on these files counts them again"),
}


def _cq_code(err: RmqlabError) -> str:
    if err.field == "file size":
        return "cq.file-size"
    for text, code in _CQ_CODES:
        if text in err.reason:
            return code
    return "cq.invariant"


def queue_folders(path: Path) -> list[Path]:
    """Queue folders under a consumequeue root, a topic folder, or a queue folder itself."""
    subs = sorted(c for c in path.iterdir() if c.is_dir())
    root = path.name == sp.CONSUMEQUEUE
    if not root and (any(c.is_file() for c in path.iterdir()) or not subs):
        return [path]                                       # a queue folder
    if not root and (path.parent.name == sp.CONSUMEQUEUE or all(c.name.isdigit() for c in subs)):
        return sorted(subs, key=lambda c: (not c.name.isdigit(), int(c.name) if c.name.isdigit() else 0, c.name))
    out = []
    for t in subs:                                          # the consumequeue root
        out += sorted((q for q in t.iterdir() if q.is_dir()), key=lambda q: (not q.name.isdigit(), q.name))
    return out


def cq_file_size(files: list[Path], given: int | None) -> int:
    """The ConsumeQueue file size to read `files` with: `given` (as the broker rounds it), else
    what their names and sizes say (:func:`rmqlab.formats.mapped.likely_mapped_file_size`, by
    queue folder), else the default."""
    if given is not None:
        return cq.mapped_file_size_for(given)
    folders: dict[Path, list[tuple[int, int]]] = {}
    for p in files:
        start = int(p.name) if OFFSET_FILE_NAME.fullmatch(p.name) else 0
        folders.setdefault(p.parent, []).append((start, p.stat().st_size))
    return likely_mapped_file_size([sorted(f) for f in folders.values()], unit=cq.UNIT_SIZE) \
        or cq.DEFAULT_MAPPED_FILE_SIZE


class _OneFileQueue:
    """A ConsumeQueue opened from one file alone: a private folder holding a link to it (or a
    copy where links are not allowed), so the queue module reads it as a one-file queue. Paths in
    its errors are mapped back to the real file."""

    def __init__(self, path: Path):
        self.real = path
        self.tmp = tempfile.mkdtemp(prefix="rmqlab-verify-")
        name = path.name if OFFSET_FILE_NAME.fullmatch(path.name) else "0" * 20
        self.link = Path(self.tmp) / name
        try:
            os.symlink(path.resolve(), self.link)
        except OSError:
            shutil.copyfile(path, self.link)

    def fix(self, err: RmqlabError) -> RmqlabError:
        if err.path is not None and Path(err.path).parent == Path(self.tmp):
            return type(err)(err.reason, path=self.real, offset=err.offset, field=err.field)
        return err

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def open_queue(folder: Path, mapped_file_size: int | None, one_file: _OneFileQueue | None = None):
    real = one_file.real if one_file else folder
    files = [real] if one_file else [c for c in folder.iterdir() if c.is_file()]
    size = cq_file_size(files, mapped_file_size)
    topic = queue_id = None
    if one_file:
        qdir = real.parent
        topic = qdir.parent.name or None
        queue_id = int(qdir.name) if qdir.name.isdigit() else None
    q = cq.ConsumeQueue.open(one_file.tmp if one_file else folder, size, strict=False,
                             topic=topic, queue_id=queue_id)
    return q, size


def ext_folder(q) -> Path | None:
    """The ``consumequeue_ext/<topic>/<queueId>`` folder beside a queue folder, if it exists."""
    folder = Path(q.folder)
    if folder.parent.parent.name != sp.CONSUMEQUEUE:
        return None
    ext = StorePaths(folder.parent.parent.parent).consumequeue_ext / folder.parent.name / folder.name
    return ext if ext.is_dir() and any(c.is_file() for c in ext.iterdir()) else None


def open_ext(q):
    """The queue's ConsumeQueueExt, opened leniently (its problems are reported), or None."""
    folder = ext_folder(q)
    return cqx.ConsumeQueueExt.open(folder, strict=False) if folder is not None else None


def _ext_code(err: RmqlabError) -> str:
    if err.field in ("file name", "file size"):
        return "cqext.file"
    if "fill marker" in err.reason and "neither" not in err.reason or "after the end" in err.reason:
        return "cqext.end"
    return "cqext.unit"


def _ext_address_problems(q, ext, fix) -> list:
    """Each ext address in the queue must point at an ext unit's start, in increasing order."""
    out: list = []
    parts = [(qf, first, units) for qf, (first, units) in zip(q.files, q.segments()) if len(units)]
    if not parts:
        return out
    tc = np.concatenate([u["tags_code"].astype(np.int64) for _, _, u in parts])
    qoff = np.concatenate([first + np.arange(len(u), dtype=np.int64) for _, first, u in parts])
    fidx = np.concatenate([np.full(len(u), k, np.int32) for k, (_, _, u) in enumerate(parts)])
    is_ext = cqx.is_ext_addr_many(tc)
    if not is_ext.any():
        return out
    tags_at = cq.UNIT.offset("tags_code")

    def make(check, what):
        def build(i, c):
            f = parts[fidx[i]]
            err = CorruptIndexError(f"queue offset {qoff[i]}: {what(i)}", path=f[0].path,
                                    offset=int(qoff[i] - f[1]) * cq.UNIT_SIZE + tags_at, field="unit.tags_code")
            err = fix(err)
            return make_problem(check, CorruptIndexError, err.reason, err.path, err.offset, err.field, count=c)
        return build

    _, found = ext.locate(tc)
    add_problem(out, first_problem(is_ext & ~found, make(
        "cq.ext-address", lambda i: f"tagsCode {tc[i]} is the ext address of byte {cqx.undecorate(int(tc[i]))}, "
                                    f"where no ConsumeQueueExt unit starts ({ext.folder})")))
    idx = np.flatnonzero(is_ext)
    back = np.zeros(len(tc), dtype=bool)
    back[idx[1:]] = tc[idx[1:]] <= tc[idx[:-1]]
    add_problem(out, first_problem(back, make(
        "cq.ext-order", lambda i: f"ext address {tc[i]} is not after the previous unit's: put() only appends")))
    return out


def queue_checks(q, report_path: str, commitlog_max_offset: int | None,
                  fix=lambda e: e, found: list | None = None) -> FileReport:
    """A queue's own report; `found`: its ``problems(commitlog_max_offset)``, when at hand."""
    rep = FileReport(report_path, "consumequeue")
    found = q.problems(commitlog_max_offset) if found is None else found
    rep.problems = [with_hint(problem_from_error(code, fix(e)), _CQ_HINTS.get(code))
                    for e in found for code in [_cq_code(e)]]
    rep.counts = {"topic": q.topic, "queue_id": q.queue_id, "files": len(q.info.files), "units": q.count,
                  "min_offset": q.min_offset, "max_offset": q.max_offset, "blank_units": q.blank_units,
                  "mapped_file_size": q.mapped_file_size}
    ext = open_ext(q)
    if ext is not None:
        with ext:
            rep.problems += [problem_from_error(_ext_code(e), e) for e in ext.problems()]
            rep.problems += _ext_address_problems(q, ext, fix)
            rep.counts["ext_units"] = ext.count
            rep.counts["ext_mapped_file_size"] = ext.mapped_file_size
    if q.dirty_files:
        rep.notes.append(f"{report_path}: {len(q.dirty_files)} files after the end of the queue (the broker "
                         f"deletes them at restart)")
    return rep


def queue_checks_early(folder: Path, mapped_file_size: int | None) -> tuple[FileReport, int | None]:
    """:func:`queue_checks` of one queue folder on its own, in a worker process, before the
    CommitLog's end is known (a store's verify starts these with the index files' checks,
    before the CommitLog's walk): the report without the check against that end, and the
    queue's largest message end (``ConsumeQueue.max_message_end``). The report is the whole
    one wherever the end turns out at or past that (then nothing ends past it); elsewhere the
    caller checks the queue again with the end. Cost: O(units)."""
    q, _ = open_queue(folder, mapped_file_size)
    try:
        found, message_end = q.problems_and_message_end()
        return queue_checks(q, str(folder), None, found=found), message_end
    finally:
        q.close()


def verify_consume_queue(path: str | os.PathLike, *, mapped_file_size: int | None = None) -> list[FileReport]:
    """The per-queue checks of a ConsumeQueue file, queue folder, topic folder or
    ``consumequeue/`` root: one report per queue (:meth:`ConsumeQueue.problems`).
    `mapped_file_size` is mappedFileSizeConsumeQueue (default: the most common file size).
    Read-only. Cost: O(units), vectorized.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()) / "T" / "0"; d.mkdir(parents=True)
    >>> units = [(0, 100, 0), (200, 100, 0), (100, 100, 0)]     # the third goes back: out of order
    >>> _ = (d / cq.file_name(0)).write_bytes(b"".join(cq.UNIT.pack(*u) for u in units).ljust(100, bytes(1)))
    >>> [(p.check, p.offset, p.field) for p in verify_consume_queue(d)[0].problems]
    [('cq.order', 40, 'unit.commitlog_offset')]
    """
    path = Path(path)
    if path.is_file():
        one = _OneFileQueue(path)
        try:
            q, _ = open_queue(path.parent, mapped_file_size, one)
            with q:
                return [queue_checks(q, str(path), None, one.fix)]
        finally:
            one.close()
    out = []
    for folder in queue_folders(path):
        q, _ = open_queue(folder, mapped_file_size)
        with q:
            out.append(queue_checks(q, str(folder), None))
    return out
