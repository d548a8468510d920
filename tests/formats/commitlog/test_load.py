"""The broker's load rules for a ``commitlog/`` folder (commitlog.load_files) and what the
readers, verify and recover make of them."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import require_real_data

from rmqlab.errors import FormatError
from rmqlab.formats import commitlog as cl
from rmqlab.store.recover import UnrecoverableError, recover_store
from rmqlab.verify import verify_path

SIZE = 4096


def model_roles(kinds: list[str]) -> list[str]:
    """The rules, written plainly: an empty last file is dropped; after the last file holding
    data, files are preallocated (the first file stays when none holds data)."""
    roles = ["data"] * len(kinds)
    rest = len(kinds)
    if kinds and kinds[-1] == "empty":
        roles[-1] = "dropped"
        rest -= 1
    holding = [i for i in range(rest) if kinds[i] == "data"]
    active = holding[-1] if holding else 0
    for i in range(active + 1, rest):
        roles[i] = "preallocated"
    if rest:
        roles[active] = "active"
    return roles


def write_folder(d, kinds: list[str]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for i, k in enumerate(kinds):
        body = b"" if k == "empty" else (b"\x07" + bytes(SIZE - 1) if k == "data" else bytes(SIZE))
        (d / f"{i * SIZE:020d}").write_bytes(body)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["data", "zeros", "empty"]), max_size=6))
def test_roles_follow_the_model(tmp_path_factory, kinds):
    d = tmp_path_factory.mktemp("cl")
    write_folder(d, kinds)
    loaded = cl.load_files(d)
    assert [loaded.role(f) for f in loaded.files] == model_roles(kinds)
    assert set(loaded.reasons) == {f.path for f in loaded.dropped + loaded.preallocated}


def writer_folder(tmp_path, n=40):
    d = tmp_path / "commitlog"
    with cl.CommitLogWriter(d, file_size=SIZE) as w:
        w.append({"topic": ["T"] * n, "body": [b"x" * 20] * n})
    return d


def next_name(d) -> str:
    last = cl.store_files(d)[-1]
    return f"{last.start_offset + SIZE:020d}"


def test_preallocated_file_after_the_active_one_is_no_damage(tmp_path):
    d = writer_folder(tmp_path)
    before = cl.read_columns(d)
    end = before.attrs["report"].end_phy_offset
    (d / next_name(d)).write_bytes(bytes(SIZE))          # AllocateMappedFileService's next file
    after = cl.read_columns(d)
    assert after.equals(before) and after.attrs["report"].end_phy_offset == end
    assert cl.max_offset(d) == end
    stream = cl.iter_messages(d)
    assert len(list(stream)) == len(before) and stream.report.end_phy_offset == end
    r = verify_path(d)
    assert r.ok and r.files[-1].counts["role"] == "preallocated"
    assert any("created ahead of use" in n for n in r.notes)
    plan = recover_store(tmp_path, dry_run=True, commitlog_file_size=SIZE, hash_slot_num=16, index_num=64)
    assert not any(a.kind.startswith("commitlog-") for a in plan.actions)


def test_empty_last_file_is_dropped_and_deleted_by_recover(tmp_path):
    d = writer_folder(tmp_path)
    n = len(cl.read_columns(d))
    empty = d / next_name(d)
    empty.write_bytes(b"")
    assert len(cl.read_columns(d)) == n
    r = verify_path(d)
    assert r.ok and r.files[-1].counts["role"] == "dropped"
    rec = recover_store(tmp_path, commitlog_file_size=SIZE, hash_slot_num=16, index_num=64)
    assert [a.kind for a in rec.actions].count("commitlog-file-deleted") == 1 and not empty.exists()


def test_an_empty_file_before_the_last_still_fails(tmp_path):
    """Only the last empty file is deleted on load; any other file of the wrong size fails it."""
    d = writer_folder(tmp_path)
    name = next_name(d)
    (d / name).write_bytes(b"")
    (d / f"{int(name) + SIZE:020d}").write_bytes(b"")
    r = verify_path(d)
    assert not r.ok and [p.check for p in r.problems] == ["commitlog.file-size"]
    assert r.problems[0].path == str(d / name)
    with pytest.raises(UnrecoverableError, match="file size"):
        recover_store(tmp_path, dry_run=True, commitlog_file_size=SIZE, hash_slot_num=16, index_num=64)


def test_zeros_in_a_file_followed_by_data_are_still_damage(tmp_path):
    """A file that ends in zeros without the blank is damage when a later file holds data: the
    broker's recovery would stop there and delete the later files."""
    d = writer_folder(tmp_path, n=80)
    files = cl.store_files(d)
    assert len(files) >= 3
    first = files[0].path
    data = bytearray(first.read_bytes())
    used = int(cl.read_columns(first)["total_size"].sum())
    data[used:] = bytes(len(data) - used)                # the blank record gone
    first.write_bytes(bytes(data))
    r = verify_path(d)
    assert [p.check for p in r.problems] == ["commitlog.blank"]
    with pytest.raises(FormatError, match="zeros where the next record") as info:
        cl.read_columns(d)
    assert type(info.value) is FormatError


def test_require_real_data_fails_in_ci_and_skips_elsewhere(monkeypatch):
    from collections import Counter

    import oracles

    monkeypatch.setattr(oracles, "MISSED", Counter())   # this run's own list of misses stays clean
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="missing oracle: real broker data at .*no-such-store"):
        require_real_data("no-such-store")
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        require_real_data("no-such-store")
    assert require_real_data(os.fspath(__file__)).name == Path(__file__).name
    assert oracles.MISSED == Counter({f"real broker data at {oracles.REAL_DATA / 'no-such-store'}": 2})
