"""Encoding records: one message, or whole batches laid out into files (vectorized)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import rmqlab._records as _records
from rmqlab.formats.commitlog.layout import (
    BLANK,
    BORNHOST_V6_FLAG,
    CRC32_RESERVED_LEN,
    DEFAULT_FILE_SIZE,
    END_FILE_MIN_BLANK_LENGTH,
    HEAD,
    IPV4_SIZE,
    IPV6_SIZE,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    MIN_MESSAGE_SIZE,
    PORT,
    PROPERTIES_LEN,
    PROPERTY_CRC32,
    STORE_TIME,
    STOREHOSTADDRESS_V6_FLAG,
    TAIL,
    TOPIC_LEN_V1,
    TOPIC_LEN_V2,
    message_length,
)
from rmqlab.formats.commitlog.records import (
    compute_body_crc,
    encode_text,
    properties_block,
)
from rmqlab.formats.msgid import parse_host
from rmqlab.rules.dispatch import assign_queue_offsets
from rmqlab.rules.versions import BrokerVersion, LayoutFacts, layout_facts


def _crc_digits(crc: int) -> bytes:
    """``MessageDecoder.createCrc32``: ten digits, least significant first, '0'-padded."""
    out = bytearray()
    for _ in range(10):
        out.append(0x30 + (crc % 10 if crc > 0 else 0))
        crc = crc // 10 if crc > 0 else crc
    return bytes(out)


def prop_crc_value(block: bytes) -> int | None:
    """The CRC a ``__CRC32#`` property holds (digits read back least significant first), or None."""
    i = block.rfind(b"__CRC32#\x01")
    if i < 0:
        return None
    digits = block[i + 9:i + 19]
    v = 0
    for ch in reversed(digits):
        v = v * 10 + (ch - 0x30)
    return v


def _strip_prop_crc(block: bytes) -> bytes:
    pairs = block.split(b"\x02")
    tail = pairs.pop() if pairs else b""
    kept = [p for p in pairs if not p.startswith(b"__CRC32#\x01")]
    return b"".join(p + b"\x02" for p in kept) + tail


_CRC_PAIR_PREFIX = PROPERTY_CRC32.encode() + b"\x01"


def _version_form(broker_version: str | BrokerVersion | None,
                  append_prop_crc: bool | None) -> tuple[LayoutFacts, bool]:
    """The layout facts of `broker_version` and whether to write ``__CRC32#`` (None: that
    version's default). Raises ValueError when that version cannot write it."""
    facts = layout_facts(broker_version)
    crc = facts.prop_crc_default if append_prop_crc is None else bool(append_prop_crc)
    if crc and not facts.prop_crc:
        raise ValueError(f"broker {facts.version} has no __CRC32# property (enabledAppendPropCRC "
                         f"comes in 5.2.0)")
    return facts, crc


def stored_properties(block: bytes, broker_version: str | BrokerVersion | None = None) -> bytes:
    """The properties block as a broker of `broker_version` stores it: 4.9.1 to 5.1.x drop the
    final ``\\x02`` of ``messageProperties2String``; other versions (and None) keep it.

    >>> stored_properties(b"KEYS\\x01k\\x02", "4.9.4"), stored_properties(b"KEYS\\x01k\\x02", "5.2.0")
    (b'KEYS\\x01k', b'KEYS\\x01k\\x02')
    """
    if not layout_facts(broker_version).final_property_separator and block.endswith(b"\x02"):
        return block[:-1]
    return block


def _check_version_rules(facts: LayoutFacts, topic_len: np.ndarray, version: np.ndarray, v6: np.ndarray) -> None:
    """What a broker of `facts.version` cannot write: v2 records before 5.1.0 (and so topics
    over 127 bytes), IPv6 hosts before 4.6.0."""
    if not facts.magic_v2 and (version == 2).any():
        raise ValueError(f"broker {facts.version} writes v1 records only (v2 magic comes in 5.1.0); "
                         f"its topics are at most 127 bytes")
    if not facts.ipv6_hosts and v6.any():
        raise ValueError(f"broker {facts.version} has no IPv6 hosts (SYSFLAG's IPv6 bits come in 4.6.0)")


