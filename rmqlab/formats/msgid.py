"""RocketMQ's two message ids: the offset id (where a message is stored) and the unique id (UNIQ_KEY).

Mirrors ``MessageDecoder.createMessageId`` / ``decodeMessageId`` (offset id),
``MessageClientIDSetter`` (unique id) and ``UtilAll.bytes2string`` / ``string2bytes`` (the hex
form) of RocketMQ's common module (checked against 5.3.x; the unique id's IPv6 form appeared in
4.9.x, older clients write only IPv4).

Both ids are the upper-case hex of a short big-endian byte string:

* **offset id** (``MessageExt.getMsgId()`` on the broker side, "offsetMsgId" on a client)::

      store host ip (4 bytes IPv4 | 16 bytes IPv6) + store port int32 + CommitLog offset int64

  32 hex digits for IPv4, 56 for IPv6. It names the broker and the byte offset: a broker finds
  the message by reading its CommitLog there, with no index.

* **unique id** (property ``UNIQ_KEY``, set by the producer before sending)::

      client ip (4 | 16) + pid int16 + class-loader hashCode int32
      + milliseconds since the start of the current month int32 + counter int16

  32 hex digits for IPv4, 56 for IPv6. "Start of the month" is midnight on the 1st in the
  producer JVM's default time zone; the id does not record which month, so reading the time
  back needs a reference instant: Java's ``getNearlyTimeFromID`` takes the month of *now* and
  steps back one month when the result would not be in the past. :func:`parse_uniq_id` does the
  same with an explicit `now` (pass the message's store timestamp for a stable answer) and an
  explicit time zone. The pid is ``(short) pid``, read back as ``& 0xFFFF``; the counter is a
  wrapping ``(short)`` of an AtomicInteger.

>>> offset_msg_id("192.168.71.1:8123", 172)
'C0A8470100001FBB00000000000000AC'
>>> parse_offset_msg_id('C0A8470100001FBB00000000000000AC')
OffsetMsgId(ip='192.168.71.1', port=8123, phy_offset=172)
>>> uid = create_uniq_id("10.0.0.7", pid=4242, class_loader_hash=0x1B6D3586,
...                      timestamp_ms=1718000000000, counter=7, tz="UTC")
>>> uid
'0A00000710921B6D35862FAF08000007'
>>> u = parse_uniq_id(uid, now=1718000000500, tz="UTC")
>>> u.ip, u.pid, u.counter, u.timestamp_ms
('10.0.0.7', 4242, 7, 1718000000000)
"""
from __future__ import annotations

import datetime as _dt
import ipaddress
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "OffsetMsgId",
    "UniqId",
    "parse_host",
    "format_host",
    "offset_msg_id",
    "parse_offset_msg_id",
    "offset_msg_ids_many",
    "create_uniq_id",
    "parse_uniq_id",
    "uniq_ids_many",
    "uniq_ids_arrow",
    "month_start_ms",
    "uniq_id_time",
]

_HEX = re.compile(r"[0-9A-Fa-f]*")
# Hex text of every byte value, for vectorized encoding: _HEX_TABLE[b] == b"%02X" % b.
_HEX_TABLE = np.array([b"%02X" % i for i in range(256)], dtype="S2")
# MessageClientIDSetter.createUniqID: a small negative clock step (NTP) is written as 0.
_NTP_STEP_MS = 1_000_000


# ----------------------------------------------------------------------------------- hosts


def parse_host(host: Any) -> tuple[bytes, int]:
    """``"ip:port"`` (IPv6 as ``"[addr]:port"``) or an ``(ip, port)`` pair -> (address bytes, port).

    The address is 4 bytes for IPv4 and 16 for IPv6, as ``InetAddress.getAddress()``. The port
    is kept as given (the CommitLog stores it as an int32). Raises ValueError on other text.

    >>> parse_host("127.0.0.1:10911"), parse_host("[::1]:8080")[1]
    ((b'\\x7f\\x00\\x00\\x01', 10911), 8080)
    """
    if isinstance(host, tuple) and len(host) == 2:
        ip, port = host
        if isinstance(ip, (bytes, bytearray)):
            if len(ip) not in (4, 16):
                raise ValueError(f"an address is 4 or 16 bytes, got {len(ip)}")
            return bytes(ip), int(port)
        return ipaddress.ip_address(str(ip).strip("[]")).packed, int(port)
    if not isinstance(host, str):
        raise TypeError(f"a host is 'ip:port' or (ip, port), got {type(host).__name__}")
    if host.startswith("["):
        addr, sep, port = host[1:].partition("]:")
        if not sep:
            raise ValueError(f"IPv6 host {host!r} is not '[addr]:port'")
        ip = ipaddress.IPv6Address(addr)
    else:
        addr, sep, port = host.rpartition(":")
        if not sep:
            raise ValueError(f"host {host!r} is not 'ip:port'")
        ip = ipaddress.ip_address(addr)
        if ip.version == 6:
            raise ValueError(f"IPv6 host {host!r} needs brackets: '[addr]:port'")
    try:
        return ip.packed, int(port)
    except ValueError:
        raise ValueError(f"host {host!r}: port {port!r} is not an integer") from None


