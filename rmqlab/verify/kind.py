"""Which RocketMQ file a path is, from its location, name and content."""
from __future__ import annotations

import os
from pathlib import Path

from rmqlab.formats import batchconsumequeue as bcq
from rmqlab.formats import checkpoint as cpf
from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats import dledger, rocksdbcq
from rmqlab.formats import storepaths as sp
from rmqlab.formats.storepaths import StorePaths
from rmqlab.verify.common import INDEX_FILE_NAME, OFFSET_FILE_NAME
from rmqlab.verify.report import Kind


def _is_commitlog_bytes(path: Path) -> bool:
    """A CommitLog record's magic at byte 4, or a DLedger CommitLog's first entry (its records
    framed in DLedger entries, rmqlab.formats.dledger)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(dledger.BODY_OFFSET)
    except OSError:
        return False
    if len(head) < 8:
        return False
    magic = int.from_bytes(head[4:8], "big", signed=True)
    start = int(path.name) if OFFSET_FILE_NAME.fullmatch(path.name) else 0
    return magic in (cl.MAGIC_V1, cl.MAGIC_V2, cl.MAGIC_BLANK) or dledger.is_ledger_file(head, start)


def detect_kind(path: str | os.PathLike) -> Kind:
    """What `path` is, from its location, name and first bytes: one of :data:`KINDS`.

    A ``dledger-<selfId>`` folder holding ``data/`` is a DLedger CommitLog's ledger; a folder
    holding ``commitlog/``, ``consumequeue/``, ``index/`` or ``checkpoint`` is a store; a folder
    named ``commitlog`` / ``index`` / ``consumequeue`` (or inside
    ``consumequeue/``) is that part; a file is judged by its folder, then its name (17 digits:
    an index file; ``checkpoint``), then its bytes (a CommitLog record magic at byte 4).

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()); (d / "commitlog").mkdir(); detect_kind(d)
    'store'

    Raises ValueError when nothing fits (pass ``kind=``).
    """
    p = Path(path)
    if p.is_dir():
        if p.name.startswith(sp.DLEDGER_PREFIX) and (p / dledger.DATA_FOLDER).is_dir():
            return "dledger"
        if StorePaths(p).is_store():
            return "store"
        if rocksdbcq.is_rocksdb(p) and p.name == sp.CONSUMEQUEUE:
            return "rocksdbcq"
        if bcq.FOLDER in (p.name, p.parent.name, p.parent.parent.name):
            return "batchconsumequeue"
        if p.name == sp.COMMITLOG:
            return "commitlog"
        if p.name == sp.INDEX:
            return "index"
        if sp.CONSUMEQUEUE in (p.name, p.parent.name, p.parent.parent.name):
            return "consumequeue"
        names = sorted(c.name for c in p.iterdir() if c.is_file())
        if any(INDEX_FILE_NAME.fullmatch(n) for n in names):
            return "index"
        twenty = [n for n in names if OFFSET_FILE_NAME.fullmatch(n)]
        if twenty:
            return "commitlog" if _is_commitlog_bytes(p / twenty[0]) else "consumequeue"
        raise ValueError(f"{p}: cannot tell what this folder holds (no store parts, no index, CommitLog "
                         f"or ConsumeQueue files); pass kind=")
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file or directory")
    parent = p.parent.name
    if p.name == sp.CHECKPOINT:
        return "checkpoint"
    if parent == sp.COMMITLOG:
        return "commitlog"
    if parent == sp.INDEX or INDEX_FILE_NAME.fullmatch(p.name):
        return "index"
    if p.parent.parent.parent.name == bcq.FOLDER:
        return "batchconsumequeue"
    if p.parent.parent.parent.name == sp.CONSUMEQUEUE:
        return "consumequeue"
    if _is_commitlog_bytes(p):
        return "commitlog"
    size = p.stat().st_size
    if OFFSET_FILE_NAME.fullmatch(p.name) and size % cq.UNIT_SIZE == 0:
        return "consumequeue"
    if size == cpf.FILE_SIZE:
        return "checkpoint"
    raise ValueError(f"{p}: cannot tell what this file is (not in commitlog/, index/ or consumequeue/, "
                     f"and its name and bytes do not say); pass kind=")
