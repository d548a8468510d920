"""CommitLog records built and read field by field from the broker's Java source, by code in
this file that shares nothing with rmqlab.

rmqlab's own round trips (encode_message then read_message) would pass a bug made the same way
in both directions. Here the bytes come from a builder and a reader written in this file with
plain ``struct``, in the order and widths of the broker's source, read at three releases:

* rocketmq-all-4.9.4 (commit 06f2208a34907211591114f6b0d327168c250fb3):
  ``store/.../CommitLog.java`` (``calMsgLength``, the nested ``MessageExtEncoder.encode``,
  ``DefaultAppendMessageCallback.doAppend``: v1 records only, 1-byte TOPICLEN);
* rocketmq-all-5.1.4 (commit 1a681bdf9b5c5ab0be446d6394c0cac8768f45d9) and rocketmq-all-5.3.1
  (commit b122c8109d62d7dbdacbb36f2b9c9efa49f9b859): ``store/.../MessageExtEncoder.java``
  (``calMsgLength``, ``encode``), ``common/.../message/MessageDecoder.java`` (``decode``,
  ``createMessageId``, ``string2messageProperties``, the magic codes and the
  ``*_POSITION`` constants), ``common/.../message/MessageVersion.java`` (TOPICLEN 1 byte v1,
  2 bytes v2), ``common/.../message/MessageClientIDSetter.java`` (``createUniqID``: ip +
  (short) pid + class-loader hashCode + (int) ms since the start of the month + (short)
  counter), ``common/.../sysflag/MessageSysFlag.java`` and ``common/.../UtilAll.java``
  (``crc32`` = java.util.zip.CRC32 & 0x7FFFFFFF, ``bytes2string`` = upper-case hex).

Every fixture is checked three ways: rmqlab's readers decode it to exactly the fields built
here, rmqlab's encoder writes exactly these bytes for those fields, and the reader here reads
rmqlab's bytes back to the same fields. The real store files in ``../shared/real-data/rocketmq``
are read by both sides as extra evidence.
"""
from __future__ import annotations

import ipaddress
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles import require_real_data
from reference_model import java_string_to_properties

from rmqlab.formats import commitlog as cl
from rmqlab.formats import msgid

# MessageDecoder.MESSAGE_MAGIC_CODE / _V2 / BLANK_MAGIC_CODE, as the unsigned 32-bit patterns
JAVA_MAGIC_V1 = 0xDAA320A7
JAVA_MAGIC_V2 = 0xDAA320AB
JAVA_MAGIC_BLANK = 0xCBD43194
# MessageSysFlag
SYS_COMPRESSED = 0x1
SYS_PREPARED, SYS_COMMIT, SYS_ROLLBACK = 0x1 << 2, 0x2 << 2, 0x3 << 2
SYS_BORN_V6, SYS_STORE_V6 = 0x1 << 4, 0x1 << 5
SYS_ZLIB_TYPE = 0x3 << 8
# MessageDecoder's absolute positions inside a record with an IPv4 born host
JAVA_QUEUE_OFFSET_POSITION = 4 + 4 + 4 + 4 + 4
JAVA_FLAG_POSITION = 16
JAVA_PHYSIC_OFFSET_POSITION = 28
JAVA_SYSFLAG_POSITION = 4 + 4 + 4 + 4 + 4 + 8 + 8
JAVA_STORE_TIMESTAMP_POSITION = 56

FIELD_NAMES = ("topic", "body", "queue_id", "flag", "queue_offset", "phy_offset", "sys_flag",
               "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
               "prepared_transaction_offset", "properties", "version")


# ------------------------------------------------------------------ the test's own layout


def host_bytes(host: str) -> tuple[bytes, int]:
    """"a.b.c.d:port" or "[v6]:port" -> (InetAddress.getAddress(), port)."""
    addr, _, port = host.rpartition(":")
    return ipaddress.ip_address(addr.strip("[]")).packed, int(port)


def host_text(ip: bytes, port: int) -> str:
    addr = ipaddress.ip_address(ip)
    return f"{addr}:{port}" if addr.version == 4 else f"[{addr.compressed}]:{port}"


