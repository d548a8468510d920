"""The CommitLog decode before ``_records.decode_records``: one index array per field and row,
every field check restated with NumPy, on the package's own layout. Not a reference for tests
(it shares the package's layout and walk; tests/formats/commitlog/test_decode.py judges the
decode against tests/support/commitlog_stdlib.py instead): benchmarks/bench_commitlog.py times
the C pass against it.

``decode_positions_numpy`` is a `decode` for ``columns._read_columns`` and ``scan_file``::

    columns._read_columns(path, decode=decode_positions_numpy)
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rmqlab import _records
from rmqlab.formats.commitlog import columns as cc
from rmqlab.formats.commitlog.files import StoreFile
from rmqlab.formats.commitlog.layout import (
    BORNHOST_V6_FLAG,
    HEAD,
    IPV4_SIZE,
    IPV6_SIZE,
    MAGIC_V1,
    PORT,
    PROPERTIES_LEN,
    PROPERTY_CRC32,
    STORE_TIME,
    STOREHOSTADDRESS_V6_FLAG,
    TAIL,
    WANTED_PROPERTIES,
)
from rmqlab.formats.commitlog.records import decode_text
from rmqlab.formats.msgid import format_host

gather = cc._gather


def spans_bytes(U, starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate byte spans of U: (data uint8, offsets int64[n+1])."""
    lengths = lengths.astype(np.int64)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = np.empty(int(offsets[-1]), np.uint8)
    if len(lengths):
        _records.copy_spans(data, np.ascontiguousarray(offsets[:-1]), U,
                            np.ascontiguousarray(starts, np.int64), lengths)
    return data, offsets


