"""rmqlab: RocketMQ's message-store formats, byte for byte, and the queries the broker answers.

The stable top-level names (the public contract):

>>> import rmqlab
>>> rmqlab.java_hash("TopicTest#ORDER_1") == int(rmqlab.java_hash_many(["TopicTest#ORDER_1"])[0])
True
"""
from rmqlab.errors import (
    CorruptIndexError,
    FormatError,
    GeometryError,
    ReadOnlyError,
    RmqlabError,
    TruncatedFileError,
)
from rmqlab.formats.indexfile import (
    Geometry,
    IndexFile,
    IndexHeader,
    QueryTrace,
    build_index_file,
    read_header,
)
from rmqlab.jvm.hashcode import index_hash, index_hash_many, index_key, java_hash, java_hash_many

__version__ = "0.1.0"

__all__ = [
    "java_hash",
    "java_hash_many",
    "index_hash",
    "index_hash_many",
    "index_key",
    "IndexFile",
    "IndexHeader",
    "Geometry",
    "QueryTrace",
    "build_index_file",
    "read_header",
    "RmqlabError",
    "FormatError",
    "GeometryError",
    "TruncatedFileError",
    "CorruptIndexError",
    "ReadOnlyError",
]