def java_crc32(data: bytes) -> int:
    """UtilAll.crc32: java.util.zip.CRC32 of the bytes, & 0x7FFFFFFF."""
    return zlib.crc32(data) & 0x7FFFFFFF


def java_msg_length(version: int, sys_flag: int, body_len: int, topic_len: int, props_len: int) -> int:
    """MessageExtEncoder.calMsgLength, term by term."""
    born = 8 if not sys_flag & SYS_BORN_V6 else 20
    store = 8 if not sys_flag & SYS_STORE_V6 else 20
    return (4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8
            + 4 + max(body_len, 0) + (1 if version == 1 else 2) + topic_len + 2 + max(props_len, 0))


def java_build(f: dict) -> bytes:
    """The bytes MessageExtEncoder.encode writes for fields `f` (PHYSICALOFFSET already set, as
    doAppend puts it), one field at a time in the encoder's order."""
    topic = f["topic"].encode("utf-8")
    body, props = f["body"], f["properties"]
    born_ip, born_port = host_bytes(f["born_host"])
    store_ip, store_port = host_bytes(f["store_host"])
    sys_flag = f["sys_flag"]
    assert (len(born_ip) == 16) == bool(sys_flag & SYS_BORN_V6)
    assert (len(store_ip) == 16) == bool(sys_flag & SYS_STORE_V6)
    version = f["version"]
    out = bytearray()
    out += struct.pack(">i", java_msg_length(version, sys_flag, len(body), len(topic), len(props)))  # 1 TOTALSIZE
    out += struct.pack(">I", JAVA_MAGIC_V1 if version == 1 else JAVA_MAGIC_V2)    # 2 MAGICCODE
    out += struct.pack(">i", f.get("body_crc", java_crc32(body)))                  # 3 BODYCRC
    out += struct.pack(">i", f["queue_id"])                                        # 4 QUEUEID
    out += struct.pack(">i", f["flag"])                                            # 5 FLAG
    out += struct.pack(">q", f["queue_offset"])                                    # 6 QUEUEOFFSET
    out += struct.pack(">q", f["phy_offset"])                                      # 7 PHYSICALOFFSET
    out += struct.pack(">i", sys_flag)                                             # 8 SYSFLAG
    out += struct.pack(">q", f["born_timestamp"])                                  # 9 BORNTIMESTAMP
    out += born_ip + struct.pack(">i", born_port)                                  # 10 BORNHOST
    out += struct.pack(">q", f["store_timestamp"])                                 # 11 STORETIMESTAMP
    out += store_ip + struct.pack(">i", store_port)                                # 12 STOREHOSTADDRESS
    out += struct.pack(">i", f["reconsume_times"])                                 # 13 RECONSUMETIMES
    out += struct.pack(">q", f["prepared_transaction_offset"])                     # 14 Prepared Transaction Offset
    out += struct.pack(">i", len(body)) + body                                     # 15 BODY
    out += struct.pack(">b" if version == 1 else ">h", len(topic)) + topic         # 16 TOPIC
    out += struct.pack(">h", len(props)) + props                                   # 17 PROPERTIES
    return bytes(out)


def java_properties(block: bytes) -> dict[str, str]:
    """MessageDecoder.string2messageProperties on the block decoded as UTF-8."""
    return java_string_to_properties(block.decode("utf-8"))


def java_decode(buf: bytes, pos: int = 0) -> dict:
    """MessageDecoder.decode(readBody=true) of the record at `pos`: every field, plus total
    size, BODYCRC, the parsed properties and the offset msgId (createMessageId)."""
    at = pos

    def take(fmt):
        nonlocal at
        (v,) = struct.unpack_from(fmt, buf, at)
        at += struct.calcsize(fmt)
        return v

    def raw(n):
        nonlocal at
        at += n
        return bytes(buf[at - n:at])

    f: dict = {}
    f["total_size"] = take(">i")
    magic = take(">I")
    assert magic in (JAVA_MAGIC_V1, JAVA_MAGIC_V2), hex(magic)
    f["version"] = 1 if magic == JAVA_MAGIC_V1 else 2
    f["body_crc"] = take(">i")
    f["queue_id"] = take(">i")
    f["flag"] = take(">i")
    f["queue_offset"] = take(">q")
    f["phy_offset"] = take(">q")
    f["sys_flag"] = sys_flag = take(">i")
    f["born_timestamp"] = take(">q")
    born_ip = raw(16 if sys_flag & SYS_BORN_V6 else 4)
    f["born_host"] = host_text(born_ip, take(">i"))
    f["store_timestamp"] = take(">q")
    store_ip = raw(16 if sys_flag & SYS_STORE_V6 else 4)
    store_port = take(">i")
    f["store_host"] = host_text(store_ip, store_port)
    f["reconsume_times"] = take(">i")
    f["prepared_transaction_offset"] = take(">q")
    f["body"] = raw(take(">i"))
    f["topic"] = raw(take(">b" if f["version"] == 1 else ">h")).decode("utf-8")
    f["properties"] = raw(take(">h"))
    assert at - pos == f["total_size"], (at - pos, f["total_size"])
    f["property_map"] = java_properties(f["properties"])
    f["msg_id"] = (store_ip + struct.pack(">i", store_port) + struct.pack(">q", f["phy_offset"])).hex().upper()
    return f