def format_host(ip: bytes, port: int) -> str:
    """Address bytes + port -> ``"a.b.c.d:port"``, or ``"[v6 addr]:port"`` (RFC 5952 short form).

    >>> format_host(bytes([192, 168, 71, 1]), 8123), format_host(bytes(15) + b"\\x01", 80)
    ('192.168.71.1:8123', '[::1]:80')
    """
    if len(ip) == 4:
        return f"{ip[0]}.{ip[1]}.{ip[2]}.{ip[3]}:{port}"
    if len(ip) == 16:
        return f"[{ipaddress.IPv6Address(bytes(ip)).compressed}]:{port}"
    raise ValueError(f"an address is 4 or 16 bytes, got {len(ip)}")


def _ip_text(ip: bytes) -> str:
    return str(ipaddress.ip_address(bytes(ip)))


def _unhex(text: str, what: str) -> bytes:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")
    if len(text) not in (32, 56) or not _HEX.fullmatch(text):
        raise ValueError(f"{what} {text!r} is not 32 (IPv4) or 56 (IPv6) hex digits")
    return bytes.fromhex(text)


def _wrap(value: int, bits: int) -> int:
    """Java's narrowing cast to a signed `bits`-bit integer."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# ------------------------------------------------------------------------------- offset id


class OffsetMsgId(NamedTuple):
    """A decoded offset message id: the storing broker's address and the CommitLog offset."""

    ip: str
    port: int
    phy_offset: int

    @property
    def store_host(self) -> str:
        """``"ip:port"`` as the CommitLog columns spell it (IPv6 in brackets)."""
        return format_host(ipaddress.ip_address(self.ip).packed, self.port)


def offset_msg_id(store_host: Any, phy_offset: int) -> str:
    """The offset id of a message stored by `store_host` at CommitLog offset `phy_offset`.

    ``MessageDecoder.createMessageId``: hex(ip + port int32 + offset int64), upper case;
    32 characters for IPv4, 56 for IPv6. Cost: O(1).
    """
    ip, port = parse_host(store_host)
    return (ip + _wrap(port, 32).to_bytes(4, "big", signed=True)
            + _wrap(int(phy_offset), 64).to_bytes(8, "big", signed=True)).hex().upper()


def parse_offset_msg_id(msg_id: str) -> OffsetMsgId:
    """``MessageDecoder.decodeMessageId``: 32 hex digits -> IPv4, 56 -> IPv6. Case-insensitive.

    Raises ValueError for any other length or a non-hex character (Java would decode garbage).
    """
    raw = _unhex(msg_id, "offset message id")
    n = 4 if len(raw) == 16 else 16
    return OffsetMsgId(_ip_text(raw[:n]), int.from_bytes(raw[n:n + 4], "big", signed=True),
                       int.from_bytes(raw[n + 4:], "big", signed=True))


def _hex_rows(rows: np.ndarray) -> np.ndarray:
    """(n, k) uint8 -> n upper-case hex strings of 2k characters (NumPy ``<U``), no Python loop."""
    n, k = rows.shape
    if n == 0:
        return np.empty(0, dtype=f"<U{2 * k}")
    text = _HEX_TABLE[rows]  # (n, k) of S2
    return np.ascontiguousarray(text).view(f"S{2 * k}").reshape(n).astype(f"<U{2 * k}")


