"""RocketMQ's CommitLog: every message of a broker, appended to 1 GiB files, byte for byte.

Mirrors ``org.apache.rocketmq.store.CommitLog`` (``DefaultAppendMessageCallback.doAppend``,
``checkMessageAndReturnSize``), ``MessageExtEncoder``, ``MessageDecoder``
(``string2messageProperties``, ``createCrc32``), ``MessageSysFlag`` and ``MessageVersion`` of the
RocketMQ store / common modules (read in 5.3.x; the v1 record is unchanged since 4.0).

A store keeps its log in ``commitlog/``, files named by the 20-digit CommitLog offset of their
first byte and preallocated to ``mappedFileSizeCommitLog`` bytes (default 1 GiB) of zeros. A
record is (big-endian, Java's signed integers)::

    TOTALSIZE i32  MAGICCODE i32  BODYCRC i32  QUEUEID i32  FLAG i32  QUEUEOFFSET i64
    PHYSICALOFFSET i64  SYSFLAG i32  BORNTIMESTAMP i64  BORNHOST (ip 4|16 + port i32)
    STORETIMESTAMP i64  STOREHOST (ip 4|16 + port i32)  RECONSUMETIMES i32
    PREPAREDTRANSACTIONOFFSET i64  BODYLEN i32 + BODY  TOPICLEN (i8 v1 | i16 v2) + TOPIC
    PROPERTIESLENGTH i16 + PROPERTIES ("name\\x01value\\x02" ...)

The fixed parts are declared once below (:data:`HEAD`, :data:`STORE_TIME`, :data:`TAIL`, ...);
a v1 message with IPv4 hosts and empty body, topic and properties is 91 bytes
(:data:`MIN_MESSAGE_SIZE`). SYSFLAG bit 0x10 / 0x20 makes the born / store host IPv6 (16 address
bytes), bit 0x1 marks a compressed body (kept here exactly as stored), bits 0xC the transaction
type. A message that does not fit in the rest of a file (``msgLen + 8 > bytes left``) leaves an
8-byte blank record (TOTALSIZE = bytes left, MAGICCODE 0xCBD43194) and goes to the next file.

Facts settled from the Java source:

* **BODYCRC** is ``CRC32(body) & 0x7FFFFFFF``; the broker checks it only when BODYLEN > 0.
* **Queue offsets** come from the broker's topicQueueTable per (topic, queue id): NOT_TYPE and
  COMMIT_TYPE messages take the next offset and advance it; PREPARED (0x4) and ROLLBACK (0xC)
  messages are written with QUEUEOFFSET 0 and advance nothing.
* **Version.** v2 (2-byte topic length) is chosen when the topic is longer than 127 bytes
  (``autoMessageVersionOnTopicLen``); the v1 length byte is read back signed.
* **Properties separator.** Brokers 4.9.1 to 5.1.x write the block without its final ``\\x02``
  (``messageProperties2String``); every reader accepts both forms, as the broker's
  ``string2messageProperties`` does. Which version writes which form: :mod:`rmqlab.rules.versions`.
* **__CRC32#** (``enabledAppendPropCRC``, 5.2+): the properties get a trailing
  ``__CRC32#\\x01dddddddddd\\x02`` (20 bytes) whose ten digits are ``CRC32(record bytes before
  them) & 0x7FFFFFFF`` written *least significant digit first*; any old ``__CRC32#`` is removed
  first and a ``\\x02`` added when the block does not end with one. See ``append_prop_crc``.
  Readers check it when present (``Message.prop_crc_ok``, the ``prop_crc_ok`` column of
  ``read_columns(check_crc=True)``; ``rmqlab verify`` reports a mismatch) by the broker's rule
  with forceVerifyPropCRC: CRC32 of the record's bytes before its last 20, read in 5.2.0 and 5.3.1.

Readers: :func:`read_columns` / :func:`read_at` (columnar: one C pass of ``rmqlab._records``
that walks, checks and decodes a file into Arrow's layout), :func:`read_message` (one record)
and :func:`iter_messages` (a :class:`Message` a record), all on the one decode of
:mod:`~rmqlab.formats.commitlog.columns`; :mod:`~rmqlab.formats.commitlog.records` holds the
message model and the readable Python models of the walk and the property checks. Writers:
:func:`encode_message`, :func:`encode_messages` (vectorized, lays out files),
:class:`CommitLogWriter`.

Damage. The reader cannot resynchronise inside a file (a record's position is the previous
record's end), so the first bad record ends that file: ``on_error="raise"`` (default) raises
:class:`~rmqlab.errors.FormatError` naming path, offset (file position of the record) and
field; ``on_error="report"`` records a :class:`Damage` and goes on with the next file. The
files read are those the broker loads (:func:`load_files`): an empty last file and all-zero
files after the active one (the last holding data) are left out. The active file may end in a
torn write (the file ends inside a record, or the last record is bad and only zeros follow
it): that is reported as ``report.torn_tail`` and never raised. Zeros after its last message
are the normal unwritten space of a preallocated file.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> with CommitLogWriter(d, file_size=4096) as w:
...     b = w.append({"topic": ["T", "T"], "body": [b"hello", b"world"],
...                   "properties": ["KEYS\\x01k1\\x02", "TAGS\\x01a\\x02"]})
>>> b.phy_offset.tolist(), b.queue_offset.tolist()
([0, 105], [0, 1])
>>> read_message(os.path.join(d, "00000000000000000000"), 105).body
b'world'
>>> df = read_columns(d)
>>> df[["topic", "phy_offset", "keys", "tags"]].values.tolist()
[['T', 0, 'k1', None], ['T', 105, None, 'a']]
"""