def java_uniq_id(ip: bytes, pid: int, class_loader_hash: int, diff_ms: int, counter: int) -> str:
    """MessageClientIDSetter.createUniqID: FIX_STRING (ip, (short) pid, classLoader hashCode)
    then writeInt(diff) and writeShort(counter), as upper-case hex."""
    return (ip + struct.pack(">hi", (pid & 0xFFFF) - (0x10000 if pid & 0x8000 else 0), class_loader_hash)
            + struct.pack(">I", diff_ms & 0xFFFFFFFF) + struct.pack(">H", counter & 0xFFFF)).hex().upper()


def rmqlab_view(m: cl.Message) -> dict:
    """rmqlab's decoded message, in the names of :func:`java_decode`."""
    return {"total_size": m.total_size, "version": m.version, "body_crc": m.body_crc, "queue_id": m.queue_id,
            "flag": m.flag, "queue_offset": m.queue_offset, "phy_offset": m.phy_offset, "sys_flag": m.sys_flag,
            "born_timestamp": m.born_timestamp, "born_host": m.born_host, "store_timestamp": m.store_timestamp,
            "store_host": m.store_host, "reconsume_times": m.reconsume_times,
            "prepared_transaction_offset": m.prepared_transaction_offset, "body": m.body, "topic": m.topic,
            "properties": m.properties_raw, "property_map": m.properties, "msg_id": m.offset_msg_id}


def expected_view(f: dict) -> dict:
    """What a reader must see in the record `java_build(f)`."""
    data = java_build(f)
    store_ip, store_port = host_bytes(f["store_host"])
    return {**{k: f[k] for k in FIELD_NAMES}, "total_size": len(data),
            "born_host": host_text(*host_bytes(f["born_host"])), "store_host": host_text(store_ip, store_port),
            "body_crc": f.get("body_crc", java_crc32(f["body"])),
            "property_map": java_properties(f["properties"]),
            "msg_id": (store_ip + struct.pack(">iq", store_port, f["phy_offset"])).hex().upper()}


def rmqlab_encode(f: dict) -> bytes:
    return cl.encode_message(**{k: f[k] for k in FIELD_NAMES},
                             **({"body_crc": f["body_crc"]} if "body_crc" in f else {}))


# ------------------------------------------------------------------------------ fixtures

UNIQ_IP = bytes([10, 0, 0, 7])
UNIQ_V6_IP = ipaddress.ip_address("2001:db8::42").packed
UNIQ_ID = java_uniq_id(UNIQ_IP, pid=4242, class_loader_hash=0x1B6D3586, diff_ms=800_000_000, counter=7)
UNIQ_ID_V6 = java_uniq_id(UNIQ_V6_IP, pid=70000, class_loader_hash=-5, diff_ms=12_345, counter=65535)
LONG_TOPIC = "LongTopic-" + "x" * 120 + "-主题"      # 136 bytes: a v1 TOPICLEN byte would read -120

BASE = dict(topic="TopicTest", body=b"Hello RocketMQ", queue_id=3, flag=0x55, queue_offset=42,
            phy_offset=(1 << 32) + 17, sys_flag=0, born_timestamp=1718000000000, born_host="10.0.0.7:52000",
            store_timestamp=1718000000005, store_host="192.168.71.1:10911", reconsume_times=2,
            prepared_transaction_offset=0, properties=b"KEYS\x01k1 k2\x02TAGS\x01TagA\x02", version=1)

