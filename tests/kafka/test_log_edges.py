"""A record header's key length that is not a varint Kafka reads (ByteUtils.readVarint: at most
5 bytes, "Varint is too long"; none past the record's end), named with its field, place and
why. The batch is framed by tests/kafka/test_log.py's reference encoder; offsets are counted by
hand: the record starts at byte 61 of the batch, after its 1-byte length come attributes,
timestampDelta, offsetDelta, keyLength -1, valueLength -1 and headersCount 1, one byte each,
so the header's key length is at byte 68."""
from __future__ import annotations

import pytest

from rmqlab.errors import FormatError
from rmqlab.kafka.log import read_records
from tests.kafka.test_log import bad_batch, varint

HEAD = b"\x00\x00\x00\x01\x01" + varint(1)     # attributes .. valueLength, headersCount 1


@pytest.mark.parametrize("key_length, why", [
    (b"\x80", "headerKeyLength varint runs past the end of the record"),
    (b"\xff" * 5 + b"\x01", "headerKeyLength varint is longer than 5 bytes"),
])
def test_a_header_key_length_that_is_no_varint_is_named(key_length, why):
    record = HEAD + key_length
    with pytest.raises(FormatError) as e:
        read_records(bad_batch(varint(len(record)) + record, 1))
    assert (e.value.field, e.value.offset) == ("record[0].header[0].headerKeyLength", 68)
    assert why in str(e.value)
