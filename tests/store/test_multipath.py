"""A CommitLog kept over several folders (storePathCommitLog with commas, 4.9.2+), read as one:
judged by the same store kept in one folder (every file moved as MultiPathMappedFileQueue
places it: the file of offset n * size in the n % k-th folder, sorted). Against the broker
itself (its own decode, answers and pulls on a store it wrote over two folders):
tests/brokers/test_rocketmq_brokers.py."""
from __future__ import annotations

import shutil

import pytest

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.store.directory import Store
from rmqlab.verify import verify_path

GEOMETRY = {"commitlog_file_size": 1 << 16, "hash_slot_num": 64, "index_num": 4096, "consume_queue_file_size": 2000}
FOLDERS = ["commitlog", "disk2/commitlog", "disk3/commitlog"]


@pytest.fixture(scope="module")
def split(tmp_path_factory):
    """(the store in one folder, a copy with its CommitLog files spread over FOLDERS)."""
    whole = tmp_path_factory.mktemp("whole") / "store"
    generate_store(whole, Workload(messages=3000, seed=7), **GEOMETRY)
    spread = tmp_path_factory.mktemp("spread") / "store"
    shutil.copytree(whole, spread)
    for folder in FOLDERS[1:]:
        (spread / folder).mkdir(parents=True)
    order = sorted(FOLDERS)
    for f in sorted((spread / "commitlog").iterdir()):
        target = spread / order[(int(f.name) // GEOMETRY["commitlog_file_size"]) % len(order)] / f.name
        if target.parent != f.parent:
            f.rename(target)
    assert all(any((spread / d).iterdir()) for d in FOLDERS)
    return whole, spread


def test_the_spread_store_reads_as_the_whole_one(split):
    whole, spread = split
    a = Store(whole, **GEOMETRY)
    b = Store(spread, **GEOMETRY, commitlog_paths=FOLDERS)
    ma, mb = a.messages(body=True), b.messages(body=True)
    assert len(ma) == 3000 and ma.equals(mb)
    keys = ma["keys"].dropna().str.split(" ").explode().unique()[:50]
    for topic, key in zip(ma["topic"], keys, strict=False):
        assert a.query_by_key(topic, key)["phy_offset"].tolist() == b.query_by_key(topic, key)["phy_offset"].tolist()
    assert b.get_message("TopicTest", 0, 0).status == a.get_message("TopicTest", 0, 0).status
    # each file is named by its real place
    assert {f.path.parent.relative_to(spread).as_posix() for f in cl.store_files(b.commitlog_dir)} == set(FOLDERS)


def test_verify_passes_the_spread_store_and_hints_without_the_paths(split):
    _, spread = split
    kw = {"commitlog_file_size": GEOMETRY["commitlog_file_size"], "consume_queue_file_size": 2000}
    assert verify_path(spread, **kw, commitlog_paths=FOLDERS).errors == []
    alone = verify_path(spread, **kw)
    gaps = [p for p in alone.errors if p.check == "commitlog.continuity"]
    assert gaps and all("--commitlog-paths" in str(p) for p in gaps)


def test_a_file_in_two_folders_is_a_typed_error(split, tmp_path):
    _, spread = split
    copy = tmp_path / "store"
    shutil.copytree(spread, copy)
    first = sorted((copy / "commitlog").iterdir())[0]
    shutil.copy(first, copy / "disk2" / "commitlog" / first.name)
    with pytest.raises(FormatError) as e:
        Store(copy, **GEOMETRY, commitlog_paths=FOLDERS).messages()
    assert e.value.field == "file name" and first.name in str(e.value)
