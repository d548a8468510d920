"""A store at a URI seen as a local folder (rmqlab.spark.mirror), in an S3 bucket (moto_server).

Independent truth: the bytes uploaded. Every file but the CommitLog's must be in the mirror
byte for byte once it is made; a CommitLog file must hold no block on disk until a reader of
rmqlab.formats.commitlog opens it, and then hold the uploaded bytes; a task on another machine
than the driver's must leave the CommitLog files it read as stand-ins again, and a mirror made
there must be the same. ``rmqlab spark verify`` of stores in the bucket: test_verify.py.
"""
from __future__ import annotations

import dataclasses
import multiprocessing
import os
import socket
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from s3server import BUCKET, s3_uri, upload

from rmqlab.formats import commitlog as cl
from rmqlab.lab.generate import generate_store
from rmqlab.lab.workload import Workload
from rmqlab.spark.mirror import Mirror, make_mirror, shown_uri

FILE = 1 << 16


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mirror") / "store"
    generate_store(root, Workload(messages=1500, seed=3), commitlog_file_size=FILE, hash_slot_num=61, index_num=1000)
    return root


@pytest.fixture(scope="module")
def uri(s3_endpoint, store) -> str:
    return upload(store, s3_uri(s3_endpoint, "mirror/store"))


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _is_commitlog(relative: str) -> bool:
    return relative.startswith("commitlog/")


def _blocks(path: str) -> int:
    return os.stat(path).st_blocks


def test_the_small_files_are_copied_and_the_commitlog_stands_in(store, uri):
    m = make_mirror(uri)
    try:
        want = _files(store)
        assert sum(map(_is_commitlog, want)) >= 3, "the store must hold several CommitLog files"
        got = {rel: size for rel, size, _ in m.files}
        assert got == {rel: len(data) for rel, data in want.items()}
        for rel, data in want.items():
            local = os.path.join(m.root, *rel.split("/"))
            assert os.path.getsize(local) == len(data)
            if _is_commitlog(rel):
                assert _blocks(local) == 0, f"{rel}: brought before any reader opened it"
            else:
                assert Path(local).read_bytes() == data, rel
        assert m.shown == f"s3://{BUCKET}/mirror/store"
        # a reader opens one CommitLog file: that one only is brought, with the uploaded bytes
        first, second = sorted(rel for rel in want if _is_commitlog(rel))[:2]
        msg = cl.read_message(os.path.join(m.root, *first.split("/")), 0)
        assert msg.phy_offset == 0
        assert Path(m.root, first).read_bytes() == want[first]
        assert _blocks(os.path.join(m.root, second)) == 0
        # the listing is the store's: names and sizes, the offsets they give
        assert [(f.path.name, f.size) for f in cl.store_files(Path(m.root) / "commitlog")] == \
            [(Path(rel).name, len(want[rel])) for rel in sorted(want) if _is_commitlog(rel)]
    finally:
        m.remove()
    assert not os.path.exists(m.scratch)
    assert cl.present(os.path.join(m.root, first)) == os.path.join(m.root, first)   # withdrawn: nothing brought


def _read_in_another_process(m: Mirror, relative: str) -> bytes:
    """A task on another machine than the driver's (its own mirror folder): read one CommitLog
    file through the reader, then end; returns what was read."""
    with m.on_executor():
        with cl.files.ReadOnlyMap(os.path.join(m.root, *relative.split("/"))) as buf:
            return bytes(buf)


def test_a_task_on_another_machine_gives_its_commitlog_files_back(store, uri, tmp_path):
    driver = make_mirror(uri)
    try:
        # as the same mirror would be on a machine of its own: another folder, another host
        folder = str(tmp_path / "elsewhere" / os.path.basename(driver.scratch))
        away = dataclasses.replace(driver, scratch=folder, root=driver.root.replace(driver.scratch, folder),
                                   driver_host=socket.gethostname() + "-driver")
        want = _files(store)
        commitlog = sorted(rel for rel in want if _is_commitlog(rel))
        with ProcessPoolExecutor(2) as ex:
            got = list(ex.map(_read_in_another_process, [away] * len(commitlog), commitlog))
        assert got == [want[rel] for rel in commitlog]
        for rel, data in want.items():
            local = os.path.join(away.root, *rel.split("/"))
            assert os.path.getsize(local) == len(data), rel
            if _is_commitlog(rel):
                assert _blocks(local) == 0, f"{rel}: still held after the task ended"
            else:
                assert Path(local).read_bytes() == data, rel
        assert not any(name.endswith(".part") for _, _, names in os.walk(folder) for name in names)
        # a task in this process: its stand-ins last as long as the task (a reused worker keeps none)
        assert _read_in_another_process(away, commitlog[0]) == want[commitlog[0]]
        local = os.path.join(away.root, *commitlog[0].split("/"))
        cl.present(local)
        assert _blocks(local) == 0
    finally:
        driver.remove()


