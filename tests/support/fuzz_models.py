"""Independent models for the fuzz targets' properties (``fuzz_support``): each reads the bytes
of one format with the standard library alone (struct, json, re; and the suite's other
standard-library readers: indexfile_stdlib's key hash, kafka_stdlib's CRC-32C) by the
brokers' rules, named with the class and release they come from, and imports nothing from
rmqlab, so a fuzz input judged by one of them is judged by code that shares no line with the
reader under test. Each model answers only what its format's rule decides; where a rule needs more than a
few lines (a codec, a schema), the model says nothing and the property does not run.

Every model must stay total: any bytes give an answer or ``None`` (undecided), never an
exception, because the fuzzer feeds them the same hostile inputs as the readers.
"""
from __future__ import annotations

import json
import re
import struct

from indexfile_stdlib import key_hash  # IndexFile.indexKeyHashMethod, in the standard library alone
from kafka_stdlib import crc32c  # Kafka's Crc32C, table driven

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def wrap_long(v: int) -> int:
    """A Java long's two's-complement wrap."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >> 63 else v


def wrap_int(v: int) -> int:
    v &= (1 << 32) - 1
    return v - (1 << 32) if v >> 31 else v


# ----------------------------------------------------------------------------- RocketMQ IndexFile


def index_select(data: bytes, hash_slot_num: int, index_num: int, key: str, max_num: int,
                 begin: int, end: int) -> list[int] | None:
    """IndexFile.selectPhyOffset (4.9.7) on the bytes of a file of that geometry: the slot's
    chain walked while prevIndex is in (0, indexCount], not the entry itself, and the time is
    not older than `begin`; a read past the mapped file ends the walk (the broker's
    IndexOutOfBoundsException is caught and the list kept). None when the file is not the
    geometry's size (the broker maps exactly that many bytes). The broker would loop forever
    on a cycle that never matches: the model stops after `index_num` reads without a result,
    the bound a sound chain never reaches."""
    if hash_slot_num <= 0 or index_num <= 0 or len(data) != 40 + 4 * hash_slot_num + 20 * index_num:
        return None
    begin_ts = struct.unpack_from(">q", data, 0)[0]
    count = struct.unpack_from(">i", data, 36)[0]
    h = key_hash(key)
    slot = struct.unpack_from(">i", data, 40 + 4 * (h % hash_slot_num))[0]
    out: list[int] = []
    if slot <= 0 or slot > count or count <= 1:
        return out
    entries = 40 + 4 * hash_slot_num
    cur, idle = slot, 0
    while len(out) < max_num:
        at = entries + 20 * cur
        if at + 20 > len(data) or idle >= index_num:
            break
        stored_hash, phy, diff, prev = struct.unpack_from(">iqii", data, at)
        idle += 1
        if diff < 0:
            break
        t = wrap_long(begin_ts + diff * 1000)
        if stored_hash == h and begin <= t <= end:
            out.append(phy)
            idle = 0
        if prev <= 0 or prev > count or prev == cur or t < begin:
            break
        cur = prev
    return out


# ----------------------------------------------------------------------------- RocketMQ ConsumeQueue


def consumequeue_end(files: list[tuple[int, bytes]], file_size: int) -> int | None:
    """ConsumeQueue.recover (4.9.7): from the third file from the end, units (offset long,
    size int, tagsCode long) while offset >= 0 and size > 0, file after whole file; the end
    is the last good unit's end (a byte offset of the queue). `files`: (start, bytes) in name
    order; None unless every file has the mapped size (MappedFileQueue.load refuses others)."""
    if not files or any(len(b) != file_size for _, b in files) or file_size % 20:
        return None
    k = max(0, len(files) - 3)
    while True:
        start, b = files[k]
        good = 0
        for i in range(0, file_size, 20):
            offset, size = struct.unpack_from(">qi", b, i)
            if offset >= 0 and size > 0:
                good = i + 20
            else:
                break
        if good == file_size and k + 1 < len(files):
            k += 1
            continue
        return start + good


def batch_queue_units(files: list[bytes], file_size: int) -> int | None:
    """BatchConsumeQueue.recover (5.1): the units (46 bytes: commitLogOffset long, size int,
    tagsCode long, storeTime long, msgBaseOffset long, batchSize short, ...) before the end,
    which the first unit with offset < 0, size <= 0, msgBaseOffset < 0 or batchSize <= 0 in
    the files from the third newest on marks; the older files count whole. None unless every
    file has the mapped size."""
    if not files or any(len(b) != file_size for b in files) or file_size % 46:
        return None
    per = file_size // 46
    k0 = max(0, len(files) - 3)
    count = k0 * per
    for b in files[k0:]:
        good = 0
        for i in range(0, file_size, 46):
            offset, size, _, _, base, batch = struct.unpack_from(">qiqqqh", b, i)
            if not (offset >= 0 and size > 0 and base >= 0 and batch > 0):
                break
            good += 1
        count += good
        if good != per:
            break
    return count


TIMER_BLANK_MAGIC = wrap_int(0xBBCCDDEE ^ (1880681586 + 8))   # TimerLog.BLANK_MAGIC_CODE (+ binds before ^)


def timer_log_units(files: list[tuple[int, bytes]]) -> list[int]:
    """The timer log offsets of the units TimerMessageStore.recoverAndRevise walks (5.1): in each
    file, 52-byte units (size int, prevPos long, magic int, ...) from byte 0 up to a blank
    filler (magic BLANK_MAGIC_CODE), an unwritten unit (size 0) or the file's last whole unit."""
    out = []
    for start, b in files:
        for i in range(0, len(b) - len(b) % 52, 52):
            size, _, magic = struct.unpack_from(">iqi", b, i)
            if size == 0 or magic == TIMER_BLANK_MAGIC:
                break
            out.append(start + i)
    return out


