"""The columnar reader: the one C pass of ``rmqlab._records`` (walk, checks, decode, properties,
text and dictionary codes), into pandas or Arrow columns; the separate passes it replaced stay
as its reference and serve the CRC checks and read_at."""
from __future__ import annotations

import collections
import gc
import os
from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from rmqlab import _records
from rmqlab.formats.commitlog.files import ReadOnlyMap, StoreFile, store_files, walked_files
from rmqlab.formats.commitlog.layout import (
    BLANK,
    BORNHOST_V6_FLAG,
    COLUMNS,
    CRC32_RESERVED_LEN,
    HEAD,
    IPV4_SIZE,
    IPV6_SIZE,
    MAGIC_V1,
    MAGIC_V2,
    MIN_MESSAGE_SIZE,
    PORT,
    PROPERTIES_LEN,
    PROPERTY_CRC32,
    PROPERTY_PROBLEMS,
    STOP_BLANK,
    STOP_LIMIT,
    STORE_TIME,
    STOREHOSTADDRESS_V6_FLAG,
    TAIL,
    WANTED_PROPERTIES,
)
from rmqlab.formats.commitlog.records import (
    Damage,
    ReadReport,
    check_head,
    classify_stop,
    decode_text,
    prop_crc_expected,
    read_message,
    record_damage,
)
from rmqlab.formats.msgid import format_host


def _gather(U: np.ndarray, starts: np.ndarray, width: int, dtype: str) -> np.ndarray:
    """Big-endian integers of `width` bytes at byte positions `starts` (clipped into U)."""
    if len(starts) == 0:
        return np.empty(0, dtype=np.dtype(dtype).newbyteorder("="))
    idx = starts[:, None] + np.arange(width, dtype=np.int64)
    np.clip(idx, 0, len(U) - 1, out=idx)
    return U[idx].view(dtype).reshape(-1).astype(np.dtype(dtype).newbyteorder("="))


