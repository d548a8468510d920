"""A RocksDB database as RocketMQ 5.2+ leaves them in a store (``storeType=defaultRocksDB``: the
ConsumeQueue in ``consumequeue/``, and the RocksDB config managers' ``config/topics``,
``config/subscriptionGroups`` and ``config/consumerOffsets``), read whole: every key and value of
every column family.

RocksDB is read through ``rocksdict`` (the ``rmqlab[rocksdb]`` extra: a binding that bundles
RocksDB, so no system library is needed). Opening a database writes into its folder (rocksdict's
settings file, a LOCK file, RocksDB's info log), so it is opened from a private snapshot: the
immutable ``*.sst`` files hard-linked (copied where links are not possible), the manifest,
write-ahead log and small files copied. Nothing is written in the folder given.

>>> import tempfile
>>> is_rocksdb(tempfile.mkdtemp())
False
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rmqlab.errors import FormatError

__all__ = ["is_rocksdb", "snapshot", "read_families"]


def is_rocksdb(folder: str | os.PathLike) -> bool:
    """Whether `folder` holds a RocksDB database (its CURRENT file and a MANIFEST). Cost: a listing."""
    p = Path(folder)
    return (p / "CURRENT").is_file() and any(p.glob("MANIFEST-*"))


def _rocksdict():
    try:
        import rocksdict
    except ModuleNotFoundError as e:   # the optional extra (rmqlab.extras.EXTRAS["rocksdb"])
        raise ImportError("reading a RocksDB database (storeType=defaultRocksDB) needs the 'rocksdb' extra: "
                          "pip install 'rmqlab[rocksdb]' (rocksdict is not installed)", name="rocksdict") from e
    return rocksdict


@contextmanager
def snapshot(folder: str | os.PathLike) -> Iterator[Path]:
    """A private copy of the RocksDB database in `folder` to open (RocksDB and rocksdict write into
    the folder they open): ``*.sst`` hard-linked (copied across devices), every other file but
    LOCK and the info logs copied. Removed on exit. Cost: the size of the non-sst files."""
    src = Path(folder)
    tmp = Path(tempfile.mkdtemp(prefix="rmqlab-rocksdb-"))
    try:
        for p in sorted(src.iterdir()):
            if not p.is_file() or p.name == "LOCK" or p.name.startswith("LOG") or p.name.startswith("rocksdict"):
                continue
            if p.suffix == ".sst":
                try:
                    os.link(p, tmp / p.name)
                    continue
                except OSError:
                    pass
            shutil.copyfile(p, tmp / p.name)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_families(folder: str | os.PathLike) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every column family of the database in `folder`: name -> its (key, value) pairs in key
    order. Read-only (from :func:`snapshot`). Raises ImportError without rocksdict, and
    :class:`~rmqlab.errors.FormatError` (field ``rocksdb``) where RocksDB cannot open or read it
    (a missing or damaged manifest or table file). Cost: one pass over the database, a Python
    step a key."""
    rd = _rocksdict()
    with snapshot(folder) as copy:
        try:
            names = rd.Rdict.list_cf(str(copy))
            db = rd.Rdict(str(copy), options=rd.Options(raw_mode=True), access_type=rd.AccessType.read_only(),
                          column_families={name: rd.Options(raw_mode=True) for name in names if name != "default"})
        except Exception as e:   # rocksdict raises its own exception types for RocksDB's statuses
            raise FormatError(f"RocksDB cannot open the database: {e}", path=folder, offset=None,
                              field="rocksdb") from None
        try:
            return {name: list((db if name == "default" else db.get_column_family(name)).items()) for name in names}
        except Exception as e:
            raise FormatError(f"RocksDB cannot read the database: {e}", path=folder, offset=None,
                              field="rocksdb") from None
        finally:
            db.close()