def first_base_at_least(buf: bytes, left: int, right: int, target: int) -> int | None:
    """Brute force over the 46-byte units at byte positions left, left + 46, ..., right: the
    position of the first whose msgBaseOffset (int64 at byte 28) is >= `target`, or -1; None
    when their msgBaseOffsets are not in order (a binary search's answer is then its own)."""
    bases = [struct.unpack_from(">q", buf, p + 28)[0] for p in range(left, right + 1, 46)]
    if any(a > b for a, b in zip(bases, bases[1:])):
        return None
    return next((left + 46 * i for i, b in enumerate(bases) if b >= target), -1)


# ----------------------------------------------------------------------------- RocketMQ CommitLog

MAGIC_V1, MAGIC_V2, MAGIC_BLANK = -626843481, -626843477, -875286124


def message_length(data: bytes, pos: int) -> tuple[int, int] | None:
    """(TOTALSIZE, CommitLog.calMsgLength of the record's own length fields) of the record at
    `pos` (MessageDecoder layout, 4.9.7 / 5.x: hosts of 8 or 20 bytes by SYSFLAG bits 0x10 and
    0x20, a 1- or 2-byte topic length by magic v1/v2), or None if a length field lies past
    the bytes or the magic is not a message's."""
    if pos + 8 > len(data):
        return None
    total, magic = struct.unpack_from(">ii", data, pos)
    if magic not in (MAGIC_V1, MAGIC_V2):
        return None
    if pos + 40 > len(data):
        return None
    sys_flag = struct.unpack_from(">i", data, pos + 36)[0]
    born = 20 if sys_flag & 0x10 else 8
    store = 20 if sys_flag & 0x20 else 8
    at = pos + 40 + 8 + born + 8 + store + 4 + 8
    if at + 4 > len(data):
        return None
    body = struct.unpack_from(">i", data, at)[0]
    at += 4 + max(body, 0)
    tl_size = 2 if magic == MAGIC_V2 else 1
    if at + tl_size > len(data):
        return None
    topic = struct.unpack_from(">h" if tl_size == 2 else ">b", data, at)[0]
    at += tl_size + max(topic, 0)
    if at + 2 > len(data):
        return None
    props = struct.unpack_from(">h", data, at)[0]
    if body < 0 or topic < 0 or props < 0:
        return total, -1
    calc = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8 + 4 + body + tl_size + topic + 2 + props
    return total, calc


