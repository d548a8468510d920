"""Synthetic stores: a :class:`~rmqlab.lab.workload.Workload` written as a complete store directory,
CommitLog first and then dispatched, as a broker would have left it; and config/ with simulated
consumers in the shape of a given broker release.

>>> import tempfile
>>> from rmqlab.lab.workload import Workload
>>> s = generate_store(tempfile.mkdtemp(), Workload(messages=50, seed=1), commitlog_file_size=1 << 20)
>>> s.info()["messages"]
50
"""
from __future__ import annotations

import os
from pathlib import Path

from rmqlab.formats import commitlog as cl
from rmqlab.formats import consumequeue as cq
from rmqlab.formats.storepaths import StorePaths
from rmqlab.lab.workload import generate_chunks
from rmqlab.rules.dispatch import is_lmq
from rmqlab.store.directory import Store

__all__ = ["generate_store", "write_simulated_config"]

def generate_store(root: str | os.PathLike, workload, *, chunk_messages: int = 1_000_000,
                   commitlog_file_size: int = cl.DEFAULT_FILE_SIZE, dispatch: bool = True,
                   progress=None, config_version: str | None = None, **store_options) -> Store:
    """Write a complete store directory for a :class:`rmqlab.lab.workload.Workload`: the CommitLog
    through :class:`commitlog.CommitLogWriter` chunk by chunk, then (with `dispatch`) the
    ConsumeQueue, index files and checkpoint through :meth:`Store.dispatch` -- the same format
    code that reads real stores. Deterministic: the same workload gives the same bytes.
    `progress(done, total)` is called after each chunk. Refuses a folder that already holds a
    CommitLog. Cost: O(messages + bytes) for the CommitLog, vectorized a chunk at a time, then
    dispatch.
    With `config_version` (a broker version such as "4.9.7") and `dispatch`, also writes
    config/ in that version's shape with simulated consumer progress (see
    :func:`write_simulated_config`); off by default.
    """
    root = Path(root)
    if StorePaths(root).has_commitlog():
        raise FileExistsError(f"{root / 'commitlog'} already holds files; generate into a new folder")
    done = 0
    with cl.CommitLogWriter(StorePaths(root).commitlog, commitlog_file_size,
                            append_prop_crc=workload.append_prop_crc) as writer:
        for table in generate_chunks(workload, chunk_messages):
            writer.append(table)
            done += table.num_rows
            if progress is not None:
                progress(done, workload.messages)
    store = Store(root, commitlog_file_size=commitlog_file_size, **store_options)
    if dispatch:
        store.dispatch()
        if config_version is not None:
            write_simulated_config(store, config_version, seed=workload.seed)
    return store


def write_simulated_config(store: Store, broker_version: str, *, seed: int = 0) -> None:
    """Write config/ for a dispatched store as a broker of `broker_version` would have it, with
    simulated consumers: for each topic, group ``<topic>_consumer`` has committed a
    seed-chosen share (0 to 100 %) of each queue, and ``<topic>_stale`` (no subscription group
    config) half of queue 0; delayOffset.json holds each schedule queue's max offset. Every
    file is persisted twice, so each has a .bak. Deterministic by `seed`.
    """
    import random

    from rmqlab.formats.storeconfig_writer import write_store_config

    rng = random.Random(seed)
    queues: dict[str, dict[int, int]] = {}
    for topic, qid in store.queues():
        if is_lmq(topic):   # light message queues have no TopicConfig in topics.json
            continue
        queues.setdefault(topic, {})[qid] = cq.read_queue_info(cq.queue_dir(store.root, topic, qid),
                                                               store.consume_queue_file_size).max_offset
    batch_queues: dict[str, int] = {}
    for topic, qid in store.batch_queues():
        batch_queues[topic] = max(batch_queues.get(topic, 0), qid + 1)
    schedule = queues.pop("SCHEDULE_TOPIC_XXXX", {})
    offsets = {}
    for topic, ends in sorted(queues.items()):
        offsets[f"{topic}@{topic}_consumer"] = {q: end * rng.randint(0, 100) // 100 for q, end in sorted(ends.items())}
        first = min(ends)
        offsets[f"{topic}@{topic}_stale"] = {first: ends[first] // 2}
    info = store.info()
    write_store_config(store.root, broker_version=broker_version, timestamp=info["last_store_timestamp"] or 0,
                       persists=2, topics={**{t: len(e) for t, e in queues.items()}, **batch_queues},
                       batch_cq_topics=store.batch_cq_topics & set(batch_queues), consumer_offsets=offsets,
                       delay_offsets={q + 1: end for q, end in schedule.items()},
                       subscription_groups=[f"{t}_consumer" for t in queues])
