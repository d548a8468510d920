"""Kafka's compression framings against an independent implementation: kafka-python's codec
module (python-snappy's xerial framing, the lz4 package's frames and its pre-0.10 broken header
checksum made with xxhash, zstandard, the stdlib's gzip) encodes, rmqlab decodes; rmqlab encodes,
kafka-python decodes."""
from __future__ import annotations

import gzip

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import require_module

from rmqlab.errors import FormatError
from rmqlab.kafka import codecs

kc = require_module("kafka.codec")

# kafka-python's encoders, by Kafka's codec id; lz4 differs by magic (the v0 framing quirk)
ENCODERS = {
    codecs.GZIP: lambda d, magic: kc.gzip_encode(d),
    codecs.SNAPPY: lambda d, magic: kc.snappy_encode(d),
    codecs.LZ4: lambda d, magic: kc.lz4_encode_old_kafka(d) if magic == 0 else kc.lz4_encode(d),
    codecs.ZSTD: lambda d, magic: kc.zstd_encode(d),
}
DECODERS = {codecs.GZIP: kc.gzip_decode, codecs.SNAPPY: kc.snappy_decode, codecs.LZ4: kc.lz4_decode,
            codecs.ZSTD: kc.zstd_decode}

payloads = st.one_of(
    st.binary(max_size=2000),
    # long runs and more than one LZ4 block (64 KiB) / xerial chunk (32 KiB)
    st.builds(lambda b, n: b * n, st.binary(min_size=1, max_size=64), st.integers(1, 3000)),
)


def test_every_codec_has_an_independent_encoder():
    assert kc.has_snappy() and kc.has_lz4() and kc.has_zstd()
    assert set(ENCODERS) == set(codecs.CODEC_NAMES) - {codecs.NONE}


@settings(max_examples=60, deadline=None)
@given(data=payloads, codec=st.sampled_from(sorted(ENCODERS)), magic=st.sampled_from([0, 1, 2]))
def test_reads_what_kafka_python_writes(data, codec, magic):
    if codec == codecs.ZSTD and magic < 2:
        magic = 2       # zstd exists from magic v2 (Kafka 2.1) on
    packed = bytes(ENCODERS[codec](data, magic))
    assert codecs.decompress(codec, packed, magic=magic) == data


@settings(max_examples=60, deadline=None)
@given(data=payloads, codec=st.sampled_from(sorted(DECODERS)))
def test_kafka_python_reads_what_rmqlab_writes(data, codec):
    assert bytes(DECODERS[codec](codecs.compress(codec, data))) == data


def test_magic0_lz4_header_checksum_is_the_broken_one_and_only_magic0_accepts_it():
    data = b"legacy " * 5000
    old = bytes(kc.lz4_encode_old_kafka(data))
    assert old[:4] == b"\x04\x22\x4d\x18"
    assert codecs.decompress(codecs.LZ4, old, magic=0) == data
    # a conforming reader (magic 1 and later) refuses the checksum, as Kafka does
    with pytest.raises(FormatError, match="lz4 payload"):
        codecs.decompress(codecs.LZ4, old, magic=1)


def test_snappy_raw_block_without_xerial_framing():
    data = b"raw snappy " * 300
    raw = bytes(kc.snappy_encode(data, xerial_compatible=False))
    assert not raw.startswith(codecs.XERIAL_MAGIC)
    assert codecs.decompress(codecs.SNAPPY, raw) == data


def test_gzip_from_the_standard_library():
    assert codecs.decompress(codecs.GZIP, gzip.compress(b"abc" * 99)) == b"abc" * 99


def test_java_lz4_frame_flags():
    # KafkaLZ4BlockOutputStream: version 01, independent blocks, no content size or checksum
    flg = codecs.compress(codecs.LZ4, b"x" * 10)[4]
    assert flg >> 6 == 1 and flg & 0x20 and not flg & 0x08 and not flg & 0x04


@pytest.mark.parametrize("codec", sorted(ENCODERS))
def test_damage_is_a_format_error_naming_file_offset_and_field(codec):
    packed = bytearray(bytes(ENCODERS[codec](b"some payload " * 100, 2)))
    packed = packed[:len(packed) // 2]
    with pytest.raises(FormatError) as e:
        codecs.decompress(codec, bytes(packed), path="seg.log", offset=1234)
    assert e.value.path == "seg.log" and e.value.offset == 1234 and e.value.field == "records (compressed)"
    assert codecs.CODEC_NAMES[codec] in str(e.value)


@pytest.mark.parametrize("payload", [b"", b"\x82SNAPPY\x00\x00", b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" * 2
                                     + b"\x7f\xff\xff\xff"])
def test_truncated_xerial_framing(payload):
    if not payload:
        assert codecs.decompress(codecs.SNAPPY, kc.snappy_encode(b"")) == b""
        return
    with pytest.raises(FormatError, match="xerial"):
        codecs.decompress(codecs.SNAPPY, payload, path="p", offset=0)


@pytest.mark.parametrize("payload", [b"\x04\x22\x4d\x18", b"\x04\x22\x4d\x18\x40\x10\x00",
                                     b"\x04\x22\x4d\x18\x60\x40\x00\x05\x00\x00\x00ab"])
def test_truncated_magic0_lz4_frames(payload):
    with pytest.raises(FormatError, match="lz4 payload"):
        codecs.decompress(codecs.LZ4, payload, magic=0, path="p", offset=0)


def test_unknown_codec_ids():
    with pytest.raises(FormatError, match="not one of Kafka's"):
        codecs.decompress(5, b"", path="p", offset=0)
    with pytest.raises(ValueError):
        codecs.compress(7, b"")
    with pytest.raises(ValueError):
        codecs.compress(codecs.LZ4, b"", magic=0)