def message_fields(data: bytes) -> dict | None:
    """The fields of the record at byte 0 (MessageDecoder.decode's order, 4.9.7 / 5.x) when
    its length fields agree with TOTALSIZE (calMsgLength) and it lies within the bytes; else
    None."""
    got = message_length(data, 0)
    if got is None or got[0] != got[1] or not 0 < got[0] <= len(data):
        return None
    try:
        return _message_fields(data)
    except struct.error:   # a negative length can make calMsgLength agree with a record cut short
        return None


def _message_fields(data: bytes) -> dict | None:
    total, magic, _, queue_id, flag, queue_offset, phy, sys_flag = struct.unpack_from(">iiiiiqqi", data, 0)
    born = 20 if sys_flag & 0x10 else 8
    store = 20 if sys_flag & 0x20 else 8
    at = 40 + 8 + born + 8 + store + 4 + 8
    body_len = struct.unpack_from(">i", data, at)[0]
    if body_len < 0:
        return None
    body = data[at + 4:at + 4 + body_len]
    at += 4 + body_len
    if magic == MAGIC_V2:
        topic_len, at = struct.unpack_from(">h", data, at)[0], at + 2
    else:
        topic_len, at = data[at], at + 1
    topic = data[at:at + topic_len]
    at += topic_len
    props_len = struct.unpack_from(">h", data, at)[0]
    return {"total_size": total, "queue_id": queue_id, "flag": flag, "queue_offset": queue_offset,
            "phy_offset": phy, "sys_flag": sys_flag, "body": body, "topic": topic,
            "properties": data[at + 2:at + 2 + props_len]}


def commitlog_file_walk(data: bytes) -> tuple[list[int], str | None]:
    """The records of one CommitLog file (CommitLog.checkMessageAndReturnSize's framing, 4.9.7):
    from byte 0, a record whose TOTALSIZE equals calMsgLength and lies within the file, until
    a blank record (BLANK_MAGIC_CODE; sound when its TOTALSIZE is the bytes left), only zeros
    (unwritten space), or the file's exact end. Returns (record positions, how the walk ended):
    "blank", "zeros", "end", or None where it met anything else (damage or a torn record)."""
    out: list[int] = []
    pos = 0
    while pos < len(data):
        if pos + 8 > len(data):
            return out, None if any(data[pos:]) else "zeros"
        total, magic = struct.unpack_from(">ii", data, pos)
        if magic == MAGIC_BLANK:   # the end-of-file filler, whose TOTALSIZE the broker writes as
            return out, "blank" if total == len(data) - pos else None   # the bytes left (CommitLog.doAppend)
        if total == 0 and not any(data[pos:]):
            return out, "zeros"
        got = message_length(data, pos)
        if got is None or got[0] != got[1] or got[0] <= 0 or pos + got[0] > len(data):
            return out, None
        out.append(pos)
        pos += got[0]
    return out, "end"


def commitlog_store_sound(files: list[bytes], endings: list[str | None]) -> bool:
    """Whether a CommitLog folder's files (in order, with commitlog_file_walk's endings) hold no
    damage: every file's walk ends cleanly, and a file whose records end in zeros has only zeros
    after it. Zeros read as magic code 0, an illegal one, so CommitLog.recoverNormally (4.9.7)
    ends the store there and truncateDirtyFiles drops every later file: a later file's records
    would be lost, while an all-zero file after the active one is only preallocated space."""
    if None in endings:
        return False
    return all(not any(later) for i, end in enumerate(endings) if end == "zeros" for later in files[i + 1:])


# ----------------------------------------------------------------------------- message ids

_HEX = re.compile(r"[0-9A-Fa-f]*")


def id_fields(text: str) -> tuple[bytes, bytes] | None:
    """(address bytes, the rest) of a message id: 32 hex digits hold an IPv4 address (4 bytes),
    56 an IPv6 one (16), as MessageDecoder.createMessageId and MessageClientIDSetter.createUniqID
    write them (4.9.7); None for other text."""
    if len(text) not in (32, 56) or not _HEX.fullmatch(text):
        return None
    raw = bytes.fromhex(text)
    n = 4 if len(raw) == 16 else 16
    return raw[:n], raw[n:]


# ----------------------------------------------------------------------------- Kafka log segments


