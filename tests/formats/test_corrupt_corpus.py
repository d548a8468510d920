"""The corrupt-file corpus (tests/data/corrupt/): each file raises exactly the error its manifest
entry states (class, byte offset, field, the file it names, a message substring), or, for the
regressions of fixed fuzzing finds marked ``"error": null``, the call now succeeds with the stated
result. ``make_corpus.py`` regenerates the corpus byte for byte (checked below).
"""
from __future__ import annotations

import filecmp
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import rmqlab.errors as errors
from rmqlab.formats import commitlog as cl
from rmqlab.formats import msgid as mi
from rmqlab.formats.checkpoint import read_checkpoint
from rmqlab.formats.consumequeue import ConsumeQueue
from rmqlab.formats.indexfile import IndexFile
from rmqlab.jvm.hashcode import index_hash
from rmqlab.kafka import index as kx
from rmqlab.kafka import log as kl

CORPUS = Path(__file__).parents[1] / "data" / "corrupt"
MANIFEST = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))


def _index_check(path, **kw):
    with IndexFile.open(path, strict=False, **kw) as f:
        f.check()


def _index_chain(path, key, **kw):
    with IndexFile.open(path, strict=False, **kw) as f:
        return len(list(f.chain(index_hash(key) % f.geometry.hash_slot_num)))


def _cq(path, fn, mapped_file_size, **kw):
    with ConsumeQueue.open(path, mapped_file_size, strict=False) as q:
        return fn(q, **kw)


def _store_time(phys):
    return 1718000000000 + np.asarray(phys, np.int64)


def _line(path) -> str:
    return Path(path).read_text(encoding="ascii").splitlines()[0]


#: reader name (expected.json) -> call(path, **args)
READERS = {
    "IndexFile.open": lambda p, **kw: IndexFile.open(p, **kw).close(),
    "IndexFile.check": _index_check,
    "IndexFile.chain": _index_chain,
    "ConsumeQueue.open": lambda p, **kw: ConsumeQueue.open(p, **kw).close(),
    "ConsumeQueue.check": lambda p, mapped_file_size: _cq(p, ConsumeQueue.check, mapped_file_size),
    "ConsumeQueue.unit": lambda p, mapped_file_size, index: _cq(p, ConsumeQueue.unit, mapped_file_size, index=index),
    "ConsumeQueue.queue_offsets": lambda p, mapped_file_size: _cq(p, lambda q: q.queue_offsets, mapped_file_size),
    "ConsumeQueue.offset_by_time": lambda p, mapped_file_size, timestamp, boundary: _cq(
        p, lambda q: q.offset_by_time(timestamp, _store_time, boundary=boundary), mapped_file_size),
    "read_columns": lambda p, **kw: cl.read_columns(p, **kw),
    "iter_messages": lambda p, **kw: list(cl.iter_messages(p, **kw)),
    "read_message": lambda p, **kw: cl.read_message(p, **kw),
    "read_at": lambda p, **kw: cl.read_at(p, **kw),
    "read_checkpoint": lambda p, **kw: read_checkpoint(p, **kw),
    "StoreCheckpoint.times": lambda p: read_checkpoint(p).times(),
    "StoreCheckpoint.describe": lambda p: read_checkpoint(p).describe(),
    "OffsetIndex.open": lambda p, **kw: kx.OffsetIndex.open(p, **kw).close(),
    "OffsetIndex.check": lambda p, **kw: kx.OffsetIndex.open(p, **kw).check(),
    "TimeIndex.open": lambda p, **kw: kx.TimeIndex.open(p, **kw).close(),
    "read_batches": lambda p, **kw: kl.read_batches(p, **kw),
    "read_records": lambda p, **kw: kl.read_records(p, **kw),
    "parse_offset_msg_id": lambda p: mi.parse_offset_msg_id(_line(p)),
    "parse_uniq_id": lambda p, **kw: mi.parse_uniq_id(_line(p), **kw),
}


def _error_class(name: str) -> type[Exception]:
    for module in (errors, kx, __builtins__ if isinstance(__builtins__, dict) else vars(__builtins__)):
        cls = module.get(name) if isinstance(module, dict) else getattr(module, name, None)
        if cls is not None:
            return cls
    raise AssertionError(f"unknown error class {name}")


def test_manifest_covers_the_corpus():
    listed = {e["file"] for e in MANIFEST}
    on_disk = {p.name for p in CORPUS.iterdir()} - {"expected.json", "README.md", "make_corpus.py", "__pycache__"}
    assert listed == on_disk
    assert len(MANIFEST) >= 20
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    for e in MANIFEST:
        assert f"`{e['file']}`" in readme
        assert e["reader"] in READERS
    # every format has cases
    for prefix in ("indexfile-", "cq-", "commitlog-", "checkpoint-", "kafka-index-", "kafka-timeindex-",
                   "kafka-log-", "msgid-"):
        assert any(e["file"].startswith(prefix) for e in MANIFEST), prefix


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_corrupt_file(entry):
    path = CORPUS / entry["file"]
    call = READERS[entry["reader"]]
    if entry["error"] is None:   # a regression of a fixed fuzzing find: must now succeed
        result = call(path, **entry["args"])
        assert entry["message"] in (result if isinstance(result, str) else repr(result))
        return
    cls = _error_class(entry["error"])
    with pytest.raises(cls) as info:
        call(path, **entry["args"])
    e = info.value
    assert type(e) is cls, f"{type(e).__name__}: {e}"   # not a subclass either
    assert entry["message"] in str(e)
    if isinstance(e, errors.RmqlabError):
        assert (e.offset, e.field) == (entry["offset"], entry["field"])
        if entry["error_path"] is None:
            assert e.path is None
        else:
            assert Path(e.path).relative_to(CORPUS).as_posix() == entry["error_path"]
            # the message names the file, then the offset and the field
            where = f"{e.path}: " + (f"offset {e.offset}: " if e.offset is not None else "") + f"{e.field}: "
            assert str(e).startswith(where)
    else:
        assert issubclass(cls, ValueError)   # the documented argument error (message ids are arguments)


def _load_generator():
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_corpus"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_generator_reproduces_the_corpus(tmp_path):
    gen = _load_generator()
    gen.main(tmp_path)
    cmp = filecmp.dircmp(CORPUS, tmp_path, ignore=["make_corpus.py", "__pycache__"])

    def diffs(c):
        out = list(c.diff_files) + list(c.left_only) + list(c.right_only) + list(c.funny_files)
        for sub in c.subdirs.values():
            out += diffs(sub)
        return out

    assert diffs(cmp) == []
    for p in tmp_path.rglob("*"):   # dircmp compares shallowly (size and mtime): compare bytes too
        if p.is_file():
            assert p.read_bytes() == (CORPUS / p.relative_to(tmp_path)).read_bytes(), p


def test_files_are_small():
    for p in CORPUS.rglob("*"):
        if p.is_file() and p.name not in ("make_corpus.py", "README.md", "expected.json"):
            assert p.stat().st_size <= 4097, p
