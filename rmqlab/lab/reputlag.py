"""The asynchronous dispatch lag, measured: a producer thread appends to the CommitLog while a
reput thread dispatches behind it, as a broker's ReputMessageService does.

A broker acknowledges a send once the message is in the CommitLog; its ReputMessageService
(one thread, a 1 ms sleep between rounds) reads the new bytes and writes the ConsumeQueue units
and index entries later. Until then a consumer cannot pull the message and a key query cannot
find it. :func:`measure_dispatch_lag` reproduces that on a real store folder: one thread appends
a workload's messages in chunks at a given rate (:class:`~rmqlab.formats.commitlog.CommitLogWriter`),
another calls :meth:`rmqlab.store.directory.Store.dispatch` in a loop with a 1 ms pause, and the clock
times when each message's bytes were written and when a finished dispatch had covered it.

The numbers are this machine's and this implementation's (Python threads sharing one
interpreter), not a broker's: what they show is the shape, a lag of one reput round or more
per message, growing while the reput service falls behind a burst.

>>> import tempfile
>>> from rmqlab.lab.workload import Workload
>>> lag = measure_dispatch_lag(tempfile.mkdtemp(), Workload(messages=400, seed=1), chunk_messages=100,
...                            hash_slot_num=64, index_num=512)
>>> len(lag), bool((lag["lag_ms"] >= 0).all()), lag.attrs["rounds"] > 0
(400, True, True)
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.formats.storepaths import StorePaths
from rmqlab.lab.workload import Workload, generate
from rmqlab.store.directory import Store

__all__ = ["REPUT_PAUSE_S", "measure_dispatch_lag"]

#: ReputMessageService's pause between two rounds (Thread.sleep(1) in its run loop).
REPUT_PAUSE_S = 0.001


def measure_dispatch_lag(root: str | os.PathLike, workload: Workload, *, chunk_messages: int = 500,
                         chunks_per_second: float = 50.0, commitlog_file_size: int = 1 << 20,
                         **store_options) -> pd.DataFrame:
    """Write `workload` into a new store at `root` in chunks of `chunk_messages` (at most
    `chunks_per_second` appends a second) while a second thread dispatches behind it; one row
    per message: phy_offset, total_size, written_s (seconds after the start when its chunk's
    append returned), dispatched_s (when the first dispatch round that covered it returned),
    lag_ms. ``attrs``: rounds (dispatch rounds), samples (a DataFrame of t_s, commitlog_end and
    queued_to, bytes, read by the reput thread before each round). `store_options` go to
    :class:`~rmqlab.store.directory.Store` (hash_slot_num, index_num, ...).

    Cost: the workload's generation and write, plus dispatch; about the time the appends take
    at the given rate (messages / chunk_messages / chunks_per_second seconds) and a few rounds.
    Raises FileExistsError when `root` already holds a CommitLog.
    """
    root = Path(root)
    if StorePaths(root).has_commitlog():
        raise FileExistsError(f"{root / 'commitlog'}: already holds a CommitLog")
    table = generate(workload)
    store = Store(root, commitlog_file_size=commitlog_file_size, **store_options)
    n = table.num_rows
    written_at = np.full(n, np.nan)
    ends: list[int] = []
    done = threading.Event()
    errors: list[BaseException] = []
    t0 = time.perf_counter()

    def produce() -> None:
        try:
            with cl.CommitLogWriter(StorePaths(root).commitlog, commitlog_file_size) as w:
                for lo in range(0, n, chunk_messages):
                    started = time.perf_counter()
                    w.append(table.slice(lo, chunk_messages))
                    written_at[lo:lo + chunk_messages] = time.perf_counter() - t0
                    ends.append(w.offset)
                    time.sleep(max(0.0, 1.0 / chunks_per_second - (time.perf_counter() - started)))
        except BaseException as e:       # noqa: BLE001 - handed to the caller's thread
            errors.append(e)
        finally:
            done.set()

    rounds: list[tuple[float, int, int, float]] = []     # (started, commitlog end seen, queued_to, returned)
    producer = threading.Thread(target=produce, name="rmqlab-producer")
    producer.start()
    while True:
        finished = done.is_set()
        if StorePaths(root).has_commitlog():
            started = time.perf_counter() - t0
            committed = ends[-1] if ends else 0     # the end of the last append that returned
            seen = cl.max_offset(StorePaths(root).commitlog)
            try:
                queued_to = store.dispatch().to_offset
            except FormatError as e:
                # The broker's reput reads no further than the CommitLog's committed end; this
                # one reads the files, so it can meet the record the producer is writing now.
                # What came before it is dispatched; the next round reads that record whole.
                if e.path is None or int(Path(e.path).name) + (e.offset or 0) < committed:
                    raise
                queued_to = store.reput_from_offset()
            rounds.append((started, seen, queued_to, time.perf_counter() - t0))
        if finished:
            break
        time.sleep(REPUT_PAUSE_S)
    producer.join()
    if errors:
        raise errors[0]
    msgs = store.messages()
    end = (msgs["phy_offset"] + msgs["total_size"]).to_numpy(np.int64)
    covered = np.array([r[2] for r in rounds], np.int64)
    returned = np.array([r[3] for r in rounds])
    # the first round whose dispatch reached past the message
    first = np.searchsorted(np.maximum.accumulate(covered), end, side="left")
    dispatched_at = returned[np.minimum(first, len(returned) - 1)]
    out = pd.DataFrame({"phy_offset": msgs["phy_offset"].to_numpy(np.int64), "total_size": msgs["total_size"],
                        "written_s": written_at[:len(msgs)], "dispatched_s": dispatched_at})
    out["lag_ms"] = (out["dispatched_s"] - out["written_s"]) * 1000.0
    out.attrs["rounds"] = len(rounds)
    out.attrs["samples"] = pd.DataFrame(rounds, columns=["t_s", "commitlog_end", "queued_to", "returned_s"])
    out.attrs["chunk_ends"] = ends
    return out