def kafka_frames(data: bytes) -> tuple[list[tuple[int, int, int, int]], str]:
    """The entries of a Kafka log segment as FileLogInputStream.nextBatch frames them (3.6):
    [baseOffset int64][length int32] then the rest; magic at byte 16. Returns ((position, size,
    magic, last offset), how the walk ended): "end" at the file's end, "torn" for an entry
    the file cuts (17 bytes or fewer left, or a length past the end: nextBatch's null), and
    also for an all-zero rest of the file (space a preallocated segment never got written,
    which LogSegment.recover truncates as it does a torn entry), "damage" for a length below
    the legacy v0 minimum (RECORD_OVERHEAD_V0 = 14), a v2 batch shorter than its 61-byte header
    or a magic other than 0, 1, 2. The last offset: baseOffset + lastOffsetDelta (int32 at byte
    23) for v2; a legacy entry's offset field for magic 0 and 1 (a wrapper's is its last inner
    offset)."""
    out = []
    pos = 0
    n = len(data)
    while True:
        if pos == n:
            return out, "end"
        if pos + 17 >= n or not any(data[pos:]):
            return out, "torn"
        base, length = struct.unpack_from(">qi", data, pos)
        magic = data[pos + 16]
        if length < 14:
            return out, "damage"
        size = 12 + length
        if pos + size > n:
            return out, "torn"
        if magic > 2 or (magic == 2 and size < 61) or (magic == 1 and size < 34) or (magic == 0 and size < 26):
            return out, "damage"
        last = wrap_long(base + struct.unpack_from(">i", data, pos + 23)[0]) if magic == 2 else base
        out.append((pos, size, magic, last))
        pos += size


def kafka_v2_batches(data: bytes) -> list[tuple[int, int, bool, int, int]] | None:
    """(position, recordsCount, control flag, baseOffset, last offset) of each whole entry
    kafka_frames finds, all v2 batches (DefaultRecordBatch: attributes int16 at byte 21, the
    control flag its bit 5; recordsCount int32 at byte 57); None when one is a legacy entry
    (its records are the wrapper's business) or the walk met damage."""
    frames, how = kafka_frames(data)
    if how == "damage" or any(magic != 2 for _, _, magic, _ in frames):
        return None
    return [(p, struct.unpack_from(">i", data, p + 57)[0], bool(struct.unpack_from(">h", data, p + 21)[0] & 0x20),
             struct.unpack_from(">q", data, p)[0], last) for p, _, _, last in frames]


# ----------------------------------------------------------------------------- Kafka small files

_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")   # ProducerStateManager PRODUCER_SNAPSHOT_ENTRY_SCHEMA v1


def producer_snapshot(data: bytes) -> dict | None:
    """ProducerStateManager.readSnapshot (3.6): version int16, crc uint32 (CRC-32C of every byte
    after it), the entries array (int32 count, 46-byte entries). Returns the stored and
    computed CRCs and, when the array is whole, the producer ids; None for fewer than 10
    bytes."""
    if len(data) < 10:
        return None
    version, stored, count = struct.unpack_from(">hIi", data, 0)
    out = {"version": version, "stored": stored, "computed": crc32c(data[6:]), "count": count, "ids": None}
    if 0 <= count and 10 + count * _SNAPSHOT_ENTRY.size <= len(data):
        out["ids"] = [_SNAPSHOT_ENTRY.unpack_from(data, 10 + i * _SNAPSHOT_ENTRY.size)[0] for i in range(count)]
    return out


def txn_index(data: bytes) -> list[tuple[int, int, int, int, int]] | None:
    """TransactionIndex's AbortedTxn entries (3.6): 34 bytes each (version int16, producerId,
    firstOffset, lastOffset, lastStableOffset int64) in file order; a partial entry at the
    end is not read. AbortedTxn.version() reads the field's first byte (ByteBuffer.get, a
    signed byte), and the iterator throws for a version above CURRENT_VERSION 0: None then."""
    out = []
    for i in range(0, len(data) - len(data) % 34, 34):
        _, producer, first, last, stable = struct.unpack_from(">hqqqq", data, i)
        version = struct.unpack_from(">b", data, i)[0]
        if version > 0:
            return None
        out.append((version, producer, first, last, stable))
    return out