def _spans_bytes(U, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate byte spans of U: (data uint8, offsets int64[n+1])."""
    lengths = lengths.astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    if len(lengths):
        _records.copy_spans(data, np.ascontiguousarray(offsets[:-1]), U,
                            np.ascontiguousarray(starts, np.int64), lengths)
    return data, offsets


def _text_column(data: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None = None,
                 binary: bool = False, dictionary: bool = False) -> np.ndarray:
    """Object array of str (or bytes) from concatenated spans, None where not `valid`."""
    import pyarrow as pa

    n = len(offsets) - 1
    bitmap = None
    null_count = 0
    if valid is not None:
        null_count = int(n - np.count_nonzero(valid))
        if null_count:
            bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    typ = pa.large_binary() if binary else pa.large_string()
    arr = pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)], null_count)
    if not binary:
        try:
            arr.validate(full=True)
        except pa.ArrowInvalid:   # invalid UTF-8: decode as the pure-Python model does
            raw = pa.Array.from_buffers(pa.large_binary(), n, [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)],
                                        null_count).to_pylist()
            return np.array([None if r is None else decode_text(r) for r in raw], dtype=object)
    if dictionary:   # few distinct values (topics, tags): one Python object per distinct value
        enc = arr.dictionary_encode()
        values = enc.dictionary.to_numpy(zero_copy_only=False)
        idx = enc.indices.to_numpy(zero_copy_only=False)
        if enc.null_count:
            out = np.empty(n, dtype=object)
            ok = ~np.isnan(idx)
            out[ok] = values[idx[ok].astype(np.int64)]
            return out
        return values[idx]
    return arr.to_numpy(zero_copy_only=False)


def _format_hosts(ip: np.ndarray, port: np.ndarray) -> np.ndarray:
    """(n, 4|16) address bytes + ports -> "ip:port" strings; formats each distinct host once."""
    n = len(port)
    if n == 0:
        return np.empty(0, dtype=object)
    key = np.hstack([ip, port.astype(">i4").view(np.uint8).reshape(n, 4)])
    key = np.ascontiguousarray(key).view(f"V{key.shape[1]}").reshape(n)
    w = ip.shape[1]
    if w == IPV4_SIZE:   # hash-based factorize of one uint64 per row: O(n), no sort
        import pandas as pd

        ip32 = np.ascontiguousarray(ip).view(">u4").reshape(n).astype(np.uint64)
        k64 = (ip32 << np.uint64(32)) | (port.astype(np.int64) & 0xFFFFFFFF).astype(np.uint64)
        inv, uk = pd.factorize(k64)
        texts = np.array([format_host((int(u) >> 32).to_bytes(4, "big"),
                                      (int(u) & 0xFFFFFFFF) - ((int(u) & 0x80000000) << 1))
                          for u in uk], dtype=object)
        return texts[inv]
    uniq, inv = np.unique(key, return_inverse=True)
    texts = np.array([format_host(u.tobytes()[:w], int.from_bytes(u.tobytes()[w:], "big", signed=True))
                      for u in uniq], dtype=object)
    return texts[inv.reshape(-1)]


def _check_fields(U, P, total, magic, sys_flag):
    """Vectorized field checks of records at positions P: (first bad row or -1, field, reason)
    plus the per-row spans. Same checks, same order as _parse_record."""
    n = len(P)
    version = np.where(magic == MAGIC_V1, 1, 2)
    bw = np.where(sys_flag & BORNHOST_V6_FLAG, IPV6_SIZE, IPV4_SIZE)
    sw = np.where(sys_flag & STOREHOSTADDRESS_V6_FLAG, IPV6_SIZE, IPV4_SIZE)
    tlw = version  # 1 or 2 bytes
    o_st = HEAD.size + bw + PORT.size
    o_sh = o_st + STORE_TIME.size
    o_tail = o_sh + sw + PORT.size
    o_body = o_tail + TAIL.size
    end = total
    fixed_bad = o_body + tlw + PROPERTIES_LEN.size > end
    body_len = _gather(U, P + o_tail + TAIL.offset("body_len"), 4, ">i4").astype(np.int64)
    body_bad = (body_len < 0) | (o_body + body_len + tlw + PROPERTIES_LEN.size > end)
    o_tl = o_body + body_len
    tl1 = _gather(U, P + o_tl, 1, ">i1").astype(np.int64)
    tl2 = _gather(U, P + o_tl, 2, ">i2").astype(np.int64)
    topic_len = np.where(version == 1, tl1, tl2)
    o_topic = o_tl + tlw
    topic_bad = (topic_len < 0) | (o_topic + topic_len + PROPERTIES_LEN.size > end)
    o_pl = o_topic + topic_len
    plen = _gather(U, P + o_pl, 2, ">i2").astype(np.int64)
    o_props = o_pl + PROPERTIES_LEN.size
    plen_bad = (plen < 0) | (o_props + plen > end)
    size_bad = o_props + plen != end
    checks = [(fixed_bad, "TOTALSIZE", lambda r: f"TOTALSIZE {total[r]} is smaller than the fixed fields "
                                                 f"of this record (SYSFLAG 0x{sys_flag[r] & 0xFFFFFFFF:X}, "
                                                 f"v{version[r]})"),
              (body_bad, "BODYLEN", lambda r: f"BODYLEN {body_len[r]} disagrees with TOTALSIZE {total[r]}"),
              (topic_bad, "TOPICLEN", lambda r: f"TOPICLEN {topic_len[r]} disagrees with TOTALSIZE {total[r]}"),
              (plen_bad, "PROPERTIESLENGTH",
               lambda r: f"PROPERTIESLENGTH {plen[r]} disagrees with TOTALSIZE {total[r]}"),
              (size_bad, "TOTALSIZE", lambda r: f"TOTALSIZE {total[r]} but the fields end after "
                                                f"{o_props[r] + plen[r]} bytes")]
    bad_row, bad_field, bad_reason = -1, "", ""
    acc = np.zeros(n, bool)
    first: dict[int, tuple[str, Callable[[int], str]]] = {}
    for mask, fld, why in checks:
        m = mask & ~acc
        if m.any():
            first[int(np.argmax(m))] = first.get(int(np.argmax(m)), (fld, why))
        acc |= mask
    if first:
        bad_row = min(first)
        bad_field, why = first[bad_row]
        bad_reason = why(bad_row)
    spans = dict(version=version, bw=bw, sw=sw, o_st=o_st, o_sh=o_sh, o_tail=o_tail, o_body=o_body,
                 body_len=body_len, o_topic=o_topic, topic_len=topic_len, o_props=o_props, plen=plen)
    return bad_row, bad_field, bad_reason, spans


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


def prop_crc_states(U: np.ndarray, P: np.ndarray, total: np.ndarray, version: np.ndarray,
                    sys_flag: np.ndarray) -> np.ndarray:
    """For message records at positions P of a file's bytes U (checked by the walk and the field
    checks): -1 without a ``__CRC32#`` property, 0 when its CRC does not match, 1 when it does
    (int8), as ``CommitLog.checkMessageAndReturnSize`` checks it with forceVerifyPropCRC.
    Cost: one property scan and one CRC32 of each record that has the property."""
    P = np.asarray(P, np.int64)
    total = np.asarray(total, np.int64)
    magic = np.where(np.asarray(version) == 1, MAGIC_V1, MAGIC_V2)
    _, _, _, s = _check_fields(U, P, total, magic, np.asarray(sys_flag, np.int64))
    vs = np.empty(len(P), np.int64)
    vl = np.empty(len(P), np.int64)
    if len(P):
        _records.find_props(U, np.ascontiguousarray(P + s["o_props"]), np.ascontiguousarray(s["plen"]),
                            (PROPERTY_CRC32.encode(),), vs, vl)
    return _prop_crc_from_values(U, P, total, vs, vl)



def _property_damage(path, file_start: int, position: int, block_start: int, at: int, problem: int) -> Damage:
    """The Damage of an unparseable PROPERTIES block (find_props' `problem` at byte `at`)."""
    return Damage(path, position, file_start + position, "PROPERTIES",
                  f"unparseable property block: {PROPERTY_PROBLEMS[problem]} at byte {at} of the block "
                  f"(file position {block_start + at})")

def _body_crc_check(U, path, file_start: int, P: np.ndarray, bst: np.ndarray, bln: np.ndarray, stored: np.ndarray,
                    limit: int, dmg: Damage | None) -> tuple[Damage | None, int]:
    """The first of `limit` records whose BODYCRC is not CRC32(body) & 0x7FFFFFFF (an empty body
    is not checked): its Damage and position as the new limit, else (dmg, limit) unchanged."""
    crc = np.empty(limit, np.uint32)
    _records.crc32_spans(U, bst, bln, crc)
    good = (bln == 0) | ((crc & 0x7FFFFFFF).astype(np.int64) == stored[:limit].astype(np.int64))
    if good.all():
        return dmg, limit
    r = int(np.argmin(good))
    return (Damage(path, int(P[r]), file_start + int(P[r]), "BODYCRC",
                   f"BODYCRC {int(stored[r])} but CRC32(body) & 0x7FFFFFFF = {int(crc[r]) & 0x7FFFFFFF}"), r)


def _decode_positions_numpy(U, P: np.ndarray, f: StoreFile, *, body: bool, check_crc: bool,
                            arrow: bool = False):
    """:func:`_decode_positions` by NumPy gathers alone (one index array per field and row): the
    reader before ``_records.decode_records``, kept as the reference the tests and
    benchmarks/bench_commitlog.py compare the C pass with."""
    if arrow:
        raise ValueError("the NumPy reference decodes to pandas object columns only")
    path = os.fspath(f.path)
    n = len(P)
    H = U[(P[:, None] + np.arange(HEAD.size, dtype=np.int64))].view(HEAD.dtype).reshape(n) if n else \
        np.empty(0, HEAD.dtype)
    total = H["total_size"].astype(np.int64)
    sys_flag = H["sys_flag"].astype(np.int64)
    bad_row, bad_field, bad_reason, s = _check_fields(U, P, total, H["magic"].astype(np.int64), sys_flag)
    limit = n if bad_row < 0 else bad_row
    dmg = None if bad_row < 0 else \
        Damage(path, int(P[bad_row]), f.start_offset + int(P[bad_row]), bad_field, bad_reason)
    # properties: check the blocks and find the wanted values (stops at the first bad block)
    wanted = WANTED_PROPERTIES + ((PROPERTY_CRC32.encode(),) if check_crc else ())
    k = len(wanted)
    vs = np.empty(limit * k, np.int64)
    vl = np.empty(limit * k, np.int64)
    pst = np.ascontiguousarray((P + s["o_props"])[:limit])
    pln = np.ascontiguousarray(s["plen"][:limit])
    res = _records.find_props(U, pst, pln, wanted, vs, vl) if limit else None
    if res is not None:
        row, at, problem = res
        dmg = _property_damage(path, f.start_offset, int(P[row]), int(pst[row]), at, problem)
        limit = row
    if check_crc or body:
        bst = np.ascontiguousarray((P + s["o_body"])[:limit])
        bln = np.ascontiguousarray(s["body_len"][:limit])
    if check_crc and limit:
        dmg, limit = _body_crc_check(U, path, f.start_offset, P, bst, bln, H["body_crc"], limit, dmg)
    P, H = P[:limit], H[:limit]
    s = {key: (v[:limit] if isinstance(v, np.ndarray) else v) for key, v in s.items()}
    vs, vl = vs.reshape(-1, k)[:limit], vl.reshape(-1, k)[:limit]
    cols: dict[str, Any] = {}
    cols["topic"] = _text_column(*_spans_bytes(U, P + s["o_topic"], s["topic_len"]), dictionary=True)
    for name in ("queue_id", "flag", "queue_offset", "phy_offset", "sys_flag", "born_timestamp"):
        cols[name] = H[name].astype(H.dtype[name].newbyteorder("="))

    def host(o_ip, width_arr, v6_flag):
        out = np.empty(limit, dtype=object)
        for w in (IPV4_SIZE, IPV6_SIZE):
            rows = np.flatnonzero(width_arr == w)
            if len(rows):
                st = P[rows] + o_ip[rows] if isinstance(o_ip, np.ndarray) else P[rows] + o_ip
                ip = U[st[:, None] + np.arange(w, dtype=np.int64)]
                port = _gather(U, st + w, 4, ">i4")
                out[rows] = _format_hosts(ip, port)
        return out

    cols["born_host"] = host(HEAD.size, s["bw"], BORNHOST_V6_FLAG)
    cols["store_timestamp"] = _gather(U, P + s["o_st"], 8, ">i8")
    cols["store_host"] = host(s["o_sh"], s["sw"], STOREHOSTADDRESS_V6_FLAG)
    cols["reconsume_times"] = _gather(U, P + s["o_tail"], 4, ">i4")
    cols["prepared_transaction_offset"] = _gather(
        U, P + s["o_tail"] + TAIL.offset("prepared_transaction_offset"), 8, ">i8")
    if body:
        cols["body"] = _text_column(*_spans_bytes(U, P + s["o_body"], s["body_len"]), binary=True)
    cols["properties"] = _text_column(*_spans_bytes(U, P + s["o_props"], s["plen"]))
    for j, name in enumerate(("keys", "uniq_key", "tags")):
        valid = vs[:, j] >= 0
        cols[name] = _text_column(*_spans_bytes(U, np.where(valid, vs[:, j], 0), np.where(valid, vl[:, j], 0)),
                                  valid=valid, dictionary=name == "tags")
    dvalid = vs[:, 3] >= 0
    delay = np.zeros(limit, np.int32)
    if dvalid.any():
        import pandas as pd

        txt = _text_column(*_spans_bytes(U, vs[dvalid, 3], vl[dvalid, 3]))
        delay[dvalid] = pd.to_numeric(pd.Series(txt, dtype=object), errors="coerce").fillna(0) \
            .clip(-2**31, 2**31 - 1).astype(np.int32).to_numpy()
    cols["delay_level"] = delay
    cols["total_size"] = H["total_size"].astype(np.int32)
    cols["version"] = s["version"].astype(np.int8)
    cols["body_crc"] = H["body_crc"].astype(np.int32)
    if check_crc:
        cols["crc_ok"] = np.ones(limit, bool)
        state = _prop_crc_from_values(U, P, H["total_size"].astype(np.int64), vs[:, 4], vl[:, 4])
        cols["prop_crc_ok"] = np.array([None, False, True], dtype=object)[state + 1]
    return cols, dmg, P


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


def _object_column(U, starts: np.ndarray, lengths: np.ndarray, as_bytes: bool = False) -> np.ndarray:
    """Object array of the bytes (or str) at each span of U; None where the start is negative."""
    out = np.empty(len(starts), dtype=object)
    if len(starts):   # written into the array: no list of millions of objects to copy over
        _records.span_objects(U, np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(lengths, np.int64),
                              as_bytes, out)
    return out


def _arrow_text(U, starts: np.ndarray, lengths: np.ndarray, binary: bool = False, dictionary: bool = False,
                column: int = 0):
    """pyarrow large_string (large_binary if `binary`, or if the bytes are not UTF-8) array of
    the spans, null where the start is negative; dictionary-encoded if `dictionary`. 2-D
    starts and lengths (find_props' rows) give the spans of their `column`."""
    import pyarrow as pa

    n, width = (starts.shape[0], starts.shape[1]) if starts.ndim == 2 else (len(starts), 1)
    offsets = np.empty(n + 1, np.int64)
    data, ascii_only = _records.gather_spans(U, np.ascontiguousarray(starts, np.int64),
                                             np.ascontiguousarray(lengths, np.int64), offsets, width, column)
    valid = (starts[:, column] if starts.ndim == 2 else starts) >= 0
    null_count = int(n - np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
    buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(data)]
    arr = pa.Array.from_buffers(pa.large_binary(), n, buffers, null_count)
    if not binary:
        text = pa.Array.from_buffers(pa.large_string(), n, buffers, null_count)
        try:
            if not ascii_only:
                text.validate(full=True)
            arr = text
        except pa.ArrowInvalid:   # not UTF-8: keep the bytes rather than guess an encoding
            pass
    return arr.dictionary_encode() if dictionary else arr


#: At most this many rows take the few-rows path of the decode (a broker answer is at most 64
#: offsets): Python objects made one by one, where Arrow arrays and hash tables cost more to
#: set up than they save.
FEW_ROWS = 64


def _first_seen_codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(code of each value, distinct values in first-seen order), as ``pd.factorize`` gives
    them; a dict for a few rows, whose set-up costs less than pandas'."""
    if len(values) > FEW_ROWS:
        import pandas as pd

        return pd.factorize(values)
    seen: dict[Any, int] = {}
    codes = np.array([seen.setdefault(v, len(seen)) for v in values.tolist()], np.int64)
    return codes, np.array(list(seen), dtype=values.dtype)


def _host_codes(U, key: np.ndarray, at: np.ndarray, v6: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes int32, texts) of a host column: row i is ``texts[codes[i]]``; each distinct
    "ip:port" is formatted once. IPv4 hosts come as decode_records' keys, IPv6 hosts are read
    at their positions `at`."""
    n = len(key)
    codes = np.empty(n, np.int32)
    texts: list[str] = []
    v4_rows = np.flatnonzero(~v6) if v6.any() else None
    k4 = key if v4_rows is None else key[v4_rows]
    if len(k4):
        inv, uk = _first_seen_codes(k4)
        texts = [format_host((int(u) >> 32).to_bytes(4, "big"), (int(u) & 0xFFFFFFFF) - ((int(u) & 0x80000000) << 1))
                 for u in uk]
        if v4_rows is None:
            codes[:] = inv
        else:
            codes[v4_rows] = inv
    if v4_rows is not None:
        rows = np.flatnonzero(v6)
        st = at[rows]
        ip = U[st[:, None] + np.arange(IPV6_SIZE, dtype=np.int64)]
        port = _gather(U, st + IPV6_SIZE, 4, ">i4")
        hkey = np.ascontiguousarray(np.hstack([ip, port.astype(">i4").view(np.uint8).reshape(-1, 4)]))
        uniq, inv6 = np.unique(hkey.view(f"V{hkey.shape[1]}").reshape(-1), return_inverse=True)
        codes[rows] = len(texts) + inv6.reshape(-1)
        texts += [format_host(u.tobytes()[:IPV6_SIZE], int.from_bytes(u.tobytes()[IPV6_SIZE:], "big", signed=True))
                  for u in uniq]
    return codes, np.array(texts, dtype=object)


def _decode_positions(U, P: np.ndarray, f: StoreFile, *, body: bool, check_crc: bool, arrow: bool = False):
    """Decode the message records at positions P (heads already checked) of one mapped file:
    one C pass (``_records.decode_records``) for the fixed fields and the spans, then the
    property scan and the columns. Returns (columns dict of the good prefix, Damage or None for
    the first bad record, positions of the good prefix); with `arrow`, pyarrow arrays."""
    path = os.fspath(f.path)
    n = len(P)
    P = np.ascontiguousarray(P, np.int64)
    d = {name: np.empty(n, dtype) for name, dtype in _DECODED}
    bad_row = _records.decode_records(U, P, tuple(d.values())) if n else -1
    limit = n if bad_row < 0 else bad_row
    dmg = None
    if bad_row >= 0:   # the reason, worded as the NumPy checks word it, from this one record
        p = int(P[bad_row])
        H1 = U[p:p + HEAD.size].view(HEAD.dtype)
        _, field, reason, _ = _check_fields(U, P[bad_row:bad_row + 1], H1["total_size"].astype(np.int64),
                                            H1["magic"].astype(np.int64), H1["sys_flag"].astype(np.int64))
        dmg = Damage(path, p, f.start_offset + p, field, reason)
    d = {name: v[:limit] for name, v in d.items()}
    wanted = WANTED_PROPERTIES + ((PROPERTY_CRC32.encode(),) if check_crc else ())
    k = len(wanted)
    vs = np.empty(limit * k, np.int64)
    vl = np.empty(limit * k, np.int64)
    pst, pln = d["properties_start"], d["properties_len"]
    res = _records.find_props(U, pst, pln, wanted, vs, vl) if limit else None
    if res is not None:
        row, at, problem = res
        dmg = _property_damage(path, f.start_offset, int(P[row]), int(pst[row]), at, problem)
        limit = row
    if check_crc and limit:
        dmg, limit = _body_crc_check(U, path, f.start_offset, P, d["body_start"][:limit], d["body_len"][:limit],
                                     d["body_crc"], limit, dmg)
    P = P[:limit]
    d = {name: v[:limit] for name, v in d.items()}
    vs, vl = vs.reshape(-1, k)[:limit], vl.reshape(-1, k)[:limit]
    props = {name: (vs[:, j], vl[:, j]) for j, name in enumerate(("keys", "uniq_key", "tags", "delay"))}
    sys_flag = d["sys_flag"]
    hosts = {name: _host_codes(U, d[f"{name}_key"], d[f"{name}_at"], (sys_flag & flag) != 0)
             for name, flag in (("born_host", BORNHOST_V6_FLAG), ("store_host", STOREHOSTADDRESS_V6_FLAG))}
    delay = np.zeros(limit, np.int32)
    dvalid = props["delay"][0] >= 0
    if dvalid.any():
        import pandas as pd

        txt = _object_column(U, props["delay"][0][dvalid], props["delay"][1][dvalid])
        delay[dvalid] = pd.to_numeric(pd.Series(txt, dtype=object), errors="coerce").fillna(0) \
            .clip(-2**31, 2**31 - 1).astype(np.int32).to_numpy()
    prop_state = _prop_crc_from_values(U, P, d["total_size"].astype(np.int64), vs[:, 4], vl[:, 4]) \
        if check_crc else None
    cols: dict[str, Any] = {name: d[name] for name in _FIXED_COLUMNS}
    cols["delay_level"] = delay
    if check_crc:
        cols["crc_ok"] = np.ones(limit, bool)
    if arrow:
        import pyarrow as pa

        cols = {name: pa.array(v) for name, v in cols.items()}
        cols["topic"] = _arrow_text(U, d["topic_start"], d["topic_len"], dictionary=True)
        for name, (codes, texts) in hosts.items():
            cols[name] = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(texts, pa.large_string()))
        if body:
            cols["body"] = _arrow_text(U, d["body_start"], d["body_len"], binary=True)
        cols["properties"] = _arrow_text(U, d["properties_start"], d["properties_len"])
        for j, name in enumerate(("keys", "uniq_key", "tags")):
            cols[name] = _arrow_text(U, vs, vl, dictionary=name == "tags", column=j)
        if prop_state is not None:
            cols["prop_crc_ok"] = pa.array(prop_state == PROP_CRC_MATCH, mask=prop_state == PROP_CRC_ABSENT)
        return cols, dmg, P
    few = limit <= FEW_ROWS
    cols["topic"] = _object_column(U, d["topic_start"], d["topic_len"]) if few else \
        _text_column(*_spans_bytes(U, d["topic_start"], d["topic_len"]), dictionary=True)
    for name, (codes, texts) in hosts.items():
        cols[name] = texts[codes] if len(texts) else np.empty(limit, dtype=object)
    if body:
        cols["body"] = _object_column(U, d["body_start"], d["body_len"], as_bytes=True)
    cols["properties"] = _object_column(U, d["properties_start"], d["properties_len"])
    cols["keys"] = _object_column(U, *props["keys"])
    cols["uniq_key"] = _object_column(U, *props["uniq_key"])
    st, ln = props["tags"]
    valid = st >= 0
    cols["tags"] = _object_column(U, st, ln) if few else \
        _text_column(*_spans_bytes(U, np.where(valid, st, 0), np.where(valid, ln, 0)), valid=valid, dictionary=True)
    if prop_state is not None:
        cols["prop_crc_ok"] = np.array([None, False, True], dtype=object)[prop_state + 1]
    return cols, dmg, P


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
_BAD_FIELDS, _BAD_PROPERTIES = 1, 2


def _shrunk(a: np.ndarray, n: int) -> np.ndarray:
    """`a` cut to its first `n` entries in place (realloc: the memory past them goes back), so an
    output sized for the most records a file could hold keeps only what was written."""
    if n < len(a):
        a.resize(n, refcheck=False)   # fresh arrays, no view of them exists yet
    return a


def _valid_rows(bitmap: np.ndarray, n: int) -> np.ndarray:
    return np.unpackbits(bitmap, count=n, bitorder="little").view(bool)


def _host_texts(keys: np.ndarray) -> list[str]:
    """The "ip:port" text of each packed IPv4 host key (address << 32 | port as uint32)."""
    return [format_host((int(u) >> 32).to_bytes(4, "big"), (int(u) & 0xFFFFFFFF) - ((int(u) & 0x80000000) << 1))
            for u in keys]


def _v6_host_codes(U, at: np.ndarray, first_code: int) -> tuple[np.ndarray, list[str]]:
    """Codes (from `first_code` on, in the order of their bytes) and texts of the IPv6 hosts whose
    address starts at each position of `at`."""
    ip = U[at[:, None] + np.arange(IPV6_SIZE, dtype=np.int64)]
    port = _gather(U, at + IPV6_SIZE, 4, ">i4")
    hkey = np.ascontiguousarray(np.hstack([ip, port.astype(">i4").view(np.uint8).reshape(-1, 4)]))
    uniq, inv6 = np.unique(hkey.view(f"V{hkey.shape[1]}").reshape(-1), return_inverse=True)
    texts = [format_host(u.tobytes()[:IPV6_SIZE], int.from_bytes(u.tobytes()[IPV6_SIZE:], "big", signed=True))
             for u in uniq]
    return first_code + inv6.reshape(-1), texts


def _dictionary_values(U, spans: bytes, binary: bool = False):
    """A pyarrow large_string array (large_binary when not UTF-8) of the values at (start, length)
    pairs of U, as walk_decode lists each dictionary value's first occurrence."""

    pairs = np.frombuffer(spans, np.int64).reshape(-1, 2)
    offsets = np.empty(len(pairs) + 1, np.int64)
    data, ascii_only = _records.gather_spans(U, np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]),
                                             offsets)
    return _text_array(len(pairs), None, 0, offsets, data, binary=binary, ascii_only=ascii_only)


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


