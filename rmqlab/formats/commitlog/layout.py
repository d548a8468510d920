"""The CommitLog record layout: magic codes, SYSFLAG bits, the fixed parts of a record and the
sizes derived from them."""
from __future__ import annotations

from rmqlab.formats.layout import Layout

MAGIC_V1 = -626843481       # 0xDAA320A7, MessageDecoder.MESSAGE_MAGIC_CODE
MAGIC_V2 = -626843477       # 0xDAA320AB, MessageDecoder.MESSAGE_MAGIC_CODE_V2
MAGIC_BLANK = -875286124    # 0xCBD43194, CommitLog.BLANK_MAGIC_CODE

# MessageSysFlag (the transaction type bits are a dispatch rule: rmqlab.rules.dispatch)
COMPRESSED_FLAG = 0x1
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20

# The record from TOTALSIZE to BORNTIMESTAMP: fixed, 48 bytes.
HEAD = Layout("MessageHead", [
    ("total_size", "i", "TOTALSIZE: bytes of the whole record, this field included"),
    ("magic", "i", "MAGICCODE: 0xDAA320A7 v1, 0xDAA320AB v2 (2-byte topic length), 0xCBD43194 blank"),
    ("body_crc", "i", "BODYCRC: CRC32(body) & 0x7FFFFFFF, as stored (the broker checks it when BODYLEN > 0)"),
    ("queue_id", "i", "QUEUEID: queue of the topic"),
    ("flag", "i", "FLAG: the producer's Message.flag, opaque to the broker"),
    ("queue_offset", "q", "QUEUEOFFSET: index in the (topic, queue); 0 for prepared/rollback records"),
    ("phy_offset", "q", "PHYSICALOFFSET: CommitLog offset of this record (file start + position)"),
    ("sys_flag", "i", "SYSFLAG: 0x1 compressed, 0xC transaction type, 0x10 born v6, 0x20 store v6"),
    ("born_timestamp", "q", "BORNTIMESTAMP: producer clock at send, ms since the epoch"),
])
# BORNHOST follows: the address (4 bytes, or 16 when SYSFLAG & 0x10) then PORT.
PORT = Layout("HostPort", [
    ("port", "i", "port of BORNHOST / STOREHOST, after its 4- or 16-byte address"),
])
STORE_TIME = Layout("StoreTime", [
    ("store_timestamp", "q", "STORETIMESTAMP: broker clock when stored, ms since the epoch"),
])
# STOREHOST follows: the address (4 bytes, or 16 when SYSFLAG & 0x20) then PORT.
TAIL = Layout("MessageTail", [
    ("reconsume_times", "i", "RECONSUMETIMES: redeliveries so far"),
    ("prepared_transaction_offset", "q", "PREPAREDTRANSACTIONOFFSET: CommitLog offset of the half "
                                         "message a commit/rollback record ends"),
    ("body_len", "i", "BODYLEN: bytes of BODY that follow"),
])
# BODY follows, then TOPICLEN + TOPIC (UTF-8).
TOPIC_LEN_V1 = Layout("TopicLenV1", [("topic_len", "b", "TOPICLEN of a v1 record: signed byte")])
TOPIC_LEN_V2 = Layout("TopicLenV2", [("topic_len", "h", "TOPICLEN of a v2 record: signed short")])
PROPERTIES_LEN = Layout("PropertiesLen", [
    ("properties_len", "h", "PROPERTIESLENGTH: bytes of PROPERTIES that follow (signed short)"),
])
# PROPERTIES follows: "name\x01value\x02" per property, UTF-8; brokers 4.9.1 to 5.1.x leave out the
# last \x02 (rmqlab.rules.versions).

# End-of-file filler: TOTALSIZE = the bytes left in the file, then MAGICCODE; the rest is not written.
BLANK = Layout("BlankRecord", [
    ("total_size", "i", "bytes from here to the end of the file"),
    ("magic", "i", "0xCBD43194"),
])