_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def _java_parse(text: str, bits: int) -> int | None:
    """Integer.parseInt / Long.parseLong on ASCII text: an optional sign and digits, in range."""
    if not _JAVA_INT.fullmatch(text) or len(text.lstrip("+-").lstrip("0")) > 20:
        return None   # more digits than any long has (and than Python's int() takes from text)
    v = int(text)
    return v if -(1 << (bits - 1)) <= v < 1 << (bits - 1) else None


def leader_epoch_checkpoint(data: bytes) -> list[tuple[int, int]] | str | None:
    """CheckpointFile.CheckpointReadBuffer.read with LeaderEpochCheckpointFile's formatter (3.6):
    lines as BufferedReader.readLine splits them (\\n, \\r, \\r\\n); the version line, parsed as
    is (no trim), must be 0; a missing version or count line is an empty list; every later line
    splits on \\s+ into exactly two numbers (int epoch, long offset); their count must equal the
    count line. Returns the entries, "refused" where Kafka throws, "short" where the version or
    the count line is missing (Kafka reads no entries), None where the model cannot decide
    (text that is not ASCII: Java's digit rules reach past it)."""
    if any(b > 0x7F for b in data):
        return None
    text = data.decode("ascii")
    lines = re.split(r"\r\n|\r|\n", text)
    if lines and lines[-1] == "":
        lines.pop()            # readLine: a final line terminator ends the last line, adds none
    if not lines:
        return "short"
    if _java_parse(lines[0], 32) != 0:
        return "refused"
    if len(lines) < 2:
        return "short"
    count = _java_parse(lines[1], 32)
    if count is None:
        return "refused"
    out = []
    for line in lines[2:]:
        parts = re.split(r"[ \t\n\x0b\f\r]+", line)
        while parts and parts[-1] == "":
            parts.pop()        # String.split drops trailing empty strings
        if len(parts) != 2:
            return "refused"
        epoch, offset = _java_parse(parts[0], 32), _java_parse(parts[1], 64)
        if epoch is None or offset is None:
            return "refused"
        out.append((epoch, offset))
    return out if len(out) == count else "refused"


# ----------------------------------------------------------------------------- JSON documents


class _Undecided(Exception):
    pass


class _Doc:
    """A recursive-descent reader of JSON plus the one thing fastjson writes beyond it in a
    broker's config/ files: bare integer object keys (a Map<Integer, ...>, e.g. delayOffset.json's
    offsetTable). Anything else fastjson might accept is outside the model (undecided)."""

    _STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\.)*"')
    _NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
    _WS = re.compile(r"[ \t\n\r]*")

    def __init__(self, text: str):
        self.t, self.i = text, 0

    def ws(self) -> None:
        self.i = self._WS.match(self.t, self.i).end()

    def value(self, depth: int):
        if depth > 64:
            raise _Undecided("depth")
        self.ws()
        t, i = self.t, self.i
        if t.startswith("{", i):
            self.i += 1
            out = {}
            self.ws()
            if t.startswith("}", self.i):
                self.i += 1
                return out
            while True:
                self.ws()
                m = self._STRING.match(t, self.i)
                if m:
                    key = json.loads(m.group())
                else:
                    m = re.compile(r"-?[0-9]{1,18}").match(t, self.i)
                    if not m:
                        raise _Undecided("key")
                    key = int(m.group())
                self.i = m.end()
                self.ws()
                if not t.startswith(":", self.i):
                    raise _Undecided(":")
                self.i += 1
                out[key] = self.value(depth + 1)
                self.ws()
                if t.startswith(",", self.i):
                    self.i += 1
                elif t.startswith("}", self.i):
                    self.i += 1
                    return out
                else:
                    raise _Undecided("}")
        if t.startswith("[", i):
            self.i += 1
            items = []
            self.ws()
            if t.startswith("]", self.i):
                self.i += 1
                return items
            while True:
                items.append(self.value(depth + 1))
                self.ws()
                if t.startswith(",", self.i):
                    self.i += 1
                elif t.startswith("]", self.i):
                    self.i += 1
                    return items
                else:
                    raise _Undecided("]")
        m = self._STRING.match(t, i)
        if m:
            self.i = m.end()
            return json.loads(m.group())
        for word, v in (("true", True), ("false", False), ("null", None)):
            if t.startswith(word, i):
                self.i += len(word)
                return v
        m = self._NUMBER.match(t, i)
        if m and m.group().lstrip("-").isdigit() and len(m.group()) <= 18:
            self.i = m.end()
            return int(m.group())
        raise _Undecided("value")


