"""The CommitLog reader: records decoded into pandas or Arrow columns (:func:`read_columns`,
:func:`read_at`) and into :class:`Message` objects (:func:`read_message`, :func:`iter_messages`).

A record's fields are decoded in one place. In C (``rmqlab._records``) one layout and one check
of a record (``layout_record``) and one property scan serve both passes: ``walk_decode``, which
walks a file and decodes what it walks (plain reads), and ``decode_records`` + ``find_props``
for records at positions given (read_at, the CRC checks, one message). In Python both passes
hand their rows to :func:`_columns`, which makes every column (topic and tags as dictionaries,
hosts from their codes, text, DELAY, nulls), and word their damage with the same helper
(:func:`_field_problem`). A malformed property pair is skipped, as the broker's parser skips it
(a 5.2.0 broker writes such blocks), so it is never damage. A message is a row of those columns. The
NumPy decode this replaced, which the benchmarks time it against, lives in
tests/support/commitlog_reference.py."""
from __future__ import annotations

import collections
import gc
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

import rmqlab._records as _records
from rmqlab.errors import FormatError, TruncatedFileError
from rmqlab.formats import dledger
from rmqlab.formats.commitlog.files import (
    MappedCommitLog,
    ReadOnlyMap,
    StoreFile,
    present,
    store_files,
    walked_files,
)
from rmqlab.formats.commitlog.layout import (
    BLANK,
    BORNHOST_V6_FLAG,
    COLUMNS,
    CRC32_RESERVED_LEN,
    HEAD,
    IPV6_SIZE,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    MIN_MESSAGE_SIZE,
    PROPERTY_CRC32,
    STOP_BLANK,
    STOP_BLANK_SIZE,
    STOP_END,
    STOP_LIMIT,
    STOP_PAST_END,
    STOP_SHORT,
    STOREHOSTADDRESS_V6_FLAG,
    WANTED_PROPERTIES,
)
from rmqlab.formats.commitlog.records import (
    CHANGED_WHILE_READ,
    Damage,
    Message,
    ReadReport,
    check_head,
    classify_stop,
    decode_text,
    encode_text,
    parse_properties,
    prop_crc_expected,
    record_damage,
)
from rmqlab.formats.msgid import format_host
from rmqlab.tables.pool import ThreadPool, check_jobs, usable_cores


def _gather(U: np.ndarray, starts: np.ndarray, width: int, dtype: str) -> np.ndarray:
    """Big-endian integers of `width` bytes at byte positions `starts` (clipped into U)."""
    if len(starts) == 0:
        return np.empty(0, dtype=np.dtype(dtype).newbyteorder("="))
    idx = starts[:, None] + np.arange(width, dtype=np.int64)
    np.clip(idx, 0, len(U) - 1, out=idx)
    return U[idx].view(dtype).reshape(-1).astype(np.dtype(dtype).newbyteorder("="))


#: ``_records.decode_records``' outputs, in the order and widths the C function writes them.
_DECODED = (("total_size", "i4"), ("version", "i1"), ("body_crc", "i4"), ("queue_id", "i4"), ("flag", "i4"),
            ("queue_offset", "i8"), ("phy_offset", "i8"), ("sys_flag", "i4"), ("born_timestamp", "i8"),
            ("store_timestamp", "i8"), ("reconsume_times", "i4"), ("prepared_transaction_offset", "i8"),
            ("born_host_key", "u8"), ("store_host_key", "u8"), ("born_host_at", "i8"), ("store_host_at", "i8"),
            ("body_start", "i8"), ("body_len", "i8"), ("topic_start", "i8"), ("topic_len", "i8"),
            ("properties_start", "i8"), ("properties_len", "i8"))
_FIXED_COLUMNS = ("queue_id", "flag", "queue_offset", "phy_offset", "sys_flag", "born_timestamp",
                  "store_timestamp", "reconsume_times", "prepared_transaction_offset", "total_size", "version",
                  "body_crc")


def _decode_records(U, P: np.ndarray) -> tuple[dict[str, np.ndarray], int]:
    """``_records.decode_records`` of the message records at positions P (int64, heads checked):
    its outputs by name (:data:`_DECODED`) and the first row that fails a field check, -1 when
    none does (the rows from it on are not filled)."""
    d = {name: np.empty(len(P), dtype) for name, dtype in _DECODED}
    bad_row = _records.decode_records(U, P, tuple(d.values())) if len(P) else -1
    return d, bad_row


# ---------------------------------------------------------------- what stops a decode

#: Why a decode stopped before a record: (its position in the buffer, field, reason).
_Problem = tuple[int, str, str]

#: ``_records.check_record``'s failed checks, in the order the decode runs them (LAYOUT_FIXED to
#: LAYOUT_END in records.c): the field each names and its reason, in the words the reader has always used.
_LAYOUT_CHECKS = {
    1: ("TOTALSIZE", "TOTALSIZE {total} is smaller than the fixed fields of this record (SYSFLAG 0x{sys_flag:X}, "
                     "v{version})"),
    2: ("BODYLEN", "BODYLEN {value} disagrees with TOTALSIZE {total}"),
    3: ("TOPICLEN", "TOPICLEN {value} disagrees with TOTALSIZE {total}"),
    4: ("PROPERTIESLENGTH", "PROPERTIESLENGTH {value} disagrees with TOTALSIZE {total}"),
    5: ("TOTALSIZE", "TOTALSIZE {total} but the fields end after {value} bytes"),
}


def _field_problem(U, p: int) -> _Problem:
    """The field check the message record at `p` fails (decode_records and walk_decode stopped
    there), read by ``_records.check_record`` from the record itself."""
    check, total, version, sys_flag, value = _records.check_record(U, p)
    if check == 0:
        # The decode and this second read saw different bytes: a writer is still appending to
        # the mapped file (a live broker, or generate_store in another thread). In the last
        # file that is the end of the prefix read (classify_stop); a later read sees it whole.
        return p, "TOTALSIZE", CHANGED_WHILE_READ
    field, reason = _LAYOUT_CHECKS[check]
    return p, field, reason.format(total=total, version=version, sys_flag=sys_flag & 0xFFFFFFFF, value=value)


def _body_crc_check(U, P: np.ndarray, bst: np.ndarray, bln: np.ndarray, stored: np.ndarray, limit: int,
                    problem: _Problem | None) -> tuple[_Problem | None, int]:
    """The first of `limit` records at P whose BODYCRC is not CRC32(body) & 0x7FFFFFFF (an empty
    body is not checked): its problem and row as the new limit, else (problem, limit) unchanged."""
    crc = np.empty(limit, np.uint32)
    _records.crc32_spans(U, bst, bln, crc)
    good = (bln == 0) | ((crc & 0x7FFFFFFF).astype(np.int64) == stored[:limit].astype(np.int64))
    if good.all():
        return problem, limit
    r = int(np.argmin(good))
    return (int(P[r]), "BODYCRC", f"BODYCRC {int(stored[r])} but CRC32(body) & 0x7FFFFFFF = "
                                  f"{int(crc[r]) & 0x7FFFFFFF}"), r


def _damage(f: StoreFile, problem: _Problem | None) -> Damage | None:
    """The Damage of a problem found in the file `f`."""
    if problem is None:
        return None
    p, field, reason = problem
    return Damage(os.fspath(f.path), p, f.start_offset + p, field, reason)


# ---------------------------------------------------------------- the __CRC32# property

#: PROP_CRC_STATES codes: no __CRC32# property, its CRC does not match, it matches
PROP_CRC_ABSENT, PROP_CRC_MISMATCH, PROP_CRC_MATCH = -1, 0, 1
_JAVA_INT = 1 << 32


def _prop_crc_from_values(U, P: np.ndarray, total: np.ndarray, vs: np.ndarray, vl: np.ndarray) -> np.ndarray:
    """PROP_CRC_* code of each record at P, given where its ``__CRC32#`` value starts and how
    long it is (vs < 0: absent), by the broker's rule (:func:`records.prop_crc_expected`)."""
    n = len(P)
    state = np.full(n, PROP_CRC_ABSENT, np.int8)
    present = np.flatnonzero(vs >= 0)
    if not len(present):
        return state
    expected = np.zeros(len(present), np.int64)
    ten = vl[present] == 10
    if ten.any():   # the ten digits every broker writes: parsed for all such rows at once
        digits = U[vs[present[ten]][:, None] + np.arange(10, dtype=np.int64)].astype(np.int64) - 0x30
        x = np.zeros(int(ten.sum()), np.int64)
        for k in range(9, -1, -1):   # Java int arithmetic: wraps at 32 bits
            x = (x * 10 + digits[:, k] + (1 << 31)) % _JAVA_INT - (1 << 31)
        expected[ten] = x
    for j in np.flatnonzero(~ten):
        r = present[j]
        expected[j] = prop_crc_expected(decode_text(U[vs[r]:vs[r] + vl[r]].tobytes()))
    crc = np.empty(len(present), np.uint32)
    _records.crc32_spans(U, np.ascontiguousarray(P[present], np.int64),
                         np.ascontiguousarray(total[present] - CRC32_RESERVED_LEN, np.int64), crc)
    ok = (expected > 0) & ((crc & 0x7FFFFFFF).astype(np.int64) == expected)
    state[present] = np.where(ok, PROP_CRC_MATCH, PROP_CRC_MISMATCH)
    return state


# ---------------------------------------------------------------- text, dictionaries, hosts


