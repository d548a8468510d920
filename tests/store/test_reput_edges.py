"""The dispatch report's own time: Store.dispatch states how long it took, a float no larger
than the time the caller measures around the call (the clock is the judge, not the report)."""
from __future__ import annotations

import time
from pathlib import Path

from rmqlab.formats import commitlog as cl
from rmqlab.lab.workload import Workload, generate
from rmqlab.store import reput
from rmqlab.store.directory import Store


def test_the_report_states_the_dispatch_time(tmp_path: Path) -> None:
    table = generate(Workload(messages=50, seed=1, topics=("T",), queues_per_topic=2))
    with cl.CommitLogWriter(tmp_path / "commitlog", 1 << 16) as writer:
        writer.append(table)
    layout = Store(tmp_path, commitlog_file_size=1 << 16, hash_slot_num=8, index_num=32).layout
    before = time.perf_counter()
    rep = reput.dispatch_store(layout)
    took = time.perf_counter() - before
    assert rep.messages == 50
    assert isinstance(rep.seconds, float)
    assert 0 < rep.seconds <= took