def config_json(data: bytes):
    """A config/ file's document (UTF-8 JSON with bare integer keys allowed, integers of 18
    digits at most, no fractions), else None."""
    try:
        d = _Doc(data.decode("utf-8"))
        v = d.value(0)
        d.ws()
        return v if d.i == len(d.t) else None
    except (ValueError, _Undecided, RecursionError):
        return None




# ----------------------------------------------------------------------------- RocketMQ revive log

#: the JSON names (@JSONField, then the bean name) of the fields the model reads: PopCheckPoint,
#: AckMsg and BatchAckMsg at 5.1
REVIVE_FIELDS = {"start_offset": ("so", "startOffset"), "pop_time": ("pt", "popTime"),
                 "queue_id": ("q", "queueId"), "topic": ("t", "topic"), "num": ("n", "num"),
                 "ack_offset": ("ao", "ackOffset"), "ack_offsets": ("aol", "ackOffsetList")}


def revive_fields(data: bytes, fields: tuple[str, ...]) -> dict | None:
    """The named fields of a revive-log body read as config_json reads it: a field missing is
    fastjson's default (0; None for a string; an empty list); None (undecided) when the body is
    not such a document or a field is present under both its names (which one fastjson keeps
    is its parser's order, not the model's)."""
    doc = config_json(data)
    if not isinstance(doc, dict):
        return None
    out = {}
    for f in fields:
        names = [n for n in REVIVE_FIELDS[f] if n in doc]
        if len(names) > 1:
            return None
        default = None if f == "topic" else [] if f == "ack_offsets" else 0
        out[f] = doc[names[0]] if names else default
    return out


# ----------------------------------------------------------------------------- RocketMQ tiered store


def tiered_local_items(data: bytes, slots: int) -> list[tuple] | None:
    """The items of a local (unsealed) IndexStoreFile (5.2, RIP-65): a 28-byte header (magic,
    beginTimestamp, endTimestamp, slotCount, itemCount at byte 24), `slots` 8-byte slots, then
    32-byte items numbered from 0 (hashCode, topicId, queueId int, offset long, size, timeDiff,
    itemIndex int); the written ones are 1..itemCount, within the file's items. None unless the
    file is a whole number of items after its slots (the model knows no other geometry)."""
    at = 28 + 8 * slots
    if len(data) < at or (len(data) - at) % 32:
        return None
    index_num = (len(data) - at) // 32
    count = struct.unpack_from(">i", data, 24)[0]
    return [struct.unpack_from(">iiiqiii", data, at + 32 * i) for i in range(1, min(count, index_num - 1) + 1)]


_TI51_END = wrap_int(0xCCDDEEFF ^ (1880681586 + 8))   # TieredIndexFile.END_MAGIC_CODE at 5.1 (+ binds before ^)


def tiered51_uploaded_slot(data: bytes, hash_code: int) -> list[tuple] | str | None:
    """The items an uploaded (compacted) 5.1 TieredIndexFile keeps in `hash_code`'s slot, as
    TieredIndexFile.queryAsync reads them (CompactTask's layout): a 28-byte header (magic,
    beginTimestamp, endTimestamp, slotCount at byte 20, itemCount), slotCount slots of
    (position int, length int), 28-byte items (hashCode, topicId, queueId, offset long, size,
    timeDiff). "refused" where the header is short, the magic is not END_MAGIC_CODE, the slot
    count not positive, or the slot lies or points outside the file; None (undecided) for a
    negative hash (Java's % would give a negative slot)."""
    if hash_code < 0:
        return None
    if len(data) < 28:
        return "refused"
    magic, _, _, slots, _ = struct.unpack_from(">iqqii", data, 0)
    if magic != _TI51_END or slots <= 0:
        return "refused"
    at = 28 + 8 * (hash_code % slots)
    if at + 8 > len(data):
        return "refused"
    position, length = struct.unpack_from(">ii", data, at)
    if position == -1 or length <= 0:
        return []
    if position < 28 or length % 28 or position + length > len(data):
        return "refused"
    return [struct.unpack_from(">iiiqii", data, p) for p in range(position, position + length, 28)]