def text_column(data: np.ndarray, offsets: np.ndarray, valid: np.ndarray | None = None,
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


def format_hosts(ip: np.ndarray, port: np.ndarray) -> np.ndarray:
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


def check_fields(U, P, total, magic, sys_flag):
    """Vectorized field checks of records at positions P: (first bad row or -1, field, reason)
    plus the per-row spans. Same checks, same order, same words as the C decode's."""
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
    body_len = gather(U, P + o_tail + TAIL.offset("body_len"), 4, ">i4").astype(np.int64)
    body_bad = (body_len < 0) | (o_body + body_len + tlw + PROPERTIES_LEN.size > end)
    o_tl = o_body + body_len
    tl1 = gather(U, P + o_tl, 1, ">i1").astype(np.int64)
    tl2 = gather(U, P + o_tl, 2, ">i2").astype(np.int64)
    topic_len = np.where(version == 1, tl1, tl2)
    o_topic = o_tl + tlw
    topic_bad = (topic_len < 0) | (o_topic + topic_len + PROPERTIES_LEN.size > end)
    o_pl = o_topic + topic_len
    plen = gather(U, P + o_pl, 2, ">i2").astype(np.int64)
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


def decode_positions_numpy(U, P: np.ndarray, f: StoreFile, *, body: bool, check_crc: bool, arrow: bool = False):
    """``columns._decode_positions`` by NumPy gathers alone (one index array per field and row):
    (columns dict of the good prefix, Damage or None, positions of the good prefix)."""
    if arrow:
        raise ValueError("the NumPy reference decodes to pandas object columns only")
    n = len(P)
    H = U[(P[:, None] + np.arange(HEAD.size, dtype=np.int64))].view(HEAD.dtype).reshape(n) if n else \
        np.empty(0, HEAD.dtype)
    total = H["total_size"].astype(np.int64)
    sys_flag = H["sys_flag"].astype(np.int64)
    bad_row, bad_field, bad_reason, s = check_fields(U, P, total, H["magic"].astype(np.int64), sys_flag)
    limit = n if bad_row < 0 else bad_row
    problem = None if bad_row < 0 else (int(P[bad_row]), bad_field, bad_reason)
    # properties: find the wanted values (malformed pairs are skipped, as the broker skips them)
    wanted = WANTED_PROPERTIES + ((PROPERTY_CRC32.encode(),) if check_crc else ())
    k = len(wanted)
    vs = np.empty(limit * k, np.int64)
    vl = np.empty(limit * k, np.int64)
    pst = np.ascontiguousarray((P + s["o_props"])[:limit])
    pln = np.ascontiguousarray(s["plen"][:limit])
    if limit:
        _records.find_props(U, pst, pln, wanted, vs, vl)
    if check_crc or body:
        bst = np.ascontiguousarray((P + s["o_body"])[:limit])
        bln = np.ascontiguousarray(s["body_len"][:limit])
    if check_crc and limit:
        problem, limit = cc._body_crc_check(U, P, bst, bln, H["body_crc"], limit, problem)
    P, H = P[:limit], H[:limit]
    s = {key: (v[:limit] if isinstance(v, np.ndarray) else v) for key, v in s.items()}
    vs, vl = vs.reshape(-1, k)[:limit], vl.reshape(-1, k)[:limit]
    cols: dict[str, Any] = {}
    cols["topic"] = text_column(*spans_bytes(U, P + s["o_topic"], s["topic_len"]), dictionary=True)
    for name in ("queue_id", "flag", "queue_offset", "phy_offset", "sys_flag", "born_timestamp"):
        cols[name] = H[name].astype(H.dtype[name].newbyteorder("="))

    def host(o_ip, width_arr):
        out = np.empty(limit, dtype=object)
        for w in (IPV4_SIZE, IPV6_SIZE):
            rows = np.flatnonzero(width_arr == w)
            if len(rows):
                st = P[rows] + o_ip[rows] if isinstance(o_ip, np.ndarray) else P[rows] + o_ip
                ip = U[st[:, None] + np.arange(w, dtype=np.int64)]
                port = gather(U, st + w, 4, ">i4")
                out[rows] = format_hosts(ip, port)
        return out

    cols["born_host"] = host(HEAD.size, s["bw"])
    cols["store_timestamp"] = gather(U, P + s["o_st"], 8, ">i8")
    cols["store_host"] = host(s["o_sh"], s["sw"])
    cols["reconsume_times"] = gather(U, P + s["o_tail"], 4, ">i4")
    cols["prepared_transaction_offset"] = gather(
        U, P + s["o_tail"] + TAIL.offset("prepared_transaction_offset"), 8, ">i8")
    if body:
        cols["body"] = text_column(*spans_bytes(U, P + s["o_body"], s["body_len"]), binary=True)
    cols["properties"] = text_column(*spans_bytes(U, P + s["o_props"], s["plen"]))
    for j, name in enumerate(("keys", "uniq_key", "tags")):
        valid = vs[:, j] >= 0
        cols[name] = text_column(*spans_bytes(U, np.where(valid, vs[:, j], 0), np.where(valid, vl[:, j], 0)),
                                 valid=valid, dictionary=name == "tags")
    dvalid = vs[:, 3] >= 0
    delay = np.zeros(limit, np.int32)
    if dvalid.any():
        import pandas as pd

        txt = text_column(*spans_bytes(U, vs[dvalid, 3], vl[dvalid, 3]))
        delay[dvalid] = pd.to_numeric(pd.Series(txt, dtype=object), errors="coerce").fillna(0) \
            .clip(-2**31, 2**31 - 1).astype(np.int32).to_numpy()
    cols["delay_level"] = delay
    cols["total_size"] = H["total_size"].astype(np.int32)
    cols["version"] = s["version"].astype(np.int8)
    cols["body_crc"] = H["body_crc"].astype(np.int32)
    if check_crc:
        cols["crc_ok"] = np.ones(limit, bool)
        state = cc._prop_crc_from_values(U, P, H["total_size"].astype(np.int64), vs[:, 4], vl[:, 4])
        cols["prop_crc_ok"] = np.array([None, False, True], dtype=object)[state + 1]
    return cols, cc._damage(f, problem), P

