"""Key queries judged by the release's own ``DefaultMessageStore.queryMessage`` after a restart on
the store (StoreQuery.java, on a copy): :meth:`Store.query_message` returns the same records
(PHYSICALOFFSET and TOTALSIZE of each, in order) and :meth:`Store.query_by_key` the same offsets.

Twice: on the store as the broker left it, and after the broker's expiry has deleted its oldest
CommitLog files (CleanCommitLogService) and the index files that end before the first file left
(IndexService.deleteExpiredFile), which leaves an index file pointing into the deleted files: the
broker cannot read those offsets and leaves them out of its answer, as rmqlab must."""
from __future__ import annotations

import struct

import pytest
import rocketmq_harness as rh

from rmqlab.formats.indexfile import read_header
from rmqlab.store.directory import Store

RELEASES = [r for r in ("4.9.7", "5.3.3") if rh.selected(r, "clean")]
EXPIRY = ("none", "oldest commitlog files deleted")


def _expire(store) -> int:
    """Delete the oldest third of the CommitLog files and every index file but the newest whose
    end_phy_offset lies before the first file left, as the broker's cleaning does; the first
    CommitLog offset left."""
    files = sorted(p for p in (store / "commitlog").iterdir() if p.name.isdigit())
    assert len(files) >= 3, f"{len(files)} CommitLog files: too few to expire some"
    gone = files[:len(files) // 3]
    first_left = int(files[len(gone)].name)
    for p in gone:
        p.unlink()
    index = sorted(p for p in (store / "index").iterdir() if p.name.isdigit())
    for p in index[:-1]:
        if read_header(p).end_phy_offset < first_left:
            p.unlink()
    return first_left


def _records(found) -> list[tuple[int, int]]:
    """(stored PHYSICALOFFSET, TOTALSIZE) of each record of a QueryMessageResult, as StoreQuery
    reads the broker's buffers."""
    return [(struct.unpack_from(">q", b, 28)[0], len(b)) for b in found.buffers]


@pytest.mark.parametrize("expiry", EXPIRY)
@pytest.mark.parametrize("release", RELEASES)
def test_query_message_returns_what_the_broker_returns_after_a_restart(release, expiry, tmp_path):
    bs = rh.rocketmq_store(release, "clean")
    for name in ("ours", "broker"):
        rh.copy_store(bs.store, tmp_path / name)
        if expiry != "none":
            first_left = _expire(tmp_path / name)
    queries = [(q["topic"], q["key"], q["maxNum"], q["begin"], q["end"])
               for q in bs.answers["broker"]["key_queries"]]
    broker = rh.store_query_oracle(release, tmp_path / "broker", queries)
    store = Store(tmp_path / "ours", **bs.store_kwargs())
    left_out = 0
    for q, want in zip(queries, broker, strict=True):
        topic, key, max_num, begin, end = q
        found = store.query_message(topic, key, max_num=max_num, begin=begin, end=end)
        assert _records(found) == want, q
        assert found.phy_offsets == [o for o, _ in want], q
        frame = store.query_by_key(topic, key, max_num=max_num, begin=begin, end=end)
        assert frame["phy_offset"].tolist() == found.phy_offsets, q
        with store.index() as idx:
            walked = idx.query_offset(topic, key, max_num, begin, end).phy_offsets
        left_out += len(walked) - len(want)
        if expiry != "none":
            assert all(o >= first_left for o, _ in want), q
    assert sum(bool(w) for w in broker) > 20, "too few queries found messages to judge by"
    # expiry leaves offsets the index still gives and the broker cannot read: the rule is exercised
    assert (left_out > 0) == (expiry != "none"), left_out
