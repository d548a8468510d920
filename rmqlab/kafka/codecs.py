"""The compression codecs of Kafka's record batches and legacy wrapper messages, with the framing
each Java client and broker wrote.

Mirrors ``org.apache.kafka.common.record.CompressionType`` (ids 1-4) and the streams it wraps:
``GZIPOutputStream`` (gzip members), xerial's ``SnappyOutputStream`` (a 16-byte header, then
chunks of a 4-byte big-endian length and a raw snappy block; ``SnappyInputStream`` also reads a
bare raw block, which librdkafka and older kafka-python wrote), ``KafkaLZ4BlockOutputStream``
(an LZ4 frame of independent blocks) and ``ZstdOutputStream`` (zstd frames). Read at Kafka
0.10.2, 2.8 and 3.9 (``clients/.../compress/``), where the framings have not changed since.

The LZ4 quirk: before magic v1 (KAFKA-3160, Kafka 0.10.0) the Java client computed the frame
descriptor's header checksum over the 4 magic bytes as well, so a magic v0 LZ4 message does not
pass a conforming LZ4 reader. ``KafkaLZ4BlockInputStream`` skips that one check for magic v0,
and so does :func:`decompress`: for magic 0 the frame is walked here and its blocks decoded by
the codec library; later magics go to the library's frame decoder, which checks everything.

The codecs themselves are cramjam's (Rust bindings to the reference implementations): no codec
is written here, only the framing Kafka put around them.

>>> data = b"kafka " * 1000
>>> packed = compress(LZ4, data)
>>> decompress(LZ4, packed) == data, len(packed) < len(data)
(True, True)
"""
from __future__ import annotations

import os
import struct

import cramjam
import numpy as np

from rmqlab.errors import FormatError

__all__ = ["NONE", "GZIP", "SNAPPY", "LZ4", "ZSTD", "CODEC_NAMES", "compress", "decompress"]

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

# xerial SnappyCodec.MAGIC_HEADER, then its version and compatible-version ints
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_CHUNK = struct.Struct(">i")
# KafkaLZ4BlockOutputStream writes blocks of at most 64 KiB; the BD byte can say up to 4 MiB
_LZ4_MAGIC = 0x184D2204
_LZ4_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}
_LZ4_UNCOMPRESSED_BIT = 0x80000000
_U32LE = struct.Struct("<I")


def _error(message: str, path, offset: int | None, codec: int) -> FormatError:
    return FormatError(f"{CODEC_NAMES.get(codec, codec)} payload: {message}", path=path, offset=offset,
                       field="records (compressed)")


def decompress(codec: int, data, *, magic: int = 2, path: str | os.PathLike | None = None,
               offset: int | None = None) -> bytes:
    """The bytes a compressed batch (magic 2) or wrapper message (magic 0/1) holds.

    Cost: the codec's speed (hundreds of MB/s for lz4, snappy and zstd; gzip about 100-300 MB/s),
    one copy of the output.

    >>> decompress(GZIP, compress(GZIP, b"abc"))
    b'abc'

    ``codec`` is the attributes' low 3 bits; ``magic`` selects the LZ4 framing of its era;
    ``path`` and ``offset`` (the payload's first byte in the file) name the place in an error.
    Raises :class:`~rmqlab.errors.FormatError` when the payload does not decode.
    """
    raw = bytes(data)
    try:
        if codec == GZIP:
            return bytes(cramjam.gzip.decompress(raw))
        if codec == SNAPPY:
            return _snappy_decompress(raw, path, offset)
        if codec == LZ4:
            return _lz4_decompress(raw, magic, path, offset) if magic == 0 else bytes(cramjam.lz4.decompress(raw))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(raw))
    except cramjam.DecompressionError as e:
        raise _error(f"does not decompress ({e})", path, offset, codec) from None
    raise _error(f"compression codec {codec} is not one of Kafka's (0-4)", path, offset, codec)