FIXTURES = {
    "v1-ipv4": BASE,
    "v1-ipv6-born": BASE | dict(born_host="[2001:db8::7]:52001", sys_flag=SYS_BORN_V6),
    "v1-ipv6-store": BASE | dict(store_host="[fe80::1]:10911", sys_flag=SYS_STORE_V6),
    "v1-ipv6-both": BASE | dict(born_host="[::1]:1", store_host="[2001:db8:0:1::a]:65535",
                                sys_flag=SYS_BORN_V6 | SYS_STORE_V6),
    "v2-long-topic": BASE | dict(topic=LONG_TOPIC, version=2),
    "v2-long-topic-ipv6": BASE | dict(topic=LONG_TOPIC, version=2, store_host="[2001:db8::9]:10911",
                                      sys_flag=SYS_STORE_V6),
    "v2-short-topic": BASE | dict(topic="T", version=2),
    "tx-prepared": BASE | dict(sys_flag=SYS_PREPARED, queue_offset=0,
                               properties=b"TRAN_MSG\x01true\x02PGROUP\x01pg\x02"),
    "tx-commit": BASE | dict(sys_flag=SYS_COMMIT, prepared_transaction_offset=4096,
                             properties=b"TRAN_MSG\x01true\x02PGROUP\x01pg\x02"),
    "tx-rollback": BASE | dict(sys_flag=SYS_ROLLBACK, queue_offset=0, prepared_transaction_offset=4096, body=b""),
    "uniq-key": BASE | dict(properties=b"UNIQ_KEY\x01" + UNIQ_ID.encode() + b"\x02KEYS\x01order-1\x02"),
    "uniq-key-ipv6": BASE | dict(store_host="[2001:db8::9]:10911", sys_flag=SYS_STORE_V6,
                                 properties=b"UNIQ_KEY\x01" + UNIQ_ID_V6.encode() + b"\x02"),
    "no-final-separator": BASE | dict(properties=b"KEYS\x01k1\x02TAGS\x01TagA"),   # brokers 4.9.1 to 5.1.x
    "compressed-zlib": BASE | dict(body=zlib.compress(b"payload " * 40), sys_flag=SYS_COMPRESSED | SYS_ZLIB_TYPE),
    "empty-everything": BASE | dict(topic="", body=b"", properties=b""),
    "stored-crc-kept": BASE | dict(body_crc=12345),
    "negative-extremes": BASE | dict(queue_id=-1, flag=-(2**31), queue_offset=2**63 - 1, phy_offset=0,
                                     born_timestamp=-1, reconsume_times=2**31 - 1,
                                     prepared_transaction_offset=-(2**63)),
}


