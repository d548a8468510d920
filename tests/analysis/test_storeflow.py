"""rmqlab.analysis.storeflow: every count and offset of the data-flow figure against the files' own bytes
(struct at the documented layouts), a store whose dispatch lags, and a real 4.2.0 broker store
whose ConsumeQueue stopped 123 messages short of its CommitLog."""
from __future__ import annotations

import struct

import matplotlib

matplotlib.use("Agg")

from oracles import require_real_data  # noqa: E402

from rmqlab.analysis.storeflow import store_flow  # noqa: E402
from rmqlab.formats import commitlog as cl  # noqa: E402
from rmqlab.jvm.hashcode import index_hash, java_hash  # noqa: E402
from rmqlab.lab.sample import sample_store  # noqa: E402
from rmqlab.lab.workload import Workload, generate  # noqa: E402
from rmqlab.store.directory import Store  # noqa: E402


def _units_on_disk(root) -> int:
    """Units in every ConsumeQueue file: 20-byte records with a non-zero size (struct)."""
    n = 0
    for p in (root / "consumequeue").glob("*/*/*"):
        raw = p.read_bytes()
        n += sum(1 for i in range(0, len(raw) - 19, 20) if struct.unpack_from(">qiq", raw, i)[1] > 0)
    return n


def test_sample_store_flow_against_the_bytes():
    store = sample_store()
    flow = store_flow(store)
    root = store.root
    assert flow.consume_queue_units == _units_on_disk(root)
    index_files = sorted((root / "index").iterdir())
    assert flow.index_files == len(index_files)
    assert flow.index_keys == sum(struct.unpack_from(">i", p.read_bytes(), 36)[0] - 1 for p in index_files)
    assert flow.commitlog_end == cl.max_offset(root / "commitlog") == flow.queued_to
    assert flow.dispatch_lag_bytes == 0 and flow.producers == 8
    m = flow.followed
    record = (root / "commitlog" / m.commitlog_file).read_bytes()
    size, _, _, queue_id, _, queue_offset, phy = struct.unpack_from(">iiiiiqq", record, m.position)
    assert (size, queue_id, queue_offset, phy) == (m.total_size, m.queue_id, m.queue_offset, m.phy_offset)
    assert int(m.commitlog_file) + m.position == m.phy_offset
    unit_file = root / "consumequeue" / m.topic / str(m.queue_id) / m.consume_queue_file
    unit = struct.unpack_from(">qiq", unit_file.read_bytes(), m.unit_position)
    tags = cl.read_message(root / "commitlog" / m.commitlog_file, m.position).tags
    assert unit == (m.phy_offset, m.total_size, java_hash(tags)) == (m.unit_commitlog_offset, m.unit_size,
                                                                     m.unit_tags_code)
    assert len(m.index_entries) == len(m.index_keys) >= 2
    for ref in m.index_entries:
        raw = (root / "index" / ref.file).read_bytes()
        key_hash, phy_offset, _, _ = struct.unpack_from(">iqii", raw, ref.entry_offset)
        assert (key_hash, phy_offset) == (index_hash(ref.key), m.phy_offset)
        assert ref.slot == key_hash % store.hash_slot_num
        assert ref.entry_offset == 40 + 4 * store.hash_slot_num + 20 * ref.entry


def test_lagging_dispatch(tmp_path):
    """CommitLog bytes appended after the last dispatch are the lag; a dispatch clears it."""
    opts = dict(hash_slot_num=64, index_num=256, commitlog_file_size=1 << 16)
    root = tmp_path / "store"
    table = generate(Workload(messages=340, seed=5))
    with cl.CommitLogWriter(root / "commitlog", opts["commitlog_file_size"]) as w:
        w.append(table.slice(0, 300))
    store = Store(root, **opts)
    store.dispatch()
    before = store_flow(store)
    with cl.CommitLogWriter(root / "commitlog", opts["commitlog_file_size"]) as w:
        w.append(table.slice(300))
    lagging = store_flow(store)
    appended = cl.max_offset(root / "commitlog") - before.commitlog_end
    assert before.dispatch_lag_bytes == 0 and appended > 0
    assert lagging.dispatch_lag_bytes == appended and lagging.messages == table.num_rows
    store.dispatch()
    assert store_flow(store).dispatch_lag_bytes == 0


def test_real_broker_store_stopped_dispatching():
    root = require_real_data("rocketmq/store-ericpangopher-4.2.0")
    flow = store_flow(Store(root, commitlog_file_size=8192, consume_queue_file_size=200), follow=172 * 3)
    assert flow.messages == 179 and flow.commitlog_end == 24576 + 38 * 172
    assert flow.consume_queue_units == 56 == _units_on_disk(root)
    # the 56th unit ends where message 56 starts: 47 messages a file, 172 bytes each
    assert flow.queued_to == 8192 + (56 - 47) * 172
    assert flow.dispatch_lag_bytes == flow.commitlog_end - flow.queued_to
    assert flow.index_files == 0 and flow.followed.index_entries == []
    assert flow.followed.queue_offset == 3 and flow.followed.unit_commitlog_offset == 172 * 3
