"""The checks of a CommitLog folder, and the message table the cross-file checks join on."""
from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np

from rmqlab.arrays import distinct
from rmqlab.dispatch import message_tags_codes
from rmqlab.errors import FormatError, GeometryError, RmqlabError, TruncatedFileError
from rmqlab.formats import commitlog as cl
from rmqlab.formats.commitlog.columns import PROP_CRC_MISMATCH, columns_frame, prop_crc_states, scan_file
from rmqlab.verify.common import (
    OFFSET_FILE_NAME,
    add_problem,
    broker_text,
    first_problem,
    gather_field,
    most_common,
)
from rmqlab.verify.report import FileReport, make_problem, problem_from_error

#: bits of the (row, key hash) codes used for joins: hash < 2^31
KEY_CODE_HASH_BITS = 31
#: messages whose key strings Messages.key_codes makes at a time
KEY_CODE_CHUNK = 1 << 20


class Messages:
    """The message table of a CommitLog (the readable prefix of each file), with each
    message's real position (file start + offset in the file), for the cross-file joins."""

    def __init__(self, frame, positions, files, file_of, file_pos, min_offset, end_offset):
        self.frame = frame
        self.positions = positions          # int64, sorted: CommitLog offset of each message
        self.files = files                  # list of paths
        self.file_of = file_of              # int32 per message: index into files
        self.file_pos = file_pos            # int64 per message: position inside its file
        self.min_offset = min_offset        # first file's start (None: no files)
        self.end_offset = end_offset        # the CommitLog's max offset after recovery
        n = len(positions)
        self.n = n
        self.total_size = frame["total_size"].to_numpy(np.int64) if n else np.zeros(0, np.int64)
        self.sys_flag = frame["sys_flag"].to_numpy(np.int64) if n else np.zeros(0, np.int64)
        self.store_ts = frame["store_timestamp"].to_numpy(np.int64) if n else np.zeros(0, np.int64)
        self._key_codes = None
        self._tags = None

    def lookup(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row of the message starting at each offset or -1, is-a-boundary mask)."""
        if not self.n:
            return np.full(len(offsets), -1, np.int64), np.zeros(len(offsets), bool)
        row = np.searchsorted(self.positions, offsets)
        inside = row < self.n
        hit = inside.copy()
        hit[inside] = self.positions[row[inside]] == offsets[inside]
        return np.where(hit, row, -1), hit

    def expired(self, offsets: np.ndarray) -> np.ndarray:
        """Offsets below the first CommitLog file: messages deleted by retention (not checked)."""
        if self.min_offset is None:
            return np.zeros(len(offsets), bool)
        return offsets < self.min_offset

    def where(self, offset: int) -> str:
        """Words for a CommitLog offset that is not a message start."""
        if self.min_offset is None:
            return "the CommitLog has no files"
        if offset < self.min_offset:
            return "before the CommitLog's first file"
        if offset >= self.end_offset:
            return f"at or past the CommitLog's end ({self.end_offset})"
        row = int(np.searchsorted(self.positions, offset, side="right")) - 1
        if row >= 0 and offset < self.positions[row] + self.total_size[row]:
            return f"inside the message at {int(self.positions[row])} ({int(self.total_size[row])} bytes)"
        return "in no message (a blank record, zeros, or an unreadable part of a file)"

    def describe(self, row: int) -> str:
        r = self.frame.iloc[row]
        return (f"topic {r['topic']!r}, KEYS {r['keys']!r}, UNIQ_KEY {r['uniq_key']!r}, "
                f"store time {int(r['store_timestamp'])}")

    @property
    def key_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Every key buildIndex would put for each message, rollbacks included, as sorted
        unique codes ``row << 31 | index_hash``; plus every code of the expansion, in message
        order (a message's row is its code >> 31). Cost: O(messages + key bytes), in Arrow and
        C, the key strings made for KEY_CODE_CHUNK messages at a time: memory about 24 bytes a
        key (the two arrays and a sort) beyond the message table."""
        if self._key_codes is None:
            parts = [self._chunk_key_codes(lo, min(lo + KEY_CODE_CHUNK, self.n))
                     for lo in range(0, self.n, KEY_CODE_CHUNK)]
            codes = np.concatenate(parts) if parts else np.zeros(0, np.int64)
            del parts
            self._key_codes = (distinct(codes), codes)
        return self._key_codes

    def _chunk_key_codes(self, lo: int, hi: int) -> np.ndarray:
        """The key codes of messages lo..hi-1, in message order."""
        from rmqlab.indexservice import expand_columns
        from rmqlab.javahash import index_hash_many

        f = self.frame
        cols = {"topic": f["topic"].to_numpy(object)[lo:hi], "phy_offset": self.positions[lo:hi],
                "store_timestamp": self.store_ts[lo:hi], "keys": f["keys"].to_numpy(object)[lo:hi],
                "uniq_key": f["uniq_key"].to_numpy(object)[lo:hi], "sys_flag": np.zeros(hi - lo, np.int64)}
        try:
            ex = expand_columns(cols)
        except UnicodeEncodeError:
            # invalid UTF-8 in a property (read back with surrogate escapes): the broker's
            # new String(bytes, UTF_8) puts U+FFFD there, so hash that (a loop, damaged data only)
            fix = np.frompyfunc(broker_text, 1, 1)
            for name in ("topic", "keys", "uniq_key"):
                cols[name] = fix(cols[name]).astype(object)
            ex = expand_columns(cols)
        rows = np.asarray(ex.message_index, np.int64) + lo
        hashes = index_hash_many(ex.keys).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
        return (rows << KEY_CODE_HASH_BITS) | hashes

    @property
    def tags_codes(self) -> np.ndarray:
        """The tags code the broker dispatches for each message (ConsumeQueue):
        :func:`rmqlab.dispatch.message_tags_codes`."""
        if self._tags is None:
            f = self.frame
            codes = message_tags_codes(f["topic"].to_numpy(object), f["tags"].to_numpy(object),
                                       f["delay_level"].to_numpy(np.int64), self.store_ts) if self.n \
                else np.zeros(0, np.int64)
            self._tags = codes
        return self._tags


