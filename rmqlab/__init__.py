"""rmqlab: RocketMQ's message-store formats, byte for byte, and the queries the broker answers.

The stable top-level names (the public contract):

>>> import rmqlab
>>> rmqlab.java_hash("TopicTest#ORDER_1") == int(rmqlab.java_hash_many(["TopicTest#ORDER_1"])[0])
True

``import rmqlab`` loads only the error classes: the other names are loaded on first use
(PEP 562), so the command line starts without NumPy.

>>> "IndexFile" in dir(rmqlab) and rmqlab.IndexFile.__module__
'rmqlab.formats.indexfile'
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from rmqlab.errors import (
    CorruptIndexError,
    FormatError,
    GeometryError,
    ReadOnlyError,
    RmqlabError,
    TruncatedFileError,
)

if TYPE_CHECKING:
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

#: The public names loaded on first use: name -> the module that defines it.
_LAZY: dict[str, str] = {
    **dict.fromkeys(("java_hash", "java_hash_many", "index_hash", "index_hash_many", "index_key"),
                    "rmqlab.jvm.hashcode"),
    **dict.fromkeys(("IndexFile", "IndexHeader", "Geometry", "QueryTrace", "build_index_file", "read_header"),
                    "rmqlab.formats.indexfile"),
}


def __getattr__(name: str) -> Any:
    """A public name's first use: import its module, keep the name here (later uses are plain
    attribute reads)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
