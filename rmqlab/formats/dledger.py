"""DLedger's CommitLog: the store of a RocketMQ broker with ``enableDLegerCommitLog`` (4.5 and later).

Mirrors openmessaging/dledger's ``DLedgerEntry``, ``DLedgerEntryCoder``, ``DLedgerMmapFileStore``
(``appendAsLeader``, ``recover``, ``persistCheckPoint``), ``MmapFileList`` (``preAppend``: the blank,
``doLoad``), ``MemberState`` (the term file) and ``DLedgerConfig`` (paths and sizes), read at
release-0.1 (RocketMQ 4.5-4.7), dledger-0.2.3 (4.9.x) and dledger-all-0.3.1.2 / 0.3.2 (4.9.7,
5.x): the layouts below are the same in all of them. And RocketMQ's ``store/dledger/DLedgerCommitLog``
(rocketmq-all-4.9.7, 5.3.3): its append hook and ``checkMessageAndReturnSize``.

A DLedger group member keeps its ledger in ``{storePathRootDir}/dledger-{selfId}/``::

    data/        the entries, in files named by the 20-digit offset of their first byte, each
                 mappedFileSizeCommitLog bytes (the broker passes it as mappedFileSizeForEntryData)
    index/       32-byte units, one an entry, unit i at byte i x 32 (mappedFileSizeForEntryIndex,
                 default 32 x 5 Mi = 160 MiB a file)
    checkpoint   Java properties: endIndex, committedIndex (persistCheckPoint; .bak the one before)
    currterm     Java properties: currTerm, voteLeader (MemberState)

An entry is a 48-byte head (:data:`ENTRY`) and a body. In a RocketMQ store each body is one
CommitLog record, and the broker's append hook rewrites the record's PHYSICALOFFSET to the entry's
``pos + 48``: the CommitLog offset of a message is where its record starts in the data files, so
ConsumeQueue units and message ids point into them as into ``commitlog/``. A file ends in a blank
(magic -1, then the bytes left in the file, ``MmapFileList.BLANK_MAGIC_CODE``) when the next entry
does not fit. ``chainCrc``, ``bodyCrc`` and ``channel`` are written as the entry object holds them:
nothing in DLedger up to 0.3.2 sets them, so they are 0.

The CommitLog readers (:mod:`rmqlab.formats.commitlog`) read a DLedger data folder as they read
``commitlog/``: a file that starts with an entry (:func:`is_ledger_file`) is walked entry by entry.

Facts from recovery (``DLedgerMmapFileStore.recover``), which :meth:`Ledger.check` applies: every
entry's ``pos`` is its own offset, ``bodySize + 48 == size``, ``size > 44``, magic is 1, indexes
follow one another and terms never decrease; each entry agrees with its index unit (magic, pos,
size, index, term). Recovery stops at the first entry failing a check and truncates the data and
index there; the committed index comes from ``checkpoint``. ``MmapFileList.doLoad`` refuses a data
or index file whose length is not the configured size.

>>> import numpy as np
>>> ENTRY.itemsize, INDEX_UNIT.itemsize, BODY_OFFSET
(48, 32, 48)
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rmqlab import _records
from rmqlab.errors import FormatError
from rmqlab.formats.mapped import present
from rmqlab.formats.storepaths import DLEDGER_PREFIX

__all__ = [
    "ENTRY", "INDEX_UNIT", "BODY_OFFSET", "HEADER_SIZE", "MAGIC_1", "BLANK_MAGIC", "INDEX_FILE_SIZE",
    "is_ledger_file", "walk_entries", "walk_entries_py", "entry_heads", "first_bad_entry", "read_index",
    "read_properties", "Ledger", "LedgerProblem", "PROBLEM_KINDS",
]

#: DLedgerEntryCoder.encode's head of every entry (big-endian)
ENTRY = np.dtype([
    ("magic", ">i4"),       # MAGIC_1 (CURRENT_MAGIC); BLANK_MAGIC starts a file's blank instead
    ("size", ">i4"),        # the whole entry, head included (computeSizeInBytes)
    ("index", ">i8"),       # the entry's index in the ledger: 0, 1, 2 ... across files
    ("term", ">i8"),        # the leader's term when it was appended
    ("pos", ">i8"),         # the entry's own offset in the data files (to validate)
    ("channel", ">i4"),     # reserved, 0
    ("chain_crc", ">i4"),   # never set: 0
    ("body_crc", ">i4"),    # never set: 0
    ("body_size", ">i4"),   # bytes of the body that follows
])
ENTRY_FIELDS: tuple[str, ...] = tuple(ENTRY.names or ())
BODY_OFFSET = ENTRY.itemsize    # DLedgerEntry.BODY_OFFSET: where the body (a CommitLog record) starts
HEADER_SIZE = 44                # DLedgerEntry.HEADER_SIZE (the head without bodySize): size must exceed it
MAGIC_1 = 1                     # DLedgerMmapFileStore.MAGIC_1, the only magic written
BLANK_MAGIC = -1                # MmapFileList.BLANK_MAGIC_CODE, then the bytes left in the file

#: DLedgerCoder.encodeIndex's unit, one per entry, unit i at byte i x 32 of the index files
INDEX_UNIT = np.dtype([
    ("magic", ">i4"),       # the entry's magic
    ("pos", ">i8"),         # the entry's offset in the data files
    ("size", ">i4"),        # the entry's size
    ("index", ">i8"),       # the entry's index (= unit number)
    ("term", ">i8"),        # the entry's term
])
INDEX_FILE_SIZE = INDEX_UNIT.itemsize * 5 * 1024 * 1024   # DLedgerConfig.mappedFileSizeForEntryIndex

CHECKPOINT_FILE, END_INDEX_KEY, COMMITTED_INDEX_KEY = "checkpoint", "endIndex", "committedIndex"
TERM_FILE, TERM_KEY, VOTE_KEY = "currterm", "currTerm", "voteLeader"
DATA_FOLDER, INDEX_FOLDER = "data", "index"

#: CommitLog magic codes (MessageDecoder.MESSAGE_MAGIC_CODE, _V2, CommitLog.BLANK_MAGIC_CODE) as ints
_COMMITLOG_MAGICS = (0xDAA320A7 - (1 << 32), 0xDAA320AB - (1 << 32), 0xCBD43194 - (1 << 32))

_STOP_END, _STOP_BLANK, _STOP_BLANK_SIZE, _STOP_SHORT, _STOP_MAGIC, _STOP_PAST_END, _STOP_TOO_SMALL, _STOP_LIMIT = (
    _records.STOP_END, _records.STOP_BLANK, _records.STOP_BLANK_SIZE, _records.STOP_SHORT, _records.STOP_MAGIC,
    _records.STOP_PAST_END, _records.STOP_TOO_SMALL, _records.STOP_LIMIT)

#: what each stop of :func:`walk_entries` means, and the head field it names
ENTRY_STOPS = {
    _STOP_END: ("", "end of the data exactly on an entry boundary"),
    _STOP_BLANK: ("magic", "the file's blank (magic -1): the rest of the file is unused"),
    _STOP_BLANK_SIZE: ("size", "a blank (magic -1) whose size is not the bytes left in the file"),
    _STOP_SHORT: ("size", "fewer bytes left than an entry's 48-byte head"),
    _STOP_MAGIC: ("magic", "magic is neither 1 (MAGIC_1) nor -1 (the blank)"),
    _STOP_PAST_END: ("size", "the entry's size runs past the end of the file"),
    _STOP_TOO_SMALL: ("size", "size is not above the 48-byte head"),
    _STOP_LIMIT: ("", "max_entries reached"),
}


def is_ledger_file(buf, start_offset: int) -> bool:
    """Whether a file (its bytes `buf`, the offset of its first byte `start_offset`) is a DLedger
    data file: it starts with an entry whose head holds magic 1, a size above the 48-byte head
    and its own position, the file's start offset (recovery's first check of every file). The
    broker knows it from its configuration (``enableDLegerCommitLog``) and tells the framing of
    a position by ``DLedgerCommitLog.checkMessageAndReturnSize``'s rule (the int at +4 is a
    CommitLog magic code in a plain record, an entry's size in a DLedger one); a plain
    CommitLog file starts with a record whose int at +4 is its MAGICCODE, so the two never
    agree. A file of zeros is neither (False). Cost: O(1).

    >>> head = np.zeros(1, ENTRY); head[["magic", "size", "pos"]] = (1, 100, 4096)
    >>> is_ledger_file(head.tobytes(), 4096), is_ledger_file(head.tobytes(), 0)
    (True, False)
    """
    if len(buf) < BODY_OFFSET:
        return False
    head = np.frombuffer(buf, ENTRY, 1)[0]
    return (int(head["magic"]) == MAGIC_1 and int(head["size"]) not in _COMMITLOG_MAGICS
            and int(head["size"]) > BODY_OFFSET and int(head["pos"]) == start_offset)


def walk_entries(buf, start: int = 0, end: int | None = None, max_entries: int = -1) -> tuple[np.ndarray, int, int]:
    """The positions (int64) of the DLedger entries of one data file from byte `start`, following
    each entry's size in C (``rmqlab._records.walk_entries``), the position where the walk
    stopped and why (a key of :data:`ENTRY_STOPS`: the end, the blank, or a head that cannot be).
    Cost: O(entries), one read of each head.

    >>> head = np.zeros(1, ENTRY); head[["magic", "size", "body_size"]] = (1, 50, 2)
    >>> data = (head.tobytes() + b"hi") * 2 + np.array([-1, 8], ">i4").tobytes()
    >>> pos, stop, code = walk_entries(data)
    >>> pos.tolist(), stop, ENTRY_STOPS[code][1].split(" (")[0]
    ([0, 50], 100, "the file's blank")
    """
    end = len(buf) if end is None else end
    raw, stop, code = _records.walk_entries(buf, start, end, max_entries)
    return np.frombuffer(raw, np.int64), stop, code


def walk_entries_py(buf, start: int = 0, end: int | None = None, max_entries: int = -1) -> tuple[list[int], int, int]:
    """Pure-Python model of :func:`walk_entries` (the tests compare them on random files)."""
    end = len(buf) if end is None else end
    pos: list[int] = []
    p = start
    while True:
        left = end - p
        if left == 0:
            return pos, p, _STOP_END
        if 0 <= max_entries <= len(pos):
            return pos, p, _STOP_LIMIT
        if left < 8:
            return pos, p, _STOP_SHORT
        magic, size = (int(x) for x in np.frombuffer(buf, ">i4", 2, p))
        if magic == BLANK_MAGIC:
            return pos, p, _STOP_BLANK if size == left else _STOP_BLANK_SIZE
        if magic != MAGIC_1:
            return pos, p, _STOP_MAGIC
        if left < BODY_OFFSET:
            return pos, p, _STOP_SHORT
        if size > left:
            return pos, p, _STOP_PAST_END
        if size <= BODY_OFFSET:
            return pos, p, _STOP_TOO_SMALL
        pos.append(p)
        p += size


def entry_heads(buf, positions: np.ndarray) -> np.ndarray:
    """The :data:`ENTRY` heads at `positions` of `buf` (each with 48 bytes after it), as one
    structured array. Cost: O(entries), vectorized (a gather of 48 bytes each)."""
    U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
    P = np.asarray(positions, np.int64)
    return U[P[:, None] + np.arange(BODY_OFFSET)].reshape(-1).view(ENTRY) if len(P) else np.empty(0, ENTRY)


def first_bad_entry(heads: np.ndarray, offsets: np.ndarray, *, previous: tuple[int, int] | None = None,
                    record_size: np.ndarray | None = None) -> tuple[int, str, str] | None:
    """The first entry failing one of recovery's checks (``DLedgerMmapFileStore.recover``), as
    (row, field, reason), or None. `offsets` are the entries' offsets in the data files; `previous`
    (index, term) of the entry before the first; `record_size`, the TOTALSIZE of each body's
    CommitLog record, must be the body's size (``DLedgerCommitLog`` advances by the record).
    Cost: O(entries), vectorized.

    >>> h = np.zeros(2, ENTRY); h["magic"] = 1; h["size"] = 60; h["body_size"] = 12
    >>> h["index"] = [0, 2]; h["pos"] = [0, 60]
    >>> first_bad_entry(h, np.array([0, 60]))
    (1, 'index', 'index 2 after index 0: entries must follow one another')
    """
    n = len(heads)
    if not n:
        return None
    index, term = heads["index"].astype(np.int64), heads["term"].astype(np.int64)
    prev_index = np.concatenate([[previous[0] if previous else -1], index[:-1]])
    prev_term = np.concatenate([[previous[1] if previous else -1], term[:-1]])
    has_prev = np.arange(n) > 0 if previous is None else np.ones(n, bool)
    checks = [
        (heads["pos"] != offsets, "pos", lambda i: f"pos {heads['pos'][i]} but the entry is at offset {offsets[i]}"),
        (heads["body_size"].astype(np.int64) + BODY_OFFSET != heads["size"], "bodySize",
         lambda i: f"bodySize {heads['body_size'][i]} + 48 != size {heads['size'][i]}"),
        (has_prev & (index != prev_index + 1), "index",
         lambda i: f"index {index[i]} after index {prev_index[i]}: entries must follow one another"),
        (has_prev & (term < prev_term), "term",
         lambda i: f"term {term[i]} after term {prev_term[i]}: terms never decrease"),
    ]
    if record_size is not None:
        checks.append((record_size != heads["body_size"], "TOTALSIZE",
                       lambda i: f"the record's TOTALSIZE {record_size[i]} is not the entry's bodySize "
                                 f"{heads['body_size'][i]}"))
    worst = None
    for bad, fld, why in checks:
        hits = np.flatnonzero(bad)
        if len(hits) and (worst is None or hits[0] < worst[0]):
            worst = (int(hits[0]), fld, why(int(hits[0])))
    return worst


def read_index(folder: str | os.PathLike) -> np.ndarray:
    """The units of a ledger's ``index/`` folder as one :data:`INDEX_UNIT` array, unit i for
    entry i, up to the last unit with a non-zero magic (files past the written end are zeros).
    A ledger whose first entries were deleted starts its first file at unit ``begin index``:
    the units before are returned as zeros. Cost: one read of the written part of each file.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> u = np.zeros(3, INDEX_UNIT); u["magic"] = [1, 1, 0]; u["index"] = [0, 1, 0]
    >>> _ = (d / ("0" * 20)).write_bytes(u.tobytes())
    >>> read_index(d)["index"].tolist()
    [0, 1]
    """
    parts = []
    for p in _numbered_files(Path(folder)):
        start = int(p.name)
        if start % INDEX_UNIT.itemsize:
            raise FormatError(f"index file name {p.name} is not a multiple of {INDEX_UNIT.itemsize}", path=p, offset=0,
                              field="file name")
        raw = _mapped(p)
        raw = raw[:len(raw) - len(raw) % INDEX_UNIT.itemsize]
        parts.append((start // INDEX_UNIT.itemsize, raw.view(INDEX_UNIT)))
    if not parts:
        return np.empty(0, INDEX_UNIT)
    total = parts[-1][0] + len(parts[-1][1])
    out = np.zeros(total, INDEX_UNIT)
    for first, units in parts:
        out[first:first + len(units)] = units
    written = np.flatnonzero(out["magic"] != 0)
    return out[:written[-1] + 1] if len(written) else out[:0]


def read_properties(path: str | os.PathLike) -> dict[str, str] | None:
    """A file DLedger writes with ``IOUtils.properties2String`` (``key=value`` lines) and reads
    with ``java.util.Properties.load``, as a dict; None when the file is missing (DLedger then
    starts from defaults). Comment lines (``#``, ``!``) and blank lines are skipped; a key ends at
    the first ``=`` or ``:``; the value's leading blanks are dropped, as Properties.load drops them.

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "checkpoint"
    >>> _ = p.write_text("committedIndex=765\\nendIndex=765\\n")
    >>> read_properties(p)
    {'committedIndex': '765', 'endIndex': '765'}
    """
    p = Path(path)
    if not p.exists():
        return None
    out: dict[str, str] = {}
    for line in p.read_text(encoding="latin-1").splitlines():
        line = line.lstrip(" \t\f")
        if not line or line[0] in "#!":
            continue
        m = re.match(r"((?:[^=:\s\\]|\\.)*)\s*[=:\s]\s*(.*)", line)
        key, value = (m.group(1), m.group(2)) if m else (line, "")
        out[key] = value
    return out


#: the rules a ledger can break: a file's length (MmapFileList.doLoad), an entry's head (recovery
#: stops there), an index unit against its entry, the checkpoint or term file against the entries
PROBLEM_KINDS = ("load", "entry", "index", "checkpoint")


@dataclass(frozen=True)
class LedgerProblem:
    """One finding of :meth:`Ledger.check`: the file, the byte offset in it, the field, and why.
    ``kind``: which rule it breaks, one of :data:`PROBLEM_KINDS`. ``fatal``: the broker refuses to
    start on it (load fails) or truncates there (recovery)."""

    path: str
    offset: int
    field: str
    reason: str
    kind: str
    fatal: bool = True

    def __str__(self) -> str:
        return f"{self.path} @ {self.offset} [{self.field}]: {self.reason}"


@dataclass
class Ledger:
    """One DLedger member's ledger (``dledger-{selfId}/``, one of ``StorePaths(root).ledgers``):
    its entries, index units, checkpoint and term, as DLedger's store sees them offline.

    `file_size` is the data files' configured size (the broker's mappedFileSizeCommitLog); None
    takes the first data file's length. Cost: :meth:`entries` walks every data file's heads (C)
    and reads the index files' written parts.

    >>> import tempfile
    >>> led = Ledger(Path(tempfile.mkdtemp()) / "dledger-n0")
    >>> led.self_id, len(led.entries()), led.check()
    ('n0', 0, [])
    """

    folder: Path
    file_size: int | None = None
    #: the one walk of the data files: (entries, where each file's walk stopped)
    _walked: tuple[np.ndarray, list[_FileStop]] | None = field(default=None, repr=False)

    def __post_init__(self):
        self.folder = Path(self.folder)

    @property
    def self_id(self) -> str:
        name = self.folder.name   # DLedgerConfig.getDefaultPath: {storeBaseDir}/dledger-{selfId}
        return name[len(DLEDGER_PREFIX):] if name.startswith(DLEDGER_PREFIX) else name

    @property
    def data(self) -> Path:
        return self.folder / DATA_FOLDER

    @property
    def index_folder(self) -> Path:
        return self.folder / INDEX_FOLDER

    def data_files(self) -> list[Path]:
        """The data files, in offset order (names of 20 digits)."""
        return _numbered_files(self.data)

    def checkpoint(self) -> dict[str, int]:
        """``checkpoint``: endIndex and committedIndex (-1 when missing, as DLedger starts)."""
        props = read_properties(self.folder / CHECKPOINT_FILE) or {}
        return {key: _long(props.get(key), self.folder / CHECKPOINT_FILE, key)
                for key in (END_INDEX_KEY, COMMITTED_INDEX_KEY)}

    def term(self) -> dict[str, Any]:
        """``currterm``: the persisted term and vote (None when the file does not say: MemberState
        then starts at -1 in dledger 0.1, at 0 from 0.2; a one-node group of 0.1 stays at -1). A
        vote that is absent or empty (``voteLeader=``: a node that voted for nobody in its term) is
        None, as MemberState.loadTerm reads it."""
        props = read_properties(self.folder / TERM_FILE) or {}
        text = props.get(TERM_KEY)
        term = _long(text, self.folder / TERM_FILE, TERM_KEY) if text is not None and text.strip() else None
        return {TERM_KEY: term, VOTE_KEY: props.get(VOTE_KEY) or None}

    def entries(self) -> np.ndarray:
        """Every entry of the data files, in order: the :data:`ENTRY` head fields plus ``offset``
        (the entry's offset in the data files), ``file`` (the data file's number in
        :meth:`data_files`) and ``record_offset`` (offset + 48, the CommitLog offset of its
        record). The walk of a file stops at its blank, at zeros, or at the first head that
        cannot be (:meth:`check` says which). Cost: O(entries), C walk plus a vectorized gather."""
        return self._walk()[0]

    def _walk(self) -> tuple[np.ndarray, list[_FileStop]]:
        """The walk of every data file once (C), kept: the entries and each file's stop."""
        if self._walked is not None:
            return self._walked
        parts, stops = [], []
        for k, p in enumerate(self.data_files()):
            buf = _mapped(p)
            pos, stop, code = walk_entries(buf)
            heads = entry_heads(buf, pos)
            one = np.empty(len(pos), _ENTRY_ROWS)
            for name in ENTRY_FIELDS:
                one[name] = heads[name]
            one["offset"] = int(p.name) + pos
            one["file"] = k
            one["record_offset"] = one["offset"] + BODY_OFFSET
            parts.append(one)
            stops.append(_FileStop(stop, code, zeros_after=not buf[stop:].any()))
        self._walked = (np.concatenate(parts) if parts else np.empty(0, _ENTRY_ROWS), stops)
        return self._walked

    def index_units(self) -> np.ndarray:
        """:func:`read_index` of the ledger's ``index/`` folder."""
        return read_index(self.index_folder) if self.index_folder.is_dir() else np.empty(0, INDEX_UNIT)

    def summary(self) -> dict[str, Any]:
        """What DLedger's store reports after its recovery: begin and end index and end term (the
        last entry's; -1 without entries), the committed index (the checkpoint's, applied as
        ``updateCommittedIndex`` applies it: ignored when -1, without entries or below the begin
        index, capped at the end; else -1) and the committed position (the end of that entry;
        else -1), the term file, the data's end."""
        e = self.entries()
        cp, t = self.checkpoint(), self.term()
        begin = int(e["index"][0]) if len(e) else -1
        end_index = int(e["index"][-1]) if len(e) else -1
        committed, committed_pos = -1, -1
        wanted = cp[COMMITTED_INDEX_KEY]
        if wanted != -1 and end_index != -1 and wanted >= begin:
            committed = min(wanted, end_index)
            at = np.flatnonzero(e["index"] == committed)
            committed_pos = int(e["offset"][at[0]] + e["size"][at[0]]) if len(at) else -1
        return {"self_id": self.self_id, "entries": len(e), "ledger_begin_index": begin,
                "ledger_end_index": end_index, "ledger_end_term": int(e["term"][-1]) if len(e) else -1,
                "committed_index": committed, "committed_pos": committed_pos,
                "data_end": int(e["offset"][-1] + e["size"][-1]) if len(e) else 0,
                "checkpoint_end_index": cp[END_INDEX_KEY], "checkpoint_committed_index": cp[COMMITTED_INDEX_KEY],
                "current_term": t[TERM_KEY], "vote_leader": t[VOTE_KEY]}

    def check(self) -> list[LedgerProblem]:
        """The load and recovery rules of DLedger's store, on this ledger: file lengths
        (``MmapFileList.doLoad``), each file's walk (it ends at its blank, or, in the last file,
        at zeros), recovery's checks of every head (:func:`first_bad_entry`), each entry against
        its index unit, the checkpoint (committedIndex not past the end) and the term file (not
        below the last entry's term). Cost: :meth:`entries` plus O(entries) vectorized."""
        problems: list[LedgerProblem] = []
        files = self.data_files()
        size = self.file_size or (files[0].stat().st_size if files else None)
        for p in files:
            if p.stat().st_size != size:
                problems.append(LedgerProblem(os.fspath(p), 0, "file length",
                                              f"{p.stat().st_size} bytes, not the data files' {size} "
                                              "(MmapFileList.doLoad refuses it)", "load"))
        for p in (self.index_files()):
            if p.stat().st_size != INDEX_FILE_SIZE:
                problems.append(LedgerProblem(os.fspath(p), 0, "file length", f"{p.stat().st_size} bytes, not the "
                                              f"index files' {INDEX_FILE_SIZE} (MmapFileList.doLoad refuses it)",
                                              "load", fatal=False))
        e, stops = self._walk()
        for k, st in enumerate(stops):
            if st.code in (_STOP_END, _STOP_BLANK):
                continue
            if st.zeros_after and k == len(files) - 1:
                continue        # the unwritten rest of the last file
            fld, why = ENTRY_STOPS.get(st.code, ("", "?"))
            if st.zeros_after:
                why = "zeros where the next entry or the file's blank should be (not the last file)"
            problems.append(self._stop(files, k, st.at, fld, why))
        bad = first_bad_entry(e[list(ENTRY_FIELDS)], e["offset"])
        if bad is not None:
            row, fld, why = bad
            k = int(e["file"][row])
            problems.append(self._stop(files, k, int(e["offset"][row]) - int(files[k].name), fld, why))
        problems += self._index_problems(e)
        s = self.summary()
        cp_path = os.fspath(self.folder / CHECKPOINT_FILE)
        if s["checkpoint_committed_index"] > s["ledger_end_index"]:
            problems.append(LedgerProblem(cp_path, 0, COMMITTED_INDEX_KEY,
                                          f"committedIndex {s['checkpoint_committed_index']} past the ledger's end "
                                          f"index "
                                          f"{s['ledger_end_index']} (recovery caps it)", "checkpoint", fatal=False))
        if len(e) and s["current_term"] is not None and s["current_term"] < s["ledger_end_term"]:
            problems.append(LedgerProblem(os.fspath(self.folder / TERM_FILE), 0, TERM_KEY,
                                          f"currTerm {s['current_term']} below the last entry's term "
                                          f"{s['ledger_end_term']}", "checkpoint"))
        return problems

    @staticmethod
    def _stop(files: list[Path], k: int, at: int, fld: str, why: str) -> LedgerProblem:
        """Where recovery stops: in the last file a torn tail it truncates (a kill -9 while
        appending); before it, the truncation takes whole files, which recovery refuses
        ("processOffset is too small": the broker exits) or which loses what follows."""
        if k == len(files) - 1:
            return LedgerProblem(os.fspath(files[k]), at, fld, f"torn tail: {why} (recovery truncates the ledger "
                                 f"here)", "entry", fatal=False)
        return LedgerProblem(os.fspath(files[k]), at, fld, why, "entry")

    def index_files(self) -> list[Path]:
        """The index files, in offset order (names of 20 digits)."""
        return _numbered_files(self.index_folder)

    def _index_problems(self, e: np.ndarray) -> list[LedgerProblem]:
        """Each entry against its index unit, as recovery compares them (a mismatch makes it
        rewrite the index from there: not fatal)."""
        units = self.index_units()
        if not len(e):
            return []
        idx = e["index"].astype(np.int64)
        have = (idx >= 0) & (idx < len(units))
        path = os.fspath(self.index_folder)
        if not have.all():
            row = int(np.flatnonzero(~have)[0])
            return [LedgerProblem(path, int(idx[row]) * INDEX_UNIT.itemsize, "index",
                                  f"no index unit for entry {idx[row]} (the index holds {len(units)} units)",
                                  "index", fatal=False)]
        u = units[idx]
        pairs = (("magic", "magic"), ("pos", "offset"), ("size", "size"), ("index", "index"), ("term", "term"))
        for name, mine in pairs:
            bad = np.flatnonzero(u[name] != e[mine])
            if len(bad):
                row = int(bad[0])
                return [LedgerProblem(path, int(idx[row]) * INDEX_UNIT.itemsize, name,
                                      f"index unit {idx[row]} says {name} {u[name][row]}, the entry {e[mine][row]}",
                                      "index", fatal=False)]
        return []