def _walk_decode(buf, f: StoreFile, *, start: int, body: bool, arrow: bool):
    """Walk, check and decode the records of one mapped file from byte `start` in one C pass
    (``_records.walk_decode``): the columns of :func:`_decode_positions` (without the CRC checks)
    and its Damage, plus the walk's stop position and code."""
    import pyarrow as pa

    path = os.fspath(f.path)
    U = np.frombuffer(buf, np.uint8) if len(buf) else np.empty(0, np.uint8)
    span = len(buf) - start
    cap = span // MIN_MESSAGE_SIZE + 1
    rows = {name: np.empty(cap, dtype) for name, dtype in _WALKED}
    bitmaps = {name: np.empty((cap + 7) // 8, np.uint8) for name in _WALKED_BITMAPS}
    text = {name: (np.empty(cap + 1 if body or name != "body" else 1, np.int64),
                   np.empty(span + _TEXT_SLACK if body or name != "body" else _TEXT_SLACK, np.uint8))
            for name in _WALKED_TEXT}
    outputs = (*rows.values(), *bitmaps.values(), *(a for pair in text.values() for a in pair))
    (n, stop_pos, code, bad_kind, bad_pos, bad_block, bad_at, problem, topic_spans, tags_spans, born_keys,
     store_keys, v6_rows, delay_rows, high, nulls) = _records.walk_decode(buf, start, body, WANTED_PROPERTIES,
                                                                          outputs)
    del outputs
    d = {name: _shrunk(a, n) for name, a in rows.items()}
    valid = {name: _shrunk(a, (n + 7) // 8) for name, a in bitmaps.items()}
    for name, (offsets, data) in text.items():
        if body or name != "body":
            _shrunk(offsets, n + 1)
            _shrunk(data, int(offsets[n]))
    null_count = dict(zip(_WALKED_BITMAPS, nulls))
    dmg = None
    if bad_kind == _BAD_FIELDS:   # the reason, worded as the NumPy checks word it, from this one record
        H1 = U[bad_pos:bad_pos + HEAD.size].view(HEAD.dtype)
        _, field, reason, _ = _check_fields(U, np.array([bad_pos], np.int64), H1["total_size"].astype(np.int64),
                                            H1["magic"].astype(np.int64), H1["sys_flag"].astype(np.int64))
        dmg = Damage(path, bad_pos, f.start_offset + bad_pos, field, reason)
    elif bad_kind == _BAD_PROPERTIES:
        dmg = _property_damage(path, f.start_offset, bad_pos, bad_block, bad_at, problem)
    # hosts: IPv4 codes come from the pass, IPv6 ones (rare) are numbered after them here
    hosts = {}
    v6 = np.frombuffer(v6_rows, np.int64).reshape(-1, 2)
    sys_flag = d["sys_flag"]
    for name, keys, flag in (("born_host", born_keys, BORNHOST_V6_FLAG),
                             ("store_host", store_keys, STOREHOSTADDRESS_V6_FLAG)):
        codes, texts = d[f"{name}_code"], _host_texts(np.frombuffer(keys, np.uint64))
        if len(v6):
            r, pos = v6[:, 0], v6[:, 1]
            wide = (sys_flag[r] & flag) != 0
            r, pos = r[wide], pos[wide]
            if len(r):
                born_w = np.where(sys_flag[r] & BORNHOST_V6_FLAG, IPV6_SIZE, IPV4_SIZE)
                at = pos + HEAD.size if name == "born_host" else \
                    pos + HEAD.size + born_w + PORT.size + STORE_TIME.size
                codes[r], more = _v6_host_codes(U, at, len(texts))
                texts += more
        hosts[name] = (codes, np.array(texts, dtype=object))
    delay = d["delay_level"]
    if len(delay_rows):
        import pandas as pd

        r, st, ln = np.frombuffer(delay_rows, np.int64).reshape(-1, 3).T
        txt = _object_column(U, st, ln)
        delay[r] = pd.to_numeric(pd.Series(txt, dtype=object), errors="coerce").fillna(0) \
            .clip(-2**31, 2**31 - 1).astype(np.int32).to_numpy()
    cols: dict[str, Any] = {name: d[name] for name in _FIXED_COLUMNS}
    cols["delay_level"] = delay
    topics = _dictionary_values(U, topic_spans)
    tags = _dictionary_values(U, tags_spans)
    if arrow:
        cols = {name: pa.array(v) for name, v in cols.items()}
        cols["topic"] = pa.DictionaryArray.from_arrays(pa.array(d["topic_code"]), topics)
        for name, (host_codes, host_texts) in hosts.items():
            cols[name] = pa.DictionaryArray.from_arrays(pa.array(host_codes), pa.array(host_texts, pa.large_string()))
        for name in ("properties", "keys", "uniq_key") + (("body",) if body else ()):
            offsets, data = text[name]
            nulls_here = null_count.get(name, 0)
            non_ascii = name != "body" and bool(high & (1 << ("properties", "keys", "uniq_key").index(name)))
            cols[name] = _text_array(n, valid.get(name), nulls_here, offsets, data, binary=name == "body",
                                     ascii_only=not non_ascii)
        tag_codes = pa.Array.from_buffers(pa.int32(), n, [pa.py_buffer(valid["tags"]) if null_count["tags"] else None,
                                                          pa.py_buffer(d["tags_code"])], null_count["tags"])
        cols["tags"] = pa.DictionaryArray.from_arrays(tag_codes, tags)
        return cols, dmg, stop_pos, code
    cols["topic"] = _python_values(topics)[d["topic_code"]]
    for name, (host_codes, host_texts) in hosts.items():
        cols[name] = host_texts[host_codes] if len(host_texts) else np.empty(n, dtype=object)
    for name in ("properties", "keys", "uniq_key") + (("body",) if body else ()):
        offsets, data = text[name]
        starts = offsets[:-1]
        if null_count.get(name, 0):
            starts = np.where(_valid_rows(valid[name], n), starts, -1)
        cols[name] = _object_column(data, starts, np.diff(offsets), as_bytes=name == "body")
    tag_values = _python_values(tags)[d["tags_code"]] if len(tags) else np.full(n, None, dtype=object)
    if null_count["tags"] and len(tags):
        tag_values[~_valid_rows(valid["tags"], n)] = None
    cols["tags"] = tag_values
    return cols, dmg, stop_pos, code


def _python_values(arr) -> np.ndarray:
    """A dictionary's values as an object array of str (bytes not UTF-8 decoded as decode_text does)."""
    import pyarrow as pa

    if pa.types.is_large_binary(arr.type):
        return np.array([decode_text(v) for v in arr.to_pylist()], dtype=object)
    return np.array(arr.to_pylist(), dtype=object)


def scan_file(buf, f: StoreFile, *, last: bool, check_crc: bool, report: ReadReport, on_error: str,
               body: bool = False, start: int = 0, arrow: bool = False, decode=None):
    """Walk one mapped file in C from byte `start` (a record boundary), check and decode its
    records (with `arrow`, into pyarrow arrays): in one pass (:func:`_walk_decode`) unless
    `check_crc` or a `decode` of positions is given (:func:`_decode_positions`, or the NumPy
    reference). Returns (columns, end phy offset, stop code, damage)."""
    if decode is None and not check_crc:
        cols, dmg, stop_pos, code = _walk_decode(buf, f, start=start, body=body, arrow=arrow)
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


def chunked_decode(reduce: Callable[[dict, np.ndarray, int], dict], rows: int):
    """A `decode` for :func:`scan_file` that decodes the walked records `rows` at a time
    (:func:`_decode_positions`, the reference the one pass is tested against) and keeps of each
    chunk only what ``reduce(columns, positions, first row)`` makes of it: a dict of NumPy
    arrays, joined over the chunks. A file's text columns then never exist whole: memory is
    `rows` messages' strings plus what `reduce` keeps. Cost: the walk and decode of the file
    (C and NumPy) plus `reduce`, O(records).

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
            cols, dmg, at = _decode_positions(U, P[lo:lo + rows], f, body=body, check_crc=check_crc, arrow=arrow)
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
                 on_error: Literal["raise", "report"] = "raise", start_offset: int = 0, arrow: bool = False):
    """Every message of a CommitLog file or ``commitlog/`` folder as a pandas DataFrame, one row a
    message in offset order, columns :data:`COLUMNS` (``crc_ok`` and ``prop_crc_ok`` added when
    `check_crc`; ``body`` left out when `body` is False). ``prop_crc_ok`` is None for a record
    without a ``__CRC32#`` property (5.2+ brokers with enabledAppendPropCRC write one), else
    whether it matches the record (:func:`rmqlab.formats.commitlog.records.prop_crc_expected`);
    a mismatch is shown, not treated as damage (``rmqlab verify`` reports it).

    Built on ``rmqlab._records.walk_decode``: one C pass per file walks the TOTALSIZE chain,
    checks and decodes every record, scans its properties, copies the text into Arrow's layout
    and numbers topics, tags and hosts as dictionary codes (no Python loop per message); with
    `check_crc`, the separate walk, decode and CRC passes it replaced. The :class:`ReadReport`
    (damage, torn tail, end offset) is ``df.attrs["report"]``. Cost (benchmarks/
    bench_commitlog.py, a full 1 GiB file of 3.44 M messages from the page cache, AMD EPYC with
    2 cores shared with other jobs at load 5 to 27, so measured by this process's CPU time):
    with `arrow`, 0.34-1.0 s of CPU a GiB without bodies (1.1-3.1 GB/s, up to 10 M messages/s)
    and 0.44-2.2 s with them (0.5-2.5 GB/s), the spread being the other jobs and the kernel's
    clearing of fresh output pages (a NumPy sum over the same map took 0.04-0.17 s in the same
    runs); into pandas object columns 1.2-2.0 s a GiB without bodies (0.5-0.9 GB/s), where
    one Python str/bytes a text value dominates.
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
    """
    return _read_columns(path_or_dir, body=body, check_crc=check_crc, on_error=on_error, start_offset=start_offset,
                         arrow=arrow)


def _read_columns(path_or_dir, *, body: bool = True, check_crc: bool = False, on_error: str = "raise",
                  start_offset: int = 0, arrow: bool = False, decode=None):
    """:func:`read_columns`, decoding each file with `decode` (:func:`_decode_positions` unless
    given; tests and the benchmark pass :func:`_decode_positions_numpy`)."""
    files = _files_from(path_or_dir, on_error, start_offset)
    report = ReadReport()
    gc_was = gc.isenabled()
    gc.disable()   # millions of new str/bytes objects, no cycles: skip the collector's passes
    try:
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
        report.files.append(os.fspath(f.path))
        last = i == len(files) - 1
        with ReadOnlyMap(f.path) as buf:
            start = min(max(start_offset - f.start_offset, 0), len(buf))
            for cols, end, code in _file_parts(buf, f, last=last, check_crc=check_crc, report=report,
                                               on_error=on_error, body=body, start=start, arrow=arrow,
                                               decode=decode, part_messages=part_messages):
                report.messages += len(cols["topic"])
                if last and end is not None:
                    report.end_phy_offset = f.start_offset + f.size if code == STOP_BLANK else end
                if len(cols["topic"]):
                    yield cols


def _file_parts(buf, f: StoreFile, *, last: bool, report: ReadReport, on_error: str, start: int,
                part_messages: int | None, **scan):
    """:func:`scan_file` of one file in parts of at most `part_messages` records (all at once when
    None): (columns, end phy offset, stop code) each, the end None but for the file's last part.
    A header walk (``_records.walk``, TOTALSIZE only) finds where each part's records end; the
    part is then decoded from a view that ends there, so the decode stops clean at that boundary.
    The file's last part, and a part whose decode finds damage, are decoded from the whole map
    as one pass over the file decodes them: the same records, stop and damage."""
    lo = start
    while part_messages:
        _, hi, code = _records.walk(buf, lo, len(buf), part_messages)
        if code != STOP_LIMIT:
            break
        with memoryview(buf) as whole, whole[:hi] as view:
            cols, _, _, damage = scan_file(view, f, last=False, report=ReadReport(), on_error="report",
                                           start=lo, **scan)
        if damage is not None:
            break
        yield cols, None, code
        lo = hi
    cols, end, code, _ = scan_file(buf, f, last=last, report=report, on_error=on_error, start=lo, **scan)
    yield cols, end, code


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
    checked as by the walk and decoded by the same C pass, one pass per file touched, and the
    frame is made once from the columns in the order asked. Cost: a listing of the folder, one
    map per file touched, and the decode, measured in CPU time on a 10,000,000-message store
    (3 files of 1 GiB, page cache warm, 2 cores at load 6-10): one offset (a key query's answer)
    0.3-0.4 ms, a third of it pandas making the 20-column frame; 240,000 random offsets 0.35 s
    (1.4 µs a message, most of it the Python str of each text value and the first touch of
    each record's page).

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


def read_at_columns(path_or_dir: str | os.PathLike, phy_offsets: Sequence[int] | np.ndarray, *, body: bool = True,
                    check_crc: bool = False) -> dict[str, np.ndarray]:
    """:func:`read_at`'s columns as a dict of NumPy arrays, for a caller that makes its own
    frame with more columns (a frame made once costs less than one made and then added to)."""
    offs = np.asarray(phy_offsets, dtype=np.int64).reshape(-1)
    files = store_files(path_or_dir)
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
        with ReadOnlyMap(f.path) as buf:
            U = np.frombuffer(buf, np.uint8)
            _check_heads(U, P, f)
            cols, dmg, _ = _decode_positions(U, P, f, body=body, check_crc=check_crc)
        if dmg is not None:
            raise dmg.error()
        parts.append(cols)
    if order is None:
        return _column_arrays(parts, body, check_crc)
    # the rows of each file, one file after the other: put them back in the order asked
    inv = np.empty(len(offs), np.int64)
    inv[order] = np.arange(len(offs))
    return _column_arrays(parts, body, check_crc, rows=inv)


def _check_heads(U: np.ndarray, P: np.ndarray, f: StoreFile) -> None:
    """Raise the pure model's typed error for the first position of P where no message record
    starts (too close to the end, a blank or unknown magic, a size that cannot be)."""
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
        read_message(f.path, int(P[np.argmax(bad)]))   # raises the pure model's typed error for this record


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
                            part_messages=1 << 16)
        # the file's last part knows where the walk stopped; each part is dropped as the next comes
        (_, end, code), = collections.deque(parts, maxlen=1)
    # a file ended by the blank record is full: the broker's write position is its end
    return f.start_offset + f.size if code == STOP_BLANK else end