def encode_message(*, topic: str, body: bytes = b"", queue_id: int = 0, flag: int = 0,
                   queue_offset: int = 0, phy_offset: int = 0, sys_flag: int = 0,
                   born_timestamp: int = 0, born_host: Any = "127.0.0.1:0", store_timestamp: int = 0,
                   store_host: Any = "127.0.0.1:0", reconsume_times: int = 0,
                   prepared_transaction_offset: int = 0,
                   properties: dict[str, str] | str | bytes | None = None, version: int | None = None,
                   body_crc: int | None = None, append_prop_crc: bool | None = None,
                   broker_version: str | BrokerVersion | None = None) -> bytes:
    """The bytes of one message record, as ``MessageExtEncoder`` + ``doAppend`` write them.

    `version` None picks v2 when the topic is longer than 127 bytes (else v1). SYSFLAG's IPv6
    bits 0x10 / 0x20 are set from the hosts' address family (an IPv4 host with the bit set is a
    ValueError). `body_crc` None computes ``CRC32(body) & 0x7FFFFFFF``; the body is written as
    given (compressed bodies included). `properties` is a dict (written in its order) or an
    already serialised block. `append_prop_crc` mirrors ``enabledAppendPropCRC`` (None: the
    default of `broker_version`, off). `broker_version` ("4.9.4"; None: rmqlab's default form)
    writes that broker's form (:mod:`rmqlab.rules.versions`): the properties block without its
    final ``\\x02`` for 4.9.1 to 5.1.x, and a ValueError for what it cannot write (v2 records
    before 5.1.0, IPv6 hosts before 4.6.0, ``__CRC32#`` before 5.2.0). Cost: O(size).

    >>> from rmqlab.formats.commitlog import read_message
    >>> rec = encode_message(topic="T", body=b"x", properties={"KEYS": "k"})
    >>> len(rec), read_message(rec, 0).keys
    (100, 'k')
    """
    facts, append_prop_crc = _version_form(broker_version, append_prop_crc)
    topic_b = encode_text(topic)
    body = bytes(body)
    born_ip, born_port = parse_host(born_host)
    store_ip, store_port = parse_host(store_host)
    for ip, bit, name in ((born_ip, BORNHOST_V6_FLAG, "born"), (store_ip, STOREHOSTADDRESS_V6_FLAG, "store")):
        if len(ip) == IPV6_SIZE:
            sys_flag |= bit
        elif sys_flag & bit:
            raise ValueError(f"sys_flag has the IPv6 {name}-host bit 0x{bit:X} but {name}_host is IPv4")
    if version is None:
        version = 2 if len(topic_b) > 127 and facts.magic_v2 else 1
    if version not in (1, 2):
        raise ValueError(f"version is 1 or 2, got {version!r}")
    if len(topic_b) > (127 if version == 1 else 32767):
        raise ValueError(f"topic of {len(topic_b)} bytes does not fit a v{version} TOPICLEN")
    _check_version_rules(facts, np.array([len(topic_b)]), np.array([version]),
                         np.array([len(born_ip) == IPV6_SIZE or len(store_ip) == IPV6_SIZE]))
    props = properties_block(properties)
    if not facts.final_property_separator and props.endswith(b"\x02"):
        props = props[:-1]
    if append_prop_crc:
        props = _strip_prop_crc(props)
        if props and not props.endswith(b"\x02"):
            props += b"\x02"
        props += b"\x00" * CRC32_RESERVED_LEN
    if len(props) > 32767:
        raise ValueError(f"properties of {len(props)} bytes exceed Short.MAX_VALUE")
    total = message_length(len(body), len(topic_b), len(props), sys_flag, version)
    crc = compute_body_crc(body) if body_crc is None else body_crc
    parts = [
        HEAD.pack(total, MAGIC_V1 if version == 1 else MAGIC_V2, crc, queue_id, flag, queue_offset,
                  phy_offset, sys_flag, born_timestamp),
        born_ip, PORT.pack(born_port), STORE_TIME.pack(store_timestamp), store_ip, PORT.pack(store_port),
        TAIL.pack(reconsume_times, prepared_transaction_offset, len(body)), body,
        (TOPIC_LEN_V1 if version == 1 else TOPIC_LEN_V2).pack(len(topic_b)), topic_b,
        PROPERTIES_LEN.pack(len(props)), props,
    ]
    rec = b"".join(parts)
    if append_prop_crc:
        head = rec[:-CRC32_RESERVED_LEN]
        rec = head + (_CRC_PAIR_PREFIX + _crc_digits(compute_body_crc(head)) + b"\x02")
    return rec


