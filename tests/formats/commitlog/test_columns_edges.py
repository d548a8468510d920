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
