"""A work folder beside a store: where rmqlab builds the files a broker builds from the CommitLog
(ConsumeQueues, index files, the checkpoint) without writing into the store it was given.

An offline tool must not change the evidence it is asked about. The work folder holds links to
every part of the store that is only read (``commitlog/``, ``config/``, a DLedger ledger, the
timer files, ...) and real folders for what dispatch writes, so a :class:`Store` opened on it
reads the store's CommitLog and writes only into the work folder. The store's own queues and
index files are left out (a fresh build, not a copy), and the settings its files tell (file
sizes, index geometry, ConsumeQueueExt) are kept.

By default a store's work folder is in the user's cache (``$XDG_CACHE_HOME/rmqlab/stores``, else
``~/.cache/rmqlab/stores``), named by the store's path and its CommitLog files' names, sizes and
modification times, so a second query reuses the build and a changed CommitLog gets a new one.

>>> import tempfile
>>> from rmqlab.lab.generate import generate_store
>>> from rmqlab.lab.workload import Workload
>>> root = tempfile.mkdtemp()
>>> store = generate_store(root, Workload(messages=50, seed=1), dispatch=False, hash_slot_num=64, index_num=512)
>>> work = work_store(store, tempfile.mkdtemp())
>>> work.dispatch().messages, (store.root / "index").exists(), (work.root / "index").is_dir()
(50, False, True)
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from rmqlab.formats import storepaths as sp
from rmqlab.formats.commitlog.files import store_files
from rmqlab.store.directory import Store

__all__ = ["work_store", "cache_folder", "BUILT"]

#: what dispatch writes into a store: never linked from the store into a work folder
BUILT = (sp.CONSUMEQUEUE, sp.CONSUMEQUEUE_EXT, sp.BATCHCONSUMEQUEUE, sp.INDEX, sp.CHECKPOINT, sp.ABORT, "lock")


def cache_folder(store: Store) -> Path:
    """The work folder of `store` in the user's cache: a name from the store's real path and
    its CommitLog files' names, sizes and modification times. Cost: one listing of the
    CommitLog folder."""
    h = hashlib.sha256(str(Path(store.root).resolve()).encode())
    if store.layout.paths.has_commitlog():
        for f in store_files(store.commitlog_dir):
            h.update(f"{f.path.name}:{f.size}:{f.path.stat().st_mtime_ns}".encode())
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rmqlab" / "stores"
    return base / f"{Path(store.root).resolve().name}-{h.hexdigest()[:16]}"


def work_store(store: Store, folder: str | os.PathLike) -> Store:
    """A Store over `folder` that reads `store`'s CommitLog and parts and writes only into
    `folder` (created if missing): links to each part of the store that dispatch does not
    write, the store's settings (file sizes, index geometry, ConsumeQueueExt, BatchCQ topics,
    light message queues, release). Refuses a `folder` inside the store. Cost: one listing of
    the store root, a link a part."""
    out = Path(folder)
    root = Path(store.root).resolve()
    if out.resolve() == root or root in out.resolve().parents:
        raise ValueError(f"{out}: the work folder is inside the store {root}; give one outside it")
    out.mkdir(parents=True, exist_ok=True)
    for part in root.iterdir():
        if part.name in BUILT:
            continue
        link = out / part.name
        if link.is_symlink() and Path(os.readlink(link)) == part:
            continue
        if link.is_symlink() or link.exists():
            raise FileExistsError(f"{link}: the work folder holds something else where the store's {part.name} goes")
        link.symlink_to(part, target_is_directory=part.is_dir())
    s = store.settings
    return Store(out, hash_slot_num=s["hash_slot_num"].value, index_num=s["index_num"].value,
                 commitlog_file_size=s["commitlog_file_size"].value,
                 consume_queue_file_size=s["consume_queue_file_size"].value,
                 batch_consume_queue_file_size=s["batch_consume_queue_file_size"].value,
                 consume_queue_ext=store.consume_queue_ext,
                 consume_queue_ext_file_size=s["consume_queue_ext_file_size"].value,
                 batch_cq_topics=store.batch_cq_topics, enable_lmq=store.enable_lmq,
                 enable_multi_dispatch=store.enable_multi_dispatch, broker_version=store.broker_version,
                 tz=store.tz, max_msgs_num_batch=store.max_msgs_num_batch,
                 commitlog_paths=[str(p) for p in store.layout.paths.commitlog_paths] or None)