def compress(codec: int, data, *, magic: int = 2) -> bytes:
    """``data`` compressed as a Java producer frames it for ``codec`` (xerial-framed snappy,
    an LZ4 frame of independent blocks).

    Cost: the codec's speed; one copy.

    >>> decompress(SNAPPY, compress(SNAPPY, b"xyz" * 9)) == b"xyz" * 9
    True

    ``magic`` 0 with LZ4 is refused: rmqlab does not write the pre-0.10 broken header checksum.
    """
    raw = bytes(data)
    if codec == GZIP:
        return bytes(cramjam.gzip.compress(raw))
    if codec == SNAPPY:
        return _snappy_xerial(raw)
    if codec == LZ4:
        if magic == 0:
            raise ValueError("magic v0 LZ4 (the pre-0.10 broken frame checksum) is read, never written")
        # as KafkaLZ4BlockOutputStream: independent blocks, no content checksum
        packer = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        packer.compress(raw)
        return bytes(packer.finish())
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(raw))
    raise ValueError(f"compression codec {codec} is not one of Kafka's compressed codecs (1-4)")


# xerial SnappyOutputStream's default block size
_XERIAL_BLOCK = 32 << 10


def _snappy_xerial(raw: bytes) -> bytes:
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    # an empty payload still gets one (empty) chunk: readers that sniff the framing want more
    # than the header
    for start in range(0, max(len(raw), 1), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(raw[start:start + _XERIAL_BLOCK]))
        parts += [_XERIAL_CHUNK.pack(len(block)), block]
    return b"".join(parts)


def _snappy_decompress(raw: bytes, path, offset) -> bytes:
    if not raw.startswith(XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(raw))
    if len(raw) < _XERIAL_HEADER.size:
        raise _error(f"the xerial header needs {_XERIAL_HEADER.size} bytes, the payload has {len(raw)}",
                     path, offset, SNAPPY)
    out, p = [], _XERIAL_HEADER.size
    while p < len(raw):
        if p + _XERIAL_CHUNK.size > len(raw):
            raise _error(f"a xerial chunk length at byte {p} of the payload runs past its end", path, offset, SNAPPY)
        (n,) = _XERIAL_CHUNK.unpack_from(raw, p)
        p += _XERIAL_CHUNK.size
        if n < 0 or p + n > len(raw):
            raise _error(f"xerial chunk length {n} at byte {p - _XERIAL_CHUNK.size} of the payload runs past "
                         f"its end ({len(raw)} bytes)", path, offset, SNAPPY)
        out.append(bytes(cramjam.snappy.decompress_raw(raw[p:p + n])))
        p += n
    return b"".join(out)


def _lz4_decompress(raw: bytes, magic: int, path, offset) -> bytes:
    """An LZ4 frame walked block by block, its header checksum not checked (the magic v0 quirk)."""
    def need(p: int, n: int, what: str) -> None:
        if p + n > len(raw):
            raise _error(f"the frame ends inside its {what} (byte {p} of {len(raw)})", path, offset, LZ4)

    need(0, 7, "header")
    (frame_magic,) = _U32LE.unpack_from(raw, 0)
    if frame_magic != _LZ4_MAGIC:
        raise _error(f"frame magic 0x{frame_magic:08X}, not 0x{_LZ4_MAGIC:08X}", path, offset, LZ4)
    flg, bd = raw[4], raw[5]
    if flg >> 6 != 1:
        raise _error(f"frame version {flg >> 6}, not 1", path, offset, LZ4)
    block_checksum, content_size, content_checksum, dict_id = flg & 0x10, flg & 0x08, flg & 0x04, flg & 0x01
    limit = _LZ4_BLOCK_MAX.get((bd >> 4) & 0x7)
    if limit is None:
        raise _error(f"block maximum size code {(bd >> 4) & 0x7} is not 4-7", path, offset, LZ4)
    p = 6 + (8 if content_size else 0) + (4 if dict_id else 0) + 1   # + the header checksum byte
    scratch = np.empty(limit, np.uint8)
    out = []
    while True:
        need(p, 4, "block size")
        (size,) = _U32LE.unpack_from(raw, p)
        p += 4
        if size == 0:
            break
        n = size & ~_LZ4_UNCOMPRESSED_BIT
        need(p, n, "block")
        block = raw[p:p + n]
        if size & _LZ4_UNCOMPRESSED_BIT:
            out.append(block)
        else:
            written = cramjam.lz4.decompress_block_into(block, scratch.data)
            out.append(scratch[:written].tobytes())
        p += n + (4 if block_checksum else 0)
    if content_checksum:
        need(p, 4, "content checksum")
    return b"".join(out)