#: the message columns the cross-file joins use (the rest is dropped file by file)
_MESSAGE_COLUMNS = ("topic", "queue_id", "queue_offset", "phy_offset", "sys_flag", "store_timestamp", "keys",
                    "uniq_key", "tags", "delay_level", "total_size", "properties")


def _message_frame(parts: list[dict]):
    import pandas as pd

    if not parts:
        return columns_frame([], False, False)[list(_MESSAGE_COLUMNS)]
    return pd.DataFrame({c: np.concatenate([p[c] for p in parts]) for c in _MESSAGE_COLUMNS})


def _commitlog_files(path: Path) -> tuple[list[cl.StoreFile], list[FileReport]]:
    """The CommitLog files (cl.store_files), each listed on its own so that a file the format
    module refuses (a name past Long.MAX_VALUE) becomes a report, not an exception."""
    if not path.is_dir():
        children = [path]
    else:
        children = [c for c in path.iterdir() if OFFSET_FILE_NAME.fullmatch(c.name) and c.is_file()]
    files, refused = [], []
    for c in children:
        try:
            files += cl.store_files(c)
        except RmqlabError as e:
            r = FileReport(str(c), "commitlog", counts={"unreadable": True})
            r.problems.append(problem_from_error("commitlog.file-name", e))
            refused.append(r)
    return sorted(files, key=lambda f: f.start_offset), refused