def blank_record(remaining: int) -> bytes:
    """The 8 bytes the broker writes when a message does not fit the `remaining` bytes of a file."""
    return BLANK.pack(remaining, MAGIC_BLANK)


@dataclass
class EncodedFile:
    """Bytes for one CommitLog file: `data` goes at byte `position` of the file named
    `start_offset` (position > 0 only when a batch starts inside a file)."""

    start_offset: int
    position: int
    data: np.ndarray   # uint8
    full: bool = False  # ends with the end-of-file blank record

    @property
    def name(self) -> str:
        return f"{self.start_offset:020d}"


@dataclass
class EncodedBatch:
    """Result of :func:`encode_messages`: the files' bytes and, per message, where it went."""

    files: list[EncodedFile]
    phy_offset: np.ndarray
    queue_offset: np.ndarray
    total_size: np.ndarray
    end_offset: int                          # next write offset
    queue_table: dict[tuple[str, int], int]  # next queue offset per (topic, queue id)


def _to_table(columns):
    import pyarrow as pa

    if isinstance(columns, pa.Table):
        return columns
    if isinstance(columns, pa.RecordBatch):
        return pa.Table.from_batches([columns])
    try:
        import pandas as pd

        if isinstance(columns, pd.DataFrame):
            if columns.attrs:    # e.g. read_columns' report: not table metadata
                columns = columns.copy(deep=False)
                columns.attrs = {}
            return pa.Table.from_pandas(columns, preserve_index=False)
    except ImportError:  # pragma: no cover
        pass
    return pa.table({k: (v if isinstance(v, (pa.Array, pa.ChunkedArray, np.ndarray)) else list(v))
                     for k, v in dict(columns).items()})


