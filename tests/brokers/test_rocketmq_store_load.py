"""Whether a store loads, judged by the release's own DefaultMessageStore.load() (StoreLoad.java,
on a copy; a broker whose load answers false exits at start): a store rmqlab verify passes loads,
and one it fails with ``store.empty-last-file`` does not. The case: a crash between creating a
mapped file and writing it leaves an empty last file (seen in a 4.9.3 crash store, whose broker
then refused to restart: "length not matched message store config value, please check it
manually"); MappedFileQueue.doLoad deletes it from 5.1.3 on, and up to 4.4.x (and in 4.9.2) the
load stops at it and succeeds ("ignore it")."""
from __future__ import annotations

import pytest
import rocketmq_harness as rh

from rmqlab.verify import verify_path

#: releases of each rule, of those selected: 4.2.0 and 4.9.2 stop the load at a file of another
#: length and start ("ignore it"), 4.9.7 and 5.0.0 refuse it, 5.3.3 deletes an empty last file
RELEASES = [r for r in ("4.2.0", "4.9.2", "4.9.7", "5.0.0", "5.3.3") if rh.selected(r, "clean")]
DAMAGE = ("none", "empty consume queue file", "empty commitlog file")


def _damage(store, how: str) -> None:
    if how == "empty consume queue file":
        q = store / "consumequeue" / "TopicA" / "0"
        last = max(int(p.name) for p in q.iterdir())
        (q / f"{last + rh.CONSUME_QUEUE_FILE_SIZE:020d}").write_bytes(b"")
    elif how == "empty commitlog file":
        c = store / "commitlog"
        last = max(int(p.name) for p in c.iterdir())
        (c / f"{last + rh.COMMITLOG_FILE_SIZE:020d}").write_bytes(b"")


@pytest.mark.parametrize("how", DAMAGE)
@pytest.mark.parametrize("release", RELEASES)
def test_verify_fails_exactly_the_stores_the_release_will_not_load(release, how, tmp_path):
    bs = rh.rocketmq_store(release, "clean")
    for name in ("checked", "loaded"):
        rh.copy_store(bs.store, tmp_path / name)
        _damage(tmp_path / name, how)
    report = verify_path(tmp_path / "checked", commitlog_file_size=rh.COMMITLOG_FILE_SIZE,
                         consume_queue_file_size=rh.CONSUME_QUEUE_FILE_SIZE, broker_version=release)
    empty = [p for f in report.files for p in f.errors if p.check == "store.empty-last-file"]
    loaded = rh.store_load_oracle(release, tmp_path / "loaded")
    v = rh.version_tuple(release)
    assert loaded == (how == "none" or v >= (5, 1, 3) or v < (4, 5, 0) or v == (4, 9, 2)), (release, how)
    assert bool(empty) == (not loaded), [str(p.error) for p in empty]
    assert report.ok == loaded, report.summary()