def _object_column(U, starts: np.ndarray, lengths: np.ndarray, as_bytes: bool = False) -> np.ndarray:
    """Object array of the bytes (or str) at each span of U; None where the start is negative."""
    out = np.empty(len(starts), dtype=object)
    if len(starts):   # written into the array: no list of millions of objects to copy over
        _records.span_objects(U, np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(lengths, np.int64),
                              as_bytes, out)
    return out


def _text_array(n: int, bitmap, null_count: int, offsets, data, *, binary: bool = False, ascii_only: bool = True):
    """Arrow large_string array over offsets and data (large_binary if `binary` or not UTF-8)."""
    import pyarrow as pa

    buffers = [None if not null_count else pa.py_buffer(bitmap), pa.py_buffer(offsets), pa.py_buffer(data)]
    if not binary:
        text = pa.Array.from_buffers(pa.large_string(), n, buffers, null_count)
        try:
            if not ascii_only:
                text.validate(full=True)
            return text
        except pa.ArrowInvalid:   # not UTF-8: keep the bytes rather than guess an encoding
            pass
    return pa.Array.from_buffers(pa.large_binary(), n, buffers, null_count)


def _valid_rows(bitmap: np.ndarray, n: int) -> np.ndarray:
    return np.unpackbits(bitmap, count=n, bitorder="little").view(bool)


def _python_values(arr) -> np.ndarray:
    """A dictionary's values as an object array of str (bytes not UTF-8 decoded as decode_text does)."""
    import pyarrow as pa

    if pa.types.is_large_binary(arr.type):
        return np.array([decode_text(v) for v in arr.to_pylist()], dtype=object)
    return np.array(arr.to_pylist(), dtype=object)


class _SpanText:
    """A text column as spans of a file's bytes U (decode_records, find_props): row i is
    ``U[starts[i]:starts[i] + lengths[i]]``, null where the start is negative. 2-D starts and
    lengths (find_props' rows) give the spans of their `column`."""

    def __init__(self, U, starts: np.ndarray, lengths: np.ndarray, column: int | None = None):
        self.U, self.starts, self.lengths, self.column = U, starts, lengths, column

    def __len__(self) -> int:
        return len(self.starts)

    def _spans(self) -> tuple[np.ndarray, np.ndarray]:
        if self.column is None:
            return self.starts, self.lengths
        return self.starts[:, self.column], self.lengths[:, self.column]

    def objects(self, as_bytes: bool = False) -> np.ndarray:
        return _object_column(self.U, *self._spans(), as_bytes=as_bytes)

    def arrow(self, binary: bool = False):
        """The spans copied into one Arrow array (``_records.gather_spans``)."""
        n = len(self.starts)
        offsets = np.empty(n + 1, np.int64)
        width, column = (1, 0) if self.column is None else (self.starts.shape[1], self.column)
        data, ascii_only = _records.gather_spans(self.U, np.ascontiguousarray(self.starts, np.int64),
                                                 np.ascontiguousarray(self.lengths, np.int64), offsets, width, column)
        valid = self._spans()[0] >= 0
        null_count = int(n - np.count_nonzero(valid))
        bitmap = np.packbits(valid, bitorder="little") if null_count else None
        return _text_array(n, bitmap, null_count, offsets, data, binary=binary, ascii_only=ascii_only)

    def coded(self) -> _CodedText:
        """The column dictionary-encoded (codes in order of first appearance)."""
        return _CodedText.of(self.arrow().dictionary_encode())


class _LaidOutText:
    """A text column walk_decode copied into Arrow's layout: `offsets` (n + 1) into `data`, null
    where the validity `bitmap` (least significant bit first; None without nulls) says;
    `ascii_only` when no byte of the data is >= 0x80."""

    def __init__(self, offsets: np.ndarray, data: np.ndarray, bitmap: np.ndarray | None = None,
                 null_count: int = 0, ascii_only: bool = True):
        self.offsets, self.data, self.bitmap, self.null_count = offsets, data, bitmap, null_count
        self.ascii_only = ascii_only

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def objects(self, as_bytes: bool = False) -> np.ndarray:
        starts = self.offsets[:-1]
        if self.bitmap is not None:
            starts = np.where(_valid_rows(self.bitmap, len(self)), starts, -1)
        return _object_column(self.data, starts, np.diff(self.offsets), as_bytes=as_bytes)

    def arrow(self, binary: bool = False):
        return _text_array(len(self), self.bitmap, self.null_count, self.offsets, self.data, binary=binary,
                           ascii_only=self.ascii_only)


class _CodedText:
    """A dictionary column: row i is ``values[codes[i]]``, null where the validity `bitmap` (None
    without nulls) says. `values`, the distinct texts, is a pyarrow array or the spans of their
    first occurrences (walk_decode's dictionaries: no pyarrow for pandas columns)."""

    def __init__(self, codes: np.ndarray, values, bitmap: np.ndarray | None = None, null_count: int = 0):
        self.codes, self.values, self.bitmap, self.null_count = codes, values, bitmap, null_count

    def _value_objects(self) -> np.ndarray:
        if isinstance(self.values, _SpanText):
            return self.values.objects()
        return _python_values(self.values)

    @classmethod
    def of(cls, arr) -> _CodedText:
        """The codes and values of a pyarrow DictionaryArray of int32 indices at offset 0."""
        validity, data = arr.indices.buffers()
        n, nulls = len(arr), arr.indices.null_count
        return cls(np.frombuffer(data, np.int32, count=n), arr.dictionary,
                   np.frombuffer(validity, np.uint8) if nulls else None, nulls)

    def objects(self) -> np.ndarray:
        """One Python str a distinct value; None for a null."""
        n = len(self.codes)
        if self.bitmap is None:
            return self._value_objects()[self.codes] if n else np.empty(0, dtype=object)
        out = np.full(n, None, dtype=object)
        valid = _valid_rows(self.bitmap, n)
        if len(self.values):
            out[valid] = self._value_objects()[self.codes[valid]]
        return out

    def arrow(self):
        import pyarrow as pa

        n = len(self.codes)
        codes = pa.Array.from_buffers(pa.int32(), n, [None if self.bitmap is None else pa.py_buffer(self.bitmap),
                                                      pa.py_buffer(self.codes)], self.null_count)
        values = self.values.arrow() if isinstance(self.values, _SpanText) else self.values
        return pa.DictionaryArray.from_arrays(codes, values)


def _dictionary_values(U, spans: bytes) -> _SpanText:
    """The values of a walk_decode dictionary: its (start, length) pairs of U, the first
    occurrence of each value in code order."""
    pairs = np.frombuffer(spans, np.int64).reshape(-1, 2)
    return _SpanText(U, np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]))


#: At most this many rows take the few-rows path of the decode (a broker answer is at most 64
#: offsets): Python objects made one by one, where Arrow arrays and hash tables cost more to
#: set up than they save.
FEW_ROWS = 64


#: distinct values _first_seen_codes picks out one pass each before it sorts instead
_FEW_DISTINCT = 8


def _first_seen_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code of each value, distinct values in first-seen order), as ``pd.factorize`` gives
    them. A store's messages come from a few hosts: each distinct value is taken out with one
    vectorised pass (O(rows) a value, no pandas import), past :data:`_FEW_DISTINCT` of them one
    sort (O(rows log rows)); a dict for a few rows."""
    if len(values) > FEW_ROWS:
        codes = np.full(len(values), -1, np.int64)
        distinct: list[Any] = []
        left = np.arange(len(values))
        while len(left) and len(distinct) < _FEW_DISTINCT:
            value = values[left[0]]
            same = values[left] == value
            codes[left[same]] = len(distinct)
            distinct.append(value)
            left = left[~same]
        if not len(left):
            return codes, np.array(distinct, dtype=values.dtype)
        uniq, first, inverse = np.unique(values, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty(len(order), np.int64)
        rank[order] = np.arange(len(order))
        return rank[inverse.reshape(-1)], uniq[order]
    seen: dict[Any, int] = {}
    codes = np.array([seen.setdefault(v, len(seen)) for v in values.tolist()], np.int64)
    return codes, np.array(list(seen), dtype=values.dtype)


def _host_texts(keys: np.ndarray) -> list[str]:
    """The "ip:port" text of each packed IPv4 host key (address << 32 | port as uint32)."""
    return [format_host((int(u) >> 32).to_bytes(4, "big"), (int(u) & 0xFFFFFFFF) - ((int(u) & 0x80000000) << 1))
            for u in keys]


def _host_column(U, codes: np.ndarray, ipv4_keys: np.ndarray, v6_rows: np.ndarray,
                 v6_at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, texts) of a host column, row i being ``texts[codes[i]]``. `codes` numbers the rows'
    IPv4 hosts by their distinct keys `ipv4_keys` (the decode's packing, in code order); the rows
    `v6_rows`, whose IPv6 address starts at `v6_at`, are numbered after them in the order of
    their bytes (here). Each distinct "ip:port" is formatted once."""
    texts = _host_texts(ipv4_keys)
    if len(v6_rows):
        ip = U[v6_at[:, None] + np.arange(IPV6_SIZE, dtype=np.int64)]
        port = _gather(U, v6_at + IPV6_SIZE, 4, ">i4")
        hkey = np.ascontiguousarray(np.hstack([ip, port.astype(">i4").view(np.uint8).reshape(-1, 4)]))
        uniq, inv6 = np.unique(hkey.view(f"V{hkey.shape[1]}").reshape(-1), return_inverse=True)
        codes[v6_rows] = len(texts) + inv6.reshape(-1)
        texts += [format_host(u.tobytes()[:IPV6_SIZE], int.from_bytes(u.tobytes()[IPV6_SIZE:], "big", signed=True))
                  for u in uniq]
    return codes, np.array(texts, dtype=object)