def _var_column(table, name, typ, n, default: bytes = b""):
    """(data uint8, offsets int64[n+1]) of a string/binary column (zero copy when possible)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in table.column_names or pa.types.is_null(table.column(name).type):
        # absent, or every value missing (Arrow gives an all-None column the null type)
        return np.frombuffer(default * n, np.uint8) if default else np.empty(0, np.uint8), \
            np.arange(n + 1, dtype=np.int64) * len(default)
    col = table.column(name)
    if col.null_count:
        col = pc.fill_null(col, pa.scalar(default.decode() if pa.types.is_string(col.type) or
                                          pa.types.is_large_string(col.type) else default, col.type))
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    arr = arr.cast(typ)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], np.int64)[arr.offset:arr.offset + n + 1]
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    return data, offsets


def _int_column(table, name, n, default=0, dtype=np.int64):
    if name not in table.column_names:
        return np.full(n, default, dtype)
    return np.asarray(table.column(name).to_numpy(zero_copy_only=False), dtype=dtype)


def _host_table(table, name, n):
    """(ip bytes (k, 16) left-aligned, width (k,), port (k,), code (n,)) of a host column: the k
    distinct hosts, each parsed once, and every row's index into them (all int64 but the ips)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in table.column_names or pa.types.is_null(table.column(name).type):
        vals = ["127.0.0.1:0"]
        codes = np.zeros(n, np.int64)
    else:
        # Arrow factorizes in C++, with no Python str object a message
        col = table.column(name)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if col.null_count:
            col = pc.fill_null(col, pa.scalar("127.0.0.1:0", col.type))
        enc = pc.dictionary_encode(col)
        codes = np.ascontiguousarray(enc.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        vals = enc.dictionary.to_pylist()
    parsed = [parse_host(v) for v in vals]
    ipm = np.zeros((len(parsed), 16), np.uint8)
    for i, (ip, _) in enumerate(parsed):
        ipm[i, :len(ip)] = np.frombuffer(ip, np.uint8)
    widths = np.array([len(ip) for ip, _ in parsed], np.int64)
    ports = np.array([port for _, port in parsed], np.int64)
    return ipm, widths, ports, codes


@dataclass
class _Sizes:
    """What placing and encoding a batch of messages needs from its columns."""

    var: tuple          # (data, offsets) of topic, body, properties, flattened
    born: tuple         # _host_table of born_host
    store: tuple        # _host_table of store_host
    sys_flag: np.ndarray
    version: np.ndarray
    total: np.ndarray   # TOTALSIZE of each record, bytes


def _stored_property_column(data: np.ndarray, offsets: np.ndarray, facts: LayoutFacts,
                            crc: bool) -> tuple[np.ndarray, np.ndarray]:
    """(data, offsets) of the properties column in the stored form of `facts`: the final
    ``\\x02`` dropped (4.9.1 to 5.1.x), or, with `crc`, any ``__CRC32#`` pair removed, a final
    ``\\x02`` added where missing and CRC32_RESERVED_LEN zero bytes reserved for the pair (as
    ``DefaultAppendMessageCallback`` lays it out; the pair is written after the record)."""
    if facts.final_property_separator and not crc:
        return data, offsets
    offsets = np.asarray(offsets, np.int64)
    if crc and data.tobytes().find(_CRC_PAIR_PREFIX) >= 0:
        # an old __CRC32# pair is rare: those rows go through the readable model
        raw = data.tobytes()
        rows = [_strip_prop_crc(raw[a:b]) for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
        data = np.frombuffer(b"".join(rows), np.uint8) if rows else np.empty(0, np.uint8)
        offsets = np.zeros(len(rows) + 1, np.int64)
        np.cumsum([len(r) for r in rows], out=offsets[1:])
    plen = np.diff(offsets)
    has = plen > 0
    last = np.zeros(len(plen), np.uint8)
    last[has] = data[offsets[1:][has] - 1]
    ends_with_sep = has & (last == 2)
    core = plen - (ends_with_sep if not facts.final_property_separator else 0)
    add_sep = has & ~ends_with_sep if crc else np.zeros(len(plen), bool)
    new_len = core + (add_sep + CRC32_RESERVED_LEN if crc else 0)
    new_off = np.zeros(len(plen) + 1, np.int64)
    np.cumsum(new_len, out=new_off[1:])
    out = np.zeros(int(new_off[-1]), np.uint8)
    if len(plen):
        _records.copy_spans(out, np.ascontiguousarray(new_off[:-1]), data, np.ascontiguousarray(offsets[:-1]),
                            np.ascontiguousarray(core, np.int64))
    out[(new_off[:-1] + core)[add_sep]] = 2
    return out, new_off


def _record_sizes(table, file_size: int, facts: LayoutFacts, crc: bool) -> _Sizes:
    import pyarrow as pa

    n = table.num_rows
    topic_d, topic_o = _var_column(table, "topic", pa.large_binary(), n)
    body_d, body_o = _var_column(table, "body", pa.large_binary(), n)
    prop_d, prop_o = _var_column(table, "properties", pa.large_binary(), n)
    prop_d, prop_o = _stored_property_column(prop_d, prop_o, facts, crc)
    topic_len = np.diff(topic_o)
    body_len = np.diff(body_o)
    plen = np.diff(prop_o)
    born = _host_table(table, "born_host", n)
    store = _host_table(table, "store_host", n)
    sys_flag, version, total = _check_sizes(table, n, topic_len, body_len, plen, born[1][born[3]],
                                            store[1][store[3]], file_size, facts)
    return _Sizes((topic_d, topic_o, body_d, body_o, prop_d, prop_o), born, store, sys_flag, version, total)


def _check_sizes(table, n, topic_len, body_len, plen, bw, sw, file_size, facts: LayoutFacts):
    """(sys_flag with the hosts' IPv6 bits, version, TOTALSIZE) of each record, after checking
    that every field fits its width and that the broker of `facts` could write it; bw / sw are
    the host address widths (4 or 16 bytes)."""
    sys_flag = _int_column(table, "sys_flag", n)
    sys_flag = (sys_flag | np.where(bw == IPV6_SIZE, BORNHOST_V6_FLAG, 0)
                | np.where(sw == IPV6_SIZE, STOREHOSTADDRESS_V6_FLAG, 0))
    if ((bw == IPV4_SIZE) & (sys_flag & BORNHOST_V6_FLAG != 0)).any() or \
            ((sw == IPV4_SIZE) & (sys_flag & STOREHOSTADDRESS_V6_FLAG != 0)).any():
        raise ValueError("sys_flag has an IPv6 host bit for an IPv4 host")
    version = _int_column(table, "version", n, 0)
    version = np.where(version == 0, np.where((topic_len > 127) & facts.magic_v2, 2, 1), version)
    if ((version != 1) & (version != 2)).any():
        raise ValueError("version is 1 or 2")
    _check_version_rules(facts, topic_len, version, (bw == IPV6_SIZE) | (sw == IPV6_SIZE))
    if (topic_len > np.where(version == 1, 127, 32767)).any():
        raise ValueError("a topic does not fit its version's TOPICLEN")
    if (plen > 32767).any():
        raise ValueError("a properties block exceeds Short.MAX_VALUE bytes")
    total = MIN_MESSAGE_SIZE + (version - 1) + (bw - 4) + (sw - 4) + body_len + topic_len + plen
    if (total + END_FILE_MIN_BLANK_LENGTH > file_size).any():
        raise ValueError(f"a message of {int(total.max())} bytes does not fit a {file_size}-byte file")
    return sys_flag, version, total


def _byte_lengths(table, name, n) -> np.ndarray:
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in table.column_names or pa.types.is_null(table.column(name).type):
        return np.zeros(n, np.int64)
    return np.asarray(pc.fill_null(pc.binary_length(table.column(name)), 0), dtype=np.int64)


def _host_widths(table, name, n) -> np.ndarray:
    """4 or 16: an IPv6 host is written "[addr]:port" (the only form with a bracket)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if name not in table.column_names or pa.types.is_null(table.column(name).type):
        return np.full(n, IPV4_SIZE, np.int64)
    v6 = np.asarray(pc.fill_null(pc.starts_with(table.column(name), "["), False), dtype=bool)
    return np.where(v6, IPV6_SIZE, IPV4_SIZE)


def record_sizes(columns, file_size: int = DEFAULT_FILE_SIZE, *, broker_version: str | BrokerVersion | None = None,
                 append_prop_crc: bool | None = None) -> np.ndarray:
    """TOTALSIZE (bytes, int64) of each message's record, as :func:`encode_messages` would write
    it, without encoding anything. `columns`, `broker_version` and `append_prop_crc` as for
    :func:`encode_messages`. Cost: O(messages), vectorized (the bodies are only measured, not
    read; the properties are read only for a version form that changes them).

    >>> record_sizes({"topic": ["T"], "body": [b"x" * 10]}).tolist() == [message_length(10, 1, 0)]
    True
    """
    import pyarrow as pa

    facts, crc = _version_form(broker_version, append_prop_crc)
    table = _to_table(columns)
    n = table.num_rows
    topic_len, body_len, plen = (_byte_lengths(table, name, n) for name in ("topic", "body", "properties"))
    if crc or not facts.final_property_separator:
        prop_d, prop_o = _var_column(table, "properties", pa.large_binary(), n)
        plen = np.diff(_stored_property_column(prop_d, prop_o, facts, crc)[1])
    return _check_sizes(table, n, topic_len, body_len, plen, _host_widths(table, "born_host", n),
                        _host_widths(table, "store_host", n), file_size, facts)[2]


def place_records(sizes: np.ndarray, start_offset: int = 0, file_size: int = DEFAULT_FILE_SIZE):
    """Where records of these `sizes` (bytes) go when appended from `start_offset`, as
    ``CommitLog.DefaultAppendMessageCallback.doAppend`` places them: a record that would leave
    fewer than 8 bytes (END_FILE_MIN_BLANK_LENGTH) in its file goes to the start of the next
    file instead, the rest of the file being one blank record. Cost: O(n) plus one binary
    search per file touched.

    >>> place_records(np.array([40, 40, 40]), 0, 100)[0].tolist()    # 40+40+8 fits, +40 does not
    [0, 40, 100]

    Returns (phy_offsets, spans, end_offset): spans are (file start, position in it, first
    row, end row, bytes used, rolled over) for each file touched.
    """
    total = np.asarray(sizes, dtype=np.int64)
    n = len(total)
    phy = np.empty(n, np.int64)
    cur = int(start_offset)
    ends = np.cumsum(total)
    i = 0
    spans = []
    while True:
        fstart = cur - cur % file_size
        pos = cur - fstart
        base = ends[i - 1] if i else 0
        # message j fits when pos + (ends[j] - base) + 8 <= file_size
        j = int(np.searchsorted(ends, file_size - END_FILE_MIN_BLANK_LENGTH - pos + base, side="right"))
        j = max(j, i)
        phy[i:j] = fstart + pos + (np.concatenate([[base], ends[i:j - 1]]) - base if j > i else 0)
        used = pos + int(ends[j - 1] - base) if j > i else pos
        full = j < n
        if j > i or full:
            spans.append((fstart, pos, i, j, used, full))
        i = j
        if not full:
            cur = fstart + used
            break
        cur = fstart + file_size
    return phy, spans, cur


def _write_prop_crc_pairs(D: np.ndarray, starts: np.ndarray, total: np.ndarray) -> None:
    """Fill the reserved last CRC32_RESERVED_LEN bytes of the records at `starts` of D with
    ``__CRC32#\\x01`` + ten digits of CRC32(the record's bytes before them) & 0x7FFFFFFF, least
    significant first, + ``\\x02`` (``MessageDecoder.createCrc32``)."""
    starts = np.ascontiguousarray(starts, np.int64)
    covered = np.ascontiguousarray(np.asarray(total, np.int64) - CRC32_RESERVED_LEN)
    crc = np.empty(len(starts), np.uint32)
    _records.crc32_spans(D, starts, covered, crc)
    value = (crc & 0x7FFFFFFF).astype(np.int64)
    pair = np.empty((len(starts), CRC32_RESERVED_LEN), np.uint8)
    pair[:, :len(_CRC_PAIR_PREFIX)] = np.frombuffer(_CRC_PAIR_PREFIX, np.uint8)
    for k in range(10):
        pair[:, len(_CRC_PAIR_PREFIX) + k] = 0x30 + value % 10
        value //= 10
    pair[:, -1] = 2
    D[(starts + covered)[:, None] + np.arange(CRC32_RESERVED_LEN, dtype=np.int64)] = pair


def encode_messages(columns, start_offset: int = 0, file_size: int = DEFAULT_FILE_SIZE, *,
                    queue_table: dict[tuple[str, int], int] | None = None, row_base: int = 0,
                    prior_phy_offsets: np.ndarray | None = None, broker_version: str | BrokerVersion | None = None,
                    append_prop_crc: bool | None = None) -> EncodedBatch:
    """Lay many messages out into CommitLog files, vectorized (NumPy placement, one C pass writing records and CRCs).

    `columns`: a pyarrow Table, pandas DataFrame or dict of sequences with the names of
    :data:`COLUMNS` (``topic`` required; others default to 0 / empty / ``127.0.0.1:0``; hosts'
    IPv6 bits are OR-ed into sys_flag). Messages go one after another from `start_offset`;
    when ``msgLen + 8`` exceeds the bytes left in a file, an 8-byte blank record (TOTALSIZE =
    bytes left) ends it and the message starts the next file (offset = next multiple of
    `file_size`). ``queue_offset`` is taken when given, else assigned as
    :func:`rmqlab.rules.dispatch.assign_queue_offsets` (from `queue_table`). ``prepared_index`` (row of the half
    message, -1 none; rows below `row_base` are looked up in `prior_phy_offsets`) sets
    ``prepared_transaction_offset`` to that row's phy offset. ``version`` defaults to v2 only
    for topics over 127 bytes. `broker_version` and `append_prop_crc` as for
    :func:`encode_message`: the stored form of that broker (the final ``\\x02`` of 4.9.1 to
    5.1.x dropped; with `append_prop_crc` a ``__CRC32#`` pair ends every record's properties).
    Cost: O(total bytes): NumPy placement and one C pass, no Python object a message.
    """
    facts, crc = _version_form(broker_version, append_prop_crc)
    table = _to_table(columns)
    n = table.num_rows
    sizes = _record_sizes(table, file_size, facts, crc)
    topic_d, topic_o, body_d, body_o, prop_d, prop_o = sizes.var
    b_ip, b_w, b_port, b_code = sizes.born
    s_ip, s_w, s_port, s_code = sizes.store
    sys_flag, version, total = sizes.sys_flag, sizes.version, sizes.total
    phy, spans, end_offset = place_records(total, start_offset, file_size)
    files: list[EncodedFile] = []

    # ---- queue offsets and prepared offsets
    topics_obj = None
    if "queue_offset" in table.column_names:
        qoff = _int_column(table, "queue_offset", n)
        qtable = dict(queue_table or {})
    else:
        topics_obj = table.column("topic").to_numpy(zero_copy_only=False)
        qoff, qtable = assign_queue_offsets(topics_obj, _int_column(table, "queue_id", n), sys_flag, queue_table)
    pto = _int_column(table, "prepared_transaction_offset", n)
    if "prepared_index" in table.column_names:
        pidx = _int_column(table, "prepared_index", n)
        has = pidx >= 0
        local = has & (pidx >= row_base)
        pto[local] = phy[pidx[local] - row_base]
        prior = has & (pidx < row_base)
        if prior.any():
            if prior_phy_offsets is None:
                raise ValueError("prepared_index refers to rows before this batch but no prior_phy_offsets")
            pto[prior] = np.asarray(prior_phy_offsets)[pidx[prior]]

    def col(x):
        return np.ascontiguousarray(x, dtype=np.int64)

    # per-row int64 columns for the C record writer, in its argument order (BODYCRC is computed there)
    rows_cols = [col(c) for c in (
        total, version, _int_column(table, "queue_id", n), _int_column(table, "flag", n), qoff, phy,
        sys_flag, _int_column(table, "born_timestamp", n), b_code, _int_column(table, "store_timestamp", n),
        s_code, _int_column(table, "reconsume_times", n), pto)]
    hosts = (np.ascontiguousarray(b_ip), b_w, b_port, np.ascontiguousarray(s_ip), s_w, s_port)
    topic_o, body_o, prop_o = col(topic_o), col(body_o), col(prop_o)

    for fstart, pos, a, b, used, full in spans:
        size = used - pos + (END_FILE_MIN_BLANK_LENGTH if full else 0)
        # every byte gets written: the records lie back to back from 0, the blank record after them
        D = np.empty(size, np.uint8)
        d = phy[a:b] - (fstart + pos)
        _records.encode_records(D, d, *[c[a:b] for c in rows_cols], *hosts,
                                body_d, body_o[a:b + 1], topic_d, topic_o[a:b + 1], prop_d, prop_o[a:b + 1])
        if crc and b > a:
            _write_prop_crc_pairs(D, d, total[a:b])
        if full:
            D[used - pos:] = np.frombuffer(blank_record(file_size - used), np.uint8)
        files.append(EncodedFile(fstart, pos, D, full))
    return EncodedBatch(files, phy, qoff, total.astype(np.int32), end_offset, qtable)