def tiered51_local_slot(data: bytes, hash_code: int, slots: int) -> list[tuple] | str | None:
    """The chain of `hash_code`'s slot in a local 5.1 TieredIndexFile of `slots` slots, newest
    first, as CompactTask walks it: the file is 40 + 8 x slots + 32 x items + 4 bytes (else
    "refused"); slots (int head, 4 bytes unused) at byte 28, then 32-byte items (hashCode,
    topicId, queueId, offset long, size, timeDiff, prevIndex); the walk follows prevIndex while
    it is an item of the file, and at most `items` steps (a cycle the broker would walk for
    ever). Items as (hashCode, topicId, queueId, offset, size, timeDiff); None for a negative
    hash."""
    if hash_code < 0:
        return None
    items = (len(data) - 44 - 8 * slots) // 32
    if slots <= 0 or items <= 0 or 44 + 8 * slots + 32 * items != len(data):
        return "refused"
    base = 28 + 8 * slots
    at = struct.unpack_from(">i", data, 28 + 8 * (hash_code % slots))[0]
    out = []
    while 0 <= at < items and len(out) < items:
        *item, prev = struct.unpack_from(">iiiqiii", data, base + 32 * at)
        out.append(tuple(item))
        at = prev
    return out


def tiered_queue_items(commitlog: bytes, consumequeue: bytes, first: int) -> list[tuple[int, int, int, int]]:
    """The ConsumeQueue items a tiered queue serves (FlatMessageFile, 5.3): its one ConsumeQueue
    segment's 20-byte items (commitLogOffset long, size int, tagsCode long), the first at
    queue offset `first` (the segment's name / 20), from getConsumeQueueMinOffset on: the larger
    of `first` and the QUEUEOFFSET (int64 at byte 20) of the CommitLog segment's first record,
    when it holds 28 bytes. Rows (queue offset, commitLogOffset, size, tagsCode)."""
    low = max(first, struct.unpack_from(">q", commitlog, 20)[0]) if len(commitlog) >= 28 else first
    out = []
    for i in range(len(consumequeue) // 20):
        if first + i >= low:
            out.append((first + i, *struct.unpack_from(">qiq", consumequeue, 20 * i)))
    return out


# ----------------------------------------------------------------------------- RocketMQ 5.5 RocksDB


def rocksdb_message_records(families: dict[str, list[tuple[bytes, bytes]]]) -> dict | str:
    """What the 5.5 message RocksDB's column families hold, by IndexRocksDBStore,
    TimerRocksDBStore and TransRocksDBStore's layouts: the default family's index records
    besides its lastOffsetPy and lastStoreTimeStamp longs; the timer family's records (key:
    deliver time long + uniqKey; value: size int, offset long) besides its two checkpoint
    longs; the trans family's records besides its lastOffsetPy. "refused" where one of those
    longs is not 8 bytes or a timer record is not of that form (nothing a broker writes).
    Counts, the longs and the timers' (deliver time, size, offset)."""
    def long(v):
        return struct.unpack(">q", v)[0] if len(v) == 8 else None

    out: dict = {"index": 0, "last_offset": None, "last_time": None, "timers": [], "trans": 0, "trans_last": None}
    for k, v in families.get("default", []):
        if k in (b"lastOffsetPy", b"lastStoreTimeStamp"):
            if long(v) is None:
                return "refused"
            out["last_offset" if k == b"lastOffsetPy" else "last_time"] = long(v)
        else:
            out["index"] += 1
    for k, v in families.get("timer", []):
        if k in (b"sys_topic_scan_offset_checkpoint", b"timeline_checkpoint"):
            if long(v) is None:
                return "refused"
            continue
        if len(k) < 8 or len(v) != 12:
            return "refused"
        out["timers"].append((struct.unpack_from(">q", k)[0], *struct.unpack(">iq", v)))
    for k, v in families.get("trans", []):
        if k == b"lastOffsetPy":
            if long(v) is None:
                return "refused"
            out["trans_last"] = long(v)
        else:
            out["trans"] += 1
    return out


# ---------------------------------------------- checkpoint, ConsumeQueueExt, Kafka batches and offset commits


def checkpoint_model(data: bytes) -> tuple[tuple[int, ...], bool]:
    """StoreCheckpoint as the broker maps it, by struct alone: the six big-endian longs at 0, 8,
    ..., 40 (bytes past the file's end read as zeros: the broker extends the file to 4096), and
    whether a strict reader may accept the file (exactly 4096 bytes, nothing written past the
    48 field bytes)."""
    fields = struct.unpack(">6q", data[:48].ljust(48, b"\0"))
    return fields, len(data) == 4096 and not any(data[48:])


def ext_units_model(data: bytes, file_size: int) -> list[tuple[int, int, int, int, int]]:
    """ConsumeQueueExt.recover's walk by struct alone, over `data` cut into `file_size`-byte
    files: in each file, units while the 2-byte size is > 0, stopping at a size under the
    20-byte header or a unit that runs past the file. Each unit as (logical offset, size,
    tags code, store time, bit map size)."""
    out = []
    for start in range(0, len(data), file_size):
        buf = data[start:start + file_size]
        pos = 0
        while pos + 2 <= len(buf):
            size = struct.unpack_from(">h", buf, pos)[0]
            if size < 20 or pos + size > len(buf):   # <= 0: the file's end of data; else a bad unit
                break
            tags, stored, bits = struct.unpack_from(">qqh", buf, pos + 2)
            out.append((start + pos, size, tags, stored, bits))
            pos += size
    return out


def whole_v2_batches(data: bytes, crc: bool = True) -> list[tuple[int, int, int, int]] | None:
    """DefaultRecordBatch's header by struct: (position, attributes, last offset delta, record
    count) of each batch when `data` is nothing but whole magic-2 batches (with their CRC-32C
    right, when `crc`), else None. Fields: baseOffset i64 @0, batchLength i32 @8 (bytes after it), magic
    i8 @16, crc u32 @17 (over attributes .. end), attributes i16 @21, lastOffsetDelta i32 @23,
    ..., recordCount i32 @57; 61 header bytes."""
    out, p = [], 0
    while p < len(data):
        if p + 61 > len(data):
            return None
        length = struct.unpack_from(">i", data, p + 8)[0]
        end = p + 12 + length
        if length < 49 or end > len(data) or data[p + 16] != 2:
            return None
        if crc and struct.unpack_from(">I", data, p + 17)[0] != crc32c(data[p + 21:end]):
            return None
        attributes, delta = struct.unpack_from(">hi", data, p + 21)
        out.append((p, attributes, delta, struct.unpack_from(">i", data, p + 57)[0]))
        p = end
    return out


def offset_commit_model(data: bytes) -> dict | None:
    """OffsetCommitValue (GroupMetadataManager's schemas v0-v4) by struct: version i16, offset
    i64, v3+ leaderEpoch i32, metadata (i16 length, or v4's compact uvarint length + 1) as
    UTF-8, commitTimestamp i64, v1 expireTimestamp i64. None when the bytes run short, the
    version is unknown, or the text is not strict UTF-8 (replacement rules differ between
    Java and Python)."""
    try:
        version = struct.unpack_from(">h", data, 0)[0]
        if not 0 <= version <= 4:
            return None
        out = {"version": version, "offset": struct.unpack_from(">q", data, 2)[0]}
        p = 10
        if version >= 3:
            out["leaderEpoch"] = struct.unpack_from(">i", data, p)[0]
            p += 4
        if version >= 4:
            n, shift, u = 0, 0, 0x80
            while u & 0x80:
                u = data[p]
                n |= (u & 0x7F) << shift
                shift, p = shift + 7, p + 1
                if shift > 28:
                    return None
            n -= 1
        else:
            n = struct.unpack_from(">h", data, p)[0]
            p += 2
        if n < 0 or p + n > len(data):
            return None
        out["metadata"] = data[p:p + n].decode("utf-8")
        p += n
        out["commitTimestamp"] = struct.unpack_from(">q", data, p)[0]
        if version == 1:
            out["expireTimestamp"] = struct.unpack_from(">q", data, p + 8)[0]
        return out
    except (struct.error, IndexError, UnicodeDecodeError):
        return None