@dataclass(frozen=True)
class _FileStop:
    """Where the walk of one data file stopped (a position in it), why (:data:`ENTRY_STOPS`), and
    whether only zeros follow."""

    at: int
    code: int
    zeros_after: bool


_ENTRY_ROWS = np.dtype([(name, ENTRY[name].newbyteorder("=")) for name in ENTRY_FIELDS]
                       + [("offset", np.int64), ("file", np.int32), ("record_offset", np.int64)])


def _numbered_files(folder: Path) -> list[Path]:
    """The files of `folder` named by 20 digits (MmapFileList's offset names), in offset order;
    none when the folder is missing."""
    if not folder.is_dir():
        return []
    return sorted((p for p in folder.iterdir() if re.fullmatch(r"\d{20}", p.name)), key=lambda p: int(p.name))


def _mapped(path: Path) -> np.ndarray:
    """The bytes of a file as a read-only map (an empty array for an empty file), brought here
    first when it stands in for a remote file (:func:`rmqlab.formats.mapped.present`)."""
    return np.memmap(present(path), np.uint8, mode="r") if path.stat().st_size else np.empty(0, np.uint8)


def _long(text: str | None, path: Path, key: str) -> int:
    if text is None or not text.strip():
        return -1
    try:
        return int(text.strip())
    except ValueError:
        raise FormatError(f"{key}={text!r} is not a long", path=path, offset=0, field=key) from None