def _crc_check(U: np.ndarray, pos: np.ndarray, sys_flag: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """True where BODYCRC is right (or BODYLEN is 0) for records at positions `pos` of a file."""
    from rmqlab import _records

    if not len(pos):
        return np.zeros(0, bool)
    bw = np.where(sys_flag & cl.BORNHOST_V6_FLAG, 16, 4)
    sw = np.where(sys_flag & cl.STOREHOSTADDRESS_V6_FLAG, 16, 4)
    o_tail = cl.HEAD.size + bw + cl.PORT.size + cl.STORE_TIME.size + sw + cl.PORT.size
    o_body = o_tail + cl.TAIL.size
    body_len = gather_field(U, pos + o_tail, cl.TAIL, "body_len")
    crc = np.empty(len(pos), np.uint32)
    _records.crc32_spans(U, np.ascontiguousarray(pos + o_body, np.int64),
                         np.ascontiguousarray(body_len, np.int64), crc)
    return (body_len == 0) | ((crc.astype(np.int64) & 0x7FFFFFFF) == stored.astype(np.int64))


def _commitlog_file_checks(rep: FileReport, f: cl.StoreFile, rr: cl.ReadReport, cols: dict, pos: np.ndarray,
                           used: int, blank: bool, last: bool, crc_buf) -> None:
    """Damage, torn tail, end-of-file blank, PHYSICALOFFSET and (with `crc_buf`) BODYCRC and the
    __CRC32# property of one walked file; problems go to `rep`."""
    p = str(f.path)
    for d in rr.damage:
        rep.problems.append(make_problem("commitlog.record", FormatError,
                                     d.reason + "; the rest of the file cannot be read", d.path, d.offset, d.field))
    if rr.torn_tail is not None:
        d = rr.torn_tail
        if last:
            rep.problems.append(make_problem("commitlog.torn-tail", TruncatedFileError,
                                         d.reason + " (the broker truncates it at recovery)", d.path, d.offset,
                                         d.field, severity="warning"))
        else:
            rep.problems.append(make_problem("commitlog.record", FormatError,
                                         d.reason.replace("torn tail: ", "") + " (not the last file: a torn "
                                         "write cannot be here); the rest of the file cannot be read",
                                         d.path, d.offset, d.field))
    readable = not rr.damage and rr.torn_tail is None
    if readable and not last and not blank:
        rep.problems.append(make_problem(
            "commitlog.blank", FormatError,
            f"the last message ends at {used} and {f.size - used} bytes are left, but no end-of-file blank "
            f"record (TOTALSIZE = bytes left, MAGICCODE 0xCBD43194) follows: only the last file may end "
            f"without one", p, used, "MAGICCODE"))
    stored_phy = cols["phy_offset"].astype(np.int64)

    def make_phy(k, c):
        return make_problem("commitlog.phy-offset-field", FormatError,
                        f"PHYSICALOFFSET {stored_phy[k]} but the record is at {f.start_offset + pos[k]} "
                        f"(file start {f.start_offset} + position {pos[k]})", p, int(pos[k]), "PHYSICALOFFSET",
                        count=c)

    add_problem(rep.problems, first_problem(stored_phy != f.start_offset + pos, make_phy))
    if crc_buf is not None and len(pos):
        U = np.frombuffer(crc_buf, np.uint8)
        good = _crc_check(U, pos, cols["sys_flag"].astype(np.int64), cols["body_crc"].astype(np.int64))
        del U

        def make_crc(k, c):
            return make_problem("commitlog.body-crc", FormatError,
                            f"BODYCRC {int(cols['body_crc'][k])} does not match the body (CRC32(body) & 0x7FFFFFFF)",
                            p, int(pos[k]), "BODYCRC", count=c)

        add_problem(rep.problems, first_problem(~good, make_crc))
        U = np.frombuffer(crc_buf, np.uint8)
        prop_crc = prop_crc_states(U, pos, cols["total_size"].astype(np.int64), cols["version"],
                                   cols["sys_flag"].astype(np.int64))
        del U

        def make_prop_crc(k, c):
            return make_problem("commitlog.prop-crc", FormatError,
                                f"the __CRC32# property does not match the record: the broker (5.2+, "
                                f"forceVerifyPropCRC) wants it > 0 and equal to CRC32(the record's first "
                                f"{int(cols['total_size'][k]) - cl.CRC32_RESERVED_LEN} bytes) & 0x7FFFFFFF",
                                p, int(pos[k]), "PROPERTIES", count=c)

        add_problem(rep.problems, first_problem(prop_crc == PROP_CRC_MISMATCH, make_prop_crc))


def scan_commitlog(path: Path, file_size: int | None, check_crc: bool) -> tuple[list[FileReport], Messages, dict]:
    """Per-file checks of a CommitLog file or folder, and the message table."""
    files, reports = _commitlog_files(path)
    loaded = cl.classify_files(files)
    loaded_sizes = [f.size for f in files if f not in loaded.dropped]
    mapped = file_size or most_common(loaded_sizes or [f.size for f in files])
    frames, positions, file_of, file_pos = [], [], [], []
    end_offset = files[0].start_offset if files else 0
    for i, f in enumerate(files):
        # the broker's load rules: only the active file may end without the end-of-file blank
        last = f == loaded.active
        p = str(f.path)
        rep = FileReport(p, "commitlog")
        reports.append(rep)
        role = loaded.role(f)
        if role == "dropped":
            rep.notes.append(f"{p}: {loaded.reasons[f.path]}")
            rep.counts = {"messages": 0, "bytes_used": 0, "file_size": f.size, "blank": False,
                          "start_offset": f.start_offset, "role": role}
            continue
        if f.size != mapped:
            cls = TruncatedFileError if f.size < mapped else GeometryError
            rep.problems.append(make_problem("commitlog.file-size", cls,
                                         f"file is {f.size} bytes, not the mapped file size {mapped} "
                                         f"(mappedFileSizeCommitLog; the broker preallocates every file)",
                                         p, f.size, "file size"))
        if not OFFSET_FILE_NAME.fullmatch(f.path.name):
            rep.notes.append(f"{p}: name is not a 20-digit offset: read as starting at offset {f.start_offset}")
        elif mapped and f.start_offset % mapped:
            rep.problems.append(make_problem("commitlog.file-name", FormatError,
                                         f"name {f.start_offset} is not a multiple of the mapped file size {mapped}",
                                         p, 0, "file name"))
        if i and mapped:
            want = files[i - 1].start_offset + mapped
            if f.start_offset != want:
                what = "missing file(s) before it" if f.start_offset > want else "overlaps the previous file"
                rep.problems.append(make_problem("commitlog.continuity", FormatError,
                                             f"starts at {f.start_offset} but the previous file "
                                             f"{files[i - 1].path.name} ends at {want}: {what}",
                                             p, 0, "file name"))
        if role == "preallocated":
            rep.notes.append(f"{p}: {loaded.reasons[f.path]}")
            rep.counts = {"messages": 0, "bytes_used": 0, "file_size": f.size, "blank": False,
                          "start_offset": f.start_offset, "role": role}
            continue
        rr = cl.ReadReport()
        with open(f.path, "rb") as fh:
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if f.size else None
            try:
                buf = mm if mm is not None else b""
                # the format module's own walk and decode (C walk + NumPy gathers), each file as if it
                # were the last: zeros after the last message are no damage there; a missing
                # end-of-file blank record is judged below
                cols, _, _, _ = scan_file(buf, f, last=True, check_crc=False, report=rr,
                                              on_error="report", body=False)
                sizes = cols["total_size"].astype(np.int64)
                pos = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64) if len(sizes) \
                    else np.zeros(0, np.int64)
                used = int(sizes.sum())
                blank = False
                if used + cl.BLANK.size <= len(buf):
                    bsize, bmagic = cl.BLANK.unpack_from(buf, used)
                    blank = bmagic == cl.MAGIC_BLANK and bsize == len(buf) - used
                _commitlog_file_checks(rep, f, rr, cols, pos, used, blank, last, buf if check_crc else None)
            finally:
                if mm is not None:
                    try:
                        mm.close()
                    except BufferError:   # a view still alive: the map closes when it is freed
                        pass
        readable = not rr.damage and rr.torn_tail is None
        n = len(sizes)
        rep.counts = {"messages": n, "bytes_used": used, "file_size": f.size, "blank": blank,
                      "start_offset": f.start_offset}
        if n:
            frames.append({c: cols[c] for c in _MESSAGE_COLUMNS})
            positions.append(f.start_offset + pos)
            file_of.append(np.full(n, i, np.int32))
            file_pos.append(pos)
        if last:
            end_offset = f.start_offset + f.size if blank and readable else f.start_offset + used
    frame = _message_frame(frames)
    pos_all = np.concatenate(positions) if positions else np.zeros(0, np.int64)
    msgs = Messages(frame, pos_all, [str(f.path) for f in files],
                     np.concatenate(file_of) if file_of else np.zeros(0, np.int32),
                     np.concatenate(file_pos) if file_pos else np.zeros(0, np.int64),
                     files[0].start_offset if files else None, end_offset)
    if len(pos_all) > 1 and (np.diff(pos_all) <= 0).any():
        # overlapping files (already reported as continuity problems): keep the joins sound
        order = np.argsort(pos_all, kind="stable")
        msgs = Messages(frame.iloc[order].reset_index(drop=True), pos_all[order], msgs.files,
                         msgs.file_of[order], msgs.file_pos[order], msgs.min_offset, end_offset)
    return reports, msgs, {"mapped_file_size": mapped}


def verify_commitlog(path: str | os.PathLike, *, file_size: int | None = None,
                     check_crc: bool = True) -> list[FileReport]:
    """The per-file checks of a CommitLog file or ``commitlog/`` folder (see the module
    docstring). `file_size` is mappedFileSizeCommitLog (default: the most common file size).
    Read-only. Cost: one walk of every file (C) and one CRC pass (C), a few million messages/s.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> with cl.CommitLogWriter(d, file_size=4096) as w:
    ...     _ = w.append({"topic": ["T"] * 40, "body": [b"x" * 20] * 40})
    >>> [(r.ok, r.counts["messages"], r.counts["blank"]) for r in verify_commitlog(d)]
    [(True, 36, True), (True, 4, False)]
    """
    return scan_commitlog(Path(path), file_size, check_crc)[0]
