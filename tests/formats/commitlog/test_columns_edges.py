"""One message read by its file path and position, against the standard-library walk of a real
4.2.0 broker's CommitLog (tests/support/commitlog_stdlib.py): the mapped-file path of
read_message, which the decode tests reach only through buffers."""
from __future__ import annotations

from commitlog_stdlib import read_commitlog
from oracles import require_real_data

from rmqlab.formats.commitlog import columns

STORE = "rocketmq/store-ericpangopher-4.2.0"


def test_read_message_by_path_equals_the_stdlib_walk() -> None:
    folder = require_real_data(STORE) / "commitlog"
    truth = read_commitlog(folder)
    assert len(truth) > 3
    for want in (truth[0], truth[len(truth) // 2], truth[-1]):
        # the file holding it: the last whose name (its start offset) is not past it
        path = max((f for f in folder.iterdir() if int(f.name) <= want["phy_offset"]),
                   key=lambda f: int(f.name))
        got = columns.read_message(path, want["phy_offset"] - int(path.name))
        assert (got.phy_offset, got.topic, got.queue_id, got.queue_offset, got.body, got.store_timestamp,
                got.total_size) == (want["phy_offset"], want["topic"], want["queue_id"], want["queue_offset"],
                                    want["body"], want["store_timestamp"], want["total_size"])


def test_arrow_text_dictionaries_hold_each_value_once(tmp_path) -> None:
    """read_columns(arrow=True) gives topic and tags dictionary-encoded: each distinct value is one
    dictionary entry (a value coded twice would decode right and double the dictionary), and the
    values are the ones written."""
    from rmqlab.formats import commitlog as cl
    from rmqlab.lab.workload import Workload, generate

    table = generate(Workload(messages=300, seed=3, topics=("T", "orders", "B"), queues_per_topic=2))
    with cl.CommitLogWriter(tmp_path / "commitlog", 1 << 20) as writer:
        writer.append(table)
    got = cl.read_columns(tmp_path / "commitlog", arrow=True)
    for name in ("topic", "tags"):
        column = got[name].array._pa_array.combine_chunks()
        values = column.dictionary.to_pylist()
        written = {v for v in table.column(name).to_pylist() if v is not None}
        assert len(values) == len(set(values))
        assert set(values) - {""} == written - {""}