def test_builder_matches_a_record_written_out_by_hand():
    """The builder itself against one record spelled out field by field (v1, IPv4): TOTALSIZE 98
    = 91 fixed bytes + 2 body + 1 topic + 4 properties."""
    f = dict(topic="T", body=b"hi", queue_id=1, flag=0, queue_offset=5, phy_offset=172, sys_flag=0,
             born_timestamp=0x0102030405060708, born_host="127.0.0.1:10", store_timestamp=1,
             store_host="192.168.71.1:8123", reconsume_times=0, prepared_transaction_offset=0,
             properties=b"K\x01v\x02", version=1)
    by_hand = bytes.fromhex(
        "00000062"                    # TOTALSIZE 98
        "DAA320A7"                    # MAGICCODE v1
        + f"{zlib.crc32(b'hi') & 0x7FFFFFFF:08X}"
        + "00000001" "00000000"       # QUEUEID, FLAG
        "0000000000000005"            # QUEUEOFFSET
        "00000000000000AC"            # PHYSICALOFFSET 172
        "00000000"                    # SYSFLAG
        "0102030405060708"            # BORNTIMESTAMP
        "7F000001" "0000000A"         # BORNHOST 127.0.0.1, port 10
        "0000000000000001"            # STORETIMESTAMP
        "C0A84701" "00001FBB"         # STOREHOST 192.168.71.1, port 8123
        "00000000"                    # RECONSUMETIMES
        "0000000000000000"            # PREPAREDTRANSACTIONOFFSET
        "00000002" "6869"             # BODYLEN, BODY
        "01" "54"                     # TOPICLEN (1 byte), TOPIC
        "0004" "4B017602")            # PROPERTIESLENGTH, PROPERTIES
    assert len(by_hand) == 98
    assert java_build(f) == by_hand
    # MessageDecoder's fixed positions
    assert by_hand[JAVA_QUEUE_OFFSET_POSITION:JAVA_QUEUE_OFFSET_POSITION + 8] == struct.pack(">q", 5)
    assert by_hand[JAVA_FLAG_POSITION:JAVA_FLAG_POSITION + 4] == struct.pack(">i", 0)
    assert by_hand[JAVA_PHYSIC_OFFSET_POSITION:JAVA_PHYSIC_OFFSET_POSITION + 8] == struct.pack(">q", 172)
    assert by_hand[JAVA_SYSFLAG_POSITION:JAVA_SYSFLAG_POSITION + 4] == struct.pack(">i", 0)
    assert by_hand[JAVA_STORE_TIMESTAMP_POSITION:JAVA_STORE_TIMESTAMP_POSITION + 8] == struct.pack(">q", 1)
    assert java_decode(by_hand)["msg_id"] == "C0A8470100001FBB00000000000000AC"


@pytest.mark.parametrize("name", list(FIXTURES))
def test_rmqlab_reads_the_java_layout(name):
    f = FIXTURES[name]
    data = java_build(f)
    want = expected_view(f)
    assert java_decode(data) == want                          # the test's own reader agrees with its builder
    assert rmqlab_view(cl.read_message(data, 0)) == want
    # a record inside a larger buffer, after another one
    lead = java_build(BASE)
    assert rmqlab_view(cl.read_message(lead + data, len(lead))) == want


@pytest.mark.parametrize("name", list(FIXTURES))
def test_rmqlab_writes_the_java_layout(name):
    f = FIXTURES[name]
    data = rmqlab_encode(f)
    assert data == java_build(f)
    assert java_decode(data) == expected_view(f)


def test_fixture_facts_stated_by_the_java_source():
    """The facts each fixture exists for, read from the bytes with the offsets of the source."""
    ipv4 = java_build(FIXTURES["v1-ipv4"])
    assert len(ipv4) == java_msg_length(1, 0, 14, 9, 21) == 91 + 14 + 9 + 21
    both = java_build(FIXTURES["v1-ipv6-both"])
    assert len(both) == len(ipv4) + 24                     # two 16-byte addresses instead of 4
    born_port_at = 48 + 16
    assert struct.unpack_from(">i", both, born_port_at)[0] == 1
    assert struct.unpack_from(">q", both, born_port_at + 4)[0] == BASE["store_timestamp"]
    long_topic = java_build(FIXTURES["v2-long-topic"])
    assert struct.unpack_from(">I", long_topic, 4)[0] == JAVA_MAGIC_V2
    topic_b = LONG_TOPIC.encode()
    at = long_topic.index(topic_b) - 2
    assert len(topic_b) > 127 and struct.unpack_from(">h", long_topic, at)[0] == len(topic_b)
    assert struct.unpack_from(">b", bytes([len(topic_b) & 0xFF]))[0] < 0   # why v1 cannot hold it
    for name, tx in (("tx-prepared", 4), ("tx-commit", 8), ("tx-rollback", 12)):
        m = cl.read_message(java_build(FIXTURES[name]), 0)
        assert struct.unpack_from(">i", java_build(FIXTURES[name]), JAVA_SYSFLAG_POSITION)[0] & 0xC == tx
        assert m.transaction_type == tx
    m = cl.read_message(java_build(FIXTURES["compressed-zlib"]), 0, check_crc=True)
    assert m.compressed and zlib.decompress(m.body) == b"payload " * 40
    assert m.body_crc == java_crc32(m.body) and m.crc_ok
    assert cl.read_message(java_build(FIXTURES["stored-crc-kept"]), 0).crc_ok is False


