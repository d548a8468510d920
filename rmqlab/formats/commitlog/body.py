"""Compressed message bodies: which codec a record's SYSFLAG names, and the body as the client
decompresses it.

The producer compresses a body over ``compressMsgBodyOverHowmuch`` (4 KiB) and sets SYSFLAG bit
0x1 (``MessageSysFlag.COMPRESSED_FLAG``). From 4.9.4 it also writes the codec in bits 8-10
(``MessageSysFlag.COMPRESSION_TYPE_COMPARATOR``; ``CompressionType``: 1 LZ4, 2 ZSTD, 3 ZLIB, the
producer's ``rocketmq.message.compressType``, ZLIB by default); a body compressed by an older
client has 0 there, which ``CompressionType.findByValue`` reads as ZLIB (read at
rocketmq-all-4.9.4 and 5.3.3). The codecs (``common/compression``): ZLIB is ``java.util.zip``'s
Deflater stream (zlib framing), LZ4 lz4-java's ``LZ4FrameOutputStream`` (the LZ4 frame format),
ZSTD zstd-jni's ``ZstdOutputStream`` (a zstd frame). The broker never looks inside a body: the
stored bytes are the compressed ones, and the consumer's ``MessageDecoder.decode`` (with
deCompressBody) decompresses them.

>>> import zlib
>>> codec_of(0x1), codec_of(0x1 | 2 << 8), codec_of(0), decompress_body(zlib.compress(b"abc"), 0x1)
('zlib', 'zstd', None, b'abc')
"""
from __future__ import annotations

import os
import zlib

import cramjam

from rmqlab.errors import FormatError
from rmqlab.formats.commitlog.layout import COMPRESSED_FLAG

__all__ = ["COMPRESSION_TYPE_MASK", "CODECS", "codec_of", "decompress_body"]


COMPRESSION_TYPE_MASK = 0x7 << 8      # MessageSysFlag.COMPRESSION_TYPE_COMPARATOR
#: CompressionType.findByValue: the value in bits 8-10 -> the codec (0: a client before 4.9.4)
CODECS = {0: "zlib", 1: "lz4", 2: "zstd", 3: "zlib"}


def codec_of(sys_flag: int) -> str | None:
    """The codec of a record's body: None when SYSFLAG has no COMPRESSED_FLAG, else "zlib",
    "lz4" or "zstd", or "unknown(N)" for a type value the client does not know (its
    findByValue throws)."""
    if not int(sys_flag) & COMPRESSED_FLAG:
        return None
    value = (int(sys_flag) & COMPRESSION_TYPE_MASK) >> 8
    return CODECS.get(value, f"unknown({value})")


def decompress_body(body: bytes, sys_flag: int, *, path: str | os.PathLike | None = None,
                    offset: int | None = None) -> bytes:
    """The body a consumer gets: `body` as stored, decompressed with the codec SYSFLAG names
    (unchanged when it names none). Cost: the codec's speed, one copy of the output.

    Raises :class:`~rmqlab.errors.FormatError` (field ``body``, at `path` and `offset`, the
    record's CommitLog offset) when the bytes do not decompress or the codec is unknown, as the
    client's decode would fail.
    """
    codec = codec_of(sys_flag)
    if codec is None:
        return bytes(body)
    try:
        if codec == "zlib":
            return zlib.decompress(bytes(body))
        if codec == "lz4":
            return bytes(cramjam.lz4.decompress(bytes(body)))
        if codec == "zstd":
            return bytes(cramjam.zstd.decompress(bytes(body)))
    except (zlib.error, cramjam.DecompressionError) as e:
        raise FormatError(f"the {codec} body ({len(body)} bytes) does not decompress: {e}", path=path,
                          offset=offset, field="body") from None
    raise FormatError(f"SYSFLAG {sys_flag:#x} names compression type {codec}, which no client knows "
                      "(CompressionType.findByValue)", path=path, offset=offset, field="sys_flag")