def offset_msg_ids_many(store_hosts: Any, phy_offsets: Any) -> np.ndarray:
    """Offset ids of many messages at once, as a NumPy array of str. Cost: O(n) vectorized
    (each distinct host is parsed once).

    `store_hosts` is one ``"ip:port"`` for all messages or a sequence of them; `phy_offsets`
    any integer sequence. Rows mixing IPv4 and IPv6 hosts come back as an object array.

    >>> offset_msg_ids_many("192.168.71.1:8123", [0, 172]).tolist()
    ['C0A8470100001FBB0000000000000000', 'C0A8470100001FBB00000000000000AC']
    """
    offs = np.asarray(phy_offsets, dtype=np.int64).reshape(-1)
    n = len(offs)
    uniques: Sequence[Any] | np.ndarray
    if isinstance(store_hosts, (str, tuple)):
        uniques, codes = [store_hosts], np.zeros(n, np.intp)
    else:
        import pandas as pd

        hosts = np.asarray(store_hosts, dtype=object).reshape(-1)
        if len(hosts) != n:
            raise ValueError(f"{len(hosts)} store hosts but {n} phy offsets")
        codes, uniques = pd.factorize(hosts)
    parsed = [parse_host(h) for h in uniques]
    off_bytes = offs.astype(">i8").view(np.uint8).reshape(n, 8)
    out = np.empty(n, dtype=object)
    for width in (4, 16):
        which = [i for i, (ip, _) in enumerate(parsed) if len(ip) == width]
        if not which:
            continue
        prefix = np.array([list(parsed[i][0] + _wrap(parsed[i][1], 32).to_bytes(4, "big", signed=True))
                           for i in which], dtype=np.uint8)
        lookup = np.full(len(parsed), -1, np.intp)
        lookup[which] = np.arange(len(which))
        rows = np.flatnonzero(lookup[codes] >= 0)
        if len(which) == len(parsed):  # one address family: a plain <U array
            return _hex_rows(np.hstack([prefix[lookup[codes]], off_bytes]))
        out[rows] = _hex_rows(np.hstack([prefix[lookup[codes[rows]]], off_bytes[rows]]))
    return out


# ------------------------------------------------------------------------------- unique id


def _zone(tz: Any) -> _dt.tzinfo | None:
    if tz is None or isinstance(tz, _dt.tzinfo):
        return tz
    from zoneinfo import ZoneInfo

    return ZoneInfo(str(tz))