def test_offset_msg_id_is_store_host_port_and_offset():
    for name, width in (("v1-ipv4", 32), ("v1-ipv6-born", 32), ("v1-ipv6-store", 56), ("v1-ipv6-both", 56)):
        f = FIXTURES[name]
        data = java_build(f)
        want = java_decode(data)["msg_id"]
        assert len(want) == width
        assert cl.read_message(data, 0).offset_msg_id == want
        assert msgid.offset_msg_id(f["store_host"], f["phy_offset"]) == want
        back = msgid.parse_offset_msg_id(want)
        assert (host_text(*host_bytes(back.store_host)), back.phy_offset) == \
            (host_text(*host_bytes(f["store_host"])), f["phy_offset"])


@pytest.mark.parametrize("uid, ip, pid, clh, diff, counter", [
    (UNIQ_ID, "10.0.0.7", 4242, 0x1B6D3586, 800_000_000, 7),
    (UNIQ_ID_V6, "2001:db8::42", 70000 & 0xFFFF, -5, 12_345, 65535),
])
def test_uniq_key_is_the_client_id_setter_layout(uid, ip, pid, clh, diff, counter):
    assert len(uid) == (32 if "." in ip else 56)
    month = msgid.month_start_ms(1718000000000, "UTC")
    assert msgid.create_uniq_id(ip, pid, clh, month + diff, counter, tz="UTC") == uid
    u = msgid.parse_uniq_id(uid, now=month + diff + 1000, tz="UTC")
    assert (u.ip, u.pid, u.class_loader_hash, u.month_offset_ms, u.counter, u.timestamp_ms) == \
        (ip, pid, clh, diff, counter, month + diff)
    name = "uniq-key" if uid == UNIQ_ID else "uniq-key-ipv6"
    assert cl.read_message(java_build(FIXTURES[name]), 0).uniq_key == uid


def test_store_readers_read_the_java_layout(tmp_path):
    """read_columns, read_at and iter_messages over a file of every fixture, each at its
    CommitLog offset, closed by the broker's end-of-file blank."""
    d = tmp_path / "commitlog"
    d.mkdir()
    start = 1 << 20
    data, wants = bytearray(), []
    for f in FIXTURES.values():
        f = f | dict(phy_offset=start + len(data))
        wants.append(expected_view(f))
        data += java_build(f)
    size = len(data) + 100
    data += struct.pack(">iI", size - len(data), JAVA_MAGIC_BLANK) + bytes(size - len(data) - 8)
    (d / f"{start:020d}").write_bytes(bytes(data))

    assert [rmqlab_view(m) for m in cl.iter_messages(d)] == wants
    cols = ["total_size", "version", "body_crc", "queue_id", "flag", "queue_offset", "phy_offset", "sys_flag",
            "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times",
            "prepared_transaction_offset", "body", "topic", "properties"]
    df = cl.read_columns(d)
    got = df[cols].to_dict("records")
    for row, want in zip(got, wants, strict=True):
        row = {k: (v if not isinstance(v, str) or k != "properties" else v.encode("utf-8")) for k, v in row.items()}
        assert {k: (int(v) if hasattr(v, "item") else v) for k, v in row.items()} == {k: want[k] for k in cols}
    assert df["uniq_key"].tolist() == [w["property_map"].get("UNIQ_KEY") for w in wants]
    assert df["keys"].tolist() == [w["property_map"].get("KEYS") for w in wants]
    offs = [w["phy_offset"] for w in wants][::-1]
    at = cl.read_at(d, offs)
    assert at["phy_offset"].tolist() == offs
    assert at["store_host"].tolist() == [w["store_host"] for w in wants][::-1]
    assert at["born_host"].tolist() == [w["born_host"] for w in wants][::-1]
    assert msgid.offset_msg_ids_many(at["store_host"].tolist(), offs).tolist() == [w["msg_id"] for w in wants][::-1]


# ------------------------------------------------------------------------------ properties

hosts4 = st.builds(lambda a, p: f"{ipaddress.IPv4Address(a)}:{p}", st.integers(0, 2**32 - 1), st.integers(0, 65535))
hosts6 = st.builds(lambda a, p: f"[{ipaddress.IPv6Address(a).compressed}]:{p}",
                   st.integers(0, 2**128 - 1), st.integers(0, 65535))