def test_a_file_another_task_reads_is_not_given_back(store, uri, tmp_path):
    """Two tasks on one machine read the same CommitLog file: the first to end leaves it, the
    last gives it back."""
    import fcntl

    driver = make_mirror(uri)
    try:
        folder = str(tmp_path / "elsewhere" / os.path.basename(driver.scratch))
        away = dataclasses.replace(driver, scratch=folder, root=driver.root.replace(driver.scratch, folder),
                                   driver_host=socket.gethostname() + "-driver")
        rel = sorted(r for r, _, remote in driver.files if remote)[0]
        local = os.path.join(away.root, *rel.split("/"))
        with away.on_executor():        # the other task: it reads the file and is still running
            with cl.files.ReadOnlyMap(local) as buf:
                first = bytes(buf)
            # a process of its own, as Spark's workers are (a fork of this one would share its locks)
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as ex:
                assert ex.submit(_read_in_another_process, away, rel).result() == first
            assert _blocks(local) > 0, "given back while another task reads it"
        assert first == (store / rel).read_bytes()
        assert _blocks(local) == 0, "not given back by the last task to end"
        lock = away._mark(rel) + ".lock"
        with open(lock, "a+b") as fh:    # no hold left behind
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        driver.remove()


def test_a_commitlog_folder_at_a_uri_stands_in(store, uri):
    m = make_mirror(uri.replace("/store?", "/store/commitlog?"))
    try:
        names = sorted(p.name for p in (store / "commitlog").iterdir())
        assert sorted(os.listdir(m.root)) == names
        assert all(remote for _, _, remote in m.files)
        assert all(_blocks(os.path.join(m.root, n)) == 0 for n in names)
    finally:
        m.remove()


def test_one_file_at_a_uri(store, uri):
    m = make_mirror(uri.replace("/store?", "/store/checkpoint?"))
    try:
        assert m.single and Path(m.root).read_bytes() == (store / "checkpoint").read_bytes()
    finally:
        m.remove()


def test_a_file_of_several_ranges_with_holes(s3_endpoint):
    """Brought in ranged reads of 8 MiB, several at a time, zero ranges left holes: the bytes
    uploaded, whatever the ranges' order."""
    from rmqlab.spark import storage

    rng = np.random.default_rng(5)
    data = bytearray(rng.integers(0, 256, (20 << 20) + 12345, dtype=np.uint8).tobytes())
    data[8 << 20:16 << 20] = bytes(8 << 20)      # a whole range of zeros
    uri = s3_uri(s3_endpoint, "mirror/big/00000000000000000000")
    storage.write_bytes(storage.resolve(uri), bytes(data))
    m = make_mirror(uri)
    try:
        assert Path(m.root).read_bytes() == data
        assert os.stat(m.root).st_blocks * 512 < len(data) - (4 << 20), "the zero range was written"
    finally:
        m.remove()


def test_nothing_at_the_uri_is_said_without_credentials(s3_endpoint):
    with pytest.raises(FileNotFoundError, match=f"s3://{BUCKET}/mirror/none: no such file"):
        make_mirror(s3_uri(s3_endpoint, "mirror/none"))


def test_shown_uri_drops_credentials_and_options():
    assert shown_uri("s3://K:S@b/x/store/?region=us-east-1") == "s3://b/x/store"
    assert shown_uri("hdfs://namenode:8020/data/store") == "hdfs://namenode:8020/data/store"
    assert shown_uri("file:///tmp/store") == "file:///tmp/store"


def test_a_ledgers_data_files_stand_in_too(tmp_path):
    """A DLedger store keeps its CommitLog in the ledger's data folder (dledger-<selfId>/data):
    those files stand in as a commitlog folder's do (no block on disk once the mirror is made),
    the ledger's index and every other file are copied, and DLedger's own reader of the mirror
    brings what it reads and sees the ledger it reads at the source."""
    from dledger_model import frame, write_ledger

    from rmqlab.formats.dledger import Ledger

    size = 4096
    recs = [cl.encode_message(topic="T", body=b"x" * k, queue_offset=k, store_timestamp=1_700_000_000_000 + k,
                              properties={"KEYS": f"k{k}"}) for k in range(60)]
    store = tmp_path / "store"
    ledger = write_ledger(store / "dledger-n0", frame(recs, size))
    (store / "checkpoint").write_bytes(bytes(16))
    want = _files(store)
    data = sorted(rel for rel in want if rel.startswith("dledger-n0/data/"))
    assert len(data) >= 2, "the ledger must hold several data files"
    m = make_mirror("file://" + str(store))
    try:
        assert {rel: remote for rel, _, remote in m.files} == {rel: rel in data for rel in want}
        for rel, content in want.items():
            local = os.path.join(m.root, *rel.split("/"))
            assert os.path.getsize(local) == len(content)
            if rel in data:
                assert _blocks(local) == 0, f"{rel}: brought before any reader opened it"
            else:
                assert Path(local).read_bytes() == content, rel
        assert Ledger(Path(m.root) / "dledger-n0", file_size=size).summary() == Ledger(ledger, file_size=size).summary()
        for rel in data:
            assert Path(m.root, rel).read_bytes() == want[rel]
    finally:
        m.remove()
