"""The checks of a CommitLog folder, and the message table the cross-file checks join on."""
from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rmqlab.errors import FormatError, GeometryError, RmqlabError, TruncatedFileError
from rmqlab.formats import commitlog as cl
from rmqlab.formats.commitlog.body import decompress_body
from rmqlab.formats.commitlog.columns import PROP_CRC_MISMATCH, chunked_decode, scan_file
from rmqlab.formats.mapped import likely_mapped_file_size
from rmqlab.rules.dispatch import (
    PROPERTY_INNER_BASE,
    PROPERTY_INNER_MULTI_DISPATCH,
    PROPERTY_INNER_NUM,
    goes_to_consume_queue_many,
    message_tags_codes,
    property_values_many,
)
from rmqlab.rules.properties import malformed_pairs_many
from rmqlab.tables.arrays import FirstFlagged, distinct, gather_field, search_sorted
from rmqlab.tables.pool import Pool
from rmqlab.verify.common import OFFSET_FILE_NAME
from rmqlab.verify.report import FileReport, make_problem, problem_from_error

#: bits of the (row, key hash) codes used for joins: hash < 2^31
KEY_CODE_HASH_BITS = 31
#: messages decoded at a time while a CommitLog file is walked: their strings (about 400 bytes a
#: message) exist only for one chunk, which is checked and reduced to the numbers of
#: :class:`Messages`; a chunk bounds the strings alive at once
MESSAGE_CHUNK = 1 << 16
#: messages a window of the cross-file checks holds (:meth:`CommitLogScan.walk`): the joins of
#: index entries and queue units against the messages hold one window's numbers (about 70 bytes
#: a message, 35 MiB), not the whole CommitLog's. A window ends between decoded chunks, so it
#: may pass this by up to a chunk.
WINDOW_MESSAGES = 1 << 19
#: the properties the light message queue and BatchConsumeQueue checks read: Messages keeps the
#: PROPERTIES block of the messages that carry them (dispatch.lmq_dispatch_many, batch_unit)
DISPATCH_PROPERTIES = (PROPERTY_INNER_MULTI_DISPATCH, PROPERTY_INNER_NUM, PROPERTY_INNER_BASE)