plain = st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",))
pairs = st.lists(st.tuples(st.text(plain, min_size=1, max_size=6), st.text(plain, min_size=1, max_size=8)),
                 max_size=4)
i32, i64 = st.integers(-2**31, 2**31 - 1), st.integers(-2**63, 2**63 - 1)


@st.composite
def records(draw):
    topic = draw(st.one_of(st.text(plain, max_size=12), st.text(plain, min_size=43, max_size=60)))
    long = len(topic.encode("utf-8")) > 127
    born, store = draw(st.one_of(hosts4, hosts6)), draw(st.one_of(hosts4, hosts6))
    sys_flag = draw(st.integers(0, 0xF) | st.sampled_from([SYS_COMPRESSED | SYS_ZLIB_TYPE, 0x40, 0x80]))
    sys_flag |= (SYS_BORN_V6 if born.startswith("[") else 0) | (SYS_STORE_V6 if store.startswith("[") else 0)
    kv = draw(pairs)
    props = b"".join(k.encode() + b"\x01" + v.encode() + b"\x02" for k, v in kv)
    if props and draw(st.booleans()):
        props = props[:-1]          # the 4.9.1 to 5.1.x form
    return dict(topic=topic, body=draw(st.binary(max_size=40)), queue_id=draw(i32), flag=draw(i32),
                queue_offset=draw(i64), phy_offset=draw(i64), sys_flag=sys_flag, born_timestamp=draw(i64),
                born_host=born, store_timestamp=draw(i64), store_host=store, reconsume_times=draw(i32),
                prepared_transaction_offset=draw(i64), properties=props,
                version=2 if long else draw(st.sampled_from([1, 2])))


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(records())
def test_property_rmqlab_encoder_writes_the_java_bytes(f):
    assert rmqlab_encode(f) == java_build(f)


@PROPERTY
@given(records())
def test_property_rmqlab_reader_reads_the_java_bytes(f):
    assert rmqlab_view(cl.read_message(java_build(f), 0, check_crc=True)) == expected_view(f)


@PROPERTY
@given(records())
def test_property_java_reader_reads_rmqlab_bytes(f):
    assert java_decode(rmqlab_encode(f)) == expected_view(f)


# ------------------------------------------------------------------------------ real stores

REAL_COMMITLOGS = ["store-4e25b979/commitlog/00000000000000000000",
                   *(f"store-ericpangopher-4.2.0/commitlog/{n:020d}" for n in (0, 8192, 16384, 24576))]


def java_walk(buf: bytes) -> tuple[list[dict], int]:
    """Records from position 0 until the end-of-file blank or zeros: (decoded, stop position)."""
    out, pos = [], 0
    while pos + 8 <= len(buf):
        size, magic = struct.unpack_from(">iI", buf, pos)
        if magic not in (JAVA_MAGIC_V1, JAVA_MAGIC_V2):
            break
        out.append(java_decode(buf, pos))
        pos += size
    return out, pos


@pytest.mark.parametrize("rel", REAL_COMMITLOGS)
def test_real_commitlog_both_readers_agree(rel):
    path = require_real_data(Path("rocketmq") / rel)
    buf = path.read_bytes()
    records_java, stop = java_walk(buf)
    assert records_java, "no message at the start of a real CommitLog file"
    start = int(path.name)
    ours = list(cl.iter_messages(path))
    assert [rmqlab_view(m) for m in ours] == records_java
    for r in records_java:
        assert r["total_size"] == 172 and r["topic"] == "abc" and r["version"] == 1
        assert r["body_crc"] == java_crc32(r["body"]) and r["phy_offset"] >= start
        assert len(r["msg_id"]) == 32 and "UNIQ_KEY" not in r["property_map"]
    if stop + 8 <= len(buf) and struct.unpack_from(">I", buf, stop + 4)[0] == JAVA_MAGIC_BLANK:
        assert struct.unpack_from(">i", buf, stop)[0] == len(buf) - stop
    # rmqlab's encoder, given the fields the test read, writes the broker's bytes
    for m, r in zip(ours[:10], records_java, strict=False):
        at = m.position
        f = {k: r[k] for k in FIELD_NAMES} | {"body_crc": r["body_crc"]}
        assert rmqlab_encode(f) == buf[at:at + r["total_size"]]