#: The host columns, each with the SYSFLAG bit that makes it IPv6.
_HOSTS = (("born_host", BORNHOST_V6_FLAG), ("store_host", STOREHOSTADDRESS_V6_FLAG))


def _delay_levels(delay: np.ndarray, U, rows: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> None:
    """DELAY of `rows` from its text at the spans (starts, lengths) of U, as pandas reads a
    number (``pd.to_numeric``): clamped to int32, the fraction dropped, 0 when not a number."""
    if len(rows):
        import pandas as pd

        txt = pd.Series(_object_column(U, starts, lengths), dtype=object)
        # leading zeros off first: pandas reads text of 19 or more characters through a float,
        # which drops digits Integer.parseInt keeps ("0000000000123456789" is 123456789)
        txt = txt.str.replace(r"^([+-]?)0+(?=[0-9])", r"\1", regex=True)
        delay[rows] = pd.to_numeric(txt, errors="coerce").fillna(0) \
            .clip(-2**31, 2**31 - 1).astype(np.int32).to_numpy()


# ---------------------------------------------------------------- the columns of decoded rows


@dataclass
class _Rows:
    """The decoded records of one file as a pass left them, for :func:`_columns`: fixed fields
    by name (:data:`_FIXED_COLUMNS`), DELAY as int32, hosts as (codes, texts), and the text
    columns in the form that pass made (spans of the file, Arrow's layout, dictionary codes);
    `body` None when bodies are not read."""

    fixed: dict[str, np.ndarray]
    delay_level: np.ndarray
    hosts: dict[str, tuple[np.ndarray, np.ndarray]]
    topic: _SpanText | _CodedText
    tags: _SpanText | _CodedText
    properties: _SpanText | _LaidOutText
    keys: _SpanText | _LaidOutText
    uniq_key: _SpanText | _LaidOutText
    body: _SpanText | _LaidOutText | None


def _dictionary_column(src: _SpanText | _CodedText, arrow: bool):
    """Topic or tags: a dictionary column (pandas: one str a distinct value)."""
    if isinstance(src, _SpanText):
        if not arrow and len(src) <= FEW_ROWS:   # a few str made one by one cost less than a dictionary
            return src.objects()
        src = src.coded()
    return src.arrow() if arrow else src.objects()


def _columns(rows: _Rows, *, arrow: bool, prop_state: np.ndarray | None = None,
             arrow_text: tuple[str, ...] = ()) -> dict[str, Any]:
    """The columns of decoded records, the same whichever pass decoded them: fixed fields and
    DELAY as decoded; topic and tags dictionary-encoded; hosts "ip:port"; properties, keys and
    uniq_key text, body bytes; keys, uniq_key and tags null where absent. pandas columns are
    NumPy arrays (object arrays of str and bytes, one Python object a distinct topic, tag and
    host but for :data:`FEW_ROWS` rows of spans; text not UTF-8 decoded with surrogateescape,
    as :func:`records.decode_text`); with
    `arrow`, pyarrow arrays (text large_string, or large_binary where the bytes are not UTF-8).
    The text columns named in `arrow_text` (properties, keys, uniq_key; topic and tags, as
    DictionaryArrays) are such pyarrow arrays in the pandas form too, for callers that only hand
    them to Arrow kernels or read one value a distinct text. With `prop_state`
    (the CRC checks, :data:`PROP_CRC_ABSENT` ...), ``crc_ok`` (all True: a bad BODYCRC stops the
    read) and ``prop_crc_ok`` (None without the property)."""
    n = len(rows.delay_level)
    cols: dict[str, Any] = {name: rows.fixed[name] for name in _FIXED_COLUMNS}
    cols["delay_level"] = rows.delay_level
    if prop_state is not None:
        cols["crc_ok"] = np.ones(n, bool)
    text = {"properties": rows.properties, "keys": rows.keys, "uniq_key": rows.uniq_key}
    if rows.body is not None:
        text["body"] = rows.body
    if arrow:
        import pyarrow as pa

        cols = {name: pa.array(v) for name, v in cols.items()}
        for name, (codes, texts) in rows.hosts.items():
            cols[name] = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(texts, pa.large_string()))
        for name, src in text.items():
            cols[name] = src.arrow(binary=name == "body")
        if prop_state is not None:
            cols["prop_crc_ok"] = pa.array(prop_state == PROP_CRC_MATCH, mask=prop_state == PROP_CRC_ABSENT)
    else:
        for name, (codes, texts) in rows.hosts.items():
            cols[name] = texts[codes] if len(texts) else np.empty(n, dtype=object)
        for name, src in text.items():
            body_bytes = name == "body"
            cols[name] = src.arrow(binary=body_bytes) if name in arrow_text else src.objects(as_bytes=body_bytes)
        if prop_state is not None:
            cols["prop_crc_ok"] = np.array([None, False, True], dtype=object)[prop_state + 1]
    cols["topic"] = _dictionary_column(rows.topic, arrow or "topic" in arrow_text)
    cols["tags"] = _dictionary_column(rows.tags, arrow or "tags" in arrow_text)
    return cols


# ---------------------------------------------------------------- the two passes


def _decode_positions(U, P: np.ndarray, f: StoreFile, *, body: bool, check_crc: bool, arrow: bool = False,
                      arrow_text: tuple[str, ...] = (), crc_spans: bool = False):
    """Decode the message records at positions P (heads already checked) of one mapped file:
    one C pass (``_records.decode_records``) for the fixed fields and the spans, the property
    scan (``find_props``), with `check_crc` the BODYCRC and ``__CRC32#`` checks, then
    :func:`_columns`. Returns (columns dict of the good prefix, Damage or None for the first
    bad record, positions of the good prefix); with `arrow`, pyarrow arrays (`arrow_text`: those
    text columns only, :func:`_columns`). With `crc_spans`, the columns :data:`CRC_SPAN_COLUMNS`
    too, for a caller that checks the CRCs itself without stopping at a bad one."""
    cols, problem, P = _decode_at(U, P, body=body, check_crc=check_crc, arrow=arrow, arrow_text=arrow_text,
                                  crc_spans=crc_spans)
    return cols, _damage(f, problem), P


#: what the decode found for the CRC checks, by :func:`_decode_positions`' `crc_spans`: each
#: record's body as a span of the file (first byte, BODYLEN; int64), and its PROP_CRC_* code
#: (int8: no ``__CRC32#`` property, its CRC does not match, it matches)
CRC_SPAN_COLUMNS = ("body_start", "body_len", "prop_crc_state")


def _decode_at(U, P: np.ndarray, *, body: bool, check_crc: bool, arrow: bool = False,
               arrow_text: tuple[str, ...] = (), crc_spans: bool = False):
    """:func:`_decode_positions` of a buffer: its problem, not a file's Damage."""
    n = len(P)
    P = np.ascontiguousarray(P, np.int64)
    d, bad_row = _decode_records(U, P)
    limit = n if bad_row < 0 else bad_row
    problem = None
    if bad_row >= 0:
        problem = _field_problem(U, int(P[bad_row]))
        d = {name: v[:limit] for name, v in d.items()}
    wanted = WANTED_PROPERTIES + ((PROPERTY_CRC32.encode(),) if check_crc or crc_spans else ())
    k = len(wanted)
    vs = np.empty(limit * k, np.int64)
    vl = np.empty(limit * k, np.int64)
    pst, pln = d["properties_start"], d["properties_len"]
    if limit:   # a malformed pair is skipped, as the broker's parser skips it: not damage
        _records.find_props(U, pst, pln, wanted, vs, vl)
    if check_crc and limit:
        problem, limit = _body_crc_check(U, P, d["body_start"][:limit], d["body_len"][:limit], d["body_crc"], limit,
                                         problem)
    if limit < len(P):
        P = P[:limit]
        d = {name: v[:limit] for name, v in d.items()}
    vs, vl = vs.reshape(-1, k)[:limit], vl.reshape(-1, k)[:limit]
    sys_flag = d["sys_flag"]
    hosts = {}
    for name, flag in _HOSTS:
        wide = (sys_flag & flag) != 0
        codes = np.empty(limit, np.int32)
        if wide.any():
            v4, v6 = np.flatnonzero(~wide), np.flatnonzero(wide)
            codes[v4], distinct = _first_seen_codes(d[f"{name}_key"][v4])
        else:
            v6 = np.empty(0, np.int64)
            codes[:], distinct = _first_seen_codes(d[f"{name}_key"])
        hosts[name] = _host_column(U, codes, distinct, v6, d[f"{name}_at"][v6])
    delay = np.zeros(limit, np.int32)
    has_delay = vs[:, 3] >= 0
    _delay_levels(delay, U, np.flatnonzero(has_delay), vs[has_delay, 3], vl[has_delay, 3])
    prop_state = _prop_crc_from_values(U, P, d["total_size"].astype(np.int64), vs[:, 4], vl[:, 4]) \
        if check_crc or crc_spans else None
    spans = {"body_start": np.asarray(d["body_start"], np.int64), "body_len": np.asarray(d["body_len"], np.int64),
             "prop_crc_state": prop_state} if crc_spans else {}
    rows = _Rows(fixed=d, delay_level=delay, hosts=hosts,
                 topic=_SpanText(U, d["topic_start"], d["topic_len"]), tags=_SpanText(U, vs, vl, column=2),
                 properties=_SpanText(U, d["properties_start"], d["properties_len"]),
                 keys=_SpanText(U, vs, vl, column=0), uniq_key=_SpanText(U, vs, vl, column=1),
                 body=_SpanText(U, d["body_start"], d["body_len"]) if body else None)
    cols = _columns(rows, arrow=arrow, prop_state=prop_state if check_crc else None, arrow_text=arrow_text)
    return {**cols, **spans}, problem, P