class Messages:
    """A window of the message table of a CommitLog (the readable prefix of each file) for the
    cross-file joins: numbers only, made chunk by chunk as the files are walked, in CommitLog
    offset order (:class:`CommitLogScan`); rows are the window's own, from 0.

    Per message (about 52 bytes, plus 16 bytes a key of the index): ``positions`` (int64, the
    real CommitLog offset), ``file_of`` (index into ``files``), ``total_size``, ``sys_flag``,
    ``store_ts``, ``queue_id``, ``queue_offset``, ``topic_code`` (index into ``topics``, the
    distinct topics) and ``tags_codes`` (the code the broker dispatches,
    :func:`rmqlab.rules.dispatch.message_tags_codes`). ``key_codes``: every key buildIndex would put,
    as codes ``row << 31 | index_hash``; ``tag_codes``: the TAGS key a 5.4.0+ broker also puts
    (``topic#T#tags``), the same way, sorted. The PROPERTIES block is kept only for messages naming
    a multi-dispatch queue or a batch (:data:`DISPATCH_PROPERTIES`). A problem that names a
    message's strings reads its record again (:meth:`record`)."""

    def __init__(self, numbers: dict, topics: list[str], files: list[str], file_starts: list[int],
                 min_offset: int | None, end_offset: int | None, key_codes: tuple[np.ndarray, np.ndarray] | None,
                 kept: tuple[np.ndarray, np.ndarray], *, start: int | None = None, stop: int | None = None,
                 topic_index: dict[str, int] | None = None, tag_codes: np.ndarray | None = None):
        self.positions = numbers["positions"]        # int64, sorted: CommitLog offset of each message
        self.file_of = numbers["file_of"]            # int32 per message: index into files
        self.total_size = numbers["total_size"]
        self.sys_flag = numbers["sys_flag"]
        self.store_ts = numbers["store_timestamp"]
        self.queue_id = numbers["queue_id"]
        self.queue_offset = numbers["queue_offset"]
        self.topic_code = numbers["topic_code"]      # int32 per message: index into topics
        self.tags_codes = numbers["tags_code"]
        self.topics = topics
        self.files = files                           # list of paths
        self.file_starts = file_starts               # CommitLog offset of each file's first byte
        self.min_offset = min_offset                 # first file's start (None: no files)
        self.end_offset = end_offset                 # the CommitLog's max offset after recovery (None: not
                                                     # known yet, in a window before the last)
        self.start, self.stop = start, stop          # the CommitLog offsets this table answers for
        self.n = len(self.positions)
        self._key_codes = key_codes
        self._tag_codes = tag_codes
        self._kept_rows, self._kept_properties = kept
        self._topic_index = topic_index if topic_index is not None else {t: i for i, t in enumerate(topics)}

    def contains(self, offsets: np.ndarray) -> np.ndarray:
        """Which CommitLog offsets this table answers for: every offset belongs to exactly one
        window of :meth:`CommitLogScan.walk` (the first takes all below it, the last all above)."""
        inside = np.ones(len(offsets), bool)
        if self.start is not None:
            inside &= offsets >= self.start
        if self.stop is not None:
            inside &= offsets < self.stop
        return inside

    def lookup(self, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row of the message starting at each offset or -1, is-a-boundary mask)."""
        if not self.n:
            return np.full(len(offsets), -1, np.int64), np.zeros(len(offsets), bool)
        row = search_sorted(self.positions, offsets)
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
        if self.end_offset is not None and offset >= self.end_offset:
            return f"at or past the CommitLog's end ({self.end_offset})"
        row = int(np.searchsorted(self.positions, offset, side="right")) - 1
        if row >= 0 and offset < self.positions[row] + self.total_size[row]:
            return f"inside the message at {int(self.positions[row])} ({int(self.total_size[row])} bytes)"
        return "in no message (a blank record, zeros, or an unreadable part of a file)"

    def stored_at(self, row: int) -> tuple[str, int]:
        """(path of the file, position in it) of message `row`."""
        i = int(self.file_of[row])
        return self.files[i], int(self.positions[row]) - self.file_starts[i]

    def record(self, row: int) -> cl.Message:
        """Message `row` read again from its file (its strings: KEYS, UNIQ_KEY, TAGS...). Cost:
        one record."""
        return cl.read_message(*self.stored_at(row))

    def describe(self, row: int) -> str:
        m = self.record(row)
        return (f"topic {m.topic!r}, KEYS {m.keys!r}, UNIQ_KEY {m.uniq_key!r}, "
                f"store time {int(self.store_ts[row])}")

    def topic(self, row: int) -> str:
        return self.topics[int(self.topic_code[row])]

    def topic_names(self, rows: np.ndarray) -> np.ndarray:
        """The topic of each of `rows`, as an object array."""
        return np.array(self.topics, dtype=object)[self.topic_code[rows]]

    def code_of_topic(self, topic: str | None) -> int:
        """The topic's code, -1 when no message has it."""
        return self._topic_index.get(topic, -1) if topic is not None else -1

    @property
    def key_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """Every key buildIndex would put for each message, rollbacks included, as sorted
        unique codes ``row << 31 | index_hash``; plus every code of the expansion, in message
        order (a message's row is its code >> 31). Made chunk by chunk as the CommitLog is
        walked (:func:`_chunk_key_codes`): 16 bytes a key."""
        if self._key_codes is None:
            raise ValueError("the CommitLog was scanned without its key codes (CommitLogScan(keys=False))")
        return self._key_codes

    @property
    def tag_codes(self) -> np.ndarray:
        """The TAGS key (``topic#T#tags``, :func:`rmqlab.rules.dispatch.tag_index_key`) a 5.4.0+
        broker's buildIndex also puts, of every message with non-empty TAGS, as sorted codes
        ``row << 31 | index_hash`` (at most one a message)."""
        if self._tag_codes is None:
            raise ValueError("the CommitLog was scanned without its key codes (CommitLogScan(keys=False))")
        return self._tag_codes

    @property
    def dispatch_properties(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, PROPERTIES blocks) of the messages whose properties name
        :data:`DISPATCH_PROPERTIES`, rows ascending: every other message has none of them."""
        return self._kept_rows, self._kept_properties

    def properties_at(self, rows: np.ndarray) -> np.ndarray:
        """The PROPERTIES block of each of `rows` where it names :data:`DISPATCH_PROPERTIES`,
        None elsewhere (an object array): for the rules that read only those properties."""
        out = np.full(len(rows), None, dtype=object)
        kr = self._kept_rows
        if len(kr) and len(rows):
            at = np.minimum(np.searchsorted(kr, rows), len(kr) - 1)
            hit = kr[at] == rows
            out[hit] = self._kept_properties[at[hit]]
        return out


def _chunk_key_codes(cols: dict, phy: np.ndarray, first: int, *, tags: bool = False) -> np.ndarray:
    """The key codes (``row << 31 | index_hash``, row = `first` + position in the chunk) of a
    chunk of decoded messages, in message order: UNIQ_KEY and KEYS, or with `tags` only the
    TAGS key a 5.4.0+ broker also puts (``topic#T#tags``, at most one a message)."""
    from rmqlab.jvm.hashcode import index_hash_many
    from rmqlab.store.indexservice import expand_columns, index_key_hashes, tag_key_hashes

    n = len(phy)
    columns = {"topic": cols["topic"], "phy_offset": phy, "store_timestamp": cols["store_timestamp"],
               "sys_flag": np.zeros(n, np.int64)}
    columns.update({"tags": cols["tags"]} if tags else {"keys": cols["keys"], "uniq_key": cols["uniq_key"]})
    # hashed from the text without a "topic#key" string a key when the columns allow it (UNIQ_KEY
    # and KEYS in C, TAGS keys by carrying the hash of "topic#T#" over the TAGS); other text by
    # the expansion. Every message's keys count here (no sys_flag, no end offset): the joins ask
    # which keys a message has, not which the broker put
    hashed = tag_key_hashes(cols["topic"], cols["tags"]) if tags else index_key_hashes(columns)
    if hashed is not None:
        message_index, index_hashes = hashed[:2]
        return ((message_index + first) << KEY_CODE_HASH_BITS) | index_hashes.astype(np.int64)
    ex = expand_columns(columns, tag_key=tags)
    rows = np.asarray(ex.message_index, np.int64) + first
    hashes = index_hash_many(ex.keys).astype(np.int64) if len(rows) else np.zeros(0, np.int64)
    return (rows << KEY_CODE_HASH_BITS) | hashes


def _names_dispatch_properties(blocks) -> np.ndarray:
    """Which PROPERTIES blocks (a pyarrow string array, or what property_values_many takes) give
    INNER_MULTI_DISPATCH, or both INNER_NUM and INNER_BASE (what lmq_dispatch_many and
    batch_unit read)."""
    found = property_values_many(blocks, DISPATCH_PROPERTIES)
    multi, num, base = (np.asarray(found[name].is_valid(), dtype=bool) for name in DISPATCH_PROPERTIES)
    return multi | (num & base)


def _first_seen_topics(topic) -> tuple[np.ndarray, list]:
    """(code of each message's topic, the distinct topics in first-seen order), as
    ``pd.factorize`` gives them, from broker_strings_of_dictionary's (objects, Arrow dictionary)
    pair: the dictionary's own codes (the decode numbers the values by first appearance), a
    topic that two entries hold (bytes not UTF-8 read as the same String) coded as its first.
    Cost: O(rows) in NumPy, and a dict step a distinct value."""
    objects, text = topic
    if text.null_count:     # no record lacks its topic; pandas says what such a column holds
        import pandas as pd

        codes, distinct = pd.factorize(objects)
        return codes, list(distinct)
    first: dict[str, int] = {}
    remap = np.array([first.setdefault(v, len(first)) for v in text.dictionary.to_pylist()], np.int64)
    return remap[text.indices.to_numpy(zero_copy_only=False)], list(first)


class _TableBuilder:
    """Hands each decoded chunk of a CommitLog file to its per-file checks, and reduces it to
    the numbers :class:`Messages` keeps (handed to `take`); of the file it keeps TOTALSIZE."""

    #: the message numbers a window keeps
    KEPT = ("total_size", "sys_flag", "store_timestamp", "queue_id", "queue_offset")
    #: the text columns only Arrow kernels read (and a few rows of properties): decoded into
    #: Arrow, with no Python str a message; topic and tags as dictionaries (a str a distinct value)
    ARROW_TEXT = ("properties", "keys", "uniq_key", "topic", "tags")
    #: of those, the ones whose Python strs the checks read too
    DICTIONARY_TEXT = ("topic", "tags")

    def __init__(self, keys: bool, topic_index: dict[str, int], take):
        self.keys = keys
        self.topic_index = topic_index
        self.take = take

    def decode_for(self, f: cl.StoreFile, file_index: int, checks: _FileChecks):
        return chunked_decode(lambda cols, pos, first: self.reduce(f, file_index, checks, cols, pos, first),
                              MESSAGE_CHUNK, arrow_text=self.ARROW_TEXT, crc_spans=checks.U is not None)

    def reduce(self, f: cl.StoreFile, file_index: int, checks: _FileChecks, cols: dict, pos: np.ndarray,
               first: int) -> dict:
        # the text as the broker's Strings (U+FFFD for bytes that are not UTF-8): queue names,
        # TAGS and key hashes come from them; topic and tags as Python strs (one a distinct
        # value) and as Arrow dictionaries, for every Arrow kernel that reads them
        texts = {name: cl.broker_strings_of_dictionary(cols[name]) for name in self.DICTIONARY_TEXT}
        arrow = dict(cols, **{name: cl.broker_strings_of_arrow(cols[name]) for name in self.ARROW_TEXT
                              if name not in self.DICTIONARY_TEXT})
        checks.add(cols, pos, first, arrow["properties"])
        if len(pos):
            cols = dict(cols, **{name: objects for name, (objects, _) in texts.items()})
            arrow.update({name: a for name, (_, a) in texts.items()})
            part = {c: np.asarray(cols[c]) for c in self.KEPT}
            codes, distinct_topics = _first_seen_topics(texts["topic"])
            lut = np.array([self.topic_index.setdefault(t, len(self.topic_index)) for t in distinct_topics],
                           np.int32)
            part["topic_code"] = lut[codes]
            part["tags_code"] = message_tags_codes(cols["topic"], cols["tags"],
                                                   np.asarray(cols["delay_level"], np.int64), part["store_timestamp"])
            part["positions"] = f.start_offset + pos.astype(np.int64)
            part["file_of"] = np.full(len(pos), file_index, np.int32)
            keep = np.flatnonzero(_names_dispatch_properties(arrow["properties"]))
            part["kept_rows"] = keep.astype(np.int64)      # rows of the chunk: take() moves them
            kept = np.empty(len(keep), dtype=object)
            kept[:] = arrow["properties"].take(keep).to_pylist()
            part["kept_properties"] = kept
            if self.keys:
                part["key_codes"] = _chunk_key_codes(arrow, part["positions"], 0)
                part["tag_codes"] = _chunk_key_codes(arrow, part["positions"], 0, tags=True)
                # sorted here, where the chunk is decoded (in a worker, with a pool): moving every
                # code by the window's row shift later keeps the order, so the join sorts nothing
                part["key_codes_distinct"] = distinct(part["key_codes"], runs=True)
            self.take(part)
        return {"total_size": np.asarray(cols["total_size"])}


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


def _body_spans(U: np.ndarray, pos: np.ndarray, sys_flag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first byte, BODYLEN) of the body of each record at positions `pos` of a file."""
    bw = np.where(sys_flag & cl.BORNHOST_V6_FLAG, 16, 4)
    sw = np.where(sys_flag & cl.STOREHOSTADDRESS_V6_FLAG, 16, 4)
    o_tail = cl.HEAD.size + bw + cl.PORT.size + cl.STORE_TIME.size + sw + cl.PORT.size
    body_len = gather_field(U, pos + o_tail, cl.TAIL, "body_len").astype(np.int64)
    return (pos + o_tail + cl.TAIL.size).astype(np.int64), body_len


def _crc_check(U: np.ndarray, start: np.ndarray, body_len: np.ndarray, stored: np.ndarray) -> np.ndarray:
    """True where BODYCRC is right (or BODYLEN is 0) for records whose bodies are the spans
    (`start`, `body_len`) of a file's bytes `U`."""
    import rmqlab._records as _records

    if not len(start):
        return np.zeros(0, bool)
    crc = np.empty(len(start), np.uint32)
    _records.crc32_spans(U, np.ascontiguousarray(start), np.ascontiguousarray(body_len), crc)
    return (body_len == 0) | ((crc.astype(np.int64) & 0x7FFFFFFF) == stored.astype(np.int64))


def _undecodable_bodies(U: np.ndarray, pos: np.ndarray, sys_flag: np.ndarray) -> tuple[np.ndarray, dict[int, str]]:
    """Which records' compressed bodies (SYSFLAG 0x1) the consumer cannot decompress, and why:
    one decompression a compressed body (the others are not looked at)."""
    bad = np.zeros(len(pos), bool)
    why: dict[int, str] = {}
    compressed = np.flatnonzero(sys_flag & cl.COMPRESSED_FLAG)
    if not len(compressed):
        return bad, why
    start, body_len = _body_spans(U, pos[compressed], sys_flag[compressed])
    for k, s, n in zip(compressed.tolist(), start.tolist(), body_len.tolist()):
        try:
            decompress_body(U[s:s + n].tobytes(), int(sys_flag[k]))
        except FormatError as e:
            bad[k], why[k] = True, e.reason
    return bad, why


class _FileChecks:
    """The per-file checks of one walked CommitLog file: damage, torn tail, end-of-file blank,
    PHYSICALOFFSET and (with `buf`) BODYCRC and the __CRC32# property, the record checks fed a
    decoded chunk at a time (:meth:`add`), so they hold a chunk's numbers, not the file's."""

    def __init__(self, f: cl.StoreFile, buf):
        self.f = f
        self.U = np.frombuffer(buf, np.uint8) if buf is not None and len(buf) else None
        self.checks = {name: FirstFlagged() for name in ("phy", "crc", "prop_crc", "pairs", "body")}
        self.words: dict[str, tuple] = {}      # what the first flagged record of each check says

    def add(self, cols: dict, pos: np.ndarray, lo: int, properties) -> None:
        """Records lo.. of the file: their decoded `cols` (with CRC_SPAN_COLUMNS when the checks
        read the file's bytes) and positions in the file `pos`, and their PROPERTIES as the
        broker's Strings (U+FFFD for bytes that are not UTF-8) in a pyarrow string array."""
        pos = pos.astype(np.int64)
        stored_phy = cols["phy_offset"].astype(np.int64)
        self._add("phy", stored_phy != self.f.start_offset + pos, lo, lambda k: (int(stored_phy[k]), int(pos[k])))
        if len(pos):
            self._add("pairs", malformed_pairs_many(properties), lo,
                      lambda k: (int(pos[k]), str(properties[k].as_py())))
        if self.U is None or not len(pos):
            return
        sys_flag, total = cols["sys_flag"].astype(np.int64), cols["total_size"].astype(np.int64)
        # the bodies' spans and the __CRC32# states as the decode found them (CRC_SPAN_COLUMNS)
        good = _crc_check(self.U, cols["body_start"], cols["body_len"], cols["body_crc"].astype(np.int64))
        self._add("crc", ~good, lo, lambda k: (int(cols["body_crc"][k]), int(pos[k])))
        prop_crc = cols["prop_crc_state"]
        self._add("prop_crc", prop_crc == PROP_CRC_MISMATCH, lo, lambda k: (int(total[k]), int(pos[k])))
        undecodable, why = _undecodable_bodies(self.U, pos, sys_flag)
        self._add("body", undecodable, lo, lambda k: (int(pos[k]), why[k]))

    def _add(self, name: str, mask: np.ndarray, lo: int, words) -> None:
        found = self.checks[name]
        first = found.first
        found.add(mask, lo)
        if first < 0 <= found.first:
            self.words[name] = words(found.first - lo)

    def problems(self, rep: FileReport, rr: cl.ReadReport, used: int, blank: bool, last: bool) -> None:
        f, p = self.f, str(self.f.path)
        for d in rr.damage:
            rep.problems.append(make_problem("commitlog.record", FormatError,
                                             d.reason + "; the rest of the file cannot be read", d.path, d.offset,
                                             d.field))
        if rr.torn_tail is not None:
            d = rr.torn_tail
            if last:
                rep.problems.append(make_problem("commitlog.torn-tail", TruncatedFileError,
                                                 d.reason + " (the broker truncates it at recovery)", d.path,
                                                 d.offset, d.field, severity="warning"))
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
        for name, (check, fld, severity, say) in _RECORD_CHECKS.items():
            found = self.checks[name]
            if found.count:
                at, what = say(f, *self.words[name])
                rep.problems.append(make_problem(check, FormatError, what, p, at, fld, count=found.count,
                                                 severity=severity))


#: The record checks of _FileChecks: its name -> (check, field, severity, the first flagged
#: record's words -> its position in the file and the message).
_RECORD_CHECKS = {
    "phy": ("commitlog.phy-offset-field", "PHYSICALOFFSET", "error", lambda f, stored, at: (
        at, f"PHYSICALOFFSET {stored} but the record is at {f.start_offset + at} "
            f"(file start {f.start_offset} + position {at})")),
    "crc": ("commitlog.body-crc", "BODYCRC", "error", lambda f, stored, at: (
        at, f"BODYCRC {stored} does not match the body (CRC32(body) & 0x7FFFFFFF)")),
    "pairs": ("commitlog.skipped-pairs", "PROPERTIES", "warning", lambda f, at, block: (
        at, f"the PROPERTIES block holds a pair the broker's parser skips (empty, without \\x01, or with an "
            f"empty name): {block!r}. A 5.2.0 broker multi-dispatching a message leaves the tail of an "
            f"earlier block so; elsewhere it is damage no CRC covers")),
    "body": ("commitlog.body-codec", "BODY", "error", lambda f, at, why: (
        at, f"a compressed body (SYSFLAG 0x1) a consumer cannot decompress ({why}): its decode "
            f"(MessageDecoder with deCompressBody) fails")),
    "prop_crc": ("commitlog.prop-crc", "PROPERTIES", "error", lambda f, total, at: (
        at, f"the __CRC32# property does not match the record: the broker (5.2+, forceVerifyPropCRC) wants it "
            f"> 0 and equal to CRC32(the record's first {total - cl.CRC32_RESERVED_LEN} bytes) & 0x7FFFFFFF")),
}


class CommitLogScan:
    """One walk of a CommitLog file or folder: the per-file checks, and the message table in
    windows for the cross-file joins.

    :meth:`walk` goes through the files in offset order, fills :attr:`reports` (one per file,
    plus one per file name the format module refuses) and hands on the table a window at a
    time. Afterwards :attr:`end_offset`, :attr:`n`, the store-time totals and :attr:`side` (the
    messages carrying dispatch properties, for the LMQ checks) are final. Memory: one window
    (about 52 bytes a message plus 16 a key), one decoded chunk's strings, and the walk of the
    file being read (20 bytes a message: its record positions and TOTALSIZE).

    With a `pool` of more than one job each file is walked, decoded and checked in a worker
    (:func:`_walk_apart`), up to jobs + 1 files ahead of the one taken here. With `apart` joins
    (:meth:`walk`) the worker also joins its file's windows and sends back what the joins found;
    else it sends its file's table numbers, which are windowed and joined here in file order
    exactly as the serial walk does (memory then adds the numbers of those files, about 70 bytes
    a message each). Either way reports are the same with any number of jobs."""

    def __init__(self, path: Path, file_size: int | None, check_crc: bool, *, keys: bool = True,
                 pool: Pool | None = None):
        self.path, self.check_crc, self.keys = path, check_crc, keys
        #: the worker processes each file's walk runs in (None or one job: this process)
        self.pool = pool
        #: whether the walk makes the message table (False: the per-file checks alone, and a
        #: worker sends back only its file's problems and counts)
        self.tables = True
        self.files, self._refused = _commitlog_files(path)
        self.loaded = cl.classify_files(self.files)
        # the size the file names step by (MappedFileQueue), else the one the loaded files have
        loaded = [(f.start_offset, f.size) for f in self.files if f not in self.loaded.dropped]
        self.mapped_file_size = file_size or likely_mapped_file_size(
            [loaded or [(f.start_offset, f.size) for f in self.files]])
        self.min_offset = self.files[0].start_offset if self.files else None
        self.reports: list[FileReport] = []
        self.topic_index: dict[str, int] = {}
        #: called with (bytes of the files walked, bytes of all) before each file and at the end
        self.progress: Callable[[int, int], None] | None = None
        self._reset_totals()

    def _reset_totals(self) -> None:
        self.end_offset = self.files[0].start_offset if self.files else 0
        self._windows = _Windows(self.keys, self.topic_index, self.files, WINDOW_MESSAGES, lambda window: None)

    @property
    def n(self) -> int:
        """Messages walked."""
        return self._windows.n

    @property
    def last_store_timestamp(self) -> int | None:
        """The latest store time of any message walked."""
        return self._windows.last_store_timestamp

    @property
    def last_dispatchable_timestamp(self) -> int | None:
        """The latest store time of a message a ConsumeQueue can hold."""
        return self._windows.last_dispatchable_timestamp

    @property
    def topics(self) -> list[str]:
        return list(self.topic_index)

    def walk(self, on_window, window_messages: int | None = None, *, keep=None, apart=None) -> None:
        """Walk the files, calling ``on_window(table)`` with the message table a window at a
        time: a :class:`Messages` of about `window_messages` messages (default
        :data:`WINDOW_MESSAGES`; 0: everything in one window) answering for the offsets from
        its first message to the next window's (:meth:`Messages.contains`). A window ends
        between two decoded chunks, inside a file or between files, where no other file
        overlaps it; the last knows the CommitLog's end. `keep(window) -> rows` adds rows to
        :attr:`side` besides the messages with dispatch properties. Walking again repeats the
        per-file checks without reporting them twice.

        `apart`: the same joins made in the workers of a parallel pool, each over the windows of
        its own file (:class:`FileJoins`), instead of ``on_window`` here; used when the files
        that hold data do not overlap (one file then answers for every offset from its start to
        the next file's) and without `keep`, else ``on_window`` is called as above. Cost: one C
        walk and decode of every file; memory: see the class."""
        limit = WINDOW_MESSAGES if window_messages is None else window_messages
        first_walk = not self.reports
        self._reset_totals()
        walked_files = [f for f in self.files if self.loaded.role(f) not in ("dropped", "preallocated")]
        joined = (apart is not None and keep is None and self.tables and self.pool is not None
                  and self.pool.parallel and bool(walked_files)
                  and all(b.start_offset >= a.start_offset + a.size for a, b in zip(walked_files, walked_files[1:])))
        self._windows = _Windows(self.keys, self.topic_index, self.files, limit, on_window, keep)
        table = _TableBuilder(self.keys, self.topic_index, self._windows.take)
        reports = list(self._refused)
        active_seen = self.loaded.active is None    # no active file: one window
        files, mapped = self.files, self.mapped_file_size
        walked: Generator[_Walked, None, None] | None = None
        if self.pool is not None and self.pool.parallel:   # each file's walk in a worker, taken in order
            spans = _spans(walked_files)
            worker = apart.worker() if joined else None
            number = {id(f): i for i, f in enumerate(files)}
            walked = self.pool.ordered(_walk_apart, [
                (f, number[id(f)], f == self.loaded.active, self.check_crc, self.keys, self.tables,
                 FileJoins(worker, spans[k], files) if worker is not None else None)
                for k, f in enumerate(walked_files)], ahead=self.pool.jobs + 1)
        try:
            self._walk_files(files, mapped, table, reports, active_seen, walked, apart if joined else None)
        finally:
            if walked is not None:
                walked.close()
        if first_walk:
            self.reports = reports
        if not joined:      # the last window (the workers' joins made their own)
            self._windows.flush(None, self.end_offset)
        if self.progress is not None:
            total = sum(f.size for f in files)
            self.progress(total, total)

    def _walk_files(self, files: list[cl.StoreFile], mapped: int | None, table: _TableBuilder,
                    reports: list[FileReport], active_seen: bool, walked: Generator[_Walked, None, None] | None,
                    apart) -> None:
        """The files in offset order: the checks of names and sizes, then each file's walk, here
        or, with `walked`, taken from the worker that did it (in the same order), its joins
        merged into `apart` when the worker made them."""
        total, done = sum(f.size for f in files), 0
        for i, f in enumerate(files):
            if self.progress is not None:       # bytes of the files before this one, of all
                self.progress(done, total)
            done += f.size
            # the broker's load rules: only the active file may end without the end-of-file blank
            last = f == self.loaded.active
            p = str(f.path)
            rep = FileReport(p, "commitlog")
            reports.append(rep)
            role = self.loaded.role(f)
            if role == "dropped":
                rep.notes.append(f"{p}: {self.loaded.reasons[f.path]}")
                rep.counts = {"messages": 0, "bytes_used": 0, "file_size": f.size, "blank": False,
                              "start_offset": f.start_offset, "role": role}
                continue
            if mapped is not None and f.size != mapped:     # None only when there are no files
                cls = TruncatedFileError if f.size < mapped else GeometryError
                rep.problems.append(make_problem("commitlog.file-size", cls,
                                             f"file is {f.size} bytes, not the mapped file size {mapped} "
                                             f"(mappedFileSizeCommitLog; the broker preallocates every file)",
                                             p, f.size, "file size"))
            if not OFFSET_FILE_NAME.fullmatch(f.path.name):
                rep.notes.append(f"{p}: name is not a 20-digit offset: read as starting at offset {f.start_offset}")
            elif mapped and f.start_offset % mapped:
                rep.problems.append(make_problem("commitlog.file-name", FormatError,
                                             f"name {f.start_offset} is not a multiple of the mapped file size "
                                             f"{mapped}", p, 0, "file name"))
            if i and mapped:
                want = files[i - 1].start_offset + mapped
                if f.start_offset != want:
                    what = "missing file(s) before it" if f.start_offset > want else "overlaps the previous file"
                    if f.start_offset > want and (f.start_offset - want) % mapped == 0:
                        what += (" (a CommitLog kept over several folders, storePathCommitLog with commas, has "
                                 "every k-th file in each: pass them all, --commitlog-paths)")
                    rep.problems.append(make_problem("commitlog.continuity", FormatError,
                                                 f"starts at {f.start_offset} but the previous file "
                                                 f"{files[i - 1].path.name} ends at {want}: {what}",
                                                 p, 0, "file name"))
            if role == "preallocated":
                rep.notes.append(f"{p}: {self.loaded.reasons[f.path]}")
                rep.counts = {"messages": 0, "bytes_used": 0, "file_size": f.size, "blank": False,
                              "start_offset": f.start_offset, "role": role}
                continue
            # a window may end inside this file when no later file can hold an offset below its
            # end (files are sorted by start), and not after the active file (the last window
            # alone knows the CommitLog's end)
            self._windows.may_split = not active_seen and all(g.start_offset >= f.start_offset + f.size
                                                              for g in files[i + 1:i + 2])
            if walked is None:
                if self.pool is not None:
                    self.pool.ran_here()
                n, used, blank, readable = _walk_file(f, i, rep, last, table, self.check_crc)
            else:
                n, used, blank, readable = self._take_walked(next(walked), rep, apart)
            rep.counts = {"messages": n, "bytes_used": used, "file_size": f.size, "blank": blank,
                          "start_offset": f.start_offset}
            if last:
                active_seen = True
                self.end_offset = _end_offset(f, used, blank, readable)

    def _take_walked(self, w: _Walked, rep: FileReport, apart) -> tuple[int, int, bool, bool]:
        """A file walked in a worker (:func:`_walk_apart`): its problems into `rep`, and its parts
        into the windows as if decoded here, or (joined there) its totals and joins into
        `apart`. The worker numbered its topics by first appearance in the file; each part's new
        ones join :attr:`topic_index` in that order, as the serial walk adds them chunk by chunk,
        so every code and every window is the same."""
        rep.problems += w.problems
        if w.joined is not None:
            lut = np.array([self.topic_index.setdefault(t, len(self.topic_index)) for t in w.topics], np.int32)
            self._windows.add_totals(w.joined, lut)
            apart.merge(w.joined.state)
            return w.n, w.used, w.blank, w.readable
        registered = 0
        for part in w.parts:
            seen = int(part["topic_code"].max()) + 1
            for t in w.topics[registered:seen]:
                self.topic_index.setdefault(t, len(self.topic_index))
            registered = max(registered, seen)
            lut = np.array([self.topic_index[t] for t in w.topics[:registered]], np.int32)
            part["topic_code"] = lut[part["topic_code"]]
            self._windows.take(part)
        w.parts.clear()
        return w.n, w.used, w.blank, w.readable

    @property
    def side(self) -> Messages:
        """The messages the dispatch-property rules read (INNER_MULTI_DISPATCH, or INNER_NUM and
        INNER_BASE), plus those `keep` chose, as one table; its rows are its own."""
        parts = [dict(p) for p in self._windows.side_parts]
        return _messages(parts, self.topics, self.files, self.end_offset, False, topic_index=self.topic_index)


def _end_offset(f: cl.StoreFile, used: int, blank: bool, readable: bool) -> int:
    """The CommitLog's end from its active file `f`'s walk: the file's end when it ends in the
    end-of-file blank and reads whole, else where its last message ends."""
    return f.start_offset + f.size if blank and readable else f.start_offset + used


def _spans(files: list[cl.StoreFile]) -> list[tuple[int | None, int | None]]:
    """The CommitLog offsets each of the walked `files` (sorted, not overlapping) answers for in
    the joins: from its start to the next file's, the first also all below, the last all above."""
    starts = [f.start_offset for f in files]
    return [(None if k == 0 else starts[k], None if k == len(files) - 1 else starts[k + 1])
            for k in range(len(files))]


class _Windows:
    """Decoded chunks' numbers gathered into windows of the message table (:meth:`take`), each
    handed to `on_window` once it holds `limit` messages (0: no limit) and may end there, the
    last by :meth:`flush`; and the totals of the messages seen (:attr:`n`, the latest store
    times) and the side table's parts (the messages the dispatch-property rules read, and those
    `keep(window) -> rows` chose). `start`: the offset the first window answers from (None: all
    below)."""

    def __init__(self, keys: bool, topic_index: dict[str, int], files: list[cl.StoreFile], limit: int, on_window,
                 keep=None, start: int | None = None):
        self.keys, self.topic_index, self.files = keys, topic_index, files
        self.limit, self.on_window, self.keep = limit, on_window, keep
        #: whether a window may end inside the chunk taken next (set by the walk, file by file)
        self.may_split = False
        self.pending: list[dict] = []
        self.rows = 0
        self.start = start
        self.parts_end: int | None = None
        self.n = 0
        self.last_store_timestamp: int | None = None          # of any message
        self.last_dispatchable_timestamp: int | None = None   # of a message a ConsumeQueue can hold
        self.side_parts: list[dict] = []
        self.side_rows = 0

    def take(self, part: dict) -> None:
        """A decoded chunk's numbers: into the pending window, which is handed on once it holds
        `limit` messages and may end here."""
        n = len(part["positions"])
        part["kept_rows"] = part["kept_rows"] + self.rows
        if self.keys:
            shift = np.int64(self.rows) << KEY_CODE_HASH_BITS
            part["key_codes"] = part["key_codes"] + shift
            part["tag_codes"] = part["tag_codes"] + shift
            part["key_codes_distinct"] = part["key_codes_distinct"] + shift
        self.pending.append(part)
        self.rows += n
        end = int(part["positions"][-1]) + int(part["total_size"][-1])
        ends_here = self.parts_end is None or self.parts_end <= end
        self.parts_end = end if self.parts_end is None else max(self.parts_end, end)
        if self.limit and self.rows >= self.limit and self.may_split and ends_here:
            self.flush(end, None)

    def flush(self, stop: int | None, end_offset: int | None) -> None:
        """Hand on the pending window, answering up to `stop` (None: all above); `end_offset`:
        the CommitLog's end, known to the last window."""
        parts, start = self.pending, self.start
        self.pending, self.rows, self.start, self.parts_end = [], 0, stop, None
        self.on_window(self._window(parts, start, stop, end_offset))

    def _window(self, parts: list[dict], start, stop, end_offset) -> Messages:
        w = _messages(parts, list(self.topic_index), self.files, end_offset, self.keys, start=start, stop=stop,
                      topic_index=self.topic_index)
        parts.clear()
        self.n += w.n
        if w.n:
            dispatchable = w.store_ts[goes_to_consume_queue_many(w.sys_flag)]
            self._times(int(w.store_ts.max()), int(dispatchable.max()) if len(dispatchable) else None)
        rows = w.dispatch_properties[0]
        if self.keep is not None:
            rows = np.union1d(rows, self.keep(w)).astype(np.int64)
        if len(rows):
            self.side_parts.append(_side_numbers(w, rows, self.side_rows))
            self.side_rows += len(rows)
        return w

    def _times(self, last: int | None, dispatchable: int | None) -> None:
        """Take in the latest store time of some messages, and of those a queue can hold."""
        if last is not None:
            before = self.last_store_timestamp
            self.last_store_timestamp = last if before is None else max(before, last)
        if dispatchable is not None:
            before = self.last_dispatchable_timestamp
            self.last_dispatchable_timestamp = dispatchable if before is None else max(before, dispatchable)

    def add_totals(self, joined: _Joined, lut: np.ndarray) -> None:
        """The totals and side parts of a file whose windows a worker joined (:func:`_walk_apart`),
        its topic codes mapped through `lut` (the worker's code -> this walk's)."""
        self.n += joined.n
        self._times(joined.last_store_timestamp, joined.last_dispatchable_timestamp)
        for part in joined.side_parts:
            part["topic_code"] = lut[part["topic_code"]]
            part["kept_rows"] = part["kept_rows"] + self.side_rows
            self.side_parts.append(part)
            self.side_rows += len(part["positions"])


def _walk_file(f: cl.StoreFile, file_index: int, rep: FileReport, last: bool, table: _TableBuilder,
               check_crc: bool) -> tuple[int, int, bool, bool]:
    """One file's walk, decode and per-file checks: (messages, bytes used, end-of-file blank
    present, readable to the end)."""
    rr = cl.ReadReport()
    with open(cl.present(f.path), "rb") as fh:
        mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if f.size else None
        try:
            buf = mm if mm is not None else b""
            checks = _FileChecks(f, buf if check_crc else None)
            # the format module's own walk and decode (C walk + decode of a chunk of records at
            # a time, each chunk checked and reduced to the table's numbers), each file as if
            # it were the last: zeros after the last message are no damage there; a missing
            # end-of-file blank record is judged below
            # where the walk ended, and whether at the end-of-file blank (the CommitLog's, or in
            # a DLedger CommitLog the blank of its entries, which frame the records)
            cols, end, code, _ = scan_file(buf, f, last=True, check_crc=False, report=rr, on_error="report",
                                           body=False, decode=table.decode_for(f, file_index, checks))
            n, used, blank = len(cols["total_size"]), end - f.start_offset, code == cl.STOP_BLANK
            del cols
            checks.problems(rep, rr, used, blank, last)
            del checks
        finally:
            if mm is not None:
                try:
                    mm.close()
                except BufferError:   # a view still alive: the map closes when it is freed
                    pass
    return n, used, blank, not rr.damage and rr.torn_tail is None


@dataclass
class FileJoins:
    """The joins one worker makes of one CommitLog file (:meth:`CommitLogScan.walk` with
    `apart`): `worker()` makes the join (an object with ``add(window)``, as ``on_window``, and
    ``state()``, what it found, which the parent's ``merge`` takes); `span` the CommitLog
    offsets the file's windows answer for (:func:`_spans`); `files` every file of the walk,
    which the windows' ``file_of`` numbers."""

    worker: Callable
    span: tuple[int | None, int | None]
    files: list[cl.StoreFile]


@dataclass
class _Joined:
    """A file's joins made in a worker: the join's `state`, and the totals the parent's walk
    keeps (messages, latest store times, the side table's parts, topic codes the worker's)."""

    state: object
    n: int
    last_store_timestamp: int | None
    last_dispatchable_timestamp: int | None
    side_parts: list[dict]


@dataclass
class _Walked:
    """What a worker sends back of one CommitLog file (:func:`_walk_apart`): the per-file
    problems, the walk's totals, and either the numbers of its decoded chunks (about 70 bytes a
    message, its topics as codes into `topics`, numbered by first appearance in the file; no
    strings but the few PROPERTIES blocks the dispatch rules read), or what its joins found
    (`joined`: a few numbers and problems a check)."""

    problems: list
    parts: list[dict]
    topics: list[str]
    n: int
    used: int
    blank: bool
    readable: bool
    joined: _Joined | None = None


def _walk_apart(f: cl.StoreFile, file_index: int, last: bool, check_crc: bool, keys: bool,
                tables: bool, joins: FileJoins | None = None) -> _Walked:
    """One CommitLog file's walk, decode and per-file checks on its own (in a worker process):
    what :meth:`CommitLogScan._take_walked` joins into the walk. With `joins` the file's windows
    are joined here too and only what the joins found goes back. Cost: as the serial walk of the
    file; its result is its table's numbers (none when not `tables`, or with `joins`)."""
    parts: list[dict] = []
    topic_index: dict[str, int] = {}
    rep = FileReport(str(f.path), "commitlog")
    if joins is None:
        table = _TableBuilder(keys, topic_index, parts.append if tables else lambda part: None)
        n, used, blank, readable = _walk_file(f, file_index, rep, last, table, check_crc)
        return _Walked(rep.problems, parts, list(topic_index), n, used, blank, readable)
    join = joins.worker()
    windows = _Windows(keys, topic_index, joins.files, WINDOW_MESSAGES, join.add, start=joins.span[0])
    windows.may_split = True      # the file overlaps no other: a window may end anywhere inside it
    n, used, blank, readable = _walk_file(f, file_index, rep, last, _TableBuilder(keys, topic_index, windows.take),
                                          check_crc)
    windows.flush(joins.span[1], _end_offset(f, used, blank, readable) if last else None)
    joined = _Joined(join.state(), windows.n, windows.last_store_timestamp, windows.last_dispatchable_timestamp,
                     windows.side_parts)
    return _Walked(rep.problems, [], list(topic_index), n, used, blank, readable, joined)


def _side_numbers(w: Messages, rows: np.ndarray, first_row: int) -> dict:
    """The numbers of `rows` of window `w`, as a part of the side table (rows from `first_row`)."""
    props = w.properties_at(rows)
    has = np.flatnonzero(np.not_equal(props, np.array(None, dtype=object)))
    return {"positions": w.positions[rows], "file_of": w.file_of[rows], "total_size": w.total_size[rows],
            "sys_flag": w.sys_flag[rows], "store_timestamp": w.store_ts[rows], "queue_id": w.queue_id[rows],
            "queue_offset": w.queue_offset[rows], "topic_code": w.topic_code[rows], "tags_code": w.tags_codes[rows],
            "kept_rows": (first_row + has).astype(np.int64), "kept_properties": props[has]}


_EMPTY = {"positions": np.int64, "file_of": np.int32, "total_size": np.int32, "sys_flag": np.int32,
          "store_timestamp": np.int64, "queue_id": np.int32, "queue_offset": np.int64, "topic_code": np.int32,
          "tags_code": np.int64, "kept_rows": np.int64, "kept_properties": object, "key_codes": np.int64,
          "key_codes_distinct": np.int64, "tag_codes": np.int64}


def _messages(parts: list[dict], topics: list[str], files: list[cl.StoreFile], end_offset: int | None,
              keys: bool, *, start: int | None = None, stop: int | None = None,
              topic_index: dict[str, int] | None = None) -> Messages:
    """The table of the files' parts, one after the other, put in CommitLog offset order when
    files overlap (already reported as continuity problems: the joins stay sound)."""
    names = [c for c in _EMPTY if keys or not (c.startswith("key_codes") or c == "tag_codes")]
    # column by column, each file's part freed as it is copied: memory about the table, not twice it
    t = {c: np.concatenate([p.pop(c) for p in parts]) if parts else np.zeros(0, _EMPTY[c]) for c in names}
    pos = t["positions"]
    if len(pos) > 1 and (np.diff(pos) <= 0).any():
        order = np.argsort(pos, kind="stable")
        new_row = np.empty(len(order), np.int64)
        new_row[order] = np.arange(len(order))
        for c in _EMPTY:
            if c in t and c not in ("kept_rows", "kept_properties", "key_codes", "key_codes_distinct", "tag_codes"):
                t[c] = t[c][order]
        kept = new_row[t["kept_rows"]]
        by_row = np.argsort(kept, kind="stable")
        t["kept_rows"], t["kept_properties"] = kept[by_row], t["kept_properties"][by_row]
        if keys:
            old = t["key_codes"] >> KEY_CODE_HASH_BITS
            moved = (new_row[old] << KEY_CODE_HASH_BITS) | (t["key_codes"] & ((1 << KEY_CODE_HASH_BITS) - 1))
            t["key_codes"] = moved[np.argsort(new_row[old], kind="stable")]
            t["key_codes_distinct"] = distinct(t["key_codes"], runs=True)
            old = t["tag_codes"] >> KEY_CODE_HASH_BITS
            t["tag_codes"] = np.sort((new_row[old] << KEY_CODE_HASH_BITS)
                                     | (t["tag_codes"] & ((1 << KEY_CODE_HASH_BITS) - 1)))
    tag_codes = t.pop("tag_codes") if keys else None
    key_codes = (t.pop("key_codes_distinct"), t.pop("key_codes")) if keys else None
    return Messages(t, topics, [str(f.path) for f in files], [f.start_offset for f in files],
                    files[0].start_offset if files else None, end_offset, key_codes,
                    (t.pop("kept_rows"), t.pop("kept_properties")), start=start, stop=stop, topic_index=topic_index,
                    tag_codes=tag_codes)


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
    scan = CommitLogScan(Path(path), file_size, check_crc, keys=False)
    scan.walk(lambda window: None)
    return scan.reports