from __future__ import annotations

from rmqlab.formats.commitlog.columns import (
    MessageStream,
    iter_messages,
    max_offset,
    read_at,
    read_at_columns,
    read_column_parts,
    read_columns,
    read_message,
)
from rmqlab.formats.commitlog.encode import (
    EncodedBatch,
    EncodedFile,
    blank_record,
    encode_message,
    encode_messages,
    place_records,
    prop_crc_value,
    record_sizes,
    stored_properties,
)
from rmqlab.formats.commitlog.files import (
    LoadedFiles,
    MappedCommitLog,
    StoreFile,
    classify_files,
    is_file_name,
    load_files,
    min_offset,
    multi_path_view,
    store_files,
)
from rmqlab.formats.commitlog.layout import (
    BLANK,
    BORNHOST_V6_FLAG,
    COLUMNS,
    COMPRESSED_FLAG,
    CRC32_RESERVED_LEN,
    DEFAULT_FILE_SIZE,
    END_FILE_MIN_BLANK_LENGTH,
    HEAD,
    MAGIC_BLANK,
    MAGIC_V1,
    MAGIC_V2,
    MIN_MESSAGE_SIZE,
    PORT,
    PROPERTIES_LEN,
    PROPERTY_CRC32,
    PROPERTY_PROBLEMS,
    STOP_BLANK,
    STOP_BLANK_SIZE,
    STOP_END,
    STOP_LIMIT,
    STOP_MAGIC,
    STOP_PAST_END,
    STOP_SHORT,
    STOP_TOO_SMALL,
    STORE_TIME,
    STOREHOSTADDRESS_V6_FLAG,
    TAIL,
    TOPIC_LEN_V1,
    TOPIC_LEN_V2,
    WALK_STOPS,
    message_length,
)
from rmqlab.formats.commitlog.records import (
    Damage,
    Message,
    ReadReport,
    broker_string,
    broker_strings,
    broker_strings_arrow,
    broker_strings_of_arrow,
    broker_strings_of_dictionary,
    parse_properties,
    prop_crc_expected,
    prop_crc_matches,
    properties_block,
    property_pairs,
    walk_py,
)
from rmqlab.formats.commitlog.write import CommitLogWriter
from rmqlab.formats.mapped import present, stand_in

__all__ = [
    "HEAD", "STORE_TIME", "TAIL", "PORT", "TOPIC_LEN_V1", "TOPIC_LEN_V2", "PROPERTIES_LEN", "BLANK",
    "MAGIC_V1", "MAGIC_V2", "MAGIC_BLANK", "MIN_MESSAGE_SIZE", "END_FILE_MIN_BLANK_LENGTH",
    "DEFAULT_FILE_SIZE", "COLUMNS", "Message", "Damage", "ReadReport", "StoreFile",
    "message_length", "parse_properties", "properties_block", "read_message", "iter_messages",
    "read_columns", "read_column_parts", "read_at", "read_at_columns", "store_files", "multi_path_view", "min_offset",
    "stand_in", "present", "is_file_name",
    "max_offset",
    "walk_py",
    "encode_message", "encode_messages", "record_sizes", "place_records", "EncodedBatch", "EncodedFile",
    "CommitLogWriter", "MessageStream", "blank_record", "prop_crc_value", "prop_crc_expected", "prop_crc_matches",
    "property_pairs", "stored_properties", "broker_string", "broker_strings",
    "broker_strings_arrow", "broker_strings_of_arrow", "broker_strings_of_dictionary",
    "BORNHOST_V6_FLAG", "STOREHOSTADDRESS_V6_FLAG", "COMPRESSED_FLAG", "PROPERTY_CRC32", "CRC32_RESERVED_LEN",
    "STOP_END", "STOP_BLANK", "STOP_BLANK_SIZE", "STOP_SHORT", "STOP_MAGIC", "STOP_PAST_END", "STOP_TOO_SMALL",
    "STOP_LIMIT", "WALK_STOPS", "PROPERTY_PROBLEMS",
    "LoadedFiles", "MappedCommitLog", "classify_files", "load_files",
]
