"""What a restarted broker's dispatch adds to queues that lag the CommitLog
(:meth:`Store.restart_dispatch_units`, ``LogicQueue(after_restart=True)``), judged by the
reference dispatch (tests/support/dispatch_reference.py) of the whole CommitLog: a store whose
queues were dispatched only up to a cut (the CommitLog's bytes after it zeroed while the
reference dispatched, then put back, as a crash leaves queues behind their CommitLog) must, after
the restart's dispatch, hold every queue's units as the whole dispatch writes them. The broker
resumes from the largest CommitLog end any unit records (DefaultMessageStore.start); against a
real broker's RocksDB queues after a kill -9: tests/brokers/test_rocketmq_brokers.py."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from dispatch_reference import reference_dispatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqlab.formats import commitlog as cl
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.store.directory import Store
from rmqlab.store.queues import LogicQueue

COLUMNS = ["queue_offset", "commitlog_offset", "size", "tags_code"]


def _units(store: Store, queues, *, after_restart: bool) -> dict:
    out = {}
    for topic, qid in queues:
        with LogicQueue(store, topic, qid, after_restart=after_restart) as q:
            out[(topic, qid)] = q.units(0, 1 << 40)[COLUMNS].values.tolist()
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(5, 300), st.integers(0, 10_000), st.booleans(), st.floats(0.0, 1.0))
def test_the_restart_dispatch_completes_queues_dispatched_up_to_a_cut(messages, seed, lmq, where):
    w = Workload(messages=messages, seed=seed, topics=("T", "orders"), queues_per_topic=3,
                 lmq_queues=("%LMQ%a",) if lmq else (), multi_dispatch_every=3 if lmq else 0,
                 transaction_fraction=0.2, delay_fraction=0.2)
    options = dict(commitlog_file_size=1 << 16, hash_slot_num=8, index_num=64, consume_queue_file_size=400,
                   enable_lmq=lmq, enable_multi_dispatch=lmq)
    base = Path(tempfile.mkdtemp())
    try:
        whole = generate_store(base / "whole", w, dispatch=False, **options)
        reference_dispatch(whole)
        cut = generate_store(base / "cut", w, dispatch=False, **options)
        files = cl.store_files(cut.root / "commitlog")
        offsets = cl.read_columns(cut.root / "commitlog", body=False)["phy_offset"].tolist()
        at = offsets[int(where * (len(offsets) - 1))]      # dispatch the messages before this offset
        saved = {f.path: f.path.read_bytes() for f in files}
        for f in files:
            raw = bytearray(saved[f.path])
            lo = min(max(at - f.start_offset, 0), len(raw))
            raw[lo:] = bytes(len(raw) - lo)
            f.path.write_bytes(bytes(raw))
        reference_dispatch(Store(cut.root, **options))
        for path, raw in saved.items():
            path.write_bytes(raw)
        queues = sorted(Store(whole.root, **options).logical_queues())
        theirs = _units(Store(whole.root, **options), queues, after_restart=False)
        assert _units(Store(cut.root, **options), queues, after_restart=True) == theirs
        # the restart reads the CommitLog from where the queues end, not from its start
        restarted = Store(cut.root, **options).restart_dispatch_units()
        assert (restarted["commitlog_offset"] >= Store(cut.root, **options).consume_queue_end()).all()
    finally:
        shutil.rmtree(base, ignore_errors=True)