#: ``_records.walk_decode``'s row outputs, in the order and widths the C function writes them.
_WALKED = (("total_size", "i4"), ("version", "i1"), ("body_crc", "i4"), ("queue_id", "i4"), ("flag", "i4"),
           ("queue_offset", "i8"), ("phy_offset", "i8"), ("sys_flag", "i4"), ("born_timestamp", "i8"),
           ("store_timestamp", "i8"), ("reconsume_times", "i4"), ("prepared_transaction_offset", "i8"),
           ("topic_code", "i4"), ("born_host_code", "i4"), ("store_host_code", "i4"), ("tags_code", "i4"),
           ("delay_level", "i4"))
_WALKED_BITMAPS = ("tags", "keys", "uniq_key")
_WALKED_TEXT = ("properties", "keys", "uniq_key", "body")
#: bytes after the used part of walk_decode's text outputs (its copies move 16 bytes at a time)
_TEXT_SLACK = 16
_BAD_FIELDS = 1


def _shrunk(a: np.ndarray, n: int) -> np.ndarray:
    """`a` cut to its first `n` entries in place (realloc: the memory past them goes back), so an
    output sized for the most records a file could hold keeps only what was written."""
    if n < len(a):
        a.resize(n, refcheck=False)   # fresh arrays, no view of them exists yet
    return a


