"""Compressed bodies (rmqlab.formats.commitlog.body) against the codecs' own libraries: Python's
zlib (the Deflater stream a producer's ZLIB writes), and LZ4 frames and zstd frames made by
their reference implementations. Each SYSFLAG codec value gives back what was compressed;
damaged or truncated bytes and unknown type values are typed errors naming the field. The real
clients' bodies (zlib on every release, LZ4 and ZSTD from 4.9.4) are judged against their own
MessageDecoder in tests/brokers/test_rocketmq_brokers.py."""
from __future__ import annotations

import zlib

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqlab.errors import FormatError
from rmqlab.formats.commitlog.body import codec_of, decompress_body

COMPRESS = {
    0: lambda b: zlib.compress(b, 5),            # a client before 4.9.4: zlib, no type bits
    1 << 8: lambda b: bytes(cramjam.lz4.compress(b)),
    2 << 8: lambda b: bytes(cramjam.zstd.compress(b)),
    3 << 8: lambda b: zlib.compress(b, 9),
}


@settings(max_examples=60, deadline=None)
@given(body=st.binary(max_size=20000), type_bits=st.sampled_from(sorted(COMPRESS)), other=st.integers(0, 0xFF))
def test_each_codec_gives_back_the_body(body, type_bits, other):
    sys_flag = 0x1 | type_bits | (other & ~0x1 & 0xFE)     # transaction and IPv6 bits do not matter
    assert codec_of(sys_flag) == {0: "zlib", 1 << 8: "lz4", 2 << 8: "zstd", 3 << 8: "zlib"}[type_bits]
    assert decompress_body(COMPRESS[type_bits](body), sys_flag) == body
    assert decompress_body(body, sys_flag & ~0x1) == body    # no COMPRESSED_FLAG: the stored bytes


@settings(max_examples=60, deadline=None)
@given(body=st.binary(min_size=1, max_size=4000), type_bits=st.sampled_from(sorted(COMPRESS)), cut=st.integers(1, 50))
def test_damaged_bytes_are_a_typed_error_naming_the_body(body, type_bits, cut):
    packed = COMPRESS[type_bits](body)
    torn = packed[:max(0, len(packed) - cut)]
    with pytest.raises(FormatError) as e:
        decompress_body(torn, 0x1 | type_bits, path="commitlog/00000000000000000000", offset=4096)
    assert (e.value.field, e.value.offset, e.value.path) == ("body", 4096, "commitlog/00000000000000000000")


@pytest.mark.parametrize("value", [4, 5, 6, 7])
def test_a_type_no_client_knows_is_named(value):
    assert codec_of(0x1 | value << 8) == f"unknown({value})"
    with pytest.raises(FormatError) as e:
        decompress_body(zlib.compress(b"x"), 0x1 | value << 8)
    assert e.value.field == "sys_flag" and "findByValue" in str(e.value)