IPV4_SIZE, IPV6_SIZE = 4, 16
#: v1, IPv4 hosts, empty body, topic and properties: 91 bytes.
MIN_MESSAGE_SIZE = (HEAD.size + 2 * (IPV4_SIZE + PORT.size) + STORE_TIME.size + TAIL.size
                    + TOPIC_LEN_V1.size + PROPERTIES_LEN.size)
assert MIN_MESSAGE_SIZE == 91
END_FILE_MIN_BLANK_LENGTH = BLANK.size   # DefaultAppendMessageCallback: a message needs 8 bytes after it
DEFAULT_FILE_SIZE = 1 << 30              # MessageStoreConfig.mappedFileSizeCommitLog
PROPERTY_CRC32 = "__CRC32#"              # MessageConst.PROPERTY_CRC32
CRC32_RESERVED_LEN = len(PROPERTY_CRC32) + 1 + 10 + 1
_NAME_VALUE_SEPARATOR, _PROPERTY_SEPARATOR = 1, 2

#: read_columns' columns, in order (crc_ok is added when CRCs are checked, body dropped with body=False).
COLUMNS = ("topic", "queue_id", "flag", "queue_offset", "phy_offset", "sys_flag", "born_timestamp",
           "born_host", "store_timestamp", "store_host", "reconsume_times",
           "prepared_transaction_offset", "body", "properties", "keys", "uniq_key", "tags",
           "delay_level", "total_size", "version", "body_crc")


# rmqlab._records.walk's stop codes, as the C walk defines them (tests/formats/test_native_layouts.py)
from rmqlab._records import (  # noqa: E402  (kept beside the table that describes them)
    PROP_EMPTY_NAME,
    PROP_EMPTY_PAIR,
    PROP_NO_SEPARATOR,
    STOP_BLANK,
    STOP_BLANK_SIZE,
    STOP_END,
    STOP_LIMIT,
    STOP_MAGIC,
    STOP_PAST_END,
    STOP_SHORT,
    STOP_TOO_SMALL,
)

WALK_STOPS = {
    STOP_END: "end of the data exactly on a record boundary",
    STOP_BLANK: "end-of-file blank record",
    STOP_BLANK_SIZE: "blank record whose TOTALSIZE is not the bytes left in the file",
    STOP_SHORT: "fewer than 8 bytes left: TOTALSIZE and MAGICCODE cannot be read",
    STOP_MAGIC: "MAGICCODE is none of v1 0xDAA320A7, v2 0xDAA320AB, blank 0xCBD43194",
    STOP_PAST_END: "TOTALSIZE runs past the end of the file",
    STOP_TOO_SMALL: f"TOTALSIZE below the smallest possible message ({MIN_MESSAGE_SIZE})",
    STOP_LIMIT: "max_records reached",
}
# rmqlab._records.find_props problem codes
PROPERTY_PROBLEMS = {
    PROP_EMPTY_PAIR: "empty pair (two \\x02 in a row, or a block starting with \\x02)",
    PROP_NO_SEPARATOR: "a pair without the \\x01 name/value separator",
    PROP_EMPTY_NAME: "a pair with an empty name",
}
WANTED_PROPERTIES = (b"KEYS", b"UNIQ_KEY", b"TAGS", b"DELAY")


def message_length(body_len: int, topic_len: int, properties_len: int, sys_flag: int = 0,
                   version: int = 1) -> int:
    """TOTALSIZE of a record (``MessageExtEncoder.calMsgLength``); all lengths in bytes.

    >>> message_length(0, 0, 0), message_length(10, 3, 20, BORNHOST_V6_FLAG, 2)
    (91, 137)
    """
    return (MIN_MESSAGE_SIZE + (version == 2) + (12 if sys_flag & BORNHOST_V6_FLAG else 0)
            + (12 if sys_flag & STOREHOSTADDRESS_V6_FLAG else 0) + body_len + topic_len + properties_len)