def _walk_decode_outputs(buf, start: int, body: bool, max_records: int = -1) -> tuple[dict, dict, dict, tuple]:
    """``_records.walk_decode`` of `buf` from `start` (stopping after `max_records` records when
    that is >= 0) into fresh outputs sized for the most records the bytes could hold: (row
    outputs, bitmaps, text (offsets, data) pairs, its result)."""
    span = len(buf) - start
    cap = span // MIN_MESSAGE_SIZE + 1
    out_rows = {name: np.empty(cap, dtype) for name, dtype in _WALKED}
    bitmaps = {name: np.empty((cap + 7) // 8, np.uint8) for name in _WALKED_BITMAPS}
    text = {name: (np.empty(cap + 1 if body or name != "body" else 1, np.int64),
                   np.empty(span + _TEXT_SLACK if body or name != "body" else _TEXT_SLACK, np.uint8))
            for name in _WALKED_TEXT}
    outputs = (*out_rows.values(), *bitmaps.values(), *(a for pair in text.values() for a in pair))
    return out_rows, bitmaps, text, _records.walk_decode(buf, start, body, WANTED_PROPERTIES, outputs, max_records)


def _walk_decode(buf, f: StoreFile, *, start: int, body: bool, arrow: bool, columns: bool = True,
                 max_records: int = -1):
    """Walk, check and decode the records of one mapped file from byte `start` in one C pass
    (``_records.walk_decode``), then :func:`_columns`: the columns of :func:`_decode_positions`
    (without the CRC checks) and its Damage, plus the walk's stop position and code. Without
    `columns`, the columns are None (only where the good records end is wanted). With
    `max_records` >= 0 the pass stops after that many records (code STOP_LIMIT)."""
    U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
    if not columns:   # the same walk and checks without outputs (so no parts): where good records end
        _, stop_pos, code, bad_kind = _records.walk_checked(buf, start)
        return None, _damage(f, _field_problem(U, stop_pos) if bad_kind == _BAD_FIELDS else None), stop_pos, code
    out_rows, bitmaps, text, result = _walk_decode_outputs(buf, start, body, max_records)
    (n, stop_pos, code, bad_kind, bad_pos, topic_spans, tags_spans, born_keys,
     store_keys, v6_rows, delay_rows, high, nulls) = result
    d = {name: _shrunk(a, n) for name, a in out_rows.items()}
    valid = {name: _shrunk(a, (n + 7) // 8) for name, a in bitmaps.items()}
    for name, (offsets, data) in text.items():
        if body or name != "body":
            _shrunk(offsets, n + 1)
            _shrunk(data, int(offsets[n]))
    null_count = dict(zip(_WALKED_BITMAPS, nulls))
    problem = None
    if bad_kind == _BAD_FIELDS:
        problem = _field_problem(U, bad_pos)
    # hosts: IPv4 codes come from the pass; rows with an IPv6 host (rare) are numbered after
    # them, their addresses found by the decode of those records
    v6 = np.frombuffer(v6_rows, np.int64).reshape(-1, 2)   # (row, record position) pairs
    at, _ = _decode_records(U, np.ascontiguousarray(v6[:, 1]))
    hosts = {}
    for (name, flag), keys in zip(_HOSTS, (born_keys, store_keys)):
        wide = (d["sys_flag"][v6[:, 0]] & flag) != 0
        hosts[name] = _host_column(U, d[f"{name}_code"], np.frombuffer(keys, np.uint64), v6[wide, 0],
                                   at[f"{name}_at"][wide])
    delay = d["delay_level"]
    r, st, ln = np.frombuffer(delay_rows, np.int64).reshape(-1, 3).T
    _delay_levels(delay, U, r, st, ln)   # the values the pass did not read as a plain integer
    high_bit = dict(zip(("properties", "keys", "uniq_key"), (bool(high & (1 << j)) for j in range(3))))

    def laid_out(name):
        offsets, data = text[name]
        nulls_here = null_count.get(name, 0)
        return _LaidOutText(offsets, data, valid.get(name) if nulls_here else None, nulls_here,
                            ascii_only=not high_bit.get(name, False))

    rows = _Rows(fixed=d, delay_level=delay, hosts=hosts,
                 topic=_CodedText(d["topic_code"], _dictionary_values(U, topic_spans)),
                 tags=_CodedText(d["tags_code"], _dictionary_values(U, tags_spans),
                                 valid["tags"] if null_count["tags"] else None, null_count["tags"]),
                 properties=laid_out("properties"), keys=laid_out("keys"), uniq_key=laid_out("uniq_key"),
                 body=laid_out("body") if body else None)
    return _columns(rows, arrow=arrow), _damage(f, problem), stop_pos, code


def _one_pass(buf, f: StoreFile, check_crc: bool, decode) -> bool:
    """Whether :func:`scan_file` reads the file in the one pass (:func:`_walk_decode`): a
    CommitLog file (not DLedger's), no CRC checks and no `decode` of positions given."""
    return decode is None and not check_crc and not dledger.is_ledger_file(buf, f.start_offset)


def scan_file(buf, f: StoreFile, *, last: bool, check_crc: bool, report: ReadReport, on_error: str,
               body: bool = False, start: int = 0, arrow: bool = False, decode=None, columns: bool = True,
               max_records: int = -1):
    """Walk one mapped file in C from byte `start` (a record boundary), check and decode its
    records (with `arrow`, into pyarrow arrays): in one pass (:func:`_walk_decode`) unless
    `check_crc` or a `decode` of positions is given (:func:`_decode_positions`, :func:`chunked_decode`,
    or a test's reference). Returns (columns, end phy offset, stop code, damage); without
    `columns` the one pass makes no columns (None), the rest is the same. `max_records` >= 0
    stops the one pass after that many records (code STOP_LIMIT, the end where it stopped); the
    other decodes read to the file's stop."""
    if dledger.is_ledger_file(buf, f.start_offset):
        return _scan_entries(buf, f, last=last, check_crc=check_crc, report=report, on_error=on_error, body=body,
                             start=start, arrow=arrow, decode=decode)
    if _one_pass(buf, f, check_crc, decode):
        cols, dmg, stop_pos, code = _walk_decode(buf, f, start=start, body=body, arrow=arrow, columns=columns,
                                                 max_records=max_records)
    else:
        U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
        raw_pos, stop_pos, code = _records.walk(buf, start, len(buf), -1)
        P = np.frombuffer(raw_pos, np.int64)
        cols, dmg, P = (decode or _decode_positions)(U, P, f, body=body, check_crc=check_crc, arrow=arrow)
    if dmg is not None:
        size = int(BLANK.unpack_from(buf, dmg.offset).total_size)
        d2 = classify_stop(buf, f, dmg.offset, -1, dmg.field, dmg.reason, last, dmg.offset + size)
        end, code = dmg.offset, -1
    else:
        stop = check_head(buf, stop_pos, len(buf)) if stop_pos < len(buf) else None
        if stop is None and stop_pos < len(buf):
            # A whole record where the walk saw none: a writer appended it since (the map is
            # live). What was read is a consistent prefix that ends here, not damage.
            d2 = None
        else:
            fld, reason = (stop[1], stop[2]) if stop else ("", "")
            d2 = classify_stop(buf, f, stop_pos, code, fld, reason, last, None)
        end = stop_pos
    record_damage(report, d2, on_error)
    return cols, f.start_offset + end, code, d2


def _scan_entries(buf, f: StoreFile, *, last: bool, check_crc: bool, report: ReadReport, on_error: str,
                  body: bool = False, start: int = 0, arrow: bool = False, decode=None):
    """:func:`scan_file` of a DLedger CommitLog file (:mod:`rmqlab.formats.dledger`): the walk of
    its entries (C), recovery's checks of their heads and of the record in each body (its
    TOTALSIZE is the body's size, its MAGICCODE a message's), then the decode of the records at
    entry + 48 as :func:`_decode_positions` decodes them. An entry failing a check ends the file
    as a record failing one does: damage, or a torn tail in the last file."""
    U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
    E, stop_pos, code = dledger.walk_entries(buf, start, len(buf))
    heads = dledger.entry_heads(buf, E)
    P = E + dledger.BODY_OFFSET
    record_head = _gather(U, P, 8, ">i4").reshape(-1, 2) if len(P) else np.empty((0, 2), np.int32)
    bad = dledger.first_bad_entry(heads, f.start_offset + E, record_size=record_head[:, 0])
    not_message = np.flatnonzero((record_head[:, 1] != MAGIC_V1) & (record_head[:, 1] != MAGIC_V2))
    if len(not_message) and (bad is None or not_message[0] < bad[0]):
        row = int(not_message[0])
        magic = int(record_head[row, 1]) & 0xFFFFFFFF
        bad = (row, "MAGICCODE", f"the entry's body is no message record (MAGICCODE 0x{magic:08X})")
    limit = len(E) if bad is None else bad[0]
    cols, dmg, kept = (decode or _decode_positions)(U, P[:limit], f, body=body, check_crc=check_crc, arrow=arrow)
    if dmg is not None:     # the record in an entry failed its checks: the entry ends the good part
        bad = (len(kept), dmg.field, f"the record at entry + {dledger.BODY_OFFSET}: {dmg.reason}")
    if bad is not None:
        row, fld, reason = bad
        end = int(E[row])
        d2 = classify_stop(buf, f, end, -1, fld, reason, last, end + int(heads["size"][row]))
        code = -1
    else:
        fld, reason = dledger.ENTRY_STOPS.get(code, ("", ""))
        if code not in (STOP_END, STOP_BLANK, STOP_LIMIT) and not last and not U[stop_pos:].any():
            reason = "zeros where the next entry or the file's blank should be (not the last file)"
        # classify_stop re-reads a stopped CommitLog record's head, which an entry does not have:
        # only the codes it settles before that keep theirs
        d2 = classify_stop(buf, f, stop_pos, code if code in (STOP_END, STOP_BLANK, STOP_LIMIT, STOP_SHORT,
                                                              STOP_PAST_END) else -1, fld, reason, last, None)
        end = stop_pos
    record_damage(report, d2, on_error)
    return cols, f.start_offset + end, code, d2


def chunked_decode(reduce: Callable[[dict, np.ndarray, int], dict], rows: int, *, arrow_text: tuple[str, ...] = (),
                   crc_spans: bool = False):
    """A `decode` for :func:`scan_file` that decodes the walked records `rows` at a time
    (:func:`_decode_positions`) and keeps of each chunk only what ``reduce(columns, positions,
    first row)`` makes of it: a dict of NumPy arrays, joined over the chunks. A file's text
    columns then never exist whole: memory is `rows` messages' strings plus what `reduce` keeps.
    The text columns named in `arrow_text` reach `reduce` as pyarrow arrays (large_string, or
    large_binary where not UTF-8), with no Python object a row; with `crc_spans` the columns
    also hold :data:`CRC_SPAN_COLUMNS` (the decode stops at no bad CRC). Cost: the walk and decode of
    the file (C and NumPy) plus `reduce`, O(records).

    >>> import tempfile
    >>> from rmqlab.formats.commitlog.files import store_files
    >>> d = tempfile.mkdtemp()
    >>> from rmqlab.formats.commitlog.write import CommitLogWriter
    >>> with CommitLogWriter(d, file_size=4096) as w:
    ...     _ = w.append({"topic": ["T", "U", "T"], "body": [b"x"] * 3})
    >>> f = store_files(d)[0]
    >>> keep = lambda cols, pos, first: {"topic_is_t": cols["topic"] == "T", "row": first + np.arange(len(pos))}
    >>> with ReadOnlyMap(f.path) as buf:
    ...     cols, *_ = scan_file(buf, f, last=True, check_crc=False, report=ReadReport(), on_error="report",
    ...                          decode=chunked_decode(keep, 2))
    >>> cols["topic_is_t"].tolist(), cols["row"].tolist()
    ([True, False, True], [0, 1, 2])
    """
    def decode(U, P: np.ndarray, f: StoreFile, *, body: bool, check_crc: bool, arrow: bool = False):
        kept, good, dmg = [], [], None
        for lo in range(0, max(len(P), 1), rows):   # once when there are no records: typed, empty
            cols, dmg, at = _decode_positions(U, P[lo:lo + rows], f, body=body, check_crc=check_crc, arrow=arrow,
                                              arrow_text=arrow_text, crc_spans=crc_spans)
            kept.append(reduce(cols, at, lo))
            good.append(at)
            del cols
            if dmg is not None:
                break
        # name by name, each chunk's part freed as it is copied
        out = {name: np.concatenate([k.pop(name) for k in kept]) for name in list(kept[0])}
        return out, dmg, np.concatenate(good)
    return decode


def columns_frame(parts: list[dict], body: bool, check_crc: bool, arrow: bool = False):
    """The frame of the per-file column dicts `parts`, one after the other."""
    import pandas as pd

    if arrow:
        names = _column_names(body, check_crc)
        return pd.DataFrame({c: pd.arrays.ArrowExtensionArray(_arrow_column([p[c] for p in parts], c, check_crc))
                             for c in names}, columns=names)
    # copy=False: no consolidation of the columns into 2-D blocks, which copied every column
    return pd.DataFrame(_column_arrays(parts, body, check_crc), copy=False)


def _column_names(body: bool, check_crc: bool) -> list[str]:
    return [c for c in COLUMNS if body or c != "body"] + (["crc_ok", "prop_crc_ok"] if check_crc else [])


def _column_arrays(parts: list[dict], body: bool, check_crc: bool, rows: np.ndarray | None = None) -> dict:
    """The columns of the per-file column dicts `parts`, one after the other, in :data:`COLUMNS`
    order; with `rows`, their rows in that order. Without parts, typed as columns with rows are
    (so that a frame of no rows joins others as they do)."""
    names = _column_names(body, check_crc)
    if not parts:
        numeric = dict(_DECODED, delay_level="i4", crc_ok="?")
        return {c: np.empty(0, dtype=numeric.get(c, object)) for c in names}
    data = {c: (parts[0][c] if len(parts) == 1 else np.concatenate([p[c] for p in parts])) for c in names}
    if rows is not None:
        data = {c: v[rows] for c, v in data.items()}
    return data


def _arrow_column(chunks: list, name: str, check_crc: bool):
    """One column of the Arrow frame from its per-file arrays (typed even without rows)."""
    import pyarrow as pa

    if chunks:
        if len(chunks) == 1:
            return chunks[0]
        if all(c.type == chunks[0].type for c in chunks):
            return pa.chunked_array(chunks)
        # a file whose text was not UTF-8 gave large_binary: the column is binary throughout
        return pa.chunked_array([(c.dictionary_decode() if pa.types.is_dictionary(c.type) else c)
                                 .cast(pa.large_binary()) for c in chunks])
    if name in ("topic", "tags", "born_host", "store_host"):
        return pa.array([], pa.dictionary(pa.int32(), pa.large_string()))
    if name == "body":
        return pa.array([], pa.large_binary())
    if name in ("properties", "keys", "uniq_key"):
        return pa.array([], pa.large_string())
    if name in ("crc_ok", "prop_crc_ok"):
        return pa.array([], pa.bool_())
    dtypes = dict(_DECODED, delay_level="i4")
    return pa.array(np.empty(0, dtypes[name]))


def read_columns(path_or_dir: str | os.PathLike, *, body: bool = True, check_crc: bool = False,
                 on_error: Literal["raise", "report"] = "raise", start_offset: int = 0, arrow: bool = False,
                 jobs: int | None = None):
    """Every message of a CommitLog file or ``commitlog/`` folder as a pandas DataFrame, one row a
    message in offset order, columns :data:`COLUMNS` (``crc_ok`` and ``prop_crc_ok`` added when
    `check_crc`; ``body`` left out when `body` is False). ``prop_crc_ok`` is None for a record
    without a ``__CRC32#`` property (5.2+ brokers with enabledAppendPropCRC write one), else
    whether it matches the record (:func:`rmqlab.formats.commitlog.records.prop_crc_expected`);
    a mismatch is shown, not treated as damage (``rmqlab verify`` reports it).

    Built on ``rmqlab._records.walk_decode``: one C pass per file walks the TOTALSIZE chain,
    checks and decodes every record, scans its properties, copies the text into Arrow's layout
    and numbers topics, tags and hosts as dictionary codes (no Python loop per message); with
    `check_crc`, the decode of the walked positions (:func:`_decode_positions`) and the CRC
    checks. Both decode a record's fields as one C layout and make the columns in one place
    (:func:`_columns`). The :class:`ReadReport` (damage, torn tail, end offset) is
    ``df.attrs["report"]``. Cost: O(bytes read), one pass over each file in C, plus with
    pandas columns one Python str/bytes object a text value (the larger part of the time); with
    `arrow`, no Python object a message. Measured rates: benchmarks/RESULTS.md
    (bench_commitlog.py).
    Memory: the decoded columns (the outputs are sized for the most records a file could hold,
    but only what is written is touched and kept).

    >>> import tempfile
    >>> from rmqlab.formats.commitlog import CommitLogWriter
    >>> d = tempfile.mkdtemp()
    >>> with CommitLogWriter(d, file_size=4096) as w:
    ...     _ = w.append({"topic": ["T"], "body": [b"hi"], "properties": ["KEYS\\x01k1\\x02"]})
    >>> read_columns(d)[["topic", "keys", "body"]].values.tolist()
    [['T', 'k1', b'hi']]
    >>> read_columns(d, arrow=True)["keys"].dtype
    large_string[pyarrow]

    The files read are those the broker loads (:func:`files.load_files`): an empty last file and
    all-zero files after the active one are left out, and only the active file may end without
    the end-of-file blank record.

    `start_offset` (a CommitLog offset where a record starts, e.g. where the last dispatch
    stopped) skips the files that end before it and starts the walk inside the one holding it.

    `arrow` returns the same columns backed by Arrow (``pd.ArrowDtype``; no Python object per
    message): text as large_string (large_binary where a file's bytes are not UTF-8), topic,
    tags and hosts dictionary-encoded, None as null; ``pa.Table.from_pandas(df)`` gives the
    Arrow table without copying the data.

    `jobs`: threads the files are decoded on, a file each: the one C pass of a file releases the
    GIL, so the files' passes run side by side while the Python around them (about a tenth of
    an Arrow read; with pandas columns also the Python objects, the larger part) takes turns.
    The same frame and report with any `jobs` (a file's error is raised after the files before
    it, as the serial read raises it). None (the default): the usable cores, at most one a
    file. Memory: the columns of at most `jobs` + 1 files in flight beyond those already taken.
    Measured: benchmarks/RESULTS.md (bench_jobs.py --decode).
    """
    return _read_columns(path_or_dir, body=body, check_crc=check_crc, on_error=on_error, start_offset=start_offset,
                         arrow=arrow, jobs=jobs)


def _read_columns(path_or_dir, *, body: bool = True, check_crc: bool = False, on_error: str = "raise",
                  start_offset: int = 0, arrow: bool = False, decode=None, jobs: int | None = 1):
    """:func:`read_columns`, decoding each file with `decode` (the one pass, or with `check_crc`
    :func:`_decode_positions`, unless given: tests and benchmarks pass :func:`_decode_positions`,
    or the NumPy decode of tests/support/commitlog_reference.py)."""
    files = _files_from(path_or_dir, on_error, start_offset)
    check_jobs(jobs)
    if jobs is None:
        jobs = min(usable_cores(), len(files))
    report = ReadReport()
    gc_was = gc.isenabled()
    gc.disable()   # millions of new str/bytes objects, no cycles: skip the collector's passes
    try:
        if jobs > 1 and decode is None:
            parts = _parts_threaded(files, report, jobs, body, check_crc, on_error, start_offset, arrow)
        else:
            parts = list(_column_parts(files, report, body, check_crc, on_error, start_offset, arrow=arrow,
                                       decode=decode))
    finally:
        if gc_was:
            gc.enable()
    df = columns_frame(parts, body, check_crc, arrow=arrow)
    df.attrs["report"] = report
    return df


def _column_parts(files, report, body, check_crc, on_error, start_offset=0, arrow=False, decode=None,
                  part_messages: int | None = None):
    """The column dicts of the records of `files` from `start_offset` on, in order: one a file,
    or with `part_messages` at most that many records each. `report` is filled as they come and
    is complete when the generator is exhausted."""
    for i, f in enumerate(files):
        yield from _one_file_parts(f, i == len(files) - 1, report, body, check_crc, on_error, start_offset, arrow,
                                   decode, part_messages)


def _one_file_parts(f: StoreFile, last: bool, report: ReadReport, body, check_crc, on_error, start_offset=0,
                    arrow=False, decode=None, part_messages: int | None = None):
    """:func:`_column_parts` of one file (`last`: the walk's last file)."""
    report.files.append(os.fspath(f.path))
    with ReadOnlyMap(f.path) as buf:
        start = min(max(start_offset - f.start_offset, 0), len(buf))
        for cols, _, end, code, _ in _file_parts(buf, f, last=last, check_crc=check_crc, report=report,
                                                 on_error=on_error, body=body, start=start, arrow=arrow,
                                                 decode=decode, part_messages=part_messages):
            report.messages += len(cols["topic"])
            if last and end is not None:
                report.end_phy_offset = f.start_offset + f.size if code == STOP_BLANK else end
            if len(cols["topic"]):
                yield cols


def _file_columns_here(f: StoreFile, last: bool, body: bool, check_crc: bool, on_error: str,
                       start_offset: int, arrow: bool) -> tuple[list[dict], ReadReport]:
    """One file's columns and its own :class:`ReadReport`, decoded on its own (on a thread of
    :func:`_parts_threaded`)."""
    report = ReadReport()
    return list(_one_file_parts(f, last, report, body, check_crc, on_error, start_offset, arrow)), report


def _parts_threaded(files: list[StoreFile], report: ReadReport, jobs: int, body, check_crc, on_error,
                    start_offset, arrow: bool) -> list[dict]:
    """:func:`_column_parts` of `files`, each file decoded on one of `jobs` threads
    (:class:`~rmqlab.tables.pool.ThreadPool`: the one C pass, ``walk_decode``, releases the GIL;
    the Python around it, about a tenth of a file's time, takes turns) and taken back in file
    order, its report joined into `report` as the serial read fills it. At most `jobs` + 1 files
    are in flight; an error of a file is raised when its turn comes, after the files before it,
    and the files not started yet are dropped."""
    parts: list[dict] = []
    units = [(f, i == len(files) - 1, body, check_crc, on_error, start_offset, arrow)
             for i, f in enumerate(files)]
    with ThreadPool(jobs, "read_columns", thread_name_prefix="rmqlab-decode") as pool:
        for got, got_report in pool.ordered(_file_columns_here, units, ahead=jobs):
            parts += got
            report.join(got_report)
    return parts


def _file_parts(buf, f: StoreFile, *, last: bool, report: ReadReport, on_error: str, start: int,
                part_messages: int | None, **scan):
    """:func:`scan_file` of one file in parts of at most `part_messages` records (all at once when
    None): (columns, position of the part's first record, end phy offset, stop code, damage)
    each, the end and the damage None but for the file's last part.
    The one pass (:func:`_walk_decode`) stops itself after `part_messages` records. The other
    decodes (CRC checks, a `decode` given, a DLedger file) take a header walk (``_records.walk``,
    TOTALSIZE only) to find where each part's records end, and decode the part from a view that
    ends there, so the decode stops clean at that boundary. Either way the file's last part, and
    a part whose decode finds damage, are decoded from the whole map as one pass over the file
    decodes them: the same records, stop and damage."""
    lo = start
    if part_messages and _one_pass(buf, f, scan.get("check_crc", False), scan.get("decode")):
        # the one pass stops itself after part_messages records (no header walk first); a part
        # that stops for any other reason is the file's last, read as one pass over it reads it
        while True:
            cols, end, code, damage = scan_file(buf, f, last=last, report=report, on_error=on_error, start=lo,
                                                max_records=part_messages, **scan)
            if code != STOP_LIMIT:
                yield cols, lo, end, code, damage
                return
            yield cols, lo, None, code, None
            lo = end - f.start_offset
    walk = dledger.walk_entries if dledger.is_ledger_file(buf, f.start_offset) else _records.walk
    while part_messages:
        _, hi, code = walk(buf, lo, len(buf), part_messages)
        if code != STOP_LIMIT:
            break
        with memoryview(buf) as whole, whole[:hi] as view:
            cols, _, _, damage = scan_file(view, f, last=False, report=ReadReport(), on_error="report",
                                           start=lo, **scan)
        if damage is not None:
            break
        yield cols, lo, None, code, None
        lo = hi
    cols, end, code, damage = scan_file(buf, f, last=last, report=report, on_error=on_error, start=lo, **scan)
    yield cols, lo, end, code, damage


def read_column_parts(path_or_dir: str | os.PathLike, *, part_messages: int, body: bool = True,
                      check_crc: bool = False, on_error: Literal["raise", "report"] = "raise",
                      start_offset: int = 0, arrow: bool = False):
    """:func:`read_columns` a part at a time: a generator of DataFrames of at most `part_messages`
    messages each (none empty), in offset order, whose rows joined are the rows of
    :func:`read_columns` with the same arguments. A part ends between two records of one file or
    at a file's end. Each frame's ``attrs["report"]`` is the same :class:`ReadReport` (also the
    iterator's ``report``), complete once the iterator is exhausted; with ``on_error="report"``
    damage is in it by the time the part holding the records before the damage is yielded.
    Memory: one part's columns (the caller keeps what it wants). Cost: :func:`read_columns`'
    plus a header walk of each file (a few % of the decode). With `arrow`, a text column is
    large_binary in the parts whose bytes are not UTF-8, and only in those
    (:func:`read_columns` makes the whole column binary).

    >>> import tempfile
    >>> from rmqlab.formats.commitlog import CommitLogWriter
    >>> d = tempfile.mkdtemp()
    >>> with CommitLogWriter(d, file_size=4096) as w:
    ...     _ = w.append({"topic": ["T", "U", "V"], "body": [b"a", b"b", b"c"]})
    >>> [part["topic"].tolist() for part in read_column_parts(d, part_messages=2)]
    [['T', 'U'], ['V']]
    """
    if part_messages < 1:
        raise ValueError(f"part_messages must be >= 1, got {part_messages}")
    files = _files_from(path_or_dir, on_error, start_offset)   # checked now, not at the first part
    report = ReadReport()

    def frames():
        for cols in _column_parts(files, report, body, check_crc, on_error, start_offset, arrow=arrow,
                                  part_messages=part_messages):
            df = columns_frame([cols], body, check_crc, arrow=arrow)
            df.attrs["report"] = report
            yield df
    return ColumnParts(frames(), report)


class ColumnParts:
    """The iterator :func:`read_column_parts` returns: its frames, and `report`, the
    :class:`ReadReport` they share (there even when no part has a record). `close()` stops the
    read and closes the file it was in."""

    def __init__(self, frames, report: ReadReport):
        self._frames = frames
        self.report = report

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._frames)

    def close(self) -> None:
        self._frames.close()


def _files_from(path_or_dir, on_error: str, start_offset: int) -> list[StoreFile]:
    """The files a read from `start_offset` walks (at least the last one), the arguments checked."""
    if on_error not in ("raise", "report"):
        raise ValueError(f"on_error must be 'raise' or 'report', got {on_error!r}")
    if start_offset < 0:
        raise ValueError(f"start_offset must be >= 0, got {start_offset}")
    files = walked_files(path_or_dir)
    kept = [f for f in files if f.start_offset + f.size > start_offset]
    return kept if kept else files[-1:]


def read_at(path_or_dir: str | os.PathLike, phy_offsets: Sequence[int] | np.ndarray, *, body: bool = True,
            check_crc: bool = False):
    """The messages at many CommitLog offsets (any order, repeats allowed) as a DataFrame with
    the :data:`COLUMNS` of :func:`read_columns`, row i for ``phy_offsets[i]``.

    Each offset's file is found by a binary search of the file start offsets; records are
    checked as by the walk and decoded as :func:`read_columns` decodes them
    (:func:`_decode_positions`), one pass per file touched, and the frame is made once from the
    columns in the order asked. Cost: a listing of the folder, one map per file touched and
    O(offsets) decode, of which one Python object a text value and the first touch of each
    record's page are most; a few offsets (a key query's answer) cost a fixed part, most of it
    pandas making the frame. Measured: benchmarks/RESULTS.md (bench_store.py, key queries).

    >>> import tempfile
    >>> from rmqlab.formats.commitlog import CommitLogWriter
    >>> d = tempfile.mkdtemp()
    >>> with CommitLogWriter(d, file_size=4096) as w:
    ...     _ = w.append({"topic": ["T", "U"], "body": [b"a", b"b"]})
    >>> at = read_columns(d)["phy_offset"].tolist()
    >>> read_at(d, [at[1], at[0], at[1]])["topic"].tolist()
    ['U', 'T', 'U']

    An offset that is not the start of a valid message raises FormatError / TruncatedFileError
    (path, position in the file, field); an offset outside every file raises ValueError.
    """
    import pandas as pd

    # no columns= (the dict is in order): with it pandas lines the dict up through a Series
    # first, which cost two thirds of a one-row frame
    return pd.DataFrame(read_at_columns(path_or_dir, phy_offsets, body=body, check_crc=check_crc), copy=False)


def read_at_columns(path_or_dir: str | os.PathLike | MappedCommitLog, phy_offsets: Sequence[int] | np.ndarray, *,
                    body: bool = True, check_crc: bool = False) -> dict[str, np.ndarray]:
    """:func:`read_at`'s columns as a dict of NumPy arrays, for a caller that makes its own
    frame with more columns (a frame made once costs less than one made and then added to).
    `path_or_dir` may be a :class:`MappedCommitLog` kept open between calls: then no listing
    and no map is made, only the records' pages are read."""
    if isinstance(path_or_dir, MappedCommitLog):
        opened, files = path_or_dir, path_or_dir.files
    else:
        opened, files = None, store_files(path_or_dir)
    offs = np.asarray(phy_offsets, dtype=np.int64).reshape(-1)
    starts = np.array([f.start_offset for f in files], np.int64)
    which = np.searchsorted(starts, offs, side="right") - 1
    sizes = np.array([f.size for f in files], np.int64)
    out_of = (which < 0) | (offs - starts[np.maximum(which, 0)] >= sizes[np.maximum(which, 0)]) if len(files) \
        else np.ones(len(offs), bool)
    if out_of.any():
        raise ValueError(f"phy offset {int(offs[np.argmax(out_of)])} is in no file of {path_or_dir}")
    # the offsets file by file: as given when they already are (one file, or sorted offsets)
    order = None if len(offs) < 2 or bool((which[1:] >= which[:-1]).all()) else np.argsort(which, kind="stable")
    by_file = which if order is None else which[order]
    bounds = np.flatnonzero(by_file[1:] != by_file[:-1]) + 1
    parts = []
    for lo, hi in zip(np.concatenate(([0], bounds)).tolist(), np.concatenate((bounds, [len(offs)])).tolist()):
        if lo == hi:
            continue
        f = files[int(by_file[lo])]
        P = (offs[lo:hi] if order is None else offs[order[lo:hi]]) - f.start_offset
        if opened is not None:
            cols, dmg = _decode_checked(opened.buffer(int(by_file[lo])), P, f, body, check_crc)
        else:
            with ReadOnlyMap(f.path) as buf:
                cols, dmg = _decode_checked(buf, P, f, body, check_crc)
        if dmg is not None:
            raise dmg.error()
        parts.append(cols)
    if order is None:
        return _column_arrays(parts, body, check_crc)
    # the rows of each file, one file after the other: put them back in the order asked
    inv = np.empty(len(offs), np.int64)
    inv[order] = np.arange(len(offs))
    return _column_arrays(parts, body, check_crc, rows=inv)


def _decode_checked(buf, P: np.ndarray, f: StoreFile, body: bool, check_crc: bool):
    """The columns of the records at positions P of file f's bytes `buf`, and their damage; the
    typed error of the first position where no record starts is raised first."""
    U = np.frombuffer(buf, np.uint8)
    _check_heads(U, P, f)
    cols, dmg, _ = _decode_positions(U, P, f, body=body, check_crc=check_crc)
    return cols, dmg


def _check_heads(U: np.ndarray, P: np.ndarray, f: StoreFile) -> None:
    """Raise :func:`read_message`'s typed error for the first position of P where no message
    record starts (too close to the end, a blank or unknown magic, a size that cannot be)."""
    n = len(U)
    if len(P) <= FEW_ROWS:   # struct reads cost less than NumPy gathers for a few records
        for p in P.tolist():
            if n - p < BLANK.size:
                read_message(f.path, p)
            total, magic = BLANK.struct.unpack_from(U.data, p)   # TOTALSIZE and MAGICCODE lead every record
            if (magic != MAGIC_V1 and magic != MAGIC_V2) or total > n - p or total < MIN_MESSAGE_SIZE:
                read_message(f.path, p)
        return
    tot = _gather(U, P, 4, ">i4").astype(np.int64)
    mag = _gather(U, P + HEAD.offset("magic"), HEAD.field("magic").size, ">i4").astype(np.int64)
    left = n - P
    bad = ((left < BLANK.size) | ((mag != MAGIC_V1) & (mag != MAGIC_V2))
           | (tot > left) | (tot < MIN_MESSAGE_SIZE))
    if bad.any():
        read_message(f.path, int(P[np.argmax(bad)]))   # raises the typed error of this record's head


def max_offset(path: str | os.PathLike) -> int | None:
    """Offset after the last good message (the broker's getMaxOffset after recovery); reads only
    the active file (walks its TOTALSIZE chain and checks each record; files.load_files), 65,536
    records at a time, so memory stays a few MiB. None without files."""
    files = walked_files(path)
    if not files:
        return None
    f = files[-1]
    with ReadOnlyMap(f.path) as buf:
        parts = _file_parts(buf, f, last=True, check_crc=False, report=ReadReport(), on_error="report", start=0,
                            part_messages=1 << 16, columns=False)   # the checks alone: no columns made
        # the file's last part knows where the walk stopped; each part is dropped as the next comes
        (_, _, end, code, _), = collections.deque(parts, maxlen=1)
    # a file ended by the blank record is full: the broker's write position is its end
    return f.start_offset + f.size if code == STOP_BLANK else end


# ---------------------------------------------------------------- messages


#: Message's fields that are columns of the decode, in Message's order.
_MESSAGE_COLUMNS = ("total_size", "version", "body_crc", "queue_id", "flag", "queue_offset", "phy_offset", "sys_flag",
                    "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
                    "prepared_transaction_offset", "body", "topic")


def _messages(cols: dict, positions: np.ndarray, path: str | None) -> list[Message]:
    """The :class:`Message` of each row of decoded pandas columns (with bodies), the records being
    at `positions` of the file at `path`: the properties parsed from the block as stored."""
    out = []
    values = zip(*(cols[c].tolist() for c in _MESSAGE_COLUMNS), cols["properties"].tolist(), positions.tolist())
    for *fields, props, p in values:
        raw = encode_text(props)   # the block's bytes (text not UTF-8 kept by surrogateescape)
        row = (*fields, parse_properties(raw), raw, p, path)
        out.append(Message(*row))
    return out


def read_message(path_or_buffer: Any, position: int, *, check_crc: bool = False) -> Message:
    """The message record at byte `position` of a file (or any buffer), decoded as
    :func:`read_at` decodes it. Cost: one record, plus the fixed cost of the decode's arrays.

    Raises :class:`FormatError` / :class:`TruncatedFileError` naming path, position and field
    when no valid message starts there (a blank record included).
    """
    if isinstance(path_or_buffer, (str, os.PathLike)):
        with ReadOnlyMap(path_or_buffer) as buf:
            return _read_one(buf, position, path_or_buffer, check_crc)
    return _read_one(path_or_buffer, position, None, check_crc)


def _read_one(buf, position, path, check_crc):
    end = len(buf)
    if not 0 <= position <= end:
        raise ValueError(f"position {position} outside a buffer of {end} bytes")
    stop = check_head(buf, position, end)
    if stop is not None:
        code, fld, reason = stop
        cls = TruncatedFileError if code in (STOP_SHORT, STOP_PAST_END) else FormatError
        if code in (STOP_BLANK, STOP_BLANK_SIZE):
            reason = "a blank (end-of-file) record, not a message: " + reason
            fld = "MAGICCODE"
        raise cls(reason, path=path, offset=position, field=fld)
    P = np.array([position], np.int64)
    cols, problem, _ = _decode_at(np.frombuffer(buf, np.uint8), P, body=True, check_crc=check_crc)
    if problem is not None:
        _, fld, reason = problem
        raise FormatError(reason, path=path, offset=position, field=fld)
    return _messages(cols, P, None if path is None else os.fspath(path))[0]


#: Records a :class:`MessageStream` decodes at a time.
MESSAGE_PART = 4096


class MessageStream:
    """Iterator over the messages of a file or a ``commitlog/`` folder, in offset order: each file
    decoded as :func:`read_columns` decodes it, :data:`MESSAGE_PART` records at a time (read-only
    memory maps), each row made a :class:`Message`. ``report`` (a :class:`ReadReport`) is
    complete once the iteration ends; damage is recorded (or raised) once the messages before it
    have been yielded. Cost: O(records), the decode plus one Message (and its properties dict)
    a record; memory: one part's messages.

    `max_bytes`: read only the messages whose records (TOTALSIZE each; for a DLedger ledger,
    its entries) add up to at most `max_bytes` bytes from the first file's start: whole records
    only, each file mapped no further than the bytes left (a file's end-of-file blank record
    is read, 8 bytes, and not counted). The iteration then stops, and ``report.unread_from``
    is the CommitLog offset of the first record not read (None when nothing was left unread),
    ``report.unread_reason`` what was seen there. Damage inside the bytes read is damage as
    always; what lies past them is not read, so it is never reported. A stop that only the
    bytes past the bound could tell apart from the end of the data (zeros, or a record cut, in
    the last file) is the bound too."""

    def __init__(self, path, *, check_crc: bool = False, on_error: Literal["raise", "report"] = "raise",
                 max_bytes: int | None = None):
        if on_error not in ("raise", "report"):
            raise ValueError(f"on_error must be 'raise' or 'report', got {on_error!r}")
        if max_bytes is not None and max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.path, self.check_crc, self.on_error, self.max_bytes = path, check_crc, on_error, max_bytes
        self.report = ReadReport()

    def __iter__(self) -> Iterator[Message]:
        files = walked_files(self.path)
        rep = self.report
        left = self.max_bytes          # bytes of records still to read (None: no bound)
        for i, f in enumerate(files):
            last = i == len(files) - 1
            path = os.fspath(f.path)
            rep.files.append(path)
            mapped = ReadOnlyMap(f.path, left)
            with mapped as buf:
                # with a bound, `buf` is the file's first `left` bytes: the walk and every check
                # of the stop (zeros after it, a torn record) see no byte past them
                bounded = len(buf) < mapped.size
                if bounded and len(buf) < dledger.BODY_OFFSET:
                    # fewer bytes than any record or DLedger entry takes (and than tell the two
                    # framings apart): nothing of this file can be read
                    rep.unread_from = f.start_offset
                    rep.unread_reason = ("the bound ends there" if not len(buf) else
                                         f"{len(buf)} byte{'s' * (len(buf) != 1)} of the file within the bound, "
                                         f"fewer than any record takes")
                    return
                # damage goes to a report of this file, and on to `rep` after the messages before it
                for cols, lo, end, code, damage in _file_parts(buf, f, last=last, report=ReadReport(),
                                                               on_error="report", start=0,
                                                               part_messages=MESSAGE_PART, check_crc=self.check_crc,
                                                               body=True):
                    total = cols["total_size"].astype(np.int64)
                    for m in _messages(cols, lo + np.cumsum(total) - total, path):
                        rep.messages += 1
                        yield m
                    if end is None:        # not the file's last part
                        continue
                    stop = end - f.start_offset
                    at_blank = code == STOP_BLANK
                    if bounded:
                        damage, reason = _bounded_stop(buf, f, mapped.size, stop, code, damage, last)
                        if reason is not None:
                            rep.unread_from, rep.unread_reason = end, reason
                        at_blank = damage is None and reason is None
                    record_damage(rep, damage, self.on_error)
                    if last and rep.unread_from is None:
                        rep.end_phy_offset = f.start_offset + f.size if at_blank else end
                    if left is not None:
                        left -= stop
            if rep.unread_from is not None:
                return


def _bounded_stop(buf, f: StoreFile, size: int, stop: int, code: int, damage: Damage | None,
                  last: bool) -> tuple[Damage | None, str | None]:
    """What a walk of a file's first bytes (`buf`, a bound short of its `size`) that stopped
    at position `stop` means: (damage, None) when the bytes read show it, (None, why) when the
    record there is not read (it ends past the bound, or the bytes past the bound would tell),
    (None, None) at the file's end-of-file blank."""
    left = len(buf) - stop
    if code in (STOP_END, STOP_SHORT) and left < BLANK.size and _is_end_blank(f, size, stop):
        return None, None              # the end-of-file blank, its head past the bound: not counted
    if code in (STOP_END, STOP_SHORT, STOP_PAST_END):
        if left == 0:
            return None, "the bound ends there"
        if left < BLANK.size:
            return None, f"{left} bytes of its head lie within the bound ({BLANK.size} frame it)"
        return None, (f"it takes {_head_size(buf, f, stop)} bytes, {left} of them within the bound")
    if code in (STOP_BLANK, STOP_BLANK_SIZE):
        if _head_size(buf, f, stop) == size - stop:
            return None, None          # the end-of-file blank: the file is done
        if last:
            return None, "a blank record whose size is not the bytes left (what follows it was not read)"
        return Damage(os.fspath(f.path), stop, f.start_offset + stop, "TOTALSIZE",
                      f"blank record TOTALSIZE {_head_size(buf, f, stop)}, "
                      f"{size - stop} bytes left"), None
    if last and (damage is None or damage.kind == "torn-tail"):
        # the whole file would tell unwritten space or a torn write from damage by the bytes
        # after this record; they are past the bound
        return None, "zeros up to the bound" if not np.frombuffer(buf, np.uint8)[stop:].any() else \
            "the record there does not read whole within the bound"
    return damage, None


def _is_end_blank(f: StoreFile, size: int, p: int) -> bool:
    """Whether the 8-byte head at `p` of the file (read from the file: 8 bytes) is its
    end-of-file blank: the blank's magic, and a size that is the bytes left."""
    if size - p < BLANK.size:
        return False
    with open(present(f.path), "rb") as fh:
        head = os.pread(fh.fileno(), BLANK.size, p)
    if len(head) < BLANK.size:
        return False
    first, second = (int(x) for x in np.frombuffer(head, ">i4", 2))
    if _ledger(f):
        return first == dledger.BLANK_MAGIC and second == size - p
    return second == MAGIC_BLANK and first == size - p


def _ledger(f: StoreFile) -> bool:
    """Whether the file is a DLedger ledger's (its first entry says so: 48 bytes read)."""
    with open(present(f.path), "rb") as fh:
        return dledger.is_ledger_file(os.pread(fh.fileno(), dledger.BODY_OFFSET, 0), f.start_offset)


def _head_size(buf, f: StoreFile, p: int) -> int:
    """The size the 8-byte head at `p` gives: a record's TOTALSIZE, or a DLedger entry's size."""
    first, second = (int(x) for x in np.frombuffer(buf, ">i4", 2, p))
    return second if dledger.is_ledger_file(buf, f.start_offset) else first


def iter_messages(path: str | os.PathLike, *, check_crc: bool = False,
                  on_error: Literal["raise", "report"] = "raise", max_bytes: int | None = None) -> MessageStream:
    """Iterate the messages of one CommitLog file or a ``commitlog/`` folder, in offset order.

    Cost: O(records read).

    >>> import tempfile
    >>> from rmqlab.formats.commitlog.write import CommitLogWriter
    >>> d = tempfile.mkdtemp()
    >>> with CommitLogWriter(d, file_size=4096) as w:
    ...     _ = w.append({"topic": ["T"] * 3, "body": [b"a", b"b", b"c"]})
    >>> s = iter_messages(d, max_bytes=200)
    >>> [m.phy_offset for m in s], s.report.unread_from
    ([0, 93], 186)

    Returns a :class:`MessageStream`; its ``report`` holds damage, the torn tail and the end
    offset after iterating. See the package docstring for what counts as damage. `max_bytes`:
    stop after that many bytes of records, whole records only, reading no further
    (``report.unread_from``: the CommitLog offset of the first record not read).
    """
    return MessageStream(path, check_crc=check_crc, on_error=on_error, max_bytes=max_bytes)