def month_start_ms(timestamp_ms: int, tz: Any = None) -> int:
    """Midnight on the 1st of the month holding `timestamp_ms`, in ms, in time zone `tz`
    (a tzinfo or an IANA name; None = this process's local zone, as the JVM's default zone).

    This is ``MessageClientIDSetter.setStartTime``: the base of a unique id's time field.

    >>> month_start_ms(1718000000000, "UTC")        # 2024-06-10 06:13:20 UTC
    1717200000000
    """
    zone = _zone(tz)
    try:
        t = _dt.datetime.fromtimestamp(int(timestamp_ms) // 1000, zone or _dt.UTC)
        if zone is None:
            t = t.astimezone()  # local zone
        start = t.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
        if zone is None:
            start = start.replace(tzinfo=None)  # a naive local time: .timestamp() resolves it locally
        return int(start.timestamp()) * 1000
    except (OverflowError, OSError, ValueError) as e:
        raise ValueError(f"timestamp {timestamp_ms} ms is outside the dates datetime can handle: {e}") from None


def _add_months(ms: int, months: int, tz: Any) -> int:
    zone = _zone(tz)
    try:
        t = _dt.datetime.fromtimestamp(ms // 1000, zone or _dt.UTC)
        if zone is None:
            t = t.astimezone().replace(tzinfo=None)
        y, m = divmod(t.year * 12 + (t.month - 1) + months, 12)
        return int(t.replace(year=y, month=m + 1, day=1).timestamp()) * 1000
    except (OverflowError, OSError, ValueError) as e:
        raise ValueError(f"{ms} ms + {months} months is outside the dates datetime can handle: {e}") from None


class UniqId(NamedTuple):
    """A decoded unique id (UNIQ_KEY). `timestamp_ms` is None unless a reference was given."""

    ip: str
    pid: int                 # (short) pid & 0xFFFF, as getPidFromID
    class_loader_hash: int   # the client's ClassLoader hashCode, signed 32-bit
    month_offset_ms: int     # ms since the start of the month, as stored (unsigned 32-bit)
    counter: int             # the per-JVM counter, & 0xFFFF
    timestamp_ms: int | None = None


def create_uniq_id(ip: Any, pid: int, class_loader_hash: int, timestamp_ms: int, counter: int, *,
                   tz: Any = None, start_time_ms: int | None = None) -> str:
    """A unique id (UNIQ_KEY) as ``MessageClientIDSetter.createUniqID`` writes it at `timestamp_ms`.

    `ip` is an address string or 4/16 bytes. The time field is ``(int)(timestamp - startTime)``
    where startTime is the start of the month in `tz` (the JVM's zone; None = local), unless
    `start_time_ms` is given (a JVM that started earlier keeps its start until the month rolls);
    a negative difference above -1,000,000 ms (a clock stepped back) is written as 0, as Java.
    Cost: O(1).
    """
    raw_ip = ip if isinstance(ip, (bytes, bytearray)) else ipaddress.ip_address(str(ip)).packed
    if len(raw_ip) not in (4, 16):
        raise ValueError(f"an address is 4 or 16 bytes, got {len(raw_ip)}")
    start = month_start_ms(timestamp_ms, tz) if start_time_ms is None else int(start_time_ms)
    diff = _wrap(int(timestamp_ms) - start, 32)
    if -_NTP_STEP_MS < diff < 0:
        diff = 0
    return (bytes(raw_ip) + (int(pid) & 0xFFFF).to_bytes(2, "big")
            + _wrap(int(class_loader_hash), 32).to_bytes(4, "big", signed=True)
            + (diff & 0xFFFFFFFF).to_bytes(4, "big") + (int(counter) & 0xFFFF).to_bytes(2, "big")).hex().upper()


def uniq_id_time(month_offset_ms: int, now: int, tz: Any = None) -> int:
    """``MessageClientIDSetter.getNearlyTimeFromID``: the instant a unique id was made, given the
    id's month offset and a reference instant `now` (ms) after it.

    Takes the start of `now`'s month; if that plus the offset is not before `now`, uses the
    previous month instead. Right whenever the id is less than about a month older than `now`.
    """
    start = month_start_ms(now, tz)
    if start + month_offset_ms >= now:
        start = _add_months(start, -1, tz)
    return start + month_offset_ms


def parse_uniq_id(uniq_id: str, *, now: int | None = None, tz: Any = None) -> UniqId:
    """Split a unique id into ip, pid, class-loader hash, month offset and counter.

    With `now` (ms; e.g. the message's store timestamp) the creation time is also computed, as
    :func:`uniq_id_time` (Java uses the reader's clock). 56 hex digits = IPv6 client, 32 = IPv4.
    Raises ValueError for other lengths or non-hex text, and for a `now` outside the dates
    Python's datetime handles (years 1..9999; e.g. a corrupt store timestamp).
    """
    raw = _unhex(uniq_id, "unique id")
    n = 16 if len(raw) == 28 else 4
    pid = int.from_bytes(raw[n:n + 2], "big")
    clh = int.from_bytes(raw[n + 2:n + 6], "big", signed=True)
    offset = int.from_bytes(raw[n + 6:n + 10], "big")
    counter = int.from_bytes(raw[n + 10:n + 12], "big")
    ts = None if now is None else uniq_id_time(offset, int(now), tz)
    return UniqId(_ip_text(raw[:n]), pid, clh, offset, counter, ts)


def uniq_ids_many(ip: Any, pid: Any, class_loader_hash: Any, timestamps_ms: Any, counters: Any, *,
                  tz: Any = None) -> np.ndarray:
    """Unique ids for many messages, as a NumPy array of str: the same text as
    :func:`create_uniq_id` row by row. Cost: O(n) vectorized (the month start is computed once
    per distinct month).

    `timestamps_ms` and `counters` are integer arrays; `ip`, `pid` and `class_loader_hash` are
    one value for all rows (one producer JVM) or arrays of one value a row (several producers;
    `ip` then a sequence of address strings, all IPv4 or all IPv6).

    >>> uniq_ids_many("10.0.0.7", 4242, 0x1B6D3586, [1718000000000], [7], tz="UTC").tolist()
    ['0A00000710921B6D35862FAF08000007']
    """
    ts = np.asarray(timestamps_ms, dtype=np.int64).reshape(-1)
    n = len(ts)
    cnt = np.broadcast_to(np.asarray(counters, dtype=np.int64), (n,))
    pids = np.broadcast_to(np.asarray(pid, dtype=np.int64), (n,))
    clh = np.broadcast_to(np.asarray(class_loader_hash, dtype=np.int64), (n,))
    if isinstance(ip, (str, bytes, bytearray)):
        one = ip if isinstance(ip, (bytes, bytearray)) else ipaddress.ip_address(ip).packed
        ips = np.broadcast_to(np.frombuffer(bytes(one), np.uint8), (n, len(one)))
    else:
        import pandas as pd

        codes, uniques = pd.factorize(np.asarray(ip, dtype=object).reshape(-1))
        packed = [ipaddress.ip_address(str(u)).packed for u in uniques]
        if len({len(p) for p in packed}) > 1:
            raise ValueError("uniq_ids_many needs all-IPv4 or all-IPv6 addresses in one call")
        ips = np.array([list(p) for p in packed], dtype=np.uint8).reshape(len(packed), -1)[codes]
    # Month starts: one per distinct month between the first and the last timestamp.
    starts = np.empty(n, np.int64)
    if n:
        months = [month_start_ms(int(ts.min()), tz)]
        end = int(ts.max())
        while True:
            nxt = _add_months(months[-1], 1, tz)
            if nxt > end:
                break
            months.append(nxt)
        bounds = np.array(months, np.int64)
        starts = bounds[np.searchsorted(bounds, ts, side="right") - 1]
    diff = (ts - starts).astype(np.int64)
    diff = ((diff + 2**31) % 2**32) - 2**31  # (int) cast
    diff[(diff < 0) & (diff > -_NTP_STEP_MS)] = 0
    width = 2 * (ips.shape[1] + 12)
    if n == 0:
        return np.empty(0, dtype=f"<U{width}")
    fixed = np.hstack([ips, (pids & 0xFFFF).astype(">u2").view(np.uint8).reshape(n, 2),
                       (clh & 0xFFFFFFFF).astype(">u4").view(np.uint8).reshape(n, 4)])
    distinct, codes = np.unique(fixed, axis=0, return_inverse=True)
    ids = uniq_ids_arrow(_hex_rows(distinct).tolist(), codes.reshape(-1), diff, cnt)
    return ids.to_numpy(zero_copy_only=False).astype(f"<U{width}")


#: 16-bit word -> its 4 upper-case hex digits, as one uint32 of ASCII bytes (a 256 KiB table)
_HEX_WORDS = np.frombuffer(b"".join(b"%04X" % i for i in range(1 << 16)), np.uint32)


def uniq_ids_arrow(prefixes: Sequence[str], codes: Any, month_offsets_ms: Any, counters: Any):
    """Unique ids for many messages as a pyarrow StringArray, written straight into Arrow's
    buffers: O(messages), one pass, no Python string per row.

    `prefixes` are the fixed parts of the ids, one per producer JVM, as hex text (the first
    20 digits of an IPv4 id, 44 of an IPv6 one: ``create_uniq_id(...)[:-12]``); `codes` says
    which prefix each row uses; `month_offsets_ms` is each message's ms since the start of its
    month (Java's ``(int)`` of it is stored) and `counters` the per-JVM counter (its low 16 bits).

    >>> p = create_uniq_id("10.0.0.7", 4242, 0x1B6D3586, 1718000000000, 0, tz="UTC")[:-12]
    >>> uniq_ids_arrow([p], [0], [1718000000000 - month_start_ms(1718000000000, "UTC")], [7]).to_pylist()
    ['0A00000710921B6D35862FAF08000007']
    """
    import pyarrow as pa

    codes = np.asarray(codes, dtype=np.int64).reshape(-1)
    n = len(codes)
    offsets_ms = np.broadcast_to(np.asarray(month_offsets_ms, dtype=np.int64), (n,))
    cnt = np.broadcast_to(np.asarray(counters, dtype=np.int64), (n,))
    words = np.empty((n, 3), np.int64)                # three 16-bit words, big-endian order
    words[:, 0] = (offsets_ms >> 16) & 0xFFFF
    words[:, 1] = offsets_ms & 0xFFFF
    words[:, 2] = cnt & 0xFFFF
    tail = _HEX_WORDS[words].view(np.uint8).reshape(n, 12)
    raw = [p.encode("ascii") for p in prefixes]
    widths = np.array([len(r) for r in raw], dtype=np.int64)
    distinct = sorted(set(widths.tolist()))           # IPv4 and IPv6 ids differ in length
    row_widths = widths[codes] if len(distinct) > 1 else None
    parts: list[pa.StringArray] = []
    where: list[np.ndarray] = []
    for w in distinct if n else []:
        table = np.zeros((len(raw), w), np.uint8)
        for i, r in enumerate(raw):
            if len(r) == w:
                table[i] = np.frombuffer(r, np.uint8)
        rows = np.flatnonzero(row_widths == w) if row_widths is not None else None
        if rows is not None and not len(rows):
            continue
        m = n if rows is None else len(rows)
        mat = np.empty((m, w + 12), np.uint8)
        mat[:, :w] = table[codes if rows is None else codes[rows]]
        mat[:, w:] = tail if rows is None else tail[rows]
        offsets = np.arange(0, (m + 1) * (w + 12), w + 12, dtype=np.int32)
        parts.append(pa.StringArray.from_buffers(m, pa.py_buffer(offsets), pa.py_buffer(mat)))
        if rows is not None:      # None: one width, one part, which needs no reordering
            where.append(rows)
    if not parts:
        return pa.array([], pa.string())
    if len(parts) == 1:
        return parts[0]
    pos = np.empty(n, np.int64)
    pos[np.concatenate(where)] = np.arange(n)
    return pa.concat_arrays(parts).take(pa.array(pos))
